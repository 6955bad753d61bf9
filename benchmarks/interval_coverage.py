"""Coverage of the verdicts' 95% intervals where they are weakest: heavy-tailed and bimodal cells, at the seeds
the `-full` tiers use (8 and 10 per deciding cell) and at 16 and 24.

For each seed-noise distribution, draws ``--draws`` cells of n seeds, computes the interval a rule would read
(:func:`bindscale.verdicts.stats.mean_ci`, Hall's skewness-corrected t; :func:`bootstrap_ci`, the expanded
percentile bootstrap of the mean) and counts how often it covers the distribution's true mean. Prints a table
and writes JSON (``--json``). Pure NumPy/SciPy on one core; no training.

    python benchmarks/interval_coverage.py --draws 2000 --json benchmarks/results/interval_coverage.json
"""

from __future__ import annotations

import argparse
import json
import platform
import time

import numpy as np

from bindscale.core.machine import cpu_model
from bindscale.verdicts.stats import bootstrap_ci, mean_ci

#: name -> (sampler(rng, n), true mean). Accuracies in [0, 1] unless said.
DISTRIBUTIONS = {
    "normal": (lambda r, n: r.normal(0.5, 0.1, n), 0.5),
    "one seed in ten fails": (lambda r, n: np.where(r.random(n) < 0.1, r.normal(0.1, 0.02, n),
                                                    r.normal(0.9, 0.02, n)), 0.1 * 0.1 + 0.9 * 0.9),
    "lognormal(0, 1)": (lambda r, n: r.lognormal(0.0, 1.0, n), float(np.exp(0.5))),
    "1 - 0.02 lognormal(0, 1)": (lambda r, n: 1 - 0.02 * r.lognormal(0.0, 1.0, n), 1 - 0.02 * float(np.exp(0.5))),
    "bimodal, 30% succeed": (lambda r, n: np.where(r.random(n) < 0.3, r.normal(0.9, 0.03, n),
                                                   r.normal(0.05, 0.02, n)), 0.3 * 0.9 + 0.7 * 0.05),
    "bimodal, 50% succeed": (lambda r, n: np.where(r.random(n) < 0.5, r.normal(0.9, 0.03, n),
                                                   r.normal(0.05, 0.02, n)), 0.5 * 0.9 + 0.5 * 0.05),
}


def coverage(sample, truth: float, n: int, draws: int, n_boot: int, seed: int) -> dict[str, float]:
    rng = np.random.default_rng(seed)
    hit_t = hit_b = 0
    for i in range(draws):
        x = sample(rng, n)
        _, lo, hi = mean_ci(x)
        hit_t += lo <= truth <= hi
        _, lo, hi = bootstrap_ci(x, np.mean, n_boot=n_boot, seed=i)
        hit_b += lo <= truth <= hi
    return {"t_hall": hit_t / draws, "bootstrap_expanded": hit_b / draws}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--draws", type=int, default=2000)
    ap.add_argument("--n-boot", type=int, default=1000)
    ap.add_argument("--seeds", default="8,10,16,24")
    ap.add_argument("--json")
    a = ap.parse_args()
    ns = [int(s) for s in a.seeds.split(",")]
    t0 = time.perf_counter()
    rows = []
    print(f"cpu: {cpu_model()} | python {platform.python_version()} | draws {a.draws}, n_boot {a.n_boot}")
    print(f"{'distribution':28s} " + " ".join(f"n={n:<3d} t / boot " for n in ns))
    for name, (sample, truth) in DISTRIBUTIONS.items():
        line = f"{name:28s} "
        for n in ns:
            c = coverage(sample, truth, n, a.draws, a.n_boot, seed=n)
            rows.append({"distribution": name, "n": n, **c})
            line += f"{c['t_hall']:.3f} / {c['bootstrap_expanded']:.3f}  "
        print(line, flush=True)
    out = {"cpu": cpu_model(), "draws": a.draws, "n_boot": a.n_boot, "rows": rows,
           "seconds": round(time.perf_counter() - t0, 1)}
    if a.json:
        with open(a.json, "w") as fh:
            json.dump(out, fh, indent=1)


if __name__ == "__main__":
    main()
