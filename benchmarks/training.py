"""Training-speed benchmarks, measured side by side in one run.

1. the headline study through bindscale (stacked trials, process pool) against
   the per-trial loop a researcher would write (``loop_baseline.py``), same
   trials and steps;
2. training throughput in GFLOP/s (6 × rows × weights per step) as a fraction
   of this machine's fp32 matmul peak, measured in the same run;
3. cost growth: wall time at 1×, 2× and 4× the trials, and at 2× the width;
4. (full run only) bf16 autocast against fp32: speed and held-out R²;
5. (full run only) torch.compile against eager: training seconds including
   compilation, and held-out R².

    python benchmarks/training.py --quick --json out.json    # < 3 min on 2 cores
    python benchmarks/training.py                            # the full tables

Numbers are only comparable within one run: this machine is shared and noisy.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parent))
from common import machine, matmul_peak, print_table  # noqa: E402
from loop_baseline import train_loop  # noqa: E402

from bindscale.core.config import StudyConfig
from bindscale.core.studyfile import resolve_study
from bindscale.studies.scaling.config import ModelConfig, TaskConfig, TrainConfig, TrialConfig  # noqa: E402
from bindscale.run.runner import run_study  # noqa: E402
from bindscale.studies.scaling.trial import run_group  # noqa: E402
from rich.console import Console  # noqa: E402

QUIET = Console(file=open(os.devnull, "w"), stderr=False)


def timed_study(study: StudyConfig, workers: int | None = None, keep: Path | None = None) -> tuple[float, dict]:
    """Wall time of ``bindscale run`` on a fresh directory (``keep`` keeps it; it must not exist yet)."""
    with tempfile.TemporaryDirectory() as d:
        out = keep or Path(d) / "run"
        if out.exists():
            raise SystemExit(f"--keep {out}: already exists (a resumed run would not be timed)")
        t0 = time.perf_counter()
        summary = run_study(study, out, device="cpu", workers=workers, console=QUIET)
        return time.perf_counter() - t0, summary


def bench_vs_loop(quick: bool, keep: Path | None = None, repeat: int = 1) -> dict:
    """bindscale's headline study against the per-trial loop, ``repeat`` times alternately.

    On a shared machine either side's time moves by ~10% between runs; alternating
    the two and reporting the median ratio (and the range) says how firm a ratio is.
    """
    study = resolve_study("scaling", quick=quick)
    trials = study.trials()
    rows, ours, loop = [], [], []
    for i in range(repeat):
        t_ours, summary = timed_study(study, keep=keep if i == 0 else None)
        if i == 0:
            print("bindscale verdicts:", {v["claim"]: v["verdict"] for v in summary["verdicts"]})
        torch.set_num_threads(os.cpu_count() or 1)  # the hand-written loop uses every core in one process
        t0 = time.perf_counter()
        for t in trials:
            train_loop(t)
        t_loop = time.perf_counter() - t0
        ours.append(t_ours)
        loop.append(t_loop)
        rows.append([i + 1, len(trials), t_ours, t_loop, t_loop / t_ours])
        print(f"repetition {i + 1}/{repeat}: bindscale {t_ours:.0f} s, loop {t_loop:.0f} s, {t_loop / t_ours:.2f}x", flush=True)
    print_table(f"headline study{' (--quick)' if quick else ''}: wall time, bindscale run (stacked, process pool) "
                "vs per-trial loop", ["repetition", "trials", "bindscale s", "loop s", "speedup"], rows)
    ratios = [b / a for a, b in zip(ours, loop)]
    median = statistics.median(ratios)
    print(f"speedup vs loop: {median:.2f}x" + (f" (median of {repeat}; range {min(ratios):.2f}-{max(ratios):.2f}x)"
                                               if repeat > 1 else ""))
    return {"speedup_vs_loop": median, "speedups_vs_loop": ratios, "seconds_bindscale": ours, "seconds_loop": loop,
            "n_trials": len(trials)}


def throughput(width: int, depth: int, stack: int, steps: int, precision: str = "fp32") -> float:
    """Training GFLOP/s of one stack of MLPs: 6 × rows × weights × trials × steps / training seconds."""
    trials = [TrialConfig(task=TaskConfig(), model=ModelConfig(width=width, depth=depth),
                          train=TrainConfig(steps=steps, n_evals=1, eval_tasks=8, probe_tasks=8, probe_samples=1,
                                            precision=precision), seed=s) for s in range(stack)]
    res = run_group(trials)
    m = res[0].metrics
    rows = trials[0].train.batch_tasks * trials[0].task.samples_per_task
    return 6 * rows * m["n_params"] * stack * steps / (m["train_seconds"] * stack) / 1e9


def bench_peak(quick: bool) -> dict:
    threads = os.cpu_count() or 1
    peak = matmul_peak(threads)
    torch.set_num_threads(threads)
    grid = [(64, 3), (512, 3)] if quick else [(w, d) for w in (64, 128, 256, 512, 1024, 2048) for d in (2, 3, 4)]
    rows, out = [], {"fp32_matmul_peak_gflops": peak}
    for w, d in grid:
        steps = max(10, min(400, int(3e11 / (6 * 1024 * (w * w * d) * 4))))
        g = throughput(w, d, stack=4, steps=steps)
        gb = throughput(w, d, stack=4, steps=steps, precision="bf16") if (not quick or w >= 512) else math.nan
        rows.append([w, d, steps, g, g / peak, gb, gb / peak])
        out[f"peak_fraction_w{w}_d{d}"] = g / peak
    out["peak_fraction_w512"] = out["peak_fraction_w512_d3"]
    print_table(f"training throughput, stacks of 4 MLPs, {threads} threads; fp32 matmul peak {peak:.0f} GFLOP/s",
                ["width", "depth", "steps", "fp32 GFLOP/s", "of peak", "bf16 GFLOP/s", "bf16 / fp32 peak"], rows)
    return out


def _grid_study(n: int, width: int, steps: int) -> StudyConfig:
    return StudyConfig(name="growth", base=TrialConfig(
        model=ModelConfig(width=width, depth=3),
        train=TrainConfig(steps=steps, n_evals=2, eval_tasks=64, probe_tasks=64, probe_samples=2)),
        grids=[{"seed": list(range(n))}])


def bench_growth(quick: bool) -> dict:
    n, steps = (4, 200) if quick else (8, 1000)
    rows, times = [], {}
    for label, k, w in (("1x trials", 1, 128), ("2x trials", 2, 128), ("4x trials", 4, 128), ("1x trials, 2x width", 1, 256)):
        t, _ = timed_study(_grid_study(n * k, w, steps))
        times[label] = t
        rows.append([label, n * k, w, steps, t, t / times["1x trials"]])
    print_table("cost growth (bindscale run, default workers)", ["case", "trials", "width", "steps", "seconds", "ratio"], rows)
    return {"time_ratio_2x_trials": times["2x trials"] / times["1x trials"],
            "time_ratio_4x_trials": times["4x trials"] / times["1x trials"],
            "time_ratio_2x_width": times["1x trials, 2x width"] / times["1x trials"]}


def bench_precision() -> dict:
    """bf16 autocast vs fp32 on the headline study's MLP shapes: training speed and held-out R²."""
    torch.set_num_threads(1)  # as in a pool worker
    rows, out = [], {}
    for kind, w in (("mlp", 16), ("mlp", 32), ("mlp", 64), ("mlp", 128), ("mlp", 256), ("mlp", 512),
                    ("hypernet", 16), ("hypernet", 64)):
        res = {}
        for prec in ("fp32", "bf16"):
            model = ModelConfig(kind=kind, width=w, depth=3 if kind == "mlp" else 1)
            trials = [TrialConfig(model=model, train=TrainConfig(steps=1000, n_evals=1, precision=prec), seed=s)
                      for s in range(3)]
            r = run_group(trials)
            res[prec] = (r[0].metrics["train_seconds"], [x.metrics["r2_heldout"] for x in r])
        diff = max(abs(a - b) for a, b in zip(res["fp32"][1], res["bf16"][1]))
        speed = res["fp32"][0] / res["bf16"][0]
        rows.append([kind, w, res["fp32"][0], res["bf16"][0], speed, sum(res["fp32"][1]) / 3,
                     sum(res["bf16"][1]) / 3, diff])
        out[f"bf16_speedup_{kind}_w{w}"], out[f"bf16_max_abs_r2_diff_{kind}_w{w}"] = speed, diff
    print_table("bf16 autocast vs fp32 (1 thread, 3 seeds, 1000 steps)",
                ["model", "width", "fp32 s/trial", "bf16 s/trial", "speedup", "R² fp32", "R² bf16", "max |ΔR²|"], rows)
    return out


def bench_compile() -> dict:
    """torch.compile of the stacked forward pass against eager, one worker's thread, compilation included."""
    torch.set_num_threads(1)
    rows, out = [], {}
    for w, steps in ((64, 2000), (512, 500)):
        res = {}
        for comp in (False, True):
            trials = [TrialConfig(model=ModelConfig(width=w, depth=3), train=TrainConfig(
                steps=steps, n_evals=1, compile=comp), seed=s) for s in range(4)]
            r = run_group(trials)
            res[comp] = (r[0].metrics["train_seconds"] * 4, [x.metrics["r2_heldout"] for x in r])
        diff = max(abs(a - b) for a, b in zip(res[False][1], res[True][1]))
        rows.append([w, steps, res[False][0], res[True][0], res[False][0] / res[True][0], diff])
        out[f"compile_speedup_w{w}"], out[f"compile_max_abs_r2_diff_w{w}"] = res[False][0] / res[True][0], diff
    print_table("torch.compile vs eager (stack of 4, 1 thread, precision auto; compile time included)",
                ["width", "steps", "eager s", "compiled s", "speedup", "max |ΔR²|"], rows)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="reduced sizes (< 3 min on 2 cores)")
    ap.add_argument("--json", type=Path, help="write the figures to this JSON file")
    ap.add_argument("--only", choices=["vs_loop", "peak", "growth", "precision", "compile"], action="append",
                    help="run only these sections (repeatable)")
    ap.add_argument("--keep", type=Path, help="keep the headline study's run directory here (report, records)")
    ap.add_argument("--repeat", type=int, default=1, help="run bindscale and the loop this many times, alternately; "
                    "the speedup is the median ratio (default 1)")
    args = ap.parse_args()
    if args.repeat < 1:
        ap.error(f"--repeat {args.repeat}: must be 1 or more")
    run = lambda name: not args.only or name in args.only  # noqa: E731
    print("machine:", json.dumps(machine()))
    t0 = time.perf_counter()
    out = {"machine": machine(), "quick": args.quick}
    if run("vs_loop"):
        out |= bench_vs_loop(args.quick, args.keep, args.repeat)
    if run("peak"):
        out |= bench_peak(args.quick)
    if run("growth"):
        out |= bench_growth(args.quick)
    if run("precision") and (not args.quick or args.only):
        out |= bench_precision()
    if run("compile") and (not args.quick or args.only):
        out |= bench_compile()
    out["benchmark_seconds"] = time.perf_counter() - t0
    keys = ("speedup_vs_loop", "peak_fraction_w512", "time_ratio_4x_trials")
    print("\nsummary:", ", ".join(f"{k} {out[k]:.2f}" for k in keys if k in out), f"({out['benchmark_seconds']:.0f} s)")
    if args.json:
        args.json.write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
