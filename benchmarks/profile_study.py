"""Where the training time of a headline-study run goes.

    python benchmarks/profile_study.py runs/scaling             # worker-seconds by stack shape, from the records
    python benchmarks/profile_study.py runs/scaling --ops 512   # + operator profile of one width-512 stack
    python benchmarks/profile_study.py runs/scaling --ops 64 --kind hypernet --stack 9

Part 1 reads ``results.parquet``: per (model, width) the trials, stack size,
precision and the worker-seconds spent training, evaluating and probing
(``train_seconds`` etc. are a stack's wall time shared equally by its trials),
and each shape's share of the total. Part 2 trains one stack of that width
(identity encoding, the study's training settings, one thread as in a pool
worker) for ``--steps`` steps under ``torch.profiler`` and prints the operators
that take the most time, grouped into matmuls, elementwise, optimizer, data.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd
import torch

sys.path.insert(0, str(Path(__file__).parent))
from common import machine, print_table  # noqa: E402

from bindscale.run.runner import load_run_study  # noqa: E402
from bindscale.studies.scaling.trial import run_group  # noqa: E402

#: Operator name → the kind of work it is (for the grouped operator table).
KINDS = {
    "aten::bmm": "matmul", "aten::baddbmm": "matmul", "aten::mm": "matmul", "aten::addmm": "matmul",
    "aten::_fused_adamw_": "optimizer", "aten::uniform_": "data", "aten::randint": "data",
    "aten::copy_": "casts and copies", "aten::threshold_backward": "activation", "aten::clamp_min": "activation",
    "aten::sum": "bias gradients and loss", "aten::linalg_vector_norm": "clipping",
}


def by_shape(run_dir: Path) -> None:
    df = pd.read_parquet(run_dir / "results.parquet")
    df = df[df["status"] == "ok"]
    g = df.groupby(["model", "width"]).agg(
        trials=("trial_id", "size"), stack=("stack_size", "max"), precision=("precision_used", "first"),
        train=("train_seconds", "sum"), eval=("eval_seconds", "sum"), probe=("probe_seconds", "sum"))
    total = float(g[["train", "eval", "probe"]].sum().sum())
    rows = [[m, w, int(r.trials), int(r.stack), r.precision, r.train, r.eval, r.probe,
             (r.train + r.eval + r.probe) / total] for (m, w), r in g.iterrows()]
    rows.append(["all", "", int(g.trials.sum()), "", "", float(g.train.sum()), float(g["eval"].sum()),
                 float(g.probe.sum()), 1.0])
    print_table(f"{run_dir}: worker-seconds by stack shape", ["model", "width", "trials", "max stack", "precision",
                "train s", "eval s", "probe s", "share"], rows)
    print(f"evaluation + probes: {(g['eval'].sum() + g.probe.sum()) / g.train.sum():.1%} of training time")


def ops(run_dir: Path, width: int, stack: int, steps: int, kind: str = "mlp") -> None:
    from torch.profiler import ProfilerActivity, profile

    torch.set_num_threads(1)
    trials = [t for t in load_run_study(run_dir).trials()
              if t.family == "hyperteacher" and t.model.kind == kind and t.model.width == width
              and t.task.encoding == "identity"][:stack]
    if not trials:
        raise SystemExit(f"no identity-encoded {kind} trial of width {width} in {run_dir}")
    trials = [t.model_copy(update={"train": t.train.model_copy(update={
        "steps": steps, "n_evals": 1, "eval_tasks": 8, "probe_tasks": 8})}) for t in trials]
    run_group(trials)  # warm-up
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        run_group(trials)
    events = prof.key_averages()
    total = sum(e.self_cpu_time_total for e in events)
    kinds: dict[str, float] = {}
    for e in events:
        kinds[KINDS.get(e.key, "other")] = kinds.get(KINDS.get(e.key, "other"), 0.0) + e.self_cpu_time_total
    rows = [[k, v / 1e6, v / total] for k, v in sorted(kinds.items(), key=lambda kv: -kv[1])]
    print_table(f"operator time, {kind} width {width}, stack of {len(trials)}, {steps} steps, 1 thread "
                f"({total / 1e6 / steps * 1e3:.1f} ms per step)", ["kind", "seconds", "share"], rows)
    top = sorted(events, key=lambda e: -e.self_cpu_time_total)[:10]
    print_table("top operators", ["operator", "calls", "seconds", "share"],
                [[e.key, e.count, e.self_cpu_time_total / 1e6, e.self_cpu_time_total / total] for e in top])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("run_dir", type=Path, help="a finished `bindscale run` directory of the headline study")
    ap.add_argument("--ops", type=int, metavar="WIDTH", help="also profile one stack of this width")
    ap.add_argument("--kind", choices=["mlp", "hypernet"], default="mlp", help="model of the profiled stack")
    ap.add_argument("--stack", type=int, default=5)
    ap.add_argument("--steps", type=int, default=200)
    args = ap.parse_args()
    print("machine:", machine())
    by_shape(args.run_dir)
    if args.ops:
        ops(args.run_dir, args.ops, args.stack, args.steps, args.kind)


if __name__ == "__main__":
    main()
