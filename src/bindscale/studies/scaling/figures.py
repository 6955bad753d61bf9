"""Figures of the scaling study, each a function of the results table returning a base64 PNG
(or None when its data are missing); :func:`figures` is the study's figure set."""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.colors import LogNorm

from bindscale.kit import (
    curve_values,
    band as _band,
    ci_note,
    errorbar,
    fixed_qualifiers,
    legend,
    log_x,
    new_figure,
    seed_summary,
    summary_of,
    titled,
    to_base64,
    two_decimals,
    N_BOOT,
    SMALL,
    correlation_ci,
)

from .verdicts import ARITY_COLUMN, COMPARE_LIKE, DEFAULTS, arity_matched_hull, design_rows, prepare_rows, restrict_to_mode


def _mlp(df: pd.DataFrame, *cols: str, withheld: bool = False) -> pd.DataFrame:
    """ok MLP rows with finite values in ``cols``, from the random hold-out grid (``withheld=False``)
    or the hull claim's withheld-pair grid (:func:`bindscale.studies.scaling.verdicts.design_rows`)."""
    rows = prepare_rows(df)
    rows = design_rows(rows[rows["model"] == "mlp"], withheld=withheld)
    for c in cols:
        rows = rows[np.isfinite(rows[c])]
    return rows



# ----------------------------------------------------------------- figures --

#: Axis labels in words (never a raw column name).
WIDTH = "MLP width (hidden units per layer)"
R2 = "held-out R²"
MODELS = {"mlp": "MLP", "hypernet": "hypernetwork (explicit binding)",
          "tpr": "TPR student (explicit binding: tensor product)"}


def fig_heldout_vs_width(df: pd.DataFrame, threshold: float | None = None) -> str | None:
    """Held-out R² vs MLP width, one line per coverage (labelled by training combos).

    Uses the most common depth when depth varies; ``threshold`` (the scaling
    verdict's R² threshold) is drawn as a dashed line when given.
    """
    rows, note = restrict_to_mode(_mlp(df, "r2_heldout", "width", "holdout"), COMPARE_LIKE)
    if rows.empty:
        return None
    fig, ax = new_figure()
    ns = []
    for h, g in rows.groupby("holdout"):
        s = seed_summary(g, "width", "r2_heldout")
        ns += list(s["n"])
        n_train = g["n_train_combos"].median()
        label = f"hold-out {h:g}" + (f" ({n_train:.0f} training combinations)" if np.isfinite(n_train) else "")
        errorbar(ax, s["width"], s, label=label)
    if threshold is not None:
        ax.axhline(threshold, ls="--", c="grey", lw=1, label=f"the claim's threshold, R² = {threshold:g}")
    log_x(ax, rows["width"])
    ax.set(xlabel=WIDTH, ylabel=R2)
    titled(ax, "Held-out R² vs width", fixed_qualifiers(note) + [ci_note(ns)])
    legend(ax)
    return to_base64(fig)


def fig_heldout_vs_train_combos(df: pd.DataFrame) -> str | None:
    """Held-out R² vs number of training combinations, one line per MLP width."""
    rows, note = restrict_to_mode(_mlp(df, "r2_heldout", "n_train_combos", "width"), COMPARE_LIKE)
    if rows.empty:
        return None
    fig, ax = new_figure()
    ns = []
    for w, g in rows.groupby("width"):
        s = seed_summary(g, "holdout", "r2_heldout")
        ns += list(s["n"])
        # x: median combos per holdout (the count is fixed by the split).
        x = [g.loc[g["holdout"] == h, "n_train_combos"].median() for h in s["holdout"]]
        order = np.argsort(x)
        errorbar(ax, np.asarray(x)[order], s.iloc[order], label=f"width {w:g}")
    ax.set(xlabel="training combinations of modules (count)", ylabel=R2)
    titled(ax, "Held-out R² vs training combinations", fixed_qualifiers(note) + [ci_note(ns)])
    legend(ax)
    return to_base64(fig)


def fig_decodability(df: pd.DataFrame) -> str | None:
    """Decodability (best hidden layer) vs held-out R², coloured by width.

    The random-init control (``decod_random``) is a second marker set and the
    input-encoding baseline (mean ``decod_input``) a dotted vertical line. A point is
    one trial (no means: nothing to put an interval on).
    """
    rows = _mlp(df, "decod_best", "r2_heldout")
    if rows.empty:
        return None
    fig, ax = new_figure()
    widths = rows["width"].to_numpy(float)
    finite_w = np.isfinite(widths) & (widths > 0)
    norm = LogNorm(widths[finite_w].min(), widths[finite_w].max()) if finite_w.any() and np.ptp(widths[finite_w]) > 0 else None
    colour = {"c": widths, "norm": norm, "cmap": "viridis"} if norm is not None else {}
    sc = ax.scatter(rows["decod_best"], rows["r2_heldout"], s=30,
                    label="trained network (best hidden layer), one trial each", **colour)
    ctrl = rows[np.isfinite(rows["decod_random"])]
    if not ctrl.empty:
        ax.scatter(ctrl["decod_random"], ctrl["r2_heldout"], marker="x", c="grey", s=25,
                   label="same probe on a random-init network (control)")
    base = rows["decod_input"].to_numpy(float)
    if np.isfinite(base).any():
        ax.axvline(np.nanmean(base), ls=":", c="k", lw=1, label="probe on the input encoding (baseline)")
    if norm is not None:
        cbar = fig.colorbar(sc, ax=ax, label=WIDTH)
        ticks = sorted(set(widths[finite_w]))
        if len(ticks) <= 8:  # label the actual widths, not 10^k
            cbar.set_ticks(ticks, labels=[f"{t:g}" for t in ticks])
            cbar.ax.minorticks_off()
    rho = correlation_ci(rows["decod_best"], rows["r2_heldout"], "spearman", N_BOOT)[0]
    r = correlation_ci(rows["decod_best"], rows["r2_heldout"], "pearson", N_BOOT)[0]
    ax.set(xlabel="linear decodability of the constituents (probe R²)", ylabel=R2,
           title=f"Spearman ρ = {two_decimals(rho)}, Pearson r = {two_decimals(r)} (n = {len(rows)} trials)")
    ax.title.set_fontsize(11)
    legend(ax, ncol=1)
    return to_base64(fig)


def fig_heldout_vs_params(df: pd.DataFrame) -> str | None:
    """Held-out R² vs parameter count, one line per model (log x): the MLP beside each binding student
    (hypernetwork, TPR student), the curves both binding claims read their parameters-to-target from.

    Uses the smallest holdout shared by all models present (the binding
    comparison's coverage); a point is one (width, depth) config.
    """
    rows = design_rows(prepare_rows(df), withheld=False)
    rows = rows[np.isfinite(rows["r2_heldout"]) & (rows["n_params"] > 0)]
    if rows.empty:
        return None
    shared = set.intersection(*(set(g["holdout"]) for _, g in rows.groupby("model")))
    h = min(shared) if shared else rows["holdout"].min()
    rows, note = restrict_to_mode(rows[rows["holdout"] == h], ("encoding", "split"))
    fig, ax = new_figure()
    ns = []
    for model, g in rows.groupby("model"):
        s = seed_summary(g, ["width", "depth"], "r2_heldout")
        ns += list(s["n"])
        s["n_params"] = [g.loc[(g["width"] == w) & (g["depth"] == d), "n_params"].median()
                         for w, d in zip(s["width"], s["depth"])]
        s = s.sort_values("n_params")
        errorbar(ax, s["n_params"], s, label=MODELS.get(str(model), str(model)))
    ax.set_xscale("log")
    ax.set(xlabel="parameters (count, log scale)", ylabel=R2)
    titled(ax, "Held-out R² vs parameters", [f"hold-out {h:g}", *fixed_qualifiers(note), ci_note(ns)])
    legend(ax)
    return to_base64(fig)


def fig_hull_vs_width(df: pd.DataFrame) -> str | None:
    """In-hull and out-of-hull held-out R² vs MLP width, at equal numbers of active modules.

    Uses the hull claim's rows and comparison (:func:`bindscale.studies.scaling.verdicts.arity_matched_hull`:
    the withheld-pair grid where there is one; R² averaged over the numbers of active modules that
    have both kinds); the unmatched out-of-hull R² is drawn dashed beside it. In-hull (blue, circles)
    and out-of-hull (red, squares) are also written at the lines' right ends.
    """
    rows = _mlp(df, "r2_inhull", "r2_outhull", withheld=True)
    if not any(ARITY_COLUMN.match(str(c)) for c in rows.columns):
        return None
    rows = pd.concat([rows, arity_matched_hull(rows)], axis=1)
    rows, note = restrict_to_mode(rows[np.isfinite(rows["in_matched"]) & np.isfinite(rows["out_matched"])], COMPARE_LIKE)
    if rows.empty:
        return None
    fig, ax = new_figure()
    ns = []
    for col, label, style, colour, marker, tag in (
            ("in_matched", "in hull: held-out combinations inside the convex hull of the training ones",
             "-", "tab:blue", "o", "in hull"),
            ("out_matched", "out of hull: a module pairing never seen in training (same numbers of modules)",
             "-", "tab:red", "s", "out of hull"),
            ("r2_outhull", "out of hull, all numbers of modules (not matched)", "--", "tab:red", "s", None)):
        s = seed_summary(rows, "width", col)
        ns += list(s["n"])
        errorbar(ax, s["width"], s, label=label, linestyle=style, color=colour, marker=marker,
                  alpha=1.0 if tag else 0.45, mfc=colour if tag else "none")
        if tag and len(s):
            ax.annotate(tag, (s["width"].iloc[-1], s["mean"].iloc[-1]), xytext=(8, 0), textcoords="offset points",
                        va="center", ha="left", fontsize=SMALL, color=colour, fontweight="bold")
    log_x(ax, rows["width"])
    lo, hi = ax.get_xlim()
    ax.set_xlim(lo, hi * (hi / lo) ** 0.3)  # room for the line-end labels (log axis)
    pooled = rows["holdout"].nunique() > 1
    ax.set(xlabel=WIDTH, ylabel=R2)
    titled(ax, "Inside vs outside the training hull, equal numbers of modules",
           fixed_qualifiers(note) + (["hold-outs pooled", ci_note(ns, "seeds × hold-outs")] if pooled
                           else [ci_note(ns)]))
    legend(ax, ncol=1)
    return to_base64(fig)


def fig_training_curves(df: pd.DataFrame) -> str | None:
    """Held-out R² over training steps at the smallest hold-out: mean over seeds per width with its
    95% t interval as a band."""
    if "curve_steps" not in df or "curve_r2_heldout" not in df:
        return None
    rows, note = restrict_to_mode(_mlp(df, "width", "holdout"), COMPARE_LIKE)
    if rows.empty:
        return None
    rows = rows[rows["holdout"] == rows["holdout"].min()]
    fig, ax = new_figure()
    ns = []
    for w, g in rows.groupby("width"):
        by_step: dict[float, list[float]] = {}
        for steps, vals in zip(g["curve_steps"], g["curve_r2_heldout"]):
            steps, vals = curve_values(steps), curve_values(vals)
            if not steps or not vals or len(steps) != len(vals):
                continue
            for st, v in zip(steps, vals):
                if math.isfinite(v):
                    by_step.setdefault(st, []).append(v)
        s = summary_of(by_step, "step")
        if len(s):
            ns += list(s["n"])
            _band(ax, s["step"], s, marker=".", label=f"width {w:g}")
    if not ns:
        return None
    ax.set(xlabel="training step (optimizer updates)", ylabel=R2)
    titled(ax, "Training curves", [f"hold-out {rows['holdout'].min():g}", *fixed_qualifiers(note), ci_note(ns)])
    legend(ax)
    return to_base64(fig)


_CI = "mean ± 95% t interval over seeds (n seeds per point in the title)"

# name -> (function, caption); the order is the report's order.
FIGURES: dict[str, tuple[Callable[..., str | None], str]] = {
    "heldout_vs_width": (fig_heldout_vs_width,
                         f"Held-out R² vs MLP width, one line per coverage (hold-out fraction); {_CI}."),
    "heldout_vs_train_combos": (fig_heldout_vs_train_combos,
                                f"Held-out R² vs number of training combinations, one line per width; {_CI}."),
    "training_curves": (fig_training_curves,
                        f"Held-out R² during training at the best coverage; {_CI} (band)."),
    "decodability": (fig_decodability,
                     "Linear decodability of the constituents vs held-out R², one point per trial; "
                     "crosses: same probe on a random-init network (control)."),
    "heldout_vs_params": (fig_heldout_vs_params,
                          "Held-out R² vs parameter count, one line per model "
                          "(MLP vs the explicit-binding students, hypernetwork and TPR student, where trained); "
                          f"{_CI}."),
    "hull_vs_width": (fig_hull_vs_width,
                      "Held-out R² inside (blue) vs outside (red) the convex hull of the training combinations, "
                      f"at equal numbers of active modules; dashed: out of hull unmatched; {_CI}."),
}



def figures(study: dict[str, Any] | None = None) -> dict[str, tuple[Callable[..., str | None], str]]:
    """:data:`FIGURES`, with the study's scaling threshold drawn on the width figure."""
    verdicts = (study or {}).get("verdicts") or {}
    thr = None
    if "scaling" in verdicts:
        thr = (verdicts["scaling"] or {}).get("r2_threshold") or DEFAULTS["scaling"]["r2_threshold"]
    out = dict(FIGURES)
    fn, caption = out["heldout_vs_width"]
    out["heldout_vs_width"] = (partial(fn, threshold=thr), caption)
    return out
