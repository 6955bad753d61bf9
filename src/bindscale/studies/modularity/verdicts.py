"""Verdict rules of the ``modularity`` study (Lepori, Serre, Pavlick, NeurIPS 2023, "Break It Down").

Every trial is one base network; its mask runs (subroutine × mask seed) give
SubDiff and AblDiff (with the chance floor), averaged per trial (``sub_diff``,
``abl_diff``), and two shares: ``frac_structural`` (runs with SubDiff > 0 and
AblDiff < 0: the raw sign criterion, which counts chance-level noise as
structure) and ``frac_robust`` (both differences beyond two standard errors of
test-set noise). A *cell* is one (architecture, width, pretraining) condition;
its base seeds are the replicates; repeated records of one base model (re-runs,
duplicates) are averaged first, and seeds are counted distinct. Other config
columns that vary (depth, masked parameters, λ …) are held at their most common
value within each architecture. Only trials whose base network learned the
compound task on held-out scenes (``base_acc_test ≥ min_base_acc``; the test
scenes are disjoint from every training set) count; the survivors are reported
per cell (``seeds_learned_per_cell`` / ``_per_side``), a deciding cell the filter
leaves with fewer than ``MIN_REPLICATES`` base seeds makes the verdict
inconclusive (the survivors are a selection), and unequal survivors on the two
sides of a contrast give ``caveat_selection``. Every deciding cell is named with
its learned seeds (:func:`bindscale.kit.deciding_cell`), so the engine counts the
seeds the filter dropped against ``min_seeds`` like failed ones, and checks the
claims' competence gate (each cell's mean ``base_acc_test`` ≥ ``min_base_acc``).
Trials pretrained with one head
per subroutine (``pretraining: subroutines``) are a labelled extra: reported
beside, never deciding (that pretraining nearly builds the result in).

Every rule is inconclusive, with the reason, when a needed column is missing or
empty, when a deciding trial has a missing, NaN or infinite value
(``n_nonfinite``: dropping it would let the rest decide), and when the deciding
cells are degenerate (:func:`bindscale.verdicts.engine.degenerate`: the same
value in every seed of a cell, or one value everywhere).

Intervals: Student / Welch–Satterthwaite t intervals over base seeds
(:func:`bindscale.verdicts.stats.strata_mean_ci`: mean of cell means; a contrast is the
same with weights ±1/H over H strata). Simulated at 8 seeds per cell they cover
95.2–95.5% (normal, Binomial(6, p)/6 shares); the percentile bootstrap used
before covered 81–92%.

- ``structure_emerges`` — the source's test is mean SubDiff > 0 and mean AblDiff
  < 0 across runs (``source_test`` in details, with ``mean_sub_diff`` and
  ``mean_abl_diff``). The deciding number is the weakest of SubDiff, −AblDiff,
  and both of them net of the untrained-network control and of the random-mask
  control (paired within base models): the trained effect must exceed ``margin``
  and beat both controls by it (the source's anchor: random-init models do not
  pass the ablation test). Its interval runs from the smallest 95% low to the
  smallest high at level 1 − 0.05/k over the k effects (Bonferroni), so it covers
  the weakest mean with ≥ 95% (simulated 97.5–99%). Supported when the interval
  lies above ``margin``; not supported when below it; inconclusive otherwise, and
  when a control is missing in a deciding cell (never supported then). The
  noise-robust and raw sign shares are reported beside.
- ``structure_grows_with_width`` (a question of this lab, not a claim of the
  paper): per (architecture, pretraining), the noise-robust share at the largest
  width minus at the smallest; the mean over strata. The same difference is taken
  of the share net of the untrained-network control and of the random-mask
  control (paired within base models): the weakest of the three
  decides, with ``structure_emerges``'s interval. Supported when the interval
  lies above ``margin``, not supported when below it; never supported when a
  deciding base model lacks a control. The largest width is the
  largest that ran (ok trials): if none of its base networks learned the task the
  verdict is inconclusive; a largest width whose trials all failed is visible only
  to :func:`lost_planned_width` (the whole table).
- ``pretraining_reliability``: per (architecture, width), the noise-robust share
  after the generic ``match_count`` pretraining minus from scratch; the mean over
  strata; same rule, controls included. The subroutine-head pretraining's difference is reported
  beside (``extra_subroutine_heads``).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Mapping
from functools import partial

import numpy as np
import pandas as pd

from bindscale.kit import (
    outside_range,
    MIN_REPLICATES,
    NAN3,
    at_bound,
    ci_entry,
    no_room,
    deciding_cell,
    json_key,
    to_python,
    coerce_numeric,
    degenerate,
    restrict_to_mode,
    Verdict,
    mean_ci,
    mean_diff_ci,
    strata_mean_ci,
)

from . import CLAIMS  # noqa: E402  (the plugin object: claims, their statements and defaults)

#: Each claim in words (supported = the source's claim holds), and its default thresholds.
STATEMENTS = {c.name: c.statement for c in CLAIMS}
DEFAULTS = {c.name: dict(c.defaults) for c in CLAIMS}
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


#: Columns every rule needs: the cell, the base seed and the accuracy filter.
REQUIRED = ("architecture", "width", "pretraining", "seed", "base_acc_test")
#: The values the gate's accuracy and Lepori et al.'s SubDiff / AblDiff (differences of two accuracies) can take:
#: a table outside them (percent units) decides nothing. The shares (``frac_*``) are read as the rules read them.
RANGES = {"base_acc_test": (0.0, 1.0), **{c: (-1.0, 1.0) for c in NUMERIC if "sub_diff" in c or "abl_diff" in c}}


def _missing(ok: pd.DataFrame, cols: tuple[str, ...]) -> str | None:
    """Why ``ok`` cannot be used (a column of ``cols`` absent or without any value), or None."""
    gone = [c for c in cols if c not in ok or not ok[c].notna().any()]
    if gone:
        return f"the results lack {', '.join(gone)} (column missing or empty): the rule cannot form its cells"
    return None


def _usable(ok: pd.DataFrame, min_base_acc: float) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    """(every trial of the held configuration, those that learned the compound task, a note).

    The held settings (most common value per architecture) are fixed on all trials first, so the
    accuracy filter's survivors can be counted per cell against the trials that ran.
    """
    ok = coerce_numeric(ok, NUMERIC).reset_index(drop=True)  # survivors are matched to their trials by index
    why = _missing(ok, REQUIRED) or outside_range(ok, RANGES)
    if why or ok.empty:
        return ok.iloc[0:0], ok.iloc[0:0], ({"reason": why} if why else {})
    keyless = int(ok[["architecture", "width", "pretraining", "seed"]].isna().any(axis=1).sum())
    if keyless:
        return ok.iloc[0:0], ok.iloc[0:0], {"n_without_cell_or_seed": keyless, "reason": (
            f"{keyless} trials lack their architecture, width, pretraining or seed: they cannot be placed in a "
            "cell, and dropping them would let the rest decide")}
    ok = fill_untrained(ok)
    note: dict = {"min_base_acc": min_base_acc}
    parts = []
    for arch, g in ok.groupby("architecture"):
        g, held = restrict_to_mode(g, tuple(c for c in HELD if c in g))
        if held:
            note[f"held_{arch}"] = held
        parts.append(g)
    every = pd.concat(parts) if parts else ok.iloc[0:0]
    learned = every[every["base_acc_test"] >= min_base_acc]  # NaN accuracy: not shown to have learned
    note["n_below_min_base_acc"] = int(len(every) - len(learned))
    note["n_base_acc_missing"] = int(every["base_acc_test"].isna().sum())
    return every, learned, note


def _cell_of(key: Mapping[str, object], note: Mapping) -> dict:
    """A deciding cell's config (``key``: its columns → values) with the settings held for its architecture."""
    held = note.get(f"held_{key.get('architecture')}", {})
    return {**key, **{k.removesuffix("_used"): v for k, v in held.items() if k.endswith("_used")}}


#: How the engine names the seeds the accuracy filter left out of a deciding cell (they count against ``min_seeds``).
_BELOW = "ok but below the accuracy filter (min_base_acc)"


def _named_cells(every: pd.DataFrame, learned: pd.DataFrame, note: Mapping) -> list[dict]:
    """Every deciding (architecture, width, pretraining) cell that ran, with the base seeds that learned the task.

    A base seed that ran but stayed below ``min_base_acc`` is dropped from the statistic, so it counts against
    ``min_seeds`` like a failed one (the engine compares these counts with the cell's planned seeds).
    """
    out = []
    for key, g in every.groupby(list(CELL), sort=True):
        kept = learned.loc[learned.index.intersection(g.index)]
        out.append(deciding_cell(_cell_of(dict(zip(CELL, key)), note), _seeds(kept) if len(kept) else 0,
                                 dropped=_BELOW, seeds=kept["seed"].unique() if len(kept) else []))
    return out


def usable(ok: pd.DataFrame, min_base_acc: float) -> tuple[pd.DataFrame, dict]:
    """Trials that learned the compound task, other varying settings held per architecture; and a note."""
    _, learned, note = _usable(ok, min_base_acc)
    return learned, note


def _cell_name(key: tuple) -> str:
    return "/".join(json_key(v) for v in (key if isinstance(key, tuple) else (key,)))


def _seeds(rows: pd.DataFrame) -> int:
    return int(rows["seed"].nunique())


def _survivors(every: pd.DataFrame, learned: pd.DataFrame, by: tuple[str, ...] = CELL) -> dict[str, dict]:
    """Per cell: base seeds that ran and base seeds that passed the accuracy filter."""
    out = {}
    for key, g in every.groupby(list(by), sort=True):
        kept = learned.loc[learned.index.intersection(g.index)]
        out[_cell_name(key)] = {"seeds_run": _seeds(g), "seeds_learned": _seeds(kept) if len(kept) else 0}
    return out


def _nonfinite(rows: pd.DataFrame, cols: tuple[str, ...]) -> int:
    """Rows with a missing, NaN or infinite value in any of ``cols``."""
    if rows.empty:
        return 0
    vals = np.column_stack([pd.to_numeric(rows[c], errors="coerce").to_numpy(dtype=float) if c in rows
                            else np.full(len(rows), np.nan) for c in cols])
    return int((~np.isfinite(vals)).any(axis=1).sum())


def base_models(rows: pd.DataFrame, cols: tuple[str, ...]) -> pd.DataFrame:
    """One row per base model (cell × seed): ``cols`` averaged over repeated records (re-runs, duplicates)."""
    cols = tuple(c for c in cols if c in rows)
    if rows.empty:
        return pd.DataFrame(columns=[*CELL, "seed", *cols])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return rows.groupby([*CELL, "seed"], sort=True)[list(cols)].mean().reset_index()


def seeds_per_cell(cs: Mapping[tuple, pd.DataFrame]) -> int:
    """The smallest number of base seeds in any deciding cell (0 when there is none)."""
    return min((_seeds(g) for g in cs.values()), default=0)


def _vals(g: pd.DataFrame, col: str) -> np.ndarray:
    return g[col].to_numpy(dtype=float)


def _weakest(parts_at: Callable[[float], Mapping[str, tuple]]) -> tuple[tuple, str]:
    """The smallest of k effects with a 95% interval: ``(min points, min lows, min highs)`` and its name.

    ``parts_at(confidence)`` gives each effect's t interval at that level. The low end is the smallest of
    the 95% lows (it exceeds the smallest mean only if that effect's own low does: ≤ 2.5%); the high end
    the smallest of the highs at level 1 − 0.05/k (Bonferroni: below the smallest mean with ≤ 2.5%), so
    the interval covers the smallest mean with at least 95% whatever the effects' correlation.
    """
    parts = parts_at(0.95)
    name = min(parts, key=lambda k: parts[k][0])
    highs = parts_at(1.0 - 0.05 / len(parts)) if len(parts) > 1 else parts
    return (float(min(v[0] for v in parts.values())), float(min(v[1] for v in parts.values())),
            float(min(v[2] for v in highs.values()))), name


def _num(t: tuple) -> str:
    """A statistic with its interval in words: "0.215 [0.180, 0.250]"."""
    return f"{t[0]:.3f} [{t[1]:.3f}, {t[2]:.3f}]"


def _neg(t: tuple) -> tuple:
    return -t[0], -t[2], -t[1]


def _two_effects(cs: Mapping[tuple, pd.DataFrame], sub: str, abl: str, confidence: float = 0.95) -> dict[str, tuple]:
    """Mean over cells of SubDiff and of −AblDiff (Welch–Satterthwaite t intervals)."""
    return {"SubDiff": strata_mean_ci([_vals(g, sub) for g in cs.values()], confidence=confidence),
            "−AblDiff": _neg(strata_mean_ci([_vals(g, abl) for g in cs.values()], confidence=confidence))}


def _net_of_control(cs: Mapping[tuple, pd.DataFrame], src: str) -> tuple[dict[tuple, pd.DataFrame] | None, int]:
    """Per cell, SubDiff and AblDiff minus the control's (columns ``sub``, ``abl``), paired within base models.

    Returns (the cells, or None when a deciding cell has fewer than ``MIN_REPLICATES`` base models with
    the control; the number of deciding base models without it).
    """
    c_sub, c_abl = f"{src}_sub_diff", f"{src}_abl_diff"
    if not {c_sub, c_abl} <= set(next(iter(cs.values()))):
        return None, sum(map(len, cs.values()))
    net, lacking = {}, 0
    for k, g in cs.items():
        d = pd.DataFrame({"seed": g["seed"], "sub": g["sub_diff"] - g[c_sub], "abl": g["abl_diff"] - g[c_abl]})
        has = np.isfinite(d[["sub", "abl"]].to_numpy(dtype=float)).all(axis=1)
        lacking += int((~has).sum())
        net[k] = d[has]
    if any(len(g) == 0 or _seeds(g) < MIN_REPLICATES for g in net.values()):
        return None, lacking
    return net, lacking


def _beside(cs: Mapping[tuple, pd.DataFrame], col: str) -> dict | None:
    """Mean over cells of ``col`` (finite values only; reported beside, never deciding), or None."""
    if not cs or col not in next(iter(cs.values())):
        return None
    groups = [_vals(g, col) for g in cs.values()]
    n = int(sum(np.isfinite(x).sum() for x in groups))
    return ci_entry(strata_mean_ci(groups), n) if n else None


CONTROLS = (("untrained", "untrained network"), ("random", "random mask"))


def structure_emerges(ok: pd.DataFrame, p: Mapping, n_boot: int, seed: int) -> Verdict:
    margin = p["margin"]
    stat = "weakest_structure_effect_net_of_controls"
    every, rows, details = _usable(ok, p["min_base_acc"])

    def stop(reason: str, n: int = 0, triple: tuple = NAN3) -> Verdict:
        details.setdefault("seeds_per_cell", 0)
        details["reason"] = reason
        return Verdict(stat, "inconclusive", triple, n, details)

    if "reason" in details:
        return stop(details["reason"])
    if _missing(every, ("sub_diff", "abl_diff")):
        return stop("the results lack sub_diff or abl_diff: nothing to decide on")
    deciding_every = every[every["pretraining"] != EXTRA]
    survivors = _survivors(deciding_every, rows)
    details["seeds_learned_per_cell"] = survivors
    thinned = [k for k, v in survivors.items() if 0 < v["seeds_learned"] < MIN_REPLICATES <= v["seeds_run"]]
    extra, rows = rows[rows["pretraining"] == EXTRA], rows[rows["pretraining"] != EXTRA]
    cs = {k: g for k, g in rows.groupby(list(CELL), sort=True) if _seeds(g) >= MIN_REPLICATES}
    details["seeds_per_cell"] = seeds_per_cell(cs)
    # Every deciding cell that ran, with the base seeds that learned the task: failed / diverged / missing seeds
    # and those the accuracy filter dropped count against min_seeds.
    details["deciding_cells"] = _named_cells(deciding_every, rows, details)
    if thinned:
        counts = ", ".join(f"{k}: {survivors[k]['seeds_learned']} of {survivors[k]['seeds_run']}" for k in thinned)
        return stop(f"the accuracy filter (held-out accuracy ≥ {p['min_base_acc']}) left fewer than "
                    f"{MIN_REPLICATES} base seeds in a cell ({counts} learned the task): the survivors are a "
                    "selection", len(rows))
    if not cs:
        return stop(f"no (architecture, width, pretraining) cell has {MIN_REPLICATES} base seeds that learned the "
                    f"compound task (held-out accuracy ≥ {p['min_base_acc']})", len(rows))
    if any(v["seeds_learned"] < v["seeds_run"] for v in survivors.values()):
        details["caveat_selection"] = "the accuracy filter removed some base seeds (seeds_learned_per_cell)"
    used_rows = pd.concat(cs.values())
    bad = _nonfinite(used_rows, ("sub_diff", "abl_diff"))
    details["n_nonfinite"] = bad
    if bad:
        return stop(f"{bad} deciding trials have a missing, NaN or infinite SubDiff or AblDiff: dropping them "
                    "would let the rest decide", len(used_rows))
    cols = tuple(c for c in used_rows if c in NUMERIC and c not in ("width", "seed"))
    bm = base_models(used_rows, cols)
    details["n_repeated_records"] = int(len(used_rows) - len(bm))
    cs = {k: g for k, g in bm.groupby(list(CELL), sort=True)}
    n = len(bm)
    why = degenerate([_vals(g, "sub_diff") for g in cs.values()]) or degenerate(
        [_vals(g, "abl_diff") for g in cs.values()])
    if why:
        return stop(f"{why} (SubDiff / AblDiff)", n)
    effects = _two_effects(cs, "sub_diff", "abl_diff")
    sub, abl = effects["SubDiff"], _neg(effects["−AblDiff"])
    details["mean_sub_diff"], details["mean_abl_diff"] = ci_entry(sub, n), ci_entry(abl, n)
    details["source_test"] = {"sub_diff_above_0": bool(sub[1] > 0), "abl_diff_below_0": bool(abl[2] < 0),
                              "note": "the source's test (mean SubDiff > 0 and mean AblDiff < 0, each with its "
                                      "interval); reported, the deciding number adds the margin and the controls"}
    details["weaker_effect"] = ci_entry(_weakest(partial(_two_effects, cs, "sub_diff", "abl_diff"))[0], n)
    nets, unavailable = {}, []
    for src, label in CONTROLS:
        net, lacking = _net_of_control(cs, src)
        details[f"n_without_{src}_control"] = lacking
        if net is None:
            unavailable.append(label)
            continue
        nets[label] = net
        details[f"beyond_{src}_control"] = ci_entry(_weakest(partial(_two_effects, net, "sub", "abl"))[0], n - lacking)

    def parts_at(confidence: float) -> dict[str, tuple]:
        out = _two_effects(cs, "sub_diff", "abl_diff", confidence)
        for label, net in nets.items():
            out |= {f"{k} net of the {label}": v for k, v in _two_effects(net, "sub", "abl", confidence).items()}
        return out

    for f in ("A", "B"):
        for col in ("sub_diff", "abl_diff"):
            if (c := _beside(cs, f"{col}_{f}")) is not None:
                details[f"mean_{col}_{f}"] = c
    if (c := _beside(cs, "frac_robust")) is not None:
        tol = float(bm["noise_tolerance"].max()) if "noise_tolerance" in bm else math.nan
        details["share_beyond_noise"] = c
        details["share_beyond_noise_note"] = (f"SubDiff > {tol:.3f} and AblDiff < −{tol:.3f}: two standard errors "
                                              "of a test-set accuracy difference at chance")
    if (c := _beside(cs, "frac_structural")) is not None:
        details["share_raw_signs"] = c
        details["share_raw_signs_note"] = "SubDiff > 0 and AblDiff < 0 per run: chance-level noise passes half the time"
    for src, label in (("untrained", "control_untrained"), ("random", "control_random_mask")):
        for col in ("sub_diff", "abl_diff", "frac_robust", "frac_structural"):
            if (c := _beside(cs, f"{src}_{col}")) is not None:
                details[f"{label}_{col}"] = c
    details["by_cell"] = {_cell_name(k): {"sub_diff": ci_entry(mean_ci(g["sub_diff"]), len(g)),
                                          "abl_diff": ci_entry(mean_ci(g["abl_diff"]), len(g))} for k, g in cs.items()}
    ex_rows = extra[np.isfinite(extra[["sub_diff", "abl_diff"]].to_numpy(dtype=float)).all(axis=1)]
    ex = {k: g for k, g in base_models(ex_rows, ("sub_diff", "abl_diff")).groupby(list(CELL), sort=True)
          if _seeds(g) >= MIN_REPLICATES}
    if ex:
        e = _two_effects(ex, "sub_diff", "abl_diff")
        m = sum(map(len, ex.values()))
        details["extra_subroutine_heads"] = {
            "mean_sub_diff": ci_entry(e["SubDiff"], m), "mean_abl_diff": ci_entry(_neg(e["−AblDiff"]), m),
            "note": "pretrained with one head per subroutine: reported beside, not deciding"}
    triple, weakest = _weakest(parts_at)
    if not np.isfinite(triple[1]) or not np.isfinite(triple[2]):
        return stop("the interval is undefined", n, triple)
    found = "; ".join(f"{k} {_num(v)}" for k, v in parts_at(0.95).items())
    if triple[2] < margin:
        verdict, why = "not_supported", (f"the weakest effect, {weakest}, is {_num(triple)}: below the margin "
                                         f"{margin:g} with its whole interval")
    elif unavailable:
        verdict, why = "inconclusive", (f"no {' or '.join(unavailable)} control in every deciding cell: whether "
                                        "training, not the mask search, makes the structure cannot be checked")
    elif triple[1] > margin:
        verdict, why = "supported", (f"the weakest effect, {weakest}, is {_num(triple)}: above the margin "
                                     f"{margin:g} with its whole interval")
    else:
        verdict, why = "inconclusive", (f"the weakest effect, {weakest}, is {_num(triple)}: its interval contains "
                                        f"the margin {margin:g}")
    details["weakest"] = weakest
    details["reason"] = f"{why} (mean over {len(cs)} cells, {n} base models; {found})"
    return Verdict(stat, verdict, triple, n, details)


def contrast(rows: pd.DataFrame, strata: tuple[str, ...], pick: Callable[[pd.DataFrame], tuple | None],
             col: str = "frac_robust", confidence: float = 0.95) -> tuple[tuple, dict, int]:
    """Mean over strata of ``mean(col | high) − mean(col | low)`` (base-seed means; Welch–Satterthwaite t).

    ``pick(stratum rows) -> (high rows, low rows, label)`` or None (stratum unusable); a side with
    fewer than ``MIN_REPLICATES`` base seeds with a finite value drops the stratum. Repeated records of
    one base model are averaged first.

    Returns:
        (triple, per-stratum details, number of base models used).
    """
    groups, per, n = [], {}, 0
    for key, g in rows.groupby(list(strata), sort=True):
        picked = pick(g)
        if picked is None:
            continue
        hi, lo, label = picked
        sides = []
        for side in (hi, lo):
            side = side[np.isfinite(pd.to_numeric(side[col], errors="coerce").to_numpy(dtype=float))]
            sides.append(base_models(side, (col,)))
        if min(_seeds(s) if len(s) else 0 for s in sides) < MIN_REPLICATES:
            continue
        a, b = (_vals(s, col) for s in sides)
        groups += [a, b]
        n += len(a) + len(b)
        per[f"{_cell_name(key)} ({label})"] = ci_entry(mean_diff_ci(a, b), len(a) + len(b))
    if not groups:
        return NAN3, per, n
    h = len(groups) // 2
    return strata_mean_ci(groups, weights=[1.0 / h, -1.0 / h] * h, confidence=confidence), per, n


def _sides_in_words(per: Mapping[str, object]) -> str:
    """The contrast's two sides in words, from its strata labels ("width 64 − 16; match_count − scratch")."""
    labels = sorted({k[k.rfind("(") + 1:-1] for k in per if k.endswith(")")})
    return "share of runs structural beyond test-set noise, " + "; ".join(labels)


def _widest(g: pd.DataFrame) -> tuple | None:
    if g["width"].nunique() < 2:
        return None
    w_lo, w_hi = g["width"].min(), g["width"].max()
    return g[g["width"] == w_hi], g[g["width"] == w_lo], f"width {json_key(w_hi)} − {json_key(w_lo)}"


def _widest_sides(g: pd.DataFrame, every: pd.DataFrame) -> list[dict]:
    """The cells (higher side first) :func:`_widest` compares in a stratum: its architecture's widest and narrowest
    width among the trials that ran, also where the stratum lacks one of them."""
    widths = every.loc[every["architecture"] == g["architecture"].iloc[0], "width"]
    return [{"width": widths.max()}, {"width": widths.min()}] if widths.nunique() >= 2 else []


_widest.sides = _widest_sides  # type: ignore[attr-defined]


def _pretrained(kind: str) -> Callable[[pd.DataFrame], tuple | None]:
    def pick(g: pd.DataFrame) -> tuple | None:
        if not {"none", kind} <= set(g["pretraining"]):
            return None
        return g[g["pretraining"] == kind], g[g["pretraining"] == "none"], f"{kind} − scratch"
    pick.sides = lambda g, every: [{"pretraining": kind}, {"pretraining": "none"}]  # type: ignore[attr-defined]
    return pick


def _contrast_verdict(ok: pd.DataFrame, p: Mapping, strata: tuple[str, ...], pick: Callable, what: str,
                      keep: Callable[[pd.DataFrame], pd.DataFrame]) -> tuple:
    """The verdict of one contrast: the sides are picked on every trial that ran (the planned design),
    then compared on those whose base network learned the task."""
    every, rows, details = _usable(ok, p["min_base_acc"])

    def stop(reason: str, n: int = 0) -> tuple:
        details.setdefault("seeds_per_cell", 0)
        details["reason"] = reason
        return "inconclusive", NAN3, n, details

    if "reason" in details:
        return stop(details["reason"])
    col = "frac_robust"
    if _missing(every, (col,)):
        return stop("no noise-robust share (frac_robust) in the results")
    every, rows = keep(every), keep(rows)
    if rows.empty:
        return stop("no trial learned the compound task")
    sides, survivors, thinned, uneven, short = [], {}, [], [], []
    cells_used: list[dict] = []
    thin: list[str] = []
    for key, g in every.groupby(list(strata), sort=True):
        picked = pick(g)
        if picked is None or min(_seeds(s) for s in picked[:2]) < MIN_REPLICATES:
            # A stratum missing a side, or with fewer than MIN_REPLICATES ok seeds on one, cannot be compared; its
            # sides are still deciding cells (with the seeds used, possibly 0), so the engine counts the seeds it
            # lost against those planned (failed, diverged, missing): a contradicting stratum that lost its seeds
            # makes the claim inconclusive instead of vanishing. A stratum planned that thin loses nothing.
            fixed = dict(zip(strata, key if isinstance(key, tuple) else (key,)))
            for want in getattr(pick, "sides", lambda g, e: [])(g, every):
                cell = {c: v for c, v in {**fixed, **want}.items() if c in CELL}
                side = g
                for c, v in want.items():
                    side = side[side[c] == v]
                kept = rows.loc[rows.index.intersection(side.index)]
                cells_used.append(deciding_cell(_cell_of({c: cell[c] for c in CELL if c in cell}, details),
                                                _seeds(kept) if len(kept) else 0, dropped=_BELOW,
                                                seeds=kept["seed"].unique() if len(kept) else [],
                                                gated=bool(len(kept))))  # no model left: nothing to gate
            thin.append(_cell_name(key) + ("" if picked is None else f" ({picked[2]})"))
            continue
        hi, lo, label = picked
        name = f"{_cell_name(key)} ({label})"
        counts = [(_seeds(s), _seeds(rows.loc[rows.index.intersection(s.index)])) for s in (hi, lo)]
        survivors[name] = {"seeds_run": [r for r, _ in counts], "seeds_learned": [k for _, k in counts]}
        if min(k for _, k in counts) < MIN_REPLICATES:
            (short if counts[0][1] == 0 else thinned).append(name)
        elif counts[0][1] != counts[1][1]:
            uneven.append(name)
        sides += [rows.loc[rows.index.intersection(s.index)] for s in (hi, lo)]
        # Base seeds that learned the task per side against the seeds planned: failed / diverged / missing ones
        # and those the accuracy filter dropped count against min_seeds.
        for side, (_, kept) in zip((hi, lo), counts):
            fixed = {c: side[c].iloc[0] for c in CELL if c in side
                     and side[c].nunique() == 1}
            used = rows.loc[rows.index.intersection(side.index), "seed"].unique()
            cells_used.append(deciding_cell(_cell_of(fixed, details), kept, dropped=_BELOW, seeds=used))
    details["seeds_learned_per_side"] = survivors
    details["deciding_cells"] = cells_used
    if thin:
        details["strata_not_compared"] = thin  # a side missing or under MIN_REPLICATES ok seeds
    if short:
        return stop(f"no base network of the higher side of {', '.join(short)} learned the compound task: "
                    "the contrast would be decided on a smaller design than the study ran")
    if thinned:
        counts = ", ".join(f"{k}: {'/'.join(map(str, survivors[k]['seeds_learned']))} of "
                           f"{'/'.join(map(str, survivors[k]['seeds_run']))}" for k in thinned)
        return stop(f"the accuracy filter (held-out accuracy ≥ {p['min_base_acc']}) left fewer than "
                    f"{MIN_REPLICATES} base seeds on a side of a stratum ({counts} learned the task, higher/lower "
                    "side): the survivors are a selection")
    if not survivors:
        return stop(f"no stratum has {what} with {MIN_REPLICATES} base seeds on each side")
    if uneven:
        details["caveat_selection"] = (f"the accuracy filter kept different numbers of base seeds on the two sides "
                                       f"of {', '.join(uneven)}: the compared survivors may differ in kind")
    deciding = pd.concat(sides)
    bad = _nonfinite(deciding, (col,))
    details["n_nonfinite"] = bad
    if bad:
        return stop(f"{bad} deciding trials have a missing, NaN or infinite {col}: dropping them would let the "
                    "rest decide", len(deciding))
    bms = [base_models(s, (col,)) for s in sides]
    details["n_repeated_records"] = int(len(deciding) - sum(map(len, bms)))
    details["seeds_per_cell"] = min(map(_seeds, bms))
    triple, per, n = contrast(rows, strata, pick, col)
    details["by_stratum"] = per
    # Shares of a few mask runs: one cell whose seeds all score 0 is a real measurement; both sides all at 0
    # (or all at 1) is the share's floor (ceiling).
    why = (at_bound({"the higher side": np.concatenate([_vals(b, col) for b in bms[0::2]]),
                     "the lower side": np.concatenate([_vals(b, col) for b in bms[1::2]])})
           or no_room(np.concatenate([_vals(b, col) for b in bms[1::2]]), p["margin"], name="the lower side")
           or degenerate([_vals(b, col) for b in bms], discrete=True))
    if why:
        return stop(f"{why} ({col})", n)
    if "frac_structural" in rows:
        details["raw_sign_share_difference"] = ci_entry(contrast(rows, strata, pick, "frac_structural")[0], n)
    for src, label in (("untrained", "control_untrained_difference"), ("random", "control_random_mask_difference")):
        c = f"{src}_{col}"
        if c in rows and rows[c].notna().any():
            details[label] = ci_entry(contrast(rows, strata, pick, c)[0], n)
    if not np.isfinite(triple[0]):
        return stop("the difference is not finite (missing shares)", n)
    details["trained_difference"] = ci_entry(triple, n)
    # A control whose share moves like the trained networks' (an untrained network, or a
    # random mask of equal size, structural as often) explains the difference without training. The
    # difference is also taken of the share net of each control, paired within base models; the weakest of
    # the three decides (its interval as structure_emerges's: smallest 95% low, Bonferroni-adjusted high).
    rows = rows.copy()
    effects, unavailable = {"trained share": col}, []
    for src, label in CONTROLS:
        c = f"{src}_{col}"
        lacking = (sum(_nonfinite(s_, (c,)) for s_ in sides) if c in rows else len(deciding))
        details[f"n_without_{src}_control"] = int(lacking)
        if lacking:
            unavailable.append(label)
            continue
        rows[f"net_{src}"] = rows[col] - rows[c]
        effects[f"share net of the {label}"] = f"net_{src}"

    def parts_at(confidence: float) -> dict[str, tuple]:
        return {k: contrast(rows, strata, pick, c, confidence)[0] for k, c in effects.items()}

    parts = parts_at(0.95)
    for k, c in effects.items():
        if c != col:
            details[f"difference_{c}"] = ci_entry(parts[k], n)
    triple, weakest = _weakest(parts_at)
    details["weakest"] = weakest
    m = p["margin"]
    found = "; ".join(f"{k} {_num(v)}" for k, v in parts.items())
    if not np.isfinite(triple[1]) or not np.isfinite(triple[2]):
        return stop(f"an interval is undefined ({found})", n)
    if triple[2] < m:
        verdict, why = "not_supported", f"below the margin {m:g} with its whole interval"
    elif unavailable:
        verdict, why = "inconclusive", (f"the {' and the '.join(unavailable)} control is missing in a deciding "
                                        "base model: whether training, not the mask search, makes the difference "
                                        "cannot be checked")
    elif triple[1] > m:
        verdict, why = "supported", f"above the margin {m:g} with its whole interval"
    else:
        verdict, why = "inconclusive", f"its interval contains the margin {m:g}"
    details["reason"] = (f"{_sides_in_words(per)}: the weakest, the {weakest}, differs by {_num(triple)}, "
                         f"{why} (mean over {len(per)} strata of {', '.join(strata)}; {found})")
    return verdict, triple, n, details


def _no_extra(rows: pd.DataFrame) -> pd.DataFrame:
    return rows[rows["pretraining"] != EXTRA]


def structure_grows_with_width(ok: pd.DataFrame, p: Mapping, n_boot: int, seed: int) -> Verdict:
    stat = "share_structural_gain_widest_vs_narrowest"
    verdict, triple, n, details = _contrast_verdict(ok, p, ("architecture", "pretraining"), _widest, "two widths",
                                                    _no_extra)
    every, _, _ = _usable(ok, p["min_base_acc"])
    if not every.empty:
        details["largest_width"] = {_cell_name(k): to_python(g["width"].max())
                                    for k, g in _no_extra(every).groupby(["architecture", "pretraining"])}
    return Verdict(stat, verdict, triple, n, details)


def lost_planned_width(df: pd.DataFrame, details: Mapping) -> str | None:
    """Why ``structure_grows_with_width`` compared a smaller width than the table plans, or None.

    The rules see only ok trials; a widest width whose trials all failed (any other status) leaves the
    rule comparing a smaller one. Inputs: the whole results table (any status) and the rule's details
    (``largest_width`` per architecture/pretraining). For :func:`bindscale.verdicts.engine.compute_verdicts`,
    which holds the whole table; a reason string means the verdict must be inconclusive.
    """
    if "largest_width" not in details or _missing(df, ("architecture", "pretraining", "width")):
        return None
    rows = df[df["pretraining"] != EXTRA]
    planned = pd.to_numeric(rows["width"], errors="coerce").groupby(
        [rows["architecture"], rows["pretraining"]]).max()
    short = [f"{_cell_name(k)}: width {json_key(w)} planned, {json_key(details['largest_width'].get(_cell_name(k)))} "
             "compared" for k, w in planned.items() if np.isfinite(w)
             and not details["largest_width"].get(_cell_name(k), -math.inf) >= w]
    if short:
        return ("the largest planned width has no ok trial (" + "; ".join(short) + "): the contrast would be "
                "decided at a smaller width than the study asked about")
    return None


def pretraining_reliability(ok: pd.DataFrame, p: Mapping, n_boot: int, seed: int) -> Verdict:
    stat = "share_structural_gain_pretrained_vs_scratch"
    verdict, triple, n, details = _contrast_verdict(ok, p, ("architecture", "width"), _pretrained(GENERIC),
                                                    f"{GENERIC} and from-scratch trials",
                                                    lambda r: r[r["pretraining"] != EXTRA])
    rows, _ = usable(ok, p["min_base_acc"])
    if not rows.empty and "frac_robust" in rows and (rows["pretraining"] == EXTRA).any():
        ex, per, n_ex = contrast(rows[rows["pretraining"] != GENERIC], ("architecture", "width"), _pretrained(EXTRA))
        details["extra_subroutine_heads"] = {"difference": ci_entry(ex, n_ex), "by_stratum": per,
                                             "note": "one head per subroutine during pretraining: reported beside, "
                                                     "not deciding"}
    return Verdict(stat, verdict, triple, n, details)


def planned_width_guard(df: pd.DataFrame, ok: pd.DataFrame, details: dict, verdict: str) -> tuple[str, str] | None:
    """A guard (:data:`bindscale.core.study.Guard`): :func:`lost_planned_width` for a decided verdict."""
    if verdict == "inconclusive":
        return None
    reason = lost_planned_width(df, details)
    return (reason, "value_at_a_smaller_width") if reason else None


#: Claim name → rule (the plugin's claims reference these).
RULES = {"structure_emerges": structure_emerges, "structure_grows_with_width": structure_grows_with_width,
         "pretraining_reliability": pretraining_reliability}
