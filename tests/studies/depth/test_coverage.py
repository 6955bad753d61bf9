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
        # U-shaped and two-point draws without effect (a seed solves the split or it does not): the adjustment's
        # pseudo-seeds at 0 and 1 add little where the seeds already sit at the bounds.
        "U Beta(.5,.5), no effect": (lambda: ([rng.beta(0.5, 0.5, n), rng.beta(0.5, 0.5, n)], [1, -1]), 0.0),
        "U Beta(.1,.1), no effect": (lambda: ([rng.beta(0.1, 0.1, n), rng.beta(0.1, 0.1, n)], [1, -1]), 0.0),
        "Bernoulli(.5), no effect": (lambda: ([(rng.random(n) < 0.5) * 1.0, (rng.random(n) < 0.5) * 1.0], [1, -1]),
                                     0.0),
    }


#: The draws on which the bounded interval is tightest against its nominal level (measured at 5 to 48 seeds).
AT_THE_BOUNDS = ("U Beta(.5,.5), no effect", "U Beta(.1,.1), no effect", "Bernoulli(.5), no effect")


def simulate_difference(n: int, reps: int, seed: int = 2, names=None) -> dict[str, dict[str, float]]:
    """Coverage and the rate of "deeper is better" (lower bound > 0, the rule's margin) of the Welch
    interval (:func:`strata_mean_ci`) and the bounded one the rule uses (:func:`bounded_strata_mean_ci`);
    ``names``: the cases to run (every one by default)."""
    rng = np.random.default_rng(seed)
    out = {}
    for name, (make, truth) in _difference_cases(rng, n).items():
        if names is not None and name not in names:
            continue
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
        "Beta(8,2) deep vs failing shallow": (0.938, 1.00, 1.00),
        "U Beta(.5,.5), no effect": (0.975, 0.997, 0.0015),
        "U Beta(.1,.1), no effect": (0.9945, 0.984, 0.0065),
        "Bernoulli(.5), no effect": (0.998, 0.9785, 0.014)},
    8: {"2 groups Beta(.3,3) vs Beta(.2,8)": (0.888, 1.00, 0.00),
        "4 groups Beta(.3,3), no effect": (0.94, 1.00, 0.00),
        "2 groups bimodal, no effect": (0.976, 0.999, 0.0003),
        "bimodal deep vs failing shallow": (0.72, 1.00, 0.0025),
        "unimodal deep vs bimodal shallow, no effect": (0.737, 1.00, 0.00),
        "Beta(8,2) deep vs failing shallow": (0.943, 0.998, 1.00),
        # Where the seeds sit at the bounds the pseudo-seeds add little: 0.974-0.987, "deeper is better" in 0.6-1.4%.
        "U Beta(.5,.5), no effect": (0.972, 0.987, 0.0063),
        "U Beta(.1,.1), no effect": (0.9805, 0.974, 0.0138),
        "Bernoulli(.5), no effect": (0.991, 0.9758, 0.0132)},
    # The interval tends to its nominal level with more seeds: 0.9455-0.973, "deeper is better" in 1.35-2.8%.
    16: {"U Beta(.5,.5), no effect": (0.9585, 0.9728, 0.0135),
         "U Beta(.1,.1), no effect": (0.9643, 0.9617, 0.0163),
         "Bernoulli(.5), no effect": (0.9745, 0.95, 0.028)},
    24: {"U Beta(.5,.5), no effect": (0.9605, 0.9683, 0.015),
         "U Beta(.1,.1), no effect": (0.9567, 0.9565, 0.024),
         "Bernoulli(.5), no effect": (0.9673, 0.962, 0.0195)},
    48: {"U Beta(.5,.5), no effect": (0.9555, 0.9587, 0.0205),
         "U Beta(.1,.1), no effect": (0.9555, 0.9537, 0.025),
         "Bernoulli(.5), no effect": (0.9455, 0.9455, 0.0267)},
}


@pytest.mark.slow
@pytest.mark.parametrize("n", sorted(MEASURED))
def test_depth_difference_coverage_welch_against_bounded(n):
    """The rule's deep − shallow interval covers at least 0.93 on every draw, Welch's does not, and the
    bounded interval still finds a clear effect; the figures are the ones the verdicts module states."""
    got = simulate_difference(n, 4000, names=set(MEASURED[n]))
    for name, (welch, bounded, above) in MEASURED[n].items():
        g = got[name]
        print(n, name, {k: round(v, 4) for k, v in g.items()})
        assert abs(g["welch_coverage"] - welch) < 0.03, (name, g)
        assert abs(g["bounded_coverage"] - bounded) < 0.015 and g["bounded_coverage"] >= 0.94, (name, g)
        assert abs(g["bounded_above_0"] - above) < 0.01, (name, g)
        if name in AT_THE_BOUNDS and n >= 8:  # the ranges the verdicts module states
            low, high, most = (0.97, 0.99, 0.015) if n == 8 else (0.94, 0.975, 0.03)
            assert low <= g["bounded_coverage"] <= high and g["bounded_above_0"] <= most, (name, g)


def test_the_bounded_interval_stops_the_false_deeper_is_better_at_8_seeds():
    """Fast form of the review's case (400 tables): no effect, bimodal shallow member; Welch says "deeper
    is better" in about a quarter of tables, the rule's interval in none."""
    case = "unimodal deep vs bimodal shallow, no effect"
    got = simulate_difference(8, 400, seed=5, names={case})[case]
    assert got["welch_above_0"] > 0.15 and got["bounded_above_0"] <= 0.01, got


def test_the_rules_docstring_states_the_measured_coverage():
    """Fast companion of the slow simulation: the verdicts module states the coverage measured here."""
    from bindscale.studies.depth import verdicts

    doc = " ".join(verdicts.__doc__.split())
    assert "tests/studies/depth/test_coverage.py" in doc
    for measured in ("0.91", "0.88", "0.72", "0.89", "0.94", "0.976", "0.737", "26%", "0.76 of tables at 8 seeds",
                     "0.11 (0.89 at 12)", "0.36 at 8 seeds",
                     # the bounded interval on U-shaped and Bernoulli draws, by seeds
                     "0.974-0.987 at 8 seeds", "0.9455-0.973 at 16 to 48", "0.6-1.4% of tables at 8 seeds",
                     "1.35-2.8% at 16 to 48",
                     # the Bonferroni level over a split's families
                     "4.5%", "2.05%",
                     # Lake & Baroni's single cell: Hall's t against the bounded interval
                     "22.8%", "5.8%", "0.4%"):
        assert measured in doc, measured
    assert "at most 0.3%" not in doc and "0.998-1.00 on all six draws" not in doc


#: The bounded interval's power against a failing shallow member (Beta(1, 50)): the rate of "deeper is
#: better" for a deep member ~ Beta(10·mu, 10·(1 − mu)), 1000 tables each (seed 3), as the module states.
#: The third entry is the interval's level: 0.95 for a split of one family, 0.975 for each of two (Bonferroni).
POWER = {(8, 0.4, 0.95): 0.76, (5, 0.4, 0.95): 0.004, (12, 0.4, 0.95): 1.00, (8, 0.3, 0.95): 0.11,
         (12, 0.3, 0.95): 0.89, (8, 0.4, 0.975): 0.36, (8, 0.5, 0.975): 0.94, (12, 0.4, 0.975): 1.00}


@pytest.mark.slow
def test_the_bounded_interval_power_is_what_the_module_states():
    rng = np.random.default_rng(3)
    for (n, mu, level), expect in POWER.items():
        found = sum(bounded_strata_mean_ci([rng.beta(10 * mu, 10 * (1 - mu), n), rng.beta(1, 50, n)], [1, -1],
                                           confidence=level)[1] > 0 for _ in range(1000)) / 1000
        print(n, mu, level, found)
        assert abs(found - expect) < 0.05, (n, mu, level, found)


# ----------------------------------------------------------- the per-family rule: Bonferroni over a split's families --

def split_decision(families, margin: float = 0.0, bonferroni: bool = True) -> str:
    """How the depth rule decides one split from its families' (deep seeds, shallow seeds), without the data checks:
    each family's bounded interval at ``1 − 0.05/F`` (0.95 each without ``bonferroni``); "not_supported" when a family
    lies below ``margin``, "supported" when every one lies above, else "inconclusive"."""
    level = 1 - 0.05 / len(families) if bonferroni else 0.95
    found = [bounded_strata_mean_ci([d, s], [1, -1], confidence=level) for d, s in families]
    if any(hi < margin for _, _, hi in found):
        return "not_supported"
    return "supported" if all(lo > margin for _, lo, _ in found) else "inconclusive"


FAMILY_DRAWS = {
    "Bernoulli(.5)": lambda rng, n: (rng.random(n) < 0.5) * 1.0,
    "U Beta(.5,.5)": lambda rng, n: rng.beta(0.5, 0.5, n),
    "bimodal_15pct": _mix,
}


def simulate_families(n_families: int, reps: int, n: int = N, seed: int = 4) -> dict[str, dict[str, float]]:
    """Rates of "supported" and "not supported" on one split of ``n_families`` families without any effect (deep and
    shallow members from the same draw), with and without the Bonferroni level."""
    rng = np.random.default_rng(seed)
    out = {}
    for name, draw in FAMILY_DRAWS.items():
        counts = {True: {"supported": 0, "not_supported": 0, "inconclusive": 0},
                  False: {"supported": 0, "not_supported": 0, "inconclusive": 0}}
        for _ in range(reps):
            fams = [(draw(rng, n), draw(rng, n)) for _ in range(n_families)]
            for bonferroni in (True, False):
                counts[bonferroni][split_decision(fams, bonferroni=bonferroni)] += 1
        out[name] = {f"{'bonferroni' if b else 'each_at_95'}_{k}": v / reps for b, c in counts.items()
                     for k, v in c.items() if k != "inconclusive"}
    return out


#: Measured (4000 splits each, seed 4, 8 seeds a member): false "not supported" and false "supported" of a split of F
#: families without effect, Bonferroni (the rule) against every family at 95%.
#: Discrete draws move little between the two levels (Bernoulli at F = 2: the same 2.05%); by F = 4 every family at
#: 95% says "not supported" in up to 4.5% of splits without effect, the Bonferroni levels in at most 1%.
FAMILY_RATES = {
    1: {"Bernoulli(.5)": (0.0105, 0.0112, 0.0105, 0.0112), "U Beta(.5,.5)": (0.008, 0.007, 0.008, 0.007),
        "bimodal_15pct": (0.0008, 0.0018, 0.0008, 0.0018)},
    2: {"Bernoulli(.5)": (0.0205, 0.0, 0.0205, 0.0), "U Beta(.5,.5)": (0.0055, 0.0, 0.015, 0.0),
        "bimodal_15pct": (0.0003, 0.0, 0.0018, 0.0)},
    4: {"Bernoulli(.5)": (0.0097, 0.0, 0.0447, 0.0), "U Beta(.5,.5)": (0.0035, 0.0, 0.0225, 0.0),
        "bimodal_15pct": (0.0003, 0.0, 0.003, 0.0)},
}


@pytest.mark.slow
@pytest.mark.parametrize("n_families", sorted(FAMILY_RATES))
def test_more_families_do_not_raise_the_false_verdict_rate(n_families):
    got = simulate_families(n_families, 4000)
    for name, (ns_b, s_b, ns_95, s_95) in FAMILY_RATES[n_families].items():
        g = got[name]
        print(n_families, name, {k: round(v, 4) for k, v in g.items()})
        for key, want in (("bonferroni_not_supported", ns_b), ("bonferroni_supported", s_b),
                          ("each_at_95_not_supported", ns_95), ("each_at_95_supported", s_95)):
            assert abs(g[key] - want) < 0.006, (name, key, g)
        assert g["bonferroni_not_supported"] <= 0.025 and g["bonferroni_supported"] <= 0.025, (name, g)


#: Measured (seed 31): "not supported" in this many of the 100 tables, the rest inconclusive (the 100k family's
#: interval at 97.5%, the Bonferroni level of two families, seldom clears 0 for a gap of 0.3 at 8 seeds).
RULE_CONTRADICTS = 4


@pytest.mark.slow
def test_the_rule_does_not_average_a_contradicting_family_away():
    """The review's table, 100 times through the rule itself: deep 0.95 against shallow 0.05 at 25k, deep 0.30 against
    shallow 0.60 at 100k (sd 0.05, 8 seeds, both splits). Averaged over the budgets it read "supported" in 100 of 100;
    the 100k family alone read "not supported" in 85."""
    import pandas as pd

    from bindscale.models.shapes import shape_for_budget
    from bindscale.studies.depth import verdicts as V

    rng = np.random.default_rng(31)
    found = {"supported": 0, "not_supported": 0, "inconclusive": 0}
    for _ in range(100):
        rows = []
        for split in ("length", "addprim_jump"):
            for budget, members in ((25_000, {1: 0.05, 8: 0.95}), (100_000, {1: 0.60, 8: 0.30})):
                for layers, mean in members.items():
                    p = shape_for_budget(budget, layers, 2).n_params
                    rows += [{"status": "ok", "trial_id": f"{split}-{budget}-{layers}-{s}", "split": split,
                              "budget": budget, "layers": layers, "pos": "rope", "seed": s, "n_params_nonembed": p,
                              "n_params": p, "acc_test": float(np.clip(mean + 0.05 * rng.standard_normal(), 0, 1)),
                              "acc_id": 0.99} for s in range(8)]
        out = V.deeper_composes_better_at_equal_params(V.prepare_rows(pd.DataFrame(rows)), {"margin": 0.0})
        found[out.outcome] += 1
    print(found)
    assert found["supported"] == 0 and abs(found["not_supported"] - RULE_CONTRADICTS) <= 3, found


# ----------------------------------------------------------- Lake & Baroni's rule: one cell, bounded --

def _two_point(p, hi=0.95, lo=0.05):
    """Bimodal seeds: a share ``p`` solves the split (about ``hi``), the rest fail (about ``lo``); mean
    ``p·hi + (1 − p)·lo``."""
    def draw(rng, n):
        ok = rng.random(n) < p
        return np.clip(np.where(ok, hi, lo) + 0.02 * rng.standard_normal(n), 0, 1)
    return draw


def simulate_one_cell(n: int, reps: int, seed: int = 6) -> dict[str, dict[str, float]]:
    """Hall's t (:func:`mean_ci`, the rule's interval before) against the bounded one (:func:`bounded_mean_ci`, the
    rule's now) on one cell of ``n`` seeds: coverage of the true mean, and the rate at which the cell reads "fails"
    (upper bound below a threshold) with the true mean at or above that threshold."""
    from bindscale.verdicts.stats import bounded_mean_ci

    rng = np.random.default_rng(seed)
    cases = {name: (draw, mu, None) for name, (draw, mu) in DRAWS.items()}
    cases |= {"U Beta(.5,.5)": (lambda rng, n: rng.beta(0.5, 0.5, n), 0.5, None),
              "Bernoulli(.5)": (lambda rng, n: (rng.random(n) < 0.5) * 1.0, 0.5, None),
              # The review's tables: bimodal cells at the threshold, and above it.
              "bimodal mean 0.2, threshold 0.2": (_two_point(1 / 6), 0.2, 0.2),
              "bimodal mean 0.32, threshold 0.2": (_two_point(0.3), 0.32, 0.2),
              "bimodal mean 0.5, threshold 0.5": (_two_point(0.5), 0.5, 0.5)}
    out = {}
    for name, (draw, mu, thr) in cases.items():
        hits = {"hall": [0, 0], "bounded": [0, 0]}
        for _ in range(reps):
            x = draw(rng, n)
            for method, (_, lo, hi) in (("hall", mean_ci(x)), ("bounded", bounded_mean_ci(x))):
                hits[method][0] += lo <= mu <= hi
                hits[method][1] += thr is not None and hi < thr
        out[name] = {f"{m}_{k}": v / reps for m, (c, f) in hits.items() for k, v in (("coverage", c), ("fails", f))}
    return out


#: Measured (4000 cells each, seed 6, 8 seeds): Hall's coverage, the bounded coverage, and for the bimodal cells
#: the rate of a wrong "fails" under Hall's and under the bounded interval.
ONE_CELL = {
    "beta_0.3_3": (0.914, 0.999, 0.0, 0.0), "beta_0.2_5": (0.888, 1.0, 0.0, 0.0),
    "bimodal_15pct": (0.736, 0.997, 0.0, 0.0), "beta_5_5": (0.946, 1.0, 0.0, 0.0),
    "U Beta(.5,.5)": (0.979, 0.987, 0.0, 0.0), "Bernoulli(.5)": (0.995, 0.995, 0.0, 0.0),
    "bimodal mean 0.2, threshold 0.2": (0.773, 0.995, 0.228, 0.0),
    "bimodal mean 0.32, threshold 0.2": (0.942, 0.990, 0.058, 0.0),
    "bimodal mean 0.5, threshold 0.5": (0.993, 0.991, 0.004, 0.004),
}


@pytest.mark.slow
def test_one_cell_bounded_interval_coverage_and_false_failures_at_8_seeds():
    got = simulate_one_cell(N, 4000)
    for name, (hall, bounded, hall_fails, bounded_fails) in ONE_CELL.items():
        g = got[name]
        print(name, {k: round(v, 4) for k, v in g.items()})
        assert abs(g["hall_coverage"] - hall) < 0.02 and abs(g["bounded_coverage"] - bounded) < 0.02, (name, g)
        assert abs(g["hall_fails"] - hall_fails) < 0.02 and abs(g["bounded_fails"] - bounded_fails) < 0.01, (name, g)
        assert g["bounded_fails"] <= 0.025, (name, g)
