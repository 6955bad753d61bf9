"""Verdict rules of the ``modularity`` study (Lepori, Serre, Pavlick, NeurIPS 2023, "Break It Down").

Every trial is one base network; its number is the share of its (subroutine ×
mask seed) runs that meet both criteria of structural compositionality
(SubDiff > 0 and AblDiff < 0), ``frac_structural``. A *cell* is one
(architecture, width, pretraining) condition; its base seeds are the
replicates. Only trials whose base network learned the compound task
(``base_acc_test ≥ min_base_acc``) count — the method asks how a network
solves the task, which a network that does not solve it cannot answer — and
a cell needs ``MIN_REPLICATES`` such base seeds to enter a verdict. Other
config columns that vary (depth, masked parameters, λ …) are held at their
most common value within each architecture.

Intervals are 95% percentile-bootstrap intervals over base seeds, resampled
within each cell (stratified), of the statistic below.

- ``structure_emerges``: the mean over cells of the share of runs meeting both
  criteria (DESIGN's signs; the share whose differences also exceed two standard
  errors of test-set noise is reported beside it, ``share_beyond_noise``). Supported when its interval lies above ``min_fraction`` *and* the
  paired gap to the controls (trained share − the larger of the untrained-network
  and random-mask shares of the same trial) lies above 0; not supported when the
  interval lies below ``min_fraction``; inconclusive otherwise (including when the
  controls reach the same share: then the test cannot tell structure from chance).
- ``structure_grows_with_width``: per (architecture, pretraining), the share at
  the largest width minus the share at the smallest; the mean over those strata.
  Supported when the interval lies above ``margin``, not supported when below it.
- ``pretraining_reliability``: per (architecture, width), the share with
  subroutine pretraining minus from scratch; the mean over strata. Same rule.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping

import numpy as np
import pandas as pd

from ..stats import bootstrap_ci, mean_ci
from .subgraph_verdicts import _decide, _prepare
from .verdicts import MIN_REPLICATES, NAN3, _ci, _key, restrict_to_mode

DEFAULTS = {
    "structure_emerges": {"min_fraction": 0.5, "min_base_acc": 0.95},
    "structure_grows_with_width": {"margin": 0.1, "min_base_acc": 0.95},
    "pretraining_reliability": {"margin": 0.1, "min_base_acc": 0.95},
}
CELL = ("architecture", "width", "pretraining")
#: Held at their most common value within each architecture when they vary.
HELD = ("depth", "heads", "mask_params", "lambda_l0", "mask_steps", "n_train", "n_shapes", "n_colours", "steps")
NUMERIC = ("width", "depth", "seed", "base_acc_test", "frac_structural", "frac_structural_A", "frac_structural_B",
           "random_frac_structural", "untrained_frac_structural", "frac_robust", "random_frac_robust",
           "untrained_frac_robust", "noise_tolerance", "sub_diff", "abl_diff", "sub_diff_A",
           "sub_diff_B", "abl_diff_A", "abl_diff_B", "random_sub_diff", "random_abl_diff", "untrained_sub_diff",
           "untrained_abl_diff", "density", "abl_yes", "untrained_abl_yes")


def fill_untrained(ok: pd.DataFrame) -> pd.DataFrame:
    """Untrained-control columns filled from trials of the same network and seed.

    The untrained network, its data and its mask seeds depend on the architecture, its
    size and the base seed only, not on pretraining, so a study may run the control in
    one pretraining condition (``mask.control_mask_seeds: 0`` in the other); a trial
    without it takes the value of its twin.
    """
    cols = [c for c in ok if c.startswith("untrained_")]
    keys = [c for c in ("architecture", "width", "depth", "heads", "n_shapes", "n_colours", "n_train", "seed")
            if c in ok]
    if not cols or not keys or ok.empty:
        return ok
    ok = ok.copy()
    ok[cols] = ok[cols].fillna(ok.groupby(keys, dropna=False)[cols].transform("mean"))
    return ok


def usable(ok: pd.DataFrame, min_base_acc: float) -> tuple[pd.DataFrame, dict]:
    """Trials that learned the compound task, other varying settings held per architecture; and a note."""
    ok = _prepare(ok, NUMERIC)
    if "frac_structural" not in ok or "architecture" not in ok or ok.empty:
        return ok.iloc[0:0], {}
    ok = fill_untrained(ok)
    learned = ok[ok["base_acc_test"] >= min_base_acc]
    note: dict = {"min_base_acc": min_base_acc, "n_below_min_base_acc": int(len(ok) - len(learned))}
    parts = []
    for arch, g in learned.groupby("architecture"):
        g, held = restrict_to_mode(g, tuple(c for c in HELD if c in g))
        if held:
            note[f"held_{arch}"] = held
        parts.append(g)
    return (pd.concat(parts) if parts else learned.iloc[0:0]), note


def cells(rows: pd.DataFrame, by: tuple[str, ...] = CELL) -> dict[tuple, pd.DataFrame]:
    """Rows per cell (keys: tuples of the ``by`` values), cells with too few base seeds dropped."""
    return {k: g for k, g in rows.groupby(list(by), sort=True) if g["seed"].nunique() >= MIN_REPLICATES}


def _cell_name(key: tuple) -> str:
    return "/".join(_key(v) for v in key)


def _stratified(groups: list[np.ndarray], stat: Callable[..., float], n_boot: int, seed: int) -> tuple:
    return bootstrap_ci(groups, stat, n_boot=n_boot, seed=seed) if groups else NAN3


def _mean_of_means(*gs: np.ndarray) -> float:
    return float(np.mean([np.mean(g) for g in gs]))


def _mean_of_diffs(*gs: np.ndarray) -> float:
    """Mean over strata of ``mean(gs[2k]) − mean(gs[2k + 1])``."""
    return float(np.mean([np.mean(a) - np.mean(b) for a, b in zip(gs[0::2], gs[1::2])]))


def pooled_share(cs: dict[tuple, pd.DataFrame], col: str, n_boot: int, seed: int) -> tuple:
    """Mean over cells of the mean of ``col``, with a bootstrap over base seeds within each cell."""
    groups = [g[col].to_numpy(dtype=float) for g in cs.values()]
    groups = [x[np.isfinite(x)] for x in groups]
    return _stratified([x for x in groups if x.size], _mean_of_means, n_boot, seed)


def _control_gap(g: pd.DataFrame) -> np.ndarray:
    """Per trial: trained share − the larger control share (untrained network, random mask)."""
    ctrl = g[["random_frac_structural"]].copy()
    if "untrained_frac_structural" in g:
        ctrl["u"] = g["untrained_frac_structural"]
    return (g["frac_structural"] - ctrl.max(axis=1, skipna=True)).to_numpy(dtype=float)


def structure_emerges(ok: pd.DataFrame, p: Mapping, n_boot: int, seed: int) -> tuple:
    stat = "share of (base model × mask seed) runs with SubDiff > 0 and AblDiff < 0, mean over cells"
    rows, note = usable(ok, p["min_base_acc"])
    cs = cells(rows)
    details: dict = dict(note)
    if not cs:
        details["reason"] = (f"no (architecture, width, pretraining) cell has {MIN_REPLICATES} base seeds that "
                             f"learned the compound task (test accuracy ≥ {p['min_base_acc']})")
        return stat, "inconclusive", NAN3, len(rows), details
    used = pd.concat(cs.values())
    triple = pooled_share(cs, "frac_structural", n_boot, seed)
    for f in ("A", "B"):
        details[f"share_subroutine_{f}"] = _ci(pooled_share(cs, f"frac_structural_{f}", n_boot, seed), len(used))
    details["control_random_mask_share"] = _ci(pooled_share(cs, "random_frac_structural", n_boot, seed), len(used))
    if "untrained_frac_structural" in used and used["untrained_frac_structural"].notna().any():
        details["control_untrained_share"] = _ci(pooled_share(cs, "untrained_frac_structural", n_boot, seed),
                                                 len(used))
    if "frac_robust" in used and used["frac_robust"].notna().any():
        tol = float(used["noise_tolerance"].max()) if "noise_tolerance" in used else math.nan
        details["share_beyond_noise"] = _ci(pooled_share(cs, "frac_robust", n_boot, seed), len(used))
        details["share_beyond_noise_note"] = (f"SubDiff > {tol:.3f} and AblDiff < −{tol:.3f}: two standard errors "
                                              "of a test-set accuracy difference at chance")
        for src in ("random", "untrained"):
            if f"{src}_frac_robust" in used and used[f"{src}_frac_robust"].notna().any():
                details[f"control_{src}_share_beyond_noise"] = _ci(
                    pooled_share(cs, f"{src}_frac_robust", n_boot, seed), len(used))
    gap = _stratified([_control_gap(g) for g in cs.values()], _mean_of_means, n_boot, seed)
    details["gap_to_controls"] = _ci(gap, len(used))
    for col in ("sub_diff", "abl_diff", "untrained_sub_diff", "untrained_abl_diff", "random_abl_diff", "abl_yes"):
        if col in used and used[col].notna().any():
            details[f"mean_{col}"] = _ci(mean_ci(used[col], n_boot, seed=seed), int(used[col].notna().sum()))
    details["share_by_cell"] = {_cell_name(k): _ci(mean_ci(g["frac_structural"], n_boot, seed=seed), len(g))
                                for k, g in cs.items()}
    lo_ok = triple[1] > p["min_fraction"] and gap[1] > 0
    if math.isnan(triple[1]):
        verdict = "inconclusive"
    elif lo_ok:
        verdict = "supported"
    elif triple[2] < p["min_fraction"]:
        verdict = "not_supported"
    else:
        verdict = "inconclusive"
    why = {"supported": "the share's interval lies above min_fraction and above the controls",
           "not_supported": "the share's interval lies below min_fraction",
           "inconclusive": ("the share clears min_fraction but not the controls" if triple[1] > p["min_fraction"]
                            else "the share's interval straddles min_fraction")}[verdict]
    details["reason"] = f"{why} (min_fraction {p['min_fraction']}; {len(cs)} cells, {len(used)} base models)"
    return stat, verdict, triple, len(used), details


def contrast(rows: pd.DataFrame, strata: tuple[str, ...], pick: Callable[[pd.DataFrame], tuple | None],
             n_boot: int, seed: int, col: str = "frac_structural") -> tuple[tuple, dict, int]:
    """Mean over strata of ``mean(col | high) − mean(col | low)`` with a stratified bootstrap.

    ``pick(stratum rows) -> (high rows, low rows, label)`` or None (stratum unusable); a
    side with fewer than ``MIN_REPLICATES`` base seeds drops the stratum.

    Returns:
        (triple, per-stratum details, number of trials used).
    """
    groups, per, n = [], {}, 0
    for key, g in rows.groupby(list(strata), sort=True):
        picked = pick(g)
        if picked is None:
            continue
        hi, lo, label = picked
        if min(hi["seed"].nunique(), lo["seed"].nunique()) < MIN_REPLICATES:
            continue
        a, b = hi[col].to_numpy(dtype=float), lo[col].to_numpy(dtype=float)
        groups += [a, b]
        n += len(a) + len(b)
        per[f"{_cell_name(key)} ({label})"] = _ci(bootstrap_ci([a, b], _mean_of_diffs, n_boot, seed=seed), len(a) + len(b))
    return _stratified(groups, _mean_of_diffs, n_boot, seed), per, n


def _widest(g: pd.DataFrame) -> tuple | None:
    if g["width"].nunique() < 2:
        return None
    w_lo, w_hi = g["width"].min(), g["width"].max()
    return g[g["width"] == w_hi], g[g["width"] == w_lo], f"width {_key(w_hi)} − {_key(w_lo)}"


def _pretrained(g: pd.DataFrame) -> tuple | None:
    kinds = set(g["pretraining"])
    if not {"none", "subroutines"} <= kinds:
        return None
    return g[g["pretraining"] == "subroutines"], g[g["pretraining"] == "none"], "pretrained − scratch"


def _contrast_verdict(ok: pd.DataFrame, p: Mapping, n_boot: int, seed: int, strata: tuple[str, ...],
                      pick: Callable, what: str) -> tuple:
    rows, details = usable(ok, p["min_base_acc"])
    if rows.empty:
        details["reason"] = "no trial learned the compound task"
        return "inconclusive", NAN3, 0, details
    triple, per, n = contrast(rows, strata, pick, n_boot, seed)
    details["by_stratum"] = per
    if "untrained_frac_structural" in rows and rows["untrained_frac_structural"].notna().any():
        ctrl, _, _ = contrast(rows, strata, pick, n_boot, seed, col="untrained_frac_structural")
        details["control_untrained_difference"] = _ci(ctrl, n)
    details["control_random_mask_difference"] = _ci(contrast(rows, strata, pick, n_boot, seed,
                                                              col="random_frac_structural")[0], n)
    if not per:
        details["reason"] = f"no stratum has {what} with {MIN_REPLICATES} base seeds on each side"
        return "inconclusive", NAN3, n, details
    verdict = _decide(triple, p["margin"])
    details["reason"] = f"margin {p['margin']}; {len(per)} strata ({', '.join(strata)})"
    if verdict == "not_supported" and not rows["frac_structural"].max() > 0:
        details["reason"] += "; no run met both criteria in any condition, so there was nothing to grow"
    return verdict, triple, n, details


def structure_grows_with_width(ok: pd.DataFrame, p: Mapping, n_boot: int, seed: int) -> tuple:
    stat = "share meeting both criteria, largest − smallest width (mean over architecture × pretraining)"
    verdict, triple, n, details = _contrast_verdict(ok, p, n_boot, seed, ("architecture", "pretraining"), _widest,
                                                    "two widths")
    return stat, verdict, triple, n, details


def pretraining_reliability(ok: pd.DataFrame, p: Mapping, n_boot: int, seed: int) -> tuple:
    stat = "share meeting both criteria, subroutine pretraining − from scratch (mean over architecture × width)"
    verdict, triple, n, details = _contrast_verdict(ok, p, n_boot, seed, ("architecture", "width"), _pretrained,
                                                    "both pretraining conditions")
    return stat, verdict, triple, n, details


RULES = {"structure_emerges": structure_emerges, "structure_grows_with_width": structure_grows_with_width,
         "pretraining_reliability": pretraining_reliability}
