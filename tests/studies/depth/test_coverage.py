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

from bindscale.verdicts.stats import bounded_strata_mean_ci, mean_ci, strata_mean_ci

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


def _difference_cases(rng, n):
    """Deep − shallow tables of ``n`` seeds per cell: (groups, weights, true difference) makers."""
    b = lambda: rng.beta(0.3, 3, n)  # noqa: E731
    m = lambda: _mix(rng, n)  # noqa: E731
    m15 = 0.15 * 0.8 + 0.85 / 51
    return {
        "2 groups Beta(.3,3) vs Beta(.2,8)": (lambda: ([b(), rng.beta(0.2, 8, n)], [1, -1]), 0.3 / 3.3 - 0.2 / 8.2),
        "4 groups Beta(.3,3), no effect": (lambda: ([b(), b(), b(), b()], [0.5, -0.5, 0.5, -0.5]), 0.0),
        "2 groups bimodal, no effect": (lambda: ([m(), m()], [1, -1]), 0.0),
        "bimodal deep vs failing shallow": (lambda: ([m(), rng.beta(1, 50, n)], [1, -1]), m15 - 1 / 51),
        # The review's case: a unimodal deep member at the mean of a bimodal shallow one (no effect);
        # a shallow cell with no successful seed (0.85^8 = 27% of tables) read as certain failure.
        "unimodal deep vs bimodal shallow, no effect": (
            lambda: ([rng.beta(2, 2 * (1 - m15) / m15, n), m()], [1, -1]), 0.0),
        "Beta(8,2) deep vs failing shallow": (lambda: ([rng.beta(8, 2, n), rng.beta(1, 50, n)], [1, -1]),
                                              0.8 - 1 / 51),
    }


def simulate_difference(n: int, reps: int, seed: int = 2) -> dict[str, dict[str, float]]:
    """Coverage and the rate of "deeper is better" (lower bound > 0, the rule's margin) of the Welch
    interval (:func:`strata_mean_ci`) and the bounded one the rule uses (:func:`bounded_strata_mean_ci`)."""
    rng = np.random.default_rng(seed)
    out = {}
    for name, (make, truth) in _difference_cases(rng, n).items():
        hits = {"welch": [0, 0], "bounded": [0, 0]}
        for _ in range(reps):
            groups, weights = make()
            for method, (_, lo, hi) in (("welch", strata_mean_ci(groups, weights)),
                                        ("bounded", bounded_strata_mean_ci(groups, weights))):
                hits[method][0] += lo <= truth <= hi
                hits[method][1] += lo > 0
        out[name] = {f"{m}_{k}": v / reps for m, (c, s) in hits.items() for k, v in (("coverage", c), ("above_0", s))}
        out[name]["truth"] = truth
    return out


#: Measured (4000 tables each, seed 2): Welch coverage, bounded coverage, bounded rate of "deeper is better".
#: At 8 seeds Welch reads the no-effect review case as "deeper is better" in 26% of tables (33% at 5).
MEASURED = {
    5: {"2 groups Beta(.3,3) vs Beta(.2,8)": (0.858, 1.00, 0.00),
        "4 groups Beta(.3,3), no effect": (0.959, 1.00, 0.00),
        "2 groups bimodal, no effect": (0.997, 1.00, 0.00),
        "bimodal deep vs failing shallow": (0.559, 1.00, 0.00),
        "unimodal deep vs bimodal shallow, no effect": (0.669, 1.00, 0.00),
        "Beta(8,2) deep vs failing shallow": (0.938, 1.00, 1.00)},
    8: {"2 groups Beta(.3,3) vs Beta(.2,8)": (0.888, 1.00, 0.00),
        "4 groups Beta(.3,3), no effect": (0.94, 1.00, 0.00),
        "2 groups bimodal, no effect": (0.976, 1.00, 0.00),
        "bimodal deep vs failing shallow": (0.72, 1.00, 0.00),
        "unimodal deep vs bimodal shallow, no effect": (0.737, 1.00, 0.00),
        "Beta(8,2) deep vs failing shallow": (0.943, 1.00, 1.00)},
}


@pytest.mark.slow
@pytest.mark.parametrize("n", sorted(MEASURED))
def test_depth_difference_coverage_welch_against_bounded(n):
    """The rule's deep − shallow interval covers at least 0.93 on every draw, Welch's does not, and the
    bounded interval still finds a clear effect; the figures are the ones the verdicts module states."""
    got = simulate_difference(n, 4000)
    for name, (welch, bounded, above) in MEASURED[n].items():
        g = got[name]
        print(n, name, {k: round(v, 3) for k, v in g.items()})
        assert abs(g["welch_coverage"] - welch) < 0.03, (name, g)
        assert abs(g["bounded_coverage"] - bounded) < 0.03 and g["bounded_coverage"] >= 0.93, (name, g)
        assert abs(g["bounded_above_0"] - above) < 0.03, (name, g)


def test_the_bounded_interval_stops_the_false_deeper_is_better_at_8_seeds():
    """Fast form of the review's case (400 tables): no effect, bimodal shallow member; Welch says "deeper
    is better" in about a quarter of tables, the rule's interval in none."""
    got = simulate_difference(8, 400, seed=5)["unimodal deep vs bimodal shallow, no effect"]
    assert got["welch_above_0"] > 0.15 and got["bounded_above_0"] <= 0.01, got


def test_the_rules_docstring_states_the_measured_coverage():
    """Fast companion of the slow simulation: the verdicts module states the coverage measured here."""
    from bindscale.studies.depth import verdicts

    doc = verdicts.__doc__
    assert "tests/studies/depth/test_coverage.py" in doc
    for measured in ("0.91", "0.88", "0.72", "0.89", "0.94", "0.976", "0.737", "26%", "0.74", "0.90"):
        assert measured in doc, measured


#: The bounded interval's power against a failing shallow member (Beta(1, 50)): the rate of "deeper is
#: better" for a deep member ~ Beta(10·mu, 10·(1 − mu)), 1000 tables each (seed 3), as the module states.
POWER = {(8, 0.4): 0.74, (5, 0.4): 0.01, (12, 0.4): 1.00, (8, 0.3): 0.09, (12, 0.3): 0.90}


@pytest.mark.slow
def test_the_bounded_interval_power_is_what_the_module_states():
    rng = np.random.default_rng(3)
    for (n, mu), expect in POWER.items():
        found = sum(bounded_strata_mean_ci([rng.beta(10 * mu, 10 * (1 - mu), n), rng.beta(1, 50, n)], [1, -1])[1] > 0
                    for _ in range(1000)) / 1000
        assert abs(found - expect) < 0.05, (n, mu, found)
