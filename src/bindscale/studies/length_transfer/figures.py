"""Figures of the length_transfer study (Cai et al. 2025, "Extrapolation by Association").

Every function takes the results table (all rows) and returns a base64 PNG, or None when its
data are missing. Each shows the deciding slice of :mod:`.verdicts` (RoPE where marked, the
deciding trials: caprev alone / + cap+rev / + copy) unless it says otherwise.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from bindscale.kit import (
    band,
    ci_note,
    errorbar,
    id_ood_spans,
    legend,
    log_counts,
    new_figure,
    seed_summary,
    summary_of,
    titled,
    to_base64,
    metric_table,
    FIGSIZE,
    SMALL,
)

from .config import LengthTransferTrial
from .verdicts import DECIDING, _deciding, prepare_rows

COLOURS = {"alone": "tab:grey", "related": "tab:blue", "unrelated": "tab:red"}
STYLES = {"rope": "-", "none": "--", "learned": ":"}


def _rows(df: pd.DataFrame, rope_only: bool = False) -> tuple[pd.DataFrame, dict]:
    """The ok rows of the deciding trials (:data:`.verdicts.DECIDING`: caprev alone / + cap+rev / + copy; all
    positions unless ``rope_only``), with their names; partial auxiliary sets are left out."""
    ok = prepare_rows(df)
    if ok.empty or "condition" not in ok or "acc_beyond" not in ok:
        return ok.iloc[0:0], {}
    rows = _deciding(ok.assign(pos="rope")) if not rope_only else _deciding(ok)
    rows = ok.loc[rows.index]
    if not (rows["condition"] == "related").any():
        return ok.iloc[0:0], {}
    return rows, {"main_used": DECIDING["main"], "related_aux_used": DECIDING["related"]}


def acc_by_length(df: pd.DataFrame) -> str | None:
    """Main-task exact match by test length per condition (and position scheme), at the largest size; the
    training length L shaded, the auxiliary's training length dashed."""
    rows, d = _rows(df)
    if rows.empty or "acc_by_length" not in rows:
        return None
    rows = rows[rows["n_params"] == rows["n_params"].max()]
    fig, ax = new_figure()
    ns = []
    # a pretrained model's trials have no position scheme of bindscale's (length_transfer-lm): named as such
    pos_of = rows["pos"].astype(object).where(rows["pos"].notna(), "pretrained") if "pos" in rows else \
        pd.Series("rope", index=rows.index)
    for (cond, pos), g in rows.groupby(["condition", pos_of]):
        vals: dict[int, list[float]] = {}
        for cell in g["acc_by_length"]:
            for k, leaf in (metric_table(cell, *LengthTransferTrial.NESTED_METRICS["acc_by_length"]) or {}).items():
                vals.setdefault(int(k), []).append(leaf[1])
        s = summary_of(vals)
        if s.empty:
            continue
        ns += s["n"].tolist()
        label = f"{cond}" + (f" ({g['aux'].iloc[0]})" if cond != "alone" else "") + f", {pos}"
        band(ax, s["x"], s, (0, 1), color=COLOURS.get(cond, "k"), ls=STYLES.get(str(pos), "-"), label=label)
    if not ns:
        return None
    L, A = float(rows["main_len"].iloc[0]), float(rows["aux_len"].iloc[0])
    ax.set_ylim(-0.02, 1.2)
    id_ood_spans(ax, L + 0.5, "main trained (≤ L)", "beyond L")
    ax.axvline(A + 0.5, color="k", ls="--", lw=1)
    ax.text(A + 0.6, 1.05, "auxiliary's\ntraining length", fontsize=SMALL, va="top")
    titled(ax, f"Main task {d.get('main_used')}: exact match by length",
           [f"{int(rows['n_params'].iloc[0]):,} parameters", ci_note(ns)])
    ax.set_xlabel("test length (digits / letters / pairs)")
    ax.set_ylabel("exact match")
    legend(ax, ncol=2)
    return to_base64(fig)


def gain_vs_size(df: pd.DataFrame) -> str | None:
    """Transfer gain beyond L (co-trained minus the mean of main-alone in its cell) against parameters."""
    rows, d = _rows(df)
    rows = rows[rows["condition"] != "alone"] if not rows.empty else rows
    rows = rows[np.isfinite(rows["transfer_gain"].to_numpy(float))] if not rows.empty else rows
    if rows.empty:
        return None
    rows = rows.assign(pos=rows["pos"].astype(str) if "pos" in rows else "rope")
    fig, ax = new_figure()
    ns = []
    for (cond, pos), g in rows.groupby(["condition", "pos"]):
        s = seed_summary(g, "n_params", "transfer_gain")
        ns += s["n"].tolist()
        errorbar(ax, s["n_params"], s, color=COLOURS.get(cond, "k"), ls=STYLES.get(pos, "-"), label=f"{cond}, {pos}")
    ax.axhline(0, color="k", lw=0.8)
    log_counts(ax, rows["n_params"])
    titled(ax, f"Transfer gain beyond L vs model size ({d.get('main_used')})", [ci_note(ns)])
    ax.set_xlabel("parameters")
    ax.set_ylabel("exact match beyond L: co-trained − alone")
    legend(ax, ncol=2)
    return to_base64(fig)


def _mean_map(cells: pd.Series, n_layers: int, n_heads: int) -> np.ndarray | None:
    maps = []
    for cell in cells:
        t = metric_table(cell, *LengthTransferTrial.NESTED_METRICS["heads_main"])
        if not t:
            continue
        m = np.full((n_layers, n_heads), np.nan)
        for i, hs in t.items():
            for h, leaf in hs.items():
                if int(i) < n_layers and int(h) < n_heads:
                    m[int(i), int(h)] = leaf[0]
        maps.append(m)
    return np.nanmean(maps, axis=0) if maps else None


def head_maps(df: pd.DataFrame) -> str | None:
    """Mean-ablation loss-rise maps (layer × head, mean over seeds) of the main task and its auxiliaries,
    side by side, in co-trained RoPE models of the largest size."""
    rows, d = _rows(df, rope_only=True)
    rows = rows[rows["condition"] != "alone"] if not rows.empty else rows
    if rows.empty or "heads_main" not in rows or "heads_aux" not in rows:
        return None
    rows = rows[rows["n_params"] == rows["n_params"].max()]
    nl, nh = int(rows["layers"].max()), int(rows["heads"].max())
    panels = []
    for cond, g in sorted(rows.groupby("condition"), key=lambda kv: kv[0]):
        main, aux = _mean_map(g["heads_main"], nl, nh), _mean_map(g["heads_aux"], nl, nh)
        if main is not None and aux is not None:
            panels += [(f"{d.get('main_used')} ({cond} run)", main, len(g)), (f"{g['aux'].iloc[0]} ({cond})", aux, len(g))]
    if not panels:
        return None
    fig = Figure(figsize=(FIGSIZE[0], 1.2 + 1.1 * len(panels) * max(1, nl) / 2), dpi=100, layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(len(panels) // 2, 2, squeeze=False)
    vmax = max(float(np.nanmax(np.abs(p[1]))) for p in panels) or 1.0
    for ax, (title, m, n) in zip(axes.ravel(), panels):
        im = ax.imshow(m, cmap="RdBu_r", vmin=-vmax, vmax=vmax, aspect="auto")
        ax.set_title(f"{title}, n = {n}", fontsize=SMALL + 1)
        ax.set_xlabel("head", fontsize=SMALL)
        ax.set_ylabel("layer", fontsize=SMALL)
        ax.set_xticks(range(nh))
        ax.set_yticks(range(nl))
    fig.colorbar(im, ax=axes.ravel().tolist(), label="loss rise (nats/token)", shrink=0.8)
    fig.suptitle("Head importance (mean ablation), mean over seeds", fontsize=11)
    return to_base64(fig)


def reuse_scatter(df: pd.DataFrame) -> str | None:
    """Head-map similarity (Pearson r of the loss-rise maps) against transfer gain, one point per co-trained trial."""
    ok = prepare_rows(df)
    if ok.empty or "head_corr" not in ok or "transfer_gain" not in ok:
        return None
    co = ok[(ok["condition"] != "alone") & np.isfinite(ok["head_corr"].to_numpy(float))
            & np.isfinite(ok["transfer_gain"].to_numpy(float))]
    if co.empty:
        return None
    fig, ax = new_figure()
    pos = co["pos"].astype(str) if "pos" in co else pd.Series("rope", index=co.index)
    for (cond, main, p), g in co.groupby([co["condition"], co["main"], pos]):
        ax.scatter(g["head_corr"], g["transfer_gain"], s=18, alpha=0.7, color=COLOURS.get(cond, "k"),
                   marker="o" if p == "rope" else "^", label=f"{main}, {cond}, {p}")
    ax.axhline(0, color="k", lw=0.8)
    titled(ax, "Head reuse vs transfer", [f"{len(co)} co-trained trials"])
    ax.set_xlabel("head-map similarity (Pearson r, main vs auxiliary)")
    ax.set_ylabel("transfer gain beyond L")
    legend(ax, ncol=2)
    return to_base64(fig)


def figures(study: Mapping[str, Any] | None = None) -> dict[str, tuple]:
    """Figure name → (function, caption)."""
    return {
        "lt_acc_by_length": (acc_by_length, "Main-task exact match by test length per condition at the largest model "
                             "size; the main task's training lengths (≤ L) shaded green, beyond L red, the "
                             "auxiliary's training length dashed; solid RoPE, dashed NoPE."),
        "lt_gain_vs_size": (gain_vs_size, "Transfer gain beyond L (L+1..aux_len) against parameters, related and "
                            "unrelated auxiliaries, RoPE and NoPE."),
        "lt_head_maps": (head_maps, "Per-head mean-ablation importance (rise in answer loss when a head's output is "
                         "replaced by its mean over a reference batch) for the main task and its auxiliaries, "
                         "side by side; RoPE, largest size."),
        "lt_reuse_scatter": (reuse_scatter, "Similarity of the main and auxiliary head maps against each co-trained "
                             "trial's transfer gain (the head-reuse claim's data)."),
    }
