"""Character-level decoder-only transformer, the sequence model every transformer study trains.

One model, one trial (:mod:`bindscale.models.stacked_transformer` stacks ``T`` of them, with the
same parameter names and layout plus a leading trial dimension, to train same-shape trials together;
its ``member(i)`` gives one trial back as this class): token
embedding → ``n_layers`` pre-LayerNorm blocks (Radford et al. 2019, GPT-2;
Xiong et al. 2020, "On Layer Normalization in the Transformer Architecture")
→ final LayerNorm → an *untied* linear head to the vocabulary. Positions, by
``pos``: ``"rope"`` (the default) — rotary position embeddings (Su et al. 2021,
"RoFormer") rotate queries and keys, so attention scores depend only on
relative position and sequences of different lengths share one mechanism;
``"learned"`` — an absolute learned position embedding added to the token
embedding (Radford et al. 2019, GPT-2; Vaswani et al. 2017); ``"none"`` — no
positional signal at all ("NoPE"; Kazemnejad et al. 2023, "The Impact of
Positional Encoding on Length Generalization in Transformers": a causal mask
alone lets a decoder infer position).
Attention is causal; the MLP is ``d_model → d_ff → d_model`` (``d_ff`` is
``mlp_ratio·d_model`` unless given: an explicit hidden width lets a study match
parameter counts finely) with exact (erf) GELU (Hendrycks & Gimpel 2016). No dropout: the studies train on
fixed sets and read generalization off held-out data, not off regularisation.

Initialisation follows GPT-2 (Radford et al. 2019, §2.3): every linear weight
and the embedding ~ N(0, 0.02²), biases zero, LayerNorm gain 1 and bias 0, and
the two projections that write into the residual stream (attention output and
MLP output) ~ N(0, (0.02/√(2·n_layers))²) so that the residual variance does
not grow with depth. Every draw comes from the ``generator`` passed in.

Hook points (:mod:`bindscale.models.hooks`; batch of B sequences of length L;
``d = d_model``, ``H = n_heads``, ``d_head = d / H``, ``d_ff`` the MLP width;
``i = 0..n_layers-1``), in forward order::

    hook_embed                  (B, L, d)           token embeddings
    hook_pos_embed              (L, d)              learned position embeddings (``pos="learned"`` only;
                                                    ``(B, L, d)`` for packed rows' ``positions``)
    blocks.{i}.hook_resid_pre   (B, L, d)           residual stream entering block i
    blocks.{i}.attn.hook_pattern (B, H, L, K)       attention probabilities (row = query, column = key)
    blocks.{i}.attn.hook_z      (B, H, L, d_head)   per-head output before the output projection
    blocks.{i}.hook_attn_out    (B, L, d)           attention sublayer's write into the residual stream
    blocks.{i}.hook_resid_mid   (B, L, d)           residual stream between attention and MLP
    blocks.{i}.mlp.hook_post    (B, L, d_ff)        MLP hidden layer (after GELU)
    blocks.{i}.hook_mlp_out     (B, L, d)           MLP sublayer's write into the residual stream
    blocks.{i}.hook_resid_post  (B, L, d)           residual stream leaving block i (the last: before ln_f)
    hook_ln_final               (B, L, d)           final LayerNorm's output, the head's input

``K = L`` keys without a KV cache; with one, ``L`` counts the new positions and ``K``
every position so far. Attention runs the fused kernel (which returns no weights)
except in a layer whose ``hook_pattern`` has a hook attached: it is then computed
explicitly (the same result to float rounding).

Packed rows (the sequence trainer's opt-in ``train.pack``): ``forward(tokens, positions=...)`` takes several
examples side by side in one row, with per-token positions that restart at 0 for each example; rotary angles
and learned position embeddings are read at those positions, and attention is block-diagonal causal
(:func:`packed_attention_mask`, through SDPA's boolean ``attn_mask``), so each example's logits are those it
has alone in a row of its own, up to float rounding (the "packing with cross-example masking" of Krell et al.
2021, "Efficient Sequence Packing without Cross-contamination: Accelerating Large Language Models
without Impacting Performance").

Head ablation needs no model surgery: a hook on ``blocks.{i}.attn.hook_z`` that
replaces head ``h``'s slice. :meth:`Transformer.ablation_hooks` builds them, and
``forward``/``generate`` accept ``ablate={1: [0, 3]}`` (heads 0 and 3 of layer 1
replaced by zeros, or by ``ablate_with[1]``, e.g. their mean output, for mean
ablation), which attach those hooks for the call.
"""

from __future__ import annotations

import math
from collections import defaultdict

import torch
import torch.nn.functional as F
from torch import nn

from bindscale.models.hooks import HookFn, HookPoint, hooks

#: GPT-2's initialisation scale (Radford et al. 2019).
INIT_STD = 0.02


def causal_mask(L: int, start: int, device: torch.device | str = "cpu") -> torch.Tensor:
    """Which keys each query may see when ``L`` new tokens follow ``start`` cached ones.

    Returns:
        Bool ``(L, start + L)``; entry ``[i, j]`` is True iff key ``j`` is at or
        before query ``i``'s absolute position ``start + i``.
    """
    q_pos = torch.arange(start, start + L, device=device)
    k_pos = torch.arange(start + L, device=device)
    return k_pos[None, :] <= q_pos[:, None]


def packed_attention_mask(positions: torch.Tensor) -> torch.Tensor:
    """Block-diagonal causal mask of packed rows: several examples side by side in one row, each unseen by the others.

    Args:
        positions: LongTensor ``(B, L)``, each token's position in its own example; every example's positions
            count up from 0, so a 0 starts a new example (a row's unused tail holds zeros: one-token examples
            of their own, which no real token sees).

    Returns:
        Bool ``(B, 1, L, L)`` (broadcast over heads); ``[b, 0, i, j]`` is True iff key ``j`` is at or before
        query ``i`` and in the same example. Every query sees at least itself, so no row of attention is empty.
    """
    example = (positions == 0).cumsum(dim=-1)  # (B, L): which example of its row each token belongs to
    L = positions.shape[-1]
    causal = torch.ones(L, L, dtype=torch.bool, device=positions.device).tril()  # (L, L)
    return ((example[:, :, None] == example[:, None, :]) & causal)[:, None]


class Rotary(nn.Module):
    """Rotary position embeddings (Su et al. 2021, "RoFormer").

    Feature pairs ``(x[j], x[j + d_head/2])`` of a query or key at position ``p``
    are rotated by the angle ``p · base^(-2j/d_head)`` (the "rotate half" layout
    of GPT-NeoX, equivalent to RoFormer's interleaved one up to a fixed
    permutation of features). A rotation by ``p·θ`` of q and by ``n·θ`` of k
    leaves ``q·k`` a function of ``p - n`` only.

    Raises:
        ValueError: ``d_head`` is odd.
    """

    def __init__(self, d_head: int, max_len: int, base: float = 10_000.0):
        super().__init__()
        if d_head % 2:
            raise ValueError(f"rotary embeddings need an even head dimension, got d_head={d_head}")
        inv_freq = base ** (-torch.arange(0, d_head, 2, dtype=torch.float64) / d_head)  # (d_head/2,)
        angles = torch.arange(max_len, dtype=torch.float64)[:, None] * inv_freq[None, :]  # (max_len, d_head/2)
        # Not persistent: derived from the shape, so state dicts hold only learned weights.
        self.register_buffer("cos", angles.cos().float(), persistent=False)
        self.register_buffer("sin", angles.sin().float(), persistent=False)
        self.max_len = max_len

    def angles(self, start: int, L: int) -> tuple[torch.Tensor, torch.Tensor]:
        """``(cos, sin)``, each ``(L, d_head/2)``, for absolute positions ``start .. start+L-1``.

        Raises:
            ValueError: the positions run past ``max_len``.
        """
        if start + L > self.max_len:
            raise ValueError(f"sequence reaches position {start + L} but the model was built with max_len={self.max_len}")
        return self.cos[start:start + L], self.sin[start:start + L]

    def at(self, positions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``(cos, sin)``, each ``(B, 1, L, d_head/2)`` (broadcast over heads), for per-token positions
        ``(B, L)`` (packed rows: :func:`packed_attention_mask`). Positions must be below ``max_len``."""
        return self.cos[positions][:, None], self.sin[positions][:, None]

    @staticmethod
    def rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        """Rotate ``x`` ``(..., L, d_head)`` by the angles ``cos``/``sin`` ``(L, d_head/2)`` (or any shape that
        broadcasts against ``x``'s halves, e.g. ``(B, 1, L, d_head/2)`` for per-token positions)."""
        x1, x2 = x.chunk(2, dim=-1)
        return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1)


class KVCache:
    """Preallocated keys and values of every layer for incremental (greedy) decoding.

    ``k[i]``, ``v[i]``: ``(B, H, capacity, d_head)``; positions ``0 .. length-1``
    hold the tokens seen so far. The model advances ``length`` after each forward.
    """

    def __init__(self, n_layers: int, B: int, n_heads: int, capacity: int, d_head: int,
                 device: torch.device, dtype: torch.dtype):
        shape = (B, n_heads, capacity, d_head)
        self.k = [torch.empty(shape, device=device, dtype=dtype) for _ in range(n_layers)]
        self.v = [torch.empty(shape, device=device, dtype=dtype) for _ in range(n_layers)]
        self.capacity, self.length = capacity, 0


class CausalSelfAttention(nn.Module):
    """Multi-head causal self-attention with rotary queries and keys: ``(B, L, d) → (B, L, d)``."""

    def __init__(self, layer: int, d_model: int, n_heads: int):
        super().__init__()
        self.layer, self.n_heads, self.d_head = layer, n_heads, d_model // n_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.hook_pattern = HookPoint()  # (B, H, L, K)
        self.hook_z = HookPoint()  # (B, H, L, d_head)
        self.proj = nn.Linear(d_model, d_model)  # writes into the residual stream

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, cache: KVCache | None,
                mask: torch.Tensor | None = None) -> torch.Tensor:
        """``mask``: None (plain causal attention) or a packed rows' bool ``(B, 1, L, L)``
        (:func:`packed_attention_mask`; no cache then)."""
        B, L, d = x.shape
        H, dh = self.n_heads, self.d_head
        q, k, v = self.qkv(x).view(B, L, 3, H, dh).permute(2, 0, 3, 1, 4)  # each (B, H, L, dh)
        if cos is not None:  # rotary positions; None for learned or no positions
            q, k = Rotary.rotate(q, cos, sin), Rotary.rotate(k, cos, sin)
        start = 0
        if cache is not None:
            start = cache.length
            cache.k[self.layer][:, :, start:start + L] = k
            cache.v[self.layer][:, :, start:start + L] = v
            k, v = cache.k[self.layer][:, :, :start + L], cache.v[self.layer][:, :, :start + L]  # (B, H, start+L, dh)

        if self.hook_pattern.has_hooks:
            # SDPA does not return its weights: compute them explicitly when a hook reads or patches them.
            scores = (q @ k.transpose(-2, -1)) / math.sqrt(dh)  # (B, H, L, start+L)
            allowed = causal_mask(L, start, x.device) if mask is None else mask
            scores = scores.masked_fill(~allowed, float("-inf"))
            pattern = self.hook_pattern(scores.softmax(dim=-1))
            z = pattern @ v  # (B, H, L, dh)
        elif mask is not None:  # packed rows: block-diagonal causal
            z = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        elif start == 0:
            z = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        elif L == 1:
            z = F.scaled_dot_product_attention(q, k, v)  # one new token sees every cached one
        else:
            # is_causal aligns the mask top-left, wrong when keys outnumber queries: pass it explicitly.
            z = F.scaled_dot_product_attention(q, k, v, attn_mask=causal_mask(L, start, x.device))

        z = self.hook_z(z)
        return self.proj(z.transpose(1, 2).reshape(B, L, d))


class MLP(nn.Module):
    """``d → d_ff → d`` with GELU: ``(B, L, d) → (B, L, d)``."""

    def __init__(self, d_model: int, d_ff: int):
        super().__init__()
        self.fc = nn.Linear(d_model, d_ff)
        self.hook_post = HookPoint()  # (B, L, d_ff)
        self.proj = nn.Linear(d_ff, d_model)  # writes into the residual stream

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.proj(self.hook_post(F.gelu(self.fc(x))))


class Block(nn.Module):
    """Pre-LayerNorm block: ``x + attn(ln1(x))``, then ``+ mlp(ln2(·))``; ``(B, L, d) → (B, L, d)``."""

    def __init__(self, layer: int, d_model: int, n_heads: int, d_ff: int):
        super().__init__()
        self.layer = layer
        # Hook points interleaved in forward order (they hold no weights: initial draws are unchanged).
        self.hook_resid_pre = HookPoint()
        self.ln1 = nn.LayerNorm(d_model)
        self.attn = CausalSelfAttention(layer, d_model, n_heads)
        self.hook_attn_out = HookPoint()
        self.hook_resid_mid = HookPoint()
        self.ln2 = nn.LayerNorm(d_model)
        self.mlp = MLP(d_model, d_ff)
        self.hook_mlp_out = HookPoint()
        self.hook_resid_post = HookPoint()

    def forward(self, x, cos, sin, cache, mask=None):
        x = self.hook_resid_pre(x)
        a = self.hook_attn_out(self.attn(self.ln1(x), cos, sin, cache, mask))  # (B, L, d)
        x = self.hook_resid_mid(x + a)
        m = self.hook_mlp_out(self.mlp(self.ln2(x)))  # (B, L, d)
        return self.hook_resid_post(x + m)


class Transformer(nn.Module):
    """Decoder-only transformer over a character vocabulary (see the module docstring).

    Args:
        vocab_size: number of token ids V.
        n_layers, d_model, n_heads: depth, residual width, heads per layer.
        mlp_ratio: MLP hidden width as a multiple of ``d_model`` (when ``d_ff`` is None).
        max_len: longest sequence (prompt plus generated tokens) the rotary or learned
            position table covers.
        pos: ``"rope"``, ``"learned"`` or ``"none"`` (see the module docstring).
        generator: source of every initial weight; ``None`` uses torch's global RNG.
        d_ff: MLP hidden width (keyword only); None means ``mlp_ratio * d_model``.

    Raises:
        ValueError: ``d_model`` not divisible by ``n_heads``, an odd head dimension
            with rotary positions, an unknown ``pos``, or a non-positive size.
    """

    #: Position schemes: rotary, absolute learned, none.
    POSITIONS = ("rope", "learned", "none")
    #: ``forward`` takes ``positions=`` (packed rows; the sequence trainer's ``train.pack``).
    supports_packing = True

    def __init__(self, vocab_size: int, n_layers: int, d_model: int, n_heads: int, mlp_ratio: int = 4,
                 max_len: int = 1024, generator: torch.Generator | None = None, pos: str = "rope", *,
                 d_ff: int | None = None):
        super().__init__()
        d_ff = mlp_ratio * d_model if d_ff is None else d_ff
        for name, v in (("vocab_size", vocab_size), ("n_layers", n_layers), ("d_model", d_model),
                        ("n_heads", n_heads), ("mlp_ratio", mlp_ratio), ("max_len", max_len), ("d_ff", d_ff)):
            if v < 1:
                raise ValueError(f"{name} must be a positive integer, got {v}")
        if d_model % n_heads:
            raise ValueError(f"d_model={d_model} is not divisible by n_heads={n_heads}")
        if pos not in self.POSITIONS:
            raise ValueError(f"pos must be one of {', '.join(self.POSITIONS)}; got {pos!r}")
        self.pos = pos
        self.vocab_size, self.n_layers, self.d_model, self.n_heads = vocab_size, n_layers, d_model, n_heads
        self.d_head, self.max_len, self.d_ff = d_model // n_heads, max_len, d_ff
        # PyTorch's default inits draw from the global RNG; keep its state untouched, we re-draw below.
        with torch.random.fork_rng(devices=[]):
            self.embed = nn.Embedding(vocab_size, d_model)
            self.hook_embed = HookPoint()  # (B, L, d)
            # Registered only when used, so a rotary model's weights draw exactly as before this option existed.
            self.rope = Rotary(self.d_head, max_len) if pos == "rope" else None
            self.pos_embed = nn.Embedding(max_len, d_model) if pos == "learned" else None
            self.hook_pos_embed = HookPoint() if pos == "learned" else None  # (L, d)
            self.blocks = nn.ModuleList(Block(i, d_model, n_heads, d_ff) for i in range(n_layers))
            self.ln_f = nn.LayerNorm(d_model)
            self.hook_ln_final = HookPoint()  # (B, L, d)
            self.head = nn.Linear(d_model, vocab_size, bias=False)  # untied from the embedding
        self._init_weights(generator)

    @torch.no_grad()
    def _init_weights(self, g: torch.Generator | None) -> None:
        resid_std = INIT_STD / math.sqrt(2 * self.n_layers)
        # named_modules() runs in registration order, so a generator's draws always land on the same weights.
        for name, mod in self.named_modules():
            if isinstance(mod, (nn.Linear, nn.Embedding)):
                std = resid_std if name.endswith(".proj") else INIT_STD
                nn.init.normal_(mod.weight, 0.0, std, generator=g)
                if getattr(mod, "bias", None) is not None:
                    nn.init.zeros_(mod.bias)
            elif isinstance(mod, nn.LayerNorm):
                nn.init.ones_(mod.weight)
                nn.init.zeros_(mod.bias)

    def n_params(self) -> int:
        """Trainable parameters (embedding and head both counted: they are untied)."""
        return sum(p.numel() for p in self.parameters() if p.requires_grad)

    def n_params_nonembedding(self) -> int:
        """Trainable parameters without the token and position embeddings and the vocabulary head:
        the blocks and the final LayerNorm (the count Kaplan et al. 2020, "Scaling Laws for Neural
        Language Models", relate loss to)."""
        skip = {id(p) for m in (self.embed, self.pos_embed, self.head) if m is not None for p in m.parameters()}
        return sum(p.numel() for p in self.parameters() if p.requires_grad and id(p) not in skip)

    def activation_shapes(self, B: int, L: int) -> dict[str, tuple[int, ...]]:
        """Hook name → shape of every hook point for ``B`` sequences of length ``L`` (no KV cache), forward order."""
        d, H = self.d_model, self.n_heads
        shapes: dict[str, tuple[int, ...]] = {"hook_embed": (B, L, d)}
        if self.hook_pos_embed is not None:
            shapes["hook_pos_embed"] = (L, d)
        for i in range(self.n_layers):
            p = f"blocks.{i}."
            shapes[p + "hook_resid_pre"] = (B, L, d)
            shapes[p + "attn.hook_pattern"] = (B, H, L, L)
            shapes[p + "attn.hook_z"] = (B, H, L, self.d_head)
            shapes[p + "hook_attn_out"] = (B, L, d)
            shapes[p + "hook_resid_mid"] = (B, L, d)
            shapes[p + "mlp.hook_post"] = (B, L, self.d_ff)
            shapes[p + "hook_mlp_out"] = (B, L, d)
            shapes[p + "hook_resid_post"] = (B, L, d)
        shapes["hook_ln_final"] = (B, L, d)
        return shapes

    def new_cache(self, B: int, capacity: int) -> KVCache:
        """An empty KV cache for ``B`` sequences of up to ``capacity`` positions, on the model's device and dtype."""
        p = next(self.parameters())
        return KVCache(self.n_layers, B, self.n_heads, capacity, self.d_head, p.device, p.dtype)

    def ablation_hooks(self, ablate: dict[int, list[int]] | None,
                       ablate_with: dict[int, torch.Tensor] | None = None) -> dict[str, HookFn]:
        """Hooks (for :func:`~bindscale.models.hooks.run_with_hooks`) that ablate attention heads.

        Args:
            ablate: layer → heads whose output (``blocks.{layer}.attn.hook_z``) is replaced
                before the output projection, by zeros unless ``ablate_with`` gives a value.
            ablate_with: layer → replacement, ``(H, d_head)`` (one vector per head; only the
                ablated heads' rows are used) or anything broadcastable to ``(B, H, L, d_head)``.

        Returns:
            ``{"blocks.{layer}.attn.hook_z": fn}`` for every layer in ``ablate``.

        Raises:
            ValueError: a layer or head that does not exist.
        """
        device = next(self.parameters()).device
        return {f"blocks.{layer}.attn.hook_z": _replace_heads(mask, value)
                for layer, (mask, value) in self._patches(ablate, ablate_with, device).items()}

    def _patches(self, ablate: dict[int, list[int]] | None, ablate_with: dict[int, torch.Tensor] | None,
                 device: torch.device) -> dict[int, tuple[torch.Tensor, torch.Tensor]]:
        """Per layer: a ``(1, H, 1, 1)`` mask of ablated heads and the value that replaces them."""
        patches = {}
        for layer, heads in (ablate or {}).items():
            if not 0 <= layer < self.n_layers:
                raise ValueError(f"ablate names layer {layer}; the model has layers 0..{self.n_layers - 1}")
            bad = [h for h in heads if not 0 <= h < self.n_heads]
            if bad:
                raise ValueError(f"ablate names heads {bad} in layer {layer}; the model has heads 0..{self.n_heads - 1}")
            mask = torch.zeros(1, self.n_heads, 1, 1, dtype=torch.bool, device=device)
            mask[0, list(heads)] = True
            value = (ablate_with or {}).get(layer)
            if value is None:
                value = torch.zeros((), device=device)
            elif value.dim() == 2:  # (H, d_head): one vector per head, e.g. its mean output
                value = value.to(device).view(1, self.n_heads, 1, self.d_head)
            patches[layer] = (mask, value.to(device))
        return patches

    def forward(self, tokens: torch.Tensor, *,
                ablate: dict[int, list[int]] | None = None,
                ablate_with: dict[int, torch.Tensor] | None = None,
                cache: KVCache | None = None,
                positions: torch.Tensor | None = None) -> torch.Tensor:
        """Next-token logits.

        Args:
            tokens: LongTensor ``(B, L)`` of token ids.
            positions: None, or packed rows' per-token positions, LongTensor ``(B, L)``: each row holds several
                examples side by side, each's positions counting up from 0 (so each below ``L``); rotary angles
                or learned position embeddings are taken at these positions and attention is block-diagonal
                causal (:func:`packed_attention_mask`): no token sees another example's. No cache then.
            ablate, ablate_with: head ablation for this call, as in :meth:`ablation_hooks`
                (its hooks run before any other hook on ``hook_z``, so a cache reads the
                ablated heads).
            cache: keys and values of earlier positions (incremental decoding);
                ``tokens`` then continue those positions and the cache advances.

        Returns:
            Logits ``(B, L, V)``; position ``t`` predicts token ``t + 1``.

        Raises:
            ValueError: sequence past ``max_len`` or the cache's capacity;
                ablation of a layer or head that does not exist; ``positions`` of another shape than
                ``tokens``, or with a cache.
        """
        B, L = tokens.shape
        if positions is not None and (cache is not None or positions.shape != tokens.shape):
            raise ValueError(f"positions must be ({B}, {L}) like tokens, without a cache; got "
                             f"{tuple(positions.shape)}{' and a cache' if cache is not None else ''}")
        start = 0 if cache is None else cache.length
        if cache is not None and start + L > cache.capacity:
            raise ValueError(f"KV cache holds {cache.capacity} positions; {start + L} needed")
        if start + L > self.max_len:
            raise ValueError(f"sequence reaches position {start + L} but the model was built with max_len={self.max_len}")
        cos = sin = None
        if self.rope is not None:
            # each (L, d_head/2); per token (B, 1, L, d_head/2) with positions
            cos, sin = self.rope.angles(start, L) if positions is None else self.rope.at(positions)
        if ablate is not None:
            with hooks(self, self.ablation_hooks(ablate, ablate_with), prepend=True):
                return self._forward(tokens, cos, sin, cache, positions)
        return self._forward(tokens, cos, sin, cache, positions)

    def _forward(self, tokens: torch.Tensor, cos, sin, cache: KVCache | None,
                 positions: torch.Tensor | None = None) -> torch.Tensor:
        B, L = tokens.shape
        start = 0 if cache is None else cache.length
        x = self.hook_embed(self.embed(tokens))  # (B, L, d)
        if self.pos_embed is not None:
            at = torch.arange(start, start + L, device=tokens.device) if positions is None else positions
            x = x + self.hook_pos_embed(self.pos_embed(at))  # (L, d); (B, L, d) with positions
        mask = None if positions is None else packed_attention_mask(positions)  # (B, 1, L, L)
        for block in self.blocks:
            x = block(x, cos, sin, cache, mask)
        if cache is not None:
            cache.length += L
        return self.head(self.hook_ln_final(self.ln_f(x)))

    @torch.inference_mode()
    def generate(self, prompts: list[list[int]], max_new_tokens: int, stop_id: int, *,
                 use_cache: bool = True, batch_size: int | None = None,
                 ablate: dict[int, list[int]] | None = None,
                 ablate_with: dict[int, torch.Tensor] | None = None) -> list[list[int]]:
        """Greedy (argmax) continuation of each prompt.

        Prompts are grouped by length, so a group is one rectangular batch with
        no padding (RoPE positions stay exact); each group is decoded with a KV
        cache. Runs in eval mode under ``inference_mode``; the training flag is
        restored afterwards.

        Args:
            prompts: token-id lists, each non-empty.
            max_new_tokens: at most this many tokens are generated per prompt.
            stop_id: a row ends once it emits this token.
            use_cache: False recomputes the whole sequence at each step (a
                reference for tests; same tokens, slower).
            batch_size: largest number of prompts decoded together (None: a whole length group).
            ablate, ablate_with: as in :meth:`forward`; their hooks stay attached for the whole decode.

        Returns:
            The generated tokens of each prompt, in input order, without the
            prompt, **including** the stop token when it was emitted (a row
            that does not end in ``stop_id`` ran out of ``max_new_tokens``).

        Raises:
            ValueError: an empty prompt, or a prompt plus its continuation
                longer than ``max_len``.
        """
        if max_new_tokens < 0:
            raise ValueError(f"max_new_tokens must be >= 0, got {max_new_tokens}")
        out: list[list[int]] = [[] for _ in prompts]
        if max_new_tokens == 0:
            return out
        groups: dict[int, list[int]] = defaultdict(list)
        for n, p in enumerate(prompts):
            if not p:
                raise ValueError(f"prompt {n} is empty; greedy decoding needs at least one token")
            # The last generated token is never fed back, hence the -1.
            if len(p) + max_new_tokens - 1 > self.max_len:
                raise ValueError(f"prompt {n} (length {len(p)}) plus {max_new_tokens} new tokens exceeds max_len={self.max_len}")
            groups[len(p)].append(n)
        was_training = self.training
        self.eval()
        # Attached once for the whole decode (and validated before it), not at every step.
        ablation = self.ablation_hooks(ablate, ablate_with)
        try:
            with hooks(self, ablation, prepend=True):
                device = next(self.parameters()).device
                for _, rows in sorted(groups.items()):
                    step = batch_size or len(rows)
                    for c in range(0, len(rows), step):
                        chunk = rows[c:c + step]
                        x = torch.tensor([prompts[n] for n in chunk], dtype=torch.long, device=device)
                        for n, seq in zip(chunk, self._greedy(x, max_new_tokens, stop_id, use_cache)):
                            out[n] = seq
        finally:
            self.train(was_training)
        return out

    def _greedy(self, x: torch.Tensor, max_new: int, stop_id: int, use_cache: bool) -> list[list[int]]:
        """Greedy decoding of one rectangular batch ``x`` ``(b, Lp)``; see :meth:`generate`."""
        b, Lp = x.shape
        cache = self.new_cache(b, Lp + max_new - 1) if use_cache else None
        new = torch.full((b, max_new), stop_id, dtype=torch.long, device=x.device)
        done = torch.zeros(b, dtype=torch.bool, device=x.device)
        logits = self(x, cache=cache)[:, -1]  # (b, V)
        for t in range(max_new):
            nxt = torch.where(done, stop_id, logits.argmax(dim=-1))  # (b,); finished rows idle on stop_id
            new[:, t] = nxt
            done |= nxt == stop_id
            if t == max_new - 1 or bool(done.all()):
                break
            if cache is not None:
                logits = self(nxt[:, None], cache=cache)[:, -1]
            else:
                x = torch.cat([x, nxt[:, None]], dim=1)
                logits = self(x)[:, -1]
        rows = []
        for seq in new.tolist():
            rows.append(seq[:seq.index(stop_id) + 1] if stop_id in seq else seq)
        return rows


def _replace_heads(mask: torch.Tensor, value: torch.Tensor) -> HookFn:
    """A ``hook_z`` hook: heads where ``mask`` ``(1, H, 1, 1)`` is True take ``value`` (broadcast to ``z``)."""
    def fn(z: torch.Tensor, _hook: HookPoint) -> torch.Tensor:
        return torch.where(mask, value.to(z.dtype), z)
    return fn
