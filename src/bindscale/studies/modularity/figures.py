"""Figures of the ``modularity`` study (Lepori, Serre, Pavlick, NeurIPS 2023, "Break It Down").

Each ``fig_*`` takes the results table and the study's ``min_base_acc`` and
returns a base64 PNG or None when its data are missing. Rows are the trials the
verdicts use (base network learned the compound task, other settings held per
architecture; see :mod:`bindscale.report.modularity_verdicts`). Error bars: 95% Student t
intervals of the mean over base seeds (:func:`bindscale.stats.mean_ci`).
"""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from bindscale.records import metric_items
from bindscale.report.figures import N_BOOT, _errorbar, _log_x, _new_figure, _summary, _to_b64
from bindscale.report.verdicts import ok_rows
from bindscale.stats import mean_ci

from .verdicts import DEFAULTS, usable

#: Score sources shown side by side: column prefix, label, colour.
SOURCES = (("", "trained network", "C0"), ("random_", "random mask (control)", "C1"),
           ("untrained_", "untrained network (control)", "C7"))
PRETRAINING = {"none": "from scratch", "match_count": "generic pretraining (match count)",
               "subroutines": "subroutine heads (extra)"}


def _share_col(rows: pd.DataFrame) -> str:
    """The share the verdicts decide on: beyond test-set noise when recorded, else the raw sign share."""
    return "frac_robust" if "frac_robust" in rows and rows["frac_robust"].notna().any() else "frac_structural"
MIN_BASE_ACC = DEFAULTS["structure_emerges"]["min_base_acc"]


def _rows(df: pd.DataFrame, min_base_acc: float) -> pd.DataFrame:
    if df.empty:
        return df
    rows, _ = usable(ok_rows(df), min_base_acc)
    return rows


def _condition(key: tuple) -> str:
    arch, pre = key
    return f"{arch}\n{PRETRAINING.get(pre, pre)}"


def _bar(ax: Any, x: float, values: pd.Series, width: float, **kw: Any) -> None:
    m, lo, hi = mean_ci(values, N_BOOT)
    if np.isfinite(m):
        err = np.nan_to_num(np.clip([[m - lo], [hi - m]], 0, None))
        ax.bar(x, m, width, yerr=err, capsize=2, **kw)


def fig_scores(df: pd.DataFrame, min_base_acc: float = MIN_BASE_ACC) -> str | None:
    """SubDiff (top) and AblDiff (bottom) per condition and subroutine, the two controls beside them."""
    rows = _rows(df, min_base_acc)
    if rows.empty or "sub_diff_A" not in rows:
        return None
    fig = Figure(figsize=(7.5, 5.5), dpi=100, layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(2, 1, sharex=True)
    groups = list(rows.groupby(["architecture", "pretraining"], sort=True))
    bar_w = 0.8 / (2 * len(SOURCES))
    for ax, score, wanted in zip(axes, ("sub_diff", "abl_diff"), ("> 0", "< 0")):
        for gi, (_, g) in enumerate(groups):
            j = 0
            for prefix, label, colour in SOURCES:
                for f, hatch in (("A", ""), ("B", "//")):
                    col = f"{prefix}{score}_{f}"
                    if col in g and g[col].notna().any():
                        _bar(ax, gi - 0.4 + (j + 0.5) * bar_w, g[col], bar_w, color=colour, hatch=hatch,
                             edgecolor="k", linewidth=0.3, label=f"{label}, subroutine {f}" if gi == 0 else None)
                    j += 1
        ax.axhline(0, color="k", linewidth=0.8)
        ax.set_ylabel(f"{'SubDiff' if score == 'sub_diff' else 'AblDiff'} (structural: {wanted})")
        ax.grid(True, axis="y", alpha=0.3)
    axes[1].set_xticks(range(len(groups)), [_condition(k) for k, _ in groups], fontsize=8)
    axes[0].legend(fontsize=6, ncol=3, loc="upper right")
    return _to_b64(fig)


def fig_accuracies(df: pd.DataFrame, min_base_acc: float = MIN_BASE_ACC) -> str | None:
    """The four accuracies behind the scores, trained networks: subnetwork and ablated model on each test set."""
    rows = _rows(df, min_base_acc)
    if rows.empty or "runs" not in rows:
        return None
    recs = []
    for (arch, pre), g in rows.groupby(["architecture", "pretraining"], sort=True):
        for runs in g["runs"]:
            for r in metric_items(runs):  # list<struct> cell (JSON text in older tables)
                if r["net"] == "trained":
                    recs.append({"cond": (arch, pre), **{k: r[k] for k in
                                 ("acc_sub_target", "acc_sub_other", "acc_abl_target", "acc_abl_other")}})
    if not recs:
        return None
    runs = pd.DataFrame(recs)
    fig, ax = _new_figure()
    conds = sorted(set(runs["cond"]))
    cols = (("acc_sub_target", "subnetwork, its subroutine", "C0", ""),
            ("acc_sub_other", "subnetwork, other subroutine", "C0", "//"),
            ("acc_abl_target", "ablated, its subroutine", "C3", ""),
            ("acc_abl_other", "ablated, other subroutine", "C3", "//"))
    bar_w = 0.8 / len(cols)
    for ci, cond in enumerate(conds):
        g = runs[runs["cond"] == cond]
        for j, (col, label, colour, hatch) in enumerate(cols):
            _bar(ax, ci - 0.4 + (j + 0.5) * bar_w, g[col], bar_w, color=colour, hatch=hatch, edgecolor="k",
                 linewidth=0.3, label=label if ci == 0 else None)
    ax.axhline(0.5, color="k", linestyle=":", linewidth=1, label="chance")
    ax.set_xticks(range(len(conds)), [_condition(c) for c in conds], fontsize=8)
    ax.set_ylabel("accuracy on the subroutine test sets")
    ax.set_ylim(0, 1.05)
    ax.legend(fontsize=6, loc="lower right")
    return _to_b64(fig)


def fig_share_vs_width(df: pd.DataFrame, min_base_acc: float = MIN_BASE_ACC) -> str | None:
    """Share of runs meeting both criteria vs width, per architecture and pretraining; untrained control dotted."""
    rows = _rows(df, min_base_acc)
    if rows.empty:
        return None
    fig, ax = _new_figure()
    col = _share_col(rows)
    for i, ((arch, pre), g) in enumerate(rows.groupby(["architecture", "pretraining"], sort=True)):
        s = _summary(g, "width", col)
        _errorbar(ax, s["width"], s, color=f"C{i}", label=f"{arch}, {PRETRAINING.get(pre, pre)}")
    # The untrained network does not depend on pretraining: one control line per architecture.
    for arch, g in rows.groupby("architecture", sort=True):
        if f"untrained_{col}" in g and g[f"untrained_{col}"].notna().any():
            s = _summary(g, "width", f"untrained_{col}")
            ax.plot(s["width"], s["mean"], ":", color="k" if arch == "mlp" else "C7", marker="x",
                    label=f"{arch}, untrained control")
    _log_x(ax, rows["width"])
    ax.set_xlabel("width (MLP hidden units / transformer d_model)")
    ax.set_ylabel("share with SubDiff > tol and AblDiff < −tol" if col == "frac_robust"
                  else "share meeting SubDiff > 0 and AblDiff < 0")
    ax.set_ylim(-0.03, 1.03)
    ax.legend(fontsize=7)
    return _to_b64(fig)


def fig_share_by_pretraining(df: pd.DataFrame, min_base_acc: float = MIN_BASE_ACC) -> str | None:
    """Share meeting both criteria, from scratch vs pretrained, per architecture and width."""
    rows = _rows(df, min_base_acc)
    if rows.empty or rows["pretraining"].nunique() < 2:
        return None
    fig, ax = _new_figure()
    keys = sorted({(a, w) for a, w in zip(rows["architecture"], rows["width"])})
    col = _share_col(rows)
    conds = [c for c in PRETRAINING if c in set(rows["pretraining"])]
    bar_w = 0.8 / len(conds)
    for j, pre in enumerate(conds):
        colour = {"none": "C7", "match_count": "C0", "subroutines": "C2"}[pre]
        for k, key in enumerate(keys):
            g = rows[(rows["architecture"] == key[0]) & (rows["width"] == key[1]) & (rows["pretraining"] == pre)]
            if len(g):
                _bar(ax, k - 0.4 + (j + 0.5) * bar_w, g[col], bar_w, color=colour,
                     hatch="//" if pre == "subroutines" else "", label=PRETRAINING[pre] if k == 0 else None)
    ax.set_xticks(range(len(keys)), [f"{a}\n{int(w)}" for a, w in keys], fontsize=8)
    ax.set_ylabel("share structural beyond noise" if col == "frac_robust" else "share meeting both criteria")
    ax.set_ylim(0, 1.05)
    ax.legend(fontsize=8)
    return _to_b64(fig)


MODULARITY_FIGURES: dict[str, tuple[Any, str]] = {
    "mod_scores": (fig_scores, "SubDiff and AblDiff per subroutine (A plain, B hatched) and condition, pooled over "
                               "widths, beside the random-mask and untrained-network controls; mean ± 95% CI over "
                               "base seeds."),
    "mod_accuracies": (fig_accuracies, "Accuracy of the found subnetwork and of the ablated model (the rest of the "
                                       "network) on each subroutine's test set, trained networks; chance 0.5."),
    "mod_share_vs_width": (fig_share_vs_width, "Share of (base model × mask seed) runs structural beyond test-set "
                                               "noise (SubDiff > tol, AblDiff < −tol) vs width, per architecture and "
                                               "pretraining; dotted: untrained control."),
    "mod_share_by_pretraining": (fig_share_by_pretraining, "Share structural beyond test-set noise from scratch, "
                                                           "after generic (match-count) pretraining — which decides "
                                                           "— and after subroutine-head pretraining (hatched, a "
                                                           "labelled extra), per architecture and width."),
}


def modularity_figures(study: dict[str, Any] | None = None) -> dict[str, tuple[Any, str]]:
    """:data:`MODULARITY_FIGURES` drawing the trials whose base accuracy reaches the study's
    ``structure_emerges.min_base_acc`` (the verdicts' rows)."""
    rule = ((study or {}).get("verdicts") or {}).get("structure_emerges") or {}
    acc = rule.get("min_base_acc", MIN_BASE_ACC)
    return {k: (partial(fn, min_base_acc=acc), caption) for k, (fn, caption) in MODULARITY_FIGURES.items()}
