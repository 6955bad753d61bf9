"""Verdict rules of the ``subgraphs`` study (Dziri et al., NeurIPS 2023, "Faith and Fate").

- ``ood_scaling``: does out-of-distribution exact match rise with scale? The
  deciding number is the OOD accuracy gain from the smallest to the largest
  model (at the largest training set, scratchpad format where present), with a
  bootstrap CI over seeds. Supported when the CI lies above ``margin``; not
  supported when it lies below it; inconclusive otherwise.
- ``seen_subgraphs``: are correct answers concentrated on seen subgraphs? The
  deciding number is, over scratchpad trials, the mean of (share of correct
  nodes whose whole ancestor computation occurs in training) − (the same share
  among wrong nodes) *at equal graph depth* (``seen_gap_depth``), with a
  bootstrap CI over trials: deep nodes are both rarely seen and often wrong,
  so the raw difference (reported beside it) confounds "seen" with "shallow".
  Supported when the CI lies above ``margin``; not supported when below.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
import pandas as pd

from ..stats import mean_ci, mean_diff_ci
from .verdicts import MIN_REPLICATES, NAN3, _ci

DEFAULTS = {"ood_scaling": {"margin": 0.05}, "seen_subgraphs": {"margin": 0.05}}
#: In-distribution exact match the largest model must reach for OOD accuracy to mean anything.
MIN_ID_ACC = 0.5
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


def focus_rows(ok: pd.DataFrame) -> pd.DataFrame:
    """The rows the scale comparison uses: scratchpad format when present, the largest training set."""
    rows = ok
    if "scratchpad" in rows and rows["scratchpad"].astype(bool).any():
        rows = rows[rows["scratchpad"].astype(bool)]
    if "n_train" in rows and len(rows):
        rows = rows[rows["n_train"] == rows["n_train"].max()]
    return rows


def ood_scaling(ok: pd.DataFrame, p: Mapping, n_boot: int, seed: int) -> tuple:
    stat = "OOD exact-match gain, smallest → largest model (largest training set, scratchpad)"
    ok = _prepare(ok)
    if "acc_ood" not in ok or ok["n_params"].nunique() < 2:
        return stat, "inconclusive", NAN3, len(ok), {"reason": "needs trials at two or more model sizes"}
    rows = focus_rows(ok)
    small, large = rows["n_params"].min(), rows["n_params"].max()
    a, b = rows[rows["n_params"] == large], rows[rows["n_params"] == small]
    details: dict = {
        "ood_by_params": {str(int(k)): float(v) for k, v in rows.groupby("n_params")["acc_ood"].mean().items()},
        "id_by_params": {str(int(k)): float(v) for k, v in rows.groupby("n_params")["acc_id"].mean().items()},
        "largest_model_acc_id": _ci(mean_ci(a["acc_id"], n_boot, seed=seed), len(a)),
        "largest_model_acc_ood": _ci(mean_ci(a["acc_ood"], n_boot, seed=seed), len(a)),
        "id_gain": _ci(mean_diff_ci(a["acc_id"], b["acc_id"], n_boot, seed=seed), len(a) + len(b)),
    }
    big = ok[ok["n_params"] == large]
    if "scratchpad" in big and big["scratchpad"].astype(bool).any():
        big = big[big["scratchpad"].astype(bool)]
    if "n_train" in big and big["n_train"].nunique() > 1:
        hi_n, lo_n = big["n_train"].max(), big["n_train"].min()
        details["data_gain_ood"] = _ci(mean_diff_ci(big[big["n_train"] == hi_n]["acc_ood"],
                                                    big[big["n_train"] == lo_n]["acc_ood"], n_boot, seed=seed),
                                       len(big))
    if min(len(a), len(b)) < MIN_REPLICATES:
        details["reason"] = f"fewer than {MIN_REPLICATES} seeds at the smallest or largest model"
        return stat, "inconclusive", mean_diff_ci(a["acc_ood"], b["acc_ood"], n_boot, seed=seed), len(a) + len(b), details
    triple = mean_diff_ci(a["acc_ood"], b["acc_ood"], n_boot, seed=seed)
    if float(a["acc_id"].mean()) < MIN_ID_ACC:  # nothing learned in distribution: OOD says nothing
        details["reason"] = (f"the largest model's in-distribution exact match {float(a['acc_id'].mean()):.3f} is "
                             f"below {MIN_ID_ACC}: it did not learn the task, so its OOD accuracy cannot decide")
        return stat, "inconclusive", triple, len(a) + len(b), details
    verdict = _decide(triple, p["margin"])
    details["reason"] = (f"OOD accuracy {float(b['acc_ood'].mean()):.3f} at {int(small):,} parameters → "
                         f"{float(a['acc_ood'].mean()):.3f} at {int(large):,}; margin {p['margin']}")
    return stat, verdict, triple, len(a) + len(b), details


def seen_subgraphs(ok: pd.DataFrame, p: Mapping, n_boot: int, seed: int) -> tuple:
    stat = "seen-subgraph share of correct − wrong nodes at equal depth (scratchpad trials)"
    ok = _prepare(ok)
    if "seen_gap_depth" not in ok:
        return stat, "inconclusive", NAN3, 0, {"reason": "no subgraph-coverage metrics"}
    rows = ok
    if "scratchpad" in rows and rows["scratchpad"].astype(bool).any():
        rows = rows[rows["scratchpad"].astype(bool)]
    diff = pd.to_numeric(rows["seen_gap_depth"], errors="coerce").to_numpy(dtype=float)
    diff = diff[np.isfinite(diff)]
    raw = (rows["seen_correct"] - rows["seen_wrong"]).to_numpy(dtype=float)
    details = {
        "raw_gap_all_depths": _ci(mean_ci(raw, n_boot, seed=seed), int(np.isfinite(raw).sum())),
        "seen_share_correct": _ci(mean_ci(rows["seen_correct"], n_boot, seed=seed), int(rows["seen_correct"].notna().sum())),
        "seen_share_wrong": _ci(mean_ci(rows["seen_wrong"], n_boot, seed=seed), int(rows["seen_wrong"].notna().sum())),
    }
    if "compound_eps" in rows:
        details["compounding_eps_median"] = float(np.nanmedian(rows["compound_eps"])) if len(rows) else math.nan
    if diff.size < MIN_REPLICATES:
        details["reason"] = f"fewer than {MIN_REPLICATES} trials with both correct and wrong nodes"
        return stat, "inconclusive", mean_ci(diff, n_boot, seed=seed), int(diff.size), details
    triple = mean_ci(diff, n_boot, seed=seed)
    details["reason"] = f"margin {p['margin']}; a node is 'seen' when its whole ancestor computation occurs in training"
    return stat, _decide(triple, p["margin"]), triple, int(diff.size), details


RULES = {"ood_scaling": ood_scaling, "seen_subgraphs": seen_subgraphs}
