"""Figures of the ``modularity`` study (Lepori, Serre, Pavlick, NeurIPS 2023, "Break It Down").

Each ``fig_*`` takes the results table and the study's ``min_base_acc`` and
returns a base64 PNG or None when its data are missing. Rows are the trials the
verdicts use (base network learned the compound task, other settings held per
architecture; see :mod:`.verdicts`). Error bars: 95% Student t
intervals of the mean over base seeds (:func:`bindscale.verdicts.stats.mean_ci`), drawn clipped to the
range of the quantity (a share or an accuracy lies in [0, 1]); the title gives n. Legends sit
below the axes.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from bindscale.kit import (
    ci_note,
    errorbar,
    legend,
    log_x,
    new_figure,
    seed_summary,
    titled,
    to_base64,
    N_BOOT,
    SMALL,
    metric_items,
    ok_rows,
    mean_ci,
)

from .verdicts import DEFAULTS, usable

#: Score sources shown side by side: column prefix, label, colour.
SOURCES = (("", "trained network", "C0"), ("random_", "random mask (control)", "C1"),
           ("untrained_", "untrained network (control)", "C7"))
PRETRAINING = {"none": "from scratch", "match_count": "generic pretraining (match count)",
               "subroutines": "subroutine heads (extra)"}
ARCHITECTURES = {"mlp": "MLP", "transformer": "transformer"}
UNIT = (0.0, 1.0)
SHARE_ROBUST = "share of runs structural beyond noise\n(SubDiff > tol and AblDiff < −tol)"
SHARE_RAW = "share of runs with SubDiff > 0 and AblDiff < 0"


def _share_col(rows: pd.DataFrame) -> str:
    """The share the verdicts decide on: beyond test-set noise when recorded, else the raw sign share."""
    return "frac_robust" if "frac_robust" in rows and rows["frac_robust"].notna().any() else "frac_structural"
MIN_BASE_ACC = DEFAULTS["structure_emerges"]["min_base_acc"]


def _rows(df: pd.DataFrame, min_base_acc: float) -> pd.DataFrame:
    if df.empty:
        return df
    rows, _ = usable(ok_rows(df), min_base_acc)
    return rows


def _arch(arch: Any) -> str:
    return ARCHITECTURES.get(str(arch), str(arch))


def _condition(key: tuple) -> str:
    arch, pre = key
    return f"{_arch(arch)}\n{PRETRAINING.get(pre, pre)}"


def _bar(ax: Any, x: float, values: pd.Series, width: float, bounds: tuple[float, float] | None = None,
         **kw: Any) -> int:
    """One bar: the mean of ``values`` with its t interval (clipped to ``bounds``); returns n (0: no bar)."""
    m, lo, hi = mean_ci(values, N_BOOT)
    if not np.isfinite(m):
        return 0
    if bounds is not None:
        lo, hi = np.clip(lo, *bounds), np.clip(hi, *bounds)
    err = np.nan_to_num(np.clip([[m - lo], [hi - m]], 0, None))
    ax.bar(x, m, width, yerr=err, capsize=2, **kw)
    if bounds is not None and m == bounds[0]:  # a bar of height 0 is invisible: say so
        ax.text(x, bounds[0], "0", ha="center", va="bottom", fontsize=SMALL)
    return int(np.isfinite(pd.to_numeric(values, errors="coerce")).sum())


def fig_scores(df: pd.DataFrame, min_base_acc: float = MIN_BASE_ACC) -> str | None:
    """SubDiff (top) and AblDiff (bottom) per condition and subroutine, the two controls beside them."""
    rows = _rows(df, min_base_acc)
    if rows.empty or "sub_diff_A" not in rows:
        return None
    fig = Figure(figsize=(6.0, 5.5), dpi=100, layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(2, 1, sharex=True)
    groups = list(rows.groupby(["architecture", "pretraining"], sort=True))
    bar_w = 0.8 / (2 * len(SOURCES))
    ns = []
    for ax, score, wanted in zip(axes, ("sub_diff", "abl_diff"), ("> 0", "< 0")):
        for gi, (_, g) in enumerate(groups):
            j = 0
            for prefix, label, colour in SOURCES:
                for f, hatch in (("A", ""), ("B", "//")):
                    col = f"{prefix}{score}_{f}"
                    if col in g and g[col].notna().any():
                        ns.append(_bar(ax, gi - 0.4 + (j + 0.5) * bar_w, g[col], bar_w, color=colour, hatch=hatch,
                                       edgecolor="k", linewidth=0.3,
                                       label=f"{label}, subroutine {f}" if gi == 0 else None))
                    j += 1
        ax.axhline(0, color="k", linewidth=0.8)
        name = "SubDiff" if score == "sub_diff" else "AblDiff"
        ax.set_ylabel(f"{name} (accuracy difference)\nstructural: {wanted}")
        ax.grid(True, axis="y", alpha=0.3)
    axes[1].set_xticks(range(len(groups)), [_condition(k) for k, _ in groups], fontsize=SMALL)
    axes[1].set_xlabel("condition (architecture, pretraining)")
    titled(axes[0], "Structure scores per condition, pooled over widths",
           [ci_note(ns, "base models")])
    legend(axes[0], ncol=2)
    return to_base64(fig)


def fig_accuracies(df: pd.DataFrame, min_base_acc: float = MIN_BASE_ACC) -> str | None:
    """The four accuracies behind the scores, trained networks: subnetwork and ablated model on each test set."""
    rows = _rows(df, min_base_acc)
    if rows.empty or "runs" not in rows:
        return None
    accs = ("acc_sub_target", "acc_sub_other", "acc_abl_target", "acc_abl_other")
    recs = []
    for (arch, pre), g in rows.groupby(["architecture", "pretraining"], sort=True):
        for cell in g["runs"]:
            trained = [r for r in metric_items(cell) if r.get("net") == "trained"]  # list<struct> (JSON text in older tables)
            if trained:  # one value per base model: its mask seeds' runs averaged (they share the network)
                recs.append({"cond": (arch, pre), **{k: float(np.nanmean([float(r.get(k, np.nan)) for r in trained]))
                                                     for k in accs}})
    if not recs:
        return None
    runs = pd.DataFrame(recs)
    fig, ax = new_figure()
    conds = sorted(set(runs["cond"]))
    cols = (("acc_sub_target", "subnetwork, its subroutine", "C0", ""),
            ("acc_sub_other", "subnetwork, other subroutine", "C0", "//"),
            ("acc_abl_target", "ablated, its subroutine", "C3", ""),
            ("acc_abl_other", "ablated, other subroutine", "C3", "//"))
    bar_w = 0.8 / len(cols)
    ns = []
    for ci, cond in enumerate(conds):
        g = runs[runs["cond"] == cond]
        for j, (col, label, colour, hatch) in enumerate(cols):
            ns.append(_bar(ax, ci - 0.4 + (j + 0.5) * bar_w, g[col], bar_w, UNIT, color=colour, hatch=hatch,
                           edgecolor="k", linewidth=0.3, label=label if ci == 0 else None))
    ax.axhline(0.5, color="k", linestyle=":", linewidth=1, label="chance (0.5)")
    ax.set_xticks(range(len(conds)), [_condition(c) for c in conds], fontsize=SMALL)
    ax.set_xlabel("condition (architecture, pretraining)")
    ax.set_ylabel("accuracy on the subroutine test sets\n(fraction correct)")
    ax.set_ylim(0, 1.05)
    titled(ax, "Found subnetwork vs ablated rest, trained networks",
           [ci_note(ns, "base models")])
    legend(ax, ncol=2)
    return to_base64(fig)


def fig_share_vs_width(df: pd.DataFrame, min_base_acc: float = MIN_BASE_ACC) -> str | None:
    """Share of runs meeting both criteria vs width, per architecture and pretraining; untrained control dotted."""
    rows = _rows(df, min_base_acc)
    if rows.empty:
        return None
    fig, ax = new_figure()
    col = _share_col(rows)
    lines = [(f"{_arch(arch)}, {PRETRAINING.get(pre, pre)}", g, col, {"color": f"C{i}"})
             for i, ((arch, pre), g) in enumerate(rows.groupby(["architecture", "pretraining"], sort=True))]
    # The untrained network does not depend on pretraining: one control line per architecture, one value per
    # network (its twins in the other pretraining conditions carry the same value: fill_untrained).
    for arch, g in rows.groupby("architecture", sort=True):
        if f"untrained_{col}" in g and g[f"untrained_{col}"].notna().any():
            keys = [k for k in ("width", "seed") if k in g]
            g = g.groupby(keys, sort=True)[[f"untrained_{col}"]].mean().reset_index()
            lines.append((f"{_arch(arch)}, untrained network (control)", g, f"untrained_{col}",
                          {"color": "k" if arch == "mlp" else "C7", "ls": ":", "marker": "x"}))
    ns = []
    for i, (label, g, c, style) in enumerate(lines):
        s = seed_summary(g, "width", c)
        ns += list(s["n"])
        shift = 1.04 ** (i - (len(lines) - 1) / 2)  # lines side by side at a shared width (log axis)
        errorbar(ax, s["width"] * shift, s, bounds=UNIT, label=label, **style)
    log_x(ax, rows["width"])
    ax.set_xlabel("width (MLP hidden units / transformer model dimension)")
    ax.set_ylabel(SHARE_ROBUST if col == "frac_robust" else SHARE_RAW)
    ax.set_ylim(-0.03, 1.03)
    titled(ax, "Structural compositionality vs width", [ci_note(ns, "base seeds")])
    legend(ax, ncol=2)
    return to_base64(fig)


def fig_share_by_pretraining(df: pd.DataFrame, min_base_acc: float = MIN_BASE_ACC) -> str | None:
    """Share meeting both criteria, from scratch vs pretrained, per architecture and width."""
    rows = _rows(df, min_base_acc)
    if rows.empty or rows["pretraining"].nunique() < 2:
        return None
    fig, ax = new_figure()
    keys = sorted({(a, w) for a, w in zip(rows["architecture"], rows["width"])})
    col = _share_col(rows)
    conds = [c for c in PRETRAINING if c in set(rows["pretraining"])]
    bar_w = 0.8 / len(conds)
    ns = []
    for j, pre in enumerate(conds):
        colour = {"none": "C7", "match_count": "C0", "subroutines": "C2"}[pre]
        for k, key in enumerate(keys):
            g = rows[(rows["architecture"] == key[0]) & (rows["width"] == key[1]) & (rows["pretraining"] == pre)]
            if len(g):
                ns.append(_bar(ax, k - 0.4 + (j + 0.5) * bar_w, g[col], bar_w, UNIT, color=colour,
                               hatch="//" if pre == "subroutines" else "", edgecolor="k", linewidth=0.3,
                               label=PRETRAINING[pre] if k == 0 else None))
    ax.set_xticks(range(len(keys)), [f"{_arch(a)}\nwidth {int(w)}" for a, w in keys], fontsize=SMALL)
    ax.set_xlabel("architecture and width (hidden units / model dimension)")
    ax.set_ylabel(SHARE_ROBUST if col == "frac_robust" else SHARE_RAW)
    ax.set_ylim(0, 1.05)
    titled(ax, "Structural compositionality by pretraining", [ci_note(ns, "base seeds")])
    legend(ax)
    return to_base64(fig)


_CI = "mean ± 95% t interval over base seeds, clipped to [0, 1] where a share (n in the title)"

MODULARITY_FIGURES: dict[str, tuple[Any, str]] = {
    "mod_scores": (fig_scores, "SubDiff and AblDiff per subroutine (A plain, B hatched) and condition, pooled over "
                               "widths, beside the random-mask and untrained-network controls; mean ± 95% t interval "
                               "over base models (n in the title)."),
    "mod_accuracies": (fig_accuracies, "Accuracy of the found subnetwork and of the ablated model (the rest of the "
                                       "network) on each subroutine's test set, trained networks, pooled over widths; "
                                       "chance 0.5; mean ± 95% t interval over base models (a model's mask seeds "
                                       "averaged first; n in the title)."),
    "mod_share_vs_width": (fig_share_vs_width, "Share of (base model × mask seed) runs structural beyond test-set "
                                               "noise (SubDiff > tol, AblDiff < −tol) vs width, per architecture and "
                                               "pretraining (side by side at a shared width); dotted: untrained "
                                               f"control; {_CI}."),
    "mod_share_by_pretraining": (fig_share_by_pretraining, "Share structural beyond test-set noise from scratch, "
                                                           "after generic (match-count) pretraining — which decides "
                                                           "— and after subroutine-head pretraining (hatched, a "
                                                           "labelled extra), per architecture and width; "
                                                           f"{_CI}."),
}


def modularity_figures(study: dict[str, Any] | None = None) -> dict[str, tuple[Any, str]]:
    """:data:`MODULARITY_FIGURES` drawing the trials whose base accuracy reaches the study's
    ``structure_emerges.min_base_acc`` (the verdicts' rows)."""
    rule = ((study or {}).get("verdicts") or {}).get("structure_emerges") or {}
    acc = rule.get("min_base_acc", MIN_BASE_ACC)
    return {k: (partial(fn, min_base_acc=acc), caption) for k, (fn, caption) in MODULARITY_FIGURES.items()}
