"""Verdict rules of the ``subgraphs`` study (Dziri et al., NeurIPS 2023, "Faith and
Fate: Limits of Transformers on Compositionality").

Each claim is named after what Dziri et al. assert, so "supported" means they
are right (:data:`STATEMENTS` says each claim in words).

- ``scale_does_not_lift_ood``: out-of-distribution exact match does not rise
  with model size. Deciding number: the OOD accuracy gain from the smallest to
  the largest model (largest training set, scratchpad format where present),
  with its 95% interval over seeds. Supported when the whole interval lies
  below ``margin`` (scale adds less than ``margin``); not supported when it lies
  above ``margin`` (scale lifts OOD accuracy: the source is contradicted);
  inconclusive otherwise. It is also inconclusive, whatever the gain, when a
  deciding trial's accuracy is missing or NaN, when a deciding model size has
  fewer than ``MIN_REPLICATES`` seeds, when the largest model's
  in-distribution exact match is below ``min_id_acc`` (nothing was learned, so
  OOD failure says nothing), and when no model size of the deciding slice
  reaches a mean OOD accuracy above ``ood_floor``: at the floor everywhere, a
  zero gain cannot tell "scale does not help" from "these OOD sizes are out of
  reach of every model in the grid", and the rule would confirm the source by
  default.
- ``correct_steps_seen_in_training``: a scratchpad step comes out right mostly
  when its whole ancestor computation occurred in training. Deciding number:
  over scratchpad trials, the mean of (share of correct nodes whose whole
  ancestor computation occurs in training) − (the same share among wrong
  nodes) *at equal graph depth* (``seen_gap_depth``), with its 95% interval
  over trials: deep nodes are both rarely seen and often wrong, so the raw
  difference (reported beside it) confounds "seen" with "shallow". Supported
  when the interval lies above ``margin``; not supported when below it;
  inconclusive otherwise, and also when there are no scratchpad trials, fewer
  than ``MIN_REPLICATES`` trials with both correct and wrong nodes, or when
  seen-ness does not vary (every node seen in every trial, or none): then the
  gap is 0 by construction and says nothing.

Every verdict's details carry ``seeds_per_cell``: the smallest number of
seeds in a deciding cell.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
import pandas as pd

from ..stats import mean_ci, mean_diff_ci
from .verdicts import MIN_REPLICATES, NAN3, _ci

#: Each claim in words: what Dziri et al. 2023 assert; "supported" = this holds.
STATEMENTS = {
    "scale_does_not_lift_ood": (
        "Dziri et al. 2023 (Faith and Fate): a transformer trained on a multi-step task gains no "
        "out-of-distribution exact match from more parameters; its accuracy on larger problems stays low "
        "as model size grows."),
    "correct_steps_seen_in_training": (
        "Dziri et al. 2023 (Faith and Fate): transformers get a computation step right mostly when its whole "
        "computation subgraph occurred in training, so at equal depth correct steps are more often seen "
        "ones than wrong steps are."),
}
DEFAULTS = {
    "scale_does_not_lift_ood": {"margin": 0.05, "ood_floor": 0.05, "min_id_acc": 0.5},
    "correct_steps_seen_in_training": {"margin": 0.05},
}
NUMERIC = ("n_params", "n_train", "acc_id", "acc_ood", "seen_correct", "seen_wrong", "seen_gap_depth",
           "compound_eps", "seed")


def _prepare(ok: pd.DataFrame, numeric: tuple[str, ...] = NUMERIC) -> pd.DataFrame:
    """A copy with the ``numeric`` columns that are present coerced to numbers."""
    ok = ok.copy()
    for c in numeric:
        if c in ok:
            ok[c] = pd.to_numeric(ok[c], errors="coerce")
    return ok


def _decide(triple: tuple[float, float, float], margin: float) -> str:
    _, lo, hi = triple
    if math.isnan(lo):
        return "inconclusive"
    if lo > margin:
        return "supported"
    if hi < margin:
        return "not_supported"
    return "inconclusive"


def _scratchpad_rows(ok: pd.DataFrame) -> pd.DataFrame:
    """The scratchpad trials when there are any, else every row."""
    if "scratchpad" in ok and ok["scratchpad"].astype(bool).any():
        return ok[ok["scratchpad"].astype(bool)]
    return ok


def focus_rows(ok: pd.DataFrame) -> pd.DataFrame:
    """The rows the scale comparison uses: scratchpad format when present, the largest training set."""
    rows = _scratchpad_rows(ok)
    if "n_train" in rows and len(rows):
        rows = rows[rows["n_train"] == rows["n_train"].max()]
    return rows


def _decide_below(triple: tuple[float, float, float], margin: float) -> str:
    """Supported when the whole interval lies below ``margin``, not supported when above it."""
    _, lo, hi = triple
    if math.isnan(lo) or math.isnan(hi):
        return "inconclusive"
    if hi < margin:
        return "supported"
    if lo > margin:
        return "not_supported"
    return "inconclusive"


def _seeds_per_cell(rows: pd.DataFrame, by: tuple[str, ...]) -> int:
    """Smallest number of trials in a cell of ``rows`` grouped by the columns of ``by`` present (0 if empty)."""
    keys = [c for c in by if c in rows]
    if rows.empty:
        return 0
    return int(rows.groupby(keys).size().min()) if keys else len(rows)


def scale_does_not_lift_ood(ok: pd.DataFrame, p: Mapping, n_boot: int, seed: int) -> tuple:
    """Dziri et al. 2023: OOD exact match does not rise with model size (see the module docstring)."""
    stat = "OOD exact-match gain, smallest → largest model (largest training set, scratchpad)"
    ok = _prepare(ok)
    if not {"acc_ood", "acc_id", "n_params"} <= set(ok) or ok["n_params"].nunique() < 2:
        return stat, "inconclusive", NAN3, len(ok), {
            "reason": "needs acc_id and acc_ood at two or more model sizes", "seeds_per_cell": 0}
    rows = focus_rows(ok)
    if rows["n_params"].nunique() < 2:
        return stat, "inconclusive", NAN3, len(rows), {
            "reason": "the deciding slice (largest training set, scratchpad) has fewer than two model sizes",
            "seeds_per_cell": 0}
    small, large = rows["n_params"].min(), rows["n_params"].max()
    a, b = rows[rows["n_params"] == large], rows[rows["n_params"] == small]
    n = len(a) + len(b)
    ood_by_params = rows.groupby("n_params")["acc_ood"].mean()
    details: dict = {
        "ood_by_params": {str(int(k)): float(v) for k, v in ood_by_params.items()},
        "id_by_params": {str(int(k)): float(v) for k, v in rows.groupby("n_params")["acc_id"].mean().items()},
        "largest_model_acc_id": _ci(mean_ci(a["acc_id"], n_boot, seed=seed), len(a)),
        "largest_model_acc_ood": _ci(mean_ci(a["acc_ood"], n_boot, seed=seed), len(a)),
        "id_gain": _ci(mean_diff_ci(a["acc_id"], b["acc_id"], n_boot, seed=seed), n),
        "seeds_per_cell": int(min(len(a), len(b))),
        "ood_floor": float(p["ood_floor"]),
        "best_ood_cell": float(ood_by_params.max()) if ood_by_params.notna().any() else math.nan,
    }
    big = _scratchpad_rows(ok[ok["n_params"] == large])
    if "n_train" in big and big["n_train"].nunique() > 1:
        hi_n, lo_n = big["n_train"].max(), big["n_train"].min()
        details["data_gain_ood"] = _ci(mean_diff_ci(big[big["n_train"] == hi_n]["acc_ood"],
                                                    big[big["n_train"] == lo_n]["acc_ood"], n_boot, seed=seed),
                                       len(big))
    triple = mean_diff_ci(a["acc_ood"], b["acc_ood"], n_boot, seed=seed)
    deciding = pd.concat([a, b])
    bad = int((~np.isfinite(deciding["acc_ood"].to_numpy(dtype=float))).sum()
              + (~np.isfinite(a["acc_id"].to_numpy(dtype=float))).sum())
    if bad:
        details["reason"] = f"{bad} missing or NaN accuracies among the deciding trials"
        return stat, "inconclusive", triple, n, details
    if min(len(a), len(b)) < MIN_REPLICATES:
        details["reason"] = f"fewer than {MIN_REPLICATES} seeds at the smallest or largest model"
        return stat, "inconclusive", triple, n, details
    if float(a["acc_id"].mean()) < p["min_id_acc"]:  # nothing learned in distribution: OOD says nothing
        details["reason"] = (f"the largest model's in-distribution exact match {float(a['acc_id'].mean()):.3f} is "
                             f"below {p['min_id_acc']}: it did not learn the task, so its OOD accuracy cannot decide")
        return stat, "inconclusive", triple, n, details
    if not details["best_ood_cell"] > p["ood_floor"]:
        details["reason"] = (f"OOD exact match is at most {details['best_ood_cell']:.3f} at every model size, not "
                             f"above the floor {p['ood_floor']}: at the floor a zero gain cannot tell 'scale does "
                             f"not help' from 'no model here can reach these sizes'")
        return stat, "inconclusive", triple, n, details
    verdict = _decide_below(triple, p["margin"])
    details["reason"] = (f"OOD accuracy {float(b['acc_ood'].mean()):.3f} at {int(small):,} parameters → "
                         f"{float(a['acc_ood'].mean()):.3f} at {int(large):,}; supported when the gain's interval "
                         f"lies below the margin {p['margin']}, not supported when above it")
    return stat, verdict, triple, n, details


def correct_steps_seen_in_training(ok: pd.DataFrame, p: Mapping, n_boot: int, seed: int) -> tuple:
    """Dziri et al. 2023: correct steps are the ones whose computation was seen (see the module docstring)."""
    stat = "seen-subgraph share of correct − wrong nodes at equal depth (scratchpad trials)"
    ok = _prepare(ok)
    if "seen_gap_depth" not in ok:
        return stat, "inconclusive", NAN3, 0, {"reason": "no subgraph-coverage metrics", "seeds_per_cell": 0}
    if "scratchpad" in ok and not ok["scratchpad"].astype(bool).any():
        return stat, "inconclusive", NAN3, 0, {"reason": "no scratchpad trials: steps are not written",
                                               "seeds_per_cell": 0}
    rows = _scratchpad_rows(ok)
    finite = rows[np.isfinite(rows["seen_gap_depth"].to_numpy(dtype=float))]
    diff = finite["seen_gap_depth"].to_numpy(dtype=float)
    raw = (rows["seen_correct"] - rows["seen_wrong"]).to_numpy(dtype=float)
    details = {
        "raw_gap_all_depths": _ci(mean_ci(raw, n_boot, seed=seed), int(np.isfinite(raw).sum())),
        "seen_share_correct": _ci(mean_ci(rows["seen_correct"], n_boot, seed=seed), int(rows["seen_correct"].notna().sum())),
        "seen_share_wrong": _ci(mean_ci(rows["seen_wrong"], n_boot, seed=seed), int(rows["seen_wrong"].notna().sum())),
        "trials_without_a_gap": int(len(rows) - len(finite)),
        "seeds_per_cell": _seeds_per_cell(finite, ("task", "n_params", "n_train")),
    }
    if "compound_eps" in rows:
        details["compounding_eps_median"] = float(np.nanmedian(rows["compound_eps"])) if len(rows) else math.nan
    triple = mean_ci(diff, n_boot, seed=seed)
    if diff.size < MIN_REPLICATES:
        details["reason"] = f"fewer than {MIN_REPLICATES} trials with both correct and wrong nodes"
        return stat, "inconclusive", triple, int(diff.size), details
    shares = finite[["seen_correct", "seen_wrong"]].to_numpy(dtype=float).ravel()
    if np.isfinite(shares).all() and (np.all(shares == 0) or np.all(shares == 1)):
        details["reason"] = ("seen-ness does not vary: " + ("every node" if shares[0] == 1 else "no node")
                             + " occurs in training, so the gap is 0 by construction")
        return stat, "inconclusive", triple, int(diff.size), details
    details["reason"] = f"margin {p['margin']}; a node is 'seen' when its whole ancestor computation occurs in training"
    return stat, _decide(triple, p["margin"]), triple, int(diff.size), details


RULES = {"scale_does_not_lift_ood": scale_does_not_lift_ood,
         "correct_steps_seen_in_training": correct_steps_seen_in_training}
