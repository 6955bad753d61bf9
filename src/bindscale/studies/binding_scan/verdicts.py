"""Verdict rules of the ``binding_scan`` study; "supported" means the cited sources' claim holds.

Rows (:func:`prepare_rows`): ok trials of the decoder-only models, numeric columns coerced (the recurrent
encoder-decoders of ``binding_scan-lake2018.yaml`` and ``binding_scan-russin2019.yaml``, published models reproduced
in their own settings, are left out: no rule, gate or recipe check reads them, and the guards and seed counts look
up the decoders' cells only);
rotary positions are kept when present (every tier trains rotary models; learned positions are an ablation).
Generalization splits are every ``split`` but ``simple``. A *cell* is (split, model kind, budget, layers) within one recipe; its replicates are distinct seeds
(rows repeating a seed are averaged). Each deciding cell is named to the engine (``details["deciding_cells"]``)
by those columns, ``pos`` and every :data:`RECIPE` column the table records, so that the competence gate and the
seed count read that cell's own trials in the whole table, failed ones included, and no other recipe's.

One recipe (:func:`bindscale.kit.mixed_recipes`): the rows a rule compares (every model on the generalization
splits for the first rule, the plain models there for the second) must share one value of every :data:`RECIPE`
column: the head count, every field of the trial's ``task`` section but the split, and the whole ``train``
section. Else the claim is inconclusive and the reason names the recipes. Every tier trains every model with one
recipe and one head count (``binding_scan-full``: 5,000 steps of 32 at lr 5e-3, 2 heads; ``-paper``: 8 heads), so
two recipes are two tiers' records merged, or cells retrained after missing the gate. The rule before kept the
most common heads and step count and compared the rest silently: binding models trained at batch 128 and lr 1e-3
against plain ones at 32 and 5e-3 were decided "supported" with no note, and the engine's gate, which drops the
models that missed it and runs the rule again, could move the most common recipe under the same cell names.

Intervals. Exact match lives in [0, 1] and is bimodal across seeds on SCAN: some seeds solve a split, most fail
(Russin et al. call syntactic attention "high variance"). A cell of 8 seeds that happens to hold no successful
seed shows a small spread, and Welch's interval around its failures alone decided the wrong way. Every interval of
both rules is therefore Welch–Satterthwaite's on cells each given one pseudo-seed at 0 and one at 1 (Agresti &
Caffo 2000; :func:`bindscale.kit.bounded_strata_mean_ci`, the depth study's interval for the same problem): a
difference of two cells ``[a, b]`` with weights ``[1, −1]``, and the in-distribution gap as a paired difference
whose test cell gets the two pseudo-seeds (:func:`_gap_ci`). Simulated with the review's scripts (8 seeds per
cell, 400 tables each; the engine on each table):

- ``binding_beats_plain_on_scan``, plain model failing (Beta(1, 30)), syntactic attention bimodal (a seed succeeds
  with probability p, Beta(18, 2), else fails as the plain one), TP-Transformer failing, true difference exactly
  the margin 0.1: "not supported" in 34.5% of tables with Welch's interval (nominal at most 2.5%), 0% now
  ("supported" 0.25%, nominal at most 2.5%); both kinds bimodal at the margin: 13.25% before, 0% now; syntactic
  attention at a true difference of 0.174 (p = 0.2): 12.25% before, 0% now; at 0.26 (p = 0.3): 6% before, 0% now
  ("supported" 1.75%). Both kinds normal at the margin (sd 0.05): "supported" in 3.5% and "not supported" in
  0.25% before, 0% and 0% now.
- ``scale_partially_overcomes_binding``, 10% of the largest model's seeds failing the test split (true gap about
  0.10 against the margin 0.05): "scale closed the gap" (the opposite side) in 47.5% of tables before, 0% now;
  1 in 19 seeds failing (true gap about 0.05): 67.25% before, 0% now; a rise of truly 0 (both ends Beta(0.5,
  4), ``rise_margin`` 0): "supported" 2% and "does not rise" 2.75% before, 0% and 0% now.

The first and fifth of these rates are checked again, on 300 tables each, by the slow test
``test_bimodal_error_rates_simulated``. What the adjustment costs (8 seeds per cell, 200 tables each, the rules
called directly): against a failing plain model (Beta(1, 30))
and a failing TP-Transformer, "supported" in 100% of tables when syntactic attention scores like Russin et al.'s
91% in every seed (N(0.9, 0.05)) or succeeds in every seed (Beta(18, 2)), 65% when 80% of its seeds succeed (mean
0.73), 19% at 60% (mean 0.55), 2% at 40% (mean 0.38); binding models at 0.5 and 0.4 against a plain one at 0.1
(sd 0.05, a difference four times the margin) in 0% (the pseudo-seeds weigh most where a cell's own spread is
small). "Not supported" in 100% of tables with binding models at 0.2 and 0.1 against a plain one at 0.6 (sd 0.05),
never when all three fail alike. The sweep (smallest Beta(0.5, 8)): "supported" in 99.5% of tables when the largest
scores N(0.6, 0.1) beside in-distribution 0.985, 10% when it is bimodal with 60% of its seeds succeeding; a
largest model within a point of its in-distribution exact match in every seed: inconclusive in every table at 8
seeds, "scale closed the gap" in every table at 100 seeds (100 tables).

The refusals of 8 clean seeds are not the adjustment's artefacts: 8 clean seeds are compatible with 31% of
seeds failing (``1 − 0.05^(1/8)``), so no 95% rule can read "every seed closes the gap" from them without
assuming the bimodality away; "scale closed the gap" needs a largest cell of about 70 seeds or more within a
point of their in-distribution exact match (``tests/studies/binding_scan/test_verdicts.py``: 100 seeds decide, 8
do not), and "does not rise" (both ends at 0.2) about 50.

- ``binding_beats_plain_on_scan``. Per generalization split ``s``: the *largest plain models* are the plain
  transformers at the largest plain budget on ``s``, every depth run there (P depths); each binding kind present on
  ``s`` (syntactic attention, TP-Transformer) is taken at its largest budget not above that one, every depth run
  there (K kind-and-depth candidates), and must have at most ``(1 + param_tolerance)`` times the smallest measured
  non-embedding parameter count of the largest plain models ("equal or fewer parameters": the shapes match budgets
  within 1%). For each candidate ``c`` and plain depth ``d``: ``D_cd = mean(acc_test | c) − mean(acc_test | d)``
  with the interval above at confidence ``1 − 0.05 / (K·P)`` (Bonferroni: the best candidate is chosen after seeing
  the data, and each is compared with every depth). A candidate *beats* the plain models when every ``D_cd`` lies
  above ``margin``; it is *beaten* when some ``D_cd`` lies below it. The split *holds* when a candidate beats them
  (the candidate of the highest weakest lower bound decides, with its weakest comparison); it *contradicts* when
  every candidate is beaten (no binding model beats the largest plain model by the margin; the candidate whose
  clearest contradiction has the highest upper bound decides). Supported when every split holds; not supported
  when any split contradicts (the one with the lowest upper bound decides); inconclusive otherwise. Every plain
  depth at the largest budget, not the most common one (the rule before, ties to the shallowest, ignored a depth-8
  plain model of the same budget scoring above the binding models and read "supported"): the claim is that a
  binding model exceeds the largest plain model, whichever depth it has. Comparing with the best plain depth by its
  observed mean would pick the winner of a noisy race and lean towards "not supported"; making the table
  inconclusive whenever the depths "disagree" would need a disagreement rule no source gives and would refuse
  tables where binding beats every depth. Comparing with each depth at the Bonferroni level is the test the claim
  needs (supported only when a binding model beats each) with both error rates controlled.
- ``scale_partially_overcomes_binding``. Per generalization split: the plain size sweep is the depth with
  the most budgets; ``rise = mean(acc_test | largest) − mean(acc_test | smallest)`` and ``gap = mean over the
  largest model's seeds of (acc_id − acc_test)``, with the intervals above. The split *holds* when the rise's
  interval lies above ``rise_margin`` and the gap's above ``gap_margin``; it *closes* when the gap's interval lies
  below ``gap_margin`` (scale took the plain model to its in-distribution accuracy: the finding is against binding
  being needed, ``not_supported_means`` "opposite"); it *does not rise* when the rise's interval lies below
  ``rise_margin`` (not supported, but not evidence that scale suffices: "missed_level"). Supported when every split
  holds; not supported when any split closes or does not rise (closing first); inconclusive otherwise.

Both rules are inconclusive, whatever the numbers, when a deciding cell has fewer than ``MIN_REPLICATES``
seeds, a NaN value or an accuracy outside [0, 1], when every seed of the compared cells sits within
:data:`~bindscale.kit.EXACT_MATCH_BAND` of the floor (0) or the ceiling (1) of exact match
(:func:`bindscale.kit.at_bound`), when the baseline leaves no room for the margin (:func:`bindscale.kit.no_room`;
for the first rule the best largest plain model), when the deciding cells are degenerate
(:func:`bindscale.kit.degenerate`, as in the depth study: every deciding cell with zero spread, or one value
everywhere; plain 0.0 against binding 1.0 in every seed read "supported" with the interval [1, 1] before, while one
flat cell beside varying ones, a plain model at 0.0 in every seed, is SCAN's usual outcome and still decides), and
when a deciding model missed the competence gate: the claims' :data:`~bindscale.studies.binding_scan.SCAN_GATE` on
``acc_id`` ≥ ``min_id_acc`` (0.95), which the engine checks per model on every deciding cell (a seed below it is
dropped and counts against ``min_seeds``). The guards make the claim inconclusive when a planned deciding model
(every plain depth at the largest planned plain budget, every binding kind at each of its planned depths, the
smallest or largest size of the sweep) has no usable trial, so that no surviving model stands in for it silently.
``binding_beats_plain_on_scan`` compares the recorded non-embedding parameter counts: a deciding record whose
``n_params_nonembed`` is not the count its config gives (:func:`expected_nonembed_params`, exact match;
:func:`bindscale.kit.param_count_mismatch`) makes it inconclusive, naming the records.
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
    SeqTrainConfig,
    Verdict,
    at_bound,
    bounded_strata_mean_ci,
    ci_entry,
    coerce_numeric,
    deciding_cell,
    degenerate,
    mean_ci,
    mixed_recipes,
    no_room,
    ok_rows,
    outside_range,
    param_count_mismatch,
    to_python,
)
from bindscale.models.binding_shapes import BINDING_KINDS, shape_for_budget

from . import CLAIMS
from .config import RNN_KINDS, BindingModelConfig, BindingTaskConfig, BindingTrial

#: Each claim in words (supported = the sources' claim holds).
STATEMENTS = {c.name: c.statement for c in CLAIMS}
NUMERIC = ("budget", "layers", "heads", "steps", "seed", "acc_test", "acc_id", "tok_acc_test", "tok_acc_id",
           "n_params_nonembed", "n_params")
#: The split that is in distribution by construction.
IN_DISTRIBUTION = "simple"
PLAIN = "transformer"
_NEEDED = ("split", "model", "budget", "layers", "seed")
#: Exact match lives in [0, 1]: the bounds of the Agresti–Caffo pseudo-seeds of every interval.
BOUNDS = (0.0, 1.0)


def _recipe_columns() -> tuple[str, ...]:
    """The record columns every compared trial must share: the head count and every field of the decoders' ``task``
    and ``train`` sections (:class:`~.config.BindingTaskConfig`, :class:`bindscale.kit.SeqTrainConfig`) but
    ``split``, which the rules compare per split. (The recurrent recipe's are left out: its rows never reach a rule.)"""
    paths = [f"{section}.{name}" for section, config in (("task", BindingTaskConfig), ("train", SeqTrainConfig))
             for name in config.model_fields]
    return ("heads", *(c for c in BindingTrial.config_columns({p: None for p in paths}) if c != "split"))


#: One recipe (:func:`bindscale.kit.mixed_recipes`): the head count, the task section's fields but the split
#: (``task.split_seed``, ``task.eval_seed``, ``n_test``, ``task.n_id``) and the whole ``train`` section (``steps``,
#: ``train.batch_size``, ``lr``, ``train.weight_decay``, ``train.warmup_steps``, ``train.grad_clip``,
#: ``train.precision``). The deciding cells are keyed by every one of them the table records.
RECIPE = _recipe_columns()


def prepare_rows(df: pd.DataFrame) -> pd.DataFrame:
    """Ok rows of the decoder-only models with the numeric columns coerced (missing ones added as NaN). The
    recurrent encoder-decoders' rows (:data:`~.config.RNN_KINDS`: the published models of
    ``binding_scan-lake2018.yaml`` and ``binding_scan-russin2019.yaml``) are left out: no claim is decided by them,
    and a table that holds them beside the decoders' is decided as one without them."""
    ok = coerce_numeric(ok_rows(df, NUMERIC), NUMERIC)
    if "model" in ok:
        ok = ok[~ok["model"].isin(RNN_KINDS)]
    return ok


def _inconclusive(stat: str, n: int, details: dict, reason: str) -> Verdict:
    details["reason"] = reason
    return Verdict(stat, "inconclusive", NAN3, n, details)


def _missing(rows: pd.DataFrame) -> str | None:
    for c in _NEEDED:
        if c not in rows or rows[c].isna().all():
            return f"column {c} is missing"
    return None


def _rope(ok: pd.DataFrame) -> pd.DataFrame:
    """Rotary rows when there are any (every tier trains rotary models; learned positions are an ablation)."""
    if "pos" in ok and (ok["pos"] == "rope").any():
        return ok[ok["pos"] == "rope"]
    return ok


def _one_recipe(stat: str, rows: pd.DataFrame, details: dict) -> Verdict | None:
    """The inconclusive verdict of rows that hold more than one recipe (:data:`RECIPE`), or None."""
    mixed = mixed_recipes(rows, RECIPE)
    if not mixed:
        return None
    details["recipes"] = mixed[1]
    return _inconclusive(stat, len(rows), details, mixed[0])


def _seed_means(rows: pd.DataFrame, col: str) -> np.ndarray:
    """One value per distinct seed (repeats averaged)."""
    return rows.groupby("seed")[col].mean().to_numpy(dtype=float)


def _bad_values(rows: pd.DataFrame, cols: tuple[str, ...]) -> str | None:
    """Why a deciding cell's values cannot be read: a column missing, NaN or infinite, or an accuracy outside
    [0, 1]; or None."""
    for c in cols:
        if c not in rows or not np.isfinite(rows[c].to_numpy(dtype=float)).all():
            return f"column {c} is missing, NaN or infinite in a deciding cell"
    return outside_range(rows, {c: BOUNDS for c in cols if c.startswith("acc_")})


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
    """A deciding cell's key: split, kind, budget, depth, positions and every recipe column the rows record, so
    that the engine's gates and seed counts read this cell's own trials in the whole table (failed ones too)."""
    cell = {"split": split, "model": kind, "budget": budget, "layers": layers}
    for c in ("pos", *RECIPE):
        if c in rows and rows[c].notna().any():
            cell[c] = to_python(rows[c].dropna().iloc[0])
    return cell


def _ci_text(t: tuple[float, float, float]) -> str:
    return f"{t[0]:+.3f} [{t[1]:+.3f}, {t[2]:+.3f}]"


def _diff_ci(a: np.ndarray, b: np.ndarray, confidence: float = 0.95) -> tuple[float, float, float]:
    """``mean(a) − mean(b)`` of two exact-match cells with one pseudo-seed at 0 and one at 1 in each
    (:func:`bindscale.kit.bounded_strata_mean_ci`; module docstring)."""
    return bounded_strata_mean_ci([a, b], [1.0, -1.0], bounds=BOUNDS, confidence=confidence)


def _gap_ci(acc_id: np.ndarray, acc_test: np.ndarray) -> tuple[float, float, float]:
    """Mean over seeds of ``acc_id − acc_test`` (paired) with the test cell's two Agresti–Caffo pseudo-seeds: a seed
    at test exact match 0 beside the cell's highest in-distribution exact match and one at 1 beside its lowest, i.e.
    pseudo-gaps at ``max(acc_id)`` and ``min(acc_id) − 1``, the bounds every seed's gap lies within
    (:func:`bindscale.kit.bounded_strata_mean_ci`; module docstring). In-distribution exact match is not adjusted:
    it is gated at 0.95 or more, near its ceiling, where no unseen mode hides."""
    d = acc_id - acc_test
    return bounded_strata_mean_ci([d], [1.0], bounds=(float(acc_id.min()) - 1.0, float(acc_id.max())))


def _flat(cells: list[np.ndarray]) -> str | None:
    """Why the deciding cells cannot carry a verdict because nothing in them varies over seeds
    (:func:`bindscale.kit.degenerate`, discrete: every cell flat, or one value everywhere), or None. One cell
    whose seeds all score 0.0 is SCAN's usual outcome and still decides; plain 0.0 against binding 1.0 in every
    seed of every cell is not a measurement of seed variation."""
    return degenerate(cells, discrete=True)


# ------------------------------------------------------------------ binding_beats_plain_on_scan --

def _label(kind: str, layers: float, depths: int) -> str:
    return kind if depths == 1 else f"{kind}, {layers:g} layers"


def binding_beats_plain_on_scan(ok: pd.DataFrame, thresholds: Mapping[str, float], n_boot: int = 2000,
                                seed: int = 0) -> Verdict:
    """A binding model against every plain model of the largest plain budget, per generalization split (module
    docstring)."""
    stat = "binding_minus_plain_acc"
    margin, tol = float(thresholds["margin"]), float(thresholds["param_tolerance"])
    if ok.empty or _missing(ok):
        return _inconclusive(stat, 0, {}, "no trials with split, model, budget, layers and seed")
    rows = _rope(ok)
    details: dict = {"margin": margin, "param_tolerance": tol}
    mixed = _one_recipe(stat, rows[rows["split"] != IN_DISTRIBUTION], details)
    if mixed:
        return mixed
    by_split: dict = {}
    results = []  # (split, deciding triple, contradicting triple or None, problem or None)
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
        problem = None
        # Every plain depth at the largest budget: the claim is against the largest plain model, whichever depth.
        plains: dict[float, np.ndarray] = {}
        plain_entry: dict = {}
        for layers in sorted(float(x) for x in top["layers"].dropna().unique()):
            g = top[top["layers"] == layers]
            problem = problem or _bad_values(g, ("acc_test", "acc_id", "n_params_nonembed"))
            compared.append(g)
            acc = _seed_means(g, "acc_test")
            plains[layers] = acc
            cells.append(deciding_cell(_cell(split, PLAIN, budget, layers, g), acc.size))
            spc.append(acc.size)
            plain_entry[f"{layers:g}"] = {"layers": layers, "acc": ci_entry(mean_ci(acc), acc.size),
                                          "acc_id": float(g["acc_id"].mean()),
                                          "params_nonembed": float(g["n_params_nonembed"].mean())}
        plain_params = min(e["params_nonembed"] for e in plain_entry.values())
        best_plain = max(plains, key=lambda L: (float(np.nanmean(plains[L])), -L))
        entry: dict = {"plain": {"budget": budget, "layers": best_plain, "layers_compared": sorted(plains),
                                 **{k: v for k, v in plain_entry[f"{best_plain:g}"].items() if k != "layers"},
                                 "by_layers": plain_entry},
                       "binding": {}}
        candidates = []  # (label, kind, budget, layers, rows)
        for kind in kinds:
            k_rows = srows[(srows["model"] == kind) & (srows["budget"] <= budget)]
            if k_rows.empty:
                problem = problem or f"{kind}: no model at or below the largest plain budget ({budget:g})"
                entry["binding"][kind] = {"model": kind, "problem": "no model at or below the largest plain budget"}
                continue
            k_budget = float(k_rows["budget"].max())
            k_rows = k_rows[k_rows["budget"] == k_budget]
            depths = sorted(float(x) for x in k_rows["layers"].dropna().unique())
            candidates += [(_label(kind, L, len(depths)), kind, k_budget, L, k_rows[k_rows["layers"] == L])
                           for L in depths]
        confidence = 1 - 0.05 / max(1, len(candidates) * len(plains))
        weakest: dict[str, tuple[float, float, float]] = {}  # per candidate: its comparison of lowest lower bound
        against: dict[str, tuple[float, float, float]] = {}  # per candidate: its comparison of lowest upper bound
        all_binding = []
        for label, kind, k_budget, k_layers, k_rows in candidates:
            bad = _bad_values(k_rows, ("acc_test", "acc_id", "n_params_nonembed"))
            problem = problem or bad
            compared.append(k_rows)
            b_acc = _seed_means(k_rows, "acc_test")
            params = float(k_rows["n_params_nonembed"].mean())
            all_binding.append(b_acc)
            spc.append(b_acc.size)
            cells.append(deciding_cell(_cell(split, kind, k_budget, k_layers, k_rows), b_acc.size))
            readable = not _bad_values(k_rows, ("acc_test",)) and not _bad_values(top, ("acc_test",))
            by_plain = {L: (_diff_ci(b_acc, p, confidence) if readable else NAN3) for L, p in plains.items()}
            weakest[label] = min(by_plain.values(), key=lambda t: t[1] if math.isfinite(t[1]) else -math.inf)
            against[label] = min(by_plain.values(), key=lambda t: t[2] if math.isfinite(t[2]) else math.inf)
            entry["binding"][label] = {"model": kind, "budget": k_budget, "layers": k_layers, "params_nonembed": params,
                                       "acc": ci_entry(mean_ci(b_acc), b_acc.size),
                                       "acc_id": float(k_rows["acc_id"].mean()),
                                       "diff": ci_entry(weakest[label], b_acc.size + plains[best_plain].size),
                                       "diff_by_plain_layers": {f"{L:g}": ci_entry(t, b_acc.size + plains[L].size)
                                                                for L, t in by_plain.items()},
                                       "confidence": confidence}
            if params > plain_params * (1 + tol):
                problem = problem or (f"{label} has {params:.0f} non-embedding parameters, more than the largest plain "
                                      f"model's {plain_params:.0f} by over {tol:g}")
        if min(spc[-(len(plains) + len(candidates)):]) < MIN_REPLICATES:
            problem = problem or f"a deciding cell has fewer than {MIN_REPLICATES} seeds"
        if all_binding and not problem:
            best_acc = plains[best_plain]
            problem = (at_bound({"the binding models": np.concatenate(all_binding),
                                 "the largest plain models": np.concatenate(list(plains.values()))},
                                band=EXACT_MATCH_BAND)
                       or no_room(best_acc, margin, name="the best largest plain model")
                       or _flat([*plains.values(), *all_binding]))
        if not weakest:
            by_split[split] = entry | {"problem": problem or "no binding model"}
            results.append((split, NAN3, None, by_split[split]["problem"]))
            continue
        order = [c[0] for c in candidates]
        best = max(weakest, key=lambda k: (weakest[k][1] if math.isfinite(weakest[k][1]) else -math.inf,
                                           weakest[k][0], -order.index(k)))
        entry["kind_used"] = best
        contra = None
        covered = {c[1] for c in candidates}
        if covered == set(kinds) and all(t[2] < margin for t in against.values()):
            contra = against[max(against, key=lambda k: against[k][2])]
        if problem:
            entry["problem"] = problem
        by_split[split] = entry
        results.append((split, weakest[best], contra, problem))
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
        details["reason"] = (f"on the {split} split no binding model beats every largest plain model by the margin "
                             f"{margin:g} (each one's interval lies below it against some plain model): {found}")
        return Verdict(stat, "not_supported", triple, n, details)
    problems = [r for r in results if r[3] is not None]
    if problems:
        split, _, _, why = problems[0]
        details["split_used"] = split
        return _inconclusive(stat, n, details, f"split {split}: {why}; {found}")
    split, triple, _, _ = min(results, key=lambda r: r[1][1] if math.isfinite(r[1][1]) else -math.inf)
    details["split_used"] = split
    if all(r[1][1] > margin for r in results):
        details["reason"] = (f"a binding model beats every largest plain model by more than {margin:g} on every split: "
                             f"{found}")
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
    models = "; ".join(f"{e['layers']:g} layers {e['acc']['value']:.3f}" for e in plain["by_layers"].values())
    return (f"{split}: largest plain model{'s' if len(plain['by_layers']) > 1 else ''} ({plain['budget']:g}, "
            f"{models}); {kinds or 'no binding model'}")


def planned_binding_model_missing(df: pd.DataFrame, ok: pd.DataFrame, details: Mapping, verdict: str):
    """Guard of ``binding_beats_plain_on_scan``: on every generalization split the study planned (all trials,
    failed and diverged included), the rule must have compared every planned plain depth at the planned largest
    plain budget and every planned binding kind at each of its planned depths (at its largest budget not above the
    plain one); else a surviving smaller plain model, a surviving plain depth, or one binding kind alone stood in
    for the plan (e.g. every TP-Transformer seed missed the gate and syntactic attention decided alone, or the
    depth-8 plain models missed it and the depth-2 ones were called the largest plain model)."""
    if not {"split", "model", "budget"} <= set(df.columns) or "by_split" not in details:
        return None
    rows = _rope(df.assign(budget=pd.to_numeric(df["budget"], errors="coerce"),
                           layers=pd.to_numeric(df["layers"], errors="coerce") if "layers" in df else np.nan))
    missing = []
    for split, g in rows[rows["split"] != IN_DISTRIBUTION].groupby("split"):
        plain = g[g["model"] == PLAIN]
        if plain.empty:
            continue
        want = float(plain["budget"].max())
        got = details["by_split"].get(split) or {}
        got_plain = got.get("plain") or {}
        if got_plain.get("budget") != want:
            missing.append(f"split {split}: the largest planned plain model ({want:g}) has no usable trial")
        else:
            have = set(got_plain.get("layers_compared") or ())
            missing += [f"split {split}: the planned plain model at {want:g}, {L:g} layers, has no usable trial"
                        for L in sorted(plain.loc[plain["budget"] == want, "layers"].dropna().unique()) if L not in have]
        binding = got.get("binding") or {}
        for kind in BINDING_KINDS:
            k = g[(g["model"] == kind) & (g["budget"] <= want)]
            if k.empty:
                continue
            kb = float(k["budget"].max())
            have = {(v.get("budget"), v.get("layers")) for v in binding.values() if v.get("model") == kind and "acc" in v}
            depths = sorted(k.loc[k["budget"] == kb, "layers"].dropna().unique()) or [math.nan]
            if not have:
                missing.append(f"split {split}: the planned {kind} has no usable trial")
            else:
                missing += [f"split {split}: the planned {kind} ({kb:g}, {L:g} layers) has no usable trial"
                            for L in depths if (kb, float(L)) not in have]
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
    rows = _rope(ok)
    details: dict = {"rise_margin": rise_margin, "gap_margin": gap_margin}
    plain = rows[rows["model"] == PLAIN]
    mixed = _one_recipe(stat, plain[plain["split"] != IN_DISTRIBUTION], details)
    if mixed:
        return mixed
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
        problem = _bad_values(pd.concat([small, large]), ("acc_test", "acc_id"))
        s_acc, l_acc = _seed_means(small, "acc_test"), _seed_means(large, "acc_test")
        l_id = _seed_means(large, "acc_id")
        readable = problem is None
        rise = _diff_ci(l_acc, s_acc) if readable else NAN3
        gap = _gap_ci(l_id, l_acc) if readable else NAN3
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
                              or _flat([s_acc, l_acc, l_id]))
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
