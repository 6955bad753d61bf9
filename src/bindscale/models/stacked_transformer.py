"""The decoder-only transformer of :mod:`bindscale.models.transformer`, stacked over trials.

``T`` trials of one shape (different seeds, data, learning rates) train as one
model: every weight carries a leading trial dimension and every matmul is
batched over it (``torch.baddbmm`` / ``torch.bmm``); attention folds the trial
dimension into the batch. Tokens ``(T, B, L)`` in, logits ``(T, B, L, V)`` out.
Trial ``t``'s logits depend on trial ``t``'s weights and tokens only, so the
sum of per-trial losses has, for each trial, exactly that trial's gradient.

The architecture is :class:`~bindscale.models.transformer.Transformer`'s (pre-
LayerNorm blocks, causal attention with rotary / learned / no positions, GELU
MLP of width ``d_ff``, final LayerNorm, untied head) and so is every parameter's
name and layout: the stack's ``state_dict`` is the members' state dicts stacked
along a new dimension 0 (``blocks.0.attn.qkv.weight`` is ``(T, 3d, d)``). Hence:

- a stack is built from plain models (:meth:`StackedTransformer.from_members`),
  so member ``t`` starts *exactly* as the plain model built with trial ``t``'s
  generator (the constructor builds those plain models and stacks them);
- :meth:`StackedTransformer.member` gives trial ``t`` back as a plain
  :class:`Transformer` (a copy of its weights) for evaluation, greedy decoding,
  probes, head ablations and ``load_model``.

No hook points and no KV cache: analyses and decoding run on members.

Packed rows (``forward(tokens, positions=...)``, the sequence trainer's opt-in ``train.pack``) work as in
:class:`Transformer`: per-token positions ``(T, B, L)``, restarting at 0 for each example, and block-diagonal
causal attention (:func:`~bindscale.models.transformer.packed_attention_mask`), per trial.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import nn

from bindscale.models.transformer import Rotary, Transformer, packed_attention_mask


class StackedLinear(nn.Module):
    """``T`` linear maps ``in → out``: ``(T, N, in) → (T, N, out)``; ``weight`` ``(T, out, in)`` as ``nn.Linear``'s."""

    def __init__(self, T: int, d_in: int, d_out: int, bias: bool = True):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(T, d_out, d_in))
        self.bias = nn.Parameter(torch.empty(T, d_out)) if bias else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.bias is None:
            return torch.bmm(x, self.weight.transpose(1, 2))
        return torch.baddbmm(self.bias.unsqueeze(1), x, self.weight.transpose(1, 2))


class StackedLayerNorm(nn.Module):
    """``T`` LayerNorms over the last dimension: ``(T, N, d) → (T, N, d)``; ``weight``, ``bias`` ``(T, d)``."""

    def __init__(self, T: int, d: int, eps: float = 1e-5):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(T, d))
        self.bias = nn.Parameter(torch.empty(T, d))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.layer_norm(x, x.shape[-1:], eps=self.eps)
        return torch.addcmul(self.bias.unsqueeze(1), x, self.weight.unsqueeze(1))


class StackedEmbedding(nn.Module):
    """``T`` embedding tables: ids ``(T, N)`` → ``(T, N, d)``; ``weight`` ``(T, n, d)``."""

    def __init__(self, T: int, n: int, d: int):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(T, n, d))

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        T, n, d = self.weight.shape
        offset = torch.arange(T, device=ids.device).view(T, *([1] * (ids.dim() - 1))) * n
        return F.embedding(ids + offset, self.weight.view(T * n, d))


class StackedAttention(nn.Module):
    """Causal self-attention of ``T`` trials: ``(T, B·L, d) → (T, B·L, d)``."""

    def __init__(self, T: int, d_model: int, n_heads: int):
        super().__init__()
        self.n_heads, self.d_head = n_heads, d_model // n_heads
        self.qkv = StackedLinear(T, d_model, 3 * d_model)
        self.proj = StackedLinear(T, d_model, d_model)

    def forward(self, x: torch.Tensor, B: int, L: int, cos, sin, mask: torch.Tensor | None = None) -> torch.Tensor:
        """``cos``/``sin``: ``(L, d_head/2)``, or ``(T·B, 1, L, d_head/2)`` per token; ``mask``: None (causal) or
        packed rows' bool ``(T·B, 1, L, L)``."""
        T, _, d = x.shape
        H, dh = self.n_heads, self.d_head
        # Trials fold into the batch: (T·B, H, L, dh) each.
        q, k, v = self.qkv(x).view(T * B, L, 3, H, dh).permute(2, 0, 3, 1, 4)
        if cos is not None:
            q, k = Rotary.rotate(q, cos, sin), Rotary.rotate(k, cos, sin)
        if mask is None:
            z = F.scaled_dot_product_attention(q, k, v, is_causal=True)  # (T·B, H, L, dh)
        else:  # packed rows: block-diagonal causal
            z = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        return self.proj(z.transpose(1, 2).reshape(T, B * L, d))


class StackedMLP(nn.Module):
    """``d → d_ff → d`` with exact GELU, per trial: ``(T, N, d) → (T, N, d)``."""

    def __init__(self, T: int, d_model: int, d_ff: int):
        super().__init__()
        self.fc = StackedLinear(T, d_model, d_ff)
        self.proj = StackedLinear(T, d_ff, d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.proj(F.gelu(self.fc(x)))


class StackedBlock(nn.Module):
    """Pre-LayerNorm block of ``T`` trials: ``x + attn(ln1(x))``, then ``+ mlp(ln2(·))``."""

    def __init__(self, T: int, d_model: int, n_heads: int, d_ff: int):
        super().__init__()
        self.ln1 = StackedLayerNorm(T, d_model)
        self.attn = StackedAttention(T, d_model, n_heads)
        self.ln2 = StackedLayerNorm(T, d_model)
        self.mlp = StackedMLP(T, d_model, d_ff)

    def forward(self, x: torch.Tensor, B: int, L: int, cos, sin, mask: torch.Tensor | None = None) -> torch.Tensor:
        x = x + self.attn(self.ln1(x), B, L, cos, sin, mask)
        return x + self.mlp(self.ln2(x))


class StackedTransformer(nn.Module):
    """``T`` decoder-only transformers of one shape trained as one model (see the module docstring).

    Args:
        vocab_size, n_layers, d_model, n_heads, mlp_ratio, max_len, pos, d_ff: as
            :class:`~bindscale.models.transformer.Transformer`'s.
        generators: one per trial, the ``generator`` trial ``t``'s plain model would be
            built with (``None``: torch's global RNG, drawn in trial order); ``T`` is their number.

    Raises:
        ValueError: as :class:`Transformer`; no generators.
    """

    def __init__(self, vocab_size: int, n_layers: int, d_model: int, n_heads: int, mlp_ratio: int = 4,
                 max_len: int = 1024, generators: Sequence[torch.Generator | None] = (None,), pos: str = "rope",
                 *, d_ff: int | None = None):
        super().__init__()
        if not len(generators):
            raise ValueError("a stack needs at least one trial (one generator each)")
        members = [Transformer(vocab_size, n_layers, d_model, n_heads, mlp_ratio, max_len, g, pos, d_ff=d_ff)
                   for g in generators]
        self._build(members[0], len(members), max_len)
        self._load(members)

    def _build(self, m: Transformer, T: int, max_len: int) -> None:
        self.n_trials = T
        self.vocab_size, self.n_layers, self.d_model, self.n_heads = m.vocab_size, m.n_layers, m.d_model, m.n_heads
        self.d_head, self.d_ff, self.pos, self.max_len = m.d_head, m.d_ff, m.pos, max_len
        # Same names and registration order as Transformer, so state dicts line up key by key.
        self.embed = StackedEmbedding(T, m.vocab_size, m.d_model)
        self.rope = Rotary(m.d_head, max_len) if m.pos == "rope" else None
        self.pos_embed = StackedEmbedding(T, max_len, m.d_model) if m.pos == "learned" else None
        self.blocks = nn.ModuleList(StackedBlock(T, m.d_model, m.n_heads, m.d_ff) for _ in range(m.n_layers))
        self.ln_f = StackedLayerNorm(T, m.d_model)
        self.head = StackedLinear(T, m.d_model, m.vocab_size, bias=False)

    @torch.no_grad()
    def _load(self, members: Sequence[Transformer]) -> None:
        states = [m.state_dict() for m in members]
        own = self.state_dict()
        if set(own) != set(states[0]):
            raise ValueError(f"stack and member parameters differ: {sorted(set(own) ^ set(states[0]))}")
        for name, p in own.items():
            p.copy_(torch.stack([s[name] for s in states]))

    @classmethod
    def from_members(cls, members: Sequence[Transformer]) -> "StackedTransformer":
        """A stack of copies of plain transformers of one shape (trial ``t`` = ``members[t]``).

        ``max_len`` may differ where it changes no weight (rotary or no positions): the stack takes the longest.

        Raises:
            ValueError: no members, or members of different shapes.
        """
        if not members:
            raise ValueError("from_members needs at least one model")
        m = members[0]
        shape = lambda x: (x.vocab_size, x.n_layers, x.d_model, x.n_heads, x.d_ff, x.pos)  # noqa: E731
        bad = [i for i, x in enumerate(members) if shape(x) != shape(m)
               or (m.pos == "learned" and x.max_len != m.max_len)]
        if bad:
            raise ValueError(f"members {bad} differ in shape from member 0 "
                             "(vocab_size, n_layers, d_model, n_heads, d_ff, pos; max_len with learned positions)")
        stack = cls.__new__(cls)
        nn.Module.__init__(stack)
        stack._build(m, len(members), max(x.max_len for x in members))
        p = next(m.parameters())
        stack.to(device=p.device, dtype=p.dtype)
        stack._load(members)
        return stack

    def member(self, i: int, max_len: int | None = None) -> Transformer:
        """Trial ``i`` as a plain :class:`Transformer` (a copy of its weights, same device and dtype).

        ``max_len``: the member's position table length (default the stack's; with learned
        positions it must be the stack's).

        Raises:
            IndexError: no trial ``i``.
            ValueError: a different ``max_len`` with learned positions.
        """
        if not -self.n_trials <= i < self.n_trials:
            raise IndexError(f"trial {i} of a stack of {self.n_trials}")
        max_len = self.max_len if max_len is None else max_len
        if self.pos == "learned" and max_len != self.max_len:
            raise ValueError(f"learned positions: a member's max_len is the stack's ({self.max_len}), got {max_len}")
        with torch.random.fork_rng(devices=[]):  # the throwaway init must not move the global RNG
            m = Transformer(self.vocab_size, self.n_layers, self.d_model, self.n_heads, max_len=max_len,
                            pos=self.pos, d_ff=self.d_ff)
        p = next(self.parameters())
        m.to(device=p.device, dtype=p.dtype)
        with torch.no_grad():
            m.load_state_dict({k: v[i] for k, v in self.state_dict().items()})
        m.train(self.training)
        return m

    def n_params(self) -> int:
        """Trainable parameters of ONE trial's model (the stack's divided by ``T``)."""
        return sum(p[0].numel() for p in self.parameters() if p.requires_grad)

    #: ``forward`` takes ``positions=`` (packed rows; the sequence trainer's ``train.pack``).
    supports_packing = True

    def forward(self, tokens: torch.Tensor, positions: torch.Tensor | None = None) -> torch.Tensor:
        """Next-token logits of every trial.

        Args:
            tokens: LongTensor ``(T, B, L)``; row ``tokens[t]`` goes through trial ``t``.
            positions: None, or packed rows' per-token positions ``(T, B, L)`` (as
                :meth:`Transformer.forward`'s: each example's count up from 0; attention stays inside it).

        Returns:
            Logits ``(T, B, L, V)``; position ``l`` predicts token ``l + 1``.

        Raises:
            ValueError: a wrong number of trials, a sequence past ``max_len``, or ``positions`` of another
                shape than ``tokens``.
        """
        T, B, L = tokens.shape
        if T != self.n_trials:
            raise ValueError(f"tokens carry {T} trials; the stack has {self.n_trials}")
        if L > self.max_len:
            raise ValueError(f"sequence reaches position {L} but the model was built with max_len={self.max_len}")
        if positions is not None and positions.shape != tokens.shape:
            raise ValueError(f"positions must be {(T, B, L)} like tokens; got {tuple(positions.shape)}")
        cos = sin = mask = None
        flat = None if positions is None else positions.reshape(T * B, L)  # trials folded into the batch
        if self.rope is not None:
            # each (L, d_head/2); per token (T·B, 1, L, d_head/2) with positions
            cos, sin = self.rope.angles(0, L) if flat is None else self.rope.at(flat)
        x = self.embed(tokens.reshape(T, B * L))  # (T, B·L, d)
        if self.pos_embed is not None and positions is None:
            x = (x.view(T, B, L, -1) + self.pos_embed.weight[:, None, :L]).view(T, B * L, -1)
        elif self.pos_embed is not None:
            x = x + self.pos_embed(positions.reshape(T, B * L))  # (T, B·L, d)
        if flat is not None:
            mask = packed_attention_mask(flat)  # (T·B, 1, L, L)
        for block in self.blocks:
            x = block(x, B, L, cos, sin, mask)
        return self.head(self.ln_f(x)).view(T, B, L, -1)
