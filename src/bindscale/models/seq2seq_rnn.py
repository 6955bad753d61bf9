"""A recurrent encoder-decoder with optional additive attention: the sequence-to-sequence networks of
Lake & Baroni 2018, "Generalization without systematicity: On the compositional skills of
sequence-to-sequence recurrent networks" (ICML; arXiv 1711.00350), written from their Supplementary
("Standard Encoder-Decoder RNN", "Attention Encoder-Decoder RNN"), which borrows the attention of Bahdanau,
Cho & Bengio 2015, "Neural machine translation by jointly learning to align and translate" (ICLR).

What the paper says (read in arXiv 1711.00350v3, the ICML text: §3 "Models and setup", §4 Experiment 3 and
the Supplementary) and what this module does with it:

- Encoder (§3, Fig. 2; Supplementary): the command is read word by word, ending with an ``<EOS>`` symbol;
  words are learned embeddings "with the same number of dimensions as the hidden layer"; ``h_t =
  f_E(h_{t-1}, w_t)``. Here ``f_E`` is an ``n_layers`` LSTM (Hochreiter & Schmidhuber 1997) of ``hidden``
  units; the caller appends the end symbol to every source sequence.
- Decoder, without attention: ``g_0 = h_T`` (every layer's state), ``g_t = f_D(g_{t-1}, a_{t-1})``, ``g_t``
  mapped to a softmax over the actions; it starts from ``<SOS>`` (Fig. 2). Encoder and decoder have the
  same number of layers and units and share no weights (§3).
- Decoder with attention (Supplementary, Bahdanau et al. 2015's model, §3: "using the model from [Bahdanau
  et al.]"), at output step ``i``, with ``h_1..h_T`` the encoder's top-layer states and ``g_{i-1}`` the
  decoder's previous top-layer state::

      e_it = v_a^T tanh(W_a g_{i-1} + U_a h_t)           (alignment model)
      α_it = exp(e_it) / Σ_j exp(e_ij)                  (weights over the T source positions)
      c_i  = Σ_t α_it h_t                                (context)
      g_i  = f_D(g_{i-1}, a_{i-1}, c_i)                  (LSTM input: [embedding of a_{i-1}; c_i])
      p(a_i) = softmax(W_o [g_i; c_i] + b_o)            ("g_i is concatenated with c_i and mapped to a softmax")

  with ``g_0 = h_T`` as without attention. ``W_a``, ``U_a`` (``hidden × hidden``) and ``v_a`` (``hidden``) carry
  no bias, as in the equation; the alignment model's width is ``hidden`` (the paper does not give it).
- Dropout (§3: "applied to recurrent layers and word embeddings"; its rate is the model's ``dropout``):
  here on the source and target word embeddings and on each recurrent layer's output where a non-recurrent
  connection reads it (the next layer, the attention's annotations ``h_t``, the output layer), never on the
  recurrent connections nor on the handed-over state ``g_0 = h_T``: bindscale's reading of the sentence,
  the placement of Zaremba, Sutskever & Vinyals 2014, "Recurrent neural network regularization". So ours drops
  out the embeddings and each recurrent layer's outputs; an implementation built on the PyTorch tutorial may have
  dropped out the embeddings only (the LSTM's own ``dropout`` acts between stacked layers, so does nothing for
  one layer), a reading whose effect at p = 0.1 is not measured here.
- Decoding at test time is greedy (§4, Experiment 2: "we examined the greedy decoder for search-related
  errors"): :meth:`Seq2SeqRNN.generate`.
- Initialisation: the paper's networks were PyTorch modules with their defaults (§3: "implemented in
  PyTorch and based on a standard seq2seq implementation", the PyTorch seq2seq translation tutorial). The
  same distributions are drawn here from the given generator (the trial's ``"init"`` stream), so that a
  run is reproducible: embeddings N(0, 1); LSTM weights and biases U(−1/√hidden, 1/√hidden); linear weights
  and biases U(−1/√fan_in, 1/√fan_in).

Lake & Baroni's best model on the add-primitive "jump" split (§4, Experiment 3: "The best performance was
1.2% accuracy (LSTM, attention, one layer, 100 hidden units, dropout 0.1)"; the overall-best 2-layer,
200-unit LSTM without attention and dropout 0.5 reached 0.08%) is ``Seq2SeqRNN(n_src, n_tgt, hidden=100,
n_layers=1, dropout=0.1, attention=True, ...)``. The training procedure (100,000 single-example trials,
Adam, clipping, teacher forcing half the time) is the trainer's:
:mod:`bindscale.studies.binding_scan.rnn_trial`.

Shapes: ``B`` sequences, ``S`` source positions (the end symbol included), ``T`` target positions, ``H =
hidden``, ``L = n_layers``, ``V = n_tgt``. Source and target have vocabularies of their own (``n_src`` and
``n_tgt`` ids; no padding id: sequences of one batch have one length, :meth:`Seq2SeqRNN.generate` groups
them by length). :func:`seq2seq_params` counts the parameters by formula.
"""

from __future__ import annotations

import math
from collections import defaultdict

import torch
from torch import nn

#: A decoder state: one ``(h, c)`` pair of ``(B, H)`` tensors per layer, the top layer last.
State = list[tuple[torch.Tensor, torch.Tensor]]


def lstm_params(n_in: int, hidden: int) -> int:
    """Parameters of one LSTM layer (PyTorch's: input and recurrent weights of the four gates, two biases)."""
    return 4 * hidden * (n_in + hidden) + 8 * hidden


def seq2seq_params(n_src: int, n_tgt: int, hidden: int, n_layers: int, attention: bool) -> dict[str, int]:
    """Parameter counts of a :class:`Seq2SeqRNN` by part, and their sum under ``"total"``.

    ``embeddings``: both word-embedding tables; ``output``: ``W_o`` and ``b_o``; ``encoder`` / ``decoder``: the
    LSTM layers (the decoder's first layer reads ``[embedding; context]``, ``2H`` wide, with attention);
    ``attention``: ``W_a``, ``U_a``, ``v_a``. The non-embedding count (:meth:`Seq2SeqRNN.n_params_nonembedding`)
    is the total less ``embeddings`` and ``output``.
    """
    H, wide = hidden, (2 if attention else 1) * hidden
    parts = {
        "embeddings": (n_src + n_tgt) * H,
        "encoder": lstm_params(H, H) + (n_layers - 1) * lstm_params(H, H),
        "decoder": lstm_params(wide, H) + (n_layers - 1) * lstm_params(H, H),
        "attention": 2 * H * H + H if attention else 0,
        "output": wide * n_tgt + n_tgt,
    }
    return parts | {"total": sum(parts.values())}


def _uninitialised(cls: type[nn.Module], *args, **kwargs) -> nn.Module:
    """A layer built on the CPU without drawing its default initial weights (nothing read from the global RNG)."""
    return cls(*args, device="meta", **kwargs).to_empty(device="cpu")


@torch.no_grad()
def pytorch_default_init(model: nn.Module, generator: torch.Generator | None = None) -> None:
    """Draw every parameter of ``model`` from ``generator`` (None: the global RNG), in parameter order, from the
    distribution PyTorch's own layer would have drawn it from: an embedding N(0, 1); an LSTM's (or LSTM cell's)
    weights and biases U(−1/√hidden_size, 1/√hidden_size); a linear layer's weight (kaiming_uniform with a = √5)
    and bias U(−1/√fan_in, 1/√fan_in), both ``1/√in_features``. Any other owner of a parameter is refused."""
    for name, p in model.named_parameters():
        owner = model.get_submodule(name.rpartition(".")[0])
        if isinstance(owner, nn.Embedding):
            nn.init.normal_(p, 0.0, 1.0, generator=generator)
            continue
        if isinstance(owner, (nn.LSTM, nn.LSTMCell)):
            bound = 1.0 / math.sqrt(owner.hidden_size)
        elif isinstance(owner, nn.Linear):
            bound = 1.0 / math.sqrt(owner.in_features)
        else:
            raise TypeError(f"no default initialisation for parameter {name} of a {type(owner).__name__}")
        nn.init.uniform_(p, -bound, bound, generator=generator)


class RecurrentSeq2Seq(nn.Module):
    """What the project's recurrent encoder-decoders share: sizes, PyTorch's default initialisation drawn from a
    generator, the training-time decoding loop (:meth:`forward`, teacher forcing per row) and batched greedy
    decoding (:meth:`generate`). A subclass sets ``n_src``, ``n_tgt``, ``sos_id``, ``eos_id``, its layers and
    two methods:

    - ``encode(src) -> (memory, state)``: read ``(B, S)`` sources; ``memory`` is what every decoder step reads,
      ``state`` the decoder's initial state (both opaque here);
    - ``step(prev, state, memory) -> (logits (B, V), state, weights)``: one decoder step reading the previous
      output ids ``prev`` ``(B,)``; ``weights`` its attention over the source positions ``(B, S')`` or None.

    and ``lookup_tables()``, the modules whose parameters :meth:`n_params_nonembedding` leaves out.
    """

    sos_id: int
    eos_id: int

    #: No feed-forward block (the project's models report theirs as ``d_ff``).
    d_ff = None

    def n_params(self) -> int:
        return sum(p.numel() for p in self.parameters())

    def lookup_tables(self) -> list[nn.Module]:
        raise NotImplementedError

    def n_params_nonembedding(self) -> int:
        """Parameters less the word-embedding tables and the output layer (as the transformers count theirs)."""
        return self.n_params() - sum(p.numel() for m in self.lookup_tables() for p in m.parameters())

    def reset_parameters(self, generator: torch.Generator | None = None) -> None:
        """PyTorch's default initial weights, drawn from ``generator`` in parameter order (:func:`pytorch_default_init`)."""
        pytorch_default_init(self, generator)

    def encode(self, src: torch.Tensor):
        raise NotImplementedError

    def step(self, prev: torch.Tensor, state, memory):
        raise NotImplementedError

    def forward(self, src: torch.Tensor, tgt: torch.Tensor, teacher_forcing: bool | torch.Tensor = True,
                return_attention: bool = False):
        """Decode ``T = tgt.shape[1]`` steps of each source, as in training.

        At step 1 the decoder reads ``sos_id``; at step ``i > 1`` it reads the gold ``tgt[:, i-2]`` where teacher
        forcing is on for the row, else its own previous greedy output (``argmax`` of the step's logits, which
        carries no gradient), as Lake & Baroni's training does half the time (§3). (A decoder whose step reads no
        previous output decodes alike either way.)

        Args:
            src: ``(B, S)`` source ids; tgt: ``(B, T)`` gold output ids (ending with ``eos_id``).
            teacher_forcing: one bool for every row, or a ``(B,)`` bool tensor.
            return_attention: also return the weights.

        Returns:
            Logits ``(B, T, V)``; with ``return_attention``, also the weights ``(B, T, S')`` (None without
            attention).
        """
        B, T = tgt.shape
        memory, state = self.encode(src)
        forced = torch.as_tensor(teacher_forcing, device=tgt.device).expand(B)
        prev = torch.full((B,), self.sos_id, dtype=torch.long, device=tgt.device)
        logits, alphas = [], []
        for i in range(T):
            out, state, alpha = self.step(prev, state, memory)
            logits.append(out)
            alphas.append(alpha)
            prev = torch.where(forced, tgt[:, i], out.argmax(dim=-1))
        stacked = torch.stack(logits, dim=1)
        if not return_attention:
            return stacked
        return stacked, (torch.stack(alphas, dim=1) if alphas[0] is not None else None)

    # ------------------------------------------------------------------------------------- decoding --

    def generate(self, srcs: list[list[int]], max_new_tokens: int, batch_size: int | None = None) -> list[list[int]]:
        """Greedy decoding of each source, batched: sources of one length decode together (no padding).

        Runs in eval mode (no dropout) under ``inference_mode``; the training flag is restored afterwards.

        Args:
            srcs: source id lists, each non-empty (the end symbol included).
            max_new_tokens: at most this many outputs per source.
            batch_size: most sources decoded together (None: a whole length group).

        Returns:
            Each source's outputs in input order, **including** ``eos_id`` where it was emitted (a row that does
            not end with it ran out of ``max_new_tokens``).
        """
        if any(not s for s in srcs):
            raise ValueError("every source needs at least one id (the end symbol)")
        out: list[list[int]] = [[] for _ in srcs]
        if max_new_tokens <= 0 or not srcs:
            return out
        groups: dict[int, list[int]] = defaultdict(list)
        for n, s in enumerate(srcs):
            groups[len(s)].append(n)
        was_training = self.training
        self.eval()
        try:
            with torch.inference_mode():
                device = next(self.parameters()).device
                for rows in groups.values():
                    size = batch_size or len(rows)
                    for start in range(0, len(rows), size):
                        chunk = rows[start:start + size]
                        src = torch.tensor([srcs[n] for n in chunk], dtype=torch.long, device=device)
                        for n, pred in zip(chunk, self._greedy(src, max_new_tokens)):
                            out[n] = pred
        finally:
            self.train(was_training)
        return out

    def _greedy(self, src: torch.Tensor, max_new_tokens: int) -> list[list[int]]:
        """Greedy outputs of one rectangular batch ``(B, S)``, each cut after its first ``eos_id``."""
        B = src.shape[0]
        memory, state = self.encode(src)
        prev = torch.full((B,), self.sos_id, dtype=torch.long, device=src.device)
        done = torch.zeros(B, dtype=torch.bool, device=src.device)
        steps = []
        for _ in range(max_new_tokens):
            logits, state, _ = self.step(prev, state, memory)
            prev = logits.argmax(dim=-1)
            steps.append(prev)
            done |= prev == self.eos_id
            if bool(done.all()):
                break
        preds = torch.stack(steps, dim=1).tolist()
        return [row[:row.index(self.eos_id) + 1] if self.eos_id in row else row for row in preds]


class Seq2SeqRNN(RecurrentSeq2Seq):
    """An LSTM encoder and an LSTM decoder, with Bahdanau attention when ``attention`` (module docstring).

    Args:
        n_src: source vocabulary size (ids ``0 .. n_src - 1``; the caller's end-of-command id among them).
        n_tgt: target vocabulary size (``sos_id`` and ``eos_id`` among them).
        hidden: units per layer ``H``, also the embedding width.
        n_layers: LSTM layers ``L`` of the encoder and of the decoder.
        dropout: dropout rate on the embeddings and the recurrent layers' outputs (module docstring).
        attention: the attention decoder (else the plain one, which sees ``h_T`` only).
        sos_id: the target id the decoder starts from; eos_id: the target id that ends an output.
        generator: draws the initial weights (PyTorch's default distributions); None: the global RNG.
    """

    def __init__(self, n_src: int, n_tgt: int, hidden: int, n_layers: int = 1, dropout: float = 0.0,
                 attention: bool = True, *, sos_id: int, eos_id: int, generator: torch.Generator | None = None):
        super().__init__()
        if not (0 <= sos_id < n_tgt and 0 <= eos_id < n_tgt) or sos_id == eos_id:
            raise ValueError(f"sos_id={sos_id} and eos_id={eos_id} must be two distinct ids below n_tgt={n_tgt}")
        if not 0.0 <= dropout < 1.0:
            raise ValueError(f"dropout must lie in [0, 1), got {dropout}")
        self.n_src, self.n_tgt, self.hidden, self.n_layers = n_src, n_tgt, hidden, n_layers
        self.dropout, self.attention, self.sos_id, self.eos_id = dropout, attention, sos_id, eos_id
        H, new = hidden, _uninitialised  # reset_parameters draws every weight from the generator
        self.src_embed = new(nn.Embedding, n_src, H)
        self.tgt_embed = new(nn.Embedding, n_tgt, H)
        # The encoder reads whole sequences; its own dropout acts between layers only (after the last: drop).
        self.encoder = new(nn.LSTM, H, H, n_layers, batch_first=True, dropout=dropout if n_layers > 1 else 0.0)
        # The decoder runs one step at a time (attention reads g_{i-1}; without teacher forcing the next
        # input is the model's own output): one cell per layer.
        wide = 2 * H if attention else H
        self.cells = nn.ModuleList([new(nn.LSTMCell, wide if layer == 0 else H, H) for layer in range(n_layers)])
        if attention:
            self.W_a = new(nn.Linear, H, H, bias=False)
            self.U_a = new(nn.Linear, H, H, bias=False)
            self.v_a = new(nn.Linear, H, 1, bias=False)
        self.out = new(nn.Linear, wide, n_tgt)
        self.drop = nn.Dropout(dropout)
        self.reset_parameters(generator)

    # ----------------------------------------------------------------------------------------- sizes --

    @property
    def d_model(self) -> int:
        """The width (``hidden``), under the name the project's models share."""
        return self.hidden

    def lookup_tables(self) -> list[nn.Module]:
        """The two embedding tables and the output layer (left out of :meth:`n_params_nonembedding`)."""
        return [self.src_embed, self.tgt_embed, self.out]

    # ------------------------------------------------------------------------------------ the network --

    def encode(self, src: torch.Tensor) -> tuple[tuple[torch.Tensor, torch.Tensor] | None, State]:
        """Read the sources.

        Args:
            src: ``(B, S)`` source ids, every row ``S`` long (the end symbol included).

        Returns:
            ``memory``: ``(annotations, keys)``, the top layer's states ``h_1..h_S`` after dropout ``(B, S, H)``
            and ``U_a h_t`` ``(B, S, H)`` (computed once per sequence), or None without attention; and the
            decoder's initial state ``g_0 = h_S``: every layer's ``(h, c)``, each ``(B, H)``.
        """
        out, (h, c) = self.encoder(self.drop(self.src_embed(src)))  # out: (B, S, H); h, c: (L, B, H)
        state = [(h[layer], c[layer]) for layer in range(self.n_layers)]
        if not self.attention:
            return None, state
        annotations = self.drop(out)
        return (annotations, self.U_a(annotations)), state

    def attend(self, g_prev: torch.Tensor, annotations: torch.Tensor, keys: torch.Tensor
               ) -> tuple[torch.Tensor, torch.Tensor]:
        """Bahdanau attention: ``α_i = softmax_t(v_a^T tanh(W_a g_{i-1} + U_a h_t))`` and ``c_i = Σ_t α_it h_t``.

        Args:
            g_prev: ``(B, H)`` the decoder's previous top-layer state ``g_{i-1}``.
            annotations: ``(B, S, H)`` the encoder states ``h_t``; keys: ``(B, S, H)`` ``U_a h_t``.

        Returns:
            The context ``c_i`` ``(B, H)`` and the weights ``α_i`` ``(B, S)`` (each row sums to 1).
        """
        e = self.v_a(torch.tanh(self.W_a(g_prev).unsqueeze(1) + keys)).squeeze(-1)  # (B, S)
        alpha = torch.softmax(e, dim=-1)
        return torch.bmm(alpha.unsqueeze(1), annotations).squeeze(1), alpha

    def step(self, prev: torch.Tensor, state: State, memory: tuple[torch.Tensor, torch.Tensor] | None
             ) -> tuple[torch.Tensor, State, torch.Tensor | None]:
        """One decoder step ``i``: ``g_i = f_D(g_{i-1}, a_{i-1}[, c_i])`` and the logits of ``a_i``.

        Args:
            prev: ``(B,)`` the previous output ids ``a_{i-1}`` (``sos_id`` at the first step).
            state: ``g_{i-1}``, every layer's ``(h, c)``; memory: :meth:`encode`'s.

        Returns:
            Logits ``(B, V)`` (``W_o [g_i; c_i] + b_o``, or ``W_o g_i + b_o`` without attention), the new
            state and the attention weights ``(B, S)`` (None without attention).
        """
        x = self.drop(self.tgt_embed(prev))  # (B, H)
        ctx = alpha = None
        if memory is not None:
            ctx, alpha = self.attend(state[-1][0], *memory)
            x = torch.cat([x, ctx], dim=-1)  # (B, 2H)
        new: State = []
        for layer, cell in enumerate(self.cells):
            h, c = cell(x, state[layer])
            new.append((h, c))
            x = self.drop(h)  # to the next layer, or (the top layer) to the output
        return self.out(x if ctx is None else torch.cat([x, ctx], dim=-1)), new, alpha
