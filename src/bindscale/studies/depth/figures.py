"""Figures of the ``depth`` study (SCAN; Petty et al. 2024, Lake & Baroni 2018).

Each figure function takes the results table and returns a base64 PNG, or None when its data are
missing. Every plotted mean is over seeds with its 95% Student t interval
(:func:`bindscale.verdicts.stats.mean_ci`, via :func:`bindscale.kit.seed_summary`); the title says n.

- ``depth_acc_vs_depth``: test exact match against depth, one line per (split, budget) family,
  rotary positions (the depth claim).
- ``depth_acc_vs_params``: test exact match against non-embedding parameters, one line per
  (split, depth), rotary positions (the scale claim: the size sweep is the depth with most budgets).
- ``depth_acc_by_length``: length-split test exact match by gold output length at the budget where
  rotary and learned absolute positions were compared, one line per (depth, positions).
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from bindscale.kit import ci_note, errorbar, legend, new_figure, seed_summary, titled, to_base64, metric_table

from .verdicts import prepare_rows

UNIT = (0.0, 1.0)
EXACT = "test exact match (fraction of examples)"


def _rope(df: pd.DataFrame) -> pd.DataFrame:
    ok = prepare_rows(df) if len(df) else df
    if ok.empty or "acc_test" not in ok or ok["acc_test"].isna().all():
        return ok.iloc[0:0]
    if "pos" in ok and (ok["pos"] == "rope").any():
        ok = ok[ok["pos"] == "rope"]
    return ok


def _curves(df: pd.DataFrame, series: list[str], x: str, label) -> tuple | None:
    """Exact match against ``x``, one curve per ``series`` group with two or more ``x`` values.

    Returns ``(fig, ax, rows, ns)`` with the curves drawn (``rows``: the rotary rows), or None when no
    group has two ``x`` values.
    """
    ok = _rope(df)
    if ok.empty:
        return None
    fig, ax = new_figure()
    ns: list = []
    for key, g in ok.groupby(series):
        if g[x].nunique() < 2:
            continue
        s = seed_summary(g, x, "acc_test")
        errorbar(ax, s[x], s, UNIT, label=label(*key))
        ns += list(s["n"])
    if not ns:
        return None
    ax.set_ylabel(EXACT)
    ax.set_ylim(-0.03, 1.03)
    return fig, ax, ok, ns


def fig_acc_vs_depth(df: pd.DataFrame) -> str | None:
    """Exact match vs depth per (split, budget) family (families: budgets with two or more depths)."""
    drawn = _curves(df, ["split", "budget"], "layers", lambda split, budget: f"{split}, {budget / 1000:g}k params")
    if drawn is None:
        return None
    fig, ax, ok, ns = drawn
    ax.set_xscale("log", base=2)
    ax.set_xticks(sorted(ok["layers"].unique()), [f"{int(v)}" for v in sorted(ok["layers"].unique())])
    ax.set_xlabel("layers (width shrinks to keep non-embedding parameters fixed)")
    titled(ax, "Accuracy vs depth at equal parameters", [ci_note(ns)])
    legend(ax)
    return to_base64(fig)


def fig_acc_vs_params(df: pd.DataFrame) -> str | None:
    """Exact match vs non-embedding parameters per (split, depth) with two or more budgets."""
    drawn = _curves(df, ["split", "layers"], "budget", lambda split, layers: f"{split}, {int(layers)} layers")
    if drawn is None:
        return None
    fig, ax, _, ns = drawn
    ax.set_xscale("log")
    ax.set_xlabel("non-embedding parameters (budget)")
    titled(ax, "Accuracy vs parameters per split", [ci_note(ns)])
    legend(ax)
    return to_base64(fig)


def length_curves(df: pd.DataFrame) -> dict[tuple[Any, Any], pd.DataFrame]:
    """Length split at the budget where position schemes were compared (the largest such budget; the
    largest budget when none was): (layers, pos) → per gold output length, the seeds' accuracies
    summarised (columns length, mean, lo, hi, n)."""
    ok = prepare_rows(df) if len(df) else df
    if ok.empty or "acc_by_length" not in ok or "split" not in ok:
        return {}
    ok = ok[ok["split"] == "length"]
    if ok.empty:
        return {}
    # The budget where positions were compared (most position schemes), the largest among equals.
    if "pos" in ok:
        kinds = ok.groupby("budget")["pos"].nunique()
        budget = max(b for b, k in kinds.items() if k == kinds.max())
    else:
        budget = ok["budget"].max()
    ok = ok[ok["budget"] == budget]
    out = {}
    for key, g in ok.groupby(["layers", "pos"] if "pos" in ok else ["layers"]):
        key = key if isinstance(key, tuple) else (key, "rope")
        long = []
        for cell in g["acc_by_length"]:
            table = metric_table(cell, ("length",), ("n", "acc")) or {}
            long += [(int(k), float(v[1])) for k, v in table.items() if v and v[1] is not None]
        if long:
            t = pd.DataFrame(long, columns=["length", "acc"])
            out[key] = seed_summary(t, "length", "acc")
    return out


def fig_acc_by_length(df: pd.DataFrame) -> str | None:
    """Length-split exact match by gold output length, rotary vs learned absolute positions."""
    curves = length_curves(df)
    if not curves:
        return None
    fig, ax = new_figure()
    ns: list = []
    for (layers, pos), s in sorted(curves.items()):
        errorbar(ax, s["length"], s, UNIT, label=f"{int(layers)} layers, {pos} positions",
                  linestyle="-" if pos == "rope" else "--")
        ns += list(s["n"])
    ax.set_xlabel("gold output length (actions; training saw at most 22)")
    ax.set_ylabel(EXACT)
    ax.set_ylim(-0.03, 1.03)
    titled(ax, "Length split: accuracy by output length", [ci_note(ns)])
    legend(ax)
    return to_base64(fig)


def figures(study: Any = None) -> dict[str, tuple[Any, str]]:
    """Figure name → (function, caption)."""
    return {
        "depth_acc_vs_depth": (fig_acc_vs_depth, "Test exact match against depth for each iso-parameter family "
                               "(split × non-embedding budget; rotary positions). Deeper is better at equal "
                               "parameters if the lines rise (Petty et al. 2024)."),
        "depth_acc_vs_params": (fig_acc_vs_params, "Test exact match against non-embedding parameters for each "
                                "split and depth with two or more budgets (the size sweep). Does scale solve "
                                "the split? (Lake & Baroni 2018: add-jump 1.2% for the split's best model; length 13.8% for the overall-best)"),
        "depth_acc_by_length": (fig_acc_by_length, "Length split: exact match by gold output length at the "
                                "budget where positions were compared, rotary (solid) against learned absolute (dashed) positions "
                                "(Csordás et al. 2021: relative positions help the length split)."),
    }
