"""Figures of the ``binding_scan`` study. Each takes the results table and returns a base64 PNG, or None
when its data are missing; every plotted mean is over seeds with its 95% t interval
(:func:`bindscale.kit.seed_summary`).

- ``binding_acc_vs_params``: test exact match against measured non-embedding parameters, one series per
  (split, model kind): the plain size sweep as a line, the binding models beside it (both claims).
- ``binding_id_vs_test``: in-distribution against test exact match per (split, kind, budget) cell, with the
  diagonal and the competence gate (0.95): a cell right of the gate learned its training distribution, and
  its distance below the diagonal is the compositional gap (``scale_partially_overcomes_binding``).
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from bindscale.kit import (
    ci_note,
    errorbar,
    legend,
    new_figure,
    seed_summary,
    titled,
    to_base64,
)

from .verdicts import PLAIN, prepare_rows

UNIT = (0.0, 1.0)
EXACT = "test exact match (fraction of examples)"
MARKERS = {"transformer": "o", "syntactic_attention": "s", "tp_transformer": "^"}
LINES = {"transformer": "-", "syntactic_attention": ":", "tp_transformer": "--"}
GATE = 0.95


def _rows(df: pd.DataFrame) -> pd.DataFrame:
    ok = prepare_rows(df) if len(df) else df
    if ok.empty or "acc_test" not in ok or ok["acc_test"].isna().all() or "model" not in ok:
        return ok.iloc[0:0]
    if "pos" in ok and (ok["pos"] == "rope").any():
        ok = ok[ok["pos"] == "rope"]
    return ok


def fig_acc_vs_params(df: pd.DataFrame) -> str | None:
    """Test exact match against non-embedding parameters, per split and model kind."""
    ok = _rows(df)
    if ok.empty:
        return None
    fig, ax = new_figure()
    ns: list = []
    for (split, kind), g in ok.groupby(["split", "model"]):
        s = seed_summary(g, "budget", "acc_test")
        x = g.groupby("budget")["n_params_nonembed"].mean().reindex(s["budget"]).to_numpy()
        errorbar(ax, x, s, UNIT, label=f"{split}, {kind}", marker=MARKERS.get(kind, "o"),
                 linestyle=LINES.get(kind, "-") if kind == PLAIN else "none")
        ns += list(s["n"])
    ax.set_xscale("log")
    ax.set_xlabel("non-embedding parameters (measured)")
    ax.set_ylabel(EXACT)
    ax.set_ylim(-0.03, 1.03)
    titled(ax, "Test accuracy vs parameters: plain sweep and binding models", [ci_note(ns)])
    legend(ax, ncol=2)
    return to_base64(fig)


def fig_id_vs_test(df: pd.DataFrame) -> str | None:
    """In-distribution against test exact match, one point per (split, kind, budget) cell."""
    ok = _rows(df)
    if ok.empty or "acc_id" not in ok:
        return None
    fig, ax = new_figure()
    ns: list = []
    for (split, kind), g in ok.groupby(["split", "model"]):
        ids = g.groupby("budget")["acc_id"].mean()
        s = seed_summary(g, "budget", "acc_test")
        errorbar(ax, ids.reindex(s["budget"]).to_numpy(), s, UNIT, label=f"{split}, {kind}",
                 marker=MARKERS.get(kind, "o"), linestyle="none")
        ns += list(s["n"])
    ax.plot([0, 1], [0, 1], color="grey", linewidth=0.8)
    ax.axvline(GATE, color="grey", linestyle=":", linewidth=0.8)
    ax.set_xlim(-0.03, 1.03)
    ax.set_ylim(-0.03, 1.03)
    ax.set_xlabel("in-distribution exact match (mean over seeds; dotted: the gate 0.95)")
    ax.set_ylabel(EXACT)
    titled(ax, "Compositional gap: test vs in-distribution accuracy", [ci_note(ns)])
    legend(ax, ncol=2)
    return to_base64(fig)


def figures(study: Any = None) -> dict[str, tuple[Any, str]]:
    """Figure name → (function, caption)."""
    return {
        "binding_acc_vs_params": (fig_acc_vs_params, ("Test exact match against measured non-embedding parameters, "
                                  "per split: the plain transformers' size sweep (line) and the binding models "
                                  "(syntactic attention: squares; TP-Transformer: triangles) at equal or fewer "
                                  "parameters. Binding is needed where the binding models sit above the largest "
                                  "plain model (Russin et al. 2019: about 91% on add-jump; Lake & Baroni 2018: 1.2%).")),
        "binding_id_vs_test": (fig_id_vs_test, ("In-distribution against test exact match per cell (split, model, "
                               "budget). Points right of the dotted line passed the competence gate; the distance "
                               "below the diagonal is what the model did not carry over to the compositional split.")),
    }
