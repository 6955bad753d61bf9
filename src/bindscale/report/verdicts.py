"""Verdicts of the headline study (scaling / decodability / binding / hull).

``compute_verdicts(df, study)`` turns the results table (one row per trial,
see ``bindscale.report``) into one verdict dict per claim named in
``study["verdicts"]``. Each verdict is decided by one number and its 95%
percentile-bootstrap interval over seeds/trials (``bindscale.stats``):

- scaling: Redhardt, Schug, Akram 2025, "Scaling can lead to compositional
  generalization" (arXiv 2507.07207): plain MLPs reach high held-out R² once
  width and coverage of the combination space grow.
- decodability: same source: linear decodability of the constituents from
  hidden activations predicts held-out success.
- binding: Schug et al. ICLR 2024, "Discovering modular solutions that
  generalize compositionally"; Greff, van Steenkiste, Schmidhuber 2020, "On the
  Binding Problem in Artificial Neural Networks": an explicit binding
  architecture (hypernetwork over module banks) needs far fewer parameters.
- hull: the project's synthesis: scale helps for held-out combinations inside
  the convex hull of training, not outside it.

Only ``status == "ok"`` rows enter the statistics. Width and parameter
comparisons (scaling, binding, hull) hold encoding, split and (except for
binding, where depth is part of a config) depth at their most common value,
and say so in ``details``; decodability pools all MLP trials on purpose, as
the claim is that decodability predicts success across configurations.
Other config columns that vary are listed under ``details["pooled_over"]``.
A verdict whose deciding
cell has fewer than ``MIN_REPLICATES`` values is "inconclusive": a bootstrap
over one value has zero width and says nothing about seed variability.
So is a claim about the largest scale (scaling, hull, binding) when every
trial of the widest planned model its verdict rests on diverged or failed:
the rule would otherwise answer at a smaller width than the study asked
about (:func:`lost_largest_widths`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pandas as pd

from bindscale.stats import bootstrap_ci, correlation_ci, mean_ci, mean_diff_ci, partial_spearman

__all__ = [
    "compute_verdicts",
    "ok_rows",
    "restrict_to_mode",
    "DEFAULTS",
    "RULES",
    "MIN_REPLICATES",
    "study_as_dict",
]

SUPPORTED, NOT_SUPPORTED, INCONCLUSIVE = "supported", "not_supported", "inconclusive"
MIN_REPLICATES = 3

# Default thresholds, used for any key the study leaves out.
DEFAULTS: dict[str, dict[str, float]] = {
    "scaling": {"r2_threshold": 0.9},
    "decodability": {"rho_threshold": 0.5},
    "binding": {"target_r2": 0.9, "tolerance": 0.01},
    "hull": {"margin": 0.05},
}

NUMERIC_COLUMNS = (
    "width", "depth", "holdout", "M", "K", "steps", "seed", "lr", "weight_decay",
    "n_params", "n_train_combos", "n_heldout_combos", "n_inhull", "n_outhull",
    "r2_id", "r2_heldout", "r2_inhull", "r2_outhull",
    "decod_best", "decod_input", "decod_random",
)
# Config columns that are not sweep axes of a claim; when they vary, the
# claim pools over them and says so in its details.
POOLABLE = ("encoding", "split", "M", "K", "steps", "lr", "weight_decay")


# ----------------------------------------------------------------- helpers --

def ok_rows(df: pd.DataFrame) -> pd.DataFrame:
    """Copy of the ``status == "ok"`` rows, numeric columns coerced to float.

    Missing numeric columns are added as NaN (an older run without, e.g.,
    hull metrics makes that claim inconclusive instead of crashing). A table
    without a ``status`` column is taken as all ok; without ``model``, no row
    counts as any model.
    """
    out = df.copy()
    if "status" in out.columns:
        out = out[out["status"].astype(str) == "ok"].copy()
    for col in NUMERIC_COLUMNS:
        out[col] = pd.to_numeric(out[col], errors="coerce") if col in out else np.nan
    out["model"] = out["model"].astype(str) if "model" in out else ""
    return out.reset_index(drop=True)


# Columns held fixed (at their most common value) for width / parameter
# comparisons: a cell mean must not mix, e.g., identity and token encodings
# just because an extra grid ran some encodings at one width, nor count runs
# of different lengths or learning rates as seeds of one cell.
TRAINING_LIKE = ("M", "K", "steps", "lr", "weight_decay")
COMPARE_LIKE = ("encoding", "split", "depth") + TRAINING_LIKE


def restrict_to_mode(
    rows: pd.DataFrame, cols: tuple[str, ...] = COMPARE_LIKE
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Keep the rows at the most common value of each column in ``cols`` that varies.

    Columns are fixed in order (each mode is taken among the rows left by the
    previous ones); ties go to the smallest value (deterministic). Output:
    (rows, note for details: ``<col>_used``, ``<col>_present`` and a
    ``restriction`` sentence; empty when nothing varies).
    """
    note: dict[str, Any] = {}
    for col in cols:
        if col not in rows or rows[col].nunique(dropna=True) <= 1:
            continue
        counts = rows[col].dropna().value_counts()
        best = min(v for v, c in counts.items() if c == counts.max())
        note[f"{col}_used"] = _py(best)
        note[f"{col}_present"] = sorted(_py(v) for v in counts.index)
        rows = rows[rows[col] == best]
    if note:
        fixed = ", ".join(k.removesuffix("_used") for k in note if k.endswith("_used"))
        note["restriction"] = f"{fixed} vary; this comparison uses the most common value of each"
    return rows, note


def _py(v: Any) -> Any:
    """NumPy scalar -> Python int/float (ints stay ints)."""
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (np.floating, float)):
        f = float(v)
        return int(f) if f.is_integer() and abs(f) < 2**53 else f
    return v


def _key(v: Any) -> str:
    """JSON-friendly dict key for a config value: 64 not 64.0."""
    return str(_py(v))


def _ci(triple: tuple[float, float, float], n: int) -> dict[str, Any]:
    """(point, low, high) + sample size as a details entry."""
    p, lo, hi = triple
    return {"value": float(p), "ci_low": float(lo), "ci_high": float(hi), "n": int(n)}


def _finite(s: pd.Series) -> np.ndarray:
    a = np.asarray(s, dtype=float)
    return a[np.isfinite(a)]


def _pooled(rows: pd.DataFrame, cols: tuple[str, ...] = POOLABLE) -> dict[str, list]:
    """Columns among ``cols`` that vary across ``rows``: name -> sorted values."""
    out = {}
    for c in cols:
        if c in rows and rows[c].nunique(dropna=True) > 1:
            out[c] = sorted(_py(v) for v in rows[c].dropna().unique())
    return out


def _verdict(
    claim: str,
    statistic: str,
    verdict: str,
    triple: tuple[float, float, float],
    n_trials: int,
    details: dict[str, Any],
    reference: str | None,
) -> dict[str, Any]:
    """Assemble the verdict dict in its fixed key order."""
    value, lo, hi = (float(x) for x in triple)
    return {
        "claim": claim,
        "verdict": verdict,
        "statistic": statistic,
        "value": value,
        "ci_low": lo,
        "ci_high": hi,
        "n_trials": int(n_trials),
        "details": details,
        "reference": reference,
    }


NAN3 = (math.nan, math.nan, math.nan)


# ------------------------------------------------------------------ claims --

def _scaling(ok: pd.DataFrame, p: Mapping, n_boot: int, seed: int) -> tuple:
    """Held-out R² at the largest width and best coverage, plus width gain.

    Returns (statistic name, verdict, triple, n_trials, details).
    """
    name = "heldout_r2_at_largest_scale"
    thr = float(p["r2_threshold"])
    rows = ok[(ok["model"] == "mlp") & np.isfinite(ok["r2_heldout"])]
    rows, restriction = restrict_to_mode(rows)
    if rows.empty:
        return name, INCONCLUSIVE, NAN3, 0, {"reason": "no ok MLP trials with held-out R²"}

    wmax, wmin = rows["width"].max(), rows["width"].min()
    hmin, hmax = rows["holdout"].min(), rows["holdout"].max()

    def cell(w: float, h: float) -> np.ndarray:
        return _finite(rows.loc[(rows["width"] == w) & (rows["holdout"] == h), "r2_heldout"])

    top, small, sparse = cell(wmax, hmin), cell(wmin, hmin), cell(wmax, hmax)
    value = mean_ci(top, n_boot, seed=seed)
    width_gain = mean_diff_ci(top, small, n_boot, seed=seed + 1) if wmax != wmin else NAN3
    coverage_gain = mean_diff_ci(top, sparse, n_boot, seed=seed + 2) if hmax != hmin else NAN3

    at_hmin = rows[rows["holdout"] == hmin]
    per_width = {
        _key(w): _ci(mean_ci(g["r2_heldout"], n_boot, seed=seed), len(g))
        for w, g in at_hmin.groupby("width")
    }
    at_wmax = rows[rows["width"] == wmax]
    per_combos = {
        _key(c): _ci(mean_ci(g["r2_heldout"], n_boot, seed=seed), len(g))
        for c, g in at_wmax.groupby("n_train_combos")
    }
    details: dict[str, Any] = {
        "r2_threshold": thr,
        "largest_width": _py(wmax),
        "smallest_width": _py(wmin),
        "min_holdout": _py(hmin),
        "max_holdout": _py(hmax),
        "n_seeds_top_cell": int(top.size),
        "width_gain": _ci(width_gain, top.size + small.size),
        "coverage_gain": _ci(coverage_gain, top.size + sparse.size),
        "heldout_r2_by_width_at_min_holdout": per_width,
        "heldout_r2_by_n_train_combos_at_largest_width": per_combos,
        **restriction,
    }
    if pooled := _pooled(rows):
        details["pooled_over"] = pooled

    wg_lo, wg_hi = width_gain[1], width_gain[2]
    if top.size < MIN_REPLICATES or (wmax != wmin and small.size < MIN_REPLICATES):
        verdict, reason = INCONCLUSIVE, f"fewer than {MIN_REPLICATES} seeds in a deciding cell"
    elif value[1] >= thr and wg_lo > 0:
        verdict, reason = SUPPORTED, f"CI of held-out R² at largest scale ≥ {thr} and width gain CI > 0"
    elif value[2] < thr:
        verdict, reason = NOT_SUPPORTED, f"CI of held-out R² at largest scale entirely below {thr}"
    elif wg_hi <= 0:
        verdict, reason = NOT_SUPPORTED, "width gain CI ≤ 0: widening does not help"
    else:
        verdict, reason = INCONCLUSIVE, "an interval straddles its threshold"
    details["reason"] = reason
    return name, verdict, value, len(rows), details


def _layer_means(series: pd.Series) -> dict[str, float]:
    """Mean R² per layer name over the ``decod_layers`` JSON strings."""
    acc: dict[str, list[float]] = {}
    for s in series.dropna():
        try:
            layers = json.loads(s) if isinstance(s, str) else dict(s)
        except (ValueError, TypeError):
            continue  # a malformed entry drops out rather than failing the report
        for k, v in layers.items():
            if v is not None and np.isfinite(float(v)):
                acc.setdefault(str(k), []).append(float(v))
    return {k: float(np.mean(v)) for k, v in acc.items()}


def _decodability(ok: pd.DataFrame, p: Mapping, n_boot: int, seed: int) -> tuple:
    """Spearman(decod_best, r2_heldout) across MLP trials, pairs-bootstrap CI."""
    name = "spearman_decodability_vs_heldout_r2"
    thr = float(p["rho_threshold"])
    rows = ok[(ok["model"] == "mlp") & np.isfinite(ok["decod_best"]) & np.isfinite(ok["r2_heldout"])]
    n = len(rows)
    details: dict[str, Any] = {"rho_threshold": thr}
    if n < 4:
        details["reason"] = "fewer than 4 trials with decodability and held-out R²"
        return name, INCONCLUSIVE, NAN3, n, details
    x, y = rows["decod_best"].to_numpy(float), rows["r2_heldout"].to_numpy(float)
    rho = correlation_ci(x, y, "spearman", n_boot, seed=seed)
    r = correlation_ci(x, y, "pearson", n_boot, seed=seed)
    high = rows[rows["r2_heldout"] >= 0.95]
    # Control: a random-init network of the same width is also linearly decodable; if
    # its decodability predicts held-out R² as well, the correlation mostly tracks width.
    rnd = rows[np.isfinite(rows["decod_random"])]
    rho_rnd = (correlation_ci(rnd["decod_random"].to_numpy(float), rnd["r2_heldout"].to_numpy(float), "spearman",
                              n_boot, seed=seed) if len(rnd) >= 4 else NAN3)
    # Does decodability predict held-out R² beyond width? Partial Spearman given log width,
    # for the trained networks and for the random-init control.
    cols = np.column_stack([x, y, np.log(rows["width"].to_numpy(float))])
    # (All at once over the resamples: a resample is a row of ``a``, shape (R, n, columns).)
    partial = bootstrap_ci(cols, lambda a: partial_spearman(a[..., 0], a[..., 1], a[..., 2]), n_boot, seed=seed,
                           vectorized=True)
    rcols = np.column_stack([rnd["decod_random"].to_numpy(float), rnd["r2_heldout"].to_numpy(float),
                             np.log(rnd["width"].to_numpy(float))])
    partial_rnd = (bootstrap_ci(rcols, lambda a: partial_spearman(a[..., 0], a[..., 1], a[..., 2]), n_boot,
                                seed=seed, vectorized=True) if len(rnd) >= 4 else NAN3)
    # What training adds: trained minus random-init partial Spearman, paired over the same trials.
    pcols = np.column_stack([rnd["decod_best"].to_numpy(float), rcols])
    excess = (bootstrap_ci(pcols, lambda a: partial_spearman(a[..., 0], a[..., 2], a[..., 3])
                           - partial_spearman(a[..., 1], a[..., 2], a[..., 3]), n_boot, seed=seed, vectorized=True)
              if len(rnd) >= 4 else NAN3)
    details.update({
        "partial_spearman_given_log_width": _ci(partial, n),
        "control_partial_spearman_random_init_given_log_width": _ci(partial_rnd, len(rnd)),
        "partial_spearman_excess_over_random_init": _ci(excess, len(rnd)),
        "control_spearman_random_init_vs_heldout_r2": _ci(rho_rnd, len(rnd)),
        "pearson": _ci(r, n),
        "mean_decod_best": _ci(mean_ci(x, n_boot, seed=seed), n),
        "mean_decod_input": _ci(mean_ci(rows["decod_input"], n_boot, seed=seed),
                                int(np.isfinite(rows["decod_input"]).sum())),
        "mean_decod_random": _ci(mean_ci(rows["decod_random"], n_boot, seed=seed),
                                 int(np.isfinite(rows["decod_random"]).sum())),
        "mean_decod_by_layer": _layer_means(rows["decod_layers"]) if "decod_layers" in rows else {},
        # The paper's anchor: decoder R² 0.90-0.99 whenever held-out R² ≥ 0.95.
        "n_trials_heldout_r2_ge_0.95": len(high),
        "min_decod_best_when_heldout_r2_ge_0.95": float(high["decod_best"].min()) if len(high) else math.nan,
    })
    if pooled := _pooled(rows, POOLABLE + ("width", "depth", "holdout")):
        details["pooled_over"] = pooled
    if not np.isfinite(rho[0]):
        verdict, reason = INCONCLUSIVE, "correlation undefined (constant input)"
    elif rho[1] > thr and partial[1] > 0 and not excess[1] <= 0:
        verdict, reason = SUPPORTED, (f"Spearman CI entirely above {thr}, and decodability still predicts "
                                      "held-out R² at fixed width (partial Spearman CI above 0), more than a "
                                      "random-init network's does (excess CI above 0)")
    elif rho[1] > thr and partial[1] > 0:
        verdict, reason = INCONCLUSIVE, ("decodability predicts held-out R² at fixed width, but a random-init "
                                         "network's decodability does nearly as well: the excess of the trained "
                                         "partial Spearman over the control's has a CI reaching 0")
    elif rho[2] < thr:
        verdict, reason = NOT_SUPPORTED, f"Spearman CI entirely below {thr}"
    elif np.isfinite(partial[2]) and partial[2] <= 0:
        verdict, reason = NOT_SUPPORTED, ("the correlation is carried by width: at fixed width decodability "
                                          "does not predict held-out R² (partial Spearman CI at or below 0)")
    elif rho[1] > thr:  # the correlation is clear; what holds it back is the fixed-width test
        verdict, reason = INCONCLUSIVE, (f"Spearman CI entirely above {thr}, but the partial Spearman at fixed "
                                         "width is not clearly above 0 (its CI reaches 0): the correlation may be "
                                         "carried by width")
    else:
        verdict, reason = INCONCLUSIVE, f"Spearman CI straddles {thr}"
    details["reason"] = reason
    return name, verdict, rho, n, details


def _reach(means: np.ndarray, params: np.ndarray, target: float) -> int | None:
    """Index of the cheapest cell (fewest params) whose mean ≥ target, or None."""
    ok_idx = np.flatnonzero(means >= target)
    return int(ok_idx[np.argmin(params[ok_idx])]) if ok_idx.size else None


def _param_ratio(
    m_means: np.ndarray, m_params: np.ndarray, h_means: np.ndarray, h_params: np.ndarray,
    target_r2: float, tol: float,
) -> tuple[float, float, int | None, int | None]:
    """(params_mlp / params_hypernet, target, MLP cell index, hypernet cell index).

    target = min(target_r2, best MLP mean − tol): the level the best MLP
    reaches, capped at target_r2. inf when only the hypernet reaches it; NaN
    when the hypernet grid never does (the ratio is then unknown, not 0: a
    larger hypernet might reach it) or neither does.
    """
    target = min(target_r2, float(np.max(m_means)) - tol) if m_means.size else target_r2
    im, ih = _reach(m_means, m_params, target), _reach(h_means, h_params, target)
    if im is not None and ih is not None:
        ratio = float(m_params[im] / h_params[ih])
    elif ih is not None:
        ratio = math.inf
    else:
        ratio = math.nan
    return ratio, target, im, ih


def _binding(ok: pd.DataFrame, p: Mapping, n_boot: int, seed: int) -> tuple:
    """Parameter ratio MLP / hypernet to reach the MLP's best held-out R²."""
    name = "param_ratio_mlp_over_hypernet"
    target_r2, tol = float(p["target_r2"]), float(p["tolerance"])
    details: dict[str, Any] = {"target_r2": target_r2, "tolerance": tol}
    base = ok[np.isfinite(ok["r2_heldout"])]
    mlp, hyp = base[base["model"] == "mlp"], base[base["model"] == "hypernet"]
    if hyp.empty or mlp.empty:
        details["reason"] = f"no ok {'hypernet' if hyp.empty else 'MLP'} trials"
        return name, INCONCLUSIVE, NAN3, 0, details
    common = set(mlp["holdout"].dropna()) & set(hyp["holdout"].dropna())
    if not common:
        details["reason"] = "MLP and hypernet share no holdout value"
        return name, INCONCLUSIVE, NAN3, 0, details
    h = min(common)
    details["holdout"] = _py(h)
    # Same encoding / split for both models (depth is part of a config here).
    at_h, restriction = restrict_to_mode(base[base["holdout"] == h], ("encoding", "split") + TRAINING_LIKE)
    details.update(restriction)
    mlp, hyp = at_h[at_h["model"] == "mlp"], at_h[at_h["model"] == "hypernet"]
    if hyp.empty or mlp.empty:
        details["reason"] = "MLP and hypernet share no encoding / split at this holdout"
        return name, INCONCLUSIVE, NAN3, 0, details

    def cells(rows: pd.DataFrame) -> tuple[list[tuple], list[np.ndarray], np.ndarray]:
        keys, vals, params = [], [], []
        for (w, d), g in rows[rows["holdout"] == h].groupby(["width", "depth"], dropna=False):
            keys.append((_py(w), _py(d)))
            vals.append(g["r2_heldout"].to_numpy(float))
            params.append(float(np.nanmedian(g["n_params"])))
        return keys, vals, np.asarray(params)

    m_keys, m_vals, m_par = cells(mlp)
    h_keys, h_vals, h_par = cells(hyp)
    n_m = len(m_vals)

    def stat(*groups: np.ndarray) -> float:
        means = np.array([g.mean() for g in groups])
        return _param_ratio(means[:n_m], m_par, means[n_m:], h_par, target_r2, tol)[0]

    ratio = bootstrap_ci(m_vals + h_vals, stat, n_boot, seed=seed)
    m_means = np.array([v.mean() for v in m_vals])
    h_means = np.array([v.mean() for v in h_vals])
    _, target, im, ih = _param_ratio(m_means, m_par, h_means, h_par, target_r2, tol)

    def describe(keys, vals, par, i):
        if i is None:
            return None
        return {"width": keys[i][0], "depth": keys[i][1], "n_params": _py(par[i]),
                "mean_r2_heldout": float(vals[i].mean()), "n_seeds": int(vals[i].size)}

    matched = []
    for j, hk in enumerate(h_keys):
        # The MLP config nearest in log parameter count.
        i = int(np.argmin(np.abs(np.log(m_par) - np.log(h_par[j]))))
        matched.append({
            "hypernet": describe(h_keys, h_vals, h_par, j),
            "mlp": describe(m_keys, m_vals, m_par, i),
            "r2_diff_hypernet_minus_mlp": _ci(mean_diff_ci(h_vals[j], m_vals[i], n_boot, seed=seed),
                                              h_vals[j].size + m_vals[i].size),
        })
    details.update({
        "target": float(target),
        "mlp_best_mean_r2_heldout": float(m_means.max()),
        "mlp_reaching": describe(m_keys, m_vals, m_par, im),
        "hypernet_reaching": describe(h_keys, h_vals, h_par, ih),
        "matched_params": matched,
    })
    rows_used = pd.concat([mlp, hyp])
    if pooled := _pooled(rows_used):
        details["pooled_over"] = pooled

    # Cells that fixed the point estimate (the cheapest ones reaching the target).
    deciding = [vals[i] for vals, i in ((m_vals, im), (h_vals, ih)) if i is not None]
    if ih is None and im is not None:
        # The hypernet needs more than its largest config: the ratio is below this bound.
        bound = float(m_par[im] / h_par.max())
        details["ratio_upper_bound"] = bound
        if bound <= 1:
            verdict, reason = NOT_SUPPORTED, (
                f"no hypernet config reaches held-out R² {target:.3g}, and the largest has {int(h_par.max())} "
                f"parameters, already at least the MLP's {int(m_par[im])}: the ratio is at most {bound:.3g}")
        else:
            verdict, reason = INCONCLUSIVE, (
                f"no hypernet config reaches held-out R² {target:.3g}; the largest has {int(h_par.max())} "
                f"parameters vs the MLP's {int(m_par[im])}, so the ratio is unknown (below {bound:.3g}): "
                "extend the hypernet widths")
    elif not deciding or any(v.size < MIN_REPLICATES for v in deciding):
        verdict, reason = INCONCLUSIVE, f"fewer than {MIN_REPLICATES} seeds in a deciding cell"
    elif ratio[1] > 1:
        verdict, reason = SUPPORTED, ("CI of the parameter ratio entirely above 1 (the ratio moves in grid steps: "
                                      "the CI shows whether resampled seeds change which configs first reach the "
                                      "target; a zero-width CI means every resample picked the same ones)")
    elif ratio[2] <= 1:
        verdict, reason = NOT_SUPPORTED, "CI of the parameter ratio ≤ 1"
    else:
        verdict, reason = INCONCLUSIVE, "CI of the parameter ratio straddles 1"
    if target < target_r2:
        reason += (f"; the target is the best MLP's mean held-out R² − {tol:g} = {target:.3g}, "
                   f"below target_r2 {target_r2:g}")
    details["reason"] = reason
    return name, verdict, ratio, len(rows_used), details


def _hull(ok: pd.DataFrame, p: Mapping, n_boot: int, seed: int) -> tuple:
    """Does width buy held-out R² outside the convex hull of training?

    The claim is two-sided: scale helps *inside* the hull and fails *outside*
    it. The deciding number is the out-of-hull width gain (mean out-of-hull R²
    at the largest width minus at the smallest, seeds resampled per width);
    the in-hull gain and the in − out gap at the largest width are details.
    supported: in-hull gain CI above 0 and out-of-hull gain CI at most
    ``margin``; not_supported: out-of-hull gain CI above ``margin`` (scale
    measurably helps outside the hull); otherwise inconclusive.
    """
    name = "outhull_r2_width_gain"
    margin = float(p["margin"])
    details: dict[str, Any] = {"margin": margin}
    rows = ok[(ok["model"] == "mlp") & (ok["n_inhull"] > 0) & (ok["n_outhull"] > 0)
              & np.isfinite(ok["r2_inhull"]) & np.isfinite(ok["r2_outhull"])]
    rows, restriction = restrict_to_mode(rows)
    details.update(restriction)
    if rows.empty:
        details["reason"] = "no ok MLP trials with both in-hull and out-of-hull combinations"
        return name, INCONCLUSIVE, NAN3, 0, details
    wmax, wmin = rows["width"].max(), rows["width"].min()
    big, small = rows[rows["width"] == wmax], rows[rows["width"] == wmin]
    gap = (big["r2_inhull"] - big["r2_outhull"]).to_numpy(float)

    per_width = {}
    for w, g in rows.groupby("width"):
        per_width[_key(w)] = {
            "inhull": _ci(mean_ci(g["r2_inhull"], n_boot, seed=seed), len(g)),
            "outhull": _ci(mean_ci(g["r2_outhull"], n_boot, seed=seed), len(g)),
        }
    gains = {
        col: mean_diff_ci(big[col], small[col], n_boot, seed=seed) if wmax != wmin else NAN3
        for col in ("r2_inhull", "r2_outhull")
    }
    value = gains["r2_outhull"]
    details.update({"largest_width": _py(wmax), "smallest_width": _py(wmin),
                    "n_trials_largest_width": len(big), "n_trials_smallest_width": len(small),
                    "inhull_width_gain": _ci(gains["r2_inhull"], len(big) + len(small)),
                    "outhull_width_gain": _ci(gains["r2_outhull"], len(big) + len(small)),
                    "inhull_minus_outhull_at_largest_width": _ci(mean_ci(gap, n_boot, seed=seed), gap.size),
                    "r2_by_width": per_width})
    if pooled := _pooled(rows, POOLABLE + ("holdout",)):
        details["pooled_over"] = pooled

    if wmax == wmin:
        verdict, reason = INCONCLUSIVE, "only one width has both in-hull and out-of-hull combinations"
    elif min(len(big), len(small)) < MIN_REPLICATES:
        verdict, reason = INCONCLUSIVE, f"fewer than {MIN_REPLICATES} trials at the smallest or largest width"
    elif value[1] > margin:
        verdict, reason = NOT_SUPPORTED, f"out-of-hull R² grows with width: gain CI entirely above {margin}"
    elif value[2] <= margin and gains["r2_inhull"][1] > 0:
        verdict, reason = SUPPORTED, (f"in-hull R² grows with width (gain CI above 0) while the out-of-hull "
                                      f"gain CI stays at or below {margin}")
    else:
        verdict, reason = INCONCLUSIVE, "the gains' CIs do not separate in-hull help from out-of-hull failure"
    details["reason"] = reason
    return name, verdict, value, len(rows), details


# claim -> rule(ok rows, params, n_boot, seed) -> (statistic, verdict, triple, n, details)
RULES: dict[str, Callable[..., tuple]] = {
    "scaling": _scaling,
    "decodability": _decodability,
    "binding": _binding,
    "hull": _hull,
}


def study_as_dict(study: Any) -> dict[str, Any]:
    """Accept a plain mapping or a pydantic model (anything with model_dump)."""
    if hasattr(study, "model_dump"):
        return study.model_dump()
    return dict(study or {})


#: Claim → the models whose largest width its verdict depends on, given the rule's details
#: (:func:`lost_largest_widths`). Binding's target is the MLP's best R²; its hypernet side needs
#: the widest hypernet only when no hypernet reached the target (the verdict then rests on it).
LARGEST_SCALE_CLAIMS: dict[str, Callable[[dict], tuple[str, ...]]] = {
    "scaling": lambda d: ("mlp",),
    "hull": lambda d: ("mlp",),
    "binding": lambda d: ("mlp",) if d.get("hypernet_reaching") else ("mlp", "hypernet"),
}


def lost_largest_widths(df: pd.DataFrame, ok: pd.DataFrame, models: tuple[str, ...]) -> dict[str, dict]:
    """Models whose widest planned configuration has no ok trial with a held-out R².

    Inputs: every row of the results table (any status) and its ok rows
    (:func:`ok_rows`). Output: model → ``{"planned_largest_width",
    "largest_ok_width" (None if none), "n_planned", "statuses"}`` (statuses of
    the widest planned configuration's trials, with counts); empty when nothing
    was lost.
    """
    if "model" not in df or "width" not in df:
        return {}
    out = {}
    widths = pd.to_numeric(df["width"], errors="coerce")
    for m in models:
        planned = widths[df["model"].astype(str) == m].dropna()
        if planned.empty:
            continue
        wmax = planned.max()
        got = ok.loc[(ok["model"] == m) & np.isfinite(ok["r2_heldout"]), "width"].dropna()
        if not got.empty and got.max() >= wmax:
            continue
        at = df[(df["model"].astype(str) == m) & (widths == wmax)]
        statuses = at["status"].astype(str).value_counts() if "status" in at else pd.Series(dtype=int)
        out[m] = {"planned_largest_width": _py(wmax), "largest_ok_width": _py(got.max()) if not got.empty else None,
                  "n_planned": len(at), "statuses": {str(k): int(v) for k, v in statuses.items()}}
    return out


def compute_verdicts(
    df: pd.DataFrame, study: Mapping[str, Any], n_boot: int = 2000, seed: int = 0
) -> list[dict[str, Any]]:
    """Verdict dicts for the claims listed in ``study["verdicts"]``.

    Inputs: the results table (one row per trial; only ``status == "ok"``
    rows are used), the study config as a dict (``verdicts``: claim ->
    threshold dict, missing keys take ``DEFAULTS``; ``anchors``: claim ->
    reference text), bootstrap size and seed.
    Output: a list, in the study's order, of dicts with keys ``claim,
    verdict, statistic, value, ci_low, ci_high, n_trials, details,
    reference``; ``verdict`` is "supported", "not_supported" or
    "inconclusive"; numbers are Python floats (NaN/inf possible; the report
    converts them for strict JSON). Claims without a rule here are skipped.
    """
    study = study_as_dict(study)
    rules = study.get("verdicts") or {}
    anchors = study.get("anchors") or {}
    ok = ok_rows(df)
    out = []
    for claim, params in rules.items():
        if claim not in RULES:
            continue
        given = {k: v for k, v in dict(params or {}).items() if v is not None}
        merged = {**DEFAULTS[claim], **given}
        stat, verdict, triple, n, details = RULES[claim](ok, merged, n_boot, seed)
        lost = lost_largest_widths(df, ok, LARGEST_SCALE_CLAIMS[claim](details) if claim in LARGEST_SCALE_CLAIMS else ())
        if lost:
            # The statistic was computed at a smaller width than its name says: kept in details only.
            details["lost_largest_width"] = lost
            details["value_without_the_lost_width"] = _ci(triple, n)
            widths = " and ".join(
                f"{m} width {v['planned_largest_width']:g} "
                f"({', '.join(f'{c} {k}' for k, c in v['statuses'].items()) or 'no trials'})"
                for m, v in lost.items())
            details["reason"] = (f"no ok trial at the largest planned {widths}: the rule would decide at a smaller "
                                 f"width than the study asked about (its own result there: {verdict}, "
                                 f"{details.get('reason', '')})")
            verdict, triple = INCONCLUSIVE, NAN3
        out.append(_verdict(claim, stat, verdict, triple, n, details, anchors.get(claim)))
    return out


# The subgraphs and modularity studies' rules live in their own modules (imported last: they use the helpers above).
from . import modularity_verdicts as _modularity, subgraph_verdicts as _subgraphs  # noqa: E402

for _family in (_subgraphs, _modularity):
    RULES.update(_family.RULES)
    DEFAULTS.update(_family.DEFAULTS)
