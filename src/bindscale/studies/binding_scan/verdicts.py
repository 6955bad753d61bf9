"""Verdict rules of the ``binding_scan`` study; "supported" means the cited sources' claim holds.

Rows (:func:`prepare_rows`): ok trials, numeric columns coerced. Rotary positions are kept when present,
then the most common heads and step count (:func:`bindscale.kit.restrict_to_mode`): cells of one training
length are compared. A *cell* is (split, model kind, budget, layers); its replicates are distinct seeds
(rows repeating a seed are averaged). Generalization splits are every ``split`` but ``simple``.

- ``binding_beats_plain_on_scan``. Per generalization split ``s``: the *largest plain model* is the plain
  transformer at the largest budget on ``s``, at its most common depth; each binding kind present on ``s``
  (syntactic attention, TP-Transformer) is taken at its largest budget not above that one, at its most
  common depth, and must have at most ``(1 + param_tolerance)`` times the plain model's measured
  non-embedding parameters ("equal or fewer parameters": the shapes match budgets within 1%). For each kind,
  ``D_k = mean(acc_test | kind) − mean(acc_test | largest plain)`` with Welch's interval at confidence
  ``1 − 0.05 / K`` (K kinds on the split: Bonferroni, since the best kind is chosen after seeing the data).
  The split *holds* when the kind with the highest ``D_k`` has its interval above ``margin``; it
  *contradicts* when every kind's interval lies below ``margin`` (no binding model beats the plain one by the
  margin). Supported when every split holds; not supported when any split contradicts (the one with the
  lowest upper bound decides); inconclusive otherwise.
- ``scale_partially_overcomes_binding``. Per generalization split: the plain size sweep is the depth with
  the most budgets; ``rise = mean(acc_test | largest) − mean(acc_test | smallest)`` (Welch interval) and
  ``gap = mean over the largest model's seeds of (acc_id − acc_test)`` (t interval). The split *holds* when
  the rise's interval lies above ``rise_margin`` and the gap's above ``gap_margin``; it *closes* when the
  gap's interval lies below ``gap_margin`` (scale took the plain model to its in-distribution accuracy: the
  finding is against binding being needed, ``not_supported_means`` "opposite"); it *does not rise* when the
  rise's interval lies below ``rise_margin`` (not supported, but not evidence that scale suffices:
  "missed_level"). Supported when every split holds; not supported when any split closes or does not rise
  (closing first); inconclusive otherwise.

Both rules are inconclusive, whatever the numbers, when a deciding cell has fewer than ``MIN_REPLICATES``
seeds or a NaN value, when every seed of the compared cells sits exactly at the floor (0) or the ceiling
(1) of exact match (:func:`bindscale.kit.at_bound`), when the baseline leaves no room for the margin
(:func:`bindscale.kit.no_room`), when every deciding cell has zero spread at a value strictly inside (0, 1)
(the signature of copied records, :func:`_copied`), and when a deciding model missed the competence gate:
the claims' :data:`~bindscale.studies.binding_scan.SCAN_GATE` on ``acc_id`` ≥ ``min_id_acc`` (0.95), which
the engine checks per model on every cell named in ``details["deciding_cells"]`` (a seed below it is
dropped and counts against ``min_seeds``). The guards make the claim inconclusive when a planned deciding
model (the largest plain model, a binding kind, the smallest or largest size of the sweep) has no usable
trial, so that no surviving model stands in for it silently. ``binding_beats_plain_on_scan`` compares the
recorded non-embedding parameter counts: a deciding record whose ``n_params_nonembed`` is not the count its config
gives (:func:`expected_nonembed_params`, exact match; :func:`bindscale.kit.param_count_mismatch`) makes it
inconclusive, naming the records.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
import pandas as pd

from bindscale.kit import (
    EXACT_MATCH_BAND,
    MIN_REPLICATES,
    NAN3,
    Verdict,
    at_bound,
    ci_entry,
    coerce_numeric,
    deciding_cell,
    mean_ci,
    mean_diff_ci,
    no_room,
    ok_rows,
    param_count_mismatch,
    restrict_to_mode,
)
from bindscale.models.binding_shapes import BINDING_KINDS, shape_for_budget

from . import CLAIMS
from .config import BindingModelConfig

#: Each claim in words (supported = the sources' claim holds).
STATEMENTS = {c.name: c.statement for c in CLAIMS}
NUMERIC = ("budget", "layers", "heads", "steps", "seed", "acc_test", "acc_id", "tok_acc_test", "tok_acc_id",
           "n_params_nonembed", "n_params")
#: The split that is in distribution by construction.
IN_DISTRIBUTION = "simple"
PLAIN = "transformer"
_FIXED = ("heads", "steps")
_NEEDED = ("split", "model", "budget", "layers", "seed")


def prepare_rows(df: pd.DataFrame) -> pd.DataFrame:
    """Ok rows with the numeric columns coerced (missing ones added as NaN)."""
    return coerce_numeric(ok_rows(df, NUMERIC), NUMERIC)


def _inconclusive(stat: str, n: int, details: dict, reason: str) -> Verdict:
    details["reason"] = reason
    return Verdict(stat, "inconclusive", NAN3, n, details)


def _missing(rows: pd.DataFrame) -> str | None:
    for c in _NEEDED:
        if c not in rows or rows[c].isna().all():
            return f"column {c} is missing"
    return None


def _fixed(ok: pd.DataFrame) -> tuple[pd.DataFrame, dict]:
    """Rotary rows when there are any, then the most common heads and step count."""
    rows = ok
    if "pos" in rows and (rows["pos"] == "rope").any():
        rows = rows[rows["pos"] == "rope"]
    return restrict_to_mode(rows, _FIXED)


def _seed_means(rows: pd.DataFrame, col: str) -> np.ndarray:
    """One value per distinct seed (repeats averaged)."""
    return rows.groupby("seed")[col].mean().to_numpy(dtype=float)


def _mode(values: pd.Series) -> float:
    """The most common value (ties: the smallest)."""
    counts = values.value_counts()
    return float(min(v for v, c in counts.items() if c == counts.max()))


def _nan_in(rows: pd.DataFrame, cols: tuple[str, ...]) -> str | None:
    for c in cols:
        if c not in rows or not np.isfinite(rows[c].to_numpy(dtype=float)).all():
            return f"column {c} is missing, NaN or infinite in a deciding cell"
    return None


def _copied(cells: list[np.ndarray]) -> str | None:
    """Why these cells cannot carry a verdict: every cell has zero spread over two or more seeds and some
    flat value lies strictly inside (0, 1) (copied records; a whole cell at exactly 0 or 1 is a real SCAN
    outcome), or None."""
    vals = [np.asarray(c, float) for c in cells if np.size(c)]
    if not vals or not all(v.size >= 2 and np.ptp(v) == 0 for v in vals):
        return None
    inside = sorted({float(v[0]) for v in vals if 0.0 < v[0] < 1.0})
    if not inside:
        return None
    return (f"every deciding cell has the same value in every seed ({', '.join(f'{x:g}' for x in inside)} strictly "
            "inside (0, 1)): not a measurement of seed variation")


def expected_nonembed_params(row: Mapping) -> int:
    """The ``n_params_nonembed`` a record's config gives its model: the shape of its kind, budget, depth and heads
    (:func:`bindscale.models.binding_shapes.shape_for_budget`; a column the table lacks at the trial config's
    default). ``row``: a results-table row as a dict without its missing entries.

    Raises:
        ValueError / KeyError / TypeError: a config that cannot be sized (no budget, an unknown kind).
    """
    model = BindingModelConfig.model_fields
    return shape_for_budget(str(row.get("model", model["kind"].default)), int(row["budget"]),
                            int(row.get("layers", model["n_layers"].default)),
                            int(row.get("heads", model["n_heads"].default))).n_params


def _cell(split: str, kind: str, budget: float, layers: float, rows: pd.DataFrame) -> dict:
    cell = {"split": split, "model": kind, "budget": budget, "layers": layers}
    if "pos" in rows and rows["pos"].notna().any():
        cell["pos"] = rows["pos"].iloc[0]
    return cell


def _ci_text(t: tuple[float, float, float]) -> str:
    return f"{t[0]:+.3f} [{t[1]:+.3f}, {t[2]:+.3f}]"


# ------------------------------------------------------------------ binding_beats_plain_on_scan --

def binding_beats_plain_on_scan(ok: pd.DataFrame, thresholds: Mapping[str, float], n_boot: int = 2000,
                                seed: int = 0) -> Verdict:
    """A binding model against the largest plain model, per generalization split (module docstring)."""
    stat = "binding_minus_plain_acc"
    margin, tol = float(thresholds["margin"]), float(thresholds["param_tolerance"])
    if ok.empty or _missing(ok):
        return _inconclusive(stat, 0, {}, "no trials with split, model, budget, layers and seed")
    rows, note = _fixed(ok)
    details: dict = dict(note) | {"margin": margin, "param_tolerance": tol}
    by_split: dict = {}
    results = []  # (split, best triple, contradicting triple or None, problem or None)
    cells: list[dict] = []
    compared: list[pd.DataFrame] = []  # the deciding rows, whose parameter counts are compared
    spc: list[int] = []
    for split in sorted(s for s in rows["split"].dropna().unique() if s != IN_DISTRIBUTION):
        srows = rows[rows["split"] == split]
        plain = srows[srows["model"] == PLAIN]
        kinds = [k for k in BINDING_KINDS if (srows["model"] == k).any()]
        if plain.empty or not kinds:
            by_split[split] = {"problem": "no plain model on this split" if plain.empty else "no binding model on this split"}
            results.append((split, NAN3, None, by_split[split]["problem"]))
            continue
        budget = float(plain["budget"].max())
        top = plain[plain["budget"] == budget]
        layers = _mode(top["layers"])
        top = top[top["layers"] == layers]
        entry: dict = {"plain": {"budget": budget, "layers": layers}, "binding": {}}
        problem = _nan_in(top, ("acc_test", "acc_id", "n_params_nonembed"))
        compared.append(top)
        p_acc = _seed_means(top, "acc_test")
        plain_params = float(top["n_params_nonembed"].mean())
        entry["plain"] |= {"acc": ci_entry(mean_ci(p_acc), p_acc.size), "acc_id": float(top["acc_id"].mean()),
                           "params_nonembed": plain_params}
        cells.append(deciding_cell(_cell(split, PLAIN, budget, layers, top), p_acc.size))
        spc.append(p_acc.size)
        confidence = 1 - 0.05 / len(kinds)
        triples: dict[str, tuple[float, float, float]] = {}
        all_binding = []
        for kind in kinds:
            k_rows = srows[(srows["model"] == kind) & (srows["budget"] <= budget)]
            if k_rows.empty:
                problem = problem or f"{kind}: no model at or below the largest plain budget ({budget:g})"
                entry["binding"][kind] = {"problem": "no model at or below the largest plain budget"}
                continue
            k_budget = float(k_rows["budget"].max())
            k_rows = k_rows[k_rows["budget"] == k_budget]
            k_layers = _mode(k_rows["layers"])
            k_rows = k_rows[k_rows["layers"] == k_layers]
            problem = problem or _nan_in(k_rows, ("acc_test", "acc_id", "n_params_nonembed"))
            compared.append(k_rows)
            b_acc = _seed_means(k_rows, "acc_test")
            params = float(k_rows["n_params_nonembed"].mean())
            triple = mean_diff_ci(b_acc, p_acc, confidence=confidence)
            triples[kind] = triple
            all_binding.append(b_acc)
            spc.append(b_acc.size)
            cells.append(deciding_cell(_cell(split, kind, k_budget, k_layers, k_rows), b_acc.size))
            entry["binding"][kind] = {"budget": k_budget, "layers": k_layers, "params_nonembed": params,
                                      "acc": ci_entry(mean_ci(b_acc), b_acc.size),
                                      "acc_id": float(k_rows["acc_id"].mean()),
                                      "diff": ci_entry(triple, b_acc.size + p_acc.size), "confidence": confidence}
            if params > plain_params * (1 + tol):
                problem = problem or (f"{kind} has {params:.0f} non-embedding parameters, more than the largest plain "
                                      f"model's {plain_params:.0f} by over {tol:g}")
            if min(b_acc.size, p_acc.size) < MIN_REPLICATES:
                problem = problem or f"a deciding cell has fewer than {MIN_REPLICATES} seeds"
        if p_acc.size < MIN_REPLICATES:
            problem = problem or f"a deciding cell has fewer than {MIN_REPLICATES} seeds"
        if all_binding and not problem:
            problem = (at_bound({"the binding models": np.concatenate(all_binding), "the largest plain model": p_acc},
                                band=EXACT_MATCH_BAND)
                       or no_room(p_acc, margin, name="the largest plain model")
                       or _copied([p_acc, *all_binding]))
        if not triples:
            by_split[split] = entry | {"problem": problem or "no binding model"}
            results.append((split, NAN3, None, by_split[split]["problem"]))
            continue
        best = max(triples, key=lambda k: (triples[k][0], -BINDING_KINDS.index(k)))
        entry["kind_used"] = best
        contra = None
        if len(triples) == len(kinds) and all(t[2] < margin for t in triples.values()):
            closest = max(triples, key=lambda k: triples[k][2])
            contra = triples[closest]
        if problem:
            entry["problem"] = problem
        by_split[split] = entry
        results.append((split, triples[best], contra, problem))
    details |= {"by_split": by_split, "deciding_cells": cells, "seeds_per_cell": int(min(spc)) if spc else 0}
    if not results:
        return _inconclusive(stat, len(rows), details, "no generalization split with a plain model")
    # "Equal or fewer parameters" is read off the recorded counts: each must be the one its record's config gives.
    miscount, wrong = (param_count_mismatch(pd.concat(compared), expected_nonembed_params, "n_params_nonembed",
                                            describe=("split", "model", "budget", "layers")) if compared else (None, []))
    if miscount:
        details["param_count_mismatch"] = wrong
        return _inconclusive(stat, len(rows), details, miscount)
    n = len(rows)
    found = "; ".join(_split_text(s, by_split[s]) for s, *_ in results)
    contradicting = [r for r in results if r[3] is None and r[2] is not None]
    if contradicting:
        split, _, triple, _ = min(contradicting, key=lambda r: r[2][2])
        details["split_used"] = split
        details["reason"] = (f"on the {split} split no binding model beats the largest plain model by the margin "
                             f"{margin:g} (every interval below it): {found}")
        return Verdict(stat, "not_supported", triple, n, details)
    problems = [r for r in results if r[3] is not None]
    if problems:
        split, _, _, why = problems[0]
        details["split_used"] = split
        return _inconclusive(stat, n, details, f"split {split}: {why}; {found}")
    split, triple, _, _ = min(results, key=lambda r: r[1][1] if math.isfinite(r[1][1]) else -math.inf)
    details["split_used"] = split
    if all(r[1][1] > margin for r in results):
        details["reason"] = f"a binding model beats the largest plain model by more than {margin:g} on every split: {found}"
        return Verdict(stat, "supported", triple, n, details)
    details["reason"] = f"on the {split} split the interval includes the margin {margin:g}: {found}"
    return Verdict(stat, "inconclusive", triple, n, details)


def _split_text(split: str, entry: Mapping) -> str:
    """One split's finding in numbers."""
    plain = entry.get("plain") or {}
    if "acc" not in plain:
        return f"{split}: {entry.get('problem', 'no comparison')}"
    kinds = ", ".join(f"{k} {v['acc']['value']:.3f} (minus plain {_ci_text((v['diff']['value'], v['diff']['ci_low'], v['diff']['ci_high']))})"
                      for k, v in (entry.get("binding") or {}).items() if "acc" in v)
    return (f"{split}: largest plain model ({plain['budget']:g}, {plain['layers']:g} layers) {plain['acc']['value']:.3f}; "
            f"{kinds or 'no binding model'}")


def planned_binding_model_missing(df: pd.DataFrame, ok: pd.DataFrame, details: Mapping, verdict: str):
    """Guard of ``binding_beats_plain_on_scan``: on every generalization split the study planned (all trials,
    failed and diverged included), the rule must have compared the planned largest plain budget and every
    planned binding kind; else a surviving smaller plain model, or one binding kind alone, stood in for the
    plan (e.g. every TP-Transformer seed missed the gate and syntactic attention decided alone)."""
    if not {"split", "model", "budget"} <= set(df.columns) or "by_split" not in details:
        return None
    rows = df.assign(budget=pd.to_numeric(df["budget"], errors="coerce"))
    if "pos" in rows and (rows["pos"] == "rope").any():
        rows = rows[rows["pos"] == "rope"]
    missing = []
    for split, g in rows[rows["split"] != IN_DISTRIBUTION].groupby("split"):
        plain = g[g["model"] == PLAIN]
        if plain.empty:
            continue
        want = float(plain["budget"].max())
        got = details["by_split"].get(split) or {}
        if (got.get("plain") or {}).get("budget") != want:
            missing.append(f"split {split}: the largest planned plain model ({want:g}) has no usable trial")
        for kind in BINDING_KINDS:
            if ((g["model"] == kind) & (g["budget"] <= want)).any() and "acc" not in (got.get("binding") or {}).get(kind, {}):
                missing.append(f"split {split}: the planned {kind} has no usable trial")
    if missing:
        return ("a planned deciding model has no usable trial (failed, diverged or missed the competence gate: "
                + "; ".join(missing) + ")", "value_without_planned_model")
    return None


# ------------------------------------------------------------ scale_partially_overcomes_binding --

def scale_partially_overcomes_binding(ok: pd.DataFrame, thresholds: Mapping[str, float], n_boot: int = 2000,
                                      seed: int = 0) -> Verdict:
    """The plain size sweep's rise and the largest model's in-distribution gap, per split (module docstring)."""
    stat = "plain_rise_or_gap"
    rise_margin, gap_margin = float(thresholds["rise_margin"]), float(thresholds["gap_margin"])
    if ok.empty or _missing(ok):
        return _inconclusive(stat, 0, {}, "no trials with split, model, budget, layers and seed")
    rows, note = _fixed(ok)
    details: dict = dict(note) | {"rise_margin": rise_margin, "gap_margin": gap_margin}
    plain = rows[rows["model"] == PLAIN]
    by_split: dict = {}
    results = []  # (split, rise, gap, outcome, problem)
    cells: list[dict] = []
    spc: list[int] = []
    for split in sorted(s for s in plain["split"].dropna().unique() if s != IN_DISTRIBUTION):
        p = plain[plain["split"] == split]
        layers = _sweep_depth(p)
        if layers is None:
            continue
        p = p[p["layers"] == layers]
        small_b, large_b = float(p["budget"].min()), float(p["budget"].max())
        small, large = p[p["budget"] == small_b], p[p["budget"] == large_b]
        problem = _nan_in(pd.concat([small, large]), ("acc_test", "acc_id"))
        s_acc, l_acc = _seed_means(small, "acc_test"), _seed_means(large, "acc_test")
        l_id = _seed_means(large, "acc_id")
        rise = mean_diff_ci(l_acc, s_acc)
        gap = mean_ci(l_id - l_acc)
        for b, g, v in ((small_b, small, s_acc), (large_b, large, l_acc)):
            cells.append(deciding_cell(_cell(split, PLAIN, b, layers, g), v.size))
            spc.append(v.size)
        entry = {"layers": layers, "smallest_budget": small_b, "largest_budget": large_b,
                 "acc_smallest": ci_entry(mean_ci(s_acc), s_acc.size), "acc_largest": ci_entry(mean_ci(l_acc), l_acc.size),
                 "acc_id_largest": float(l_id.mean()), "acc_id_smallest": float(small["acc_id"].mean()),
                 "rise": ci_entry(rise, s_acc.size + l_acc.size), "gap": ci_entry(gap, l_acc.size)}
        if min(s_acc.size, l_acc.size) < MIN_REPLICATES:
            problem = problem or f"a deciding cell has fewer than {MIN_REPLICATES} seeds"
        problem = problem or (at_bound({"the smallest plain model": s_acc, "the largest plain model": l_acc},
                                       band=EXACT_MATCH_BAND)
                              or no_room(s_acc, rise_margin, name="the smallest plain model")
                              or _copied([s_acc, l_acc, l_id]))
        outcome = None
        if gap[2] < gap_margin:
            outcome = "closed"
        elif rise[2] < rise_margin:
            outcome = "no_rise"
        elif rise[1] > rise_margin and gap[1] > gap_margin:
            outcome = "holds"
        entry["outcome"] = outcome or "undecided"
        if problem:
            entry["problem"] = problem
        by_split[split] = entry
        results.append((split, rise, gap, outcome, problem))
    details |= {"by_split": by_split, "deciding_cells": cells, "seeds_per_cell": int(min(spc)) if spc else 0}
    if not results:
        return _inconclusive(stat, len(plain), details, "no generalization split has plain models of two or more sizes")
    n = len(plain)
    found = "; ".join(_sweep_text(s, by_split[s]) for s, *_ in results)
    closed = [r for r in results if r[4] is None and r[3] == "closed"]
    if closed:
        split, _, gap, _, _ = min(closed, key=lambda r: r[2][2])
        details |= {"split_used": split, "not_supported_means": "opposite", "deciding": "gap"}
        details["reason"] = (f"on the {split} split the largest plain model reaches its in-distribution exact match "
                             f"(gap interval below {gap_margin:g}): scale closed the gap; {found}")
        return Verdict(stat, "not_supported", gap, n, details)
    flat = [r for r in results if r[4] is None and r[3] == "no_rise"]
    if flat:
        split, rise, _, _, _ = min(flat, key=lambda r: r[1][2])
        details |= {"split_used": split, "not_supported_means": "missed_level", "deciding": "rise"}
        details["reason"] = (f"on the {split} split test exact match does not rise with size by {rise_margin:g} "
                             f"(rise interval below it); {found}")
        return Verdict(stat, "not_supported", rise, n, details)
    problems = [r for r in results if r[4] is not None]
    if problems:
        details["split_used"] = problems[0][0]
        return _inconclusive(stat, n, details, f"split {problems[0][0]}: {problems[0][4]}; {found}")

    def weakest(r) -> tuple[float, tuple, str]:
        a, b = r[1][1] - rise_margin, r[2][1] - gap_margin
        return (a, r[1], "rise") if a <= b else (b, r[2], "gap")

    split_r = min(results, key=lambda r: weakest(r)[0] if math.isfinite(weakest(r)[0]) else -math.inf)
    _, triple, which = weakest(split_r)
    details |= {"split_used": split_r[0], "deciding": which}
    if all(r[3] == "holds" for r in results):
        details["reason"] = (f"on every split test exact match rises with size by more than {rise_margin:g} and the "
                             f"largest model stays more than {gap_margin:g} below its in-distribution exact match; {found}")
        return Verdict(stat, "supported", triple, n, details)
    details["reason"] = f"on the {split_r[0]} split an interval includes its margin; {found}"
    return Verdict(stat, "inconclusive", triple, n, details)


def _sweep_depth(p: pd.DataFrame) -> float | None:
    """The plain depth with the most budgets (ties: more rows, then the smaller depth); None without two budgets."""
    counts = p.groupby("layers")["budget"].nunique()
    if counts.empty or counts.max() < 2:
        return None
    rows = p.groupby("layers").size()
    return float(min(counts.index[counts == counts.max()], key=lambda d: (-rows[d], d)))


def _sweep_text(split: str, e: Mapping) -> str:
    r, g = e["rise"], e["gap"]
    return (f"{split}: plain {e['smallest_budget']:g} → {e['largest_budget']:g} test exact match "
            f"{e['acc_smallest']['value']:.3f} → {e['acc_largest']['value']:.3f} (rise "
            f"{_ci_text((r['value'], r['ci_low'], r['ci_high']))}), in-distribution {e['acc_id_largest']:.3f} (gap "
            f"{_ci_text((g['value'], g['ci_low'], g['ci_high']))})")


def planned_size_sweep_missing(df: pd.DataFrame, ok: pd.DataFrame, details: Mapping, verdict: str):
    """Guard of ``scale_partially_overcomes_binding``: on every generalization split with a planned plain size
    sweep (two or more budgets at one depth among all trials), the rule must have compared the planned
    smallest and largest budgets; else a surviving middle size stood in for an end of the sweep."""
    if not {"split", "model", "budget", "layers"} <= set(df.columns) or "by_split" not in details:
        return None
    rows = df.assign(budget=pd.to_numeric(df["budget"], errors="coerce"),
                     layers=pd.to_numeric(df["layers"], errors="coerce"))
    if "pos" in rows and (rows["pos"] == "rope").any():
        rows = rows[rows["pos"] == "rope"]
    plain = rows[(rows["model"] == PLAIN) & (rows["split"] != IN_DISTRIBUTION)]
    missing = []
    outside = []
    for split, g_all in plain.groupby("split"):
        layers = _sweep_depth(g_all)
        if layers is None:
            continue
        g = g_all[g_all["layers"] == layers]
        want = (float(g["budget"].min()), float(g["budget"].max()))
        got = details["by_split"].get(split)
        if got is None:
            missing.append(f"split {split}: no usable size sweep (planned {want[0]:g} to {want[1]:g})")
        elif (got["smallest_budget"], got["largest_budget"]) != want or got["layers"] != layers:
            missing.append(f"split {split}: compared {got['smallest_budget']:g} with {got['largest_budget']:g} at "
                           f"{got['layers']:g} layers, planned {want[0]:g} with {want[1]:g} at {layers:g}")
        # binding_beats_plain_on_scan reads the largest plain budget at any depth as "the largest plain model": a
        # sweep that stops below it would say "scale does not close the gap" of a smaller model than that one.
        big = g_all[g_all["budget"] > want[1]]
        if len(big):
            top = big[big["budget"] == big["budget"].max()]
            statuses = ", ".join(f"{n} {k}" for k, n in top["status"].astype(str).value_counts().items()) \
                if "status" in top else "?"
            outside.append(f"split {split}: plain budget {float(top['budget'].iloc[0]):g} at "
                           f"{', '.join(f'{v:g}' for v in sorted(top['layers'].dropna().unique()))} layers (its "
                           f"trials: {statuses}) is larger than the sweep's largest, {want[1]:g} at {layers:g} layers")
    if missing:
        return ("a planned end of the plain size sweep has no usable trial (" + "; ".join(missing) + ")",
                "value_without_planned_sweep")
    if outside:
        return ("a larger plain model lies outside the size sweep (" + "; ".join(outside) + "): it is the largest "
                "plain model binding_beats_plain_on_scan compares with, so the sweep's verdict would be about a "
                "smaller plain model than the study's largest", "value_below_largest_plain_model")
    return None
