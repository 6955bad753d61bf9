"""Packed against padded mini-batches in the sequence trainer (``train.pack``), at every transformer study's
``-full`` deciding shape.

A padded step computes every example of the batch at the batch's longest length; a packed step
(:func:`bindscale.train.loop.packed_batch`) lays the same examples side by side into as few rows as first
fit decreasing finds, each row no longer than the padded batch's, and attends block-diagonally, so the same
loss and gradients come from fewer positions. What this measures, in one process on one torch thread:

1. **Positions.** Over the trial's whole schedule (seed 0's batch order, every one of ``train.steps`` steps):
   real (non-padding) input positions per step, padded positions (``batch × width``) and packed ones
   (``rows × width``), hence the real-token fraction and real tokens per row, padded and packed; the host
   time to plan every step's packing (first fit decreasing, done once before the loop); and, as a what-if the
   trainer does not do, the real-token fraction of rows twice the batch's longest example.
2. **Speed.** Training steps per CPU-second (``time.process_time``: the machine is shared, so wall time
   measures the other jobs too) of :func:`bindscale.train.loop.train_seq_model` padded and packed, side by
   side: each window is the same steps of the same schedule (the trial's first ``warmup + k`` steps, ``k``
   sized to ``--seconds`` CPU-seconds by a short padded probe), fresh model each time, sides alternating
   within a round, order rotated per round; the median over rounds and the per-round ratio. The windows' own
   per-step losses of the two sides are compared too (same steps, same initial weights).
3. **Learning** (``--curve STUDY``, default depth): that study's deciding trial trained for
   ``--curve-steps`` steps (its recipe: batch size, peak learning rate, warm-up, decay and clipping, the
   cosine schedule spread over those steps), padded and packed from the same seed: the per-step losses'
   largest difference (absolute and relative, per 50 steps) and the parameters' relative difference at the
   end; and the same for a control, padded as a stack of one (other kernels, the same computation), which
   shows how far float rounding alone carries two runs of this recipe apart.

Load averages at the start, per window and at the end, each window's CPU share (CPU-s over wall-s), the
lscpu model and flags go into the JSON.

    python benchmarks/packing.py                       # all six shapes, 2 rounds, depth curve: a few minutes
    python benchmarks/packing.py --shapes depth --rounds 1 --no-curve --json /tmp/p.json

A run over all six shapes writes ``benchmarks/results/packing_<cpu>_<date>.json`` (and ``--json OUT``).
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from pathlib import Path

import torch

from bindscale.core import seeding
from bindscale.train.loop import (
    batch_indices,
    pack_plan,
    sequence_lengths,
    train_seq_model,
)

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import WindowDone, load, print_table
from flops import SHAPES, Bench, begin_result, build, finish_result


def schedule(b: Bench) -> tuple[list[int], list[list[int]]]:
    """Input positions of every example (:func:`sequence_lengths` less 1) and the example indices of every
    step of the trial's schedule (seed 0's order, ``train.steps`` steps)."""
    tr = b.case.train
    tokens, mask = b.case.data[0]
    sizes = (sequence_lengths(tokens, mask) - 1).tolist()
    return sizes, batch_indices(tokens.shape[0], tr.steps, tr.batch_size, seeding.generator(0, "train")).tolist()


def positions(b: Bench, first: int = 1, last: int | None = None) -> dict:
    """Real, padded (``batch × width``) and packed (``rows × width``) input positions over schedule steps
    ``first .. last`` (1-based, inclusive; default the whole schedule), and the CPU time to plan their packing."""
    sizes, idx = schedule(b)
    idx = idx[first - 1:last]
    real = padded = packed = rows = 0
    c0 = time.process_time()
    for batch in idx:
        s = [sizes[i] for i in batch]
        w = max(s)
        _, _, R = pack_plan(s, w)
        real, padded, packed, rows = real + sum(s), padded + len(s) * w, packed + R * w, rows + R
    plan_s = time.process_time() - c0
    # what if: rows twice the longest example (not what the trainer does; attention's cost grows with the width)
    wide = sum(pack_plan([sizes[i] for i in batch], 2 * max(sizes[i] for i in batch))[2] * 2
               * max(sizes[i] for i in batch) for batch in idx)
    steps, batch = len(idx), len(idx[0])
    return {"steps": steps, "batch": batch, "real_per_step": real / steps,
            "padded_positions_per_step": padded / steps, "packed_positions_per_step": packed / steps,
            "rows_per_step_packed": rows / steps, "real_fraction_padded": real / padded,
            "real_fraction_packed": real / packed, "real_tokens_per_row_padded": real / (steps * batch),
            "real_tokens_per_row_packed": real / rows, "packed_over_padded_positions": packed / padded,
            "plan_cpu_s": round(plan_s, 3), "what_if_rows_twice_as_wide_real_fraction": real / wide}


class StepRange:
    """A ``train_seq_model`` ``on_step`` callback timing steps ``warmup+1 .. warmup+steps`` (CPU and wall
    seconds, the loads) and recording every loss; raises :class:`WindowDone` at the last one."""

    def __init__(self, warmup: int, steps: int):
        self.warmup, self.steps = warmup, steps
        self.losses: list[float] = []
        self.cpu = self.wall = 0.0
        self.done = False

    def __call__(self, step: int, loss: float) -> None:
        self.losses.append(loss)
        if step == self.warmup:
            self.c0, self.t0, self.load0 = time.process_time(), time.perf_counter(), load()
        elif step == self.warmup + self.steps:
            self.cpu, self.wall = time.process_time() - self.c0, time.perf_counter() - self.t0
            self.load = [self.load0, load()]
            self.done = True
            raise WindowDone


def run_side(b: Bench, pack: bool, window: StepRange) -> StepRange:
    """Seed 0's trial (fresh model), its full schedule, until ``window`` ends."""
    tr = b.case.train
    tokens, mask = b.case.data[0]
    try:
        train_seq_model(b.case.model(0), tokens, mask, steps=tr.steps, batch_size=tr.batch_size, lr=tr.lr,
                        weight_decay=tr.weight_decay, warmup_steps=min(tr.warmup_steps, tr.steps // 2),
                        grad_clip=tr.grad_clip, generator=seeding.generator(0, "train"), on_step=window, pack=pack)
    except WindowDone:
        pass
    if not window.done:
        raise RuntimeError("the schedule ended before the window")
    return window


def speed(b: Bench, rounds: int, seconds: float, warmup: int) -> dict:
    """Padded and packed windows of the same steps, alternating; per side the runs and medians."""
    probe = run_side(b, False, StepRange(1, 2))
    per_step = probe.cpu / 2
    k = max(3, math.ceil(seconds / max(per_step, 1e-4)))
    sides = {"padded": False, "packed": True}
    runs: dict[str, list[dict]] = {s: [] for s in sides}
    loss_diff = []
    for r in range(rounds):
        order = list(sides) if r % 2 == 0 else list(sides)[::-1]
        got = {}
        for name in order:
            w = run_side(b, sides[name], StepRange(warmup, k))
            got[name] = w
            runs[name].append({"round": r, "steps": k, "cpu_s": round(w.cpu, 3), "wall_s": round(w.wall, 3),
                               "steps_per_cpu_s": k / w.cpu, "steps_per_wall_s": k / w.wall,
                               "cpu_share": round(w.cpu / w.wall, 3), "load": w.load})
            print(f"  {b.study:15s} round {r} {name:6s} {k / w.cpu:7.2f} steps/cpu-s  {k / w.wall:6.2f} steps/wall-s  "
                  f"{k:3d} steps  cpu share {w.cpu / w.wall:.2f}  load {w.load[0][0]}", flush=True)
        a, p = got["padded"].losses, got["packed"].losses
        loss_diff.append(max(abs(x - y) / abs(x) for x, y in zip(a, p)))
    med = {n: statistics.median(x["steps_per_cpu_s"] for x in xs) for n, xs in runs.items()}
    ratios = [q["steps_per_cpu_s"] / p["steps_per_cpu_s"] for p, q in zip(runs["padded"], runs["packed"])]
    return {"probe_cpu_s_per_step": per_step, "window_steps": [warmup + 1, warmup + k],
            "window_positions": positions(b, warmup + 1, warmup + k), "runs": runs,
            "steps_per_cpu_s": med, "ratio_of_medians": med["packed"] / med["padded"],
            "ratio_per_round": ratios, "ratio_median_per_round": statistics.median(ratios),
            "window_losses_max_rel_diff": max(loss_diff)}


def curve(study: str, steps: int) -> dict:
    """The study's deciding trial trained ``steps`` steps padded and packed (same seed), and, as a control of
    how far float rounding alone carries two runs apart, padded as a stack of one
    (:func:`bindscale.train.loop.train_stacked_seq_model`: the same computation by other kernels, which the
    project already treats as equal up to float rounding). Per-step losses' gaps and the parameters' at the end."""
    from bindscale.models.stacked_transformer import StackedTransformer
    from bindscale.train.loop import train_stacked_seq_model

    b = build(study, 1)
    tr = b.case.train
    tokens, mask = b.case.data[0]
    kw = dict(steps=steps, batch_size=tr.batch_size, lr=tr.lr, weight_decay=tr.weight_decay,
              warmup_steps=min(tr.warmup_steps, steps // 2), grad_clip=tr.grad_clip)
    out, models = {}, {}
    for name in ("padded", "packed", "stack1_padded"):
        losses: list[float] = []
        c0, t0 = time.process_time(), time.perf_counter()
        if name == "stack1_padded":
            m = StackedTransformer.from_members([b.case.model(0)])
            fit = train_stacked_seq_model(m, [(tokens, mask)], generators=[seeding.generator(0, "train")],
                                          on_step=lambda t, s, v: losses.append(v), **kw)[0]
            m = m.member(0)
        else:
            m = b.case.model(0)
            fit = train_seq_model(m, tokens, mask, generator=seeding.generator(0, "train"),
                                  on_step=lambda s, v: losses.append(v), pack=name == "packed", **kw)
        cpu, wall = time.process_time() - c0, time.perf_counter() - t0
        out[name] = {"losses": losses, "loss_curve": fit["loss_curve"], "final_loss": fit["final_loss"],
                     "cpu_s": round(cpu, 2), "wall_s": round(wall, 2), "steps_per_cpu_s": steps / cpu,
                     "status": fit["status"]}
        models[name] = m
        print(f"  curve {study} {name}: final loss {fit['final_loss']:.6f}, {steps / cpu:.2f} steps/cpu-s", flush=True)

    def gap(other: str) -> dict:
        a, p = out["padded"]["losses"], out[other]["losses"]
        abs_d = [abs(x - y) for x, y in zip(a, p)]
        rel_d = [d / abs(x) for d, x in zip(abs_d, a)]
        with torch.no_grad():
            params = {n: float((q - w).norm() / w.norm()) for (n, w), (_, q) in
                      zip(models["padded"].named_parameters(), models[other].named_parameters())}
        return {"max_abs_loss_diff": max(abs_d), "max_rel_loss_diff": max(rel_d),
                "max_rel_loss_diff_per_50_steps": [max(rel_d[i:i + 50]) for i in range(0, len(rel_d), 50)],
                "first_step_rel_diff_above_1e-5": next((i + 1 for i, d in enumerate(rel_d) if d > 1e-5), None),
                "params_max_rel_diff": max(params.values())}

    return {"study": study, "trial_id": b.trial_id, "steps": steps,
            "recipe": {k: getattr(tr, k) for k in ("batch_size", "lr", "weight_decay", "warmup_steps", "grad_clip")},
            "packed_vs_padded": gap("packed"), "control_stack1_vs_padded": gap("stack1_padded"),
            "final_loss": {k: v["final_loss"] for k, v in out.items()},
            "speedup_cpu": out["packed"]["steps_per_cpu_s"] / out["padded"]["steps_per_cpu_s"],
            "sides": {k: {kk: vv for kk, vv in v.items() if kk != "losses"} for k, v in out.items()},
            "losses": {k: v["losses"] for k, v in out.items()}}


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shapes", default=",".join(SHAPES), help="studies, comma-separated (default: all six)")
    ap.add_argument("--rounds", type=int, default=2, help="alternating rounds (default 2)")
    ap.add_argument("--seconds", type=float, default=1.5, help="CPU-seconds a padded window aims at (default 1.5)")
    ap.add_argument("--warmup", type=int, default=2, help="untimed steps before each window (default 2)")
    ap.add_argument("--curve", default="depth", help="study whose deciding trial's loss curves are compared")
    ap.add_argument("--curve-steps", type=int, default=500, help="steps of that comparison (default 500)")
    ap.add_argument("--no-curve", action="store_true", help="leave the loss-curve comparison out")
    ap.add_argument("--json", help="also write the results here")
    args = ap.parse_args(argv)
    studies, t_start, c_start, cpu, result = begin_result(ap, args.shapes, rounds=args.rounds, seconds=args.seconds,
                                                          warmup_steps=args.warmup)
    print(f"CPU {cpu.get('Model name', '?')} ({cpu.get('CPU(s)', '?')} CPUs); torch {torch.__version__}, 1 thread; "
          f"{result['uptime_start']}", flush=True)
    for study in studies:
        b = build(study, 1)
        pos = positions(b)
        print(f"{study}: {b.trial_id} {b.shape.n_layers}x{b.shape.d_model} batch {b.batch}: real fraction "
              f"{pos['real_fraction_padded']:.3f} padded -> {pos['real_fraction_packed']:.3f} packed, "
              f"{pos['rows_per_step_packed']:.1f} rows a step", flush=True)
        result["shapes"][study] = {"trial_id": b.trial_id, "select": SHAPES[study],
                                   "shape": {"n_layers": b.shape.n_layers, "d_model": b.shape.d_model,
                                             "n_heads": b.shape.n_heads, "d_ff": b.shape.d_ff, "vocab": b.shape.vocab},
                                   "pos": b.pos, "positions": pos, "speed": speed(b, args.rounds, args.seconds,
                                                                                  args.warmup)}
    if not args.no_curve:
        result["curve"] = curve(args.curve, args.curve_steps)
    return finish_result(result, t_start, c_start, report, args.json,
                         "packing" if set(studies) == set(SHAPES) else None, cpu)


def report(result: dict) -> None:
    rows = []
    for study, r in result["shapes"].items():
        p, s = r["positions"], r["speed"]
        rows.append([study, f"{r['shape']['n_layers']}x{r['shape']['d_model']} {r['pos']}", p["batch"],
                     f"{p['real_fraction_padded']:.3f}", f"{p['real_fraction_packed']:.3f}",
                     f"{p['rows_per_step_packed']:.1f}", f"{p['real_tokens_per_row_padded']:.1f}",
                     f"{p['real_tokens_per_row_packed']:.1f}", f"{s['steps_per_cpu_s']['padded']:.2f}",
                     f"{s['steps_per_cpu_s']['packed']:.2f}", f"{s['ratio_of_medians']:.2f}",
                     " ".join(f"{x:.2f}" for x in s["ratio_per_round"]),
                     f"{statistics.median(x['cpu_share'] for xs in s['runs'].values() for x in xs):.2f}",
                     f"{s['window_losses_max_rel_diff']:.1e}"])
    print_table("Packed vs padded, one thread: steps per CPU-second (median over rounds); real-token fraction and "
                "real tokens per row over the whole schedule",
                ["study", "shape", "batch", "real frac padded", "real frac packed", "rows packed", "tok/row padded",
                 "tok/row packed", "steps/cpu-s padded", "packed", "ratio", "ratio per round", "cpu share",
                 "window loss rel diff"], rows)
    if "curve" in result:
        c = result["curve"]
        print(f"\nLoss curves, {c['study']} {c['trial_id']}, {c['steps']} steps; final loss " +
              ", ".join(f"{k} {v:.6f}" for k, v in c["final_loss"].items()) + f"; packed {c['speedup_cpu']:.2f}x steps "
              "per CPU-s")
        for key in ("packed_vs_padded", "control_stack1_vs_padded"):
            g = c[key]
            print(f"  {key}: max |diff| {g['max_abs_loss_diff']:.2e}, max relative {g['max_rel_loss_diff']:.2e}, first "
                  f"step above 1e-5 relative: {g['first_step_rel_diff_above_1e-5']}; per 50 steps "
                  + " ".join(f"{x:.1e}" for x in g["max_rel_loss_diff_per_50_steps"])
                  + f"; parameters' largest relative difference {g['params_max_rel_diff']:.2e}")
    print(f"\n{result['uptime_start']}  ->  {result['uptime_end']}; {result['total_wall_s']} s wall, "
          f"{result['total_cpu_s']} CPU-s")


if __name__ == "__main__":
    main()
