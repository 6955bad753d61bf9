"""Coverage of the depth rules' intervals at n = 8 seeds on bounded, skewed and bimodal draws
(review item 6). Slow: ``pytest -m slow tests/studies/depth/test_coverage.py``.

The numbers measured here (seed 0) are the ones stated in :mod:`bindscale.studies.depth.verdicts`;
the test checks that the t interval's coverage stays where the docstring says and that a seed
bootstrap (``scipy.stats.bootstrap``, BCa and percentile) does not cover better, which is why the
rules keep the t / Welch–Satterthwaite intervals and state their undercoverage instead.
"""

import numpy as np
import pytest
from scipy import stats

from bindscale.verdicts.stats import mean_ci, strata_mean_ci

N = 8


def _mix(rng, n):
    """Bimodal: 15% of seeds succeed (exact match ~Beta(8, 2)), the rest fail (~Beta(1, 50))."""
    ok = rng.random(n) < 0.15
    return np.where(ok, rng.beta(8, 2, n), rng.beta(1, 50, n))


DRAWS = {
    "beta_0.3_3": (lambda rng, n: rng.beta(0.3, 3, n), 0.3 / 3.3),
    "beta_0.2_5": (lambda rng, n: rng.beta(0.2, 5, n), 0.2 / 5.2),
    "bimodal_15pct": (_mix, 0.15 * 0.8 + 0.85 / 51),
    "beta_5_5": (lambda rng, n: rng.beta(5, 5, n), 0.5),
}


def coverage(draw, truth, interval, reps, seed=0):
    rng = np.random.default_rng(seed)
    hits = 0
    for _ in range(reps):
        lo, hi = interval(draw, rng)
        hits += lo <= truth <= hi
    return hits / reps


def _t(draw, rng):
    return mean_ci(draw(rng, N))[1:]


def _boot(method):
    def f(draw, rng):
        ci = stats.bootstrap((draw(rng, N),), np.mean, n_resamples=999, method=method, random_state=rng)
        return ci.confidence_interval.low, ci.confidence_interval.high
    return f


#: Measured t coverage (4000 draws; nominal 0.95) and the band this test allows around it. ``mean_ci``
#: is Hall's skewness-corrected t (:mod:`bindscale.verdicts.stats`): Student's t measured 0.83 and
#: 0.77 on the two skewed draws, Hall's 0.91 and 0.88; the bimodal cell stays at 0.73 under both.
T_COVERAGE = {"beta_0.3_3": 0.91, "beta_0.2_5": 0.88, "bimodal_15pct": 0.73, "beta_5_5": 0.95}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(DRAWS))
def test_single_cell_t_interval_coverage_at_8_seeds(name):
    draw, mu = DRAWS[name]
    got = coverage(draw, mu, _t, 4000)
    assert abs(got - T_COVERAGE[name]) < 0.03, (name, got)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["beta_0.3_3", "beta_0.2_5", "bimodal_15pct"])
def test_seed_bootstrap_does_not_cover_better_than_t(name):
    draw, mu = DRAWS[name]
    t = coverage(draw, mu, _t, 600, seed=1)
    for method in ("BCa", "percentile"):
        assert coverage(draw, mu, _boot(method), 600, seed=1) <= t + 0.03, (name, method)


@pytest.mark.slow
def test_welch_strata_coverage_of_the_depth_difference():
    """The depth rule's deep − shallow difference: 2 groups (add-jump, one budget) and 4 groups
    (length, two budgets), 8 seeds each, on skewed and bimodal draws."""
    rng = np.random.default_rng(2)
    b = lambda n: rng.beta(0.3, 3, n)  # noqa: E731
    m = lambda n: _mix(rng, n)  # noqa: E731
    cases = {
        "2 groups Beta(.3,3) vs Beta(.2,8)": (lambda: strata_mean_ci([b(N), -rng.beta(0.2, 8, N)], [1, 1]),
                                              0.3 / 3.3 - 0.2 / 8.2, 0.88),
        "4 groups Beta(.3,3), no effect": (lambda: strata_mean_ci([b(N), -b(N), b(N), -b(N)], [0.5] * 4), 0.0, 0.95),
        "2 groups bimodal, no effect": (lambda: strata_mean_ci([m(N), -m(N)], [1, 1]), 0.0, 0.985),
        "2 groups bimodal deep vs failing shallow": (lambda: strata_mean_ci([m(N), -rng.beta(1, 50, N)], [1, 1]),
                                                     0.15 * 0.8 + 0.85 / 51 - 1 / 51, 0.73),
    }
    for name, (f, truth, expect) in cases.items():
        hits = sum(lo <= truth <= hi for _, lo, hi in (f() for _ in range(4000))) / 4000
        print(name, hits)
        assert abs(hits - expect) < 0.03, (name, hits)


def test_the_rules_docstring_states_the_measured_coverage():
    """Fast companion of the slow simulation: the verdicts module states the coverage measured here."""
    from bindscale.studies.depth import verdicts

    doc = verdicts.__doc__
    assert "tests/studies/depth/test_coverage.py" in doc
    for measured in ("0.91", "0.88", "0.72", "0.89", "0.94", "0.976"):
        assert measured in doc, measured
