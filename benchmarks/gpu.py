"""GPU variant of the training benchmark: one short script for a lent GPU machine.

    python benchmarks/gpu.py --json gpu.json      # a few minutes on one GPU

Prints the GPU's matmul peak (fp32, TF32, bf16), the training throughput of
stacked MLPs in each precision as a fraction of those peaks, the held-out R²
of bf16/TF32 against fp32 for one stack (the accuracy check), and the quick
headline study's wall time on CUDA against the CPU. Its companion for the paper tier,
``benchmarks/gpu_paper.py``, times one short job of each transformer study's ``-paper`` variant.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parent))
from common import machine, matmul_peak, print_table  # noqa: E402

from bindscale.core.studyfile import resolve_study
from bindscale.studies.scaling.config import ModelConfig, TaskConfig, TrainConfig, TrialConfig  # noqa: E402
from bindscale.run.runner import run_study  # noqa: E402
from rich.console import Console  # noqa: E402
from bindscale.studies.scaling.trial import run_group  # noqa: E402


def stack_run(width: int, precision: str, steps: int, stack: int = 8) -> tuple[float, list[float]]:
    trials = [TrialConfig(task=TaskConfig(), model=ModelConfig(width=width, depth=3),
                          train=TrainConfig(steps=steps, n_evals=1, batch_tasks=128, precision=precision), seed=s)
              for s in range(stack)]
    res = run_group(trials, device="cuda")
    m = res[0].metrics
    rows = 128 * 16
    gflops = 6 * rows * m["n_params"] * steps / m["train_seconds"] / 1e9
    return gflops, [r.metrics["r2_heldout"] for r in res]


def quick_study_wall() -> dict:
    quiet = Console(file=open(os.devnull, "w"))
    study = resolve_study("scaling", quick=True)
    out = {}
    for device in ("cuda", "cpu"):
        with tempfile.TemporaryDirectory() as d:
            t0 = time.perf_counter()
            summary = run_study(study, Path(d) / "run", device=device, console=quiet)
            out[f"quick_study_seconds_{device}"] = time.perf_counter() - t0
            out[f"quick_study_verdicts_{device}"] = [v["verdict"] for v in summary["verdicts"]]
    print(f"quick headline study: cuda {out['quick_study_seconds_cuda']:.1f} s, cpu {out['quick_study_seconds_cpu']:.1f} s")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--json", type=Path)
    ap.add_argument("--steps", type=int, default=500)
    args = ap.parse_args()
    if not torch.cuda.is_available():
        sys.exit("benchmarks/gpu.py needs a CUDA device")
    out = {"machine": machine()}
    print("machine:", json.dumps(out["machine"]))
    torch.backends.cuda.matmul.allow_tf32 = False
    peaks = {"fp32": matmul_peak(1, 8192, torch.float32, "cuda")}
    torch.backends.cuda.matmul.allow_tf32 = True
    peaks["tf32"] = matmul_peak(1, 8192, torch.float32, "cuda")
    torch.backends.cuda.matmul.allow_tf32 = False
    peaks["bf16"] = matmul_peak(1, 8192, torch.bfloat16, "cuda")
    out["peaks_gflops"] = peaks
    rows = []
    for w in (512, 1024, 2048):
        ref = None
        for prec in ("fp32", "tf32", "bf16"):
            g, r2 = stack_run(w, prec, args.steps)
            ref = ref or r2
            diff = max(abs(a - b) for a, b in zip(r2, ref))
            rows.append([w, prec, g, g / peaks[prec], sum(r2) / len(r2), diff])
            out[f"w{w}_{prec}"] = {"gflops": g, "peak_fraction": g / peaks[prec], "max_abs_r2_diff_vs_fp32": diff}
    print_table(f"stacked MLP training on {out['machine'].get('gpu')}: 8 trials, depth 3, {args.steps} steps",
                ["width", "precision", "GFLOP/s", "of its peak", "held-out R²", "max |ΔR²| vs fp32"], rows)

    out |= quick_study_wall()
    if args.json:
        args.json.write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
