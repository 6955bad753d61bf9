"""Coverage of the length_transfer gain interval on zero-inflated / bimodal seed draws.

The deciding cells of the length_transfer study hold per-seed exact match beyond L: the main task
alone is mostly exactly 0 (zero-inflated), co-trained with a related auxiliary it is bimodal (a few
seeds transfer, most do not: Cai et al. 2025 report strong seed instability). This script draws such
cells (the science review's distributions, /tmp/rv_lt/t4.py) and measures how often a 95% interval
for the difference of means covers the true difference, for Welch's interval
(:func:`bindscale.verdicts.stats.mean_diff_ci`, what the verdicts use) and for the percentile and BCa seed
bootstraps of ``scipy.stats.bootstrap``.

Run: ``PYTHONPATH=src python benchmarks/length_transfer_coverage.py [reps]`` (default 1000 reps;
~1 min on one core). Results (1000 reps, seed 0) are quoted in
:mod:`bindscale.studies.length_transfer.verdicts`.
"""

from __future__ import annotations

import sys
import warnings

import numpy as np
from scipy import stats as sps

from bindscale.verdicts.stats import mean_diff_ci


def bimodal(rng, n, p, hi=0.8, lo=0.02):
    """A share ``p`` of seeds transfer (exact match ~0.8), the rest stay near 0.02."""
    k = rng.random(n) < p
    return np.clip(np.where(k, rng.normal(hi, 0.1, n), rng.normal(lo, 0.02, n)), 0, 1)


def zero_inflated(rng, n, p0=0.6):
    """Main task alone: exactly 0 in a share ``p0`` of seeds, else a small Beta(1, 15) value."""
    return np.where(rng.random(n) < p0, 0.0, rng.beta(1, 15, n))


def _boot(a, b, method, rng):
    if np.ptp(np.concatenate([a, b])) == 0:
        return np.nan, np.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = sps.bootstrap((a, b), lambda x, y, axis=-1: x.mean(axis) - y.mean(axis), n_resamples=999,
                          method=method, vectorized=True, random_state=rng)
    return r.confidence_interval.low, r.confidence_interval.high


def coverage(n: int, p: float, reps: int, seed: int = 0) -> dict[str, float]:
    big = np.random.default_rng(9)
    truth = bimodal(big, 2_000_000, p).mean() - zero_inflated(big, 2_000_000).mean()
    rng = np.random.default_rng(seed)
    hits = {"welch": [], "percentile": [], "bca": []}
    for _ in range(reps):
        a, b = bimodal(rng, n, p), zero_inflated(rng, n)
        _, lo, hi = mean_diff_ci(a, b)
        hits["welch"].append(lo <= truth <= hi)
        for m in ("percentile", "bca"):
            lo, hi = _boot(a, b, m, rng)
            if np.isfinite(lo):
                hits[m].append(lo <= truth <= hi)
    return {k: float(np.mean(v)) for k, v in hits.items()} | {"truth": float(truth)}


def main(reps: int = 1000) -> None:
    for n in (8, 16):
        for p in (0.3, 0.1):
            c = coverage(n, p, reps)
            print(f"n={n:2d} seeds per cell, transferring share {p}: true gain {c['truth']:.3f}; coverage "
                  f"Welch {c['welch']:.3f}, percentile {c['percentile']:.3f}, BCa {c['bca']:.3f}", flush=True)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1000)
