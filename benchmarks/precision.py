"""Which default precision keeps a study's numbers independent of the CPU?

Trains the headline study's MLP shapes in fp32 and in bf16 autocast, once with this CPU's full
instruction set and once capped at AVX2 (``ONEDNN_MAX_CPU_ISA=AVX2``, ``MKL_ENABLE_INSTRUCTIONS=AVX2``:
no AMX, no AVX-512 — what a CPU without AMX runs), each in its own process with one torch thread.
Prints, per width: seconds per trial for each (ISA, precision), bf16's speed-up on each ISA, and the
largest |Δ held-out R²| between the two ISAs in fp32 (float rounding: what two users with different
CPUs see under the default) and between bf16 and fp32 (what ``precision: auto`` made them see).

    python benchmarks/precision.py            # widths 64 and 256, 2 seeds, 300 steps: ~2-4 min on 2 cores
    python benchmarks/precision.py --steps 1000 --widths 64 256 512
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from common import machine, print_table  # noqa: E402

CAPPED = {"ONEDNN_MAX_CPU_ISA": "AVX2", "MKL_ENABLE_INSTRUCTIONS": "AVX2"}


def _child(width: int, precision: str, steps: int, seeds: int) -> None:
    """Runs in the subprocess: train and print one JSON line."""
    import torch

    from bindscale.studies.scaling.config import ModelConfig, TaskConfig, TrainConfig, TrialConfig
    from bindscale.studies.scaling.trial import run_group

    torch.set_num_threads(1)
    trials = [TrialConfig(task=TaskConfig(), model=ModelConfig(width=width, depth=3),
                          train=TrainConfig(steps=steps, n_evals=1, precision=precision), seed=s) for s in range(seeds)]
    res = [run_group([t])[0] for t in trials]
    print(json.dumps({"seconds": sum(r.metrics["train_seconds"] for r in res) / seeds,
                      "r2": [r.metrics["r2_heldout"] for r in res],
                      "used": res[0].metrics.get("precision_used")}))


def run(width: int, precision: str, steps: int, seeds: int, capped: bool) -> dict:
    env = os.environ | (CAPPED if capped else {})
    out = subprocess.run([sys.executable, __file__, "--child", str(width), precision, str(steps), str(seeds)],
                         env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--widths", type=int, nargs="+", default=[64, 256])
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--json", type=Path, help="also write the figures here")
    ap.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        w, p, s, n = args.child
        return _child(int(w), p, int(s), int(n))
    print("machine:", machine())
    rows, out = [], {"machine": machine()}
    for w in args.widths:
        r = {(isa, p): run(w, p, args.steps, args.seeds, isa == "avx2") for isa in ("native", "avx2")
             for p in ("fp32", "bf16")}
        cross = max(abs(a - b) for a, b in zip(r["native", "fp32"]["r2"], r["avx2", "fp32"]["r2"]))
        mixed = max(abs(a - b) for a, b in zip(r["native", "bf16"]["r2"], r["native", "fp32"]["r2"]))
        rows.append([w] + [r[k]["seconds"] for k in (("native", "fp32"), ("native", "bf16"), ("avx2", "fp32"),
                                                     ("avx2", "bf16"))]
                    + [r["native", "fp32"]["seconds"] / r["native", "bf16"]["seconds"],
                       r["avx2", "fp32"]["seconds"] / r["avx2", "bf16"]["seconds"], cross, mixed])
        out[f"w{w}"] = {f"{i}_{p}": v for (i, p), v in r.items()}
    print_table(f"fp32 vs bf16, full ISA vs AVX2 only (1 thread, {args.seeds} seeds, {args.steps} steps, MLP depth 3)",
                ["width", "s/trial fp32", "s/trial bf16", "AVX2: fp32", "AVX2: bf16", "bf16 speed-up",
                 "AVX2 bf16 speed-up", "max |ΔR²| fp32 across ISAs", "max |ΔR²| bf16 vs fp32"], rows)
    if args.json:
        args.json.write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
