"""Know the limit: the sequence trainer's achieved FLOP/s against one core's measured matmul peak.

What it measures, in one process on one torch thread (``torch.set_num_threads(1)``):

1. **The peak.** Sustained GFLOP/s of square ``torch.matmul`` (2·n³ FLOPs a call) at n = 256, 512, 1024,
   2048, fp32, and bf16 where the CPU has bf16 matrix units (``amx_bf16`` or ``avx512_bf16`` in lscpu's
   flags); each size timed for a short window, sampled at the start, between shapes and at the end. Each
   sample gives GFLOP/s per wall second and per CPU second of this process (``time.process_time``); the
   peak is the best sample. The lscpu model and its AVX/AMX flags, and the load average (and ``uptime``)
   at the start, per window and at the end, go into the JSON.
2. **The trainer's FLOP/s** at one deciding shape of each transformer study's ``-full`` file (the largest
   deciding model, :data:`SHAPES`), trial seed 0 as the study prepares it (the study's own ``_prepare``:
   model, training set, batch size, schedule, clipping), counted from the model's shapes (below), for:

   - ``alone``: :func:`bindscale.train.loop.train_seq_model`, one trial (what a study runs per trial);
   - ``stackT``: :func:`bindscale.train.loop.train_stacked_seq_model` over ``T`` trials (the stacked path;
     its members are ``T`` copies of seed 0's model and training set, each with its own batch order, the
     ``"train"`` streams of seeds 0..T-1, so data is built once; shapes and per-step lengths are what a
     stack of seeds meets);
   - ``plain``: a minimal nanoGPT-style model written here (:class:`MiniGPT`: same matrices, LayerNorms,
     GELU, rotary or learned positions, untied head, PyTorch SDPA) trained by transformer_peer's plain
     loop (:class:`transformer_peer.PeerLoop`: fused AdamW with decay / no-decay groups, lr set per step,
     ``clip_grad_norm_``, loss never read on the host), on the trainer's own batches (seed 0's order, each
     batch trimmed to its longest sequence as the trainer trims it);
   - ``compiled``: that loop with model and loss under ``torch.compile`` (Inductor), the sequence length
     marked dynamic so one graph serves every length; compilation is timed apart (``compile_s``; warm when
     Inductor's on-disk cache holds the graph) and left out of the windows.

   Each side warms up (``--warmup`` seconds and at least one step), then a window of ``--seconds``
   wall seconds and at least ``--min-steps`` trial-steps (a stack step of T trials counts T) is timed;
   the FLOPs of exactly the steps in the window are summed (each step's own length). Sides alternate
   within a round, order rotated per round; the median over rounds is reported. **Fraction of peak =
   achieved GFLOP/s ÷ the best matmul sample**, per CPU second (the reading under load: both sides of
   the ratio are rates per second this process ran) and per wall second; every window's CPU-second
   fraction is ASSERTED ≤ 1 (:func:`fraction_of_peak`): a fraction above 1 means the FLOP count is
   wrong. The wall fraction is reported, not asserted: on a loaded machine a window and the peak sample
   can get different shares of a core.
3. **Where the time goes** (default on; ``--no-profile`` leaves it out): torch.profiler (CPU) over a few
   steps of the trainer alone, the stack and the plain loop at the shape whose trainer-alone fraction is
   lowest (or ``--profile-shape``), split into matrix multiplication, the attention kernel, softmax /
   LayerNorm / cross-entropy, GELU, other element-wise ops and copies, the optimizer (AdamW, zero_grad,
   gradient clipping), data and bookkeeping (batch gather and trim, lr, loss read) and Python / dispatch
   / autograd bookkeeping (wall time outside every aten operator's own time) (:func:`profile_side`).
   Profiler timestamps are wall time: on a loaded machine the time the process waited for a core lands
   in whichever operator (or the overhead row) was running, so the shares are the reading.

**The FLOP count** (:func:`step_flops`), per trial and training step (forward + backward) on ``B``
sequences of ``n`` positions (``n`` = the batch's longest sequence less its last token, padded positions
included: what the step computes), ``N = B·n`` rows, model of ``ℓ`` layers, width ``d``, MLP width
``d_ff``, vocabulary ``V``; a matrix product of ``(m × k)·(k × p)`` is ``2·m·k·p`` FLOPs:

- forward, per layer: ``qkv`` ``2·N·d·3d``, output projection ``2·N·d²``, MLP ``2·N·d·d_ff`` twice; the
  head ``2·N·d·V``; attention scores ``QKᵀ`` over ``B·H`` heads of ``(n × d_h)·(d_h × n)``: ``2·B·n²·d``,
  and ``P·V`` the same, so ``4·B·n²·d`` per layer;
- backward: each product ``Y = X·W`` needs ``dX = dY·Wᵀ`` and ``dW = Xᵀ·dY``, two products of the same
  size (every linear layer's input carries a gradient here, the first one's too, since the embedding is
  trained), and each attention product likewise two (``dQ, dK`` from ``dS``; ``dP, dV`` from ``dO``):
  twice the forward;
- total ``= 3 × forward = 6·N·W + 6·N·d·V + 12·ℓ·B·n²·d``, with ``W = ℓ·(4·d² + 2·d·d_ff)`` the
  block matrices (the non-embedding parameters less biases and LayerNorm gains; i.e. "6 × non-embedding
  params × tokens" counted on the matrices alone), ``6·N·d·V`` the unembedding (head), and
  ``12·ℓ·n²·d`` per sequence for attention (PaLM's appendix B convention: the full ``n × n`` score
  matrix, not the causal half).
- Not counted as FLOPs: the token embedding (a gather; its backward an index-add), biases, LayerNorm,
  softmax, GELU, rotary rotation, residual adds, the cross-entropy (all element-wise, O(N·d) or O(N·V)),
  gradient clipping (~2 per parameter) and AdamW (~12 element-wise FLOPs per parameter a step, reported
  as ``adamw_elementwise`` for scale). The CPU flash-attention kernel skips key blocks past the diagonal
  (32-query blocks below 192 positions) and recomputes ``QKᵀ`` in the backward, so its executed FLOPs
  differ from the convention; attention is ≤ 10% of the count at these shapes.
- The stack's step computes every trial at the stack's length (the longest sequence any trial drew):
  ``executed`` FLOPs use that, ``useful`` FLOPs each trial's own length (both in the JSON).
- Checked against ``torch.utils.flop_counter.FlopCounterMode`` on each shape's models (forward +
  backward, SDPA's math backend so attention runs as counted matrix products): ``count_check``, and
  ``tests/unit/test_flops_bench.py`` on a hand-worked tiny shape.

    python benchmarks/flops.py                     # full: 6 shapes, 2 rounds: ~140 CPU-s (7 min wall at load ~9)
    python benchmarks/flops.py --quick --json /tmp/flops.json
    python benchmarks/flops.py --shapes geometry,ceiling --rounds 3

A full run (not ``--quick``) writes ``benchmarks/results/flops_<cpu>_<date>.json`` (and ``--json OUT``).
"""

from __future__ import annotations

import argparse
import copy
import importlib
import json
import math
import os
import re
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

# Inductor compiles in worker processes by default; one in-process compile keeps to this process's one core.
os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")

import torch
import torch.nn.functional as F
from torch import nn

from bindscale.core import seeding
from bindscale.models.stacked_transformer import StackedTransformer
from bindscale.models.transformer import Rotary, Transformer
from bindscale.train.loop import batch_indices, sequence_lengths

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import StepWindow, WindowDone, load, lscpu, machine, print_table
from transformer_peer import (
    Case,
    MaskedLM,
    PeerLoop,
    bindscale_alone,
    bindscale_stack,
    cpu_with_children,
)

RESULTS = Path(__file__).resolve().parent / "results"

#: One deciding shape per transformer study, the largest deciding model of its ``-full`` file, seed 0
#: (the trial of ``<study>-full.yaml`` whose fields match; see each file's grid comments):
#: depth: the size sweep's 200k depth-2 cell (width 92) on the length split; binding_scan: its plain
#: 200k transformer on add-primitive jump; subgraphs: 4 x 160 (1.2M) on reversed multiplication (longer
#: sequences than maxsubseq); ceiling: 1.6M (2 x 256); length_transfer: the deciding pair caprev + cap+rev
#: at its largest width (2 x 64, rotary); geometry: 8 x 320 (10M).
SHAPES: dict[str, dict[str, object]] = {
    "depth": {"model.budget": 200000, "model.n_layers": 2, "task.split": "length"},
    "binding_scan": {"model.kind": "transformer", "model.budget": 200000},
    "subgraphs": {"task.family": "multiplication", "model.n_layers": 4, "model.d_model": 160},
    "ceiling": {"model.budget": 1600000},
    "length_transfer": {"task.main": "caprev", "task.aux": "cap+rev", "model.d_model": 64, "model.pos": "rope"},
    "geometry": {"model.n_layers": 8, "model.d_model": 320},
}

#: Square matmul sizes of the peak.
PEAK_SIZES = (256, 512, 1024, 2048)
#: Steps of every side's batch schedule (more than any window reaches).
SCHEDULE = 3000
#: AdamW's element-wise FLOPs per parameter and step (not counted; reported for scale): decay 2, two
#: moments 6, bias corrections and square root 3, update 2.
ADAMW_FLOPS_PER_PARAM = 12


# --------------------------------------------------------------------------------------------------
# Counting
# --------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Shape:
    """A transformer's shape: what the FLOP count reads."""

    n_layers: int
    d_model: int
    n_heads: int
    d_ff: int
    vocab: int

    @classmethod
    def of(cls, model) -> Shape:
        """Of a :class:`Transformer`, :class:`StackedTransformer` (one trial) or :class:`MiniGPT`."""
        return cls(model.n_layers, model.d_model, model.n_heads, model.d_ff, model.vocab_size)

    @property
    def block_matrices(self) -> int:
        """Weights of the blocks' matrices: ``ℓ·(3d² + d² + 2·d·d_ff)``."""
        d = self.d_model
        return self.n_layers * (4 * d * d + 2 * d * self.d_ff)


def step_flops(shape: Shape, batch: int, n: int) -> dict[str, int]:
    """Model FLOPs of one training step (forward + backward) of one trial on ``batch`` sequences of ``n``
    positions (the module docstring derives it): ``dense`` ``6·N·W``, ``head`` ``6·N·d·V``, ``attention``
    ``12·ℓ·B·n²·d``, ``total``; ``N = batch·n``. The forward alone is a third of each."""
    N = batch * n
    dense = 6 * N * shape.block_matrices
    head = 6 * N * shape.d_model * shape.vocab
    attention = 12 * shape.n_layers * batch * n * n * shape.d_model
    return {"dense": dense, "head": head, "attention": attention, "total": dense + head + attention}


class FractionAboveOne(AssertionError):
    """A measured rate above the measured peak: the FLOP count (or the peak) is wrong."""


def fraction_of_peak(gflops: float, peak_gflops: float, what: str = "") -> float:
    """``gflops / peak_gflops``.

    Raises:
        FractionAboveOne: the fraction exceeds 1 (beyond float rounding).
        ValueError: a non-positive peak.
    """
    if not peak_gflops > 0:
        raise ValueError(f"peak must be positive, got {peak_gflops}")
    f = gflops / peak_gflops
    if f > 1 + 1e-9:
        raise FractionAboveOne(f"{what or 'a side'} reached {gflops:.1f} GFLOP/s, {f:.3f} of the measured peak "
                               f"{peak_gflops:.1f}: the FLOP count (or the peak) is wrong")
    return f


def counted_flops(model: nn.Module, tokens: torch.Tensor) -> int:
    """FLOPs ``torch.utils.flop_counter.FlopCounterMode`` counts for one forward and backward of ``model`` on
    ``tokens`` (``model(tokens)`` summed), with SDPA's math backend (on the CPU the flash kernel is not in
    the counter's registry; the math backend runs attention as counted matrix products)."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.utils.flop_counter import FlopCounterMode

    with FlopCounterMode(display=False) as fc, sdpa_kernel(SDPBackend.MATH):
        model(tokens).float().sum().backward()
    model.zero_grad(set_to_none=True)
    return fc.get_total_flops()


def count_check(model: Transformer, mini: MiniGPT, batch: int = 4, n: int = 24, T: int = 2) -> dict:
    """:func:`step_flops` against :func:`counted_flops` for the trainer's model, a stack of ``T`` of it and
    the minimal model, at ``batch`` sequences of ``n`` positions; ``ok`` when all three agree exactly."""
    n = min(n, model.max_len)
    x = torch.randint(1, model.vocab_size, (batch, n), generator=torch.Generator().manual_seed(0))
    want = step_flops(Shape.of(model), batch, n)["total"]
    got = {"model": counted_flops(copy.deepcopy(model), x),
           "stack_per_trial": counted_flops(StackedTransformer.from_members([model] * T), x.expand(T, -1, -1)) / T,
           "minimal": counted_flops(copy.deepcopy(mini), x)}
    return {"batch": batch, "n": n, "formula": want, "counted": got, "ok": all(v == want for v in got.values())}


# --------------------------------------------------------------------------------------------------
# The minimal model (nanoGPT's model.py, at the trainer's shapes)
# --------------------------------------------------------------------------------------------------

class MiniBlock(nn.Module):
    def __init__(self, d: int, n_heads: int, d_ff: int):
        super().__init__()
        self.n_heads = n_heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc, self.fc2 = nn.Linear(d, d_ff), nn.Linear(d_ff, d)

    def forward(self, x: torch.Tensor, cos, sin) -> torch.Tensor:
        B, n, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(B, n, 3, self.n_heads, d // self.n_heads).permute(2, 0, 3, 1, 4)
        if cos is not None:
            q, k = Rotary.rotate(q, cos, sin), Rotary.rotate(k, cos, sin)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(B, n, d))
        return x + self.fc2(F.gelu(self.fc(self.ln2(x))))


class MiniGPT(nn.Module):
    """A minimal decoder (nanoGPT's ``model.py`` without dropout): embedding, ``n_layers`` pre-LN blocks,
    final LayerNorm, untied head; rotary (the trainer's formula), learned or no positions. The same
    matrices as :class:`Transformer` of ``shape`` (so the same FLOP count), none of its hooks or checks."""

    def __init__(self, shape: Shape, max_len: int, pos: str = "rope", seed: int = 0):
        super().__init__()
        torch.manual_seed(seed)
        d = shape.d_model
        self.n_layers, self.d_model, self.n_heads, self.d_ff, self.vocab_size = (
            shape.n_layers, d, shape.n_heads, shape.d_ff, shape.vocab)
        self.max_len = max_len
        self.wte = nn.Embedding(shape.vocab, d)
        self.wpe = nn.Embedding(max_len, d) if pos == "learned" else None
        self.rope = Rotary(d // shape.n_heads, max_len) if pos == "rope" else None
        self.blocks = nn.ModuleList(MiniBlock(d, shape.n_heads, shape.d_ff) for _ in range(shape.n_layers))
        self.ln_f = nn.LayerNorm(d)
        self.head = nn.Linear(d, shape.vocab, bias=False)
        resid = 0.02 / math.sqrt(2 * shape.n_layers)  # GPT-2's scaled init of the residual writes
        for name, p in self.named_parameters():
            if p.dim() >= 2:
                nn.init.normal_(p, 0.0, resid if name.endswith(("proj.weight", "fc2.weight")) else 0.02)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        n = idx.shape[1]
        x = self.wte(idx)
        if self.wpe is not None:
            x = x + self.wpe.weight[:n]
        cos = sin = None
        if self.rope is not None:
            cos, sin = self.rope.cos[:n], self.rope.sin[:n]
        for block in self.blocks:
            x = block(x, cos, sin)
        return self.head(self.ln_f(x))


class PlainLoop(PeerLoop):
    """transformer_peer's plain loop on :class:`MiniGPT`; compiled: the length dimension is marked dynamic on
    the first call, so one graph serves every length (one compilation, not two)."""

    def _compile(self) -> float:
        t0 = time.perf_counter()
        compiled = self.fn

        def first(x, y):
            torch._dynamo.mark_dynamic(x, 1)
            torch._dynamo.mark_dynamic(y, 1)
            return compiled(x, y)

        self.fn = first
        self.step()
        self.fn = compiled
        other = next((k for k, L in enumerate(self.lengths) if L != self.lengths[0]), None)
        if other is not None:  # a second length: no recompilation expected, its time counts anyway
            self.i = other
            self.step()
        self.step()
        self.i = 0
        return time.perf_counter() - t0


# --------------------------------------------------------------------------------------------------
# The shapes
# --------------------------------------------------------------------------------------------------

def _get(d: dict, path: str):
    for k in path.split("."):
        d = d[k]
    return d


def pick_trial(study: str, select: dict[str, object]):
    """The one seed-0 trial of ``<study>-full`` whose fields match ``select`` (dotted paths).

    Raises:
        LookupError: none or several match.
    """
    from bindscale.core.studyfile import resolve_study

    trials = [t for t in resolve_study(f"{study}-full").trials()
              if t.seed == 0 and all(_get(t.model_dump(mode="json"), k) == v for k, v in select.items())]
    if len(trials) != 1:
        raise LookupError(f"{study}-full: {len(trials)} seed-0 trials match {select}")
    return trials[0]


@dataclass
class Bench:
    """One shape: the peer-benchmark :class:`Case` (``T`` copies of the prepared trial), its shape, and every
    side's positions per step (``alone``: seed 0's schedule, also the plain loops'; ``stack``: per step the
    longest over the ``T`` trials' batches, and ``stack_own``: each trial's own, ``(T, steps)``)."""

    study: str
    trial_id: str
    case: Case
    shape: Shape
    pos: str
    max_len: int
    batch: int
    n_params: int
    n_alone: list[int]
    n_stack: list[int]
    n_stack_own: list[list[int]]
    build_s: float
    useful_alone: float = 1.0
    useful_stack: float = 1.0


def build(study: str, T: int) -> Bench:
    """Prepare :data:`SHAPES`' trial of ``study`` with the study's own ``_prepare`` and its schedules."""
    t0 = time.perf_counter()
    trial = pick_trial(study, SHAPES[study])
    prepared = importlib.import_module(f"bindscale.studies.{study}.trial")._prepare(trial)
    model, tokens, mask = prepared.model, prepared.tokens, prepared.loss_mask
    tr = trial.train
    case = Case(study, tr, [(tokens, mask)] * T, lambda t: copy.deepcopy(model))
    trimmed = sequence_lengths(tokens, mask)

    # positions each sequence needs (its trimmed length less the last token) in every step of each seed's order
    need = torch.stack([trimmed[batch_indices(tokens.shape[0], SCHEDULE, tr.batch_size,
                                              seeding.generator(t, "train"))] - 1 for t in range(T)])  # (T, S, B)
    per = need.amax(dim=2)  # (T, S): positions computed per step, the batch's longest
    stack_n = per.amax(dim=0)  # (S,): the stack's, the longest over its trials
    useful_alone = float(need[0].sum() / (per[0].sum() * tr.batch_size))
    useful_stack = float(need.sum() / (stack_n.sum() * tr.batch_size * T))
    return Bench(study, trial.trial_id, case, Shape.of(model), model.pos, model.max_len, tr.batch_size,
                 model.n_params(), per[0].tolist(), stack_n.tolist(), per.tolist(),
                 time.perf_counter() - t0, useful_alone, useful_stack)


# --------------------------------------------------------------------------------------------------
# Timing
# --------------------------------------------------------------------------------------------------

class FlopWindow(StepWindow):
    """:class:`common.StepWindow` that also sums the FLOPs of the steps in its window, which holds at least
    ``min_steps`` steps (after at least ``min_warmup`` warm-up steps). Call ``n`` (1-based) is schedule step
    ``(offset + n - 1) % len(flops)``; ``flops[k]`` is step ``k``'s FLOPs (every trial of the step)."""

    def __init__(self, seconds: float, warmup_s: float, flops: list[int], min_steps: int = 2, offset: int = 0,
                 min_warmup: int = 1):
        super().__init__(seconds, warmup_s, min_warmup=min_warmup)
        self.flop_list, self.min_steps, self.offset = flops, min_steps, offset
        self.flops = 0

    def __call__(self, *_args) -> None:
        now = time.perf_counter()
        self.n += 1
        if self.first is None:
            self.first = now
        if self.t0 is None:
            if self.n >= self.min_warmup and now - self.first >= self.warmup_s:
                self.t0, self.c0, self.n0 = now, time.process_time(), self.n
            return
        if now - self.t0 >= self.seconds and self.n - self.n0 >= self.min_steps:
            self.steps, self.wall, self.cpu = self.n - self.n0, now - self.t0, time.process_time() - self.c0
            L = len(self.flop_list)
            self.flops = sum(self.flop_list[(self.offset + k) % L] for k in range(self.n0, self.n))
            self.done = True
            raise WindowDone


def timed(run: Callable[[StepWindow, int], None], window: FlopWindow) -> dict:
    """One window of ``run``; its rates (GFLOP/s per wall and per CPU second, steps/s, CPU share, load)."""
    before = load()
    run(window, SCHEDULE)
    if not window.done:
        raise RuntimeError(f"no window filled within {SCHEDULE} steps")
    return {"steps": window.steps, "wall_s": round(window.wall, 3), "cpu_s": round(window.cpu, 3),
            "gflop": window.flops / 1e9, "gflops_wall": window.flops / window.wall / 1e9,
            "gflops_cpu": window.flops / window.cpu / 1e9, "steps_per_s": window.steps / window.wall,
            "cpu_share": round(window.cpu / window.wall, 3), "load": [before, load()]}


def matmul_sample(n: int, dtype: torch.dtype, seconds: float) -> dict:
    """GFLOP/s of ``a @ b`` (n × n) over at least ``seconds`` and 3 calls, per wall and per CPU second."""
    a, b = torch.randn(n, n).to(dtype), torch.randn(n, n).to(dtype)
    for _ in range(2):
        a @ b
    calls, t0, c0 = 0, time.perf_counter(), time.process_time()
    while time.perf_counter() - t0 < seconds or calls < 3:
        a @ b
        calls += 1
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    f = 2 * n ** 3 * calls
    return {"n": n, "dtype": str(dtype).removeprefix("torch."), "gflops_wall": f / wall / 1e9,
            "gflops_cpu": f / cpu / 1e9, "cpu_share": round(cpu / wall, 3), "load": load()}


class Peak:
    """Matmul samples taken through the run; the peak is the best sample (per wall and per CPU second)."""

    def __init__(self, seconds: float, bf16: bool):
        self.seconds, self.dtypes = seconds, [torch.float32] + ([torch.bfloat16] if bf16 else [])
        self.samples: list[dict] = []

    def sample(self, when: str, fp32_only: bool = False) -> None:
        """One sample of every size (fp32, and bf16 unless ``fp32_only``)."""
        for dtype in self.dtypes[:1] if fp32_only else self.dtypes:
            for n in PEAK_SIZES:
                self.samples.append(matmul_sample(n, dtype, self.seconds) | {"when": when})

    def best(self, dtype: str = "float32", per: str = "cpu") -> float:
        return max(s[f"gflops_{per}"] for s in self.samples if s["dtype"] == dtype)

    def summary(self) -> dict:
        out = {}
        for dtype in {s["dtype"] for s in self.samples}:
            xs = [s for s in self.samples if s["dtype"] == dtype]
            out[dtype] = {"best_gflops_cpu": self.best(dtype, "cpu"), "best_gflops_wall": self.best(dtype, "wall"),
                          "best_size_cpu": max(xs, key=lambda s: s["gflops_cpu"])["n"],
                          "by_size_best_cpu": {n: max(s["gflops_cpu"] for s in xs if s["n"] == n) for n in PEAK_SIZES},
                          "by_size_median_cpu": {n: statistics.median(s["gflops_cpu"] for s in xs if s["n"] == n)
                                                 for n in PEAK_SIZES},
                          "samples": len(xs)}
        return out


# --------------------------------------------------------------------------------------------------
# One shape, every side
# --------------------------------------------------------------------------------------------------

def sides(b: Bench, T: int, compile_: bool) -> dict[str, dict]:
    """Side → ``{run, flops (per schedule step, all trials), parts (the same split as :func:`step_flops`),
    trials, loop (the plain loops, whose step count runs on), facts}``; builds the loops."""
    parts = [step_flops(b.shape, b.batch, n) for n in b.n_alone]
    stack_parts = [{k: T * v for k, v in step_flops(b.shape, b.batch, n).items()} for n in b.n_stack]
    per_step, stack_step = [p["total"] for p in parts], [p["total"] for p in stack_parts]
    mini_case = Case(b.study, b.case.train, b.case.data[:1], lambda t: MiniGPT(b.shape, b.max_len, b.pos))
    out = {"alone": {"run": lambda w, n: bindscale_alone(b.case, w, n), "flops": per_step, "parts": parts,
                     "trials": 1},
           f"stack{T}": {"run": lambda w, n: bindscale_stack(b.case, T, w, n), "flops": stack_step,
                         "parts": stack_parts, "trials": T}}
    plain = PlainLoop(mini_case, compiled=False, schedule=SCHEDULE)
    assert plain.lengths == b.n_alone, "the plain loop's batches are not the trainer's"
    out["plain"] = {"run": lambda w, n: plain.measure(w), "flops": per_step, "parts": parts, "trials": 1,
                    "loop": plain, "facts": {"fused_adamw": plain.fused}}
    if compile_:
        c0 = cpu_with_children()
        comp = PlainLoop(mini_case, compiled=True, schedule=SCHEDULE)
        out["compiled"] = {"run": lambda w, n: comp.measure(w), "flops": per_step, "trials": 1, "loop": comp,
                           "facts": {"compile_s": round(comp.compile_s, 2),
                                     "compile_cpu_s": round(cpu_with_children() - c0, 2)}}
    return out


def run_shape(b: Bench, T: int, rounds: int, seconds: float, warmup: float, min_steps: int, peak: Peak,
              compile_: bool) -> dict:
    """Every side of one shape, ``rounds`` alternating rounds; per side the runs and their medians and fractions."""
    ss = sides(b, T, compile_)
    names = list(ss)
    runs: dict[str, list[dict]] = {k: [] for k in names}
    for r in range(rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:
            s = ss[name]
            offset = s["loop"].i if "loop" in s else 0
            # min_steps counts trial-steps: a stack step of T trials counts T
            res = timed(s["run"], FlopWindow(seconds, warmup, s["flops"], max(1, -(-min_steps // s["trials"])), offset))
            res["per_trial_steps_per_s"] = s["trials"] * res["steps_per_s"]
            res["fraction_cpu"] = fraction_of_peak(res["gflops_cpu"], peak.best("float32", "cpu"), f"{b.study} {name}")
            res["fraction_wall"] = res["gflops_wall"] / peak.best("float32", "wall")
            runs[name].append(res)
            print(f"  {b.study:15s} round {r} {name:8s} {res['gflops_cpu']:6.1f} GFLOP/cpu-s "
                  f"({res['fraction_cpu']:.3f} of peak) {res['gflops_wall']:6.1f} GFLOP/wall-s  "
                  f"{res['per_trial_steps_per_s']:7.2f} trial-steps/s  {res['steps']:3d} steps  "
                  f"cpu share {res['cpu_share']:.2f}  load {res['load'][0][0]}", flush=True)
    summary = {}
    for name, xs in runs.items():
        med = {k: statistics.median(x[k] for x in xs) for k in
               ("gflops_cpu", "gflops_wall", "per_trial_steps_per_s", "cpu_share", "fraction_cpu", "fraction_wall")}
        summary[name] = med | {"fraction_cpu_range": [min(x["fraction_cpu"] for x in xs),
                                                      max(x["fraction_cpu"] for x in xs)],
                               "ms_per_step_cpu": 1e3 * statistics.median(x["cpu_s"] / x["steps"] for x in xs)}
    for s in summary.values():
        s["vs_alone_cpu"] = s["gflops_cpu"] / summary["alone"]["gflops_cpu"]
    n_mean = statistics.fmean(b.n_alone)
    f_mean = {k: statistics.fmean(step_flops(b.shape, b.batch, n)[k] for n in b.n_alone)
              for k in ("dense", "head", "attention", "total")}
    own_mean = statistics.fmean(n for row in b.n_stack_own for n in row)
    return {"trial_id": b.trial_id, "select": SHAPES[b.study], "shape": asdict(b.shape), "pos": b.pos,
            "batch": b.batch, "n_params": b.n_params, "block_matrices": b.shape.block_matrices,
            "mean_positions_alone": n_mean, "mean_positions_stack": statistics.fmean(b.n_stack),
            "stack_useful_over_executed": statistics.fmean(
                step_flops(b.shape, b.batch, n)["total"] for row in b.n_stack_own for n in row)
            / statistics.fmean(step_flops(b.shape, b.batch, n)["total"] for n in b.n_stack),
            "mean_positions_stack_own": own_mean,
            "useful_position_share_alone": b.useful_alone, "useful_position_share_stack": b.useful_stack,
            "gflop_per_step_mean": {k: v / 1e9 for k, v in f_mean.items()},
            "attention_share_of_count": f_mean["attention"] / f_mean["total"],
            "adamw_elementwise_gflop_per_step": ADAMW_FLOPS_PER_PARAM * b.n_params / 1e9,
            "build_s": round(b.build_s, 2), "facts": {k: s["facts"] for k, s in ss.items() if "facts" in s},
            "runs": runs, "summary": summary}, ss


# --------------------------------------------------------------------------------------------------
# Where the time goes
# --------------------------------------------------------------------------------------------------

MATMUL = {"aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm"}
ATTENTION = {"aten::_scaled_dot_product_flash_attention_for_cpu",
             "aten::_scaled_dot_product_flash_attention_for_cpu_backward"}
NORM_SOFTMAX = {"aten::native_layer_norm", "aten::native_layer_norm_backward", "aten::_log_softmax",
                "aten::_log_softmax_backward_data", "aten::nll_loss_forward", "aten::nll_loss_backward",
                "aten::_softmax", "aten::_softmax_backward_data"}
GELU = {"aten::gelu", "aten::gelu_backward"}
#: Categories of :func:`profile_side`, in table order.
CATEGORIES = ("matmul", "attention kernel", "softmax / LayerNorm / cross-entropy", "GELU",
              "other element-wise & copies", "optimizer (AdamW, zero_grad, clipping)",
              "data & bookkeeping (batch gather/trim, lr, loss read)", "Python, dispatch & autograd overhead")
FORWARD, LOSS, CLIP, OPT = "flops::forward", "flops::loss", "flops::clip", "flops::optimizer"


class _Labels:
    """While active: record_function ranges around every top-level model's forward (:data:`FORWARD`), the loss
    (:data:`LOSS`: ``seq_loss``, ``stacked_seq_loss``, the plain loop's loss module), gradient clipping
    (:data:`CLIP`) and the stacked AdamW (:data:`OPT`; torch's AdamW labels itself ``Optimizer.*``). Global
    module hooks and wrappers put in place by the benchmark and removed after; the trainer's code is
    unchanged (its ``batch_loss`` looks ``seq_loss`` up at call time, as its loops do the clipping)."""

    MODELS = (Transformer, StackedTransformer, MiniGPT)

    def __enter__(self):
        from torch.autograd.profiler import record_function

        from bindscale.train import loop
        from bindscale.train.stacked_adamw import StackedAdamW

        self.open: list = []

        def pre(mod, _args):
            if isinstance(mod, (*self.MODELS, MaskedLM)):
                rf = record_function(LOSS if isinstance(mod, MaskedLM) else FORWARD)
                rf.__enter__()
                self.open.append((mod, rf))

        def post(mod, _args, _out):
            if self.open and self.open[-1][0] is mod:
                self.open.pop()[1].__exit__(None, None, None)

        def wrap(fn, name):
            def inner(*a, **k):
                with record_function(name):
                    return fn(*a, **k)
            return inner

        self.saved = [(loop, "seq_loss", loop.seq_loss), (loop, "stacked_seq_loss", loop.stacked_seq_loss),
                      (loop, "clip_per_trial_", loop.clip_per_trial_),
                      (torch.nn.utils, "clip_grad_norm_", torch.nn.utils.clip_grad_norm_),
                      (StackedAdamW, "step", StackedAdamW.step), (StackedAdamW, "zero_grad", StackedAdamW.zero_grad)]
        for obj, attr, fn in self.saved:
            setattr(obj, attr, wrap(fn, {"seq_loss": LOSS, "stacked_seq_loss": LOSS, "clip_per_trial_": CLIP,
                                         "clip_grad_norm_": CLIP}.get(attr, OPT)))
        self.hooks = [nn.modules.module.register_module_forward_pre_hook(pre),
                      nn.modules.module.register_module_forward_hook(post)]
        return self

    def __exit__(self, *exc):
        for h in self.hooks:
            h.remove()
        for obj, attr, fn in self.saved:
            setattr(obj, attr, fn)


def categorise(events, wall_us: float, by_op: dict | None = None) -> dict[str, float]:
    """Microseconds per :data:`CATEGORIES` entry from profiler events (aten operators' own time, classified by
    name and by the labelled range they ran in; the rest of ``wall_us`` is Python / dispatch / autograd).
    ``by_op``, when given, collects ``(op name, category) -> microseconds``."""
    out = dict.fromkeys(CATEGORIES, 0.0)
    op_us = 0.0
    for e in events:
        if not e.name.startswith("aten::"):
            continue
        us = e.self_cpu_time_total
        op_us += us
        ranges, p = set(), e.cpu_parent
        while p is not None:
            ranges.add(p.name.split("#")[0] if p.name.startswith("Optimizer.") else
                       ("autograd" if p.name.startswith("autograd::engine") else p.name))
            p = p.cpu_parent
        if ranges & {CLIP, OPT, "Optimizer.step", "Optimizer.zero_grad"}:
            cat = CATEGORIES[5]
        elif ranges & {FORWARD, LOSS, "autograd"}:
            cat = ("matmul" if e.name in MATMUL else "attention kernel" if e.name in ATTENTION else
                   CATEGORIES[2] if e.name in NORM_SOFTMAX else "GELU" if e.name in GELU else CATEGORIES[4])
        else:
            cat = CATEGORIES[6]
        out[cat] += us
        if by_op is not None:
            by_op[e.name, cat] = by_op.get((e.name, cat), 0.0) + us
    out[CATEGORIES[7]] = max(0.0, wall_us - op_us)
    return out


def profile_side(run: Callable[[StepWindow, int], None], steps: int, trials: int = 1, warmup: int = 3,
                 parts: list[dict] | None = None, offset: int = 0, peak: float | None = None) -> dict:
    """torch.profiler (CPU) over ``steps`` steps of ``run`` after ``warmup`` steps: ms per step and share of the
    profiled wall time per :data:`CATEGORIES` entry, per trial where ``trials`` > 1 (shares are the same).

    With ``parts`` (per schedule step, :func:`step_flops`' split over every trial; call ``n`` is schedule step
    ``offset + n - 1``) and the fp32 ``peak``: ``kernel_rates_est``, the GFLOP/s of the matmul operators
    (dense + head FLOPs over their time) and of the attention kernel, each time taken as its wall time times
    the process's CPU share while profiled (an estimate: it assumes the waits for a core fall evenly)."""
    prof = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU])
    state = {"k": 0}

    class Hook(StepWindow):
        def __call__(self, *_a):
            state["k"] += 1
            if state["k"] == warmup:
                prof.start()
                state["t0"], state["c0"] = time.perf_counter(), time.process_time()
            elif state["k"] == warmup + steps:
                state["wall"] = time.perf_counter() - state["t0"]
                state["cpu"] = time.process_time() - state["c0"]
                prof.stop()
                raise WindowDone

    with _Labels():
        run(Hook(0, 0), SCHEDULE)
    wall_us = 1e6 * state["wall"]
    by_op: dict = {}
    cats = categorise(prof.events(), wall_us, by_op)
    n_ops = sum(1 for e in prof.events() if e.name.startswith("aten::"))
    top = sorted(by_op.items(), key=lambda kv: -kv[1])[:12]
    share = state["cpu"] / state["wall"]
    rates = None
    if parts is not None:
        done = [parts[(offset + k) % len(parts)] for k in range(warmup, warmup + steps)]
        mm = sum(p["dense"] + p["head"] for p in done) / (1e-6 * cats["matmul"] * share) / 1e9
        att = sum(p["attention"] for p in done) / (1e-6 * cats["attention kernel"] * share) / 1e9
        rates = {"matmul_gflops": mm, "attention_gflops": att, "step_gflops": sum(p["total"] for p in done)
                 / state["cpu"] / 1e9} | ({"matmul_fraction": mm / peak, "attention_fraction": att / peak,
                                           "step_fraction": sum(p["total"] for p in done) / state["cpu"] / 1e9 / peak}
                                          if peak else {})
    return {"steps": steps, "trials": trials, "wall_ms_per_trial_step": wall_us / 1e3 / steps / trials,
            "cpu_share": share, "kernel_rates_est": rates,
            "top_ops_ms_per_trial_step": [[name, cat, us / 1e3 / steps / trials] for (name, cat), us in top],
            "aten_ops_per_trial_step": n_ops / steps / trials,
            "ms_per_trial_step": {k: v / 1e3 / steps / trials for k, v in cats.items()},
            "share": {k: v / wall_us for k, v in cats.items()}}


# --------------------------------------------------------------------------------------------------

def uptime() -> str:
    try:
        return subprocess.run(["uptime"], check=False, capture_output=True, text=True, timeout=5).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return " ".join(map(str, load()))


def cpu_slug(info: dict) -> str:
    return re.sub(r"[^a-z0-9]+", "-", re.sub(r"\((r|tm)\)", "", info.get("Model name", "cpu").lower())).strip("-")


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shapes", default=",".join(SHAPES), help="studies, comma-separated (default: all six)")
    ap.add_argument("--stack", type=int, default=None, help="trials in the stack (default 4; --quick 2)")
    ap.add_argument("--rounds", type=int, default=None, help="alternating rounds (default 2; --quick 1)")
    ap.add_argument("--seconds", type=float, default=None, help="timed window (default 1.5; --quick 0.6)")
    ap.add_argument("--warmup", type=float, default=None, help="untimed seconds first (default 0.5; --quick 0.2)")
    ap.add_argument("--min-steps", type=int, default=None, help="least trial-steps in a window (a stack step "
                    "of T trials counts T; default 2; --quick 1); warm-up is at least one step")
    ap.add_argument("--peak-seconds", type=float, default=None, help="per matmul size (default 0.4; --quick 0.2)")
    ap.add_argument("--no-compile", action="store_true", help="leave out the torch.compile side")
    ap.add_argument("--no-profile", action="store_true", help="leave out the torch.profiler reading")
    ap.add_argument("--profile-shape", help="profile this study's shape (default: the lowest trainer fraction)")
    ap.add_argument("--profile-steps", type=int, default=None, help="profiled steps per side (default: ~1 s of steps)")
    ap.add_argument("--quick", action="store_true", help="short windows, one round, stack of 2: ~1 CPU-minute "
                    "with a warm Inductor cache (< 3 min wall unless the core is shared more than 3 ways); a cold "
                    "cache adds ~30 CPU-s of compilation per shape")
    ap.add_argument("--json", help="also write the results here")
    args = ap.parse_args(argv)
    q = args.quick
    T = args.stack or (2 if q else 4)
    rounds = args.rounds or (1 if q else 2)
    seconds = args.seconds or (0.6 if q else 1.5)
    warmup = args.warmup if args.warmup is not None else (0.2 if q else 0.5)
    min_steps = args.min_steps or (1 if q else 2)
    studies, t_start, c_start, cpu, result = begin_result(ap, args.shapes, quick=q, stack=T, rounds=rounds,
                                                          seconds=seconds, warmup_s=warmup, min_steps=min_steps)
    bf16 = any(f in cpu.get("Flags", "").split() for f in ("amx_bf16", "avx512_bf16"))
    print(f"CPU {cpu.get('Model name', '?')} ({cpu.get('CPU(s)', '?')} CPUs); flags {cpu.get('Flags', '')}")
    print(f"torch {torch.__version__}, 1 thread; {result['uptime_start']}", flush=True)
    peak = Peak(args.peak_seconds or (0.2 if q else 0.4), bf16)
    peak.sample("start")
    print("peak GFLOP/cpu-s:", {k: round(v["best_gflops_cpu"], 1) for k, v in peak.summary().items()}, flush=True)
    kept: dict[str, tuple[Bench, dict]] = {}
    for study in studies:
        b = build(study, T)
        print(f"{study}: {b.trial_id} {asdict(b.shape)} batch {b.batch}, "
              f"mean positions {statistics.fmean(b.n_alone):.1f}"
              f" (built in {b.build_s:.1f} s)", flush=True)
        mini = MiniGPT(b.shape, b.max_len, b.pos)
        check = count_check(b.case.model(0), mini, n=min(24, b.max_len))
        if not check["ok"]:
            raise AssertionError(f"{study}: FLOP formula {check['formula']} != FlopCounterMode {check['counted']}")
        res, ss = run_shape(b, T, rounds, seconds, warmup, min_steps, peak, not args.no_compile)
        res["count_check"] = check
        result["shapes"][study] = res
        kept[study] = (b, ss)
        peak.sample(f"after {study}", fp32_only=study != studies[-1])
    # fractions against the final peak (the best sample of the whole run); each window's asserted again
    best_cpu, best_wall = peak.best("float32", "cpu"), peak.best("float32", "wall")
    for study, res in result["shapes"].items():
        for name, xs in res["runs"].items():
            for x in xs:
                x["fraction_cpu"] = fraction_of_peak(x["gflops_cpu"], best_cpu, f"{study} {name}")
                x["fraction_wall"] = x["gflops_wall"] / best_wall
            s = res["summary"][name]
            s["fraction_cpu"] = statistics.median(x["fraction_cpu"] for x in xs)
            s["fraction_cpu_range"] = [min(x["fraction_cpu"] for x in xs), max(x["fraction_cpu"] for x in xs)]
            s["fraction_wall"] = statistics.median(x["fraction_wall"] for x in xs)
    result["peak"] = peak.summary()
    result["peak_samples"] = peak.samples
    if not args.no_profile and result["shapes"]:
        target = args.profile_shape or min(
            result["shapes"], key=lambda s: result["shapes"][s]["summary"]["alone"]["fraction_cpu"])
        b, ss = kept.get(target) or (build(target, T), None)
        ss = ss or sides(b, T, False)
        prof = {"shape": target, "why": "lowest trainer-alone fraction of peak" if not args.profile_shape else "asked",
                "sides": {}}
        for name in ("alone", f"stack{T}", "plain"):
            ms = result["shapes"].get(target, {}).get("summary", {}).get(name, {}).get("ms_per_step_cpu", 100.0)
            steps = args.profile_steps or max(3, min(40, round(1000 / max(ms, 1.0))))
            s = ss[name]
            prof["sides"][name] = profile_side(s["run"], steps, s["trials"], parts=s["parts"],
                                               offset=s["loop"].i if "loop" in s else 0, peak=best_cpu)
            print(f"  profiled {target} {name}: {steps} steps", flush=True)
        result["profile"] = prof
    return finish_result(result, t_start, c_start, report, args.json, "flops" if not q else None, cpu)


def begin_result(ap: argparse.ArgumentParser, shapes: str, **settings) -> tuple[list[str], float, float, dict, dict]:
    """Start a benchmark over the ``shapes`` named (comma-separated :data:`SHAPES` keys; ``ap.error`` on an
    unknown one) on one torch thread: (the shapes, wall and CPU clocks at the start, lscpu's facts, the result
    dict with the machine, torch, date, uptime, load, ``settings`` and an empty ``shapes``)."""
    studies = [s for s in shapes.split(",") if s]
    unknown = set(studies) - set(SHAPES)
    if unknown:
        ap.error(f"unknown shapes {sorted(unknown)}; known: {', '.join(SHAPES)}")
    torch.set_num_threads(1)
    t_start, c_start = time.perf_counter(), time.process_time()
    cpu = lscpu()
    result = {"machine": machine() | {"lscpu": cpu}, "torch": torch.__version__, "threads": torch.get_num_threads(),
              "date_utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime()), "uptime_start": uptime(),
              "load_start": load(), **settings, "shapes": {}}
    return studies, t_start, c_start, cpu, result


def finish_result(result: dict, t_start: float, c_start: float, report: Callable[[dict], None], json_path: str | None,
                  results_prefix: str | None, cpu: dict) -> dict:
    """Close a benchmark's result (load and uptime at the end, wall and CPU seconds since ``t_start`` /
    ``c_start``), print its tables with ``report`` and write it as JSON to ``json_path`` and, with
    ``results_prefix``, to ``benchmarks/results/<prefix>_<cpu>_<date>.json``. Returns ``result``."""
    result["load_end"], result["uptime_end"] = load(), uptime()
    result["total_wall_s"] = round(time.perf_counter() - t_start, 1)
    result["total_cpu_s"] = round(time.process_time() - c_start, 1)
    report(result)
    paths = [Path(json_path)] if json_path else []
    if results_prefix:
        paths.append(RESULTS / f"{results_prefix}_{cpu_slug(cpu)}_{time.strftime('%Y-%m-%d', time.gmtime())}.json")
    for p in paths:
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(json.dumps(result, indent=1, default=str))
        print("wrote", p)
    return result


def report(result: dict) -> None:
    """The tables on stdout."""
    pk = result["peak"]
    rows = [[dt, round(v["best_gflops_cpu"], 1), round(v["best_gflops_wall"], 1), v["best_size_cpu"],
             " ".join(f"{n}:{g:.0f}" for n, g in v["by_size_median_cpu"].items())] for dt, v in pk.items()]
    print_table("Matmul peak, one thread (best sample; GFLOP/s)", ["dtype", "per cpu-s", "per wall-s", "best n",
                                                                  "median per cpu-s by n"], rows)
    rows = []
    for study, res in result["shapes"].items():
        sh = res["shape"]
        for name, s in res["summary"].items():
            label = (f"{sh['n_layers']}x{sh['d_model']} B{res['batch']} n{res['mean_positions_alone']:.1f} "
                     f"({100 * res['useful_position_share_alone']:.0f}% unpadded)")
            rows.append([study, label,
                         name, round(s["gflops_cpu"], 1), round(s["fraction_cpu"], 3),
                         f"{s['fraction_cpu_range'][0]:.3f}-{s['fraction_cpu_range'][1]:.3f}",
                         round(s["gflops_wall"], 1), round(s["fraction_wall"], 3), round(s["per_trial_steps_per_s"], 2),
                         round(s["vs_alone_cpu"], 2), s["cpu_share"]])
    print_table(f"Achieved FLOP/s (median of {result['rounds']} rounds) and fraction of the fp32 peak "
                f"({pk['float32']['best_gflops_cpu']:.1f} GFLOP/cpu-s, {pk['float32']['best_gflops_wall']:.1f} "
                "GFLOP/wall-s)", ["study", "shape", "side", "GFLOP/cpu-s", "frac", "frac range", "GFLOP/wall-s",
                                  "frac wall", "trial-steps/s", "x alone", "cpu share"], rows)
    if "profile" in result:
        p = result["profile"]
        names = list(p["sides"])
        rows = [[c] + [f"{p['sides'][n]['ms_per_trial_step'][c]:.1f} ({100 * p['sides'][n]['share'][c]:.0f}%)"
                       for n in names] for c in CATEGORIES]
        rows.append(["total (profiled wall)"] + [f"{p['sides'][n]['wall_ms_per_trial_step']:.1f}" for n in names])
        rows.append(["aten ops per trial-step"] + [f"{p['sides'][n]['aten_ops_per_trial_step']:.0f}" for n in names])
        rows.append(["CPU share while profiled"] + [f"{p['sides'][n]['cpu_share']:.2f}" for n in names])
        for key, label in (("matmul_fraction", "matmul operators' rate / peak (est.)"),
                           ("attention_fraction", "attention kernel's rate / peak (est.)"),
                           ("step_fraction", "whole step's rate / peak (profiled)")):
            rows.append([label] + [f"{(p['sides'][n]['kernel_rates_est'] or {}).get(key, float('nan')):.2f}"
                                   for n in names])
        print_table(f"Where the time goes at {p['shape']} ({p['why']}): ms per trial-step (share)",
                    ["category"] + names, rows)
        for n in names:
            print(f"  top ops, {n}: " + "; ".join(f"{o.removeprefix('aten::')} {ms:.2f}"
                                                  for o, _c, ms in p["sides"][n]["top_ops_ms_per_trial_step"][:8]))
    print(f"\n{result['uptime_start']}  ->  {result['uptime_end']}; {result['total_wall_s']} s wall, "
          f"{result['total_cpu_s']} CPU-s")


if __name__ == "__main__":
    main()
