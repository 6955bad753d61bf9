"""Syntactic Attention in its own recurrent setting: Russin, Jo, O'Reilly & Bengio 2019, "Compositional
generalization in a deep seq2seq model by separating syntax and semantics" (arXiv 1904.09708), written from
the model's equations. (:mod:`bindscale.models.binding` holds the study's decoder-only adaptation; this module
is the paper's own encoder-decoder, for ``binding_scan-russin2019.yaml``.)

Two streams read the command. The *semantic* stream is context-free: one embedding per word. The *syntactic*
stream is a recurrent network over the whole command; it only decides where the decoder attends. The action
at each output step is read from the attention-weighted sum of the semantic embeddings alone, so a word's
meaning reaches the output only through where syntax points, never mixed with its context.

What was read where. The paper's text itself was not available to this session beyond its abstract (the
stored copies of arXiv 1904.09708 were excerpts); the setting is read from the authors' public code,
github.com/jlrussin/syntactic_attention, at its first commit (c1ed95b, 23 May 2019, the version released with
the SCAN experiments, holding the add-jump files): ``SyntacticAttention.py`` (the model; its comments number
the equations of the paper, quoted here as "their eq.") and ``train_test.py`` (the training script and its
defaults, also listed in the repository's README). Later commits (July 2019) add machine translation and leave
the SCAN model and the script's SCAN defaults as they were (a prediction length aside). Equations, with ``x_1..x_S`` the command framed by a start and an end
symbol (their ``data.py`` wraps every command in ``<SOS> ... <EOS>``):

- Semantic embeddings (their eq. 1): ``m_j = W_m[x_j]``, ``M = semantic`` wide (their default 120), dropout on them.
- Syntactic embeddings: ``e_j = W_x[x_j]``, ``X/2`` wide (``X = syntax``, their default 200), dropout on them.
- First syntactic layer: a bidirectional LSTM of ``X/2`` units a direction over ``e``. Each position keeps only
  its *context* (their eq. 2): ``z_j = [→h_{j-1}; ←h_{j+1}]``, the forward state of the word before and the
  backward state of the word after, never its own; the start and end positions are replaced by two learned
  vectors ``r_start``, ``r_end`` (``X`` wide; nothing reaches them from the words).
- Second syntactic layer: a bidirectional LSTM of ``X`` units a direction over ``z``: ``h_j`` (``2X`` wide).
- The decoder's first query: ``s_0 = ReLU(W_0 [→h_final; ←h_final] + b_0)`` from the second layer's final
  states (``W_0``: ``2X × 2X``); the decoder LSTM's own state starts at zero.
- At output step ``i`` (their eqs. 3 to 6)::

      α_ij = softmax_j(s_{i-1} · h_j)          (dot-product attention; no scaling, no parameters)
      c_i  = Σ_j α_ij h_j                      (syntactic context: the decoder's only input)
      m̄_i  = Σ_j α_ij m_j                      (semantic context)
      p(a_i) = softmax(W_out m̄_i + b_out)     (the action from the semantic context alone)
      s_i  = LSTM(c_i, state_{i-1})            (the next query; 2X units)

  The decoder never reads its previous output: no teacher forcing, and greedy decoding is one argmax a step.
  Computed as: the LSTM's input term ``W_ih c_i = Σ_j α_ij (W_ih h_j)`` from the projections ``W_ih h_j`` made
  once per command (equal by linearity), the cell written out with ``nn.LSTMCell``'s parameters and gate order
  (input, forget, cell, output), and in training the recurrent weights' gradient summed over the steps in one
  product (:class:`_DeferredWeightGrad`); the tests hold both to ``nn.LSTMCell`` and to the equations above.
- Initialisation: PyTorch's defaults for each layer (their code sets none; PyTorch 1.x's for ``nn.Embedding``
  (their start and end vectors are one-row embeddings, hence N(0, 1)), ``nn.LSTM`` and ``nn.Linear``), drawn here
  from the trial's generator (:func:`bindscale.models.seq2seq_rnn.pytorch_default_init`).
- Their options ``seq_sem``, ``syn_act``, ``sem_mlp`` (the paper's §3.4 and supplementary variants) and
  ``rnn_type`` are at their defaults (off; LSTM); ``n_layers`` is 1. None of them is built here.

Ours beside theirs (the network): the source vocabulary is SCAN's 13 words, the end symbol and the network's
own start symbol (15 rows; theirs has 16, an unused ``<NULL>`` among them), the target vocabulary the 6 actions,
a start and an end symbol (8, as theirs). With their defaults the network has 2,253,068 parameters here
(2,253,288 with their 16 source rows): :func:`syntactic_attention_rnn_params`. Their batches pad sources with
id 0 (their ``<SOS>``) and attend over the padding; ours are never padded (training is one command at a time,
as theirs by default, and :meth:`~bindscale.models.seq2seq_rnn.RecurrentSeq2Seq.generate` groups commands of one
length). Scoring: their ``check_accuracy`` runs the decoder for the gold output's length and counts a command
right when every step's argmax is the gold token, the end symbol included; ours decodes greedily up to the end
symbol. Since no step reads an earlier output, the two give the same exact match on every command.

The training recipe (200,000 single-command updates, Adam at 0.001, per-position mean loss, no clipping in
effect, shuffled epochs, a 20% validation set) is the trial's: :mod:`bindscale.studies.binding_scan.rnn_trial`.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

from .seq2seq_rnn import RecurrentSeq2Seq, _uninitialised, lstm_params

#: The decoder's state: the query ``s`` ``(B, 2X)`` and the decoder LSTM's ``(h, c)`` (after the first step
#: ``s`` is that ``h``).
SAState = tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]
#: What every decoder step reads: the annotations ``h_j`` ``(B, S', 2X)``, the semantic embeddings ``m_j``
#: ``(B, S', M)`` and the decoder LSTM's input projection of every annotation ``W_ih h_j`` ``(B, S', 8X)``.
SAMemory = tuple[torch.Tensor, torch.Tensor, torch.Tensor]


class _DeferredWeightGrad(torch.autograd.Function):
    """Zeros of ``shape`` ``(T, B, n_out)`` whose gradient becomes ``weight``'s: ``Σ_t grad_t^T x_t`` over the inputs
    ``x_t`` (``(B, n_in)``) the caller appends to ``inputs`` before the backward pass. A step that computes ``x_t W^T``
    with ``W`` detached and adds the ``t``-th row of these zeros has the value and the gradients of ``x_t W^T``, but
    the weight's gradient is one product over all steps instead of one outer product a step (at one sequence an
    update, those outer products of the decoder's recurrent weights were most of an update's CPU time)."""

    @staticmethod
    def forward(ctx, weight: torch.Tensor, inputs: list[torch.Tensor], shape: tuple[int, ...]) -> torch.Tensor:
        ctx.inputs = inputs
        return weight.new_zeros(shape)

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        return torch.einsum("tbo,tbi->oi", grad, torch.stack(ctx.inputs)), None, None


def syntactic_attention_rnn_params(n_src: int, n_tgt: int, semantic: int, syntax: int) -> dict[str, int]:
    """Parameter counts of a :class:`SyntacticAttentionRNN` by part, and their sum under ``"total"``.

    ``n_src`` counts the caller's source ids (words and end symbol); the network adds a row for its start symbol.
    ``embeddings``: ``W_m`` (``M`` wide) and ``W_x`` (``X/2``); ``roles``: ``r_start``, ``r_end`` (``X`` each);
    ``syntax1`` / ``syntax2``: the two bidirectional LSTMs (``X/2`` and ``X`` units a direction); ``init``:
    ``W_0``, ``b_0``; ``decoder``: the LSTM of ``2X`` units reading ``c_i`` (``2X``); ``output``: ``W_out``,
    ``b_out`` (from ``M``). The non-embedding count is the total less ``embeddings`` and ``output``.
    """
    M, X, rows = semantic, syntax, n_src + 1
    parts = {
        "embeddings": rows * M + rows * (X // 2),
        "roles": 2 * X,
        "syntax1": 2 * lstm_params(X // 2, X // 2),
        "syntax2": 2 * lstm_params(X, X),
        "init": 2 * X * 2 * X + 2 * X,
        "decoder": lstm_params(2 * X, 2 * X),
        "output": M * n_tgt + n_tgt,
    }
    return parts | {"total": sum(parts.values())}


class SyntacticAttentionRNN(RecurrentSeq2Seq):
    """Russin et al.'s Syntactic Attention encoder-decoder (module docstring).

    Args:
        n_src: source ids of the caller (``0 .. n_src - 1``: the words and the end-of-command symbol, which ends
            every source); the network's start symbol is id ``n_src``, put in front of every source by
            :meth:`encode`.
        n_tgt: target vocabulary size (``sos_id`` and ``eos_id`` among them; ``sos_id`` is never read: the decoder
            reads no output).
        semantic: width ``M`` of the semantic embeddings.
        syntax: ``X``: the syntactic embeddings are ``X/2`` wide, the first bidirectional layer ``X/2`` units a
            direction, the second ``X``; the decoder LSTM ``2X`` units (even).
        dropout: rate on both embeddings (their only dropout with one layer).
        sos_id, eos_id: the target's start and end ids.
        generator: draws the initial weights (PyTorch's default distributions); None: the global RNG.
    """

    def __init__(self, n_src: int, n_tgt: int, semantic: int = 120, syntax: int = 200, dropout: float = 0.5, *,
                 sos_id: int, eos_id: int, generator: torch.Generator | None = None):
        super().__init__()
        if not (0 <= sos_id < n_tgt and 0 <= eos_id < n_tgt) or sos_id == eos_id:
            raise ValueError(f"sos_id={sos_id} and eos_id={eos_id} must be two distinct ids below n_tgt={n_tgt}")
        if syntax < 2 or syntax % 2:
            raise ValueError(f"syntax must be an even width of at least 2, got {syntax}")
        if not 0.0 <= dropout < 1.0:
            raise ValueError(f"dropout must lie in [0, 1), got {dropout}")
        self.n_src, self.n_tgt, self.semantic, self.syntax = n_src, n_tgt, semantic, syntax
        self.dropout, self.sos_id, self.eos_id, self.src_sos_id = dropout, sos_id, eos_id, n_src
        M, X, new = semantic, syntax, _uninitialised  # reset_parameters draws every weight from the generator
        self.sem_embed = new(nn.Embedding, n_src + 1, M)
        self.syn_embed = new(nn.Embedding, n_src + 1, X // 2)
        self.syntax1 = new(nn.LSTM, X // 2, X // 2, batch_first=True, bidirectional=True)
        self.roles = new(nn.Embedding, 2, X)  # r_start, r_end
        self.syntax2 = new(nn.LSTM, X, X, batch_first=True, bidirectional=True)
        self.init_query = new(nn.Linear, 2 * X, 2 * X)
        self.decoder = new(nn.LSTMCell, 2 * X, 2 * X)
        self.out = new(nn.Linear, M, n_tgt)
        self.drop = nn.Dropout(dropout)
        self.reset_parameters(generator)

    # ----------------------------------------------------------------------------------------- sizes --

    @property
    def d_model(self) -> int:
        """The decoder's width (``2X``), under the name the project's models share."""
        return 2 * self.syntax

    def lookup_tables(self) -> list[nn.Module]:
        """Both embedding tables and the output layer (left out of the non-embedding count)."""
        return [self.sem_embed, self.syn_embed, self.out]

    # ------------------------------------------------------------------------------------ the network --

    def encode(self, src: torch.Tensor) -> tuple[SAMemory, SAState]:
        """Read the sources, framed by the start symbol (put in front here) and the end symbol (the caller's).

        Args:
            src: ``(B, S)`` source ids, every row ``S`` long, the end symbol last.

        Returns:
            ``memory``: the syntactic annotations ``h_j`` ``(B, S + 1, 2X)``, the semantic embeddings ``m_j``
            ``(B, S + 1, M)`` (after dropout) and ``W_ih h_j`` ``(B, S + 1, 8X)``; the state: ``s_0`` ``(B, 2X)``
            and the decoder LSTM's zero state.
        """
        B, X = src.shape[0], self.syntax
        x = torch.cat([torch.full((B, 1), self.src_sos_id, dtype=src.dtype, device=src.device), src], dim=1)
        m = self.drop(self.sem_embed(x))  # (B, S', M)
        first, _ = self.syntax1(self.drop(self.syn_embed(x)))  # (B, S', X): forward then backward halves
        fwd, bwd = first[..., : X // 2], first[..., X // 2:]
        # Each inner position j: [forward state at j - 1; backward state at j + 1], its own word left out.
        z = torch.cat([fwd[:, :-2], bwd[:, 2:]], dim=-1)  # (B, S' - 2, X)
        start, end = self.roles.weight[0].expand(B, 1, X), self.roles.weight[1].expand(B, 1, X)
        h, (h_n, _) = self.syntax2(torch.cat([start, z, end], dim=1))  # h: (B, S', 2X); h_n: (2, B, X)
        s0 = torch.relu(self.init_query(torch.cat([h_n[0], h_n[1]], dim=-1)))  # (B, 2X)
        zero = s0.new_zeros(B, 2 * X)
        return (h, m, F.linear(h, self.decoder.weight_ih)), (s0, (zero, zero))

    def attend(self, query: torch.Tensor, annotations: torch.Tensor) -> torch.Tensor:
        """The attention weights ``α_j = softmax_j(query · h_j)`` ``(B, S')`` (each row sums to 1).

        Args:
            query: ``(B, 2X)`` ``s_{i-1}``; annotations: ``(B, S', 2X)`` the syntactic ``h_j``.
        """
        return torch.softmax(torch.bmm(annotations, query.unsqueeze(2)).squeeze(2), dim=-1)

    def step(self, prev: torch.Tensor, state: SAState, memory: SAMemory) -> tuple[torch.Tensor, SAState, torch.Tensor]:
        """One decoder step: the logits of ``a_i`` from ``m̄_i`` alone, then ``s_i = LSTM(c_i, state)``.

        Args:
            prev: the previous output ids (unread: the decoder reads no output); state: ``(s_{i-1}, (h, c))``;
                memory: :meth:`encode`'s.

        Returns:
            Logits ``(B, V)``, the new state ``(s_i, (s_i, c))`` and the attention weights ``(B, S')``.
        """
        return self._step(state, memory, lambda h: F.linear(h, self.decoder.weight_hh))

    def _step(self, state: SAState, memory: SAMemory, recurrent: Callable[[torch.Tensor], torch.Tensor]
              ) -> tuple[torch.Tensor, SAState, torch.Tensor]:
        """:meth:`step` with the recurrent term ``W_hh h`` computed by ``recurrent``."""
        query, (h, c) = state
        annotations, semantics, projected = memory
        alpha = self.attend(query, annotations)  # (B, S')
        weights = alpha.unsqueeze(1)
        meaning = torch.bmm(weights, semantics).squeeze(1)  # m̄_i = Σ_j α_ij m_j
        cell = self.decoder
        # W_ih c_i = Σ_j α_ij W_ih h_j (the projections made once by encode); PyTorch's gate order i, f, g, o.
        gates = torch.bmm(weights, projected).squeeze(1) + cell.bias_ih + recurrent(h) + cell.bias_hh
        i, f, g, o = gates.chunk(4, dim=-1)
        c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
        h = torch.sigmoid(o) * torch.tanh(c)
        return self.out(meaning), (h, (h, c)), alpha

    def forward(self, src: torch.Tensor, tgt: torch.Tensor, teacher_forcing: bool | torch.Tensor = True,
                return_attention: bool = False):
        """Decode ``T = tgt.shape[1]`` steps of each source, as in training: the logits ``(B, T, V)`` (and with
        ``return_attention`` the weights ``(B, T, S')``). The decoder reads no output, so ``teacher_forcing``
        changes nothing. With gradients on, the recurrent weights' gradient is summed over the steps in one
        product (:class:`_DeferredWeightGrad`); the values are :meth:`step`'s."""
        if not torch.is_grad_enabled():
            return super().forward(src, tgt, teacher_forcing, return_attention)
        B, T = tgt.shape
        memory, state = self.encode(src)
        weight = self.decoder.weight_hh
        seen: list[torch.Tensor] = []
        taps = _DeferredWeightGrad.apply(weight, seen, (T, B, weight.shape[0]))
        fixed = weight.detach()
        logits, alphas = [], []
        for t in range(T):
            def recurrent(h: torch.Tensor, t: int = t) -> torch.Tensor:
                seen.append(h.detach())
                return F.linear(h, fixed) + taps[t]
            out, state, alpha = self._step(state, memory, recurrent)
            logits.append(out)
            alphas.append(alpha)
        stacked = torch.stack(logits, dim=1)
        return (stacked, torch.stack(alphas, dim=1)) if return_attention else stacked

