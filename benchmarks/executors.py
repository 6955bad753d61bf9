"""Executors side by side on the quick headline study, in one run.

Wall time of ``bindscale run --quick`` (training + records + report) under the
process pool with two workers, and under Ray with one and with two workers
(a local Ray instance, its start-up included, as a user would run it). Prints
the machine, the times and the ratios: Ray's throughput gain from a second
worker and its overhead against the process pool.

    python benchmarks/executors.py [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from common import machine, print_table  # noqa: E402

from bindscale.core.studyfile import resolve_study  # noqa: E402
from bindscale.run.runner import run_study  # noqa: E402
from rich.console import Console  # noqa: E402

QUIET = Console(file=open(os.devnull, "w"), stderr=False)


def timed(executor: str, workers: int) -> tuple[float, list]:
    study = resolve_study("scaling", quick=True)
    with tempfile.TemporaryDirectory() as d:
        t0 = time.perf_counter()
        summary = run_study(study, Path(d) / "run", device="cpu", workers=workers, console=QUIET, executor=executor)
        return time.perf_counter() - t0, [(v["claim"], v["verdict"]) for v in summary["verdicts"]]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--json", type=Path, help="write the figures to this JSON file")
    args = ap.parse_args()
    print("machine:", machine())
    runs = {}
    for executor, workers in (("process", 2), ("ray", 1), ("ray", 2)):
        runs[f"{executor}_{workers}"] = timed(executor, workers)
    rows = [[k, t, ", ".join(f"{c}={v}" for c, v in verdicts)] for k, (t, verdicts) in runs.items()]
    print_table("quick headline study: wall time (s) by executor", ["executor_workers", "seconds", "verdicts"], rows)
    fig = {
        "process_2_s": runs["process_2"][0], "ray_1_s": runs["ray_1"][0], "ray_2_s": runs["ray_2"][0],
        "ray_speedup_2_vs_1_workers": runs["ray_1"][0] / runs["ray_2"][0],
        "ray_overhead_vs_process": runs["ray_2"][0] / runs["process_2"][0],
        "same_verdicts": len({tuple(v) for _, v in runs.values()}) == 1,
    }
    print("\n" + "\n".join(f"{k}: {v:.3g}" if isinstance(v, float) else f"{k}: {v}" for k, v in fig.items()))
    if args.json:
        args.json.write_text(json.dumps(fig | {"machine": machine()}, indent=2))


if __name__ == "__main__":
    main()
