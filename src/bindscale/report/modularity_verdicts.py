"""Verdict rules of the ``modularity`` study (Lepori, Serre, Pavlick, NeurIPS 2023, "Break It Down").

Every trial is one base network; its mask runs (subroutine × mask seed) give
SubDiff and AblDiff (with the chance floor), averaged per trial (``sub_diff``,
``abl_diff``), and two shares: ``frac_structural`` (runs with SubDiff > 0 and
AblDiff < 0: the raw sign criterion, which counts chance-level noise as
structure) and ``frac_robust`` (both differences beyond two standard errors of
test-set noise). A *cell* is one (architecture, width, pretraining) condition;
its base seeds are the replicates. Only trials whose base network learned the
compound task on held-out scenes (``base_acc_test ≥ min_base_acc``; the test
scenes are disjoint from every training set) count, and a cell needs
``MIN_REPLICATES`` such base seeds. Other config columns that vary (depth,
masked parameters, λ …) are held at their most common value within each
architecture. Trials pretrained with one head per subroutine
(``pretraining: subroutines``) are a labelled extra: reported beside, never
deciding (that pretraining nearly builds the result in).

Intervals are 95% bootstrap intervals over base seeds, resampled within each
cell (stratified), of the statistic below.

- ``structure_emerges`` — decided as the source does, on the means across runs:
  mean SubDiff (mean over cells of the per-cell means) and mean AblDiff, each with
  its interval. Supported when SubDiff's interval lies above 0 and AblDiff's below
  0. The deciding number is the weaker of the two, ``min(SubDiff, −AblDiff)``
  (paired within trials); not supported when its interval lies below ``margin``
  (one of the two effects is confidently smaller than ``margin`` accuracy);
  inconclusive otherwise, and when the differences are missing, NaN or all zero.
  The noise-robust share and the raw sign share are reported beside, with the
  untrained-network and random-mask controls.
- ``structure_grows_with_width`` (a question of this lab, not a claim of the
  paper): per (architecture, pretraining), the noise-robust share at the largest
  width minus at the smallest; the mean over strata. Supported when the interval
  lies above ``margin``, not supported when below it.
- ``pretraining_reliability``: per (architecture, width), the noise-robust share
  after the generic ``match_count`` pretraining minus from scratch; the mean over
  strata; same rule. The subroutine-head pretraining's difference is reported
  beside (``extra_subroutine_heads``).
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
    "structure_emerges": {"margin": 0.02, "min_base_acc": 0.95},
    "structure_grows_with_width": {"margin": 0.1, "min_base_acc": 0.95},
    "pretraining_reliability": {"margin": 0.1, "min_base_acc": 0.95},
}
#: Each claim in words: what "supported" asserts (supported = the source's claim holds).
STATEMENTS = {
    "structure_emerges": "Lepori, Serre, Pavlick (2023) claim that a network trained on a compound task implements "
                         "each subroutine in its own subnetwork: across runs, the subnetwork found for a subroutine "
                         "solves it better than the other (mean SubDiff > 0) and ablating it hurts that subroutine "
                         "more than the other (mean AblDiff < 0).",
    "structure_grows_with_width": "Not a claim of Lepori, Serre, Pavlick (2023) but this lab's question: the share of "
                                  "runs with structural compositionality beyond test-set noise grows from the "
                                  "smallest to the largest width.",
    "pretraining_reliability": "Lepori, Serre, Pavlick (2023) claim that pretrained models show structural "
                               "compositionality more reliably than models trained from scratch (here: generic "
                               "match-count pretraining raises the share of runs structural beyond test-set noise).",
}
CELL = ("architecture", "width", "pretraining")
#: The pretraining condition reported beside the verdicts, never deciding them (one head per subroutine).
EXTRA = "subroutines"
#: The pretraining condition ``pretraining_reliability`` decides on (a related task with one head).
GENERIC = "match_count"
#: Held at their most common value within each architecture when they vary.
HELD = ("depth", "heads", "mask_params", "lambda_l0", "mask_steps", "n_train", "n_shapes", "n_colours", "steps")
NUMERIC = ("width", "depth", "seed", "base_acc_test", "frac_structural", "frac_structural_A", "frac_structural_B",
           "random_frac_structural", "untrained_frac_structural", "frac_robust", "frac_robust_A", "frac_robust_B",
           "random_frac_robust",
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


def seeds_per_cell(cs: Mapping[tuple, pd.DataFrame]) -> int:
    """The smallest number of base seeds in any deciding cell (0 when there is none)."""
    return min((int(g["seed"].nunique()) for g in cs.values()), default=0)


def _weaker(*gs: np.ndarray) -> float:
    """``min(mean SubDiff, −mean AblDiff)`` over cells; each group is a cell's ``(n, 2)`` (SubDiff, AblDiff) pairs."""
    return float(min(np.mean([g[:, 0].mean() for g in gs]), -np.mean([g[:, 1].mean() for g in gs])))


def _finite_pairs(rows: pd.DataFrame) -> pd.DataFrame:
    """The rows whose SubDiff and AblDiff are both finite (none when a column is missing)."""
    if not {"sub_diff", "abl_diff"} <= set(rows):
        return rows.iloc[0:0]
    return rows[np.isfinite(rows[["sub_diff", "abl_diff"]].to_numpy(dtype=float)).all(axis=1)]


def _pairs(cs: Mapping[tuple, pd.DataFrame]) -> list[np.ndarray]:
    """Per cell, its ``(n, 2)`` (SubDiff, AblDiff) pairs (cells come from :func:`_finite_pairs` rows)."""
    return [g[["sub_diff", "abl_diff"]].to_numpy(dtype=float) for g in cs.values()]


def structure_emerges(ok: pd.DataFrame, p: Mapping, n_boot: int, seed: int) -> tuple:
    stat = "min(mean SubDiff, −mean AblDiff) over base models (mean over cells); each mean's interval decides"
    rows, note = usable(ok, p["min_base_acc"])
    is_extra = (rows["pretraining"] == EXTRA) if "pretraining" in rows else pd.Series(False, index=rows.index)
    extra, rows = rows[is_extra.to_numpy()], rows[~is_extra.to_numpy()]
    cs = cells(_finite_pairs(rows))
    details: dict = dict(note)
    details["seeds_per_cell"] = seeds_per_cell(cs)
    if not cs:
        details["reason"] = (f"no (architecture, width, pretraining) cell has {MIN_REPLICATES} base seeds that "
                             f"learned the compound task (held-out accuracy ≥ {p['min_base_acc']}) and finite "
                             "SubDiff / AblDiff")
        return stat, "inconclusive", NAN3, len(rows), details
    used = pd.concat(cs.values())
    n = len(used)
    pairs = _pairs(cs)
    sub = _stratified([x[:, 0] for x in pairs], _mean_of_means, n_boot, seed)
    abl = _stratified([x[:, 1] for x in pairs], _mean_of_means, n_boot, seed)
    triple = _stratified(pairs, _weaker, n_boot, seed)
    details["mean_sub_diff"], details["mean_abl_diff"] = _ci(sub, n), _ci(abl, n)
    for f in ("A", "B"):
        for col in ("sub_diff", "abl_diff"):
            if f"{col}_{f}" in used and used[f"{col}_{f}"].notna().any():
                details[f"mean_{col}_{f}"] = _ci(pooled_share(cs, f"{col}_{f}", n_boot, seed), n)
    # Beside the means: the per-run shares (noise-robust first: the raw sign share counts noise as structure).
    if "frac_robust" in used and used["frac_robust"].notna().any():
        tol = float(used["noise_tolerance"].max()) if "noise_tolerance" in used else math.nan
        details["share_beyond_noise"] = _ci(pooled_share(cs, "frac_robust", n_boot, seed), n)
        details["share_beyond_noise_note"] = (f"SubDiff > {tol:.3f} and AblDiff < −{tol:.3f}: two standard errors "
                                              "of a test-set accuracy difference at chance")
    details["share_raw_signs"] = _ci(pooled_share(cs, "frac_structural", n_boot, seed), n)
    details["share_raw_signs_note"] = "SubDiff > 0 and AblDiff < 0 per run: chance-level noise passes half the time"
    for src, label in (("untrained", "control_untrained"), ("random", "control_random_mask")):
        for col in ("sub_diff", "abl_diff", "frac_robust", "frac_structural"):
            c = f"{src}_{col}"
            if c in used and used[c].notna().any():
                details[f"{label}_{col}"] = _ci(pooled_share(cs, c, n_boot, seed), int(used[c].notna().sum()))
    details["by_cell"] = {_cell_name(k): {"sub_diff": _ci(mean_ci(g["sub_diff"], n_boot, seed=seed), len(g)),
                                          "abl_diff": _ci(mean_ci(g["abl_diff"], n_boot, seed=seed), len(g))}
                          for k, g in cs.items()}
    if not extra.empty:
        ex = cells(_finite_pairs(extra))
        if ex:
            details["extra_subroutine_heads"] = {
                "mean_sub_diff": _ci(_stratified([x[:, 0] for x in _pairs(ex)], _mean_of_means, n_boot, seed),
                                     sum(map(len, ex.values()))),
                "mean_abl_diff": _ci(_stratified([x[:, 1] for x in _pairs(ex)], _mean_of_means, n_boot, seed),
                                     sum(map(len, ex.values()))),
                "note": "pretrained with one head per subroutine: reported beside, not deciding"}
    values = np.concatenate(pairs)
    if not np.any(values != 0):
        verdict, why = "inconclusive", "every SubDiff and AblDiff is exactly 0: no evidence either way"
        triple = NAN3
    elif sub[1] > 0 and abl[2] < 0:
        verdict, why = "supported", "mean SubDiff's interval lies above 0 and mean AblDiff's below 0"
    elif triple[2] < p["margin"]:
        verdict, why = "not_supported", (f"the weaker effect, min(SubDiff, −AblDiff), lies below margin "
                                         f"{p['margin']} with its whole interval")
    else:
        verdict, why = "inconclusive", "an interval straddles 0 and the weaker effect may exceed the margin"
    ctrl = details.get("control_untrained_abl_diff")
    if verdict == "supported" and ctrl and ctrl["ci_high"] < 0 and details.get("control_untrained_sub_diff", {}).get(
            "ci_low", math.nan) > 0:
        why += "; the untrained control passes too (a random network hides such subnetworks as well)"
    details["reason"] = f"{why} ({len(cs)} cells, {n} base models)"
    return stat, verdict, triple, n, details


def contrast(rows: pd.DataFrame, strata: tuple[str, ...], pick: Callable[[pd.DataFrame], tuple | None],
             n_boot: int, seed: int, col: str = "frac_robust") -> tuple[tuple, dict, int]:
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


def _pretrained(kind: str) -> Callable[[pd.DataFrame], tuple | None]:
    def pick(g: pd.DataFrame) -> tuple | None:
        if not {"none", kind} <= set(g["pretraining"]):
            return None
        return g[g["pretraining"] == kind], g[g["pretraining"] == "none"], f"{kind} − scratch"
    return pick


def _contrast_verdict(ok: pd.DataFrame, p: Mapping, n_boot: int, seed: int, strata: tuple[str, ...],
                      pick: Callable, what: str, keep: Callable[[pd.DataFrame], pd.DataFrame]) -> tuple:
    rows, details = usable(ok, p["min_base_acc"])
    if rows.empty:
        details |= {"reason": "no trial learned the compound task", "seeds_per_cell": 0}
        return "inconclusive", NAN3, 0, details
    if "pretraining" not in rows:
        details |= {"reason": "no pretraining column in the results", "seeds_per_cell": 0}
        return "inconclusive", NAN3, 0, details
    rows = keep(rows)
    col = "frac_robust"
    if col not in rows or not rows[col].notna().any():
        details |= {"reason": "no noise-robust share (frac_robust) in the results", "seeds_per_cell": 0}
        return "inconclusive", NAN3, 0, details
    triple, per, n = contrast(rows, strata, pick, n_boot, seed, col)
    details["by_stratum"] = per
    details["seeds_per_cell"] = _seeds_per_side(rows, strata, pick)
    details["raw_sign_share_difference"] = _ci(contrast(rows, strata, pick, n_boot, seed, "frac_structural")[0], n)
    for src, label in (("untrained", "control_untrained_difference"), ("random", "control_random_mask_difference")):
        c = f"{src}_{col}"
        if c in rows and rows[c].notna().any():
            details[label] = _ci(contrast(rows, strata, pick, n_boot, seed, col=c)[0], n)
    if not per:
        details["reason"] = f"no stratum has {what} with {MIN_REPLICATES} base seeds on each side"
        return "inconclusive", NAN3, n, details
    values = rows[col].to_numpy(dtype=float)
    if not np.isfinite(triple[0]):
        details["reason"] = "the difference is not finite (missing shares)"
        return "inconclusive", NAN3, n, details
    if not np.any(values[np.isfinite(values)] != 0):
        details["reason"] = "no run was structural beyond test-set noise in any condition: nothing to compare"
        return "inconclusive", NAN3, n, details
    verdict = _decide(triple, p["margin"])
    details["reason"] = f"margin {p['margin']}; {len(per)} strata ({', '.join(strata)})"
    return verdict, triple, n, details


def _seeds_per_side(rows: pd.DataFrame, strata: tuple[str, ...], pick: Callable) -> int:
    """The smallest number of base seeds on either side of any stratum that enters the contrast."""
    counts = []
    for _, g in rows.groupby(list(strata)):
        picked = pick(g)
        if picked is not None:
            k = min(picked[0]["seed"].nunique(), picked[1]["seed"].nunique())
            counts += [k] if k >= MIN_REPLICATES else []
    return min(counts, default=0)


def _no_extra(rows: pd.DataFrame) -> pd.DataFrame:
    return rows[rows["pretraining"] != EXTRA]


def structure_grows_with_width(ok: pd.DataFrame, p: Mapping, n_boot: int, seed: int) -> tuple:
    stat = "share structural beyond noise, largest − smallest width (mean over architecture × pretraining)"
    verdict, triple, n, details = _contrast_verdict(ok, p, n_boot, seed, ("architecture", "pretraining"), _widest,
                                                    "two widths", _no_extra)
    return stat, verdict, triple, n, details


def pretraining_reliability(ok: pd.DataFrame, p: Mapping, n_boot: int, seed: int) -> tuple:
    stat = (f"share structural beyond noise, generic ({GENERIC}) pretraining − from scratch "
            "(mean over architecture × width)")
    verdict, triple, n, details = _contrast_verdict(ok, p, n_boot, seed, ("architecture", "width"),
                                                    _pretrained(GENERIC), f"{GENERIC} and from-scratch trials",
                                                    lambda r: r[r["pretraining"] != EXTRA])
    rows, _ = usable(ok, p["min_base_acc"])
    if not rows.empty and {"frac_robust", "pretraining"} <= set(rows) and (rows["pretraining"] == EXTRA).any():
        ex, per, n_ex = contrast(rows[rows["pretraining"] != GENERIC], ("architecture", "width"), _pretrained(EXTRA),
                                 n_boot, seed)
        details["extra_subroutine_heads"] = {"difference": _ci(ex, n_ex), "by_stratum": per,
                                             "note": "one head per subroutine during pretraining: reported beside, "
                                                     "not deciding"}
    return stat, verdict, triple, n, details


RULES = {"structure_emerges": structure_emerges, "structure_grows_with_width": structure_grows_with_width,
         "pretraining_reliability": pretraining_reliability}
