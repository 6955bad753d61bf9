"""Verdict rule of the ``ceiling`` study: does constraint satisfaction plateau below 100% as models grow?

Rows (:func:`prepare_rows`): ok trials, numeric columns coerced. The *size sweep* is the trained-transformer
rows (``model.kind`` transformer) at the most common training-set size, step count and depth (where they
vary); each row is one (size, seed) point. Real-model rows (``model.kind`` lm) never enter a fit; their
numbers are listed in the details.

``constraint_satisfaction_plateaus``, per family ``f`` (column ``sat_f``: test constraint satisfaction,
:mod:`.scoring`): fit ``sat_f`` against non-embedding parameters with the saturating curve and the power law
(:func:`.fits.compare`); ``ΔAIC = AIC_power − AIC_saturating``; the asymptote ``a`` with its percentile
bootstrap interval ``[lo, hi]`` (seeds resampled within each size).

- the family *plateaus* when the asymptote is identified (:func:`identified`: ``a`` below its bound 1.5
  and the exponent ``c`` above 0.01; else the curve is straight in log N and any ``a`` fits), ``ΔAIC ≥ delta_aic`` (the saturating curve clearly preferred) and
  ``hi < 1 − margin``;
- it *contradicts* when ``lo ≥ 1 − margin`` with the asymptote identified (:func:`identified`) (the asymptote cannot lie below the margin), or when the power
  law is clearly preferred (``ΔAIC ≤ −delta_aic``) and satisfaction climbs: the largest size's mean minus the
  smallest's has a Welch interval above 0 (:func:`bindscale.stats.strata_mean_ci`). A clearly preferred
  power law over flat data is no contradiction: within the sweep a flat line is both a plateau and an
  extremely slow power law, so it stays undecided.

Supported when every family plateaus; not supported when any contradicts (the contradicting family with
the highest lower bound decides); inconclusive otherwise (the family with the highest upper bound decides,
i.e. the weakest support). Inconclusive whatever the numbers when the table has no trained rows, a
family's column is missing or holds NaN / infinite values, fewer than ``min_sizes`` distinct sizes or fewer
than :data:`bindscale.report.verdicts.MIN_REPLICATES` seeds at some size, degenerate values (every value
equal — all zero, say — or zero spread at every size: :func:`bindscale.report.verdicts.degenerate`), or a
failed fit. The deciding number is the asymptote ``a`` and its interval.

Interval coverage (``tests/unit/test_ceiling_fits.py::test_asymptote_interval_coverage``, run with
``-m slow``): on planted saturating data at 5 sizes × 8 seeds (a = 0.58, noise sd 0.03) the 95% percentile
interval covered the planted asymptote in 87 of 100 simulated tables: it undercovers, so a "below the margin"
reading is somewhat optimistic.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
import pandas as pd

from bindscale.report.verdicts import MIN_REPLICATES, NAN3, _ci, coerce_numeric, degenerate, ok_rows, restrict_to_mode
from bindscale.stats import strata_mean_ci

from .fits import compare
from .problems import FAMILIES

METRICS = ("sat", "feas", "gap", "optimal", "unparsable")
NUMERIC = ("budget", "layers", "n_train", "seed", "steps", "n_params", "n_params_nonembed",
           *(f"{m}_{f}{s}" for m in METRICS for f in FAMILIES for s in ("", "_heldout", "_train")))
#: Resamples of the asymptote's bootstrap (each refits the curve: the engine's 2000 would take minutes).
N_BOOT = 400
_FIXED = ("n_train", "steps", "layers")
#: The saturating fit's upper bound on ``a`` (:mod:`.fits`) and the exponent below which it is flat.
A_MAX, C_FLAT = 1.5, 0.01


def prepare_rows(df: pd.DataFrame) -> pd.DataFrame:
    """Ok rows with the numeric columns coerced (missing ones added as NaN) and ``model_kind`` (transformer / lm)."""
    out = coerce_numeric(ok_rows(df, NUMERIC), NUMERIC)
    kind = out["model.kind"] if "model.kind" in out else pd.Series("transformer", index=out.index)
    out["model_kind"] = kind.fillna("transformer").astype(str)
    return out


def trained_rows(rows: pd.DataFrame) -> pd.DataFrame:
    """The trained-transformer rows that have a budget."""
    if rows.empty:
        return rows
    rows = rows[rows["model_kind"] == "transformer"] if "model_kind" in rows else rows
    return rows[rows["budget"].notna()] if "budget" in rows else rows.iloc[0:0]


def size_sweep(rows: pd.DataFrame) -> tuple[pd.DataFrame, dict]:
    """The size-sweep rows (see the module docstring) and a note of what was held fixed."""
    return restrict_to_mode(trained_rows(rows), _FIXED)


def _inconclusive(stat: str, n: int, details: dict, reason: str) -> tuple:
    details["reason"] = reason
    return stat, "inconclusive", NAN3, n, details


def family_fit(rows: pd.DataFrame, family: str, x_col: str, min_sizes: int, n_boot: int, seed: int,
               metric: str = "sat") -> dict:
    """Fits of ``{metric}_{family}`` against ``x_col`` over ``rows``; ``problem`` set when they cannot decide."""
    col = f"{metric}_{family}"
    entry: dict = {"column": col, "x": x_col}
    if col not in rows or rows[col].isna().all():
        entry["problem"] = f"column {col} is missing"
        return entry
    g = rows[[x_col, "seed", col]]
    if not np.isfinite(g[[x_col, col]].to_numpy(float)).all():
        entry["problem"] = f"column {col} or {x_col} has NaN or infinite values"
        return entry
    g = g.groupby([x_col, "seed"], as_index=False)[col].mean()  # a repeated (size, seed) counts once
    sizes = sorted(g[x_col].unique())
    cells = [g.loc[g[x_col] == s, col].to_numpy(float) for s in sizes]
    entry["sizes"] = [float(s) for s in sizes]
    entry["means"] = [float(c.mean()) for c in cells]
    entry["seeds"] = [int(c.size) for c in cells]
    if len(sizes) < min_sizes:
        entry["problem"] = f"{len(sizes)} distinct sizes, fewer than min_sizes={min_sizes:g}"
        return entry
    if min(c.size for c in cells) < MIN_REPLICATES:
        entry["problem"] = f"a size has {min(c.size for c in cells)} seeds, fewer than {MIN_REPLICATES}"
        return entry
    why = degenerate(cells, discrete=True)
    if why:
        entry["problem"] = why
        return entry
    r = compare(g[x_col].to_numpy(float), g[col].to_numpy(float), n_boot=n_boot, seed=seed)
    sat, pw = r["saturating"], r["power_law"]
    entry |= {"saturating": sat.params, "power_law": pw.params, "aic_saturating": sat.aic, "aic_power_law": pw.aic,
              "delta_aic": r["delta_aic"], "x_min": r["x_min"],
              "asymptote": _ci(r["asymptote"], len(g))}
    entry["identified"] = identified(entry) if sat.ok else False
    if not (sat.ok and pw.ok):
        entry["problem"] = f"a fit failed: {sat.error or pw.error}"
    elif not all(math.isfinite(v) for v in r["asymptote"]):
        entry["problem"] = "the asymptote's bootstrap interval is undefined"
    # climbing: largest minus smallest size, Welch interval
    entry["climb"] = _ci(strata_mean_ci([cells[-1], -cells[0]], [1.0, 1.0]), cells[0].size + cells[-1].size)
    return entry


def identified(e: dict) -> bool:
    """Whether the saturating fit pins its asymptote down: ``a`` off its upper bound and the exponent ``c`` above
    :data:`C_FLAT` (otherwise the curve is a straight line in log N over the sweep and ``a`` trades off with
    ``b``: any asymptote fits)."""
    p = e.get("saturating") or {}
    return bool(p) and p["a"] < A_MAX - 1e-6 and p["c"] > C_FLAT


def _state(e: dict, margin: float, delta: float) -> str:
    """``plateau`` / ``contradicts`` / ``open`` for a family entry without a problem."""
    a = e["asymptote"]
    if identified(e) and a["ci_low"] >= 1 - margin:
        return "contradicts"
    if e["delta_aic"] <= -delta and e["climb"]["ci_low"] > 0:
        return "contradicts"
    if identified(e) and e["delta_aic"] >= delta and a["ci_high"] < 1 - margin:
        return "plateau"
    return "open"


def lm_points(rows: pd.DataFrame) -> list[dict]:
    """Real-model rows: name, backend, parameters and each family's test satisfaction / feasibility / optimal rate."""
    out = []
    if rows.empty or "model_kind" not in rows:
        return out
    for _, r in rows[rows["model_kind"] == "lm"].iterrows():
        p = {"model": str(r.get("model_name", "")), "endpoint": r.get("endpoint"), "n_params": r.get("n_params")}
        for f in FAMILIES:
            for m in ("sat", "feas", "optimal", "unparsable"):
                v = r.get(f"{m}_{f}")
                if v is not None and not pd.isna(v):
                    p[f"{m}_{f}"] = float(v)
        out.append({k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in p.items()})
    return out


def constraint_satisfaction_plateaus(ok: pd.DataFrame, thresholds: Mapping[str, float], n_boot: int = 2000,
                                     seed: int = 0) -> tuple:
    """The plateau rule (see the module docstring)."""
    stat = "asymptote_sat"
    margin, delta = float(thresholds["margin"]), float(thresholds["delta_aic"])
    min_sizes = int(thresholds["min_sizes"])
    n_boot = min(int(n_boot), N_BOOT)
    if ok.empty or "budget" not in ok or "seed" not in ok:
        return _inconclusive(stat, 0, {}, "no trials with a budget and a seed")
    if "model_kind" not in ok:
        ok = ok.assign(model_kind="transformer")
    rows, note = size_sweep(ok)
    details: dict = dict(note) | {"margin": margin, "delta_aic": delta, "lm_points": lm_points(ok)}
    if rows.empty or rows["seed"].isna().all():
        return _inconclusive(stat, 0, details, "no trained-transformer trials")
    x_col = "n_params_nonembed" if "n_params_nonembed" in rows and rows["n_params_nonembed"].notna().all() else "budget"
    families = [f for f in FAMILIES if f"sat_{f}" in rows and rows[f"sat_{f}"].notna().any()]
    if not families:
        return _inconclusive(stat, len(rows), details, "no family's satisfaction column (sat_<family>) has a value")
    by_family: dict = {}
    for f in families:
        e = family_fit(rows, f, x_col, min_sizes, n_boot, seed)
        if "problem" not in e:
            e["state"] = _state(e, margin, delta)
        by_family[f] = e
    details["by_family"] = by_family
    details["x"] = x_col
    n = len(rows)
    contra = [f for f, e in by_family.items() if e.get("state") == "contradicts"]
    if contra:
        f = max(contra, key=lambda k: by_family[k]["asymptote"]["ci_low"])
        details["family_used"] = f
        return stat, "not_supported", _triple(by_family[f]), n, details
    problems = [f for f, e in by_family.items() if "problem" in e]
    if problems:
        f = problems[0]
        details["family_used"] = f
        e = by_family[f]
        return (stat, "inconclusive", _triple(e) if "asymptote" in e else NAN3, n,
                details | {"reason": f"family {f}: {e['problem']}"})
    f = max(by_family, key=lambda k: by_family[k]["asymptote"]["ci_high"])
    details["family_used"] = f
    if all(e["state"] == "plateau" for e in by_family.values()):
        return stat, "supported", _triple(by_family[f]), n, details
    e = by_family[f]
    details["reason"] = (f"family {f}: no clear plateau (ΔAIC {e['delta_aic']:.2f} against the threshold {delta:g}; "
                         f"asymptote interval [{e['asymptote']['ci_low']:.3f}, {e['asymptote']['ci_high']:.3f}] "
                         f"against 1 − margin = {1 - margin:g})")
    return stat, "inconclusive", _triple(e), n, details


def _triple(e: dict) -> tuple[float, float, float]:
    a = e["asymptote"]
    return a["value"], a["ci_low"], a["ci_high"]


def data_fits(rows: pd.DataFrame, min_sizes: int = 3, n_boot: int = 200, seed: int = 0) -> dict:
    """The data axis: per family, satisfaction against training-set size at the budget with most training-set
    sizes (descriptive, not a verdict)."""
    tr = trained_rows(rows)
    if tr.empty or "n_train" not in tr or tr["n_train"].nunique() < 2:
        return {}
    counts = tr.groupby("budget")["n_train"].nunique()
    budget = max(b for b, c in counts.items() if c == counts.max())
    g = tr[tr["budget"] == budget]
    out = {"budget": float(budget)}
    for f in FAMILIES:
        if f"sat_{f}" in g:
            out[f] = family_fit(g, f, "n_train", min_sizes, n_boot, seed)
    return out


def largest_planned_size_missing(df: pd.DataFrame, ok: pd.DataFrame, details: Mapping, verdict: str):
    """Guard: the fit did not reach the largest size the study planned (its trials failed or diverged)."""
    if "budget" not in df or "by_family" not in details:
        return None
    kinds = df["model.kind"].fillna("transformer") if "model.kind" in df else pd.Series("transformer", index=df.index)
    planned = pd.to_numeric(df.loc[kinds == "transformer", "budget"], errors="coerce").max()
    tr = trained_rows(prepare_rows(df))
    got = tr["budget"].max() if not tr.empty else float("nan")
    if np.isfinite(planned) and not (np.isfinite(got) and got >= planned):
        return (f"the largest planned size ({planned:g}) has no usable trial", "value_without_largest_size")
    return None
