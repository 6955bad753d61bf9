"""Verdict rules of the scaling study (scaling / decodability / binding / binding_tpr / hull).

Each rule takes the ok rows (:func:`prepare_rows`) and returns one verdict. Each verdict is decided by one number and its 95%
interval over seeds/trials (``bindscale.verdicts.stats``: t intervals with Hall's skewness correction for means,
expanded-percentile bootstraps for ratios and correlations):

- scaling: Redhardt, Schug, Akram 2025, "Scaling can lead to compositional
  generalization" (arXiv 2507.07207): plain MLPs reach high held-out R² once
  width and coverage of the combination space grow.
- decodability: same source: linear decodability of the constituents from
  hidden activations predicts held-out success.
- binding: Schug et al. ICLR 2024, "Discovering modular solutions that
  generalize compositionally"; Greff, van Steenkiste, Schmidhuber 2020, "On the
  Binding Problem in Artificial Neural Networks": an explicit binding
  architecture (hypernetwork over module banks) needs far fewer parameters.
- binding_tpr: bindscale's hypothesis, the binding rule applied to a second
  mechanism: a tensor-product binding student (Smolensky 1990, "Tensor product
  variable binding and the representation of symbolic structures in
  connectionist systems"; compressed to the Hadamard product as in Schlag et al.
  2019, "Enhancing the Transformer with Explicit Relational Encoding for Math
  Problem Solving") needs fewer parameters than the MLP.
- hull: the project's synthesis: scale helps for held-out combinations inside
  the convex hull of training, not outside it.

Only ``status == "ok"`` rows enter the statistics. Width and parameter
comparisons (scaling, binding, binding_tpr, hull) hold encoding, split and (except for
the binding claims, where depth is part of a config) depth at their most common value,
and say so in ``details``; the binding claims compare two students, which must share every task and training
field of the trial config: the sweep axes among them at a value both have, every other field at one value, else
the claim is inconclusive and names the fields (:func:`shared_config`); decodability pools all MLP trials on purpose, as
the claim is that decodability predicts success across configurations.
Other config columns that vary are listed under ``details["pooled_over"]``.
A verdict whose deciding
cell has fewer than ``MIN_REPLICATES`` values is "inconclusive": a bootstrap
over one value has zero width and says nothing about seed variability.
The binding claims read their parameter axis from the records' ``n_params``: a deciding record whose count is
not the one its config gives (:func:`expected_n_params`, exact match; :func:`bindscale.kit.param_count_mismatch`)
makes the claim inconclusive, naming the records, since a student recorded at a third of its size would move
the ratio threefold.
So is a claim about the largest scale (scaling, hull, binding, binding_tpr) when every
trial of the widest planned model its verdict rests on diverged or failed:
the rule would otherwise answer at a smaller width than the study asked
about (:func:`lost_largest_widths`); and a binding claim when its planned hold-out, or a planned
cell of a ladder up to the target, has no usable trial (:func:`ladder_guard`).

Every claim has a competence gate (``min_r2_id``: the in-distribution
R² of the deciding students; the narrowest-width baselines of the width
comparisons are not gated, and of decodability's pooled grid only the largest width is). The binding claims
gate every cell of both ladders that the interpolation reads, per student: the cell that reaches the target at
``min_r2_id``, the cells below it (which miss that level for want of capacity) by
``min_id_minus_heldout``: a student's in-distribution R² must be at least the held-out R² it is read at; and a
ladder whose held-out R² falls with width is inconclusive. A table without a
seed column, or with trials lacking their seed, decides nothing
(:func:`_seedless`); scaling's width gain must exceed ``min_gain``; decodability without a spread of held-out R² is inconclusive; and
every reason states the deciding numbers with their intervals.
"""

from __future__ import annotations

import math
import re
import warnings
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pandas as pd

from bindscale.kit import (
    CONCLUSIVE_SEEDS,
    MIN_REPLICATES,
    NAN3,
    ci_entry,
    deciding_cell,
    finite_values,
    json_key,
    no_room,
    pooled_columns,
    to_python,
    degenerate,
    restrict_to_mode,
    Verdict,
    metric_table,
    INCONCLUSIVE,
    NOT_SUPPORTED,
    SUPPORTED,
    ok_rows,
    param_count_mismatch,
    bootstrap_ci,
    correlation_ci,
    mean_ci,
    mean_diff_ci,
    partial_spearman_within,
    strata_mean_ci,
)
from bindscale.studies.scaling.config import ModelConfig, TaskConfig, TrialConfig
from bindscale.studies.scaling.params import encoding_dim, student_params

from . import CLAIMS  # noqa: E402  (the plugin object: claims, their statements and defaults)

STATEMENTS: dict[str, str] = {c.name: c.statement for c in CLAIMS}
#: Default thresholds, used for any key the study leaves out.
DEFAULTS: dict[str, dict[str, float]] = {c.name: dict(c.defaults) for c in CLAIMS}

NUMERIC_COLUMNS = (
    "width", "depth", "holdout", "M", "K", "steps", "seed", "lr", "weight_decay",
    "n_params", "batch_tasks", "n_train_combos", "n_heldout_combos", "n_inhull", "n_outhull",
    "r2_id", "r2_heldout", "r2_inhull", "r2_outhull", "r2_heldout_taskmean", "withheld_pairs",
    "decod_best", "decod_input", "decod_random", "decod_cv", "decod_random_cv",
)
# Config columns that are not sweep axes of a claim; when they vary, the
# claim pools over them and says so in its details.
POOLABLE = ("encoding", "split", "M", "K", "steps", "lr", "weight_decay", "batch_tasks", "activation",
            "withheld_pairs")
#: Per-arity hull columns written by the trainer: ``r2_inhull_k2``, ``n_outhull_k3``, …
ARITY_COLUMN = re.compile(r"^(r2|n)_(inhull|outhull)_k(\d+)$")

def prepare_rows(df: pd.DataFrame) -> pd.DataFrame:
    """The ok rows as this study's rules read them (:func:`bindscale.kit.ok_rows`): its numeric columns (and
    per-arity hull columns) as floats, ``model`` as text (a table without it counts no row as any model), and
    :data:`ID_MINUS_HELDOUT` (``r2_id − r2_heldout``, NaN where either is missing) for the binding claims' gate."""
    out = ok_rows(df, NUMERIC_COLUMNS)
    for col in out.columns:
        if ARITY_COLUMN.match(str(col)):
            out[col] = pd.to_numeric(out[col], errors="coerce")
    out["model"] = out["model"].astype(str) if "model" in out else ""
    # The binding claims' gate below the target reads each student's in-distribution R² over its held-out R².
    out[ID_MINUS_HELDOUT] = (out["r2_id"] - out["r2_heldout"] if "r2_id" in out and "r2_heldout" in out
                             else np.nan)
    return out


def design_rows(rows: pd.DataFrame, withheld: bool) -> pd.DataFrame:
    """The rows of the grid designed for a claim: withheld module pairs (the hull grid) or none.

    The hull claim needs out-of-hull held-out combinations in every seed, which its grid gets by
    withholding module pairs (``bindscale.studies.scaling.tasks.splits``); the other claims are about random
    hold-outs as their source uses. Tables without the column, or with only one kind, are used whole.
    """
    if "withheld_pairs" not in rows or rows.empty:
        return rows
    w = rows["withheld_pairs"].fillna(0) > 0
    pick = rows[w] if withheld else rows[~w]
    return pick if len(pick) else rows


# Columns held fixed (at their most common value) for width / parameter
# comparisons: a cell mean must not mix, e.g., identity and token encodings
# just because an extra grid ran some encodings at one width, nor count runs
# of different lengths or learning rates as seeds of one cell.
TRAINING_LIKE = ("M", "K", "steps", "lr", "weight_decay", "batch_tasks", "activation")
COMPARE_LIKE = ("encoding", "split", "depth") + TRAINING_LIKE
#: Every task and training field of the trial config (:class:`TrialConfig`'s ``task`` and ``train`` sections), by
#: the column a results table holds it under (the short axis name where there is one, ``task.teacher`` otherwise),
#: read off the config so that a field added to it is compared too.
TASK_AND_TRAINING = tuple(c for c in TrialConfig.column_names()
                          if TrialConfig.AXES.get(c, c).split(".")[0] in ("task", "train"))
#: The binding claims' sweep axes among them, held at one value both students have (a table may hold extra grids
#: over them, such as decodability's other encodings): the width comparisons' columns less depth. The hold-out is
#: the rule's own choice and the withheld pairs :func:`design_rows`'.
BINDING_LIKE = ("encoding", "split") + TRAINING_LIKE
#: Every other task and training field: no study grid sweeps it (a tier fixes it for all its trials), so the compared
#: trials must hold one value of it; two are two tiers, or a recipe changed between runs, merged into one table.
BINDING_FIXED = tuple(c for c in TASK_AND_TRAINING if c not in BINDING_LIKE + ("holdout", "withheld_pairs"))
#: The prepared rows' column of each student's in-distribution R² minus its held-out R² (:func:`prepare_rows`), the
#: metric of the binding claims' gate on the ladder cells below the target.
ID_MINUS_HELDOUT = "id_minus_heldout_r2"


# ------------------------------------------------------------------ claims --

def _num(t: tuple) -> str:
    """A statistic with its interval in words: "0.115 [0.040, 0.190]"."""
    return f"{t[0]:.3f} [{t[1]:.3f}, {t[2]:.3f}]"


def one_record_per_seed(rows: pd.DataFrame) -> pd.DataFrame:
    """``rows`` with the records that repeat a configuration and seed averaged into one record.

    The engine drops exact duplicates where a table holds every axis column, but a table lacking some of them
    cannot tell a rerun of a seed from another setting of a missing axis (it says so, ``ambiguous_records``):
    counted as they stand, two runs of one seed would be two seeds, and an interval would be narrower than the
    seeds allow. Records equal in every configuration column the table holds (:meth:`TrialConfig.column_names`,
    ``model`` and ``seed`` included; NaN equal to NaN) are one seed here: numeric columns averaged, others
    taken from the first. Rows with a distinct configuration pass unchanged, in their order.
    """
    keys = [c for c in ("model", *TrialConfig.column_names()) if c in rows.columns]
    if rows.empty or "seed" not in keys:
        return rows
    key_frame = rows[keys].astype(object).where(rows[keys].notna(), "<NA>").astype(str)
    group = key_frame.apply(tuple, axis=1)
    if not group.duplicated().any():
        return rows
    numeric = [c for c in rows.columns if c not in keys and pd.api.types.is_numeric_dtype(rows[c])]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # an all-NaN column within a seed stays NaN
        means = rows[numeric].groupby(group.to_numpy(), sort=False).mean()
    first = rows.loc[~group.duplicated()].copy()
    first[numeric] = means.loc[group[~group.duplicated()].to_numpy()].to_numpy()
    return first


def _seedless(rows: pd.DataFrame, what: str) -> str | None:
    """Why ``rows`` cannot be counted seed by seed (no seed column, or trials without a seed), or None.

    Intervals resample seeds and each configuration and seed counts once; a
    record without its seed can be neither, so a claim is inconclusive rather than decided on rows.
    """
    if "seed" not in rows or not rows["seed"].notna().any():
        return (f"the table has no seed column for its {what} trials: intervals resample seeds and each "
                "configuration and seed counts once, so nothing can be decided without it")
    missing = int(rows["seed"].isna().sum())
    if missing:
        return (f"{missing} of {len(rows)} {what} trials have no seed: they cannot be counted once per seed, and "
                "dropping them would let the rest decide")
    return None


def _fits(rows: pd.DataFrame, by: str) -> dict[str, dict]:
    """In-distribution R² (``r2_id``) per value of ``by``, reported beside the deciding held-out numbers."""
    if "r2_id" not in rows:
        return {}
    return {json_key(k): ci_entry(mean_ci(g["r2_id"]), int(np.isfinite(g["r2_id"]).sum()))
            for k, g in rows.groupby(by)}


def scaling(ok: pd.DataFrame, p: Mapping, n_boot: int, seed: int) -> Verdict:
    """Held-out R² at the largest width and best coverage, plus the width and coverage gains.

    Supported: the held-out R² interval at the largest scale at or above ``r2_threshold``, the width gain
    (largest − smallest width at the best coverage) with its interval above ``min_gain``, the coverage gain
    (best − worst coverage at the largest width) with its interval above 0, and no narrower width clearly
    better. Not supported: the held-out R² interval below the threshold, the width gain's interval below
    ``min_gain`` (unless the metric's ceiling leaves no room for it), or the coverage gain's below 0.
    The deciding cells are the largest width at both coverages (gated: their students must fit their
    training tasks) and the smallest width at the best coverage (not gated: a narrow student that cannot
    fit is what widening is claimed to fix; its in-distribution R² is reported beside). The coverage gain
    has no margin: in the default grid its whole range (hold-out 0.25 to 0.75 at width 256) may already
    cover the task space enough (one seed at 2000 steps: 0.958 vs 0.911).
    """
    name = "heldout_r2_at_largest_scale"
    thr, m = float(p["r2_threshold"]), float(p.get("min_gain", 0.05))
    rows = design_rows(ok[(ok["model"] == "mlp") & np.isfinite(ok["r2_heldout"])], withheld=False)
    rows, restriction = restrict_to_mode(rows, COMPARE_LIKE)
    rows = one_record_per_seed(rows)  # reruns of a seed are one seed
    if rows.empty:
        return Verdict(name, INCONCLUSIVE, NAN3, 0, {"reason": "no ok MLP trials with held-out R²"})
    if why := _seedless(rows, "MLP"):
        return Verdict(name, INCONCLUSIVE, NAN3, len(rows), {"r2_threshold": thr, "missing_axis": "seed",
                                                            "reason": why})
    # The claim speaks of two axes (width and coverage): each must be recorded and have two values with results.
    single = None
    for axis, words in (("width", "width"), ("holdout", "hold-out (coverage)")):
        if axis not in rows or not rows[axis].notna().any():
            return Verdict(name, INCONCLUSIVE, NAN3, len(rows), {
                "r2_threshold": thr, "missing_axis": axis,
                "reason": f"the table records no {words} for its MLP trials: the claim's {words} effect cannot be "
                          "measured"})
        if single is None and rows[axis].nunique(dropna=True) < 2:
            only = to_python(rows[axis].dropna().iloc[0])
            single = (axis, f"only one {words} ({only}) has ok MLP trials with a held-out R² (any other planned one "
                            f"failed, diverged or was not run): the claim's {words} effect needs at least two")

    wmax, wmin = rows["width"].max(), rows["width"].min()
    hmin, hmax = rows["holdout"].min(), rows["holdout"].max()

    def cell(w: float, h: float) -> np.ndarray:
        return finite_values(rows.loc[(rows["width"] == w) & (rows["holdout"] == h), "r2_heldout"])

    top, small, sparse = cell(wmax, hmin), cell(wmin, hmin), cell(wmax, hmax)
    value = mean_ci(top, n_boot, seed=seed)
    width_gain = mean_diff_ci(top, small, n_boot, seed=seed + 1) if wmax != wmin else NAN3
    coverage_gain = mean_diff_ci(top, sparse, n_boot, seed=seed + 2) if hmax != hmin else NAN3

    at_hmin = rows[rows["holdout"] == hmin]
    per_width = {
        json_key(w): ci_entry(mean_ci(g["r2_heldout"], n_boot, seed=seed), len(g))
        for w, g in at_hmin.groupby("width")
    }
    at_wmax = rows[rows["width"] == wmax]
    per_combos = {
        json_key(c): ci_entry(mean_ci(g["r2_heldout"], n_boot, seed=seed), len(g))
        for c, g in at_wmax.groupby("n_train_combos")
    }
    W, Wn, H, Hs = (json_key(x) for x in (wmax, wmin, hmin, hmax))
    details: dict[str, Any] = {
        "r2_threshold": thr,
        "min_gain": m,
        "largest_width": to_python(wmax),
        "smallest_width": to_python(wmin),
        "min_holdout": to_python(hmin),
        "max_holdout": to_python(hmax),
        "n_seeds_top_cell": int(top.size),
        "seeds_per_cell": int(min(x.size for x in (top, small, sparse) if x.size) if top.size else 0),
        "width_gain": ci_entry(width_gain, top.size + small.size),
        "coverage_gain": ci_entry(coverage_gain, top.size + sparse.size),
        "heldout_r2_by_width_at_min_holdout": per_width,
        "heldout_r2_by_n_train_combos_at_largest_width": per_combos,
        "in_distribution_r2_by_width_at_min_holdout": _fits(at_hmin, "width"),
        **restriction,
    }
    fixed = {"model": "mlp", **{k.removesuffix("_used"): v for k, v in restriction.items() if k.endswith("_used")}}
    # The narrowest width is the baseline the width gain is measured from: a student too narrow to fit its
    # training tasks is what widening is claimed to fix, so it is not gated (its fit is reported beside).
    # With one width left (the widest lost, say every widest student missed the gate) the cells coincide: the
    # baseline stays a baseline, never gated in the widest cell's place.
    details["deciding_cells"] = [
        deciding_cell({**fixed, "width": w, "holdout": h}, c.size, gated=gated and (w, h) != (wmin, hmin))
        for (w, h), (c, gated) in {(wmax, hmin): (top, True), (wmin, hmin): (small, False),
                                   (wmax, hmax): (sparse, True)}.items()]
    if "r2_heldout_taskmean" in rows and np.isfinite(rows["r2_heldout_taskmean"]).any():
        # Item 8: the reference code's R² (mean over tasks of per-task R²) beside ours, which decides.
        tm = rows.loc[(rows["width"] == wmax) & (rows["holdout"] == hmin), "r2_heldout_taskmean"]
        details["heldout_r2_taskmean_at_largest_scale"] = ci_entry(mean_ci(tm), int(np.isfinite(tm).sum()))
        details["r2_definition"] = ("deciding: pooled within-task R² = 1 − Σ MSE / Σ within-task target variance "
                                    "over held-out tasks; beside it the reference code's per-task mean R²")
    if pooled := pooled_columns(rows, POOLABLE):
        details["pooled_over"] = pooled

    # Widening must not hurt at the top: no narrower width clearly beats the largest (at the best coverage).
    better = [w for w in sorted(at_hmin["width"].unique()) if w != wmax
              and mean_diff_ci(top, cell(w, hmin))[2] < 0]
    details["narrower_widths_clearly_better"] = [to_python(w) for w in better]
    broken = degenerate([top, small, sparse])
    level = f"held-out R² of width {W} at hold-out {H} is {_num(value)} (threshold {thr:g})"
    wg = f"width {W} gains {_num(width_gain)} over width {Wn} at hold-out {H}"
    cg = f"hold-out {H} gains {_num(coverage_gain)} over hold-out {Hs} at width {W}"
    found = f"{level}; {wg}; {cg}; the width gain's margin is {m:g}"
    room_w = no_room(small, m, name=f"width {Wn} at hold-out {H}")
    thin = {lab: c.size for lab, c in ((f"width {W}, hold-out {H}", top), (f"width {Wn}, hold-out {H}", small),
                                         (f"width {W}, hold-out {Hs}", sparse)) if c.size < MIN_REPLICATES}
    if single:
        details["missing_axis"] = single[0]
        verdict, reason = INCONCLUSIVE, single[1]
    elif thin:
        verdict, reason = INCONCLUSIVE, (f"fewer than {MIN_REPLICATES} seeds in a deciding cell ("
                                         + ", ".join(f"{k}: {v}" for k, v in thin.items()) + ")")
    elif broken:
        verdict, reason = INCONCLUSIVE, broken
    elif value[2] < thr:
        verdict, reason = NOT_SUPPORTED, f"{level}: below the threshold with its whole interval; {wg}; {cg}"
    elif coverage_gain[2] < 0:
        verdict, reason = NOT_SUPPORTED, (f"{cg}: below 0 with its whole interval (more training combinations "
                                          f"lower held-out R²); {level}; {wg}")
    elif width_gain[2] < m and not room_w:
        verdict, reason = NOT_SUPPORTED, (f"{wg}: below the margin {m:g} with its whole interval (widening does "
                                          f"not help by the margin); {level}; {cg}")
    elif room_w:
        verdict, reason = INCONCLUSIVE, f"{room_w}; {found}"
    elif value[1] >= thr and width_gain[1] > m and coverage_gain[1] > 0 and not better:
        verdict, reason = SUPPORTED, (f"{level}, at or above it with its whole interval; {wg}, above the margin "
                                      f"{m:g} with its whole interval; {cg}, above 0 with its whole interval; no "
                                      "narrower width does clearly better")
    elif value[1] >= thr and width_gain[1] > m and coverage_gain[1] > 0:
        verdict, reason = INCONCLUSIVE, (f"{found}; but narrower width(s) "
                                         f"{', '.join(map(str, details['narrower_widths_clearly_better']))} "
                                         "do clearly better: widening hurts at the top")
    else:
        open_ = [what for what, ok_ in ((f"the held-out R² interval reaches below {thr:g}", value[1] >= thr),
                                        (f"the width gain's interval contains the margin {m:g}", width_gain[1] > m),
                                        ("the coverage gain's interval reaches 0", coverage_gain[1] > 0))
                 if not ok_]
        verdict, reason = INCONCLUSIVE, f"{'; '.join(open_)}: {found}"
    details["reason"] = reason
    return Verdict(name, verdict, value, len(rows), details)


def _layer_means(series: pd.Series) -> dict[str, float]:
    """Mean R² per layer name over the ``decod_layers`` cells (rows of layer and R²; or the JSON
    text of older tables)."""
    acc: dict[str, list[float]] = {}
    for s in series:
        layers = metric_table(s, *TrialConfig.NESTED_METRICS["decod_layers"])
        for k, v in (layers or {}).items():  # a malformed entry drops out rather than failing the report
            try:
                v = float(v)
            except (TypeError, ValueError):
                continue
            if np.isfinite(v):
                acc.setdefault(str(k), []).append(v)
    return {k: float(np.mean(v)) for k, v in acc.items()}


#: Config columns whose combinations are the cells of the decodability claim's within-cell correlation.
CELL_AXES = ("width", "depth", "holdout", "withheld_pairs", "encoding", "split", "M", "K", "steps", "lr",
             "weight_decay", "batch_tasks", "activation")


def _cell_design(rows: pd.DataFrame) -> tuple[np.ndarray, list[str]]:
    """One indicator column per cell of the varying config axes but the first: shape (n, n_cells − 1)."""
    axes = [c for c in CELL_AXES if c in rows and rows[c].nunique(dropna=True) > 1]
    if not axes:
        return np.zeros((len(rows), 0)), []
    cell = rows[axes].astype(str).agg("|".join, axis=1)
    dummies = pd.get_dummies(cell, drop_first=True, dtype=float)
    return dummies.to_numpy(), axes


def decodability(ok: pd.DataFrame, p: Mapping, n_boot: int, seed: int) -> Verdict:
    """Spearman(decod_cv, r2_heldout) across MLP trials, pairs-bootstrap CI.

    ``decod_cv`` is the held-out decodability at the layer chosen by cross-validation on
    in-distribution (fit) tasks, never by the held-out score it then reports (choosing
    the layer on that score would bias it upward). Supported needs three things: the Spearman CI above ``rho_threshold``; the
    within-cell partial Spearman (ranks residualised on one indicator per cell of every swept
    axis that varies: width, hold-out, encoding, …) above 0; and its excess over the same
    statistic of a random-init network's decodability above 0. A control that is missing or not
    finite makes the verdict inconclusive: the excess cannot be computed.
    """
    name = "spearman_decodability_vs_heldout_r2"
    thr = float(p["rho_threshold"])
    details: dict[str, Any] = {"rho_threshold": thr}
    mlp = design_rows(ok[ok["model"] == "mlp"], withheld=False)
    if not np.isfinite(mlp["decod_cv"]).any():
        details["reason"] = ("no trial has a decodability at a layer chosen on fit data (decod_cv): records "
                             "written before that column existed chose the layer by its held-out score")
        return Verdict(name, INCONCLUSIVE, NAN3, 0, details)
    rows = mlp[np.isfinite(mlp["decod_cv"]) & np.isfinite(mlp["r2_heldout"])]
    n = len(rows)
    if n and (why := _seedless(rows, "MLP")):
        details.update(missing_axis="seed", reason=why)
        return Verdict(name, INCONCLUSIVE, NAN3, n, details)
    # Every cell of the pooled grid decides the correlation: seeds lost there count against min_seeds. The
    # correlation spans failing configurations by design (the source correlates over all its runs; the
    # within-cell partial Spearman removes the configuration), so only the cells of the largest width are
    # gated: the grid must include students that fit their training tasks, or decodability would only be
    # predicting how much of its training distribution each network fit.
    axes = [c for c in CELL_AXES if c in rows and rows[c].notna().all()]
    wtop = rows["width"].max() if n and "width" in rows else math.nan
    details["deciding_cells"] = [
        deciding_cell({"model": "mlp", **dict(zip(axes, k if isinstance(k, tuple) else (k,)))}, g["seed"].nunique(),
                      gated=bool(g["width"].max() == wtop) if "width" in g else True)
        for k, g in rows.groupby(axes)] if axes and n else []
    if n < CONCLUSIVE_SEEDS:
        details["reason"] = f"fewer than {CONCLUSIVE_SEEDS} trials with decodability and held-out R²"
        return Verdict(name, INCONCLUSIVE, NAN3, n, details)
    x, y = rows["decod_cv"].to_numpy(float), rows["r2_heldout"].to_numpy(float)
    ctrl = rows["decod_random_cv"].to_numpy(float)
    rho = correlation_ci(x, y, "spearman", n_boot, seed=seed)
    r = correlation_ci(x, y, "pearson", n_boot, seed=seed)
    design, axes = _cell_design(rows)
    k = design.shape[1]
    # A resample is a row of ``a``, shape (R, n, columns): columns x, y, control, then the design.
    cols = np.column_stack([x, y, ctrl, design])

    def within(a: np.ndarray, i: int) -> np.ndarray:
        return partial_spearman_within(a[..., i], a[..., 1], a[..., 3:3 + k])

    partial = bootstrap_ci(cols, lambda a: within(a, 0), n_boot, seed=seed, vectorized=True)
    control_ok = bool(np.all(np.isfinite(ctrl)) and np.ptp(ctrl) > 0)  # a constant control was not measured
    partial_rnd = bootstrap_ci(cols, lambda a: within(a, 2), n_boot, seed=seed, vectorized=True) if control_ok \
        else NAN3
    excess = (bootstrap_ci(cols, lambda a: within(a, 0) - within(a, 2), n_boot, seed=seed, vectorized=True)
              if control_ok else NAN3)
    rho_rnd = correlation_ci(ctrl, y, "spearman", n_boot, seed=seed) if control_ok else NAN3
    high = rows[rows["r2_heldout"] >= 0.95]
    details.update({
        "layer_choice": "cross-validation on in-distribution tasks (decod_cv_layer); the held-out score is "
                        "read at that layer",
        "within_cell_partial_spearman": ci_entry(partial, n),
        "cells_over": axes,
        "n_cells": k + 1,
        "control_within_cell_partial_spearman_random_init": ci_entry(partial_rnd, n),
        "within_cell_partial_spearman_excess_over_random_init": ci_entry(excess, n),
        "control_spearman_random_init_vs_heldout_r2": ci_entry(rho_rnd, n),
        "pearson": ci_entry(r, n),
        "mean_decod_cv": ci_entry(mean_ci(x), n),
        "mean_decod_best_any_layer": ci_entry(mean_ci(rows["decod_best"]), int(np.isfinite(rows["decod_best"]).sum())),
        "mean_decod_input": ci_entry(mean_ci(rows["decod_input"]), int(np.isfinite(rows["decod_input"]).sum())),
        "mean_decod_random_cv": ci_entry(mean_ci(ctrl), int(np.isfinite(ctrl).sum())),
        "mean_decod_by_layer": _layer_means(rows["decod_layers"]) if "decod_layers" in rows else {},
        "chosen_layers": ({str(k_): int(v) for k_, v in rows["decod_cv_layer"].astype(str).value_counts().items()}
                          if "decod_cv_layer" in rows else {}),
        # The paper's anchor: decoder R² 0.90-0.99 whenever held-out R² ≥ 0.95.
        "n_trials_heldout_r2_ge_0.95": len(high),
        "min_decod_cv_when_heldout_r2_ge_0.95": float(high["decod_cv"].min()) if len(high) else math.nan,
        "seeds_per_cell": int(rows.groupby(axes).size().min()) if axes else n,
    })
    if pooled := pooled_columns(rows, POOLABLE + ("width", "depth", "holdout")):
        details["pooled_over"] = pooled
    spc = details["seeds_per_cell"]
    # A correlation needs a spread of what it predicts: held-out R² the same in every trial, or in every trial
    # of each cell (only the configuration moves it), leaves nothing for decodability to predict.
    groups = [g["r2_heldout"].to_numpy(float) for _, g in rows.groupby(axes)] if axes else [y]
    flat_y = "every trial" if np.ptp(y) == 0 else (
        "every trial of each cell of the swept axes" if all(np.ptp(v) == 0 for v in groups) else None)
    flat_x = "every trial" if np.ptp(x) == 0 else None
    details["heldout_r2_spread"] = {"min": float(y.min()), "max": float(y.max()), "sd": float(np.std(y, ddof=1))
                                    if n > 1 else math.nan}
    found = (f"Spearman {_num(rho)} (threshold {thr:g}); within-cell partial Spearman {_num(partial)}; its excess "
             f"over a random-init network's {_num(excess)}; over {n} MLP trials, held-out R² {y.min():.3f} to "
             f"{y.max():.3f}")
    if flat_y or flat_x:
        what, where = ("held-out R²", flat_y) if flat_y else ("decodability", flat_x)
        verdict, reason = INCONCLUSIVE, (f"{what} is the same in {where} ({float(np.median(y if flat_y else x)):.3g}): "
                                         "there is no spread to correlate, so the claim can be neither supported "
                                         "nor rejected")
    elif not np.isfinite(rho[0]):
        verdict, reason = INCONCLUSIVE, "correlation undefined (constant input)"
    elif spc < MIN_REPLICATES:
        verdict, reason = INCONCLUSIVE, (f"a cell of the swept axes has {spc} trial(s), fewer than "
                                         f"{MIN_REPLICATES}: the within-cell correlation has nothing to work with")
    elif rho[2] < thr:
        verdict, reason = NOT_SUPPORTED, f"the Spearman interval lies below {thr:g}: {found}"
    elif np.isfinite(partial[2]) and partial[2] <= 0:
        verdict, reason = NOT_SUPPORTED, ("the correlation is carried by the configuration: within cells of the "
                                          "swept axes decodability does not predict held-out R² (the partial "
                                          f"Spearman's interval is at or below 0): {found}")
    elif not control_ok:
        verdict, reason = INCONCLUSIVE, ("the random-init control is missing or not finite in "
                                         f"{int((~np.isfinite(ctrl)).sum())} of {n} trials, or the same in every "
                                         "trial: whether training adds decodability beyond a random network's "
                                         f"cannot be decided ({found})")
    elif rho[1] > thr and partial[1] > 0 and excess[1] > 0:
        verdict, reason = SUPPORTED, (f"decodability predicts held-out R² across trials (Spearman interval above "
                                      f"{thr:g}), within cells of the swept axes (partial Spearman above 0) and "
                                      f"more than a random-init network's does (excess above 0): {found}")
    elif rho[1] > thr and partial[1] > 0:
        verdict, reason = INCONCLUSIVE, ("decodability predicts held-out R² within cells, but a random-init "
                                         "network's decodability does nearly as well (the excess's interval "
                                         f"reaches 0): {found}")
    elif rho[1] > thr:
        verdict, reason = INCONCLUSIVE, (f"the Spearman interval lies above {thr:g}, but the within-cell partial "
                                         "Spearman's interval reaches 0: the correlation may be carried by the "
                                         f"swept axes ({found})")
    else:
        verdict, reason = INCONCLUSIVE, f"the Spearman interval contains {thr:g}: {found}"
    details["reason"] = reason
    return Verdict(name, verdict, rho, n, details)


def params_to_target(means: np.ndarray, params: np.ndarray, target: float) -> tuple[float, str]:
    """Parameters a model family needs to reach ``target`` held-out R², interpolated on the grid.

    Cells are taken in order of parameter count; at the first cell whose mean reaches the target,
    log(parameters) is interpolated linearly in R² from the cell before it (Redhardt et al. 2025 and
    Schug et al. 2024 read such thresholds off curves over a log-parameter axis). Output:
    ``(parameters, kind)`` with kind ``"interpolated"``; ``"at_most"`` when the smallest cell already
    reaches it (the value is an upper bound); ``"not_reached"`` (NaN) when no cell does.
    """
    order = np.argsort(params, kind="stable")
    m, p = np.asarray(means, float)[order], np.asarray(params, float)[order]
    hit = np.flatnonzero(m >= target)
    if hit.size == 0:
        return math.nan, "not_reached"
    i = int(hit[0])
    if i == 0:
        return float(p[0]), "at_most"
    t = (target - m[i - 1]) / (m[i] - m[i - 1])
    return float(np.exp(np.log(p[i - 1]) + t * (np.log(p[i]) - np.log(p[i - 1])))), "interpolated"


def _ladder(params: np.ndarray, top: int) -> list[int]:
    """Indices of a model's cells in order of parameter count, up to and including cell ``top``."""
    order = [int(i) for i in np.argsort(params, kind="stable")]
    return order[:order.index(int(top)) + 1]


def _falls_with_width(label: str, keys: list[tuple], vals: list[np.ndarray], ladder: list[int], n_boot: int,
                      seed: int) -> list[dict]:
    """Where a model's held-out R² falls with width along its ladder: each cell of ``ladder`` (indices into
    ``keys`` / ``vals``) whose mean is below that of the next narrower cell of its depth, the difference's whole
    95% (Welch) interval below 0 (a step within the seeds' noise is not a fall). A wider student that does worse
    than a narrower one (on its own training tasks too, as a rule) did not learn: that is an optimisation failure,
    not the capacity limit the parameters-to-target measure. Output: one entry per such step, with the numbers
    and a sentence."""
    out = []
    for b in ladder:
        narrower = [a for a in ladder if keys[a][1] == keys[b][1] and keys[a][0] < keys[b][0]]
        if narrower:
            a = max(narrower, key=lambda i: keys[i][0])
            diff = mean_diff_ci(vals[b], vals[a], n_boot, seed=seed)
            if np.isfinite(diff[2]) and diff[2] < 0:
                (wa, d), wb = keys[a], keys[b][0]
                out.append({"model": label, "depth": d, "narrower_width": wa, "wider_width": wb,
                            "narrower": ci_entry(mean_ci(vals[a]), vals[a].size),
                            "wider": ci_entry(mean_ci(vals[b]), vals[b].size),
                            "difference": ci_entry(diff, vals[a].size + vals[b].size),
                            "words": (f"{label} width {wb} (depth {d}) has held-out R² {_num(mean_ci(vals[b]))}, "
                                      f"below width {wa}'s {_num(mean_ci(vals[a]))} by {_num(diff)}")})
    return out


def _param_ratio(m_means: np.ndarray, m_params: np.ndarray, h_means: np.ndarray, h_params: np.ndarray,
                 target: float) -> float:
    """params_mlp / params_binding at ``target`` (the binding student: a hypernet or a TPR student). When
    only the binding student reaches it, the lower bound (largest MLP's parameters / the binding student's):
    the MLP needs more than its grid, by an unknown amount. NaN when the binding student never does
    (unknown, not 0: a larger one might reach it)."""
    pm, _ = params_to_target(m_means, m_params, target)
    ph, _ = params_to_target(h_means, h_params, target)
    if math.isnan(ph):
        return math.nan
    return float(np.max(m_params)) / ph if math.isnan(pm) else pm / ph


def expected_n_params(row: Mapping[str, Any]) -> int:
    """The ``n_params`` a record's config gives its student (:func:`bindscale.studies.scaling.params.student_params`).

    ``row``: a results-table row as a dict without its missing entries; a config column the table lacks is read at
    the trial config's default (the record columns are :meth:`TrialConfig.flat`'s: ``model``, ``width``,
    ``depth``, ``M``, ``K``, ``encoding``, ``task.input_dim``, ``task.output_dim``, ``task.n_shots``,
    ``model.n_banks``).

    Raises:
        ValueError / KeyError / TypeError: a config that cannot be sized (an unknown kind, no width).
    """
    task, model = TaskConfig.model_fields, ModelConfig.model_fields
    M, K = int(row.get("M", task["M"].default)), int(row.get("K", task["K"].default))
    x_dim = int(row.get("task.input_dim", task["input_dim"].default))
    out_dim = int(row.get("task.output_dim", task["output_dim"].default))
    code_dim = encoding_dim(str(row.get("encoding", task["encoding"].default)), M, K, (x_dim, out_dim),
                            int(row.get("task.n_shots", task["n_shots"].default)))
    banks = row.get("model.n_banks", model["n_banks"].default)
    return student_params(str(row.get("model", model["kind"].default)), code_dim, x_dim, out_dim, M,
                          int(row["width"]), int(row.get("depth", model["depth"].default)),
                          None if banks is None else int(banks))


#: A null config value (a field at None, or not recorded) as :func:`shared_config` counts it.
NULL = "null"


def _value_key(v: Any) -> Any:
    """A config value as one comparable key: NaN and None are one value, :data:`NULL`; numbers as Python numbers."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return NULL
    return to_python(v)


def _order(v: Any) -> tuple:
    """Sort key of :func:`_value_key` values of one column: numbers by value, then text."""
    return (0, float(v), "") if isinstance(v, (int, float)) and not isinstance(v, bool) else (1, 0.0, str(v))


def shared_config(rows: pd.DataFrame, kind: str, cols: tuple[str, ...]
                  ) -> tuple[pd.DataFrame, dict[str, Any], dict[str, dict[str, list]]]:
    """The rows of the MLP and ``kind`` at one configuration both trained with, column by column of ``cols``.

    For each column of ``cols`` the table has that varies among ``rows`` (NaN and None are one value,
    :data:`NULL`), the rows keep the value with the most rows among the values both models have (ties to the
    smallest), as :func:`bindscale.kit.restrict_to_mode` keeps the most common one; a column none of whose values
    both models have is left as it is and named. Output: (the rows; the note for details as ``restrict_to_mode``
    writes it: ``<col>_used``, ``<col>_present``, ``restriction``; the columns the two models share no value of →
    ``{"mlp": [values], kind: [values]}``, empty when they share every one).
    """
    note: dict[str, Any] = {}
    differ: dict[str, dict[str, list]] = {}
    for col in cols:
        if col not in rows:
            continue
        keys = rows[col].map(_value_key)
        if keys.nunique() <= 1:
            continue
        per = {m: set(keys[(rows["model"] == m).to_numpy()]) for m in ("mlp", kind)}
        both = per["mlp"] & per[kind]
        if not both:
            differ[col] = {m: [to_python(v) for v in sorted(vals, key=_order)] for m, vals in per.items()}
            continue
        counts = keys[keys.isin(list(both))].value_counts()
        best = min((v for v, c in counts.items() if c == counts.max()), key=_order)
        note[f"{col}_used"] = to_python(best)
        note[f"{col}_present"] = [to_python(v) for v in sorted(set(keys), key=_order)]
        rows = rows[(keys == best).to_numpy()]
    if note:
        fixed = ", ".join(k.removesuffix("_used") for k in note if k.endswith("_used"))
        note["restriction"] = f"{fixed} vary; this comparison uses the most common value of each that both models have"
    return rows, note, differ


def _not_one_value(rows: pd.DataFrame, kind: str, cols: tuple[str, ...]) -> dict[str, dict[str, list]]:
    """The columns of ``cols`` that hold more than one value among ``rows`` (NaN and None are one value,
    :data:`NULL`; a column the table lacks is not compared), each → ``{"mlp": [values], kind: [values]}``."""
    out = {}
    for col in cols:
        if col in rows:
            keys = rows[col].map(_value_key)
            if keys.nunique() > 1:
                out[col] = {m: [to_python(v) for v in sorted(set(keys[(rows["model"] == m).to_numpy()]), key=_order)]
                            for m in ("mlp", kind)}
    return out


#: Binding student kind → (short name, long name) as the binding rules' reasons say them.
BINDING_KINDS: dict[str, tuple[str, str]] = {"hypernet": ("hypernet", "hypernetwork"),
                                             "tpr": ("TPR", "TPR student")}


def binding(ok: pd.DataFrame, p: Mapping, n_boot: int, seed: int) -> Verdict:
    """Parameter ratio MLP / hypernet to reach the study's fixed target held-out R² (:func:`binding_ratio`)."""
    return binding_ratio(ok, p, n_boot, seed, kind="hypernet")


def binding_tpr(ok: pd.DataFrame, p: Mapping, n_boot: int, seed: int) -> Verdict:
    """Parameter ratio MLP / TPR student to reach the study's fixed target held-out R² (:func:`binding_ratio`):
    ``binding``'s rule, with the tensor-product binding student (:mod:`bindscale.studies.scaling.tpr`) in the
    hypernet's place."""
    return binding_ratio(ok, p, n_boot, seed, kind="tpr")


def binding_ratio(ok: pd.DataFrame, p: Mapping, n_boot: int, seed: int, kind: str) -> Verdict:
    """Parameter ratio MLP / binding student ``kind`` (a key of :data:`BINDING_KINDS`) to reach the study's fixed
    target held-out R².

    Only the MLP's and ``kind``'s rows are read: another binding student in the table changes nothing.
    The target is the study file's ``target_r2``, never derived from the results (a target set by
    the best MLP cell's mean rises with the noise of that maximum, against the binding student).
    Parameters-to-target are interpolated in log-parameters between grid points
    (:func:`params_to_target`), and the ratio's interval is an expanded-percentile bootstrap over the seeds
    of every cell (each cell resampled independently; simulated coverage 0.955–0.972 at 8 seeds per cell).

    Where a model first reaches the target depends on every cell of its ladder (its cells in order of
    parameters) up to there, so all of them decide, at the planned hold-out:

    - the hold-out is the smallest one the table plans for both models (failed and unrecorded trials count as
      planned); when the rule's own (the smallest with usable trials of both) is another, the claim's guard
      makes it inconclusive (:func:`ladder_guard`);
    - every cell of each model's ladder up to and including its upper bracket (the cell that reaches the
      target, or the largest when none does) is a deciding cell, so its lost seeds count against ``min_seeds``,
      and a planned cell there with no usable trial at all makes the claim inconclusive (the guard again): the
      interpolation would bracket the target across the gap;
    - along each ladder up to the bracket, held-out R² must not fall with width beyond the seeds' noise: a
      cell below the next narrower cell of its depth with the difference's whole 95% interval below 0 is a
      student that failed to train, not one short of capacity, and the claim is inconclusive, with no number
      (:func:`_falls_with_width`).

    The two students must have been trained on one task with one recipe: every task and training field of the
    trial config (:data:`TASK_AND_TRAINING`, read off :class:`TrialConfig`). The sweep axes among them
    (:data:`BINDING_LIKE`: encoding, split, M, K, steps, lr, weight decay, batch size, activation) are held at the
    most common value both students have (:func:`shared_config`; a table may hold extra grids over them); every
    other field (:data:`BINDING_FIXED`: the teacher, samples per task, gradient clip, precision, evaluation and
    probe sizes...) must hold one value over the compared trials. Otherwise the claim is inconclusive and the
    reason names each field with its values per student (``details["differing_fields"]``): a ratio across
    teachers or recipes measures their difference, not binding.

    A cell's values are one held-out R² per distinct seed: records repeating a configuration and seed (reruns that a
    table without every axis column cannot tell from other settings) are averaged into their seed, never counted
    as more seeds, and a cell's seed count is its number of distinct seeds.

    Every record of both ladders at the compared configuration must carry the parameter count its config gives
    (:func:`expected_n_params`), else the claim is inconclusive and the reason names the records.

    Gated per model (``deciding_cell`` names its model; the engine leaves out each student that misses, decides
    again without it and counts it against ``min_seeds``), every cell the interpolation reads:

    - the upper bracket (the cell that reaches the target, or a model's largest when none does) at the claim's
      level, in-distribution R² ≥ ``min_r2_id`` (0.9);
    - every cell below it, the interpolation's start and the cells under it, by ``min_id_minus_heldout`` (0):
      in-distribution R² at least the student's own held-out R² (:data:`ID_MINUS_HELDOUT`). A small student
      misses 0.9 in distribution for want of capacity, which is what the count measures, so it is not held to the
      target; one that fits its own training tasks worse than held-out ones (R² 0.30 against 0.78) did not learn
      them, and would set the count with its failure.
    """
    short, long_ = BINDING_KINDS[kind]
    name = f"param_ratio_mlp_over_{kind}"
    target = float(p["target_r2"])
    details: dict[str, Any] = {"target_r2": target}
    base = design_rows(ok[np.isfinite(ok["r2_heldout"]) & ok["model"].isin(["mlp", kind])], withheld=False)
    mlp, hyp = base[base["model"] == "mlp"], base[base["model"] == kind]
    if len(mlp) + len(hyp) and (why := _seedless(pd.concat([mlp, hyp]), f"MLP and {short}")):
        details.update(missing_axis="seed", reason=why)
        return Verdict(name, INCONCLUSIVE, NAN3, len(mlp) + len(hyp), details)
    if hyp.empty or mlp.empty:
        details["reason"] = f"no ok {short if hyp.empty else 'MLP'} trials"
        return Verdict(name, INCONCLUSIVE, NAN3, 0, details)
    common = set(mlp["holdout"].dropna()) & set(hyp["holdout"].dropna())
    if not common:
        details["reason"] = f"MLP and {short} share no holdout value"
        return Verdict(name, INCONCLUSIVE, NAN3, 0, details)
    h = min(common)
    details["holdout"] = to_python(h)
    # One task and one training recipe for both models, every field of them (depth is part of a config here).
    at_h, restriction, differ = shared_config(base[base["holdout"] == h], kind, BINDING_LIKE)
    details.update(restriction)
    differ.update(_not_one_value(at_h, kind, BINDING_FIXED))
    if differ:
        details["differing_fields"] = differ
        fields = "; ".join(f"{c}: MLP {', '.join(map(str, v['mlp']))}, {short} {', '.join(map(str, v[kind]))}"
                           for c, v in differ.items())
        details["reason"] = (f"the MLP and {short} trials at hold-out {json_key(h)} do not share one value of "
                             f"{', '.join(differ)} ({fields}): they were not all trained on one task with one recipe, "
                             "so a parameter ratio between them would measure that difference, not binding")
        return Verdict(name, INCONCLUSIVE, NAN3, len(at_h), details)
    mlp, hyp = at_h[at_h["model"] == "mlp"], at_h[at_h["model"] == kind]
    if hyp.empty or mlp.empty:
        details["reason"] = f"MLP and {short} share no task and training configuration at this holdout"
        return Verdict(name, INCONCLUSIVE, NAN3, 0, details)
    # The claim speaks of a parameter axis: each model needs its sizes (width) recorded, and two of them.
    for label, rows_m in (("MLP", mlp), (short, hyp)):
        for axis in ("width", "n_params"):
            if not rows_m[axis].notna().all():
                details.update(missing_axis=axis, reason=f"the table records no {axis} for some {label} trials: "
                               "the parameter axis the claim speaks of is not recorded")
                return Verdict(name, INCONCLUSIVE, NAN3, len(at_h), details)
        if rows_m[["width", "depth"]].drop_duplicates().shape[0] < 2:
            details.update(missing_axis="width", reason=f"only one {label} size (width {to_python(rows_m['width'].iloc[0])}) "
                           f"has ok trials at hold-out {to_python(h)}: parameters-to-target needs a grid of sizes")
            return Verdict(name, INCONCLUSIVE, NAN3, len(at_h), details)
    # The ratio is read off the recorded counts: each must be the one its record's config gives.
    miscount, wrong = param_count_mismatch(pd.concat([mlp, hyp]), expected_n_params, "n_params",
                                           describe=("model", "width", "depth"))
    if miscount:
        details.update(param_count_mismatch=wrong, reason=miscount)
        return Verdict(name, INCONCLUSIVE, NAN3, len(at_h), details)

    def cells(rows: pd.DataFrame) -> tuple[list[tuple], list[np.ndarray], np.ndarray]:
        """Per (width, depth) cell: its key, one held-out R² per distinct seed (records repeating a seed, reruns
        a table without every axis column cannot tell apart, averaged: they are not more seeds) and its
        parameter count."""
        keys, vals, params = [], [], []
        for (w, d), g in rows.groupby(["width", "depth"], dropna=False):
            keys.append((to_python(w), to_python(d)))
            vals.append(g.groupby("seed")["r2_heldout"].mean().to_numpy(float))
            params.append(float(np.nanmedian(g["n_params"])))
        return keys, vals, np.asarray(params)

    m_keys, m_vals, m_par = cells(mlp)
    h_keys, h_vals, h_par = cells(hyp)
    n_m = len(m_vals)

    def stat(*groups: np.ndarray) -> float:
        means = np.array([g.mean() for g in groups])
        return _param_ratio(means[:n_m], m_par, means[n_m:], h_par, target)

    ratio = bootstrap_ci(m_vals + h_vals, stat, n_boot, seed=seed)
    m_means = np.array([v.mean() for v in m_vals])
    h_means = np.array([v.mean() for v in h_vals])
    pm, m_kind = params_to_target(m_means, m_par, target)
    ph, h_kind = params_to_target(h_means, h_par, target)

    def describe(keys, vals, par, i):
        return {"width": keys[i][0], "depth": keys[i][1], "n_params": to_python(par[i]),
                "mean_r2_heldout": float(vals[i].mean()), "n_seeds": int(vals[i].size)}

    def bracket(means, par, kind):
        """Indices of the cells the interpolation used (the ones that decide the number)."""
        if kind == "not_reached":
            return []
        order = np.argsort(par, kind="stable")
        i = int(np.flatnonzero(means[order] >= target)[0])
        return [int(order[j]) for j in ((i,) if i == 0 else (i - 1, i))]

    matched = []
    for j in range(len(h_keys)):
        # The MLP config nearest in log parameter count.
        i = int(np.argmin(np.abs(np.log(m_par) - np.log(h_par[j]))))
        matched.append({
            kind: describe(h_keys, h_vals, h_par, j),
            "mlp": describe(m_keys, m_vals, m_par, i),
            f"r2_diff_{kind}_minus_mlp": ci_entry(mean_diff_ci(h_vals[j], m_vals[i]), h_vals[j].size + m_vals[i].size),
        })
    m_br, h_br = bracket(m_means, m_par, m_kind), bracket(h_means, h_par, h_kind)
    # A model that never reaches the target is decided by its largest cell.
    m_br = m_br or [int(np.argmax(m_par))]
    h_br = h_br or [int(np.argmax(h_par))]
    # Each model's ladder up to its upper bracket (the cell that reaches the target, or the largest): every cell
    # of it decides where the target is first reached, so every one is a deciding cell whose lost seeds count
    # against min_seeds (a cell lost whole is the guard's: :func:`ladder_guard`).
    m_lad, h_lad = _ladder(m_par, m_br[-1]), _ladder(h_par, h_br[-1])
    deciding = [m_vals[i] for i in m_lad] + [h_vals[i] for i in h_lad]
    fixed = {"holdout": h, **{k.removesuffix("_used"): v for k, v in restriction.items()
                              if k.endswith("_used") and v != NULL}}
    # Every cell of both ladders is gated per model (see the docstring): the upper bracket (a model's largest when
    # none reaches the target: its "not reached" must not be an undertrained model's) at the claim's level, the
    # cells below it by in-distribution R² at least their held-out R².
    details["deciding_cells"] = (
        [deciding_cell({"model": "mlp", **fixed, "width": m_keys[i][0], "depth": m_keys[i][1]}, m_vals[i].size,
                       gated=["r2_id"] if i == m_br[-1] else [ID_MINUS_HELDOUT]) for i in m_lad]
        + [deciding_cell({"model": kind, **fixed, "width": h_keys[i][0], "depth": h_keys[i][1]},
                         h_vals[i].size, gated=["r2_id"] if i == h_br[-1] else [ID_MINUS_HELDOUT]) for i in h_lad])
    # What the guard needs to find the planned cells of these ladders in the whole table (failed trials too).
    details["compared_config"] = {"holdout": to_python(h), **{
        c: to_python(at_h[c].dropna().iloc[0]) for c in BINDING_LIKE + BINDING_FIXED
        if c in at_h and at_h[c].nunique(dropna=True) == 1 and at_h[c].notna().all()}}
    details["ladders_to_target"] = {"mlp": [describe(m_keys, m_vals, m_par, i) for i in m_lad],
                                    kind: [describe(h_keys, h_vals, h_par, i) for i in h_lad]}
    falls = (_falls_with_width("MLP", m_keys, m_vals, m_lad, n_boot, seed)
             + _falls_with_width(short, h_keys, h_vals, h_lad, n_boot, seed))
    if falls:
        details["ladder_falls_with_width"] = falls
    details.update({
        "mlp_params_to_target": pm, "mlp_params_to_target_kind": m_kind,
        f"{kind}_params_to_target": ph, f"{kind}_params_to_target_kind": h_kind,
        "mlp_best_mean_r2_heldout": float(m_means.max()),
        "mlp_reaching": describe(m_keys, m_vals, m_par, m_br[-1]) if m_kind != "not_reached" else None,
        f"{kind}_reaching": describe(h_keys, h_vals, h_par, h_br[-1]) if h_kind != "not_reached" else None,
        "matched_params": matched,
        "seeds_per_cell": int(min(v.size for v in deciding)) if deciding else 0,
        "interval_method": ("expanded-percentile bootstrap over the seeds of each cell (simulated coverage at 8 "
                            "seeds per cell: 0.955–0.972 of the nominal 95%)"),
    })
    rows_used = pd.concat([mlp, hyp])
    if pooled := pooled_columns(rows_used, POOLABLE):
        details["pooled_over"] = pooled

    broken = degenerate(deciding)
    # One-sided numbers: a parameters-to-target that is only a bound makes the ratio a bound too.
    ratio_is = ("a lower bound" if m_kind == "not_reached" or h_kind == "at_most" else "") or \
               ("an upper bound" if m_kind == "at_most" else "exact (interpolated)")
    if (m_kind == "at_most" and h_kind in ("at_most", "not_reached")) or (m_kind == h_kind == "not_reached"):
        ratio_is = "unknown"  # neither side pins its parameters to the target (or both only bound it)
    details["ratio_is"] = ratio_is
    mlp_needs = f"{pm:.0f}" if m_kind != "not_reached" else f"more than {m_par.max():.0f} (none of its grid reaches it)"
    needs = (f"to reach held-out R² {target:g} at hold-out {json_key(h)} the MLP needs {mlp_needs} parameters, the "
             f"{long_} {ph:.0f}; ratio {_num(ratio)}")
    if any(v.size < MIN_REPLICATES for v in deciding) or not deciding:
        verdict, reason = INCONCLUSIVE, f"fewer than {MIN_REPLICATES} seeds in a deciding cell"
    elif broken:
        verdict, reason = INCONCLUSIVE, broken
    elif falls:
        verdict, reason = INCONCLUSIVE, (
            "a ladder falls with width below the target: " + "; ".join(f["words"] for f in falls)
            + ": a wider student doing worse than a narrower one failed to train, it is not short of capacity, "
            f"so the parameters-to-target read off that ladder measure the failure ({needs})")
    elif h_kind == "not_reached" and m_kind != "not_reached":
        # The binding student needs more than its largest config: the ratio is below this bound.
        bound = float(pm / h_par.max())
        details["ratio_upper_bound"] = bound
        if bound <= 1:
            verdict, reason = NOT_SUPPORTED, (
                f"no {short} config reaches held-out R² {target:.3g}, and the largest has {int(h_par.max())} "
                f"parameters, already at least the {pm:.0f} the MLP needs: the ratio is at most {bound:.3g}")
        else:
            verdict, reason = INCONCLUSIVE, (
                f"no {short} config reaches held-out R² {target:.3g}; the largest has {int(h_par.max())} "
                f"parameters vs the {pm:.0f} the MLP needs, so the ratio is unknown (below {bound:.3g}): "
                f"extend the {short} widths")
    elif h_kind == "not_reached":
        verdict, reason = INCONCLUSIVE, f"neither model reaches held-out R² {target:.3g} on its grid"
    elif ratio_is == "unknown":
        verdict, reason = INCONCLUSIVE, (f"the smallest MLP already reaches the target and the {short}'s "
                                         "parameters-to-target is not exact: extend the grids downward")
    elif ratio[1] > 1 and ratio_is != "an upper bound":
        verdict, reason = SUPPORTED, f"the parameter ratio's interval lies above 1: {needs}" + (
            f" (the ratio is {ratio_is})" if ratio_is == "a lower bound" else "")
    elif ratio[2] <= 1 and ratio_is != "a lower bound":
        verdict, reason = NOT_SUPPORTED, f"the parameter ratio's interval lies at or below 1: {needs}" + (
            f" (the ratio is {ratio_is})" if ratio_is == "an upper bound" else "")
    elif ratio_is != "exact (interpolated)" and (ratio[1] > 1 or ratio[2] <= 1):
        verdict, reason = INCONCLUSIVE, (f"the ratio is only {ratio_is} (a model reaches the target at its "
                                         f"grid's edge), and that bound does not decide the claim: {needs}")
    else:
        verdict, reason = INCONCLUSIVE, f"the parameter ratio's interval contains 1: {needs}"
    if m_kind == "not_reached":
        details["ratio_lower_bound"] = float(m_par.max() / ph)
    if "at_most" in (m_kind, h_kind):
        reason += ("; the smallest " + " and ".join(k for k, k_kind in (("MLP", m_kind), (short, h_kind))
                                                    if k_kind == "at_most")
                   + " already reaches the target, so its parameters-to-target is an upper bound")
    details["reason"] = reason
    if falls and verdict == INCONCLUSIVE:  # no number read off a ladder whose students failed to train
        details["value_off_the_falling_ladder"] = ci_entry(ratio, len(rows_used))
        ratio = NAN3
    return Verdict(name, verdict, ratio, len(rows_used), details)


def arity_matched_hull(rows: pd.DataFrame) -> pd.DataFrame:
    """Per trial, in-hull and out-of-hull R² at equal numbers of active modules.

    For each number of active modules k with both in-hull and out-of-hull held-out combinations in
    the trial (columns ``r2_inhull_k{k}``, ``r2_outhull_k{k}``; counts ``n_*_k{k}`` when present),
    the two R² are averaged over those k with equal weight. Out-of-hull combinations are mostly
    triples and triples are harder than pairs, so an unmatched comparison mixes "outside the hull"
    with "more modules". Output: columns ``in_matched``, ``out_matched`` (NaN without a shared k)
    and ``arities`` (the k used, as a string), indexed like ``rows``.
    """
    ks = sorted({int(m.group(3)) for c in rows.columns if (m := ARITY_COLUMN.match(str(c))) and m.group(1) == "r2"})
    ins, outs, used = [], [], []
    for k in ks:
        a = rows.get(f"r2_inhull_k{k}", pd.Series(np.nan, index=rows.index)).to_numpy(float)
        b = rows.get(f"r2_outhull_k{k}", pd.Series(np.nan, index=rows.index)).to_numpy(float)
        both = np.isfinite(a) & np.isfinite(b)
        for side in ("inhull", "outhull"):
            if f"n_{side}_k{k}" in rows:
                both &= rows[f"n_{side}_k{k}"].fillna(0).to_numpy(float) > 0
        ins.append(np.where(both, a, np.nan))
        outs.append(np.where(both, b, np.nan))
        used.append(np.where(both, str(k), ""))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN rows: no shared arity
        in_m = np.nanmean(np.vstack(ins), axis=0) if ks else np.full(len(rows), np.nan)
        out_m = np.nanmean(np.vstack(outs), axis=0) if ks else np.full(len(rows), np.nan)
    arities = [",".join(x for x in col if x) for col in zip(*used)] if ks else [""] * len(rows)
    return pd.DataFrame({"in_matched": in_m, "out_matched": out_m, "arities": arities}, index=rows.index)


def hull(ok: pd.DataFrame, p: Mapping, n_boot: int, seed: int) -> Verdict:
    """Does width help inside the hull of the training combinations and not outside it?

    The claim is two-sided, and both sides are compared at equal numbers of active modules
    (:func:`arity_matched_hull`) and on the grid designed for it (withheld module pairs: every seed
    at every coverage has out-of-hull combinations). Cells are (width, hold-out); each number below
    is a mean of cell means over the hold-outs with a Welch–Satterthwaite t interval
    (:func:`bindscale.verdicts.stats.strata_mean_ci`). Deciding number: the out-of-hull width gain (largest
    minus smallest width). supported: in-hull gain CI above 0, out-of-hull gain CI at most
    ``margin``, and in-hull − out-of-hull at the largest width CI above ``margin``. not_supported:
    out-of-hull gain CI above ``margin`` (scale helps outside the hull), or the in − out gap at the
    largest width CI at most ``margin`` (outside the hull does as well as inside), or in-hull gain CI
    at most 0 (scale does not help inside either). Otherwise inconclusive.
    """
    name = "outhull_r2_width_gain"
    margin = float(p["margin"])
    details: dict[str, Any] = {"margin": margin}
    mlp = ok[ok["model"] == "mlp"]
    if "n_outhull" in mlp and len(mlp):
        # Visible in the report: splits whose held-out set has no out-of-hull combination.
        none = mlp[mlp["n_outhull"].fillna(0) == 0]
        details["trials_without_outhull_combinations"] = int(len(none))
        if len(none):
            details["trials_without_outhull_by_width_holdout"] = {
                f"width {json_key(w)}, holdout {json_key(h)}": int(len(g)) for (w, h), g in none.groupby(["width", "holdout"])}
    mlp = design_rows(mlp, withheld=True)
    if not any(ARITY_COLUMN.match(str(c)) for c in mlp.columns):
        details["reason"] = ("the records have no per-arity hull R² (r2_inhull_k*, r2_outhull_k*): in- and "
                             "out-of-hull cannot be compared at equal numbers of active modules; re-run the study")
        return Verdict(name, INCONCLUSIVE, NAN3, 0, details)
    if len(mlp) and (why := _seedless(mlp, "MLP")):
        details.update(missing_axis="seed", reason=why)
        return Verdict(name, INCONCLUSIVE, NAN3, len(mlp), details)
    rows = pd.concat([mlp, arity_matched_hull(mlp)], axis=1)
    rows = rows[np.isfinite(rows["in_matched"]) & np.isfinite(rows["out_matched"])]
    rows, restriction = restrict_to_mode(rows, COMPARE_LIKE)
    rows = one_record_per_seed(rows)  # reruns of a seed are one seed
    details.update(restriction)
    if rows.empty:
        details["reason"] = "no ok MLP trial has in-hull and out-of-hull combinations with the same number of modules"
        return Verdict(name, INCONCLUSIVE, NAN3, 0, details)
    wmax, wmin = rows["width"].max(), rows["width"].min()
    holdouts = sorted(set(rows.loc[rows["width"] == wmax, "holdout"]) & set(rows.loc[rows["width"] == wmin, "holdout"]))
    rows = rows[rows["holdout"].isin(holdouts)]
    big = [rows[(rows["width"] == wmax) & (rows["holdout"] == h)] for h in holdouts]
    small = [rows[(rows["width"] == wmin) & (rows["holdout"] == h)] for h in holdouts]
    H = len(holdouts)
    if not H:
        details["reason"] = "the smallest and largest widths share no hold-out value (or the columns are missing)"
        return Verdict(name, INCONCLUSIVE, NAN3, len(rows), details)

    def gain(col: str) -> tuple[float, float, float]:
        if wmax == wmin or not H:
            return NAN3
        return strata_mean_ci([g[col] for g in big] + [g[col] for g in small], [1 / H] * H + [-1 / H] * H)

    gains = {"in": gain("in_matched"), "out": gain("out_matched")}
    gap = strata_mean_ci([g["in_matched"] - g["out_matched"] for g in big]) if H else NAN3
    per_width = {}
    for w, g in rows.groupby("width"):
        per_width[json_key(w)] = {"inhull": ci_entry(mean_ci(g["in_matched"]), len(g)),
                              "outhull": ci_entry(mean_ci(g["out_matched"]), len(g)),
                              "inhull_all_arities": ci_entry(mean_ci(g["r2_inhull"]), len(g)),
                              "outhull_all_arities": ci_entry(mean_ci(g["r2_outhull"]), len(g))}
    n_cells = [len(g) for g in big + small]
    value = gains["out"]
    fixed = {"model": "mlp", **{k.removesuffix("_used"): v for k, v in restriction.items() if k.endswith("_used")}}
    # The narrowest width is the baseline the gains are measured from (a student too narrow to fit is what
    # widening is claimed to fix): not gated; its in-distribution fit is reported beside.
    details["deciding_cells"] = [deciding_cell({**fixed, "width": w, "holdout": h}, g["seed"].nunique(),
                                               gated=bool(w == wmax))
                                 for w, gs in ((wmax, big), (wmin, small)) for h, g in zip(holdouts, gs)]
    details["in_distribution_r2_by_width"] = _fits(rows, "width")
    details.update({"largest_width": to_python(wmax), "smallest_width": to_python(wmin), "holdouts": [to_python(h) for h in holdouts],
                    "comparison": "in- vs out-of-hull R² averaged over the numbers of active modules that have both",
                    "arities_used": {str(k): int(v) for k, v in rows["arities"].value_counts().items()},
                    "seeds_per_cell": int(min(n_cells)) if n_cells else 0,
                    "inhull_width_gain": ci_entry(gains["in"], sum(n_cells)),
                    "outhull_width_gain": ci_entry(gains["out"], sum(n_cells)),
                    "inhull_minus_outhull_at_largest_width": ci_entry(gap, sum(len(g) for g in big)),
                    "r2_by_width": per_width})
    if pooled := pooled_columns(rows, POOLABLE + ("holdout",)):
        details["pooled_over"] = pooled

    broken = degenerate([g[c] for g in big + small for c in ("in_matched", "out_matched")])
    W, Wn = json_key(wmax), json_key(wmin)
    over = f"mean over hold-out{'s' if H > 1 else ''} {', '.join(json_key(h) for h in holdouts)}"
    ins = f"in-hull R² gains {_num(gains['in'])} from width {Wn} to {W}"
    outs = f"out-of-hull R² gains {_num(gains['out'])}"
    gaps = f"at width {W} in-hull exceeds out-of-hull by {_num(gap)}"
    found = f"{ins}; {outs}; {gaps} ({over}, equal numbers of active modules; the margin is {margin:g})"
    # Data first, then the claim's halves in order: scale must help inside the hull, not outside it, and
    # leave a gap between the two at the largest width.
    if wmax == wmin:
        verdict, reason = INCONCLUSIVE, "only one width has in- and out-of-hull combinations of the same size"
    elif min(n_cells) < MIN_REPLICATES:
        thin = ", ".join(f"width {json_key(w)}, hold-out {json_key(h)}: {len(g)}" for w, gs in ((wmax, big), (wmin, small))
                         for h, g in zip(holdouts, gs) if len(g) < MIN_REPLICATES)
        verdict, reason = INCONCLUSIVE, f"fewer than {MIN_REPLICATES} seeds in a (width, hold-out) deciding cell ({thin})"
    elif broken:
        verdict, reason = INCONCLUSIVE, broken
    elif gains["in"][2] <= 0:
        verdict, reason = NOT_SUPPORTED, f"scale does not help inside the hull: {found}"
    elif value[1] > margin:
        verdict, reason = NOT_SUPPORTED, f"scale helps outside the hull by more than the margin: {found}"
    elif gap[2] <= margin:
        verdict, reason = NOT_SUPPORTED, (f"outside the hull does as well as inside, within the margin, at the "
                                          f"largest width: {found}")
    elif value[2] <= margin and gains["in"][1] > 0 and gap[1] > margin:
        verdict, reason = SUPPORTED, (f"scale helps inside the hull (interval above 0), not outside it (interval "
                                      f"at or below the margin), and leaves a gap above the margin: {found}")
    else:
        open_ = [what for what, ok_ in (("the in-hull gain's interval reaches 0", gains["in"][1] > 0),
                                        ("the out-of-hull gain's interval contains the margin", value[2] <= margin),
                                        ("the gap's interval contains the margin", gap[1] > margin)) if not ok_]
        verdict, reason = INCONCLUSIVE, f"{'; '.join(open_)}: {found}"
    details["reason"] = reason
    return Verdict(name, verdict, value, len(rows), details)


# claim -> rule(ok rows, params, n_boot, seed) -> (statistic, verdict, triple, n, details)
#: Claim → the models whose largest width its verdict depends on, given the rule's details
#: (:func:`lost_largest_widths`). Binding's target is the MLP's best R²; its hypernet side needs
#: the widest hypernet only when no hypernet reached the target (the verdict then rests on it); the same for
#: binding_tpr's TPR students.
LARGEST_SCALE_CLAIMS: dict[str, Callable[[dict], tuple[str, ...]]] = {
    "scaling": lambda d: ("mlp",),
    "hull": lambda d: ("mlp",),
    "binding": lambda d: ("mlp",) if d.get("hypernet_reaching") else ("mlp", "hypernet"),
    "binding_tpr": lambda d: ("mlp",) if d.get("tpr_reaching") else ("mlp", "tpr"),
}


def lost_largest_widths(df: pd.DataFrame, ok: pd.DataFrame, models: tuple[str, ...]) -> dict[str, dict]:
    """Models whose widest planned configuration has no ok trial with a held-out R².

    Inputs: every row of the results table (any status) and its ok rows
    (:func:`prepare_rows`). Output: model → ``{"planned_largest_width",
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
        out[m] = {"planned_largest_width": to_python(wmax), "largest_ok_width": to_python(got.max()) if not got.empty else None,
                  "n_planned": len(at), "statuses": {str(k): int(v) for k, v in statuses.items()}}
    return out


def _short_of_planned_width(df: pd.DataFrame, details: dict, claim: str) -> str | None:
    """Why a largest-scale claim decided below the widest MLP its grid planned, or None.

    :func:`lost_largest_widths` catches a widest model with no held-out R² at all; this catches a
    rule whose own slice (deciding metric finite, the most common encoding, …) lost it.
    """
    if "largest_width" not in details or "model" not in df or "width" not in df:
        return None
    mlp = design_rows(df[df["model"].astype(str) == "mlp"], withheld=claim == "hull")
    planned = pd.to_numeric(mlp["width"], errors="coerce").max()
    if not np.isfinite(planned) or details["largest_width"] >= planned:
        return None
    return (f"decided at width {details['largest_width']}, below the largest planned MLP width {to_python(planned)}: "
            "its trials lack the deciding metric or the compared configuration there")


def lost_width_guard(claim: str):
    """A guard (:data:`bindscale.core.study.Guard`) for a claim about the largest scale: inconclusive when
    every trial of the widest planned model its verdict rests on diverged or failed."""

    def guard(df: pd.DataFrame, ok: pd.DataFrame, details: dict, verdict: str) -> tuple[str, str] | None:
        lost = lost_largest_widths(df, ok, LARGEST_SCALE_CLAIMS[claim](details))
        if not lost:
            return None
        details["lost_largest_width"] = lost
        widths = " and ".join(
            f"{m} width {v['planned_largest_width']:g} "
            f"({', '.join(f'{c} {k}' for k, c in v['statuses'].items()) or 'no trials'})"
            for m, v in lost.items())
        return (f"no ok trial at the largest planned {widths}: the rule would decide at a smaller width than "
                "the study asked about", "value_without_the_lost_width")

    return guard


def _in_config(rows: pd.DataFrame, config: Mapping[str, Any]) -> pd.DataFrame:
    """Rows of ``rows`` with every column of ``config`` at its value (numbers compared as numbers)."""
    mask = pd.Series(True, index=rows.index)
    for col, want in config.items():
        if col not in rows:
            continue
        if isinstance(want, (int, float)) and not isinstance(want, bool):
            num = pd.to_numeric(rows[col], errors="coerce").to_numpy(float)
            mask &= np.isfinite(num) & np.isclose(num, float(want), rtol=1e-9, atol=0)
        else:
            mask &= rows[col].astype(str) == str(want)
    return rows[mask]


def _statuses(rows: pd.DataFrame) -> str:
    """The statuses of a cell's trials in words ("failed 8", "ok without a held-out R² 2, diverged 6")."""
    st = rows["status"].astype(str) if "status" in rows else pd.Series("ok", index=rows.index)
    if "r2_heldout" in rows:
        nan = ~np.isfinite(pd.to_numeric(rows["r2_heldout"], errors="coerce").to_numpy(float))
        st = st.where(~((st == "ok").to_numpy() & nan), "ok without a held-out R²")
    return ", ".join(f"{k} {int(v)}" for k, v in st.value_counts().items()) or "no trials"


def _usable(ok: pd.DataFrame, model: str, config: Mapping[str, Any]) -> pd.DataFrame:
    """The ok trials of ``model`` in ``config`` that have a held-out R² (what the binding rule can read)."""
    rows = _in_config(ok[ok["model"] == model], config)
    return rows[np.isfinite(pd.to_numeric(rows["r2_heldout"], errors="coerce").to_numpy(float))]


def _lost_holdout(df: pd.DataFrame, ok: pd.DataFrame, details: dict, kind: str) -> tuple[str, dict] | None:
    """Why a binding rule answered at another hold-out than the smallest one its grid planned for both the MLP and
    ``kind`` (failed and unrecorded trials count as planned), with the statuses there; None when it did not."""
    used = details.get("holdout")
    if used is None or "holdout" not in df:
        return None
    grid = design_rows(df[df["model"].astype(str).isin(["mlp", kind])], withheld=False)
    hold = pd.to_numeric(grid["holdout"], errors="coerce")
    common = set(hold[grid["model"].astype(str) == "mlp"].dropna()) & set(hold[grid["model"].astype(str) == kind].dropna())
    if not common or math.isclose(float(used), min(common), rel_tol=1e-9):
        return None
    planned = to_python(min(common))
    at = grid[np.isclose(hold, float(planned), rtol=1e-9, atol=0)]
    lost = {"planned_holdout": planned, "holdout_used": to_python(used),
            "statuses": {m: _statuses(at[at["model"].astype(str) == m]) for m in ("mlp", kind)}}
    short = BINDING_KINDS[kind][0]
    names = {"mlp": "MLP", kind: short}
    none = [names[m] for m in ("mlp", kind) if _usable(ok, m, {"holdout": planned}).empty]
    who = (f"the {none[0]} has no usable trial there" if len(none) == 1 else
           f"neither the MLP nor the {short} has a usable trial there" if none else
           "the two share no usable configuration there")
    words = "; ".join(f"{names[m]}: {v}" for m, v in lost["statuses"].items())
    return (f"the smallest hold-out planned for both the MLP and the {short} is {planned:g}, and {who} ({words}): "
            f"the rule answered at hold-out {float(used):g}, a coverage the claim was not planned to be decided at"
            ), lost


def _size_key(width: Any, depth: Any) -> tuple[float, float | None]:
    """A (width, depth) cell as a hashable key (an unrecorded depth is None, not a NaN unequal to itself)."""
    d = pd.to_numeric(depth, errors="coerce")
    return float(width), (None if pd.isna(d) else float(d))


def _lost_ladder_cells(df: pd.DataFrame, ok: pd.DataFrame, details: dict, kind: str) -> dict[str, list[dict]]:
    """Planned cells of each model's ladder, at or below its upper bracket, that have no usable trial.

    The ladder is every planned (width, depth) of the model in the whole table (failed and unrecorded trials
    too) at the rule's hold-out and compared configuration (``details["compared_config"]``); its upper
    bracket is the last cell of ``details["ladders_to_target"]`` (the cell that reaches the target, or the
    largest when none does). A lost cell's size is its recorded parameter count; a trial that failed before
    counting has none, and then the cell is placed by width among the model's usable cells of its depth
    (parameters grow with width at a fixed depth), or counted as lost when it cannot be placed. Output:
    model → ``[{"width", "depth", "n_params", "statuses"}]``; empty when every cell is there.
    """
    config, ladders = details.get("compared_config"), details.get("ladders_to_target")
    if not config or not ladders or "model" not in df or "width" not in df:
        return {}
    grid = design_rows(df[df["model"].astype(str).isin(["mlp", kind])], withheld=False)
    out: dict[str, list[dict]] = {}
    for model, ladder in ladders.items():
        if not ladder:
            continue
        top = float(ladder[-1]["n_params"])
        planned = _in_config(grid[grid["model"].astype(str) == model], config)
        usable = _usable(ok, model, config)
        have = {_size_key(w, d) for w, d in zip(usable["width"], usable["depth"])}
        sizes = usable.groupby(["width", "depth"], dropna=False)["n_params"].median()
        widths = pd.to_numeric(planned["width"], errors="coerce")
        depths = pd.to_numeric(planned["depth"], errors="coerce") if "depth" in planned else pd.Series(
            np.nan, index=planned.index)
        for (w, d), g in planned.groupby([widths, depths], dropna=False):
            if pd.isna(w) or _size_key(w, d) in have:  # (a trial without a width is the rule's to refuse)
                continue
            p = pd.to_numeric(g["n_params"], errors="coerce") if "n_params" in g else pd.Series(dtype=float)
            p = p[np.isfinite(p)]
            if len(p):
                below = float(p.median()) <= top
            else:  # placed by width among the usable cells of its depth, or counted when it cannot be
                same = [(float(w2), float(p2)) for (w2, d2), p2 in sizes.items()
                        if _size_key(w2, d2)[1] == _size_key(w, d)[1]]
                above = any(w2 < w and p2 >= top for w2, p2 in same)
                below = not above
            if below:
                out.setdefault(model, []).append({
                    "width": to_python(w), "depth": to_python(d),
                    "n_params": to_python(float(p.median())) if len(p) else None, "statuses": _statuses(g)})
    return out


def ladder_guard(kind: str):
    """A guard for a binding claim (:func:`binding_ratio` with binding student ``kind``): inconclusive when the
    rule answered at another hold-out than the smallest one planned for both models, or when a planned cell of
    either model's ladder, at or below the cell that reaches the target (the largest when none does), has no
    usable trial: the interpolation would bracket the target across the gap. Lost seeds of cells with a usable
    trial count against ``min_seeds`` (each such cell is a deciding cell of the rule)."""

    def guard(df: pd.DataFrame, ok: pd.DataFrame, details: dict, verdict: str) -> tuple[str, str] | None:
        if hit := _lost_holdout(df, ok, details, kind):
            reason, details["lost_planned_holdout"] = hit
            return reason, "value_at_another_holdout"
        lost = _lost_ladder_cells(df, ok, details, kind)
        if not lost:
            return None
        details["lost_ladder_cells"] = lost
        short = BINDING_KINDS[kind][0]
        cells = "; ".join(f"{'MLP' if m == 'mlp' else short} width {c['width']} (depth {c['depth']}): {c['statuses']}"
                          for m, cs in lost.items() for c in cs)
        reason = (f"a planned cell of the ladder up to the target has no usable trial ({cells}) at hold-out "
                  f"{details['compared_config']['holdout']:g}: the parameters-to-target would be interpolated "
                  "across the lost cell")
        return reason, "value_without_the_lost_cells"

    return guard


def _first_hit(*guards):
    """A guard that answers with the first of ``guards`` that hits."""

    def guard(df: pd.DataFrame, ok: pd.DataFrame, details: dict, verdict: str) -> tuple[str, str] | None:
        for g in guards:
            if hit := g(df, ok, details, verdict):
                return hit
        return None

    return guard


def planned_width_guard(claim: str):
    """A guard for a claim whose rule decided (not inconclusive) below the widest planned MLP."""

    def guard(df: pd.DataFrame, ok: pd.DataFrame, details: dict, verdict: str) -> tuple[str, str] | None:
        if verdict == INCONCLUSIVE:
            return None
        short = _short_of_planned_width(df, details, claim)
        return (short, "value_at_a_smaller_width") if short else None

    return guard


#: Claim name → rule (the plugin's claims reference these).
RULES = {"scaling": scaling, "decodability": decodability, "binding": binding, "binding_tpr": binding_tpr,
         "hull": hull}


class _Guards:
    """The guards of one claim, as attributes a :class:`~bindscale.core.study.Claim` can reference."""

    def __init__(self, claim: str, planned: bool = True, binding_kind: str | None = None) -> None:
        # A binding claim's ``lost`` guard also sees its lost hold-out and lost ladder cells (:func:`ladder_guard`).
        self.lost = (_first_hit(lost_width_guard(claim), ladder_guard(binding_kind)) if binding_kind
                     else lost_width_guard(claim))
        if planned:
            self.planned = planned_width_guard(claim)


SCALING_GUARDS, HULL_GUARDS = _Guards("scaling"), _Guards("hull")
BINDING_GUARDS = _Guards("binding", planned=False, binding_kind="hypernet")
BINDING_TPR_GUARDS = _Guards("binding_tpr", planned=False, binding_kind="tpr")
