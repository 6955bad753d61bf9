"""Bootstrap and correlation helpers against SciPy and hand cases."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from bindscale.verdicts.stats import (
    bootstrap_ci,
    correlation_ci,
    mean_ci,
    mean_diff_ci,
    percentile_interval,
    strata_mean_ci,
)


def test_one_sample_mean_matches_scipy_percentile():
    x = np.random.default_rng(1).normal(size=40)
    point, low, high = bootstrap_ci(x, np.mean, n_boot=9999, seed=3)
    ref = stats.bootstrap((x,), np.mean, method="percentile", n_resamples=9999,
                          random_state=np.random.default_rng(0)).confidence_interval
    assert point == pytest.approx(x.mean())
    # Monte-Carlo error of each bound is ~0.005 here (half-width ~0.3).
    assert low == pytest.approx(ref.low, abs=0.03)
    assert high == pytest.approx(ref.high, abs=0.03)


def test_constant_data_gives_zero_width_interval():
    point, low, high = bootstrap_ci([0.7] * 6, np.mean)
    assert point == pytest.approx(0.7) and low == high == point
    assert mean_diff_ci([1.0, 1.0], [0.25, 0.25]) == (0.75, 0.75, 0.75)


def test_groups_are_resampled_independently():
    a, b = np.array([1.0, 2.0, 3.0]), np.array([10.0, 10.0, 10.0, 10.0])
    point, low, high = bootstrap_ci([a, b], lambda x, y: y.mean() - x.mean(), n_boot=500)
    assert point == pytest.approx(8.0)
    # b is constant, so the interval is exactly 10 minus a's bootstrap range.
    assert 7.0 <= low < point < high <= 9.0
    # Groups of unequal length; a 1-D list of numbers is one sample, not groups.
    assert bootstrap_ci([1.0, 2.0], len)[0] == 2.0


def test_seeded_and_deterministic():
    x = np.arange(10.0)
    assert bootstrap_ci(x, np.median, seed=5) == bootstrap_ci(x, np.median, seed=5)
    assert mean_ci(x, seed=1) == mean_ci(x, seed=2)  # t interval: no resampling


def test_mean_intervals_match_scipy_t_and_welch_on_symmetric_samples():
    # Samples symmetric about their mean (skewness 0): Hall's correction vanishes.
    rng = np.random.default_rng(2)
    h = rng.normal(size=6)
    a, b = np.concatenate([h, -h]) + 0.3, np.concatenate([h[:4], -h[:4], [0.0]]) * 2.0
    ci = stats.ttest_1samp(a, 0.0).confidence_interval(0.95)
    assert mean_ci(a) == pytest.approx((a.mean(), ci.low, ci.high))
    ci = stats.ttest_ind(a, b, equal_var=False).confidence_interval(0.95)
    assert mean_diff_ci(a, b) == pytest.approx((a.mean() - b.mean(), ci.low, ci.high))


def test_skewed_samples_get_halls_interval_stretched_toward_the_long_tail():
    """Hall 1992 by hand for [0, 0, 0, 0, 0, 0, 0, 1]: mean 1/8, s² = 1/8, se = 1/8, m3 = 7·(1/8)³·(−1)/8 +
    (7/8)³/8 = 0.0410, A = (m3/64)/se³ = 0.328, a = A/3, b = A/6; bounds mean − se·g⁻¹(±q)."""
    x = np.array([0.0] * 7 + [1.0])
    m3 = float(np.mean((x - x.mean()) ** 3))
    se = math.sqrt(x.var(ddof=1) / 8)
    a = m3 / 64 / se**3 / 3
    q = stats.t.ppf(0.975, 7)

    def g_inv(u):
        return (np.cbrt(1 + 3 * a * (u - a / 2)) - 1) / a

    point, low, high = mean_ci(x)
    assert (point, low, high) == pytest.approx((0.125, 0.125 - se * g_inv(q), 0.125 - se * g_inv(-q)))
    t = stats.ttest_1samp(x, 0.0).confidence_interval(0.95)
    assert high > t.high and low > t.low  # right skew: the interval moves toward the long (upper) tail
    # The negated mean (weight −1) gets the mirrored interval.
    assert strata_mean_ci([x], weights=[-1.0]) == pytest.approx((-point, -high, -low))


def test_strata_mean_is_the_mean_of_cell_means_with_a_welch_satterthwaite_interval():
    # Hand-worked: cells [1, 3] and [2, 4, 6]: means 2 and 4, variances 2 and 4.
    # mean of means 3; var = (1/4)(2/2) + (1/4)(4/3) = 7/12;
    # df = (7/12)^2 / ((1/4)^2/1 + (1/3)^2/2) = 0.3403 / 0.11806 = 2.882
    point, low, high = strata_mean_ci([[1.0, 3.0], [2.0, 4.0, 6.0]])
    df = (7 / 12) ** 2 / ((1 / 4) ** 2 + (1 / 3) ** 2 / 2)
    half = stats.t.ppf(0.975, df) * math.sqrt(7 / 12)
    assert (point, low, high) == pytest.approx((3.0, 3.0 - half, 3.0 + half))
    assert math.isnan(strata_mean_ci([[1.0], [2.0, 3.0]])[1])  # one value: variance unknown
    assert strata_mean_ci([[1.0, 1.0], [2.0, 2.0]]) == (1.5, 1.5, 1.5)


def test_undefined_inputs_give_nan():
    assert all(math.isnan(v) for v in bootstrap_ci([], np.mean))
    assert all(math.isnan(v) for v in mean_ci([math.nan, math.inf]))
    assert all(math.isnan(v) for v in mean_diff_ci([1.0], []))
    # One value: a mean, but no interval (a t interval needs a spread; the old bootstrap gave zero width)
    point, low, high = mean_ci([0.4])
    assert point == 0.4 and math.isnan(low) and math.isnan(high)


def test_percentile_interval_tolerates_inf_and_drops_nan():
    reps = [1.0, 2.0, math.inf, math.inf, math.nan]
    low, high = percentile_interval(reps, 0.5)
    assert low in (1.0, 2.0) and high == math.inf
    assert all(math.isnan(v) for v in percentile_interval([math.nan]))


@pytest.mark.parametrize("method, ref", [("spearman", stats.spearmanr), ("pearson", stats.pearsonr)])
def test_correlation_point_matches_scipy(method, ref):
    rng = np.random.default_rng(0)
    x = rng.normal(size=30)
    y = x + rng.normal(size=30)
    y[3] = y[7]  # ties exercise average ranks
    r, low, high = correlation_ci(x, y, method)
    assert r == pytest.approx(ref(x, y)[0], abs=1e-12)
    assert -1 <= low < r < high <= 1


def test_correlation_constant_or_short_input_is_nan():
    assert all(math.isnan(v) for v in correlation_ci([1, 1, 1, 1], [1, 2, 3, 4]))
    assert all(math.isnan(v) for v in correlation_ci([1, 2], [2, 1], "pearson"))
    # Non-finite pairs are dropped before computing.
    r, _, _ = correlation_ci([1, 2, 3, math.nan, 4], [2, 4, 6, 8, math.inf])
    assert r == pytest.approx(1.0)
    with pytest.raises(ValueError):
        correlation_ci([1, 2, 3], [1, 2, 3], "kendall")


def test_partial_spearman_matches_the_rank_formula_and_removes_a_confounder():
    import numpy as np
    from scipy.stats import spearmanr

    from bindscale.verdicts.stats import partial_spearman

    rng = np.random.default_rng(0)
    z = rng.normal(size=300)
    x, y = z + 0.3 * rng.normal(size=300), z + 0.3 * rng.normal(size=300)
    assert spearmanr(x, y)[0] > 0.8
    assert abs(partial_spearman(x, y, z)) < 0.15  # only the confounder linked them
    # Classical three-variable formula on Spearman coefficients.
    a, b = rng.normal(size=(2, 200))
    c = a + b + rng.normal(size=200)
    rxy, rxz, ryz = spearmanr(a, c)[0], spearmanr(a, b)[0], spearmanr(c, b)[0]
    expected = (rxy - rxz * ryz) / np.sqrt((1 - rxz**2) * (1 - ryz**2))
    assert abs(partial_spearman(a, c, b) - expected) < 1e-10


def test_partial_spearman_over_rows_equals_row_by_row_and_lstsq():
    import numpy as np
    from scipy.stats import rankdata

    from bindscale.verdicts.stats import partial_spearman

    rng = np.random.default_rng(3)
    x, y = rng.normal(size=(2, 50, 12))
    z = rng.integers(0, 4, size=(50, 12)).astype(float)  # ties, as log widths have
    z[7] = 1.0  # a constant control: the partial correlation is the plain Spearman
    x[9] = 2.0  # a constant variable: undefined
    rows = partial_spearman(x, y, z)
    assert rows.shape == (50,)
    for i in range(50):
        assert np.isnan(rows[i]) == np.isnan(partial_spearman(x[i], y[i], z[i]))
        if i == 9:
            assert np.isnan(rows[i])
            continue
        # independent route: residuals from numpy's least squares on [1, rank(z)]
        design = np.column_stack([np.ones(12), rankdata(z[i])])
        res = [rankdata(v) - design @ np.linalg.lstsq(design, rankdata(v), rcond=None)[0] for v in (x[i], y[i])]
        expected = res[0] @ res[1] / np.sqrt((res[0] @ res[0]) * (res[1] @ res[1]))
        assert abs(rows[i] - expected) < 1e-12
    assert np.all(np.isnan(partial_spearman(x[:, :2], y[:, :2], z[:, :2])))  # n < 3


def test_vectorized_bootstrap_gives_the_replicates_of_the_one_at_a_time_bootstrap():
    import numpy as np

    from bindscale.verdicts.stats import bootstrap_ci, partial_spearman

    rng = np.random.default_rng(4)
    a = rng.normal(size=(30, 3))
    a[:, 1] += a[:, 0]
    one = bootstrap_ci(a, lambda s: partial_spearman(s[:, 0], s[:, 1], s[:, 2]), 500, seed=2)
    vec = bootstrap_ci(a, lambda s: partial_spearman(s[..., 0], s[..., 1], s[..., 2]), 500, seed=2, vectorized=True)
    assert np.allclose(one, vec, rtol=0, atol=1e-12)
    groups = [rng.normal(size=20), rng.normal(size=25) + 1]
    one = bootstrap_ci(groups, lambda u, v: np.mean(v) - np.mean(u), 300, seed=1)
    vec = bootstrap_ci(groups, lambda u, v: v.mean(-1) - u.mean(-1), 300, seed=1, vectorized=True)
    assert np.allclose(one, vec, rtol=0, atol=1e-12)


def test_partial_spearman_within_cells_equals_the_one_covariate_formula_and_removes_cell_effects():
    from bindscale.verdicts.stats import partial_spearman, partial_spearman_within

    rng = np.random.default_rng(5)
    x, y, z = rng.normal(size=(3, 60))
    # One numeric column entered as is = partial Spearman on that column when it is already a rank.
    rz = stats.rankdata(z)
    assert partial_spearman_within(x, y, rz[:, None]) == pytest.approx(partial_spearman(x, y, z), abs=1e-12)
    # Two swept axes drive both variables; within cells they are unrelated.
    width = rng.integers(0, 4, 200)
    enc = rng.integers(0, 3, 200)
    cell = 2.0 * width + 1.5 * enc
    a, b = cell + 0.3 * rng.normal(size=200), cell + 0.3 * rng.normal(size=200)
    cell_id = width * 3 + enc
    dummies = np.column_stack([cell_id == k for k in range(1, 12)]).astype(float)  # one column per cell but one
    assert stats.spearmanr(a, b)[0] > 0.8
    assert abs(partial_spearman_within(a, b, dummies)) < 0.15
    # Controlling for width only leaves the encoding effect: a partial correlation that is not within cells.
    width_only = np.column_stack([width == k for k in range(1, 4)]).astype(float)
    assert partial_spearman_within(a, b, width_only) > 0.3
    # Vectorized over resamples (leading axis) = one at a time.
    idx = rng.integers(0, 200, size=(5, 200))
    rows = partial_spearman_within(a[idx], b[idx], dummies[idx])
    assert rows == pytest.approx([partial_spearman_within(a[i], b[i], dummies[i]) for i in idx], abs=1e-12)
    # Every observation its own cell: nothing left to correlate.
    assert math.isnan(partial_spearman_within(a[:5], b[:5], np.eye(5)[:, 1:]))


def test_within_bounds_clips_the_ends_never_the_point():
    """R² 0.908 [0.818, 1.01] -> [0.818, 1]; both ends past a bound sit on it; NaN ends stay NaN; None is no bound."""
    import math

    from bindscale.verdicts.stats import within_bounds

    assert within_bounds((0.908, 0.818, 1.01), None, 1.0) == (0.908, 0.818, 1.0)
    assert within_bounds((0.02, -0.03, 0.07), 0.0, 1.0) == (0.02, 0.0, 0.07)
    assert within_bounds((1.0, 1.02, 1.05), 0.0, 1.0) == (1.0, 1.0, 1.0)
    p, lo, hi = within_bounds((0.5, float("nan"), float("nan")), 0.0, 1.0)
    assert p == 0.5 and math.isnan(lo) and math.isnan(hi)
    assert within_bounds((5.0, -3.0, 12.0)) == (5.0, -3.0, 12.0)


def test_clipping_to_the_bounds_keeps_coverage():
    """Simulated: the t interval of 8 accuracies piled near 1 (Beta(12, 1)) covers the true mean as often clipped
    at 1 as not (a true mean inside the bounds is never cut off)."""
    import numpy as np

    from bindscale.verdicts.stats import mean_ci, within_bounds

    rng = np.random.default_rng(0)
    truth = 12 / 13
    raw = clipped = 0
    for _ in range(600):
        x = rng.beta(12, 1, size=8)
        t = mean_ci(x)
        c = within_bounds(t, 0.0, 1.0)
        raw += t[1] <= truth <= t[2]
        clipped += c[1] <= truth <= c[2]
        assert 0.0 <= c[1] <= c[2] <= 1.0
    assert raw == clipped


# --- bounded_strata_mean_ci: the Agresti–Caffo-adjusted Welch interval of bounded metrics ---------------------------

from bindscale.verdicts.stats import bounded_strata_mean_ci  # noqa: E402


def test_bounded_interval_is_welch_on_the_adjusted_samples():
    """Independent computation: scipy's Welch interval on each group with one pseudo-value at each bound."""
    deep, shallow = np.array([0.2, 0.5, 0.4, 0.9, 0.3, 0.6]), np.array([0.1, 0.0, 0.3, 0.2, 0.05])
    point, lo, hi = bounded_strata_mean_ci([deep, shallow], [1.0, -1.0])
    ref = stats.ttest_ind(np.r_[deep, 0, 1], np.r_[shallow, 0, 1], equal_var=False).confidence_interval(0.95)
    assert point == pytest.approx(deep.mean() - shallow.mean())
    assert (lo, hi) == pytest.approx((ref.low, ref.high), rel=1e-12)


def test_bounded_interval_hand_worked_all_succeed_against_all_fail():
    """8 of 8 seeds at 1 against 8 of 8 at 0. Adjusted: 9/10 and 1/10, sample variances 0.1 each, standard
    error sqrt(0.1/10 + 0.1/10) = 0.1414, Welch df = 18, centre 0.8: [0.8 − t_18·0.1414, 1.097] clipped to 1.
    The bound is wider than Agresti & Caffo's own z interval (0.8 − 1.96·sqrt(2·0.09/10) = 0.537)."""
    point, lo, hi = bounded_strata_mean_ci([np.ones(8), np.zeros(8)], [1, -1])
    assert point == 1.0 and hi == 1.0
    assert lo == pytest.approx(0.8 - stats.t.ppf(0.975, 18) * math.sqrt(0.02), rel=1e-12)
    assert lo < 0.8 - 1.959964 * math.sqrt(2 * 0.09 / 10)


def test_bounded_interval_does_not_read_a_shallow_cell_without_successes_as_certain_failure():
    """Plain Welch: deep 0.14 ± 0.09 against shallow 0 in every seed excludes 0; the bounded interval does not."""
    deep = np.array([0.05, 0.1, 0.2, 0.3, 0.08, 0.12, 0.16, 0.1])
    shallow = np.zeros(8)
    assert strata_mean_ci([deep, -shallow], [1, 1])[1] > 0
    assert bounded_strata_mean_ci([deep, shallow], [1, -1])[1] < 0


def test_bounded_interval_bounds_point_and_errors():
    rng = np.random.default_rng(0)
    for _ in range(200):
        groups = [rng.beta(0.3, 2, rng.integers(2, 10)) for _ in range(4)]
        weights = [0.5, -0.5, 0.5, -0.5]
        p, lo, hi = bounded_strata_mean_ci(groups, weights)
        assert -1.0 <= lo <= p <= hi <= 1.0
    assert all(math.isnan(v) for v in bounded_strata_mean_ci([np.array([]), np.ones(3)], [1, -1]))
    assert bounded_strata_mean_ci([np.array([np.nan, 0.5, 0.7]), np.ones(3)], [1, -1])[0] == pytest.approx(-0.4)
    with pytest.raises(ValueError, match="outside the bounds"):
        bounded_strata_mean_ci([np.array([0.5, 1.2]), np.ones(3)], [1, -1])
    with pytest.raises(ValueError, match="weights"):
        bounded_strata_mean_ci([np.ones(3), np.ones(3)], [1])
    with pytest.raises(ValueError, match="increasing"):
        bounded_strata_mean_ci([np.ones(3)], [1], bounds=(1.0, 0.0))


# --- bounded_mean_ci: the one-sample form ----------------------------------------------------------------------------

from bindscale.verdicts.stats import bounded_mean_ci  # noqa: E402


def test_bounded_mean_hand_worked_eight_failures():
    """8 seeds at 0. Adjusted: nine 0s and one 1, mean 0.1, sample variance (9·0.01 + 0.81)/9 = 0.1, standard error
    sqrt(0.1/10) = 0.1, t with 9 degrees of freedom: [0.1 − 0.226, 0.1 + 0.226] clipped below at 0, point 0."""
    point, lo, hi = bounded_mean_ci(np.zeros(8))
    assert point == 0.0 and lo == 0.0
    assert hi == pytest.approx(0.1 + stats.t.ppf(0.975, 9) * 0.1, rel=1e-12)
    assert hi == pytest.approx(0.32622, abs=1e-5)


def test_bounded_mean_is_student_t_on_the_adjusted_sample_and_the_one_group_strata_form():
    x = np.array([0.2, 0.5, 0.9, 0.35, 0.6])
    point, lo, hi = bounded_mean_ci(x)
    ref = stats.ttest_1samp(np.r_[x, 0, 1], 0).confidence_interval(0.95)
    assert point == pytest.approx(x.mean())
    assert (lo, hi) == pytest.approx((ref.low, ref.high), rel=1e-12)
    assert bounded_mean_ci(x, confidence=0.975) == bounded_strata_mean_ci([x], [1.0], confidence=0.975)
    wide = bounded_mean_ci(x, confidence=0.975)
    assert wide[1] < lo and wide[2] > hi
    assert all(math.isnan(v) for v in bounded_mean_ci(np.array([np.nan])))
    assert bounded_mean_ci(np.ones(8))[1:] == pytest.approx((0.9 - stats.t.ppf(0.975, 9) * 0.1, 1.0))  # the mirror
    with pytest.raises(ValueError, match="outside the bounds"):
        bounded_mean_ci(np.array([0.5, 1.2]))
