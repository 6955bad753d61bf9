"""Decoder-only transformers with an explicit binding mechanism, beside the plain one
(:class:`bindscale.models.transformer.Transformer`), for sequence-to-sequence tasks posed as a prompt and
its continuation (``command <sep> actions <eos>``; the SCAN study trains them like the plain model).

Both are written here from their papers' equations; they reuse the plain transformer's parts (rotary
positions, pre-LayerNorm blocks, MLP, GPT-2 initialisation) so that a difference from the plain model is
the mechanism's alone.

:class:`SyntacticAttentionTransformer` — Russin, Jo, O'Reilly & Bengio 2019, "Compositional generalization
in a deep seq2seq model by separating syntax and semantics" (arXiv 1904.09708). Their model separates two
streams: a *syntactic* one, contextual (a recurrent encoder and decoder), that decides only *where to
attend*, and a *semantic* one, context-free (each word's embedding alone), that decides only *what is
said*: with ``r_j`` the syntactic representation of input word ``j``, ``h_i`` the decoder's state at output
step ``i`` and ``m_j`` the semantic embedding of word ``j``, ``α_ij = softmax_j(score(h_i, r_j))``, the
context ``c_i = Σ_j α_ij m_j``, and the output distribution is a function of ``c_i`` alone. Adapted here to
a decoder-only model: the syntax stream is a plain causal transformer over the whole sequence (its own
token embedding, positions and blocks); at position ``i``, ``q_i = W_q s_i`` and ``k_j = W_k s_j`` from the
syntax stream's final states ``s`` (rotary positions on both, as in its blocks), ``α_ij = softmax_{j ≤ i}(q_i ·
k_j / √d)``, ``c_i = Σ_j α_ij m_j`` with ``m_j = E_sem[x_j]`` the context-free semantic embedding of token
``j`` (no position, no value projection), and the next-token logits are ``W_out c_i + b`` — nothing of the
syntax stream reaches the output but the weights ``α``. One attention head, as in the paper's equation;
``n_heads`` is the syntax stream's.

:class:`TPTransformer` — Schlag, Smolensky, Fernandez, Jojic, Schmidhuber & Gao 2019, "Enhancing the
Transformer with Explicit Relational Encoding for Math Problem Solving" (arXiv 1910.06611; the
TP-Transformer). Each attention head binds the value it retrieves (the *filler*) to a *role* vector
computed from the querying position: ``v̄_i = Σ_j softmax_j(q_i · k_j / √d_head) v_j``, ``r_i = W_r x_i +
b_r``, and the head writes ``v̄_i ⊙ r_i`` (the Hadamard product, the paper's compressed form of the tensor
product ``v̄_i ⊗ r_i``), concatenated over heads and projected by ``W_o`` as usual. Everything else is the
plain transformer. The role bias ``b_r`` starts at 1 (bindscale's choice; the paper's equations leave the
initialisation open), so that TP-attention starts as ordinary attention and the binding is learned.

Parameter counts and iso-parameter shapes: :mod:`.binding_shapes`. Both models expose ``n_params``,
``n_params_nonembedding``, ``d_model``, ``d_ff``, ``max_len`` and ``generate`` as the plain transformer does
(greedy decoding here recomputes the prefix at every step: no KV cache).

Hook points (``B`` sequences of ``L`` tokens; :mod:`bindscale.models.hooks`):

``SyntacticAttentionTransformer``: the syntax stream's blocks as the plain transformer's
(``blocks.{i}.…``), then ``hook_syntax`` (B, L, d) the syntax stream's final states, ``hook_semantic``
(B, L, d) the semantic embeddings, ``hook_pattern`` (B, L, L) the syntactic attention weights and
``hook_context`` (B, L, d) the attended semantic context.

``TPTransformer``: the plain transformer's points, and in each block's attention ``blocks.{i}.attn.hook_role``
(B, H, L, d_head) the role vectors and ``blocks.{i}.attn.hook_bound`` (B, H, L, d_head) the bound head
outputs ``hook_z ⊙ hook_role`` (``hook_z`` is the retrieved filler).
"""

from __future__ import annotations

import math
from collections import defaultdict

import torch
import torch.nn.functional as F
from torch import nn

from bindscale.models.hooks import HookPoint
from bindscale.models.transformer import INIT_STD, Block, Rotary, causal_mask


def _init_gpt2(model: nn.Module, n_layers: int, g: torch.Generator | None) -> None:
    """GPT-2 initialisation (Radford et al. 2019): linear and embedding weights ~ N(0, 0.02²), the residual
    stream's writers (``*.proj``) ~ N(0, (0.02/√(2L))²), biases 0, LayerNorms 1 and 0."""
    resid_std = INIT_STD / math.sqrt(2 * n_layers)
    with torch.no_grad():
        for name, mod in model.named_modules():
            if isinstance(mod, (nn.Linear, nn.Embedding)):
                nn.init.normal_(mod.weight, 0.0, resid_std if name.endswith(".proj") else INIT_STD, generator=g)
                if getattr(mod, "bias", None) is not None:
                    nn.init.zeros_(mod.bias)
            elif isinstance(mod, nn.LayerNorm):
                nn.init.ones_(mod.weight)
                nn.init.zeros_(mod.bias)


def _check(vocab_size: int, n_layers: int, d_model: int, n_heads: int, d_ff: int, max_len: int, pos: str) -> None:
    for name, v in (("vocab_size", vocab_size), ("n_layers", n_layers), ("d_model", d_model),
                    ("n_heads", n_heads), ("d_ff", d_ff), ("max_len", max_len)):
        if v < 1:
            raise ValueError(f"{name} must be a positive integer, got {v}")
    if d_model % n_heads:
        raise ValueError(f"d_model={d_model} is not divisible by n_heads={n_heads}")
    if pos not in ("rope", "learned"):
        raise ValueError(f"pos must be 'rope' or 'learned'; got {pos!r}")


class _Greedy(nn.Module):
    """Greedy decoding and parameter counts shared by the binding models (no KV cache)."""

    max_len: int

    def _lookup_modules(self) -> list[nn.Module]:
        raise NotImplementedError

    def _trunk(self, block: type) -> None:
        """The embeddings, positions (rotary or learned), ``n_layers`` blocks of class ``block`` and the final
        LayerNorm both binding models share, created in this order (the sizes are set on ``self`` first)."""
        d = self.d_model
        self.embed = nn.Embedding(self.vocab_size, d)
        self.rope = Rotary(self.d_head, self.max_len) if self.pos == "rope" else None
        self.pos_embed = nn.Embedding(self.max_len, d) if self.pos == "learned" else None
        self.blocks = nn.ModuleList(block(i, d, self.n_heads, self.d_ff) for i in range(self.n_layers))
        self.ln_f = nn.LayerNorm(d)

    def _through_blocks(self, tokens: torch.Tensor) -> torch.Tensor:
        """Token (and learned position) embeddings of ``tokens`` ``(B, L)`` through every block: ``(B, L, d)``,
        before the final LayerNorm (rotary positions, where the model has them, are applied in the blocks).

        Raises:
            ValueError: ``L`` exceeds the model's ``max_len``.
        """
        L = tokens.shape[1]
        if L > self.max_len:
            raise ValueError(f"sequence reaches position {L} but the model was built with max_len={self.max_len}")
        cos = sin = None
        if self.rope is not None:
            cos, sin = self.rope.angles(0, L)
        x = self.embed(tokens)
        if self.pos_embed is not None:
            x = x + self.pos_embed(torch.arange(L, device=tokens.device))
        for block in self.blocks:
            x = block(x, cos, sin, None)
        return x

    def n_params(self) -> int:
        """Trainable parameters (embeddings and head included)."""
        return sum(p.numel() for p in self.parameters() if p.requires_grad)

    def n_params_nonembedding(self) -> int:
        """Trainable parameters without the lookup tables and the vocabulary head (:mod:`.binding_shapes`)."""
        skip = {id(p) for m in self._lookup_modules() if m is not None for p in m.parameters()}
        return sum(p.numel() for p in self.parameters() if p.requires_grad and id(p) not in skip)

    @torch.inference_mode()
    def generate(self, prompts: list[list[int]], max_new_tokens: int, stop_id: int, *,
                 batch_size: int | None = None, **_unused) -> list[list[int]]:
        """Greedy continuation of each prompt, as :meth:`bindscale.models.transformer.Transformer.generate`
        (same grouping by prompt length, output includes the stop token when emitted), recomputing the
        whole prefix at each step.

        Raises:
            ValueError: an empty prompt, or a prompt plus its continuation longer than ``max_len``.
        """
        out: list[list[int]] = [[] for _ in prompts]
        if max_new_tokens <= 0:
            return out
        groups: dict[int, list[int]] = defaultdict(list)
        for n, p in enumerate(prompts):
            if not p:
                raise ValueError(f"prompt {n} is empty; greedy decoding needs at least one token")
            if len(p) + max_new_tokens - 1 > self.max_len:
                raise ValueError(f"prompt {n} (length {len(p)}) plus {max_new_tokens} new tokens exceeds "
                                 f"max_len={self.max_len}")
            groups[len(p)].append(n)
        was_training = self.training
        self.eval()
        device = next(self.parameters()).device
        try:
            for _, rows in sorted(groups.items()):
                step = batch_size or len(rows)
                for c in range(0, len(rows), step):
                    chunk = rows[c:c + step]
                    x = torch.tensor([prompts[n] for n in chunk], dtype=torch.long, device=device)
                    new = torch.full((len(chunk), max_new_tokens), stop_id, dtype=torch.long, device=device)
                    done = torch.zeros(len(chunk), dtype=torch.bool, device=device)
                    for t in range(max_new_tokens):
                        nxt = torch.where(done, stop_id, self(x)[:, -1].argmax(dim=-1))
                        new[:, t] = nxt
                        done |= nxt == stop_id
                        if bool(done.all()) or t == max_new_tokens - 1:
                            break
                        x = torch.cat([x, nxt[:, None]], dim=1)
                    for n, seq in zip(chunk, new.tolist()):
                        out[n] = seq[:seq.index(stop_id) + 1] if stop_id in seq else seq
        finally:
            self.train(was_training)
        return out


class SyntacticAttentionTransformer(_Greedy):
    """Syntax and semantics separated (Russin et al. 2019; see the module docstring).

    Args:
        vocab_size, n_layers, d_model, n_heads, d_ff, max_len, pos: the syntax stream's shape, as
            :class:`~bindscale.models.transformer.Transformer`'s (``pos``: "rope" or "learned"; learned
            positions enter the syntax stream only, never the semantic embeddings).
        generator: source of every initial weight.

    Raises:
        ValueError: a non-positive size, ``d_model`` not divisible by ``n_heads``, an odd rotary dimension
            or an unknown ``pos``.
    """

    def __init__(self, vocab_size: int, n_layers: int, d_model: int, n_heads: int, d_ff: int,
                 max_len: int = 1024, pos: str = "rope", generator: torch.Generator | None = None):
        super().__init__()
        _check(vocab_size, n_layers, d_model, n_heads, d_ff, max_len, pos)
        self.vocab_size, self.n_layers, self.d_model, self.n_heads = vocab_size, n_layers, d_model, n_heads
        self.d_ff, self.max_len, self.pos, self.d_head = d_ff, max_len, pos, d_model // n_heads
        with torch.random.fork_rng(devices=[]):
            # Syntax stream: a plain causal transformer without its head.
            self._trunk(Block)
            self.hook_syntax = HookPoint()  # (B, L, d)
            # Syntactic attention: weights from the syntax stream only.
            self.rope_sa = Rotary(d_model, max_len) if pos == "rope" else None
            self.query = nn.Linear(d_model, d_model)
            self.key = nn.Linear(d_model, d_model)
            self.hook_pattern = HookPoint()  # (B, L, L)
            # Semantic stream: context-free embeddings, the only values; the head reads their mixture alone.
            self.semantic = nn.Embedding(vocab_size, d_model)
            self.hook_semantic = HookPoint()  # (B, L, d)
            self.hook_context = HookPoint()  # (B, L, d)
            self.head = nn.Linear(d_model, vocab_size)
        _init_gpt2(self, n_layers, generator)
        # The syntactic attention's own layers start as PyTorch's defaults (the source's framework): the
        # output is a product of the head, the weights and the semantic embeddings only, so GPT-2's small
        # draws for all three would start it at a saddle (every gradient scaled by the other factors' 0.02).
        with torch.no_grad():
            for lin in (self.query, self.key, self.head):
                bound = 1 / math.sqrt(lin.in_features)
                nn.init.uniform_(lin.weight, -bound, bound, generator=generator)
                nn.init.uniform_(lin.bias, -bound, bound, generator=generator)
            nn.init.normal_(self.semantic.weight, 0.0, 1.0, generator=generator)

    def _lookup_modules(self) -> list[nn.Module]:
        return [self.embed, self.pos_embed, self.semantic, self.head]

    def syntax(self, tokens: torch.Tensor) -> torch.Tensor:
        """The syntax stream's final states ``s`` ``(B, L, d)``."""
        return self.hook_syntax(self.ln_f(self._through_blocks(tokens)))

    def attention(self, s: torch.Tensor) -> torch.Tensor:
        """Syntactic attention weights ``α`` ``(B, L, L)`` (row: query position; causal) from syntax states ``s``."""
        L = s.shape[1]
        q, k = self.query(s), self.key(s)
        if self.rope_sa is not None:
            cos, sin = self.rope_sa.angles(0, L)
            q, k = Rotary.rotate(q, cos, sin), Rotary.rotate(k, cos, sin)
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(self.d_model)
        scores = scores.masked_fill(~causal_mask(L, 0, s.device), float("-inf"))
        return self.hook_pattern(scores.softmax(dim=-1))

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        """Next-token logits ``(B, L, V)`` of ``tokens`` ``(B, L)``: ``W_out Σ_j α_ij m_j + b``."""
        alpha = self.attention(self.syntax(tokens))
        m = self.hook_semantic(self.semantic(tokens))  # (B, L, d), context-free
        c = self.hook_context(alpha @ m)
        return self.head(c)


class TPAttention(nn.Module):
    """Causal multi-head TP-attention (Schlag et al. 2019): each head's retrieved value ``v̄`` bound to the
    querying position's role ``r = W_r x + b_r`` by the Hadamard product: ``(B, L, d) → (B, L, d)``."""

    def __init__(self, layer: int, d_model: int, n_heads: int):
        super().__init__()
        self.layer, self.n_heads, self.d_head = layer, n_heads, d_model // n_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.role = nn.Linear(d_model, d_model)
        self.hook_pattern = HookPoint()  # (B, H, L, L)
        self.hook_z = HookPoint()  # (B, H, L, d_head): the retrieved fillers
        self.hook_role = HookPoint()  # (B, H, L, d_head)
        self.hook_bound = HookPoint()  # (B, H, L, d_head)
        self.proj = nn.Linear(d_model, d_model)

    def forward(self, x: torch.Tensor, cos, sin, cache=None, mask=None) -> torch.Tensor:
        """``mask``: the plain Block's packed-rows argument; TP-attention takes no packed rows (None only)."""
        if cache is not None:
            raise ValueError("TP-attention decodes without a KV cache")
        if mask is not None:
            raise ValueError("TP-attention takes no packed rows (train.pack needs the plain Transformer)")
        B, L, d = x.shape
        H, dh = self.n_heads, self.d_head
        q, k, v = self.qkv(x).view(B, L, 3, H, dh).permute(2, 0, 3, 1, 4)  # each (B, H, L, dh)
        if cos is not None:
            q, k = Rotary.rotate(q, cos, sin), Rotary.rotate(k, cos, sin)
        if self.hook_pattern.has_hooks:
            scores = (q @ k.transpose(-2, -1)) / math.sqrt(dh)
            scores = scores.masked_fill(~causal_mask(L, 0, x.device), float("-inf"))
            z = self.hook_pattern(scores.softmax(dim=-1)) @ v
        else:
            z = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        z = self.hook_z(z)
        r = self.hook_role(self.role(x).view(B, L, H, dh).transpose(1, 2))  # (B, H, L, dh)
        bound = self.hook_bound(z * r)
        return self.proj(bound.transpose(1, 2).reshape(B, L, d))


class TPBlock(Block):
    """A pre-LayerNorm block whose attention is :class:`TPAttention`."""

    def __init__(self, layer: int, d_model: int, n_heads: int, d_ff: int):
        super().__init__(layer, d_model, n_heads, d_ff)
        self.attn = TPAttention(layer, d_model, n_heads)


class TPTransformer(_Greedy):
    """The TP-Transformer (Schlag et al. 2019) as a decoder-only model: the plain transformer with
    :class:`TPAttention` in every block (see the module docstring).

    Args: as :class:`SyntacticAttentionTransformer`.
    """

    def __init__(self, vocab_size: int, n_layers: int, d_model: int, n_heads: int, d_ff: int,
                 max_len: int = 1024, pos: str = "rope", generator: torch.Generator | None = None):
        super().__init__()
        _check(vocab_size, n_layers, d_model, n_heads, d_ff, max_len, pos)
        self.vocab_size, self.n_layers, self.d_model, self.n_heads = vocab_size, n_layers, d_model, n_heads
        self.d_ff, self.max_len, self.pos, self.d_head = d_ff, max_len, pos, d_model // n_heads
        with torch.random.fork_rng(devices=[]):
            self._trunk(TPBlock)
            self.head = nn.Linear(d_model, vocab_size, bias=False)
        _init_gpt2(self, n_layers, generator)
        with torch.no_grad():
            for block in self.blocks:
                nn.init.ones_(block.attn.role.bias)  # roles start at 1: TP-attention starts as plain attention

    def _lookup_modules(self) -> list[nn.Module]:
        return [self.embed, self.pos_embed, self.head]

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        """Next-token logits ``(B, L, V)`` of ``tokens`` ``(B, L)``."""
        return self.head(self.ln_f(self._through_blocks(tokens)))


#: Model kind (as :mod:`.binding_shapes` names it) → class.
MODELS = {"syntactic_attention": SyntacticAttentionTransformer, "tp_transformer": TPTransformer}
