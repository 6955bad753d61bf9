"""Figures of the ``subgraphs`` study (Dziri et al., NeurIPS 2023, "Faith and Fate").

Each ``fig_*`` takes the results table and returns a base64 PNG or None when
its data are missing. Per-trial tables (accuracy by depth, error types, …) are
list<struct> cells of the table (``SubgraphsTrial.NESTED_METRICS``), read back
as nested dicts; they are averaged over the seeds of the focus
condition: the largest model, scratchpad format where present, the largest
training set. Error bars: 95% bootstrap intervals of the mean over seeds.
The error-type figure ``sg_error_types`` labels nodes with Dziri et al.'s
definitions (:func:`bindscale.analysis.subgraphs.classify_nodes_dziri`);
``sg_error_types_recomputed`` shows bindscale's recomputed labels beside it.
Accuracy by depth uses bindscale's graph depth and, for multiplication, also
Faith and Fate's (:func:`bindscale.tasks.multiplication.source_depth`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from bindscale.records import metric_table
from bindscale.report.figures import N_BOOT, _new_figure, _to_b64
from bindscale.report.verdicts import ok_rows
from bindscale.stats import mean_ci

from .config import SubgraphsTrial
from .verdicts import _prepare, focus_rows, scratchpad_flags

LABEL_COLOURS = {"correct": "tab:green", "restoration": "tab:olive", "propagation": "tab:orange",
                 "local": "tab:red", "missing": "tab:gray"}


def _ok(df: pd.DataFrame) -> pd.DataFrame:
    return _prepare(ok_rows(df)) if len(df) else df


def _largest(df: pd.DataFrame) -> pd.DataFrame:
    rows = focus_rows(_ok(df))
    return rows[rows["n_params"] == rows["n_params"].max()] if len(rows) else rows


def _finish(fig, ax, xlabel: str, ylabel: str, legend: int | None = 8, unit: bool = True) -> str:
    """Label the axes (y in [0, 1] when ``unit``), add the legend, render."""
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if unit:
        ax.set_ylim(-0.03, 1.03)
    if legend:
        ax.legend(fontsize=legend)
    return _to_b64(fig)


def _tables(rows: pd.DataFrame, col: str) -> list[dict]:
    """Each trial's keyed table ``col`` as its nested dict (see :func:`bindscale.records.metric_table`)."""
    if col not in rows:
        return []
    spec = SubgraphsTrial.NESTED_METRICS[col]
    return [t for t in (metric_table(v, *spec) for v in rows[col]) if t is not None]


def _gather(tables: list[dict], levels: int, pick: Any = lambda leaf: leaf) -> dict:
    """Collect, across trials, the leaves ``levels`` keys deep in each trial's JSON table.

    ``[{"3": {"a": [n, x]}}, {"3": {"a": [n, y]}}]`` with ``levels=2`` and
    ``pick=lambda v: v[1]`` gives ``{"3": {"a": [x, y]}}``.
    """
    out: dict = {}
    for t in tables:
        stack = [((), t)]
        while stack:
            keys, node = stack.pop()
            if len(keys) == levels:
                parent = out
                for k in keys[:-1]:
                    parent = parent.setdefault(k, {})
                parent.setdefault(keys[-1], []).append(pick(node))
            else:
                stack += [((*keys, k), v) for k, v in reversed(node.items())]
    return out


def fig_acc_vs_params(df: pd.DataFrame) -> str | None:
    ok = _ok(df)
    if "acc_ood" not in ok or ok.empty:
        return None
    fig, ax = _new_figure()
    ok = ok.assign(scratchpad=scratchpad_flags(ok))  # read robustly: NaN / odd strings are unknown, left out
    cols = [c for c in ("task", "scratchpad", "n_train") if c in ok and ok[c].notna().any()]
    label = {"task": str, "scratchpad": lambda k: "scratchpad" if k else "answer only", "n_train": lambda k: f"{int(k)} ex."}
    for i, (key, g) in enumerate(ok.groupby(cols)):  # tasks are never pooled into one curve
        key = key if isinstance(key, tuple) else (key,)
        name = ", ".join(label[c](k) for c, k in zip(cols, key))
        for col, style in (("acc_id", "-"), ("acc_ood", "--")):
            xs, ms, lo, hi = [], [], [], []
            for n, gg in g.groupby("n_params"):
                m, a, b = mean_ci(gg[col], N_BOOT)
                xs.append(n), ms.append(m), lo.append(m - a), hi.append(b - m)
            ax.errorbar(xs, ms, yerr=[lo, hi], fmt="o" + style, color=f"C{i}", capsize=3,
                        label=f"{'in' if col == 'acc_id' else 'out of'} distribution, {name}")
    ax.set_xscale("log")
    return _finish(fig, ax, "parameters", "exact match (final answer)", legend=7)


def _mean_by_depth(tables: list[dict]) -> tuple[list[int], list[float]]:
    """Depths and the mean over trials of each depth's accuracy (``{depth: [n, accuracy]}`` tables)."""
    acc = {int(d): v for d, v in _gather(tables, 1, lambda na: na[1]).items()}
    depths = sorted(acc)
    return depths, [float(np.mean(acc[d])) for d in depths]


def fig_acc_by_depth(df: pd.DataFrame) -> str | None:
    """Exact match by depth in bindscale's graphs and, for multiplication, in Faith and Fate's convention."""
    rows = _largest(df)
    tables = _tables(rows, "acc_by_depth")
    if not tables:
        return None
    fig, ax = _new_figure()
    depths, means = _mean_by_depth(tables)
    ax.plot(depths, means, "o-", label="bindscale's graph depth (largest model)")
    source = [t for t in _tables(rows, "acc_by_depth_source") if t]
    if source:
        ax.plot(*_mean_by_depth(source), "s:", color="tab:purple",
                label="Faith and Fate's graph depth (same predictions)")
    eps = float(np.nanmedian(rows["compound_eps"])) if "compound_eps" in rows else np.nan
    if np.isfinite(eps):
        grid = np.linspace(min(depths), max(depths), 50)
        r2 = float(np.nanmedian(rows["compound_r2"])) if "compound_r2" in rows else np.nan
        ax.plot(grid, (1 - eps) ** grid, "k--", label=f"(1 − ε)^depth, ε = {eps:.3f} (fit R² {r2:.2f})")
    return _finish(fig, ax, "computation-graph depth", "exact match")


def fig_error_types(df: pd.DataFrame, column: str = "taxonomy_dziri_by_depth") -> str | None:
    """Stacked shares of node labels by depth; ``column`` picks the taxonomy (Dziri et al.'s by default)."""
    rows = _largest(df)
    tables = _tables(rows, column)
    if not tables:
        return None
    share = {int(d): labs for d, labs in _gather(tables, 2).items()}
    depths = sorted(share)
    n_trials = {d: sum(str(d) in t for t in tables) for d in depths}
    fig, ax = _new_figure()
    bottom = np.zeros(len(depths))
    for lab, colour in LABEL_COLOURS.items():
        # a label absent from a trial's table has share 0 there: average over every trial with that depth
        vals = np.array([sum(share[d].get(lab, [])) / n_trials[d] for d in depths])
        if vals.any():
            ax.bar(depths, vals, bottom=bottom, color=colour, label=lab)
            bottom += vals
    return _finish(fig, ax, "node depth", "share of scratchpad nodes", legend=7, unit=False)


def fig_coverage_by_depth(df: pd.DataFrame) -> str | None:
    rows = _largest(df)
    tables = _tables(rows, "coverage_by_depth")
    if not tables:
        return None
    seen = _gather(tables, 2, lambda ns: ns[1])  # depth → label → shares
    fig, ax = _new_figure()
    for lab, colour in (("correct", "tab:green"), ("wrong", "tab:red")):
        ds = sorted(int(d) for d, labs in seen.items() if lab in labs)
        if ds:
            ax.plot(ds, [np.mean(seen[str(d)][lab]) for d in ds], "o-", color=colour, label=f"{lab} nodes")
    return _finish(fig, ax, "node depth", "share with whole ancestry seen in training")


def fig_acc_by_size(df: pd.DataFrame) -> str | None:
    rows = _largest(df)
    tables = _tables(rows, "acc_by_size")
    if not tables:
        return None
    acc = _gather(tables, 1, lambda na: na[1])
    keys = list(acc)
    fig, ax = _new_figure()
    if all("x" in k for k in keys):  # multiplication: a heat map over operand digit counts
        da = sorted({int(k.split("x")[0]) for k in keys})
        db = sorted({int(k.split("x")[1]) for k in keys})
        grid = np.full((len(da), len(db)), np.nan)
        for k, v in acc.items():
            a, b = map(int, k.split("x"))
            grid[da.index(a), db.index(b)] = np.mean(v)
        im = ax.imshow(grid, vmin=0, vmax=1, cmap="viridis", origin="lower")
        ax.set_xticks(range(len(db)), db)
        ax.set_yticks(range(len(da)), da)
        ax.set_xlabel("digits of b")
        ax.set_ylabel("digits of a")
        for i in range(len(da)):
            for j in range(len(db)):
                if np.isfinite(grid[i, j]):
                    ax.text(j, i, f"{grid[i, j]:.2f}", ha="center", va="center", fontsize=7, color="w")
        ax.figure.colorbar(im, ax=ax, label="exact match")
        ax.grid(False)
    else:
        xs = sorted(int(k) for k in keys)
        ax.bar(xs, [np.mean(acc[str(x)]) for x in xs])
        ax.set_xlabel("sequence length")
        ax.set_ylabel("exact match")
        ax.set_ylim(0, 1.03)
    return _to_b64(fig)


def fig_information_gain(df: pd.DataFrame) -> str | None:
    """Per answer digit, the largest relative information gain from one input and from two."""
    ok = _ok(df)
    tables = _tables(ok, "rig_top")
    if not tables:
        return None
    best = _gather(tables, 2, lambda nr: nr[1])  # answer digit → order → gains
    outs = sorted(best, key=lambda k: (len(k), k))
    x = np.arange(len(outs))
    fig, ax = _new_figure()
    for j, order in enumerate(("1", "2")):
        ax.bar(x + (j - 0.5) * 0.4, [np.mean(best[o][order]) if best[o].get(order) else 0.0 for o in outs], 0.4,
               label=f"best {'single input' if order == '1' else 'pair of inputs'}")
    ax.set_xticks(x, outs, rotation=45, fontsize=7)
    return _finish(fig, ax, "answer digit", "relative information gain")


SUBGRAPH_FIGURES: dict[str, tuple[Any, str]] = {
    "sg_acc_vs_params": (fig_acc_vs_params, "Exact match in distribution (solid) and out of distribution (dashed) "
                                            "vs parameters, per task, format and training-set size; mean ± 95% CI over seeds."),
    "sg_acc_by_size": (fig_acc_by_size, "Exact match by problem size, largest model (scratchpad, largest training "
                                        "set), mean over seeds."),
    "sg_acc_by_depth": (fig_acc_by_depth, "Exact match by computation-graph depth with the compounding fit "
                                          "(1 − ε)^depth (bindscale's depth), largest model. For multiplication "
                                          "the same accuracies are also shown by depth in Faith and Fate's graph "
                                          "convention (n + 3 to 2n + 2 edges, set by carries; bindscale's is "
                                          "n + max(m, 2) + 1), to set beside the paper's figures."),
    "sg_error_types": (fig_error_types, "Scratchpad node error types by depth with Dziri et al.'s definitions "
                                        "(local: wrong although its parents are right; propagation: wrong with a "
                                        "wrong parent; restoration: right although a parent is wrong), largest "
                                        "model, mean over seeds."),
    "sg_error_types_recomputed": (lambda df: fig_error_types(df, "taxonomy_by_depth"),
                                  "Scratchpad node error types by depth with bindscale's recomputed labels (local: "
                                  "the op on the predicted parents does not give the node's value; propagation: it "
                                  "does, on wrong parents; restoration: right where the predicted parents would "
                                  "give a wrong value), largest model, mean over seeds."),
    "sg_coverage_by_depth": (fig_coverage_by_depth, "Share of correct vs wrong scratchpad nodes whose whole "
                                                    "ancestor computation occurs in training, by depth."),
    "sg_information_gain": (fig_information_gain, "Relative information gain (H(Y) − H(Y|X_S)) / H(Y) of each answer "
                                                  "digit from the best single input and pair of inputs, computed from "
                                                  "the training data (a property of the task, not of a model)."),
}


def figures(study: dict[str, Any] | None = None) -> dict[str, tuple[Any, str]]:
    """The study's figure set (:data:`SUBGRAPH_FIGURES`; nothing depends on the study file)."""
    return dict(SUBGRAPH_FIGURES)
