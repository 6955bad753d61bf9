"""Statistics helpers: percentile bootstrap intervals and correlations.

Every interval here is a *percentile bootstrap* interval (Efron & Tibshirani
1993, "An Introduction to the Bootstrap", ch. 13): resample the data with
replacement ``n_boot`` times, recompute the statistic on each resample, and
take the ``(1 - confidence) / 2`` and ``(1 + confidence) / 2`` quantiles of the
replicates. Independent groups (e.g. the seeds of two different sweep cells)
are resampled independently of each other (Efron & Tibshirani 1993, ch. 8,
two-sample problem). Correlations use the *pairs* bootstrap (resample (x, y)
pairs together; Efron & Tibshirani 1993, sec. 6.3 and ch. 9).

All functions return plain Python floats ``(point, low, high)``; any of them is
NaN when it is undefined (empty data, constant input, ...). They are seeded and
deterministic.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from scipy import stats as _sps

__all__ = [
    "bootstrap_ci",
    "mean_ci",
    "mean_diff_ci",
    "correlation_ci",
    "percentile_interval",
]

NAN = float("nan")


def _is_groups(data: Any) -> bool:
    """True when ``data`` is a list/tuple of samples rather than one sample.

    A NumPy array is always one sample (resampled along its first axis); a
    list or tuple counts as groups only when every element is itself
    array-like (so ``[0.1, 0.2]`` is one sample, ``[[...], [...]]`` two).
    """
    if isinstance(data, np.ndarray) or not isinstance(data, (list, tuple)):
        return False
    return len(data) > 0 and all(np.ndim(g) >= 1 for g in data)


def percentile_interval(
    replicates: Sequence[float] | np.ndarray, confidence: float = 0.95
) -> tuple[float, float]:
    """Percentile interval of bootstrap replicates (Efron & Tibshirani 1993, eq. 13.5).

    Input: replicate values (NaN ones are dropped: a resample on which the
    statistic is undefined carries no information about it) and the
    confidence level. Output: ``(low, high)``; NaN when no replicate is
    finite-or-infinite. Replicates may contain ``±inf`` (e.g. a ratio with a
    zero denominator): then the quantile is read with ``method="nearest"``
    (an order statistic), because linear interpolation next to an infinite
    value is undefined.
    """
    reps = np.asarray(replicates, dtype=float).ravel()
    reps = reps[~np.isnan(reps)]
    if reps.size == 0:
        return NAN, NAN
    alpha = (1.0 - confidence) / 2.0
    method = "linear" if np.all(np.isfinite(reps)) else "nearest"
    low, high = np.quantile(reps, [alpha, 1.0 - alpha], method=method)
    return float(low), float(high)


def bootstrap_ci(
    values_or_groups: Any,
    statistic: Callable[..., float],
    n_boot: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
    vectorized: bool = False,
) -> tuple[float, float, float]:
    """Percentile-bootstrap confidence interval of a statistic.

    Inputs:
      values_or_groups: one sample (1-D sequence, or an array whose first axis
        indexes observations, e.g. an (n, 2) array of pairs), or a list/tuple
        of independent groups (each array-like, lengths may differ). Each
        group is resampled with replacement independently of the others.
      statistic: for one sample ``statistic(sample) -> float``; for groups
        ``statistic(*groups) -> float`` (one positional argument per group).
        It may return NaN (that replicate is dropped) or ±inf.
      n_boot, confidence, seed: number of resamples, interval level, RNG seed.
      vectorized: the statistic takes every resample at once: each argument
        gets a leading resample axis (``(R, n_g, ...)``) and it returns ``(R,)``.
        Same resamples and replicates as the one-at-a-time call, in one pass.

    Output: ``(point, low, high)`` with ``point = statistic(original data)``
    and the percentile interval of the replicates (Efron & Tibshirani 1993,
    ch. 13). All NaN if any group is empty or the point is NaN. With one
    distinct value per group the interval has zero width (no variability to
    resample), so callers decide separately whether a sample is large enough.
    """
    groups_mode = _is_groups(values_or_groups)
    groups = (
        [np.asarray(g) for g in values_or_groups]
        if groups_mode
        else [np.asarray(values_or_groups)]
    )
    if any(g.ndim == 0 or g.shape[0] == 0 for g in groups):
        return NAN, NAN, NAN

    def call(gs: list[np.ndarray]) -> Any:
        return statistic(*gs) if groups_mode else statistic(gs[0])

    # Resamples of tiny groups hit empty/constant cases; their NaNs are dropped.
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        point = float(call([g[None] for g in groups])[0] if vectorized else call(groups))
        if np.isnan(point):
            return NAN, NAN, NAN
        idx = _draw_indices(groups, n_boot, seed)
        if vectorized:
            reps = np.asarray(call([g[i] for g, i in zip(groups, idx)]), dtype=float).reshape(n_boot)
        else:
            reps = np.fromiter(
                (float(call([g[i[b]] for g, i in zip(groups, idx)])) for b in range(n_boot)),
                dtype=float,
                count=n_boot,
            )
    low, high = percentile_interval(reps, confidence)
    return point, low, high


def _draw_indices(groups: list[np.ndarray], n_boot: int, seed: int) -> list[np.ndarray]:
    """Resampling indices, one (n_boot, n_g) block per group, drawn in order.

    Shared by the generic and the vectorized paths, so ``mean_ci(x)`` and
    ``bootstrap_ci(x, np.mean)`` see the same resamples for the same seed.
    """
    rng = np.random.default_rng(seed)
    return [rng.integers(0, g.shape[0], size=(n_boot, g.shape[0])) for g in groups]


def _finite(values: Any) -> np.ndarray:
    """1-D float array of the finite entries of ``values``."""
    arr = np.asarray(values, dtype=float).ravel()
    return arr[np.isfinite(arr)]


def mean_ci(
    values: Any, n_boot: int = 2000, confidence: float = 0.95, seed: int = 0
) -> tuple[float, float, float]:
    """Mean of the finite entries of ``values`` with its percentile-bootstrap CI.

    Output ``(mean, low, high)``; NaN triple when there is no finite value.
    """
    x = _finite(values)
    if x.size == 0:
        return NAN, NAN, NAN
    (i,) = _draw_indices([x], n_boot, seed)
    # Vectorized: one row mean per resample (same resamples as bootstrap_ci).
    low, high = percentile_interval(x[i].mean(axis=1), confidence)
    return float(x.mean()), low, high


def mean_diff_ci(
    a: Any, b: Any, n_boot: int = 2000, confidence: float = 0.95, seed: int = 0
) -> tuple[float, float, float]:
    """``mean(a) - mean(b)`` for two independent samples, CI by resampling each.

    Non-finite entries are dropped first. Output ``(diff, low, high)``.
    """
    x, y = _finite(a), _finite(b)
    if x.size == 0 or y.size == 0:
        return NAN, NAN, NAN
    i, j = _draw_indices([x, y], n_boot, seed)
    reps = x[i].mean(axis=1) - y[j].mean(axis=1)
    low, high = percentile_interval(reps, confidence)
    return float(x.mean() - y.mean()), low, high


def _rowwise_pearson(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Pearson r of each row pair of two (B, n) arrays; NaN for constant rows."""
    xc = x - x.mean(axis=1, keepdims=True)
    yc = y - y.mean(axis=1, keepdims=True)
    with np.errstate(all="ignore"):
        r = (xc * yc).sum(axis=1) / np.sqrt((xc**2).sum(axis=1) * (yc**2).sum(axis=1))
    return np.clip(r, -1.0, 1.0)


def correlation_ci(
    x: Any,
    y: Any,
    method: str = "spearman",
    n_boot: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
) -> tuple[float, float, float]:
    """Correlation of x and y with a pairs-bootstrap percentile CI.

    Inputs: two equal-length sequences (pairs with a non-finite member are
    dropped), ``method`` "spearman" (rank correlation; Spearman 1904) or
    "pearson". Output ``(r, low, high)``; ``r`` equals
    ``scipy.stats.spearmanr`` / ``pearsonr`` on the kept pairs. NaN triple for
    fewer than 3 pairs or a constant input (the correlation is undefined).
    Resamples on which either variable is constant give NaN and are dropped
    (Efron & Tibshirani 1993, sec. 6.3, pairs bootstrap).
    """
    if method not in ("spearman", "pearson"):
        raise ValueError(f"method must be 'spearman' or 'pearson', got {method!r}")
    xa = np.asarray(x, dtype=float).ravel()
    ya = np.asarray(y, dtype=float).ravel()
    if xa.shape != ya.shape:
        raise ValueError(f"x and y differ in length: {xa.size} vs {ya.size}")
    keep = np.isfinite(xa) & np.isfinite(ya)
    xa, ya = xa[keep], ya[keep]
    n = xa.size
    if n < 3 or np.ptp(xa) == 0 or np.ptp(ya) == 0:
        return NAN, NAN, NAN
    corr = _sps.spearmanr if method == "spearman" else _sps.pearsonr
    point = float(corr(xa, ya)[0])

    rng = np.random.default_rng(seed)
    idx = rng.integers(0, n, size=(n_boot, n))
    xb, yb = xa[idx], ya[idx]
    if method == "spearman":
        # Spearman's rho = Pearson r of average ranks (ties get mean rank).
        xb = _sps.rankdata(xb, axis=1)
        yb = _sps.rankdata(yb, axis=1)
    reps = _rowwise_pearson(xb, yb)
    low, high = percentile_interval(reps, confidence)
    return point, low, high


def partial_spearman(x, y, z) -> float | np.ndarray:
    """Spearman correlation of ``x`` and ``y`` controlling for ``z``.

    The Pearson correlation of the residuals of rank(x) and rank(y) after a
    least-squares fit on rank(z) with an intercept (Conover 1999, "Practical
    Nonparametric Statistics", partial rank correlation). NaN when undefined
    (fewer than 3 observations, or a constant residual).

    Shapes: ``(n,)`` each → a float; ``(..., n)`` each (e.g. bootstrap resamples
    in rows) → an array ``(...)``, one coefficient per row, computed at once.
    """
    from scipy.stats import rankdata

    x, y, z = (np.asarray(v, dtype=float) for v in (x, y, z))
    n = x.shape[-1]
    if n < 3:
        out = np.full(x.shape[:-1], np.nan)
        return float(out) if out.ndim == 0 else out
    rz = rankdata(z, axis=-1)
    rz = rz - rz.mean(axis=-1, keepdims=True)
    szz = (rz * rz).sum(axis=-1, keepdims=True)

    def resid(v):
        # Least squares on [1, rank(z)] in closed form; slope 0 where rank(z) is constant.
        r = rankdata(v, axis=-1)
        r = r - r.mean(axis=-1, keepdims=True)
        slope = np.divide((r * rz).sum(axis=-1, keepdims=True), szz, out=np.zeros_like(szz), where=szz > 0)
        return r - slope * rz

    ex, ey = resid(x), resid(y)
    denom = np.sqrt((ex * ex).sum(axis=-1) * (ey * ey).sum(axis=-1))
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.where(denom > 1e-12, (ex * ey).sum(axis=-1) / np.where(denom > 1e-12, denom, 1.0), np.nan)
    return float(out) if out.ndim == 0 else out
