"""Per-trial training steps/s of bindscale's stacked transformer against a plain PyTorch loop and that loop
under ``torch.compile``, at each transformer study's default shapes.

For each study (subgraphs, depth, length_transfer, ceiling, geometry) the trial is the study file's
``base`` (``bindscale.core.config.resolve_study``; ``study:key=value`` applies ``--set``-style overrides, e.g.
``depth:budget=25000``), its model built by the study's own ``build_model`` and trained on the study's
own training set (its ``make_data`` / ``pack``), at the study's batch size, learning rate schedule,
weight decay and clipping. Sides, one torch thread, in one process:

- ``peer``: a training loop written the way nanoGPT's ``train.py`` (Karpathy 2022) is: one model,
  ``torch.optim.AdamW`` over a decay and a no-decay parameter group (``fused=True`` where this torch
  build supports it on the CPU), the learning rate set on the groups each step, forward to a mean
  cross-entropy, ``backward``, ``clip_grad_norm_``, ``step``, ``zero_grad(set_to_none=True)``; the loss
  is never read on the host. Same model class (:class:`bindscale.models.transformer.Transformer`),
  same batches: trial seed 0's batch order (:func:`bindscale.train.loop.batch_indices`) with each batch
  trimmed to its longest sequence, as bindscale trims it, so both sides push the same positions;
- ``compiled``: that loop with the model and loss under ``torch.compile`` (Inductor; the optimizer step
  stays eager, as in nanoGPT). Compilation (the first steps, until a second sequence length has been
  seen and the graph made dynamic in length) is timed apart and left out of its steps/s;
- ``alone``: bindscale's own per-trial trainer, :func:`bindscale.train.loop.train_seq_model` (what the
  depth, length_transfer, ceiling and geometry studies run per trial);
- ``stack T``: bindscale's stacked training, :func:`bindscale.train.loop.train_stacked_seq_model`
  (:class:`~bindscale.models.stacked_transformer.StackedTransformer`, ``fit_stacked_minibatches``,
  ``PerTrialAdamW``, ``clip_per_trial_``) on trials of seeds 0..T-1, each its own data and batch order;
  per-trial steps/s = T x stack steps/s.

Timing: every measurement runs ``--warmup`` seconds (at least 3 steps) untimed, then counts the steps
finished in a ``--seconds`` wall-clock window (:class:`common.StepWindow`), with this process's CPU
time over the same window: its CPU share (CPU-s / wall-s, 1.0 for one busy thread) shows when another
process took the core. The sides alternate within each round, their order rotated per round, so a
change of load falls on all of them; per side the median over rounds and the per-round range are
reported. The machine (lscpu model and AVX/AMX flags), torch version and the load average before and
after every measurement go into the JSON. ``--profile`` adds a torch.profiler reading of one side's
steps (aten operator time, matrix-multiply time and the remainder: Python, dispatch, autograd
bookkeeping) for the peer and the largest stack, to say where a missed target went.

    python benchmarks/transformer_peer.py --profile --json peer.json   # 5 studies: 202 CPU-s (17 min wall at load ~10)
    python benchmarks/transformer_peer.py --studies depth:budget=25000 --stacks 1,8 --rounds 2
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

# Inductor compiles in worker processes by default; one in-process compile keeps to this process's one core.
os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from bindscale.core import seeding  # noqa: E402
from bindscale.models.stacked_transformer import StackedTransformer  # noqa: E402
from bindscale.models.transformer import Transformer  # noqa: E402
from bindscale.train.loop import (
    BETAS,
    batch_indices,
    lr_at,
    sequence_lengths,
    train_seq_model,
    train_stacked_seq_model,
)

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import StepWindow, WindowDone, load, lscpu, machine, print_table  # noqa: E402

STUDIES = ("subgraphs", "depth", "length_transfer", "ceiling", "geometry")
#: The targets set for stacked training, per trial: this many times the plain loop, and the compiled loop's rate.
TARGET_VS_PEER, TARGET_VS_COMPILED = 3.0, 1.0


# --------------------------------------------------------------------------------------------------
# The studies' default shapes and data
# --------------------------------------------------------------------------------------------------

@dataclass
class Case:
    """One study's trial shape and training sets.

    ``data[t]``: trial seed ``t``'s training set, ``(tokens (N, L) int64, loss_mask (N, L) bool)`` as the
    study packs it; ``model(t)``: seed ``t``'s freshly initialised :class:`Transformer` (one ``max_len``
    for all seeds, so that they stack); ``train``: the trial's training section (steps, batch_size,
    lr, weight_decay, warmup_steps, grad_clip).
    """

    name: str
    train: object
    data: list[tuple[torch.Tensor, torch.Tensor]]
    model: Callable[[int], Transformer]
    build_s: float = 0.0
    info: dict = field(default_factory=dict)


def _parts(study: str, trial) -> tuple[tuple[torch.Tensor, torch.Tensor], int, Callable[[int], Transformer]]:
    """``(training tensors, max_len, max_len -> model)`` of one trial, by the study's own functions
    (the calls its ``run_trial`` makes before training)."""
    if study == "subgraphs":
        from bindscale.studies.subgraphs import trial as m
        from bindscale.studies.subgraphs.tasks import charvocab

        train, test, _ = m.make_data(trial)
        return charvocab.pack(train), m.model_max_len(train, test), lambda L: m.build_model(trial, L)
    if study == "depth":
        from bindscale.studies.depth import trial as m

        data = m.make_data(trial)
        return m.pack(data.train, data.vocab), data.max_len, lambda L: m.build_model(trial, len(data.vocab), L)
    if study == "length_transfer":
        from bindscale.studies.length_transfer import tasks, trial as m

        data = m.make_data(trial)
        return tasks.pack(data.train), data.max_len, lambda L: m.build_model(trial, L)
    if study == "ceiling":
        from bindscale.studies.ceiling import trial as m
        from bindscale.studies.ceiling.data import instance_sets

        sets = instance_sets(trial.task)
        train = [p for f in trial.task.family_list for p in sets.train[f]]
        return m.pack(train), m.sequence_length(sets), lambda L: m.build_model(trial, len(m.VOCAB), L)
    if study == "geometry":
        from bindscale.studies.geometry import trial as m

        return m.encode(m.task_family(trial)["lm"]), trial.data.max_words + 2, lambda L: m.build_model(trial)
    raise ValueError(f"no adapter for study {study!r}; known: {', '.join(STUDIES)}")


def study_case(spec: str, n_seeds: int) -> Case:
    """The base trial of a study file (``name`` or ``name:key=value,key=value``) for seeds ``0..n_seeds-1``.

    Raises:
        ValueError: a study without an adapter here; bindscale's ConfigError for a bad override.
    """
    from bindscale.core.studyfile import resolve_study

    t0 = time.perf_counter()
    name, _, sets = spec.partition(":")
    base = resolve_study(name, overrides=[s for s in sets.split(",") if s]).base
    trials = [type(base).model_validate(base.model_dump(mode="json") | {"seed": s}) for s in range(n_seeds)]
    parts = [_parts(name, t) for t in trials]
    max_len = max(L for _, L, _ in parts)
    case = Case(spec, base.train, [d for d, _, _ in parts], lambda t: parts[t][2](max_len),
                build_s=time.perf_counter() - t0)
    m = case.model(0)
    tok, mask = case.data[0]
    trimmed = sequence_lengths(tok, mask)
    case.info = {"n_layers": m.n_layers, "d_model": m.d_model, "n_heads": m.n_heads, "d_ff": m.d_ff,
                 "vocab": m.vocab_size, "n_params": m.n_params(), "batch_size": base.train.batch_size,
                 "n_train": int(tok.shape[0]), "padded_len": int(tok.shape[1]),
                 "mean_seq_len": round(float(trimmed.float().mean()), 1)}
    return case


# --------------------------------------------------------------------------------------------------
# The plain loop (nanoGPT's train.py way), eager or compiled
# --------------------------------------------------------------------------------------------------

class MaskedLM(torch.nn.Module):
    """``model`` plus its loss, the unit nanoGPT compiles: ``(x (B, L) ids, y (B, L) targets, -100 unscored)``
    → mean cross-entropy over scored positions (nats per target token, as :func:`bindscale.train.loop.seq_loss`)."""

    def __init__(self, model: Transformer):
        super().__init__()
        self.model = model

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        logits = self.model(x)  # (B, L, V)
        return F.cross_entropy(logits.flatten(0, 1), y.flatten(), ignore_index=-100)


def fused_adamw_ok() -> bool:
    """Whether this torch build runs ``torch.optim.AdamW(fused=True)`` on the CPU (it raises where not)."""
    p = torch.nn.Parameter(torch.zeros(2))
    p.grad = torch.ones(2)
    try:
        torch.optim.AdamW([p], lr=1e-3, fused=True).step()
        return True
    except (RuntimeError, TypeError):
        return False


class PeerLoop:
    """One model trained by a plain loop (see the module docstring); ``compiled``: under ``torch.compile``.

    Model, optimizer and step count persist across measurements (a user's loop runs on), so the
    compiled side compiles once; the batch schedule cycles over ``schedule`` steps of trial seed 0.
    """

    def __init__(self, case: Case, compiled: bool, schedule: int = 4000):
        tr = case.train
        self.tr, self.compiled = tr, compiled
        tokens, mask = case.data[0]
        self.inputs = tokens[:, :-1]
        self.targets = torch.where(mask[:, :-1], tokens[:, 1:], -100)
        self.idx = batch_indices(tokens.shape[0], schedule, tr.batch_size, seeding.generator(0, "train"))
        # positions fed per step: the batch's longest sequence less the last token (it has no target)
        self.lengths = (sequence_lengths(tokens, mask)[self.idx].amax(dim=1) - 1).tolist()
        self.model = case.model(0).train()
        params = [p for p in self.model.parameters() if p.requires_grad]
        groups = [{"params": [p for p in params if p.dim() >= 2], "weight_decay": tr.weight_decay},
                  {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0}]
        self.fused = fused_adamw_ok()
        self.opt = torch.optim.AdamW(groups, lr=tr.lr, betas=BETAS, fused=self.fused)
        self.params = params
        self.fn = MaskedLM(self.model)
        self.compile_s, self.i = None, 0
        if compiled:
            self.fn = torch.compile(self.fn)
            self.compile_s = self._compile()

    def step(self) -> None:
        k = self.i % len(self.lengths)
        self.i += 1
        rows, L = self.idx[k], self.lengths[k]
        for g in self.opt.param_groups:
            g["lr"] = lr_at(self.i, lr=self.tr.lr, warmup_steps=self.tr.warmup_steps, steps=self.tr.steps)
        loss = self.fn(self.inputs[rows, :L], self.targets[rows, :L])
        loss.backward()
        if self.tr.grad_clip is not None:
            torch.nn.utils.clip_grad_norm_(self.params, self.tr.grad_clip)
        self.opt.step()
        self.opt.zero_grad(set_to_none=True)

    def _compile(self) -> float:
        """Seconds of the steps that compile: the first, then the first at a second length (which makes the
        length dimension dynamic, one graph for every length after), then two more. ``self.i`` is reset."""
        t0 = time.perf_counter()
        self.step()
        first = self.lengths[0]
        other = next((k for k, L in enumerate(self.lengths) if L != first), None)
        if other is not None:
            self.i = other
            self.step()
        self.step(), self.step()
        self.i = 0
        return time.perf_counter() - t0

    def measure(self, window: StepWindow) -> None:
        try:
            while True:
                self.step()
                window()
        except WindowDone:
            pass


# --------------------------------------------------------------------------------------------------
# bindscale's trainers
# --------------------------------------------------------------------------------------------------

def bindscale_alone(case: Case, window: StepWindow, steps: int) -> None:
    """Seed 0 trained by :func:`train_seq_model` until ``window`` has filled (fresh model each call)."""
    tr = case.train
    tokens, mask = case.data[0]
    try:
        train_seq_model(case.model(0), tokens, mask, steps=steps, batch_size=tr.batch_size, lr=tr.lr,
                        weight_decay=tr.weight_decay, warmup_steps=tr.warmup_steps, grad_clip=tr.grad_clip,
                        generator=seeding.generator(0, "train"), on_step=window)
    except WindowDone:
        pass


def bindscale_stack(case: Case, T: int, window: StepWindow, steps: int) -> None:
    """Seeds ``0..T-1`` trained as one stack by :func:`train_stacked_seq_model` until ``window`` has filled
    (``window`` is called once per stack step: on trial 0's step)."""
    tr = case.train
    stack = StackedTransformer.from_members([case.model(t) for t in range(T)])
    try:
        train_stacked_seq_model(stack, case.data[:T], steps=steps, batch_size=tr.batch_size, lr=tr.lr,
                                weight_decay=tr.weight_decay, warmup_steps=tr.warmup_steps, grad_clip=tr.grad_clip,
                                generators=[seeding.generator(t, "train") for t in range(T)],
                                on_step=lambda t, s, v: window() if t == 0 else None)
    except WindowDone:
        pass


# --------------------------------------------------------------------------------------------------
# Measurement
# --------------------------------------------------------------------------------------------------

def measure(run: Callable[[StepWindow, int], None], seconds: float, warmup: float, steps: int) -> StepWindow:
    """One timed window of ``run(window, steps)``; the step budget is quadrupled until the window fills."""
    for _ in range(4):
        w = StepWindow(seconds, warmup)
        run(w, steps)
        if w.done:
            return w
        steps *= 4
    raise RuntimeError(f"no window of {seconds} s filled within {steps} steps")


def cpu_with_children() -> float:
    """CPU-seconds of this process and its finished children (Inductor runs the C++ compiler as a child)."""
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def sides_of(case: Case, stacks: list[int], compile_: bool, alone: bool) -> dict[str, tuple[Callable, int, dict]]:
    """Side name → ``(run(window, steps), trials per step, facts)``; builds the peer loops (and compiles)."""
    out: dict[str, tuple[Callable, int, dict]] = {}
    peer = PeerLoop(case, compiled=False)
    out["peer"] = (lambda w, n: peer.measure(w), 1, {"fused_adamw": peer.fused})
    if compile_:
        c0 = cpu_with_children()
        comp = PeerLoop(case, compiled=True)
        out["compiled"] = (lambda w, n: comp.measure(w), 1,
                           {"compile_s": round(comp.compile_s, 2), "compile_cpu_s": round(cpu_with_children() - c0, 2)})
    if alone:
        out["alone"] = (lambda w, n: bindscale_alone(case, w, n), 1, {})
    for T in stacks:
        out[f"stack{T}"] = (lambda w, n, T=T: bindscale_stack(case, T, w, n), T, {})
    return out


def run_case(case: Case, stacks: list[int], rounds: int, seconds: float, warmup: float, compile_: bool = True,
             alone: bool = True) -> dict:
    """Every side of one case, ``rounds`` times, alternating (order rotated per round).

    Returns:
        ``{"info", "facts", "runs": side → [per-round dict], "summary": side → {median, lo, hi, cpu_share,
        vs_peer, vs_compiled}}``; rates are per-trial steps per wall-clock second.
    """
    sides = sides_of(case, stacks, compile_, alone)
    names = list(sides)
    # step budget of a bindscale call: enough for warm-up plus window at twice the eager peer's rate
    probe = measure(sides["peer"][0], min(seconds, 0.5), 0.0, 10_000)
    budget = int(2 * probe.rate() * (warmup + seconds + 1)) + 20
    runs: dict[str, list[dict]] = {k: [] for k in names}
    for r in range(rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:
            run, T, _ = sides[name]
            before = load()
            w = measure(run, seconds, warmup, budget)
            rate = T * w.rate()
            runs[name].append({"per_trial_steps_per_s": rate, "per_trial_steps_per_cpu_s": T * w.steps / w.cpu,
                               "stack_steps": w.steps, "wall_s": round(w.wall, 3),
                               "cpu_s": round(w.cpu, 3), "cpu_share": round(w.cpu / w.wall, 3),
                               "load": [before, load()]})
            print(f"  {case.name} round {r} {name:9s} per-trial steps/s {rate:8.2f}  cpu share {w.cpu / w.wall:.2f}"
                  f"  load {before[0]}", flush=True)
    summary = {}
    for name, xs in runs.items():
        rates = [x["per_trial_steps_per_s"] for x in xs]
        per_cpu = [x["per_trial_steps_per_cpu_s"] for x in xs]
        summary[name] = {"median": statistics.median(rates), "lo": min(rates), "hi": max(rates),
                         "cpu_share": statistics.median(x["cpu_share"] for x in xs),
                         "per_cpu_s": statistics.median(per_cpu)}
    for name, s in summary.items():
        s["vs_peer"] = s["median"] / summary["peer"]["median"]
        s["vs_peer_per_cpu_s"] = s["per_cpu_s"] / summary["peer"]["per_cpu_s"]
        if "compiled" in summary:
            s["vs_compiled"] = s["median"] / summary["compiled"]["median"]
            s["vs_compiled_per_cpu_s"] = s["per_cpu_s"] / summary["compiled"]["per_cpu_s"]
    return {"info": case.info, "build_s": round(case.build_s, 2),
            "facts": {k: v[2] for k, v in sides.items() if v[2]}, "runs": runs, "summary": summary}


def targets(summary: dict) -> dict:
    """Whether each stack meets the targets (per trial >= 3x the peer, >= the compiled peer)."""
    out = {}
    for name, s in summary.items():
        if name.startswith("stack"):
            out[name] = {"vs_peer": round(s["vs_peer"], 2), "meets_3x_peer": s["vs_peer"] >= TARGET_VS_PEER,
                         "vs_peer_per_cpu_s": round(s["vs_peer_per_cpu_s"], 2)}
            if "vs_compiled" in s:
                out[name] |= {"vs_compiled": round(s["vs_compiled"], 2),
                              "meets_compiled": s["vs_compiled"] >= TARGET_VS_COMPILED,
                              "vs_compiled_per_cpu_s": round(s["vs_compiled_per_cpu_s"], 2)}
    return out


# --------------------------------------------------------------------------------------------------
# Where the time goes (torch.profiler)
# --------------------------------------------------------------------------------------------------

#: aten operators counted as matrix multiplication.
MATMUL_OPS = {"aten::mm", "aten::bmm", "aten::addmm", "aten::baddbmm", "aten::_scaled_dot_product_flash_attention_for_cpu",
              "aten::_scaled_dot_product_flash_attention_for_cpu_backward"}


def profile_steps(run: Callable[[StepWindow, int], None], steps: int, trials: int = 1, n: int = 10,
                  warmup: int = 5) -> dict:
    """torch.profiler over ``n`` steps of ``run`` after ``warmup`` steps.

    Returns per step: ``wall_ms``; ``op_ms`` (self CPU time of every profiled operator, the kernels'
    work); ``matmul_ms`` (of :data:`MATMUL_OPS`); ``other_ms`` = wall - op (Python, dispatch and autograd
    bookkeeping between kernels); ``ops`` (operator calls per step). The profiler's own per-op cost
    inflates ``wall_ms`` a little, and on a loaded machine every figure includes time the process
    waited for a core; the shares, not the absolute figures, are the reading. ``per_trial_ms``: each
    figure divided by ``trials`` (the trials one step trains).
    """
    prof = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU])
    state = {"k": 0}

    def on_step(*_):
        state["k"] += 1
        if state["k"] == warmup:
            prof.start()
            state["t0"] = time.perf_counter()
        elif state["k"] == warmup + n:
            state["wall"] = time.perf_counter() - state["t0"]
            prof.stop()
            raise WindowDone

    class Hook(StepWindow):  # the side's run() calls its window once per step
        def __call__(self, *a):
            on_step(*a)

    run(Hook(0, 0), max(steps, warmup + n + 1))
    ev = prof.key_averages()
    op_us = sum(e.self_cpu_time_total for e in ev)
    mm_us = sum(e.self_cpu_time_total for e in ev if e.key in MATMUL_OPS)
    calls = sum(e.count for e in ev if e.key.startswith("aten::"))
    wall_ms = 1e3 * state["wall"] / n
    top = sorted(ev, key=lambda e: -e.self_cpu_time_total)[:8]
    per = {"wall_ms": wall_ms, "op_ms": op_us / 1e3 / n, "matmul_ms": mm_us / 1e3 / n,
           "other_ms": wall_ms - op_us / 1e3 / n, "ops": calls / n}
    return {k: round(v, 2) for k, v in per.items()} | {
        "per_trial_ms": {k: round(v / trials, 2) for k, v in per.items()},
        "top": [[e.key, round(e.self_cpu_time_total / 1e3 / n, 3)] for e in top]}


# --------------------------------------------------------------------------------------------------

def table(results: dict) -> None:
    rows = []
    for case, res in results.items():
        for name, s in res["summary"].items():
            rows.append([case, res["info"]["n_params"], name, round(s["median"], 1),
                         f"{s['lo']:.1f}-{s['hi']:.1f}", round(s["vs_peer"], 2),
                         round(s["vs_compiled"], 2) if "vs_compiled" in s else "-", s["cpu_share"],
                         round(s["per_cpu_s"], 1), round(s["vs_peer_per_cpu_s"], 2),
                         round(s["vs_compiled_per_cpu_s"], 2) if "vs_compiled" in s else "-"])
    print_table("Per-trial training steps/s per wall-clock second (median over rounds; range = per-round min-max) "
                "and per CPU-second of this process",
                ["study", "params", "side", "steps/s", "range", "x peer", "x compiled", "cpu share",
                 "steps/cpu-s", "x peer", "x compiled"], rows)


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--studies", default=",".join(STUDIES),
                    help="semicolon- or comma-separated study names, each optionally name:key=value[,key=value] "
                         "(use ';' between studies when an override has a comma)")
    ap.add_argument("--stacks", default="1,4,8")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=2.0, help="timed wall-clock window per measurement")
    ap.add_argument("--warmup", type=float, default=0.5, help="untimed seconds before each window")
    ap.add_argument("--no-compile", action="store_true", help="leave out the torch.compile side")
    ap.add_argument("--profile", action="store_true", help="torch.profiler reading of the peer and the largest stack")
    ap.add_argument("--json", help="write the results here")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    stacks = [int(x) for x in args.stacks.split(",")]
    specs = args.studies.split(";") if ";" in args.studies else args.studies.split(",")
    result = {"machine": machine() | {"lscpu": lscpu()}, "torch": torch.__version__, "threads": 1,
              "load_start": load(), "date_utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime()),
              "rounds": args.rounds, "seconds": args.seconds, "warmup_s": args.warmup, "stacks": stacks,
              "cases": {}}
    print(json.dumps(result["machine"]), "load", result["load_start"], flush=True)
    c0, t0 = time.process_time(), time.perf_counter()
    for spec in specs:
        case = study_case(spec, max(stacks))
        print(f"{spec}: {case.info} (data and models built in {case.build_s:.1f} s)", flush=True)
        res = run_case(case, stacks, args.rounds, args.seconds, args.warmup, compile_=not args.no_compile)
        res["targets"] = targets(res["summary"])
        if args.profile:
            T = max(stacks)
            peer = PeerLoop(case, compiled=False)
            res["profile"] = {"peer": profile_steps(lambda w, n: peer.measure(w), 100),
                              f"stack{T}": profile_steps(lambda w, n: bindscale_stack(case, T, w, n), 100, trials=T)}
            print(f"  profile {json.dumps(res['profile'])}", flush=True)
        result["cases"][spec] = res
    result["load_end"] = load()
    result["total_wall_s"], result["total_cpu_s"] = round(time.perf_counter() - t0, 1), round(time.process_time() - c0, 1)
    table(result["cases"])
    print(f"\nload {result['load_start']} -> {result['load_end']}; {result['total_wall_s']} s wall, "
          f"{result['total_cpu_s']} CPU-s; torch {torch.__version__}")
    for spec, res in result["cases"].items():
        print(spec, json.dumps(res["targets"]))
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(result, indent=1, default=str))
        print("wrote", args.json)
    return result


if __name__ == "__main__":
    main()
