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

from bindscale.report.figures import (
    N_BOOT,
    _as_list,
    _errorbar,
    _fixed,
    _log_x,
    _new_figure,
    _summary,
    _title,
    _to_b64,
    _two,
)
from bindscale.stats import correlation_ci

from .verdicts import ARITY_COLUMN, COMPARE_LIKE, DEFAULTS, arity_matched_hull, design_rows, ok_rows, restrict_to_mode


def _mlp(df: pd.DataFrame, *cols: str, withheld: bool = False) -> pd.DataFrame:
    """ok MLP rows with finite values in ``cols``, from the random hold-out grid (``withheld=False``)
    or the hull claim's withheld-pair grid (:func:`bindscale.report.verdicts.design_rows`)."""
    rows = ok_rows(df)
    rows = design_rows(rows[rows["model"] == "mlp"], withheld=withheld)
    for c in cols:
        rows = rows[np.isfinite(rows[c])]
    return rows



# ----------------------------------------------------------------- figures --

def fig_heldout_vs_width(df: pd.DataFrame, threshold: float | None = None) -> str | None:
    """Held-out R² vs MLP width, one line per coverage (labelled by training combos).

    Uses the most common depth when depth varies; ``threshold`` (the scaling
    verdict's R² threshold) is drawn as a dashed line when given.
    """
    rows, note = restrict_to_mode(_mlp(df, "r2_heldout", "width", "holdout"), COMPARE_LIKE)
    if rows.empty:
        return None
    fig, ax = _new_figure()
    for h, g in rows.groupby("holdout"):
        s = _summary(g, "width", "r2_heldout")
        n_train = g["n_train_combos"].median()
        label = (f"{n_train:.0f} train combos" if np.isfinite(n_train) else "") + f" (holdout {h:g})"
        _errorbar(ax, s["width"], s, label=label.strip())
    if threshold is not None:
        ax.axhline(threshold, ls="--", c="grey", lw=1, label=f"threshold {threshold:g}")
    _log_x(ax, rows["width"])
    ax.set(xlabel="MLP width", ylabel="held-out R²")
    _title(ax, "Held-out R² vs width", _fixed(note))
    ax.legend(fontsize=8)
    return _to_b64(fig)


def fig_heldout_vs_train_combos(df: pd.DataFrame) -> str | None:
    """Held-out R² vs number of training combinations, one line per MLP width."""
    rows, note = restrict_to_mode(_mlp(df, "r2_heldout", "n_train_combos", "width"), COMPARE_LIKE)
    if rows.empty:
        return None
    fig, ax = _new_figure()
    for w, g in rows.groupby("width"):
        s = _summary(g, "holdout", "r2_heldout")
        # x: median combos per holdout (the count is fixed by the split).
        x = [g.loc[g["holdout"] == h, "n_train_combos"].median() for h in s["holdout"]]
        order = np.argsort(x)
        _errorbar(ax, np.asarray(x)[order], s.iloc[order], label=f"width {w:g}")
    ax.set(xlabel="number of training combinations", ylabel="held-out R²")
    _title(ax, "Held-out R² vs training combinations", _fixed(note))
    ax.legend(fontsize=8)
    return _to_b64(fig)


def fig_decodability(df: pd.DataFrame) -> str | None:
    """Decodability (best hidden layer) vs held-out R², coloured by width.

    The random-init control (``decod_random``) is a second marker set and the
    input-encoding baseline (mean ``decod_input``) a dotted vertical line.
    """
    rows = _mlp(df, "decod_best", "r2_heldout")
    if rows.empty:
        return None
    fig, ax = _new_figure()
    widths = rows["width"].to_numpy(float)
    finite_w = np.isfinite(widths) & (widths > 0)
    norm = LogNorm(widths[finite_w].min(), widths[finite_w].max()) if finite_w.any() and np.ptp(widths[finite_w]) > 0 else None
    colour = {"c": widths, "norm": norm, "cmap": "viridis"} if norm is not None else {}
    sc = ax.scatter(rows["decod_best"], rows["r2_heldout"], s=30,
                    label="trained (best hidden layer)", **colour)
    ctrl = rows[np.isfinite(rows["decod_random"])]
    if not ctrl.empty:
        ax.scatter(ctrl["decod_random"], ctrl["r2_heldout"], marker="x", c="grey", s=25,
                   label="random-init control")
    base = rows["decod_input"].to_numpy(float)
    if np.isfinite(base).any():
        ax.axvline(np.nanmean(base), ls=":", c="k", lw=1, label="input encoding (baseline)")
    if norm is not None:
        cbar = fig.colorbar(sc, ax=ax, label="width")
        ticks = sorted(set(widths[finite_w]))
        if len(ticks) <= 8:  # label the actual widths, not 10^k
            cbar.set_ticks(ticks, labels=[f"{t:g}" for t in ticks])
            cbar.ax.minorticks_off()
    rho = correlation_ci(rows["decod_best"], rows["r2_heldout"], "spearman", N_BOOT)[0]
    r = correlation_ci(rows["decod_best"], rows["r2_heldout"], "pearson", N_BOOT)[0]
    ax.set(xlabel="linear decodability of constituents (probe R²)", ylabel="held-out R²",
           title=f"Spearman ρ = {_two(rho)}, Pearson r = {_two(r)} (n = {len(rows)})")
    ax.title.set_fontsize(11)
    ax.legend(fontsize=8)
    return _to_b64(fig)


def fig_heldout_vs_params(df: pd.DataFrame) -> str | None:
    """Held-out R² vs parameter count, one line per model (log x).

    Uses the smallest holdout shared by all models present (the binding
    comparison's coverage); a point is one (width, depth) config.
    """
    rows = design_rows(ok_rows(df), withheld=False)
    rows = rows[np.isfinite(rows["r2_heldout"]) & (rows["n_params"] > 0)]
    if rows.empty:
        return None
    shared = set.intersection(*(set(g["holdout"]) for _, g in rows.groupby("model")))
    h = min(shared) if shared else rows["holdout"].min()
    rows, note = restrict_to_mode(rows[rows["holdout"] == h], ("encoding", "split"))
    fig, ax = _new_figure()
    for model, g in rows.groupby("model"):
        s = _summary(g, ["width", "depth"], "r2_heldout")
        s["n_params"] = [g.loc[(g["width"] == w) & (g["depth"] == d), "n_params"].median()
                         for w, d in zip(s["width"], s["depth"])]
        s = s.sort_values("n_params")
        _errorbar(ax, s["n_params"], s, label=model)
    ax.set_xscale("log")
    ax.set(xlabel="parameter count", ylabel="held-out R²")
    _title(ax, "Held-out R² vs parameters", [f"holdout {h:g}", *_fixed(note)])
    ax.legend(fontsize=8)
    return _to_b64(fig)


def fig_hull_vs_width(df: pd.DataFrame) -> str | None:
    """In-hull and out-of-hull held-out R² vs MLP width, at equal numbers of active modules.

    Uses the hull claim's rows and comparison (:func:`bindscale.report.verdicts.arity_matched_hull`:
    the withheld-pair grid where there is one; R² averaged over the numbers of active modules that
    have both kinds); the unmatched out-of-hull R² is drawn dashed beside it.
    """
    rows = _mlp(df, "r2_inhull", "r2_outhull", withheld=True)
    if not any(ARITY_COLUMN.match(str(c)) for c in rows.columns):
        return None
    rows = pd.concat([rows, arity_matched_hull(rows)], axis=1)
    rows, note = restrict_to_mode(rows[np.isfinite(rows["in_matched"]) & np.isfinite(rows["out_matched"])], COMPARE_LIKE)
    if rows.empty:
        return None
    fig, ax = _new_figure()
    for col, label, style in (("in_matched", "in-hull", "-"), ("out_matched", "out-of-hull", "-"),
                              ("r2_outhull", "out-of-hull, all sizes (unmatched)", "--")):
        s = _summary(rows, "width", col)
        _errorbar(ax, s["width"], s, label=label, linestyle=style)
    _log_x(ax, rows["width"])
    pooled = ["holdouts pooled"] if rows["holdout"].nunique() > 1 else []
    ax.set(xlabel="MLP width", ylabel="held-out R²")
    _title(ax, "Inside vs outside the training hull, equal numbers of modules", _fixed(note) + pooled)
    ax.legend(fontsize=8)
    return _to_b64(fig)


def fig_training_curves(df: pd.DataFrame) -> str | None:
    """Held-out R² over training steps, mean over seeds per width, at min holdout."""
    if "curve_steps" not in df or "curve_r2_heldout" not in df:
        return None
    rows, note = restrict_to_mode(_mlp(df, "width", "holdout"), COMPARE_LIKE)
    if rows.empty:
        return None
    rows = rows[rows["holdout"] == rows["holdout"].min()]
    fig, ax = _new_figure()
    drawn = False
    for w, g in rows.groupby("width"):
        by_step: dict[float, list[float]] = {}
        for steps, vals in zip(g["curve_steps"], g["curve_r2_heldout"]):
            steps, vals = _as_list(steps), _as_list(vals)
            if not steps or not vals or len(steps) != len(vals):
                continue
            for st, v in zip(steps, vals):
                if math.isfinite(v):
                    by_step.setdefault(st, []).append(v)
        if by_step:
            xs = sorted(by_step)
            ax.plot(xs, [np.mean(by_step[x]) for x in xs], marker=".", label=f"width {w:g}")
            drawn = True
    if not drawn:
        return None
    ax.set(xlabel="training step", ylabel="held-out R² (mean over seeds)")
    _title(ax, "Training curves", [f"holdout {rows['holdout'].min():g}", *_fixed(note)])
    ax.legend(fontsize=8)
    return _to_b64(fig)


# name -> (function, caption); the order is the report's order.
FIGURES: dict[str, tuple[Callable[..., str | None], str]] = {
    "heldout_vs_width": (fig_heldout_vs_width,
                         "Held-out R² vs MLP width, one line per coverage; mean ± 95% CI over seeds."),
    "heldout_vs_train_combos": (fig_heldout_vs_train_combos,
                                "Held-out R² vs number of training combinations, one line per width."),
    "training_curves": (fig_training_curves,
                        "Held-out R² during training at the best coverage, mean over seeds."),
    "decodability": (fig_decodability,
                     "Linear decodability of the constituents vs held-out R²; "
                     "crosses: same probe on a random-init network (control)."),
    "heldout_vs_params": (fig_heldout_vs_params,
                          "Held-out R² vs parameter count, one line per model "
                          "(MLP vs hypernetwork, where both were trained: explicit binding)."),
    "hull_vs_width": (fig_hull_vs_width,
                      "Held-out R² inside vs outside the convex hull of training combinations."),
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
