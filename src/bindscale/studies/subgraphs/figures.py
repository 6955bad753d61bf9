"""Figures of the ``subgraphs`` study (Dziri et al., NeurIPS 2023, "Faith and Fate").

Each ``fig_*`` takes the results table and returns a base64 PNG or None when
its data are missing. Per-trial tables (accuracy by depth, error types, …) are
list<struct> cells of the table (``SubgraphsTrial.NESTED_METRICS``), read back
as nested dicts; they are averaged over the seeds of the focus
condition: the largest model, scratchpad format where present, the largest
training set. Every plotted mean carries its 95% Student t interval over seeds
(:func:`bindscale.verdicts.stats.mean_ci`; the title gives n). Axes of problem size and depth shade the
in-distribution range (sizes ≤ ``task.id_max``; depths reached by such problems) and the
out-of-distribution range beyond it.
The error-type figure ``sg_error_types`` labels nodes with Dziri et al.'s
definitions (:func:`bindscale.studies.subgraphs.analysis.classify_nodes_dziri`);
``sg_error_types_recomputed`` shows bindscale's recomputed labels beside it.
Accuracy by depth uses bindscale's graph depth and, for multiplication, also
Faith and Fate's (:func:`bindscale.studies.subgraphs.tasks.multiplication.source_depth`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from matplotlib.lines import Line2D
from matplotlib.patches import Rectangle

from bindscale.kit import (
    ci_note,
    errorbar,
    id_ood_spans,
    legend as _legend,
    log_counts,
    new_figure,
    seed_summary,
    summary_of,
    titled,
    to_base64,
    error_lengths,
    metric_table,
    ID_COLOUR,
    OOD_COLOUR,
    SMALL,
    ok_rows,
)

from .config import SubgraphsTrial
from .verdicts import _prepare, focus_rows, scratchpad_flags

LABEL_COLOURS = {"correct": "tab:green", "restoration": "tab:olive", "propagation": "tab:orange",
                 "local": "tab:red", "missing": "tab:gray"}
#: Accuracies and shares lie in [0, 1]: intervals are drawn clipped to it.
UNIT = (0.0, 1.0)
#: y limits of an accuracy axis with room above 1 for the in/out-of-distribution labels.
HEADROOM = (-0.03, 1.22)
EXACT = "exact match (fraction of test problems)"


def _ok(df: pd.DataFrame) -> pd.DataFrame:
    return _prepare(ok_rows(df)) if len(df) else df


def _largest(df: pd.DataFrame) -> pd.DataFrame:
    rows = focus_rows(_ok(df))
    return rows[rows["n_params"] == rows["n_params"].max()] if len(rows) else rows


def _finish(fig, ax, xlabel: str, ylabel: str, legend: bool = True, ylim: tuple[float, float] | None = (-0.03, 1.03),
            ncol: int | None = None) -> str:
    """Label the axes, set ``ylim``, put the legend below the axes, render."""
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if ylim:
        ax.set_ylim(*ylim)
    if legend:
        _legend(ax, ncol=ncol)
    return to_base64(fig)


def _tables(rows: pd.DataFrame, col: str) -> list[dict]:
    """Each trial's keyed table ``col`` as its nested dict (see :func:`bindscale.store.records.metric_table`)."""
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


# ------------------------------------------------------- distribution ranges --

def _setting(rows: pd.DataFrame, col: str) -> int | None:
    """The value of a task setting shared by ``rows`` (e.g. ``task.id_max``), or None when absent or mixed."""
    if col not in rows:
        return None
    vals = pd.to_numeric(rows[col], errors="coerce").dropna().unique()
    return int(vals[0]) if len(vals) == 1 else None


def _family(rows: pd.DataFrame) -> str | None:
    for col in ("task.family", "task"):
        if col in rows and rows[col].nunique(dropna=True) == 1:
            return str(rows[col].dropna().iloc[0])
    return None


def _size_word(rows: pd.DataFrame) -> str:
    return {"maxsubseq": "length", "multiplication": "digits"}.get(_family(rows) or "", "size")


def _ranges(rows: pd.DataFrame) -> tuple[str, str]:
    """Words for the in- and out-of-distribution size ranges: ('length ≤ 5', 'length 6–7')."""
    word, id_max, ood_max = _size_word(rows), _setting(rows, "task.id_max"), _setting(rows, "task.ood_max")
    if id_max is None:
        return "", ""
    out = f"{word} {id_max + 1}–{ood_max}" if ood_max and ood_max > id_max + 1 else f"{word} > {id_max}"
    return f"{word} ≤ {id_max}", out


def deepest_in_distribution(rows: pd.DataFrame) -> int | None:
    """The largest bindscale graph depth of an in-distribution problem (sizes ≤ ``task.id_max``), or None.

    Read off the task's own graph at its largest in-distribution size (maxsubseq: depth ``n + 1``;
    multiplication: ``n + max(m, 2) + 1``), so it follows the task code.
    """
    id_max, family = _setting(rows, "task.id_max"), _family(rows)
    if id_max is None or id_max < 1:
        return None
    try:
        if family == "maxsubseq":
            from .tasks import maxsubseq
            return int(maxsubseq.make_example([1] * id_max, True).depth)
        if family == "multiplication":
            from .tasks import multiplication
            big = int("9" * id_max)
            return int(multiplication.make_example(big, big, True).depth)
    except Exception:  # noqa: BLE001 - a figure without spans beats no figure
        return None
    return None


def _depth_spans(ax: Any, rows: pd.DataFrame, nodes: bool = False) -> None:
    """Shade the depths that in-distribution problems reach (green) and the depths beyond them (red: only
    out-of-distribution problems go there). ``nodes``: the axis is a node's depth, not a problem's."""
    d = deepest_in_distribution(rows)
    if d is None:
        return
    if nodes:
        id_ood_spans(ax, d + 0.5, f"node depths that occur\nin training (≤ {d})", f"deeper than any\ntraining node (> {d})")
    else:
        id_ood_spans(ax, d + 0.5, f"depths of in-distribution\nproblems (≤ {d})",
                      f"deeper than any\ntraining problem (> {d})")


def _size_spans(ax: Any, rows: pd.DataFrame) -> None:
    id_max = _setting(rows, "task.id_max")
    if id_max is not None:
        inside, outside = _ranges(rows)
        id_ood_spans(ax, id_max + 0.5, f"in distribution\n({inside})", f"out of distribution\n({outside})")


# ------------------------------------------------------------------ figures --

def fig_acc_vs_params(df: pd.DataFrame) -> str | None:
    """Exact match in (solid) and out of distribution (dashed) vs parameters, one colour per task, format and
    training-set size; mean ± 95% t interval over seeds."""
    ok = _ok(df)
    if "acc_ood" not in ok or ok.empty:
        return None
    fig, ax = new_figure()
    ok = ok.assign(scratchpad=scratchpad_flags(ok))  # read robustly: NaN / odd strings are unknown, left out
    cols = [c for c in ("task", "scratchpad", "n_train") if c in ok and ok[c].notna().any()]
    label = {"task": str, "scratchpad": lambda k: "scratchpad" if k else "answer only",
             "n_train": lambda k: f"{int(k)} training examples"}
    groups = list(ok.groupby(cols)) if cols else [((), ok)]
    handles, labels, ns = [], [], []
    for i, (key, g) in enumerate(groups):  # tasks are never pooled into one curve
        key = key if isinstance(key, tuple) else (key,)
        name = ", ".join(label[c](k) for c, k in zip(cols, key)) or "all trials"
        shift = 1.06 ** (i - (len(groups) - 1) / 2)  # conditions side by side at a shared size
        for col, style, marker, face in (("acc_id", "-", "o", f"C{i}"), ("acc_ood", "--", "s", "white")):
            s = seed_summary(g, "n_params", col)
            ns += list(s["n"])
            errorbar(ax, s["n_params"] * shift, s, bounds=UNIT, ls=style, marker=marker, mfc=face, color=f"C{i}")
        handles.append(Line2D([], [], color=f"C{i}", lw=6))
        labels.append(name)
    inside, outside = _ranges(ok)
    handles += [Line2D([], [], color="k", ls="-", marker="o"), Line2D([], [], color="k", ls="--", marker="s", mfc="white")]
    labels += [f"in distribution{f' ({inside})' if inside else ''}",
               f"out of distribution{f' ({outside})' if outside else ''}"]
    log_counts(ax, ok["n_params"])
    titled(ax, "Exact match vs model size", [ci_note(ns)])
    ax.set(xlabel="parameters (count, log scale)", ylabel=EXACT, ylim=(-0.03, 1.03))
    _legend(ax, ncol=2, handles=handles, labels=labels)
    return to_base64(fig)


def _by_depth(tables: list[dict]) -> pd.DataFrame:
    """Per depth, the mean over trials of its accuracy (``{depth: [n, accuracy]}`` tables) with its t interval."""
    acc = {int(d): v for d, v in _gather(tables, 1, lambda na: na[1]).items()}
    return summary_of(acc, "depth")


def fig_acc_by_depth(df: pd.DataFrame) -> str | None:
    """Exact match by depth in bindscale's graphs and, for multiplication, in Faith and Fate's convention."""
    rows = _largest(df)
    tables = _tables(rows, "acc_by_depth")
    if not tables:
        return None
    fig, ax = new_figure()
    s = _by_depth(tables)
    errorbar(ax, s["depth"], s, bounds=UNIT, label="bindscale's graph depth (largest model)")
    ns = list(s["n"])
    source = [t for t in _tables(rows, "acc_by_depth_source") if t]
    if source:
        f = _by_depth(source)
        ns += list(f["n"])
        errorbar(ax, f["depth"], f, bounds=UNIT, fmt="s:", color="tab:purple",
                  label="Faith and Fate's graph depth (same predictions)")
    eps = float(np.nanmedian(rows["compound_eps"])) if "compound_eps" in rows else np.nan
    if np.isfinite(eps):
        grid = np.linspace(s["depth"].min(), s["depth"].max(), 50)
        r2 = float(np.nanmedian(rows["compound_r2"])) if "compound_r2" in rows else np.nan
        ax.plot(grid, (1 - eps) ** grid, "k--", label=f"(1 − ε)^depth, ε = {eps:.3f} (median fit, R² {r2:.2f})")
    ax.set_xlim(s["depth"].min() - 0.5, s["depth"].max() + 0.5)
    ax.set_ylim(*HEADROOM)
    _depth_spans(ax, rows)
    titled(ax, "Exact match by computation-graph depth", [ci_note(ns)])
    return _finish(fig, ax, "computation-graph depth (longest input-to-answer path, edges)", EXACT, ylim=None,
                   ncol=1)


def fig_error_types(df: pd.DataFrame, column: str = "taxonomy_dziri_by_depth") -> str | None:
    """Share of each node label by depth, one line per label; ``column`` picks the taxonomy (Dziri et al.'s by
    default). A label absent from a trial's table at a depth has share 0 there."""
    rows = _largest(df)
    tables = _tables(rows, column)
    if not tables:
        return None
    depths = sorted({int(d) for t in tables for d in t})
    fig, ax = new_figure()
    present = [lab for lab in LABEL_COLOURS if any(lab in labs for t in tables for labs in t.values())]
    ns = []
    for j, lab in enumerate(present):
        per = {d: [float((t[str(d)] or {}).get(lab, 0.0)) for t in tables if str(d) in t] for d in depths}
        s = summary_of(per, "depth")
        ns += list(s["n"])
        shift = 0.08 * (j - (len(present) - 1) / 2)  # labels side by side at a depth
        errorbar(ax, s["depth"] + shift, s, bounds=UNIT, color=LABEL_COLOURS[lab], label=lab, markersize=4)
    ax.set_xticks(depths)
    ax.set_xlim(min(depths) - 0.5, max(depths) + 0.5)
    ax.set_ylim(*HEADROOM)
    _depth_spans(ax, rows, nodes=True)
    titled(ax, "Scratchpad node labels by depth", [ci_note(ns)])
    return _finish(fig, ax, "node depth (edges from the inputs)", "share of the scratchpad nodes at that depth",
                   ylim=None, ncol=len(present))


def fig_coverage_by_depth(df: pd.DataFrame) -> str | None:
    """Share of correct and of wrong nodes whose whole ancestry occurs in training, by depth."""
    rows = _largest(df)
    tables = _tables(rows, "coverage_by_depth")
    if not tables:
        return None
    seen = _gather(tables, 2, lambda ns: ns[1])  # depth → label → shares
    fig, ax = new_figure()
    depths, ns = set(), []
    for lab, colour, shift in (("correct", "tab:green", -0.05), ("wrong", "tab:red", 0.05)):
        s = summary_of({int(d): labs[lab] for d, labs in seen.items() if lab in labs}, "depth")
        if len(s):
            depths |= set(s["depth"])
            ns += list(s["n"])
            errorbar(ax, s["depth"] + shift, s, bounds=UNIT, color=colour, label=f"{lab} nodes")
    if not depths:
        return None
    ax.set_xticks(sorted(depths))
    ax.set_xlim(min(depths) - 0.5, max(depths) + 0.5)
    ax.set_ylim(*HEADROOM)
    _depth_spans(ax, rows, nodes=True)
    titled(ax, "Nodes whose whole computation was seen in training", [ci_note(ns)])
    return _finish(fig, ax, "node depth (edges from the inputs)", "share with whole ancestry seen in training",
                   ylim=None)


def fig_acc_by_size(df: pd.DataFrame) -> str | None:
    """Exact match by problem size: bars with error bars (maxsubseq) or a heat map over the operands' digit
    counts (multiplication, each cell 'mean ± half-width of its interval'); the in-distribution range marked."""
    rows = _largest(df)
    tables = _tables(rows, "acc_by_size")
    if not tables:
        return None
    acc = _gather(tables, 1, lambda na: na[1])
    keys = list(acc)
    fig, ax = new_figure()
    if all("x" in k for k in keys):  # multiplication: a heat map over operand digit counts
        da = sorted({int(k.split("x")[0]) for k in keys})
        db = sorted({int(k.split("x")[1]) for k in keys})
        grid = np.full((len(da), len(db)), np.nan)
        half = np.full_like(grid, np.nan)
        ns = []
        for k, v in acc.items():
            a, b = map(int, k.split("x"))
            s = summary_of({0: v})
            if len(s):
                grid[da.index(a), db.index(b)] = s["mean"].iloc[0]
                half[da.index(a), db.index(b)] = (s["hi"] - s["mean"]).iloc[0]
                ns += list(s["n"])
        im = ax.imshow(grid, vmin=0, vmax=1, cmap="viridis", origin="lower")
        ax.set_xticks(range(len(db)), db)
        ax.set_yticks(range(len(da)), da)
        ax.set_xlabel("digits of the second operand b")
        ax.set_ylabel("digits of the first operand a")
        for i in range(len(da)):
            for j in range(len(db)):
                if np.isfinite(grid[i, j]):
                    pm = f"\n±{half[i, j]:.2f}" if np.isfinite(half[i, j]) else ""
                    ax.text(j, i, f"{grid[i, j]:.2f}{pm}", ha="center", va="center", fontsize=SMALL,
                            color="w" if grid[i, j] < 0.6 else "k")
        ax.figure.colorbar(im, ax=ax, label=EXACT)
        ax.grid(False)
        id_max, ood_max = _setting(rows, "task.id_max"), _setting(rows, "task.ood_max")
        if id_max is not None:
            ia, ib = sum(a <= id_max for a in da), sum(b <= id_max for b in db)
            if ia and ib:
                ax.add_patch(Rectangle((-0.5, -0.5), ib, ia, fill=False, ec=ID_COLOUR, lw=3,
                                       label=f"in distribution: inside the box (both operands ≤ {id_max} digits)"))
            if ia < len(da) or ib < len(db):
                top = f" (up to {ood_max} digits)" if ood_max else ""
                ax.plot([], [], ls="none", marker="s", ms=8, mfc="none", mec=OOD_COLOUR,
                        label=f"out of distribution: the cells outside the box{top}")
        titled(ax, "Exact match by operand size", ["cell: mean ± half-width of its interval", ci_note(ns)])
        _legend(ax, ncol=1)
    else:
        s = summary_of({int(k): v for k, v in acc.items()}, "size")
        ax.bar(s["size"], s["mean"], yerr=error_lengths(s, UNIT), capsize=3, color="tab:blue")
        ax.set_xticks(s["size"])
        ax.set_xlim(s["size"].min() - 0.6, s["size"].max() + 0.6)
        ax.set_ylim(*HEADROOM)
        _size_spans(ax, rows)
        ax.set_xlabel("sequence length (elements)" if _size_word(rows) == "length" else "problem size")
        ax.set_ylabel(EXACT)
        titled(ax, "Exact match by problem size, largest model", [ci_note(s["n"])])
    return to_base64(fig)


def fig_information_gain(df: pd.DataFrame) -> str | None:
    """Per answer digit, the largest relative information gain from one input and from two (mean over the
    trials' training sets, with its t interval)."""
    ok = _ok(df)
    if not _tables(ok, "rig_top"):
        return None
    # Trials of one seed share their training set (the "train" stream): one value per seed (and task).
    keys = [c for c in ("task", "seed") if c in ok and ok[c].notna().all()]
    best: dict = {}  # answer digit → order → one gain per seed
    for _, g in (ok.groupby(keys) if keys else [((), ok)]):
        per_seed = _gather(_tables(g, "rig_top"), 2, lambda nr: nr[1])
        for out, orders in per_seed.items():
            for order, gains in orders.items():
                best.setdefault(out, {}).setdefault(order, []).append(float(np.mean(gains)))
    if not best:
        return None
    outs = sorted(best, key=lambda k: (len(k), k))
    fig, ax = new_figure()
    ns = []
    for j, order in enumerate(("1", "2")):
        s = summary_of({i: best[o].get(order, []) for i, o in enumerate(outs)}, "out")
        if len(s):
            ns += list(s["n"])
            ax.bar(s["out"] + (j - 0.5) * 0.4, s["mean"], 0.4, yerr=error_lengths(s, UNIT), capsize=3,
                   label=f"best {'single input' if order == '1' else 'pair of inputs'}")
    ax.set_xticks(range(len(outs)), outs, rotation=45 if len(outs) > 6 else 0, fontsize=SMALL)
    titled(ax, "Information about each answer digit in the inputs", [ci_note(ns, "seeds (training sets)")])
    return _finish(fig, ax, "answer digit (output node of the computation graph)",
                   "relative information gain (fraction of H(Y))")


_CI = "mean ± 95% t interval over seeds (n in the title)"

SUBGRAPH_FIGURES: dict[str, tuple[Any, str]] = {
    "sg_acc_vs_params": (fig_acc_vs_params, "Exact match in distribution (solid line, filled circles) and out of "
                                            "distribution (dashed line, open squares) "
                                            "vs parameters, one colour per task, format and training-set size "
                                            f"(side by side at a shared size); {_CI}."),
    "sg_acc_by_size": (fig_acc_by_size, "Exact match by problem size, largest model (scratchpad, largest training "
                                        "set); the in-distribution sizes shaded green, the out-of-distribution "
                                        f"ones red; {_CI}."),
    "sg_acc_by_depth": (fig_acc_by_depth, "Exact match by computation-graph depth with the compounding fit "
                                          "(1 − ε)^depth (bindscale's depth), largest model; shaded: depths that "
                                          "in-distribution problems reach (green) and deeper ones (red). For "
                                          "multiplication the same accuracies are also shown by depth in Faith and "
                                          "Fate's graph convention (n + 3 to 2n + 2 edges, set by carries; "
                                          "bindscale's is n + max(m, 2) + 1), to set beside the paper's figures; "
                                          f"{_CI}."),
    "sg_error_types": (fig_error_types, "Scratchpad node error types by depth with Dziri et al.'s definitions "
                                        "(local: wrong although its parents are right; propagation: wrong with a "
                                        "wrong parent; restoration: right although a parent is wrong), largest "
                                        f"model; {_CI}."),
    "sg_error_types_recomputed": (lambda df: fig_error_types(df, "taxonomy_by_depth"),
                                  "Scratchpad node error types by depth with bindscale's recomputed labels (local: "
                                  "the op on the predicted parents does not give the node's value; propagation: it "
                                  "does, on wrong parents; restoration: right where the predicted parents would "
                                  f"give a wrong value), largest model; {_CI}."),
    "sg_coverage_by_depth": (fig_coverage_by_depth, "Share of correct vs wrong scratchpad nodes whose whole "
                                                    "ancestor computation occurs in training, by depth, largest "
                                                    f"model; {_CI}."),
    "sg_information_gain": (fig_information_gain, "Relative information gain (H(Y) − H(Y|X_S)) / H(Y) of each answer "
                                                  "digit from the best single input and pair of inputs, computed from "
                                                  "the training data (a property of the task, not of a model); mean "
                                                  "± 95% t interval over the seeds' training sets."),
}


def figures(study: dict[str, Any] | None = None) -> dict[str, tuple[Any, str]]:
    """The study's figure set (:data:`SUBGRAPH_FIGURES`; nothing depends on the study file)."""
    return dict(SUBGRAPH_FIGURES)
