"""Saturating and power-law curves through a metric against scale (parameters or data), compared by AIC.

Curves, in ``x = N / N_min`` (the smallest size is 1, which keeps ``b`` on the scale of the metric):

- saturating: ``y = a - b·x^-c`` — approaches the asymptote ``a`` (a plateau when ``a < 1``);
- power law: ``y = 1 - b·x^-c`` — the error ``1 - y`` falls as a pure power law, so ``y`` climbs to 1
  (the scaling-law form of Kaplan et al. 2020, "Scaling Laws for Neural Language Models", applied to the
  error rate). It is the saturating curve with ``a`` fixed at 1, so the two are nested: the power law can
  never beat the saturating curve by more than 2 AIC points (``ΔAIC ≥ −2``);
- log power law: ``y = 1 - b·(1 + ln x)^-c`` — a slow climb to 1 (the error falls as a power of log N), which a
  16× sweep can mistake for a plateau: the saturating curve then extrapolates an asymptote below 1 from a
  curve that never stops climbing. Not nested in the saturating curve.

All three are fitted by least squares to every (size, replicate) point with :func:`scipy.optimize.curve_fit`
(trust-region reflective, bounds ``0 ≤ a ≤ 1.5``, ``0 ≤ b ≤ 5``, ``0 ≤ c ≤ 5``; several starting exponents,
the smallest residual kept). Model choice: Akaike's information criterion for Gaussian residuals,
``AIC = n·ln(RSS/n) + 2k`` (Akaike 1974, "A new look at the statistical model identification"; ``k``:
fitted curve parameters, 3 and 2 — the residual variance, common to both, is left out); a difference of 2
or more is the usual threshold for a clear preference (Burnham & Anderson 2002, "Model Selection and
Multimodel Inference", §2.6). The asymptote's interval: expanded percentile bootstrap over replicates
resampled within each size (:func:`bindscale.verdicts.stats.bootstrap_ci`, groups = sizes, read at
:func:`bindscale.verdicts.stats.expanded_confidence` of the fewest seeds at a size: 98.9% for 8), the saturating curve
refitted to each resample.

Coverage of the 95% asymptote interval (``tests/studies/ceiling/test_fit_coverage.py``, ``-m slow``): planted
a = 0.58 at the default design (5 sizes × 8 seeds), seed noise sd 0.03, 200 resamples per table. The plain
percentile interval covered 0.87 (normal noise, 100 tables), 0.90 (skewed, centred Gamma(2)) and 0.85 (noise
growing with size, 60 tables): too narrow, because the within-size bootstrap sees the plug-in spread of 8
seeds and normal tails. Read at the expanded level it covers 0.92, 0.96 and 0.93 (same tables), and 0.91, 0.95
and 0.89 in the test's own 100 tables each (Monte-Carlo SE ~0.025): better, but still at the lower edge of
92–98% when the noise grows with size (more seeds at the largest sizes help most there). A share near
its floor (a = 0.3, b = 0.25: values 0.05–0.3, seed spread Beta with sd 0.03, scored on 100 instances per seed
— feasibility-like) is covered 0.98 (60 tables). A Wald interval from the
fit's covariance (t with n − 3 df) covers 0.95 / 0.97 with constant noise but 0.87 when the noise grows with
size; the bootstrap, which resamples each size's own seeds, stays. The expanded quantiles (0.57% and 99.43%)
sit ~2 replicates from the ends at 400 resamples: 1000 or more resamples read them steadier.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field

import numpy as np
from scipy.optimize import OptimizeWarning, curve_fit

from bindscale.kit import bootstrap_ci

#: The saturating fit's box: upper bounds of ``a``, ``b`` and ``c`` (lower bounds 0).
A_MAX, B_MAX, C_MAX = 1.5, 5.0, 5.0
#: Starting exponents tried for each fit.
C_STARTS = (0.1, 0.5, 1.0, 2.0)
#: Residual sum of squares floor (an exact fit would give AIC = -inf).
RSS_FLOOR = 1e-12


def saturating(x: np.ndarray, a: float, b: float, c: float) -> np.ndarray:
    """``a - b·x^-c``."""
    return a - b * np.power(x, -c)


def power_law(x: np.ndarray, b: float, c: float) -> np.ndarray:
    """``1 - b·x^-c``."""
    return 1.0 - b * np.power(x, -c)


@dataclass(frozen=True)
class Fit:
    """One least-squares fit: ``params`` by name, ``rss``, ``n`` points, ``k`` parameters, ``aic`` (NaN when the
    fit failed; ``error`` then says why)."""

    name: str
    params: dict = field(default_factory=dict)
    rss: float = math.nan
    n: int = 0
    k: int = 0
    aic: float = math.nan
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


def aic(rss: float, n: int, k: int) -> float:
    """``n·ln(max(RSS, RSS_FLOOR)/n) + 2k`` (see the module docstring)."""
    return n * math.log(max(rss, RSS_FLOOR) / n) + 2 * k


def _fit(name: str, f, x: np.ndarray, y: np.ndarray, starts: list, lower: list, upper: list, names: tuple) -> Fit:
    best = None
    for p0 in starts:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", OptimizeWarning)
                warnings.simplefilter("ignore", RuntimeWarning)
                p, _ = curve_fit(f, x, y, p0=p0, bounds=(lower, upper), method="trf", maxfev=5000)
        except (RuntimeError, ValueError) as err:
            last = str(err).splitlines()[0]
            continue
        rss = float(np.sum((f(x, *p) - y) ** 2))
        if np.isfinite(rss) and (best is None or rss < best[1]):
            best = (p, rss)
    if best is None:
        return Fit(name, error=f"no fit converged ({last})")
    p, rss = best
    return Fit(name, dict(zip(names, map(float, p))), rss, len(y), len(names), aic(rss, len(y), len(names)))


def _check(x, y) -> tuple[np.ndarray, np.ndarray, str | None]:
    x, y = np.asarray(x, float).ravel(), np.asarray(y, float).ravel()
    if x.shape != y.shape:
        return x, y, f"x and y differ in length ({x.size} and {y.size})"
    if x.size == 0 or not (np.isfinite(x).all() and np.isfinite(y).all()):
        return x, y, "no data, or NaN / infinite values"
    if (x <= 0).any():
        return x, y, "sizes must be positive"
    return x / x.min(), y, None


def fit_saturating(x, y, start: dict | None = None) -> Fit:
    """Least-squares ``a - b·(x/x_min)^-c`` (see the module docstring); a failed :class:`Fit` for bad input.
    ``start``: an earlier fit's parameters, tried first with one generic start (instead of :data:`C_STARTS`;
    the bootstrap's refits)."""
    x, y, bad = _check(x, y)
    if bad:
        return Fit("saturating", error=bad)
    if np.unique(x).size < 3:
        return Fit("saturating", error="fewer than 3 distinct sizes for 3 parameters")
    top, span = float(y.max()), float(max(y.max() - y.min(), 1e-3))
    starts = [[min(A_MAX, top + 0.01), span, c] for c in C_STARTS]
    if start:
        starts = [[start["a"], start["b"], start["c"]], starts[1]]
    return _fit("saturating", saturating, x, y, starts, [0.0, 0.0, 0.0], [A_MAX, B_MAX, C_MAX], ("a", "b", "c"))


def log_power(x: np.ndarray, b: float, c: float) -> np.ndarray:
    """``1 - b·(1 + ln x)^-c``."""
    return 1.0 - b * np.power(1.0 + np.log(x), -c)


def _fit_reaching_one(name: str, fn, x, y) -> Fit:
    """Least-squares fit of a two-parameter curve ``fn(x, b, c)`` that reaches 1 as x grows; a failed
    :class:`Fit` for bad input or fewer than 2 distinct sizes."""
    x, y, bad = _check(x, y)
    if bad:
        return Fit(name, error=bad)
    if np.unique(x).size < 2:
        return Fit(name, error="fewer than 2 distinct sizes for 2 parameters")
    starts = [[float(min(5.0, max(1e-3, 1 - y.min()))), c] for c in C_STARTS]
    return _fit(name, fn, x, y, starts, [0.0, 0.0], [5.0, 5.0], ("b", "c"))


def fit_log_power(x, y) -> Fit:
    """Least-squares ``1 - b·(1 + ln(x/x_min))^-c`` (see the module docstring); a failed :class:`Fit` for bad input."""
    return _fit_reaching_one("log_power", log_power, x, y)


def fit_power(x, y) -> Fit:
    """Least-squares ``1 - b·(x/x_min)^-c`` (see the module docstring); a failed :class:`Fit` for bad input."""
    return _fit_reaching_one("power_law", power_law, x, y)


def compare(x, y, n_boot: int = 500, seed: int = 0, confidence: float = 0.95) -> dict:
    """Both fits, their AIC difference and the asymptote's bootstrap interval.

    Args:
        x: ``(n,)`` sizes (parameters or training instances; positive).
        y: ``(n,)`` the metric, one value per (size, replicate).
        n_boot: bootstrap resamples (replicates resampled within each size); 0: no interval (NaN bounds).
            The interval is the expanded percentile interval (module docstring).

    Returns:
        ``{"saturating": Fit, "power_law": Fit, "log_power": Fit, "delta_aic": AIC_power - AIC_saturating
        (positive: the saturating curve is preferred), "delta_aic_climb": min(AIC_power, AIC_log_power) -
        AIC_saturating (the saturating curve against the better of the two curves that reach 1), "asymptote":
        (a, lo, hi) (expanded percentile bootstrap), "x_min": N_min}``; NaNs where a fit failed.
    """
    sat, pw, lp = fit_saturating(x, y), fit_power(x, y), fit_log_power(x, y)
    climb = min(pw.aic, lp.aic) - sat.aic if sat.ok and pw.ok and lp.ok else math.nan
    out = {"saturating": sat, "power_law": pw, "log_power": lp, "delta_aic_climb": climb,
           "delta_aic": pw.aic - sat.aic if sat.ok and pw.ok else math.nan,
           "asymptote": (math.nan,) * 3, "x_min": float(np.min(x)) if np.size(x) else math.nan}
    if not sat.ok:
        return out
    if n_boot <= 0:  # a figure's descriptive fit: no refits at all
        out["asymptote"] = (sat.params["a"], math.nan, math.nan)
        return out
    xs, ys = np.asarray(x, float).ravel(), np.asarray(y, float).ravel()
    sizes = np.unique(xs)
    groups = [ys[xs == s] for s in sizes]

    def asymptote(*gs) -> float:
        f = fit_saturating(np.concatenate([np.full(len(g), s) for g, s in zip(gs, sizes)]), np.concatenate(gs),
                           start=sat.params)
        return f.params["a"] if f.ok else math.nan

    point, lo, hi = bootstrap_ci(groups, asymptote, n_boot=n_boot, confidence=confidence, seed=seed)
    out["asymptote"] = (sat.params["a"], lo, hi)
    return out
