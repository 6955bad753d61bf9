"""The verdict engine: each claim of a study decided from the results table.

``compute_verdicts(df, study)`` turns the results table (one row per trial)
into one verdict dict per claim named in ``study["verdicts"]``, using the
rule, defaults, guards and statement each claim declares in its study plugin
(:class:`bindscale.core.study.Claim`, found through :mod:`bindscale.core.registry`);
a rule returns a :class:`bindscale.core.study.Verdict`. The helpers below are
shared by every study's rules (studies import them from :mod:`bindscale.kit`,
which re-exports them under the names they have here): restricting a comparison to the most
common configuration, degenerate-input checks, the check of recorded parameter counts against the
counts the records' configurations give (:func:`param_count_mismatch`) and the verdict dict itself.
Intervals come from :mod:`bindscale.verdicts.stats`.

A verdict whose deciding cell has fewer than ``MIN_REPLICATES`` values is
"inconclusive" (each rule checks); one with fewer than ``CONCLUSIVE_SEEDS``
seeds in a deciding cell carries a caveat.

Every seed counted, once: the table is first reduced
to one record per configuration and seed (:func:`bindscale.core.rows.one_per_unit`;
each verdict says how many records were repeats), and the cells a rule names in
``details["deciding_cells"]`` (:func:`deciding_cell`) are checked against their
planned seeds in the whole table: with fewer than ``min_seeds`` (a threshold of
every claim, default :data:`MIN_SEEDS`) finite seeds left the claim is
inconclusive, and the reason says how many were lost and how.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from bindscale.core.fmt import fmt_against
from bindscale.core.study import INCONCLUSIVE, Verdict
from bindscale.verdicts.stats import within_bounds

__all__ = [
    "compute_verdicts",
    "restrict_to_mode",
    "degenerate",
    "MIN_REPLICATES",
    "CONCLUSIVE_SEEDS",
    "MIN_SEEDS",
    "deciding_cell",
    "seed_loss",
    "gate_check",
    "at_bound",
    "no_room",
    "mixed_recipes",
    "param_count_mismatch",
    "study_as_dict",
    "coerce_numeric",
    "to_python",
    "json_key",
    "ci_entry",
    "finite_values",
    "pooled_columns",
    "decide",
    "decide_below",
    "MISSING",
    "NAN3",
]

#: Status of a planned trial without a record (it never ran, or its worker died before writing one).
MISSING = "missing"
#: Fewest seeds a deciding cell may have for any verdict (a t interval needs a spread).
MIN_REPLICATES = 3
#: Seeds per deciding cell below which a verdict carries a caveat: intervals are valid but not for
#: conclusions (the quick variants). Default studies have at least this many.
CONCLUSIVE_SEEDS = 8
#: Default of every claim's ``min_seeds`` (settable in a study file's ``verdicts:`` like any threshold): the
#: share (≤ 1) or number (> 1) of a deciding cell's planned seeds that must have a finite value for the claim
#: to be decided; 0.75 is 6 of 8. Failed, diverged, unrecorded and NaN seeds are not a random subset (a
#: width whose runs blow up loses its worst seeds), so a cell that lost more is not a measurement of it.
MIN_SEEDS = 0.75


# ----------------------------------------------------------------- helpers --

def restrict_to_mode(rows: pd.DataFrame, cols: tuple[str, ...]) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Keep the rows at the most common value of each column in ``cols`` that varies.

    Columns are fixed in order (each mode is taken among the rows left by the
    previous ones); ties go to the smallest value (deterministic). Output:
    (rows, note for details: ``<col>_used``, ``<col>_present`` and a
    ``restriction`` sentence; empty when nothing varies).
    """
    note: dict[str, Any] = {}
    for col in cols:
        if col not in rows or rows[col].nunique(dropna=True) <= 1:
            continue
        counts = rows[col].dropna().value_counts()
        best = min(v for v, c in counts.items() if c == counts.max())
        note[f"{col}_used"] = to_python(best)
        note[f"{col}_present"] = sorted(to_python(v) for v in counts.index)
        rows = rows[rows[col] == best]
    if note:
        fixed = ", ".join(k.removesuffix("_used") for k in note if k.endswith("_used"))
        note["restriction"] = f"{fixed} vary; this comparison uses the most common value of each"
    return rows, note


def to_python(v: Any) -> Any:
    """NumPy scalar -> Python int/float (ints stay ints)."""
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (np.floating, float)):
        f = float(v)
        return int(f) if f.is_integer() and abs(f) < 2**53 else f
    return v


def json_key(v: Any) -> str:
    """JSON-friendly dict key for a config value: 64 not 64.0."""
    return str(to_python(v))


def ci_entry(triple: tuple[float, float, float], n: int) -> dict[str, Any]:
    """A statistic with its interval as a verdict's details entry.

    ``triple``: ``(point, low, high)``; ``n``: how many values it is computed from.
    Output: ``{"value", "ci_low", "ci_high", "n"}`` as Python floats and an int (JSON-able).
    """
    p, lo, hi = triple
    return {"value": float(p), "ci_low": float(lo), "ci_high": float(hi), "n": int(n)}


def finite_values(s: pd.Series) -> np.ndarray:
    """The finite values of ``s`` (NaN and ±inf dropped) as a float array."""
    a = np.asarray(s, dtype=float)
    return a[np.isfinite(a)]


def degenerate(cells: list[np.ndarray], discrete: bool = False) -> str | None:
    """Why these deciding cells cannot carry a verdict, or None.

    Every seed of a real trial differs; identical values across the seeds of a cell, or one value
    in every cell (all zero, say), are the signature of a broken pipeline or copied records, and
    give zero-width intervals that would decide anything (missing, NaN or all-zero
    inputs are inconclusive). ``discrete``: the values are shares of a few runs (e.g. 0, 1/3, 2/3,
    1), where one cell's seeds can all be 0 in a real measurement; then only zero spread in every
    cell, or one value everywhere, is degenerate.
    """
    vals = [np.asarray(c, float) for c in cells if np.size(c)]
    if not vals:
        return "no values"
    flat = [v.size >= 2 and np.ptp(v) == 0 for v in vals]
    if (all(flat) if discrete else any(flat)):
        return "a deciding cell has the same value in every seed (zero spread): not a measurement of seed variation"
    allv = np.concatenate(vals)
    if np.ptp(allv) == 0:
        return f"every deciding value is {allv[0]:g}: nothing varies"
    return None


def deciding_cell(cell: Mapping[str, Any], n: int, gated: bool | Sequence[str] = True,
                  dropped: str | None = None, seeds: Sequence[Any] | None = None) -> dict[str, Any]:
    """One deciding cell as a rule reports it in ``details["deciding_cells"]`` (a list of these).

    ``cell``: the config columns and values that pick its trials out of the results table (say
    ``{"model": "mlp", "width": 256, "holdout": 0.25}``); ``n``: how many finite values the rule used
    there. The engine counts the cell's planned seeds in the whole table (every status, planned trials
    without a record too) and makes the claim inconclusive when fewer than ``min_seeds`` were used
    (:func:`seed_loss`). ``gated``: which of the claim's :class:`~bindscale.core.study.Gate`\\s the cell's
    models must pass (:func:`gate_check`): True every one, False none (a control that is not meant to
    learn, e.g. an untrained twin or a random mask), or the gates' metric names that apply (an arm
    without an auxiliary task has no auxiliary fit). ``dropped``: why the rule left out ok seeds of the
    cell, in words (e.g. "below the accuracy filter"); by default they are ok records whose value is NaN.
    ``seeds``: the seeds the rule used, when it chose among the cell's ok seeds (a per-seed filter): the
    gates then read those seeds only (the others count against ``min_seeds`` already).
    """
    out: dict[str, Any] = {"cell": {str(k): to_python(v) for k, v in cell.items()}, "n": int(n)}
    if dropped:
        out["dropped"] = str(dropped)
    if seeds is not None:
        out["seeds"] = sorted(to_python(s) for s in seeds)
    if gated is not True:
        out["gated"] = list(gated) if gated else []
    return out


def _cell_label(cell: Mapping[str, Any]) -> str:
    return ", ".join(f"{_WORDS.get(k, k)} {v}" for k, v in cell.items())


_WORDS = {"holdout": "hold-out", "train.batch_size": "batch size"}  # column → the word a reader sees


def _matching(whole: pd.DataFrame, cell: Mapping[str, Any]) -> pd.DataFrame:
    """Rows of ``whole`` in ``cell`` (columns the table lacks are not compared)."""
    mask = pd.Series(True, index=whole.index)
    for col, want in cell.items():
        if col not in whole:
            continue
        have = whole[col]
        if isinstance(want, (int, float)) and not isinstance(want, bool):
            num = pd.to_numeric(have, errors="coerce").to_numpy(float)
            mask &= np.isclose(num, float(want), rtol=1e-9, atol=0) & np.isfinite(num)
        else:
            mask &= have.astype(str) == str(want)
    return whole[mask]


def _said(outcome: str) -> str:
    """An outcome as a reason's prose says it ("not supported", never the field value "not_supported")."""
    return outcome.replace("_", " ")


def needed_seeds(planned: int, min_seeds: float) -> int:
    """Finite seeds a cell of ``planned`` seeds needs: ``ceil(min_seeds · planned)`` for a share (≤ 1), else
    ``min_seeds`` itself, even above ``planned`` (a count the plan cannot meet is not lowered to fit it:
    :func:`seed_loss` then says the plan is short); never fewer than :data:`MIN_REPLICATES`."""
    need = math.ceil(min_seeds * planned - 1e-9) if min_seeds <= 1 else math.ceil(min_seeds - 1e-9)
    return max(need, MIN_REPLICATES)


def gate_filter(ok: pd.DataFrame, cells: list[Mapping[str, Any]], gates: Sequence[Any],
                levels: Mapping[str, float]) -> tuple[pd.DataFrame, dict[str, dict[str, Any]]]:
    """Gates per model: the ok rows without the deciding models that missed a competence gate.

    Each seed (row) of a gated deciding cell is checked against every gate that applies to the cell: a model
    whose gate metric misses the level, or was never recorded (NaN, or the column absent), did not show that
    it learned its training task and is lost to the gate, like a seed lost to a failure; the rule is then
    run again on the rows left, and the lost seeds count against ``min_seeds`` (:func:`seed_loss`). Cells the
    rule marks as controls (``gated`` False, e.g. an untrained twin) keep every row.

    Output: (the rows left, ``{cell label: {"lost": n, "planned_ok": n_ok, "by_gate": {metric: n}}}`` for
    cells that lost any).
    """
    drop = pd.Series(False, index=ok.index)
    lost: dict[str, dict[str, Any]] = {}
    for entry in cells:
        gated = entry.get("gated", True)
        applies = [g for g in gates if gated is True or (gated and g.metric in gated)]
        if not applies:
            continue
        rows = _matching(ok, entry["cell"])
        if entry.get("seeds") is not None and "seed" in rows:
            rows = rows[pd.to_numeric(rows["seed"], errors="coerce").isin(entry["seeds"])]
        label = _cell_label(entry["cell"])
        by_gate: dict[str, int] = {}
        miss = pd.Series(False, index=rows.index)
        for gate in applies:
            level = float(levels[gate.threshold])
            vals = (pd.to_numeric(rows[gate.metric], errors="coerce") if gate.metric in rows
                    else pd.Series(np.nan, index=rows.index))
            bad = ~vals.map(lambda v: gate.passes(float(v), level))
            by_gate[gate.metric] = int((bad & ~miss).sum())
            miss |= bad
        if miss.any():
            drop.loc[miss[miss].index] = True
            lost[label] = {"lost": int(miss.sum()), "planned_ok": int(len(rows)),
                           "by_gate": {k: v for k, v in by_gate.items() if v}}
    return ok[~drop], lost


def seed_loss(whole: pd.DataFrame, cells: list[Mapping[str, Any]], min_seeds: float,
              gate_lost: Mapping[str, Mapping[str, Any]] | None = None) -> tuple[str | None, dict]:
    """Seeds the deciding cells lost, and why a verdict cannot stand on what is left (or None).

    ``whole``: every row of the results table (any status, planned trials without a record as status
    :data:`MISSING`); ``cells``: :func:`deciding_cell` entries. A cell's planned seeds are its distinct
    ``seed`` values in ``whole`` (its rows when there is no seed column); lost = planned − used, split
    into statuses other than ok, ok records lost to a competence gate (``gate_lost``: :func:`gate_filter`'s
    report) and ok records whose deciding value is NaN. Output: (reason in words or None, ``{cell label:
    {"planned", "used", "lost", "needed", "statuses"}}`` for cells that lost any).
    """
    lost: dict[str, dict[str, Any]] = {}
    short = []
    for entry in cells:
        cell, used = entry["cell"], int(entry["n"])
        rows = _matching(whole, cell)
        planned = int(rows["seed"].nunique(dropna=True)) if "seed" in rows else len(rows)
        need = needed_seeds(planned, min_seeds)
        label = _cell_label(cell)
        if min_seeds > 1 and planned < need:  # a count no run of this plan could meet: say so, whatever was lost
            short.append(f"the deciding cell ({label}) planned {planned} seeds and the claim needs at least "
                         f"{need} (min_seeds {min_seeds:g}): plan more seeds or lower min_seeds")
        if planned <= used:
            continue
        statuses = rows["status"].astype(str) if "status" in rows else pd.Series("ok", index=rows.index)
        if "seed" in rows:  # a seed with an ok record is not lost to a failed retry of it
            statuses = statuses.groupby(rows["seed"]).agg(lambda s: "ok" if (s == "ok").any() else s.iloc[-1])
        bad = {str(k): int(v) for k, v in statuses[statuses != "ok"].value_counts().items()}
        nan = planned - used - sum(bad.values())
        gated_out = min(nan, int(((gate_lost or {}).get(label) or {}).get("lost", 0)))
        if gated_out > 0:
            bad["missed a competence gate"] = gated_out
            nan -= gated_out
        if nan > 0:
            bad[entry.get("dropped") or "ok but NaN"] = nan
        lost[label] = {"planned": planned, "used": used, "lost": planned - used, "needed": need, "statuses": bad}
        if planned >= need > used:
            why = ", ".join(f"{v} {k}" for k, v in bad.items())
            short.append(f"{planned - used} of {planned} seeds of the deciding cell ({label}) are NaN, failed, "
                         f"diverged or missing ({why}); at least {need} of {planned} are needed, {used} remain")
    return ("; ".join(short) or None), lost


def gate_check(ok: pd.DataFrame, cells: list[Mapping[str, Any]], gates: Sequence[Any],
               levels: Mapping[str, float], gate_lost: Mapping[str, Mapping[str, Any]] | None = None,
               every: pd.DataFrame | None = None) -> tuple[str | None, dict[str, Any]]:
    """Whether the deciding cells' models learned their training task: (reason or None, the gates' report).

    ``ok``: the study's prepared ok rows; ``cells``: the rule's :func:`deciding_cell` entries; ``gates``:
    the claim's :class:`~bindscale.core.study.Gate`\\s; ``levels``: the claim's thresholds (each gate's level
    is ``levels[gate.threshold]``). The engine first leaves out every deciding model that missed a gate
    (:func:`gate_filter`, reported in ``gate_lost``), so ``ok`` holds the models that passed: a cell's fit
    is the mean of the gate's metric over them; a cell misses the gate when none is left (every model
    missed it, or none recorded the metric: a fit that was never measured is not shown to have been reached);
    ``every`` (the rows before that filter) gives the mean over every model of such a cell, for the reason.
    Output: the reason naming every cell that missed, with its fit ("depth 8, width 32: in-distribution
    exact match 0.33 < 0.95"), or None; and ``{"gates": [{"metric", "what", "level", "source", "higher",
    "cells": {cell label: fit}, "missed": [labels]}]}`` for the report.
    """
    report, missed, why = [], [], []
    for gate in gates:
        level = float(levels[gate.threshold])
        fits: dict[str, float | None] = {}
        bad = []
        for entry in cells:
            gated = entry.get("gated", True)
            if gated is not True and gate.metric not in gated:
                continue
            label = _cell_label(entry["cell"])
            if label in fits:
                continue
            rows = _matching(ok, entry["cell"])
            if entry.get("seeds") is not None and "seed" in rows:
                rows = rows[pd.to_numeric(rows["seed"], errors="coerce").isin(entry["seeds"])]
            vals = (pd.to_numeric(rows[gate.metric], errors="coerce").to_numpy(float)
                    if gate.metric in rows else np.array([]))
            vals = vals[np.isfinite(vals)]
            fit = float(vals.mean()) if vals.size else math.nan
            n_lost = int(((gate_lost or {}).get(label) or {}).get("lost", 0))
            all_vals = np.array([])
            if n_lost and every is not None:
                rows_all = _matching(every, entry["cell"])
                if entry.get("seeds") is not None and "seed" in rows_all:
                    rows_all = rows_all[pd.to_numeric(rows_all["seed"], errors="coerce").isin(entry["seeds"])]
                raw = (pd.to_numeric(rows_all[gate.metric], errors="coerce").to_numpy(float)
                       if gate.metric in rows_all else np.full(len(rows_all), np.nan))
                all_vals = raw[np.isfinite(raw)]
                if not vals.size:  # every model of the cell was lost: to this gate, or to another one only?
                    n_lost = int(sum(not gate.passes(float(v), level) for v in raw))
                    if not n_lost and all_vals.size:  # each passed this gate (and missed another)
                        fit = float(all_vals.mean())
            fits[label] = None if math.isnan(fit) else round(fit, 6)
            if not gate.passes(fit, level):
                bad.append(label)
                if gate.missing not in why:
                    why.append(gate.missing)
                sign = "<" if gate.higher else ">"
                mean_all = (f"{gate.what} {fmt_against(float(all_vals.mean()), level)} {sign} {level:g} over them"
                            if all_vals.size else f"{gate.what} not recorded")
                missed.append(f"{label}: {gate.what} {fmt_against(fit, level)} {sign} {level:g}" if vals.size else
                              f"{label}: no seed passed ({n_lost} missed it; {mean_all})" if n_lost else
                              f"{label}: {gate.what} not recorded for any seed")
        report.append({"metric": gate.metric, "what": gate.what, "level": level, "higher": gate.higher,
                       "source": gate.source, "says": gate.says(level), "cells": fits, "missed": bad})
    if not missed:
        return None, {"gates": report}
    return (f"the deciding models {' and '.join(why)} (a claim is decided only by models that pass its "
            f"competence gates): {'; '.join(missed)}"), {"gates": report}


#: The band around 0 and 1 within which two arms' exact-match shares measure the bound, not the models, for
#: :func:`at_bound`: 0.02, i.e. 6 examples of the 300-example test subsamples the SCAN studies read. Below it
#: no model of either arm solved the split; a difference there (0/300 against 1/300) says nothing.
EXACT_MATCH_BAND = 0.02


def at_bound(arms: Mapping[str, Any], low: float | None = 0.0, high: float | None = 1.0,
             band: float = 0.0) -> str | None:
    """Why a comparison of these arms says nothing because every arm sits at a bound of the metric, or None.

    ``arms``: arm name → its seed values (NaN dropped); ``low`` / ``high``: the metric's floor and
    ceiling (``None``: unbounded on that side, e.g. R² below). When every seed of every arm is exactly
    the floor (no model learned anything measurable) or exactly the ceiling (every model, the control
    too, is already perfect), a difference of 0 is the bound's, not the models': a floor or ceiling
    effect, here only in its exact form (every seed on the bound). ``band`` > 0 widens the bound to a band:
    every seed of every arm within ``band`` of it (e.g. 0.02 of exact match, 6 of a 300-example test set: a
    deep model at 0/300 against a shallow one at 1/300 in every seed measures the floor, not depth).
    An arm without values leaves the question to the caller's seed checks (returns None).

    Raises:
        ValueError: ``band`` negative or NaN.
    """
    if not band >= 0:
        raise ValueError(f"band must be >= 0, got {band}")
    vals = {k: np.asarray(v, float) for k, v in arms.items()}
    vals = {k: v[np.isfinite(v)] for k, v in vals.items()}
    if not vals or any(v.size == 0 for v in vals.values()):
        return None
    names = " and ".join(vals)
    for bound, where, what in ((low, "floor of the metric", "no model learned anything measurable"),
                               (high, "ceiling of the metric", "every model, the control too, is already perfect")):
        if bound is not None and all(np.all(np.abs(v - bound) <= band) for v in vals.values()):
            n = ", ".join(f"{k} {v.size}" for k, v in vals.items())
            who = "it sits" if len(vals) == 1 else "both sit" if len(vals) == 2 else "all sit"
            how = f"exactly {bound:g}" if band == 0 else f"within {band:g} of {bound:g}"
            return (f"every seed of {names} is {how} (seeds: {n}): {who} at the {where}, "
                    f"{what}, so the comparison says nothing about the claim")
    return None


def outside_range(rows: pd.DataFrame, ranges: Mapping[str, tuple[float, float]]) -> str | None:
    """Why ``rows`` cannot decide because a metric lies outside the values it can take, or None.

    ``ranges``: column, or a shell-style pattern of columns (``r2_*``, :func:`fnmatch.fnmatchcase`) → (lowest,
    highest) value the metric can take (an accuracy or a share (0, 1), a difference of two shares (−1, 1));
    columns absent from ``rows`` are skipped, NaN is left to the rule's own checks. A share entered in percent
    (13.8 for 0.138) would otherwise decide with intervals a hundred times too wide or a margin a hundred times
    too small.
    """
    from fnmatch import fnmatchcase

    cols = [str(c) for c in rows.columns]
    for pattern, (lo, hi) in ranges.items():
        for col in [c for c in cols if fnmatchcase(c, pattern)]:
            why = _outside(rows, col, lo, hi)
            if why:
                return why
    return None


def _outside(rows: pd.DataFrame, col: str, lo: float, hi: float) -> str | None:
    """:func:`outside_range` for one column."""
    v = pd.to_numeric(rows[col], errors="coerce").to_numpy(float)
    bad = v[np.isfinite(v) & ((v < lo) | (v > hi))]
    if not bad.size:
        return None
    what = "a share, not a percentage" if (lo, hi) == (0.0, 1.0) else "bounded"
    return (f"column {col} has values outside [{lo:g}, {hi:g}] in the deciding rows (e.g. {bad[0]:g}, "
            f"{bad.size} of {v.size}): it is {what}; the table's units are wrong")


def no_room(baseline: Any, margin: float, high: float = 1.0, name: str = "the baseline") -> str | None:
    """Why a gain of at least ``margin`` over ``baseline`` cannot be measured, or None.

    ``baseline``: the seed values of the arm a gain is measured from (NaN dropped) on a metric capped at
    ``high``. When ``high − mean(baseline) < margin`` no model could beat the baseline by the margin, so a
    difference below the margin is the ceiling's, not the models' (the near-ceiling case that
    :func:`at_bound` leaves, e.g. one seed of 48 at 0.999 and the rest at 1). An arm without values
    leaves the question to the caller's seed checks (returns None).
    """
    v = np.asarray(baseline, float)
    v = v[np.isfinite(v)]
    if v.size == 0 or high - v.mean() >= margin:
        return None
    return (f"{name} already averages {v.mean():.3f} over {v.size} seeds, {high - v.mean():.3f} below the "
            f"metric's ceiling {high:g}: no model could exceed it by the margin {margin:g}, so the comparison "
            "says nothing about the claim")


def _said_value(v: Any) -> str:
    return "not recorded" if v is None else f"{v:g}" if isinstance(v, (int, float)) else str(v)


def distinct_settings(rows: pd.DataFrame, columns: Sequence[str]) -> tuple[list[dict[str, Any]], str] | None:
    """The distinct values ``rows`` hold of ``columns`` when there are several, else None: (each combination as
    ``{varying column: value}``, in order, and the list said with its trial counts, e.g. "heads 2 (16 trials);
    heads 4 (14 trials)"). A column the table lacks is not compared; a missing value is a value."""
    cols = [c for c in columns if c in rows]
    if not cols or rows.empty:
        return None
    keys = rows[cols].astype(object).where(rows[cols].notna(), None)
    distinct = keys.drop_duplicates()
    if len(distinct) <= 1:
        return None
    varying = [c for c in cols if len({to_python(v) for v in distinct[c]}) > 1]
    counts: dict[tuple, int] = {}
    for values in keys[varying].itertuples(index=False):
        key = tuple(to_python(v) for v in values)
        counts[key] = counts.get(key, 0) + 1
    order = sorted(counts, key=lambda k: [(v is None, v if isinstance(v, (int, float)) else 0, str(v)) for v in k])
    combos = [dict(zip(varying, k)) for k in order]
    said = "; ".join(", ".join(f"{c} {_said_value(v)}" for c, v in r.items()) + f" ({counts[k]} trials)"
                     for r, k in zip(combos, order))
    return combos, said


def mixed_recipes(rows: pd.DataFrame, columns: Sequence[str]) -> tuple[str, list[dict[str, Any]]] | None:
    """Why ``rows`` (the rows a rule compares) cannot be decided because they hold more than one *recipe*, with
    the recipes, or None.

    ``columns``: the record columns a study's tier holds fixed for every trial it compares (the trial's ``train``
    section, and where a study says so its task fields or a model field such as the head count); a column the
    table lacks is not compared, a missing value is a value. Every tier trains the models it compares with one
    recipe, so a table of two is two tiers' records merged, or cells retrained after missing the competence gate
    under the same cell names; the most common recipe is no answer either, since the engine's gate leaves out
    the models that missed it and runs the rule again, which can move the most common recipe. Output: (the
    reason, naming each recipe by the columns that differ and its number of trials; the recipes as a list of
    ``{column: value}``).
    """
    found = distinct_settings(rows, columns)
    if found is None:
        return None
    recipes, said = found
    return (f"the compared trials hold {len(recipes)} training recipes ({said}): the study trains every model of a "
            "tier with one recipe and compares cells of one recipe, so neither the comparison across recipes nor a "
            "choice of one of them is the study's (a model that missed the competence gate under one would be "
            "replaced by another's records); decide each recipe's records on their own"), recipes


#: How many wrongly counted records :func:`param_count_mismatch` names in its reason (all are in its list).
SHOWN_MISCOUNTS = 5


def param_count_mismatch(rows: pd.DataFrame, expected: Callable[[Mapping[str, Any]], int], column: str = "n_params",
                         describe: Sequence[str] = ()) -> tuple[str | None, list[dict[str, Any]]]:
    """Whether the parameter counts recorded in ``rows`` are the counts their configurations give.

    A rule that compares parameter counts (a parameter ratio, an equal-parameter check) reads them from the
    table; a record whose count is wrong (a student recorded at a third of its size, a count copied from another
    model) moves the comparison, and nothing else in the table would show it. So each deciding row's count is
    recomputed from its own config columns by the study's counter and must match exactly.

    ``rows``: the rule's deciding rows (each row a record); ``expected``: the study's counter, ``row -> int``,
    given the row as a dict without its missing (NaN / None) entries, so that a counter reads an absent config
    column at the trial config's default (``row.get("heads", 2)``); it may raise ``ValueError``, ``KeyError`` or
    ``TypeError`` for a config it cannot size. ``column``: the recorded count the rule compares; ``describe``:
    config columns that name a row in the reason beside its ``trial_id``.

    Output: (reason or None, one entry per mismatched row: ``{"trial_id", "recorded", "expected", <describe>}``,
    ``expected`` None where the counter could not size the row). Recorded and expected must be the same integer;
    a recorded NaN is a mismatch (the count was not recorded, so it cannot be checked).
    """
    wrong: list[dict[str, Any]] = []
    for idx, row in rows.iterrows():
        cfg = {str(k): v for k, v in row.items() if not _empty_cell(v)}
        try:
            want: int | None = int(expected(cfg))
            why = None
        except (ValueError, KeyError, TypeError) as err:
            want, why = None, f"{type(err).__name__}: {err}"
        got = pd.to_numeric(pd.Series([row.get(column)]), errors="coerce").iloc[0]
        if want is not None and np.isfinite(got) and float(got) == float(want):
            continue
        entry = {"trial_id": str(row["trial_id"]) if "trial_id" in row and not _empty_cell(row["trial_id"])
                 else f"row {idx}", "recorded": to_python(got) if np.isfinite(got) else None, "expected": want}
        entry |= {c: to_python(cfg[c]) for c in describe if c in cfg}
        if why:
            entry["error"] = why
        wrong.append(entry)
    if not wrong:
        return None, []

    def said(e: Mapping[str, Any]) -> str:
        config = ", ".join(f"{_WORDS.get(c, c)} {e[c]}" for c in describe if c in e)
        recorded = "no count" if e["recorded"] is None else f"{e['recorded']}"
        want = (f"the config cannot be sized ({e['error']})" if e["expected"] is None
                else f"its config gives {e['expected']}")
        return f"{e['trial_id']}{f' ({config})' if config else ''} recorded {recorded}, {want}"

    named = "; ".join(said(e) for e in wrong[:SHOWN_MISCOUNTS])
    more = f"; and {len(wrong) - SHOWN_MISCOUNTS} more" if len(wrong) > SHOWN_MISCOUNTS else ""
    return (f"{len(wrong)} of {len(rows)} deciding records carry a recorded {column} that is not the count their "
            f"configuration gives (recomputed from each record's config, exact match): {named}{more}; a comparison "
            "of parameter counts read from them is not a measurement, so nothing is decided until the records are "
            "corrected"), wrong


def _empty_cell(v: Any) -> bool:
    """Whether a table cell holds nothing (None or NaN; a list or other object holds something)."""
    if v is None:
        return True
    if isinstance(v, (list, tuple, dict, set, np.ndarray)):
        return False
    try:
        return bool(pd.isna(v))
    except (TypeError, ValueError):
        return False


def pooled_columns(rows: pd.DataFrame, cols: tuple[str, ...]) -> dict[str, list]:
    """Columns among ``cols`` that vary across ``rows``: name -> sorted values."""
    out = {}
    for c in cols:
        if c in rows and rows[c].nunique(dropna=True) > 1:
            out[c] = sorted(to_python(v) for v in rows[c].dropna().unique())
    return out


def _verdict(
    claim: str,
    statistic: str,
    verdict: str,
    triple: tuple[float, float, float],
    n_trials: int,
    details: dict[str, Any],
    reference: str | None,
    statement: str | None = None,
) -> dict[str, Any]:
    """Assemble the verdict dict in its fixed key order."""
    value, lo, hi = (float(x) for x in triple)
    return {
        "claim": claim,
        "statement": statement,
        "verdict": verdict,
        "statistic": statistic,
        "value": value,
        "ci_low": lo,
        "ci_high": hi,
        "n_trials": int(n_trials),
        "details": details,
        "reference": reference,
    }



def coerce_numeric(ok: pd.DataFrame, numeric: tuple[str, ...]) -> pd.DataFrame:
    """A copy with the ``numeric`` columns that are present coerced to numbers."""
    ok = ok.copy()
    for c in numeric:
        if c in ok:
            ok[c] = pd.to_numeric(ok[c], errors="coerce")
    return ok


def decide(triple: tuple[float, float, float], margin: float) -> str:
    """Supported when the whole interval lies above ``margin``, not supported when below it.

    ``triple``: ``(point, low, high)``, a 95% interval in the statistic's units; a NaN low end is
    inconclusive. Output: ``"supported"``, ``"not_supported"`` or ``"inconclusive"`` (the interval
    straddles the margin).
    """
    _, lo, hi = triple
    if math.isnan(lo):
        return "inconclusive"
    if lo > margin:
        return "supported"
    if hi < margin:
        return "not_supported"
    return "inconclusive"


def decide_below(triple: tuple[float, float, float], margin: float) -> str:
    """Supported when the whole interval lies below ``margin``, not supported when above it."""
    _, lo, hi = triple
    if math.isnan(lo) or math.isnan(hi):
        return "inconclusive"
    if hi < margin:
        return "supported"
    if lo > margin:
        return "not_supported"
    return "inconclusive"


NAN3 = (math.nan, math.nan, math.nan)


def study_as_dict(study: Any) -> dict[str, Any]:
    """Accept a plain mapping or a pydantic model (anything with model_dump)."""
    if hasattr(study, "model_dump"):
        return study.model_dump()
    return dict(study or {})


def _prepare(plugin: Any, df: pd.DataFrame, unrecorded: pd.DataFrame | None
             ) -> tuple[pd.DataFrame, pd.DataFrame, int, tuple[int, list[str]], int]:
    """(the study's ok rows, the whole table its guards see, records dropped as repeats of a unit,
    :func:`bindscale.core.rows.ambiguous_units` of the table, and records that repeat another's every measured
    value under another seed number).

    Every table is first reduced to one record per configuration and seed (:func:`bindscale.core.rows.one_per_unit`).
    """
    from bindscale.core.rows import ambiguous_units, copies_under_other_seeds, one_per_unit

    try:
        cls = plugin.trial_class
        config, axes = cls.column_names(), tuple(cls.AXES)
    except Exception:  # noqa: BLE001 - a plugin without a usable config class: exact copies only
        config, axes = (), ("\x00",)
    df, duplicates = one_per_unit(df, config, axes)
    df, copies = copies_under_other_seeds(df, config)
    ambiguity = ambiguous_units(df, config, axes) if config else (0, [])
    whole = df
    if unrecorded is not None and len(unrecorded):  # empty columns dropped: nothing to add, no dtype warning
        whole = pd.concat([df, unrecorded.dropna(axis=1, how="all")], ignore_index=True)
    return plugin.prepare_rows(df), whole, duplicates, ambiguity, copies


def compute_verdicts(
    df: pd.DataFrame, study: Mapping[str, Any], n_boot: int = 2000, seed: int = 0,
    unrecorded: pd.DataFrame | None = None,
) -> list[dict[str, Any]]:
    """Verdict dicts for the claims listed in ``study["verdicts"]``.

    Inputs: the results table (one row per trial; each claim's study prepares
    its ok rows), the study config as a dict (``verdicts``: claim -> threshold
    dict, missing keys take the claim's defaults; ``anchors``: claim ->
    reference text), bootstrap size and seed; ``unrecorded``: the planned
    trials that have no record, one row each (``trial_id``, ``status``
    :data:`MISSING`, config columns; :func:`bindscale.run.runner.build_outputs`).
    The guards see them beside the table: a planned size none of whose
    trials wrote a record is then lost, not unplanned.
    Output: a list, in the study's order, of dicts with keys ``claim,
    statement, verdict, statistic, value, ci_low, ci_high, n_trials, details,
    reference, statistic_text (the deciding statistic in words), title, source,
    side, study_kind``; ``verdict`` is "supported",
    "not_supported" or "inconclusive"; numbers are Python floats (NaN/inf
    possible; the report converts them for strict JSON). Claims no registered
    study defines are skipped.
    """
    from bindscale.core import registry
    from bindscale.core.study import resolve

    study = study_as_dict(study)
    rules = study.get("verdicts") or {}
    anchors = study.get("anchors") or {}
    prepared: dict[str, tuple] = {}
    out = []
    for name, params in rules.items():
        try:
            plugin, claim = registry.claim(name)
        except KeyError:
            continue
        if plugin.name not in prepared:
            prepared[plugin.name] = _prepare(plugin, df, unrecorded)
        ok, whole, duplicates, (ambiguous, missing_axes), copies = prepared[plugin.name]
        given = {k: v for k, v in dict(params or {}).items() if v is not None}
        merged = {**claim.defaults, **given}
        min_seeds = float(merged.pop("min_seeds", MIN_SEEDS))
        try:
            out_of_range = outside_range(ok, getattr(plugin, "metric_ranges", None) or {})
            decided = (Verdict("out_of_range", INCONCLUSIVE, NAN3, len(ok), {"reason": out_of_range, "seeds_per_cell": 0})
                       if out_of_range else resolve(claim.rule)(ok, merged, n_boot, seed))
            if not isinstance(decided, Verdict):
                raise TypeError(f"the rule returned {type(decided).__name__}, not a bindscale.kit.Verdict")
            stat, verdict, triple, n, details = (decided.statistic, decided.outcome, decided.interval,
                                                 decided.n_trials, decided.details)
            cells = details.get("deciding_cells") or []
            gate_lost: dict[str, dict[str, Any]] = {}
            ok_gated = ok
            if claim.gates and cells:
                # Gates per model: a deciding model that missed a gate is left out and the rule decides again
                # on the models that learned (the lost seeds count against min_seeds below).
                kept, gate_lost = gate_filter(ok, cells, claim.gates, merged)
                if gate_lost:
                    every_model = ci_entry(triple, n)
                    first = details
                    decided = resolve(claim.rule)(kept, merged, n_boot, seed)
                    stat, verdict, triple, n, details = (decided.statistic, decided.outcome, decided.interval,
                                                         decided.n_trials, decided.details)
                    # What the first pass reported and the second reports otherwise or not at all (every model's
                    # numbers, the models it saw) stays readable, apart: it includes the models that missed.
                    def changed(k: str) -> bool:
                        if k not in details:
                            return True
                        try:
                            return bool(details[k] != first[k])
                        except (ValueError, TypeError):  # arrays and the like: kept
                            return True

                    extra = {k: v for k, v in first.items() if k not in ("reason", "deciding_cells") and changed(k)}
                    if extra:
                        details["with_every_model"] = extra
                    # A cell whose every model missed a gate has no rows left, and a rule that picks its cells
                    # from the data (the largest budget, a family's shallowest member) then answers on others:
                    # the vanished cell stays a deciding cell with no seed used, so its loss is counted and named.
                    # (A second pass that names no cell is read on the first pass's cells, less their lost seeds.)
                    again = list(details.get("deciding_cells") or [])
                    named = {_cell_label(c["cell"]) for c in again}
                    cells = ([{**c, "n": 0} for c in cells
                              if _cell_label(c["cell"]) in gate_lost and _cell_label(c["cell"]) not in named] + again
                             if again else
                             [{**c, "n": max(0, int(c["n"]) - int((gate_lost.get(_cell_label(c["cell"])) or {})
                                                                  .get("lost", 0)))} for c in cells])
                    details["lost_to_gates_by_cell"] = gate_lost
                    details["value_with_every_model"] = every_model
                    ok_gated = kept
            short, lost = seed_loss(whole, cells, min_seeds, gate_lost)
            if lost:
                details["lost_seeds_by_cell"] = lost
            if short and verdict != INCONCLUSIVE:
                details["reason"] = f"{short} (its own result there: {_said(verdict)}, {details.get('reason', '')})"
                details["value_with_the_lost_seeds"] = ci_entry(triple, n)
                verdict, triple = INCONCLUSIVE, NAN3
            elif short:
                details["reason"] = f"{details.get('reason', '')}; {short}".lstrip("; ")
            if claim.gates:
                unlearned, gate_report = gate_check(ok_gated, cells, claim.gates, merged, gate_lost, every=ok)
                if gate_lost:  # the report shows every model's mean too, not only the ones that passed
                    _, every = gate_check(ok, cells, claim.gates, merged)
                    for mine, all_seeds in zip(gate_report["gates"], every["gates"]):
                        mine["cells_every_seed"] = all_seeds["cells"]
                details.update(gate_report)
                if not cells and verdict != INCONCLUSIVE:  # a rule's bug: it must say which models decided
                    unlearned = ("the rule named no deciding cell, so whether its models learned their training "
                                 "task cannot be checked")
                if unlearned:  # first in the reason, and no number from models that did not learn
                    own = f"its own result there: {_said(verdict)}, " if verdict != INCONCLUSIVE else ""
                    details["reason"] = f"{unlearned} ({own}{details.get('reason', '')})".replace(" ()", "")
                    if not all(math.isnan(float(x)) for x in triple):
                        details["value_of_unlearned_models"] = ci_entry(triple, n)
                    verdict, triple = INCONCLUSIVE, NAN3
            for guard in claim.guards:
                # A guard sees the whole table (failed and diverged trials too): e.g. the widest planned
                # model has no result, so the rule answered at a smaller scale than the study asked about;
                # planned trials without a record are rows of status MISSING there.
                hit = resolve(guard)(whole, ok, details, verdict)
                if hit:
                    reason, key = hit
                    if gate_lost and verdict == INCONCLUSIVE:
                        # Already undecided because models missed a gate: the guard saw the rule's second pass,
                        # which answered without them (a cell whose every model missed is "no usable trial" to
                        # it), so it is said after the gate, as a consequence, not as the first cause.
                        details["reason"] = (f"{details.get('reason', '')}; without the models that missed a "
                                             f"competence gate, {reason}").lstrip("; ")
                    else:
                        details["reason"] = (f"{reason} (its own result there: {_said(verdict)}, "
                                             f"{details.get('reason', '')})")
                    details[key] = ci_entry(triple, n)
                    verdict, triple = INCONCLUSIVE, NAN3
        except Exception as err:  # noqa: BLE001 - one broken rule must not cost the report of every other claim
            stat, verdict, triple, n = "rule_error", INCONCLUSIVE, NAN3, 0
            details = {"reason": f"the claim's rule or guard raised {type(err).__name__}: {err} (a bug in the "
                                 "rule, not a finding: please report it)",
                       "rule_error": f"{type(err).__name__}: {err}"}
            warnings.warn(f"verdict for {name}: {details['reason']}", RuntimeWarning, stacklevel=2)
        if ambiguous:  # said, not decided on: a hand-built table may tell its cells apart by other columns
            details["ambiguous_records"] = ambiguous
            ambiguity = (f"the table has no {', '.join(missing_axes)} column and {ambiguous} ok record(s) share "
                         "the recorded configuration and seed of another: if they are reruns rather than other "
                         "settings of a missing axis, their seeds are counted twice")
        if duplicates:
            details["duplicate_records"] = duplicates
            details["reason"] = (f"{details.get('reason', '')}; {duplicates} record(s) repeat the configuration and "
                                 "seed of another record (copied or rerun under another trial id): each "
                                 "configuration and seed counted once").lstrip("; ")
        if copies:
            # Copies filed as new seeds also shrink the planned seeds a cell is held to (min_seeds), so dropping
            # them is not enough: a table that holds them decides nothing until they are removed.
            details["copied_records"] = copies
            details["reason"] = (f"{copies} record(s) repeat every measured value of another record under another "
                                 "seed number (copies filed as new seeds, or a seed that changes nothing): no claim of "
                                 "this table is decided until they are removed (its own result without them: "
                                 f"{_said(verdict)}); {details.get('reason', '')}").rstrip("; ")
            if verdict != INCONCLUSIVE:
                details["value_without_copies"] = ci_entry(triple, n)
            verdict, triple = INCONCLUSIVE, NAN3
        spc = details.get("seeds_per_cell")
        if ambiguous:
            details["caveat"] = ambiguity
        if isinstance(spc, int) and 0 < spc < CONCLUSIVE_SEEDS:
            details["caveat"] = (f"{details['caveat']}; " if ambiguous else "") + (f"{spc} seeds in a deciding cell, fewer than {CONCLUSIVE_SEEDS}: the interval is "
                                 "an honest t / bootstrap interval but wide and not for conclusions (quick runs, "
                                 "or seeds removed by one of the study's filters)")
        bounded = within_bounds(triple, *getattr(claim, "bounds", (None, None)))
        if any(a != b for a, b in zip(bounded, triple) if a == a):
            details["interval_clipped"] = {"bounds": list(claim.bounds), "unclipped": [float(x) for x in triple]}
            triple = bounded
        # The reference is the source's headline (the claim's Anchor); a study file's own note (a pilot's
        # numbers) is kept beside it, never in its place.
        reference = claim.anchor.text if getattr(claim, "anchor", None) is not None else anchors.get(name)
        if anchors.get(name) and reference != anchors[name]:
            details["study_file_note"] = anchors[name]
        v = _verdict(name, stat, verdict, triple, n, details, reference, claim.statement)
        v.update(statistic_text=claim.statistic, title=claim.title, source=claim.source, side=claim.side,
                 study_kind=plugin.kind)
        out.append(v)
    return out
