"""Coverage of the ceiling asymptote's 95% interval at the default design, 5 sizes × 8 seeds.

Planted saturating curve ``a − b·x^−c`` with a = 0.58, b = 0.3, c = 0.9; seed noise of sd 0.03, normal, skewed
(centred Gamma(2), skewness 1.4) or growing with size (sd 0.015 … 0.06: the extrapolated end is the noisiest).
The plain percentile interval covered 0.87 / 0.90 / 0.85 (100, 100, 60 tables, 200 resamples); the expanded
percentile interval (:func:`bindscale.verdicts.stats.expanded_confidence` at 8 seeds) 0.92 / 0.96 / 0.93 on those tables
and 0.910 / 0.950 / 0.890 on this test's (100 tables each, 200 resamples; ~15 min on a shared 2-core CPU). A Wald
interval from the fit's covariance (t, 37 df) covers 0.95 / 0.97 with constant noise but 0.87 when it grows
with size, so the bootstrap stays. Each table refits the curve ``n_boot`` times (~5 ms a fit): the coverage
runs are slow-marked; the default test checks that the interval is read at the expanded level.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from bindscale.verdicts.stats import expanded_confidence, percentile_interval
from bindscale.studies.ceiling.fits import compare, fit_saturating, saturating

SIZES = np.array([1e5, 2e5, 4e5, 8e5, 1.6e6])
N_SEEDS = 8
A, B, C = 0.58, 0.3, 0.9


def _table(rng, noise: str) -> tuple[np.ndarray, np.ndarray]:
    x = np.repeat(SIZES, N_SEEDS)
    if noise == "normal":
        e = rng.normal(0, 0.03, x.size)
    elif noise == "skewed":
        e = (rng.gamma(2.0, 1.0, x.size) - 2.0) / math.sqrt(2.0) * 0.03
    else:  # "growing": heteroscedastic, largest at the largest size
        e = rng.normal(0, 1, x.size) * np.repeat([0.015, 0.02, 0.03, 0.04, 0.06], N_SEEDS)
    return x, saturating(x / x.min(), A, B, C) + e


def test_asymptote_interval_is_the_expanded_percentile_interval_of_the_refits():
    """Same resamples as :func:`compare` (groups = sizes, seed 0), read at the expanded level for 8 seeds."""
    from bindscale.verdicts.stats import _draw_indices

    x, y = _table(np.random.default_rng(3), "normal")
    n_boot = 60
    a, lo, hi = compare(x, y, n_boot=n_boot, seed=0)["asymptote"]
    sat = fit_saturating(x, y)
    groups = [y[x == s] for s in SIZES]
    idx = _draw_indices(groups, n_boot, 0)
    reps = [fit_saturating(x, np.concatenate([g[i[b]] for g, i in zip(groups, idx)]), start=sat.params).params["a"]
            for b in range(n_boot)]
    assert (lo, hi) == pytest.approx(percentile_interval(reps, expanded_confidence(N_SEEDS)))
    plain = percentile_interval(reps, 0.95)
    assert lo <= plain[0] <= plain[1] <= hi and a == pytest.approx(sat.params["a"])


@pytest.mark.slow
@pytest.mark.parametrize("noise", ["normal", "skewed", "growing"])
def test_asymptote_interval_covers_at_five_sizes_by_eight_seeds(noise):
    tables, n_boot = 100, 200
    hits = 0
    for k in range(tables):
        x, y = _table(np.random.default_rng(5000 + k), noise)
        _, lo, hi = compare(x, y, n_boot=n_boot, seed=k)["asymptote"]
        hits += lo <= A <= hi
    cov = hits / tables
    se = math.sqrt(0.95 * 0.05 / tables)
    print(f"asymptote interval coverage ({noise}): {cov:.3f} ({tables} tables, {n_boot} resamples)")
    assert 0.92 - 2 * se <= cov <= 0.98 + 2 * se
