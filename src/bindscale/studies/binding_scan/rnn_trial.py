"""One recurrent trial of the ``binding_scan`` study: Lake & Baroni 2018's encoder-decoder
(:class:`bindscale.models.seq2seq_rnn.Seq2SeqRNN`) trained as their §3 trains it, or Russin et al. 2019's Syntactic
Attention (:class:`bindscale.models.syntactic_attention_rnn.SyntacticAttentionRNN`) trained as their script trains
it (below), then scored by the record the decoders' trials write (:func:`bindscale.kit.scan_result`). One data
path, one training loop (:func:`fit`, parameterised by the trial's :class:`~.config.RNNTrainConfig`) and one
scoring path serve both.

The setting, read in Lake & Baroni 2018, "Generalization without systematicity: On the compositional skills of
sequence-to-sequence recurrent networks" (ICML; arXiv 1711.00350v3), and what this module does:

- "Training consisted of 100,000 trials, each presenting an input/output sequence and then updating the
  networks weights" (§3); footnote 5: the distinct training commands are fewer than 100k, so "we randomly
  sampled them with replacement to reach the target size". Here: ``train.steps`` updates, each on one training
  line drawn uniformly with replacement (the ``"train"`` stream), so the add-primitive split's repeated "jump"
  line (1,467 of 14,670, as in the official file) makes about 10% of the presentations (§4, Experiment 3: "roughly
  10% of all training presentations").
- "The ADAM optimization algorithm was used with default parameters, including a learning rate of 0.001"
  (§3): Adam, β = (0.9, 0.999), ε = 1e-8, no weight decay, the learning rate constant
  (:func:`bindscale.kit.fit_minibatches` with ``schedule="constant"``; AdamW without decay is Adam).
- "Gradients with a norm larger than 5.0 were clipped" (§3): ``train.grad_clip`` on the global gradient norm over
  the encoder and the decoder together (one :func:`torch.nn.utils.clip_grad_norm_` over every parameter). The
  paper says no more; the PyTorch tutorial it builds on keeps separate encoder and decoder optimizers, so clipping
  each network's norm on its own is the other reading.
- "During training, for half the time, the network's self-produced outputs were passed back to the next step,
  and for the other half of the time, the ground-truth outputs" (§3): the decision is drawn once per trial with
  probability ``train.teacher_forcing`` (a sub-stream of ``"train"``), as the PyTorch seq2seq translation
  tutorial the paper names as its base implementation (§3, footnote 6) draws it per training pair. Also as
  that tutorial: the loss is the sum over the target's positions of the cross-entropy (nats per sequence, the
  ``final_loss`` and loss curve of a recurrent record), and a self-fed trial stops at the first ``<EOS>`` it
  emits (its later positions count no loss).
- Dropout masks are drawn from the global generator seeded from another sub-stream of ``"train"`` inside
  :func:`torch.random.fork_rng` (the process's generators are left as they were: on a CPU trial the CUDA ones
  are never touched), so a seed's run is reproducible.
- Scoring: greedy decoding and exact match of the whole action sequence on the whole test set with
  ``task.n_test: 0`` (7,706 commands on add-jump), as :func:`bindscale.kit.scan_result` scores every trial of the
  study. Lake & Baroni report training accuracy (§3: "above 99.5% for the overall-best network ... at least 95%
  for the top-performers in each experiment"): ``acc_train`` / ``tok_acc_train`` here, greedy exact match and
  token accuracy on every distinct training command.

Russin, Jo, O'Reilly & Bengio 2019 ("Compositional generalization in a deep seq2seq model by separating syntax and
semantics", arXiv 1904.09708): the recipe is read from their code, github.com/jlrussin/syntactic_attention at its
first commit (c1ed95b), ``train_test.py`` and its defaults (the paper's text was not available to this session
beyond its abstract; the model's reading: :mod:`bindscale.models.syntactic_attention_rnn`), with what this module
does (``binding_scan-russin2019.yaml``):

- Data: their script keeps the first 80% of the add-jump training file for training and the last 20% as a
  validation set (the official file is shuffled, so a random fifth of its lines; "jump" alone is 1,194 of their
  11,736 training lines). Here ``task.n_id: 2641`` withholds a random fifth of the 13,203 distinct commands other
  than "jump" (the kit never withholds a repeated line): 12,029 training lines, "jump" 1,467 of them (12.2% against
  their 10.2%), and ``acc_id`` is exact match on the withheld fifth, their validation accuracy.
- ``batch_size`` 1 (their default), ``num_iters`` 200,000 optimizer steps, the lines in shuffled epochs (a PyTorch
  ``DataLoader`` with ``shuffle=True``): ``train.order: epochs``, a fresh permutation of the training lines each
  pass (the ``"train"`` stream). Their loop tests the count only between epochs, so it runs to the end of the epoch
  that passes 200,000 (18 epochs of 11,736: 211,248 steps); ours stops at ``train.steps``.
- Adam at a constant 0.001, PyTorch's other defaults (β = (0.9, 0.999), ε = 1e-8, no decay), as here.
- The loss: ``NLLLoss(reduction="mean")`` over a line's output positions (actions and the end symbol):
  ``train.loss: mean``, the summed cross-entropy divided by the target length.
- Gradient clipping: their ``--clip_norm`` is 5.0, but the script hands ``clip_grad_norm_`` the generator
  ``model.parameters()`` after ``optim.Adam`` has consumed it, so the call sees no parameter and clips nothing
  (PyTorch 1.x and 2.x alike: the norm of an empty list is 0). Their runs were not clipped: ``train.grad_clip:
  null`` here (``--set train.grad_clip=5.0`` for the flag's intent).
- The decoder reads no previous output, so there is no teacher forcing (``train.teacher_forcing`` is None) and
  every position of a line counts in the loss.
- Dropout 0.5 on both embeddings, off at evaluation (their ``model.eval()``).
- Which model is scored: every 5 epochs and after the last, their script records the training, validation and test
  error and saves the weights when the validation error (the training-distribution fifth, never the test set) is
  the lowest so far. Which of these the paper's table reports could not be read here. We score the final model
  (after ``train.steps`` updates), and pick no checkpoint at all, so no choice is made on test numbers.
- What they report, as their results table is commonly cited (not re-read from the paper here; the study's anchor,
  :data:`bindscale.studies.binding_scan.ANCHORS`, gives "about 91%"): add-jump 91.0% test exact match, a mean over
  runs with a large spread (standard deviation 27.4 points); around-right 28.9% (34.8).

Vocabularies: the decoders' shared :class:`bindscale.kit.Vocab` is kept at the interface (the trial's data,
prompts ``command <sep>`` and outputs ``actions <eos>``); the network has its own (:class:`Seq2SeqIds`): the
source ids are the command words and ``<sep>`` (the end-of-command symbol of the paper's Fig. 2), the target ids
``<sep>`` (the decoder's start symbol), ``<eos>`` and the actions. :class:`SharedVocabSeq2Seq` translates, so that
the kit's scoring reads the network as it reads a decoder.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import nn

from bindscale.kit import (
    Prepared,
    ScanData,
    TrialResult,
    fit_minibatches,
    generator,
    scan,
    scan_result,
    score_pairs,
    stream_seed,
)
from bindscale.models.seq2seq_rnn import RecurrentSeq2Seq, Seq2SeqRNN
from bindscale.models.syntactic_attention_rnn import SyntacticAttentionRNN

from .config import BindingTrial

#: Adam's default (β1, β2) (Kingma & Ba 2015), the paper's optimizer "with default parameters".
ADAM_BETAS = (0.9, 0.999)


class Seq2SeqIds(NamedTuple):
    """The network's vocabularies as shared-:class:`bindscale.kit.Vocab` ids: ``src[i]`` is the shared id of source
    id ``i`` (``src[0]`` the end-of-command ``<sep>``, then the command words, sorted), ``tgt[i]`` that of target id
    ``i`` (``tgt[0]`` the start symbol ``<sep>``, ``tgt[1]`` ``<eos>``, then the actions, sorted)."""

    src: list[int]
    tgt: list[int]

    @classmethod
    def of(cls, data: ScanData) -> Seq2SeqIds:
        """The ids of a trial's data (every word and action of its three sets)."""
        pairs = [*data.train, *data.id_check, *data.test]
        v = data.vocab
        sep, eos = v.prompt(scan.Pair((), ()))[-1], v.target(scan.Pair((), ()))[-1]
        words = sorted({t for p in pairs for t in p.src})
        actions = sorted({t for p in pairs for t in p.tgt})
        return cls([sep, *v.ids(words)], [sep, eos, *v.ids(actions)])

    def source(self, shared: list[int]) -> list[int]:
        """Source ids of a shared-id prompt (``command <sep>``)."""
        index = {s: i for i, s in enumerate(self.src)}
        return [index[t] for t in shared]

    def target(self, shared: list[int]) -> list[int]:
        """Target ids of a shared-id output (``actions <eos>``)."""
        index = {s: i for i, s in enumerate(self.tgt)}
        return [index[t] for t in shared]


class SharedVocabSeq2Seq(nn.Module):
    """A recurrent encoder-decoder (:class:`~bindscale.models.seq2seq_rnn.RecurrentSeq2Seq`) read through the trial's shared vocabulary, as the kit reads a decoder-only model:
    ``generate(prompts, max_new_tokens, stop_id)`` takes prompts ``command <sep>`` and returns outputs ending
    with ``stop_id`` (``<eos>``), in shared ids; sizes as the project's models report them."""

    def __init__(self, net: RecurrentSeq2Seq, ids: Seq2SeqIds):
        super().__init__()
        self.net, self.ids = net, ids
        self.register_buffer("src_ids", torch.tensor(ids.src), persistent=False)
        self.register_buffer("tgt_ids", torch.tensor(ids.tgt), persistent=False)

    @property
    def d_model(self) -> int:
        return self.net.d_model

    @property
    def d_ff(self) -> None:
        return self.net.d_ff

    def n_params(self) -> int:
        return self.net.n_params()

    def n_params_nonembedding(self) -> int:
        return self.net.n_params_nonembedding()

    def generate(self, prompts: list[list[int]], max_new_tokens: int, stop_id: int, **_) -> list[list[int]]:
        """Greedy outputs of shared-id prompts (:meth:`RecurrentSeq2Seq.generate`), in shared ids."""
        if stop_id != self.ids.tgt[self.net.eos_id]:
            raise ValueError(f"stop_id {stop_id} is not the network's end symbol {self.ids.tgt[self.net.eos_id]}")
        preds = self.net.generate([self.ids.source(p) for p in prompts], max_new_tokens)
        return [[self.ids.tgt[i] for i in pred] for pred in preds]


def build_model(trial: BindingTrial, data: ScanData) -> SharedVocabSeq2Seq:
    """The trial's untrained network (its ``"init"`` stream) behind the shared vocabulary of ``data``: Lake &
    Baroni's for ``lstm_seq2seq``, Russin et al.'s for ``syntactic_attention_rnn``."""
    m, ids, g = trial.model, Seq2SeqIds.of(data), generator(trial.seed, "init")
    if m.kind == "syntactic_attention_rnn":
        net: RecurrentSeq2Seq = SyntacticAttentionRNN(len(ids.src), len(ids.tgt), m.semantic, m.syntax, m.dropout,
                                                      sos_id=0, eos_id=1, generator=g)
    else:
        net = Seq2SeqRNN(len(ids.src), len(ids.tgt), m.hidden, m.n_layers, m.dropout, m.attention, sos_id=0,
                         eos_id=1, generator=g)
    return SharedVocabSeq2Seq(net, ids)


def examples(data: ScanData, ids: Seq2SeqIds) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Each training line (repeats kept) as ``(source (1, S), target (1, T))`` network ids: ``command <sep>`` and
    ``actions <eos>``."""
    v = data.vocab
    return [(torch.tensor([ids.source(v.prompt(p))]), torch.tensor([ids.target(v.target(p))])) for p in data.train]


def trial_loss(net: RecurrentSeq2Seq, src: torch.Tensor, tgt: torch.Tensor, forced: bool,
               mean: bool = False) -> torch.Tensor:
    """One trial's loss: the cross-entropy (nats) over the target positions, and for a self-fed trial only up to
    the first end symbol the network emits (module docstring); summed, or with ``mean`` averaged over the
    positions counted (``train.loss``)."""
    logits = net(src, tgt, forced)  # (1, T, V)
    nll = F.cross_entropy(logits[0], tgt[0], reduction="none")  # (T,)
    if not forced:
        ended = (logits[0].argmax(dim=-1) == net.eos_id).nonzero()
        if len(ended):
            nll = nll[: int(ended[0, 0]) + 1]
    return nll.mean() if mean else nll.sum()


def line_order(n_lines: int, steps: int, how: str, g: torch.Generator) -> torch.Tensor:
    """``(steps, 1)`` training-line indices: drawn uniformly with replacement (``"replacement"``), or the
    concatenation of fresh permutations of the ``n_lines`` lines, cut at ``steps`` (``"epochs"``)."""
    if how == "epochs":
        passes = -(-steps // n_lines)
        return torch.cat([torch.randperm(n_lines, generator=g) for _ in range(passes)])[:steps].view(steps, 1)
    return torch.randint(n_lines, (steps, 1), generator=g)


def fit(net: RecurrentSeq2Seq, train: list[tuple[torch.Tensor, torch.Tensor]], trial: BindingTrial,
        device: str | torch.device = "cpu", progress: Callable[[int], None] | None = None) -> dict:
    """Train ``net`` in place with the trial's recipe (:class:`~.config.RNNTrainConfig`, module docstring); the
    summary of :func:`bindscale.kit.fit_minibatches` (status, loss curve in nats per sequence, steps per second)."""
    t, seed = trial.train, trial.seed
    device = torch.device(device)
    order = line_order(len(train), t.steps, t.order, generator(seed, "train"))
    if t.teacher_forcing is None:  # a decoder that reads no output: every position counts
        forced = [True] * t.steps
    else:
        forced = (torch.rand(t.steps, generator=generator(seed, "train", key=(1,))) < t.teacher_forcing).tolist()
    pairs = [(s.to(device), g.to(device)) for s, g in train]
    mean = t.loss == "mean"

    def batch_loss(step: int, rows: torch.Tensor) -> torch.Tensor:
        src, tgt = pairs[int(rows[0])]
        return trial_loss(net, src, tgt, forced[step], mean)

    net.to(device).train()
    # The dropout masks, from the generators the trial draws from only (the CPU one; on CUDA, also its device's),
    # seeded as torch.manual_seed seeds them: a CPU trial never touches the CUDA generators (torch.manual_seed
    # seeds every device, lazily where CUDA is not initialised yet, which fork_rng(devices=[]) does not undo).
    cuda = [device] if device.type == "cuda" else []
    with torch.random.fork_rng(devices=cuda):
        torch.default_generator.manual_seed(stream_seed(seed, "train", 2))
        for d in cuda:
            with torch.cuda.device(d):
                torch.cuda.manual_seed(stream_seed(seed, "train", 2))
        return fit_minibatches(list(net.parameters()), batch_loss, order, lr=t.lr, weight_decay=0.0,
                               warmup_steps=0, grad_clip=t.grad_clip, device=device,
                               on_step=(lambda step, loss: progress(1)) if progress else None,
                               betas=ADAM_BETAS, schedule="constant")


def run_alone(trial: BindingTrial, data: ScanData, device: str | torch.device = "cpu",
              progress: Callable[[int], None] | None = None, return_models: bool = False) -> TrialResult:
    """Train and score one recurrent trial: :func:`bindscale.kit.scan_result`'s record, plus ``acc_train`` /
    ``tok_acc_train`` (greedy exact match and token accuracy on the distinct training commands, the paper's
    training accuracy) and ``n_train_distinct``; a non-finite loss gives status ``diverged`` (never raises)."""
    t0 = time.perf_counter()
    model = build_model(trial, data)
    fitted = fit(model.net, examples(data, model.ids), trial, device, progress)
    model.to(device)
    result = scan_result(trial, Prepared(model, None, None, data), model, fitted, time.perf_counter() - t0, device,
                         return_models)
    if result.status == "ok":
        t1 = time.perf_counter()
        seen = sorted(set(data.train))
        exact, tok, _ = score_pairs(model, seen, data.vocab)
        result.metrics |= {"acc_train": float(exact.mean()), "tok_acc_train": tok, "n_train_distinct": len(seen)}
        result.metrics["timings"]["train_eval_s"] = time.perf_counter() - t1
    return result
