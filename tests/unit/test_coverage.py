"""Simulated coverage of the verdicts' 95% intervals at the studies' sample sizes (verdicts issue, item 5).

Every deciding cell of a default study has 8 or more seeds. At that n the intervals of ``bindscale.stats``
must cover the true value 92–98% of the time for normal data and for skewed data (Gamma(4): skewness 1;
Beta(5, 2): skewness −0.6, like R² near its ceiling). A percentile bootstrap of 8 values covers 86–89% here
(and about 75% at 3 seeds), which is why means use t intervals. Seeded: the same draws every run.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from bindscale.stats import correlation_ci, mean_ci, mean_diff_ci, strata_mean_ci

N_SEEDS = 8
REPS = 3000
DISTRIBUTIONS = {
    "normal": (lambda rng, n: rng.normal(0.7, 0.1, n), 0.7),
    "gamma4": (lambda rng, n: rng.gamma(4.0, 1.0, n), 4.0),
    "beta52": (lambda rng, n: rng.beta(5.0, 2.0, n), 5.0 / 7.0),
}


def coverage(draw_interval, truth: float, seed: int, reps: int = REPS) -> float:
    rng = np.random.default_rng(seed)
    hits = 0
    for _ in range(reps):
        _, lo, hi = draw_interval(rng)
        hits += lo <= truth <= hi
    return hits / reps


@pytest.mark.parametrize("dist", list(DISTRIBUTIONS))
def test_mean_interval_covers_at_eight_seeds(dist):
    draw, mu = DISTRIBUTIONS[dist]
    assert 0.92 <= coverage(lambda rng: mean_ci(draw(rng, N_SEEDS)), mu, seed=1) <= 0.98


@pytest.mark.parametrize("dist", list(DISTRIBUTIONS))
def test_difference_interval_covers_at_eight_versus_eight_seeds(dist):
    draw, _ = DISTRIBUTIONS[dist]
    cov = coverage(lambda rng: mean_diff_ci(draw(rng, N_SEEDS), draw(rng, N_SEEDS)), 0.0, seed=2)
    assert 0.92 <= cov <= 0.98


@pytest.mark.parametrize("dist", list(DISTRIBUTIONS))
def test_mean_of_cell_means_interval_covers_with_unequal_cells(dist):
    draw, mu = DISTRIBUTIONS[dist]
    cov = coverage(lambda rng: strata_mean_ci([draw(rng, 8), draw(rng, 10), draw(rng, 12)]), mu, seed=3)
    assert 0.92 <= cov <= 0.98


@pytest.mark.slow
def test_spearman_pairs_bootstrap_covers_at_forty_trials():
    """The decodability claim's correlation pools ~40 or more trials; bivariate normal, rho 0.5."""
    rho = 0.5
    truth = 6.0 / math.pi * math.asin(rho / 2.0)  # Spearman's rho of a bivariate normal (Kendall & Gibbons)
    cov = coverage(lambda rng: correlation_ci(*rng.multivariate_normal([0, 0], [[1, rho], [rho, 1]], 40).T,
                                              n_boot=1000, seed=int(rng.integers(2**31))), truth, seed=4, reps=400)
    assert 0.92 <= cov <= 0.98
