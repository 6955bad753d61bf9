"""Figures of the ``geometry`` study (Diego-Simón et al. 2024; Hewitt & Manning 2019).

Each ``fig_*`` takes the results table and returns a base64 PNG or None when its data are missing.
Per-trial tables (``probe_layers``, ``confusion``, ``polar_edges``; :class:`.config.GeometryTrial`
``NESTED_METRICS``) are read back as nested dicts. Means carry their 95% Student t interval over
seeds (:func:`bindscale.verdicts.stats.mean_ci`). Scores are test-sentence scores; "best layer" is each
probe's layer chosen on dev LAS (PolarProbe's convention). ``_pp`` = PolarProbe's convention
(per sentence, punctuation included), ``_hm`` = Hewitt & Manning's (corpus level, no punctuation).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from bindscale.kit import (
    ci_note,
    coerce_numeric,
    errorbar,
    legend,
    seed_summary,
    summary_of,
    to_base64,
    metric_table,
    FIGSIZE,
    SMALL,
    ok_rows,
)

from .config import GeometryTrial
from .layers import METRICS
from .verdicts import deciding_rows

PROBE_COLOURS = {"polar": "tab:blue", "structural": "tab:orange", "identity": "tab:gray"}
UNIT = (0.0, 1.0)


def _rows(df: pd.DataFrame) -> pd.DataFrame:
    ok = ok_rows(df) if len(df) else df
    if ok.empty or "n_params" not in ok:
        return ok.iloc[0:0]
    ok = coerce_numeric(ok, ("n_params", "seed"))
    rows = deciding_rows(ok)[0]
    return rows if not rows.empty else ok  # pretrained models only (geometry-lm): each model is one size


def _figure(ncols: int = 1, width: float = FIGSIZE[0]):
    fig = Figure(figsize=(width, FIGSIZE[1]), dpi=100, layout="constrained")
    FigureCanvasAgg(fig)
    axes = [fig.add_subplot(1, ncols, i + 1) for i in range(ncols)]
    for ax in axes:
        ax.grid(True, alpha=0.3)
    return fig, axes


def _table(cell: Any, metric: str) -> dict | None:
    keys, values = GeometryTrial.NESTED_METRICS[metric]
    return metric_table(cell, keys, values)


def _size_label(n: float) -> str:
    return f"{n / 1e6:.2f}M" if n >= 1e6 else f"{n / 1e3:.0f}k"


def fig_by_layer(df: pd.DataFrame, metric: str = "las") -> str | None:
    """Test ``metric`` by layer for each model size: polar (solid) beside structural (dashed), both conventions."""
    rows = _rows(df)
    if rows.empty or "probe_layers" not in rows:
        return None
    fig, axes = _figure(2, 9.0)
    sizes = sorted(rows["n_params"].unique())
    cmap = [f"C{i}" for i in range(len(sizes))]
    drawn = False
    for ax, conv, name in ((axes[0], "pp", "PolarProbe convention"), (axes[1], "hm", "Hewitt & Manning convention")):
        k = METRICS.index(f"{metric}_{conv}")
        for colour, size in zip(cmap, sizes):
            for kind, style in (("polar", "-"), ("structural", "--")):
                vals: dict[int, list[float]] = {}
                for cell in rows.loc[rows["n_params"] == size, "probe_layers"]:
                    t = (_table(cell, "probe_layers") or {}).get("trained", {}).get(kind, {})
                    for layer, splits in t.items():
                        v = (splits.get("test") or [None] * len(METRICS))[k]
                        if v is not None:
                            vals.setdefault(int(layer), []).append(float(v))
                s = summary_of(vals)
                if s.empty:
                    continue
                drawn = True
                errorbar(ax, s["x"], s, UNIT, color=colour, linestyle=style, markersize=3,
                          label=f"{_size_label(size)} {kind}" if conv == "pp" else None)
        ax.set_title(name, fontsize=SMALL + 1)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_xlabel("layer (0 = input embeddings)")
        ax.set_ylabel(f"test {metric.upper()}")
    if not drawn:
        return None
    fig.suptitle(f"{metric.upper()} by layer, polar (solid) and structural (dashed) probes; "
                 f"{ci_note(rows.groupby('n_params')['seed'].nunique())}", fontsize=SMALL + 1)
    legend(axes[0], ncol=4)
    return to_base64(fig)


def fig_best_layer(df: pd.DataFrame) -> str | None:
    """Test LAS (PolarProbe convention) at each probe's best dev layer against model size, with the controls."""
    rows = _rows(df)
    need = ["polar_las_pp", "structural_las_pp"]
    if rows.empty or any(c not in rows for c in need):
        return None
    fig, (ax,) = _figure()
    series = [("polar_las_pp", "polar probe", "tab:blue", "-"), ("structural_las_pp", "structural probe", "tab:orange", "-"),
              ("identity_las_pp", "identity probe", "tab:gray", "-"),
              ("untrained_polar_las_pp", "polar, untrained model", "tab:blue", ":"),
              ("embed_polar_las_pp", "polar, input embeddings", "tab:blue", "--")]
    for col, label, colour, style in series:
        if col not in rows or not pd.to_numeric(rows[col], errors="coerce").notna().any():
            continue
        s = seed_summary(coerce_numeric(rows, (col,)), "n_params", col)
        errorbar(ax, s["n_params"], s, UNIT, color=colour, linestyle=style, label=label)
    ax.set_xscale("log")
    ax.set_xlabel("parameters")
    ax.set_ylabel("test LAS (per sentence, punctuation included)")
    ax.set_title(f"LAS at each probe's best dev layer; {ci_note(rows.groupby('n_params')['seed'].nunique())}",
                 fontsize=SMALL + 1)
    legend(ax)
    return to_base64(fig)


def fig_controls(df: pd.DataFrame) -> str | None:
    """UUAS and LAS of every probe on the largest model, its untrained twin and its input embeddings."""
    rows = _rows(df)
    if rows.empty:
        return None
    big = rows[rows["n_params"] == rows["n_params"].max()]
    fig, axes = _figure(2, 9.0)
    drawn = False
    for ax, m in zip(axes, ("uuas_pp", "las_pp")):
        for j, (prefix, label) in enumerate((("", "trained, best layer"), ("untrained_", "untrained, best layer"),
                                             ("embed_", "trained, layer 0"))):
            for i, kind in enumerate(("identity", "structural", "polar")):
                col = f"{prefix}{kind}_{m}"
                if col not in big:
                    continue
                v = pd.to_numeric(big[col], errors="coerce").dropna()
                if v.empty:
                    continue
                s = summary_of({0: v.tolist()})
                drawn = True
                ax.bar(j + (i - 1) * 0.27, s["mean"], 0.25, color=PROBE_COLOURS[kind],
                       label=f"{kind} probe" if j == 0 and m == "uuas_pp" else None)
                errorbar(ax, [j + (i - 1) * 0.27], s, UNIT, fmt="none", color="black")
        chain = f"chain_{m}"
        if m == "uuas_pp" and chain in big and pd.to_numeric(big[chain], errors="coerce").notna().any():
            ax.axhline(float(pd.to_numeric(big[chain], errors="coerce").mean()), color="black", ls=":",
                       label="linear chain baseline")
        ax.set_xticks([0, 1, 2], ["trained", "untrained", "embeddings"])
        ax.set_ylabel(f"test {m.split('_')[0].upper()} (PolarProbe convention)")
        ax.set_ylim(0, 1)
    if not drawn:
        return None
    fig.suptitle(f"Controls at {_size_label(big['n_params'].max())} parameters; {ci_note([big['seed'].nunique()])}",
                 fontsize=SMALL + 1)
    legend(axes[0])
    return to_base64(fig)


def fig_confusion(df: pd.DataFrame) -> str | None:
    """Relation-type confusion of the polar probe (largest model, best layer, gold test edges), summed over seeds."""
    rows = _rows(df)
    if rows.empty or "confusion" not in rows:
        return None
    big = rows[rows["n_params"] == rows["n_params"].max()]
    counts: dict[tuple[str, str], float] = {}
    for cell in big["confusion"]:
        for gold, preds in (_table(cell, "confusion") or {}).items():
            for pred, n in preds.items():
                counts[(gold, pred)] = counts.get((gold, pred), 0) + float(n or 0)
    if not counts:
        return None
    gold = sorted({g for g, _ in counts})
    cols = gold + sorted({p for _, p in counts} - set(gold))  # "?": no direction (a zero edge vector)
    M = np.array([[counts.get((g, p), 0.0) for p in cols] for g in gold])
    M = M / np.maximum(M.sum(1, keepdims=True), 1)
    fig, (ax,) = _figure(1, 6.5)
    ax.grid(False)
    im = ax.imshow(M, vmin=0, vmax=1, cmap="Blues")
    ax.set_xticks(range(len(cols)), cols, rotation=60, fontsize=SMALL)
    ax.set_yticks(range(len(gold)), gold, fontsize=SMALL)
    ax.set_xlabel("predicted relation (nearest centroid)")
    ax.set_ylabel("gold relation")
    fig.colorbar(im, ax=ax, label="share of the gold relation's edges")
    ax.set_title(f"Polar probe, {_size_label(big['n_params'].max())} parameters, {big['seed'].nunique()} seeds pooled",
                 fontsize=SMALL + 1)
    return to_base64(fig)


def fig_polar_picture(df: pd.DataFrame) -> str | None:
    """Test edges of the largest model's polar probe: angle in the edge vectors' main plane against squared length."""
    rows = _rows(df)
    if rows.empty or "polar_edges" not in rows:
        return None
    big = rows[rows["n_params"] == rows["n_params"].max()].sort_values("seed")
    pts = []
    for cell in big["polar_edges"]:
        t = _table(cell, "polar_edges") or {}
        pts += [v for v in t.values() if isinstance(v, list) and len(v) == 3 and v[1] is not None]
        if pts:
            break  # one seed: angles of different seeds live in different planes
    if not pts:
        return None
    fig, (ax,) = _figure()
    rels = sorted({p[0] for p in pts})
    for i, r in enumerate(rels):
        sel = [p for p in pts if p[0] == r]
        ax.scatter([np.degrees(float(p[1])) for p in sel], [float(p[2]) for p in sel], s=10, color=f"C{i % 10}",
                   label=r, alpha=0.8)
    ax.set_xlabel("angle of B(h_dependent − h_head) in its first two principal axes (degrees)")
    ax.set_ylabel("squared length (predicted tree distance)")
    ax.set_xlim(-180, 180)
    ax.set_title(f"Polar picture: {len(pts)} test edges, {_size_label(big['n_params'].max())} parameters, one seed",
                 fontsize=SMALL + 1)
    legend(ax, ncol=5)
    return to_base64(fig)


def fig_tokens(df: pd.DataFrame) -> str | None:
    """Test LAS (PolarProbe convention) against training tokens, for model sizes trained for several step counts."""
    ok = ok_rows(df) if len(df) else df
    need = ("n_params", "seed", "train_tokens", "steps", "polar_las_pp", "structural_las_pp")
    if ok.empty or any(c not in ok for c in need):
        return None
    ok = coerce_numeric(ok, need)
    if "model.source" in ok:
        ok = ok[ok["model.source"].fillna("trained").astype(str) == "trained"]
    sizes = [s for s, g in ok.groupby("n_params") if g["steps"].nunique() > 1]
    if not sizes:
        return None
    fig, (ax,) = _figure()
    for i, size in enumerate(sizes):
        rows = ok[ok["n_params"] == size]
        for col, kind, style in (("polar_las_pp", "polar", "-"), ("structural_las_pp", "structural", "--")):
            s = seed_summary(rows, "steps", col)
            x = rows.groupby("steps")["train_tokens"].mean().loc[s["steps"]].to_numpy()
            errorbar(ax, x, s, UNIT, color=f"C{i}", linestyle=style, label=f"{_size_label(size)} {kind}")
    ax.set_xscale("log")
    ax.set_xlabel("training tokens (input positions)")
    ax.set_ylabel("test LAS (per sentence, punctuation included)")
    ax.set_title(f"LAS against training tokens; {ci_note(ok.groupby(['n_params', 'steps'])['seed'].nunique())}",
                 fontsize=SMALL + 1)
    legend(ax)
    return to_base64(fig)


GEOMETRY_FIGURES = {
    "geo_best_layer": (fig_best_layer, "Test LAS (PolarProbe convention) at each probe's best dev layer against "
                       "model size: polar, structural and identity probes, and the polar probe on the untrained "
                       "model and on the input embeddings (controls)."),
    "geo_by_layer": (fig_by_layer, "LAS by layer for each model size, polar (solid) beside structural (dashed); "
                     "left PolarProbe's convention (per sentence, punctuation), right Hewitt & Manning's (corpus, "
                     "no punctuation)."),
    "geo_by_layer_uuas": (lambda df: fig_by_layer(df, "uuas"), "UUAS by layer for each model size, polar (solid) "
                          "beside structural (dashed), both conventions."),
    "geo_controls": (fig_controls, "Controls at the largest model: identity, structural and polar probes on the "
                     "trained model (best layer), on the untrained model of the same architecture (best layer) "
                     "and on the input embeddings (layer 0); dotted: UUAS of the linear chain (each word attached "
                     "to its neighbour, Hewitt & Manning's right-branching baseline)."),
    "geo_tokens": (fig_tokens, "The training-tokens axis: test LAS of the polar (solid) and structural (dashed) "
                   "probes at each probe's best dev layer, for model sizes trained for several step counts."),
    "geo_confusion": (fig_confusion, "Relation-type confusion of the polar probe on gold test edges (largest model, "
                      "best layer; rows sum to 1)."),
    "geo_polar_picture": (fig_polar_picture, "The polar picture: each test edge's angle in the main plane of the "
                          "edge vectors against its squared length, coloured by relation (largest model, one seed)."),
}


def figures(study: dict[str, Any] | None = None) -> dict[str, tuple[Any, str]]:
    """The study's figure set (:data:`GEOMETRY_FIGURES`)."""
    return dict(GEOMETRY_FIGURES)
