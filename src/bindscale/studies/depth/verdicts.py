"""Verdict rules of the ``depth`` study; each claim is named after what its source asserts, so
"supported" means the source is right (:data:`STATEMENTS`).

Rows (:func:`prepare_rows`): ok trials, numeric columns coerced. A *cell* is (split, budget, layers) in one model
configuration (positions and heads, :data:`MODEL_FIXED`) and one training budget (``steps`` and
``train.batch_size`` where recorded); its replicates are distinct seeds (rows repeating a cell and seed are
averaged). Every deciding cell is keyed by all of these, so the engine's per-model competence gate and seed counts
read that cell's own rows in the whole table. Generalization splits are every ``split`` label but ``simple``
(SCAN's random split, in distribution by construction).

One model configuration (:func:`mixed_models`): the deciding cells of every tier are rotary
(:data:`PLANNED_POS`; learned absolute positions are the study's side comparison on the length split), so the rules
read the rotary rows wherever the table has any; the rows they compare must then share one number of heads (and
one ``pos`` where none is rotary), else the claim is inconclusive and the reason names the configurations.
Taking the most common configuration was the rule before, and a reviewer showed why it cannot stand: the engine's
gate leaves out the models that missed it and runs the rule again, and on a table of a heads=2 family (three
of its eight deep seeds below the gate) beside a heads=4 family the second pass found heads=4 the most common and
decided on it, a configuration the first pass had not chosen. No tier plans two head counts, so such a table is
records of several designs merged; each configuration's own records decide it.

One training recipe (:func:`mixed_recipes`): the rows a rule compares must share one value of every column of
the trial's ``train`` section (:data:`RECIPE`), else the claim is inconclusive and the reason names the recipes.
Every tier trains every model with one recipe (700 steps of 32 in ``depth.yaml``, 5,000 of 32 in
``depth-full.yaml``, 20,000 of 128 in ``depth-paper.yaml``: equal steps and sequences across depths is the fair
comparison), so a table of two recipes is two tiers' records merged, or cells retrained longer after missing the
competence gate. Deciding such a table on its most common recipe was the rule before, and a reviewer would not
accept it, for the reason above: a family whose deepest members missed the gate at 2,000 steps was decided by their
4,000-step records under the same cell names. Deciding each recipe and combining the answers would need a rule for
recipes that disagree that no source gives; a recipe's own table (``bindscale report`` on its records) decides it.

- ``deeper_composes_better_at_equal_params`` (Petty et al. 2024). A *family* is one (split, budget) with at
  least two depths: an iso-parameter family, whose deepest and shallowest members are compared. The claim is
  about every family ("the deepest member of an iso-parameter family beats the shallowest"), so each family is
  decided on its own: ``D_{s,b} = mean(acc_test | deepest, b) − mean(acc_test | shallowest, b)`` with a
  Welch–Satterthwaite interval on groups adjusted after Agresti & Caffo 2000 (one pseudo-seed at 0 and one at 1
  in each member, :func:`bindscale.verdicts.stats.bounded_strata_mean_ci`): an exact-match cell of few seeds
  that happens to hold no successful seed is not read as certain failure. With ``F`` families on a split each
  interval is at confidence ``1 − 0.05/F`` (Bonferroni, :data:`ALPHA`: 97.5% for ``depth.yaml``'s two
  length families, 95% for a split of one family, as every split of ``depth-full`` and ``depth-paper``), so that
  a split of more families is not more likely to be read as contradicting the claim by chance. A family
  *holds* when its interval lies above ``margin`` and *contradicts* when below; a split holds when every family
  holds and contradicts when any family contradicts. Averaging over the budgets, the rule before, hid a
  contradicting family: deep 0.95 against shallow 0.05 at 25k beside deep 0.30 against shallow 0.60 at 100k read
  "supported" in 100 of 100 tables (the 100k family alone: "not supported" in 85); decided per family it is
  supported in none (not supported in 4, the rest inconclusive: a gap of 0.3 at 8 seeds seldom clears the 97.5%
  interval). Supported when every family of every generalization split holds; not supported when any family
  contradicts (the one with the lowest upper bound decides); inconclusive otherwise. *The reported number* is
  one family's difference with its interval (at its Bonferroni level, ``details["confidence"]``), the one that
  decides: the contradicting family, else the weakest family (lowest lower bound), so the number and the
  verdict never disagree, as the mean over budgets (+0.30 above) did; ``details["family_used"]`` names it and
  every family's difference is in ``by_split`` (a split's ``diff`` is its own deciding family's). Each family is
  checked on its own: members whose non-embedding parameter counts differ by more than ``param_tolerance``
  (:data:`PARAM_TOLERANCE`, 5%) are no equal-parameter comparison; a member with fewer than ``MIN_REPLICATES``
  seeds decides nothing; both members within :data:`bindscale.kit.EXACT_MATCH_BAND` of the floor (or ceiling)
  in every seed measure the bound, not depth. Such a family cannot hold or contradict, and the claim is then
  inconclusive unless another family contradicts. The parameter counts are read from the records, so each
  deciding record's ``n_params_nonembed`` must be the count its config gives (:func:`expected_nonembed_params`,
  exact match; :func:`bindscale.kit.param_count_mismatch`), else the claim is inconclusive and the reason names
  the records. Guard (:func:`planned_family_missing`): inconclusive when a planned family's deepest or shallowest
  member, or a whole planned split or family, has no usable trial (no silent substitution of the surviving
  depths).
- ``seq2seq_fails_scan_splits`` (Lake & Baroni 2018). Plain sequence models fail the ``length`` and
  ``addprim_jump`` splits, so at the largest budget among the rows *every* depth run there must fail: each
  (split, depth) cell at that budget is decided, mean test exact match over seeds with the one-sample bounded
  interval (:func:`bindscale.verdicts.stats.bounded_mean_ci`: one pseudo-seed at 0 and one at 1, Student's t
  on the adjusted seeds), at confidence ``1 − 0.05/K`` with ``K`` depths on the split at that budget
  (Bonferroni, as for families). A cell *fails* when its interval lies below ``threshold`` and *solves* the
  split when above. Both splits must have usable trials at the largest budget, else inconclusive. Supported
  when every cell fails; not supported when any cell solves (the most clearly solved decides); inconclusive
  otherwise, the cell with the highest upper bound giving the number. The rule before read only the largest
  budget's most common depth, ties going to the shallowest, so a depth-8 model solving the length split (0.9)
  beside a depth-1 model was never read and the claim was "supported"; a model of any depth is a plain
  sequence model, so one that solves the split at the largest budget refutes the claim. Guard (:func:`largest_planned_model_missing`): inconclusive
  when the largest planned budget, or a depth planned at it on a decided split, has no usable trial. The tiers
  plan one depth at their largest size sweep budget except ``depth-paper``, whose families sit at its largest
  budget, so there every family depth (1 to 16) is a deciding cell of this claim too.

Test accuracies are read on a fixed, seeded subsample of each test set (``task.n_test``, 300 in the
default study), the same examples for every trial, so the intervals are over training seeds and do
not include the sampling error of that subsample (a binomial standard error of at most 2.9
percentage points per trial at 300 examples).

Coverage (simulated in ``tests/studies/depth/test_coverage.py``, run with ``-m slow``; 4000 draws, nominal 95%):
exact match is bounded and, on SCAN, skewed or bimodal across seeds. At 8 seeds Student's t interval of a single
cell undercovered there (0.84 on Beta(0.3, 3) draws, 0.77 on Beta(0.2, 5)); Hall's skewness-corrected t
(:func:`bindscale.verdicts.stats.mean_ci`) covers 0.91 on Beta(0.3, 3), 0.88 on Beta(0.2, 5), 0.95 on the
symmetric Beta(5, 5) and still only 0.72 when 15% of seeds succeed (bimodal: not fixable from 8 values). The
plain Welch–Satterthwaite difference covered 0.89 for two skewed groups of different shape (add-jump, one budget),
0.94 for four skewed groups without effect (length, two budgets), 0.976 for two bimodal groups without effect,
0.72 for a bimodal deep member against a failing shallow one, and 0.737 when a unimodal deep member has the mean
of a bimodal shallow one, where it read "deeper is better" in 26% of tables without any effect (a shallow cell
whose 8 seeds hold none of its 15% successes).

The bounded difference the first rule uses covers 0.998-1.00 on those six draws at 5 and 8 seeds, and reads
"deeper is better" in at most 0.03% of the tables without an effect. It is not that conservative everywhere: where
the seeds already sit at the bounds (U-shaped Beta(0.5, 0.5) and Beta(0.1, 0.1), Bernoulli(0.5): a seed solves
the split or it does not) the pseudo-seeds add little, and without an effect it covers 0.974-0.987 at 8 seeds
(0.979-0.997 at 5) and reads "deeper is better" in 0.6-1.4% of tables at 8 seeds; with more seeds it tends to its
nominal level, covering 0.9455-0.973 at 16 to 48 seeds and reading "deeper is better" in 1.35-2.8% at 16 to 48
(the one-sided nominal is 2.5%). Over a split's families, the Bonferroni level keeps a split without any effect
from reading "not supported" more often with more families: 2.05% of splits of two Bernoulli(0.5) families (the
same as at 95% each: discrete draws move little between the levels) and at most 1% of splits of four, where
every family at 95% would say it in up to 4.5%; 0.35-0.55% for U-shaped families (1.5-2.25% at 95% each). Power is
what the conservative interval costs: against a failing shallow member (Beta(1, 50)), a deep member at mean exact
match 0.4 is found in 0.76 of tables at 8 seeds (0.004 at 5, 1.00 at 12) and at 0.3 in 0.11 (0.89 at 12) for a
split of one family; each of two families (97.5%) finds 0.4 in 0.36 at 8 seeds (0.94 at 0.5, 1.00 at 12 seeds), so
the deciding cells of ``depth-full`` hold 8 seeds and its splits one family each. A seed bootstrap
(``scipy.stats.bootstrap``, BCa or percentile, 999 resamples) covers no better than t on these draws.

The second rule's single cell (8 seeds): Hall's t, the interval before, read a bimodal cell (seeds at 0.05 or
0.95) whose true mean equals a threshold of 0.2 as failing it in 22.8% of cells (16.5% of tables through the whole
rule in the review), and one at a true mean of 0.32 in 5.8% (6.25% of tables), a cell that holds none of its
successful seeds being read as certain failure. The bounded interval covers 0.987-1.00 on every draw above
(Bernoulli(0.5): 0.995) and reads a cell at or above the threshold as failing it in at most 0.4% of cells (0% at
0.2 and at 0.32; 0.4% at 0.5, as Hall's). Its price: eight seeds that all score 0 give ``[0, 0.326]``, so a
threshold of 0.2 needs about 16 seeds in a cell before the claim can be supported; the default 0.5 is decided
at 8.

Both rules are inconclusive, whatever the numbers, when a deciding cell has fewer than
``MIN_REPLICATES`` seeds, when a deciding value is missing, NaN or infinite, when the deciding
models did not learn their training distribution (the claims' competence gate, :data:`.SCAN_GATE`,
checked by the engine on every model of every cell the rules name in ``details["deciding_cells"]``: a
seed whose in-distribution exact match ``acc_id`` is below ``min_id_acc``, 0.95 after Lake & Baroni, is
left out and counted against ``min_seeds``, and the rule decides again on the seeds left; failing out of
distribution says nothing about a model that did not learn), and when the deciding values are
degenerate (:func:`bindscale.verdicts.engine.degenerate`). For the first rule that is zero spread
in *every* deciding cell of a split, or one value everywhere (all zero included): one cell whose seeds all score
0.0 is the usual SCAN measurement (the shallow member failing in every seed) and still lets the family
hold or contradict. For the second rule it is :func:`_flat_pair`:
both columns flat across seeds and equal, or both flat with one strictly inside (0, 1); test 0.0
with in-distribution 1.0 in every seed (the failure Lake & Baroni describe) is a verdict, and so
is test 0.0 in every seed with a varying in-distribution accuracy. An all-zero table stays
inconclusive (one value everywhere; its in-distribution accuracy also misses the gate). Details carry every
family's or cell's number (``by_split``) and ``seeds_per_cell``; ``reason`` states the finding in numbers (each
family's difference with its interval and its two members, or each depth's exact match per split at the largest
budget).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
import pandas as pd

from bindscale.kit import SeqTrainConfig, distinct_settings
from bindscale.kit import mixed_recipes as engine_mixed_recipes
from bindscale.kit import (
    outside_range,
    param_count_mismatch,
    to_python,
    EXACT_MATCH_BAND,
    MIN_REPLICATES,
    NAN3,
    Verdict,
    at_bound,
    ci_entry,
    coerce_numeric,
    deciding_cell,
    degenerate,
    ok_rows,
    bounded_strata_mean_ci,
)
from bindscale.models.shapes import shape_for_budget
from bindscale.kit import bounded_mean_ci

from . import CLAIMS
from .config import DepthModelConfig, DepthTrial

#: Each claim in words (supported = the source's claim holds).
STATEMENTS = {c.name: c.statement for c in CLAIMS}
NUMERIC = ("budget", "layers", "seed", "acc_test", "acc_id", "tok_acc_test", "tok_acc_id", "n_params_nonembed",
           "n_params")
#: The split that is in distribution by construction (never a generalization split).
IN_DISTRIBUTION = "simple"
#: Splits the scale claim is decided on (Lake & Baroni's two failures).
FAILED_SPLITS = ("length", "addprim_jump")
#: The positions of every tier's deciding cells (:class:`.config.DepthModelConfig`'s default); learned absolute
#: positions are the side comparison on the length split.
PLANNED_POS = "rope"
#: The model-config fields every deciding cell holds fixed beside its split, budget and depth: one value each among
#: the rows a rule compares (:func:`mixed_models`; ``pos`` after keeping :data:`PLANNED_POS`), and every deciding
#: cell is keyed by them, so the engine's per-model gate filters inside the configuration the rule decided on.
MODEL_FIXED = ("pos", "heads")
#: The record columns of a trial's ``train`` section (:class:`bindscale.kit.SeqTrainConfig`): one value of each is
#: one training recipe, and the rows a rule compares share one (:func:`mixed_recipes`). ``train.pack`` too: a packed
#: step computes the padded one's loss and gradients up to float rounding, but the runs drift apart as rounding
#: grows over 5,000 steps (lr 5e-3), and packed learning at depth-full's gate is not shown equal to padded
#: (depth-full.yaml's comments: one add-jump seed passed padded, 0.98, and missed packed, 0.94). Every tier trains
#: padded; a table of both is two runs' records merged (one run with ``--set train.pack=true``), decided per run like
#: any other two recipes. Records from before the field read ``False`` (its default).
#: Derived from the section's fields (``steps``, ``train.batch_size``, ``lr``, ``train.weight_decay``,
#: ``train.warmup_steps``, ``train.grad_clip``, ``train.precision``, ``train.pack``), so a field added to the section
#: joins the recipe without a second list to update.
RECIPE = tuple(DepthTrial.config_columns({f"train.{name}": None for name in SeqTrainConfig.model_fields}))
#: The recipe columns in every deciding cell's key: the training budget, ``steps`` of ``batch_size`` sequences, so
#: that the engine's gates and seed counts read the cell's own recipe in the whole table (failed trials too).
BUDGET_KEYS = ("steps", "train.batch_size")
#: The family-wise error of the intervals a verdict reads: with ``F`` families on a split (or ``F`` depths at the
#: largest budget), each interval is at confidence ``1 − ALPHA / F`` (Bonferroni).
ALPHA = 0.05


#: How far apart (relative, non-embedding parameters) a family's deepest and shallowest members may be and still
#: count as equal-parameter: 5%, the tolerance the binding_scan study allows its iso-parameter models; the depth
#: families' shapes are within 0.3% of their budgets (``shape_for_budget``).
PARAM_TOLERANCE = 0.05


def prepare_rows(df: pd.DataFrame) -> pd.DataFrame:
    """Ok rows with the numeric columns coerced (missing ones added as NaN)."""
    return coerce_numeric(ok_rows(df, NUMERIC), NUMERIC)


def _seed_means(rows: pd.DataFrame, col: str) -> np.ndarray:
    """One value per distinct seed (rows repeating a seed averaged)."""
    return rows.groupby("seed")[col].mean().to_numpy(dtype=float)


def _bad(rows: pd.DataFrame, cols: tuple[str, ...]) -> str | None:
    for c in cols:
        if c not in rows or rows[c].isna().all():
            return f"column {c} is missing"
        v = rows[c].to_numpy(dtype=float)
        if not np.isfinite(v).all():
            return f"column {c} has NaN or infinite values in a deciding cell"
    return outside_range(rows, {c: (0.0, 1.0) for c in cols if c.startswith(("acc_", "tok_acc_"))})


def _inconclusive(stat: str, n: int, details: dict, reason: str) -> Verdict:
    details["reason"] = reason
    return Verdict(stat, "inconclusive", NAN3, n, details)


def expected_nonembed_params(row: Mapping) -> int:
    """The ``n_params_nonembed`` a record's config gives its transformer: the shape of its budget, depth and heads
    (:func:`bindscale.models.shapes.shape_for_budget`; heads at the trial config's default where the table lacks
    the column). ``row``: a results-table row as a dict without its missing entries.

    Raises:
        ValueError / KeyError / TypeError: a config that cannot be sized (no budget, a budget too small).
    """
    heads = row.get("heads", DepthModelConfig.model_fields["n_heads"].default)
    return shape_for_budget(int(row["budget"]), int(row["layers"]), int(heads)).n_params


def _said_value(v) -> str:
    return "not recorded" if v is None else f"{v:g}" if isinstance(v, (int, float)) else str(v)


def mixed_recipes(rows: pd.DataFrame) -> tuple[str, list[dict]] | None:
    """Why ``rows`` (the rows a rule compares) cannot be decided because they hold more than one training recipe
    (:data:`RECIPE`), with the recipes, or None: the engine's check (:func:`bindscale.verdicts.engine.mixed_recipes`)
    on depth's recipe columns. See the module docstring for why not the most common one."""
    return engine_mixed_recipes(rows, RECIPE)


def mixed_models(rows: pd.DataFrame) -> tuple[str, list[dict]] | None:
    """Why ``rows`` (the rows a rule compares, at the planned positions) cannot be decided because they hold more
    than one model configuration beside split, budget and depth (:data:`MODEL_FIXED`: the number of heads, or
    the positions where no row has the planned ones), with the configurations, or None. See the module docstring
    for why not the most common one."""
    found = distinct_settings(rows, MODEL_FIXED)
    if found is None:
        return None
    configs, said = found
    return (f"the compared trials hold {len(configs)} model configurations ({said}): every tier plans its "
            "deciding cells in one configuration, and the most common one is no choice a rule can keep (the "
            "engine's competence gate leaves out models and decides again, which could move it to another); "
            "decide each configuration's records on their own"), configs


def _planned_positions(rows: pd.DataFrame) -> tuple[pd.DataFrame, dict]:
    """The rows at the planned positions (:data:`PLANNED_POS`) where any row has them, with the note for the
    details (``pos_used``, ``pos_present`` and a ``restriction`` sentence) when the table holds others too."""
    if "pos" not in rows or not (rows["pos"] == PLANNED_POS).any() or rows["pos"].nunique(dropna=False) <= 1:
        return rows, {}
    present = sorted({_said_value(to_python(v)) for v in rows["pos"].astype(object).where(rows["pos"].notna(), None)})
    return rows[rows["pos"] == PLANNED_POS], {
        "pos_used": PLANNED_POS, "pos_present": present,
        "restriction": f"positions vary; the deciding cells are the planned {PLANNED_POS} ones (the others are the "
                       "study's side comparison)"}


def _cell_key(rows: pd.DataFrame) -> dict:
    """The model-config fields held fixed (:data:`MODEL_FIXED`) and the training budget (:data:`BUDGET_KEYS`) of
    a deciding cell's rows, as the table records them, for its key."""
    return {c: rows[c].dropna().iloc[0] for c in (*MODEL_FIXED, *BUDGET_KEYS) if c in rows and rows[c].notna().any()}


def _family_confidence(n_families: int) -> float:
    """Each family's interval level: ``1 − ALPHA / F`` (Bonferroni over the ``F`` families of a split)."""
    return 1.0 - ALPHA / max(n_families, 1)


def deeper_composes_better_at_equal_params(ok: pd.DataFrame, thresholds: Mapping[str, float], n_boot: int = 2000,
                                           seed: int = 0) -> Verdict:
    """Deepest minus shallowest member of every iso-parameter family, per generalization split (see the module
    docstring)."""
    stat = "deep_minus_shallow_acc"
    margin = float(thresholds["margin"])
    tol = float(thresholds.get("param_tolerance", PARAM_TOLERANCE))
    if ok.empty or "split" not in ok or _bad(ok, ("budget", "layers", "seed")):
        return _inconclusive(stat, 0, {}, "no trials with split, budget, layers and seed")
    rows, note = _planned_positions(ok)
    details: dict = dict(note)
    compared = rows[rows["split"] != IN_DISTRIBUTION]
    for check, key in ((mixed_recipes, "recipes"), (mixed_models, "model_configurations")):
        mixed = check(compared)
        if mixed:
            details[key] = mixed[1]
            return _inconclusive(stat, len(rows), details, mixed[0])
    by_split: dict = {}
    families = []  # (split, budget, triple, problem)
    seeds_per_cell = []
    decide_cells: list[dict] = []
    members: list[pd.DataFrame] = []  # the deciding rows, whose parameter counts are compared
    for split in sorted(s for s in compared["split"].dropna().unique()):
        srows = compared[compared["split"] == split]
        budgets = [b for b, g in srows.groupby("budget") if g["layers"].nunique() >= 2]
        if not budgets:
            continue
        confidence = _family_confidence(len(budgets))
        entry: dict = {"confidence": confidence, "families": len(budgets)}
        cells, mine = [], []
        for b in budgets:
            g = srows[srows["budget"] == b]
            deep, shallow = g[g["layers"] == g["layers"].max()], g[g["layers"] == g["layers"].min()]
            bad = _bad(pd.concat([deep, shallow]), ("acc_test", "acc_id"))
            if bad:
                return _inconclusive(stat, len(rows), details, f"split {split}, budget {b:g}: {bad}")
            d, s = _seed_means(deep, "acc_test"), _seed_means(shallow, "acc_test")
            seeds_per_cell += [d.size, s.size]
            cells += [d, s]
            decide_cells += [deciding_cell({"split": split, "budget": b, "layers": int(x["layers"].iloc[0]),
                                            **_cell_key(x)}, v.size)
                             for v, x in ((d, deep), (s, shallow))]
            members += [deep, shallow]
            triple = bounded_strata_mean_ci([d, s], [1.0, -1.0], bounds=(0.0, 1.0), confidence=confidence)
            fam = {"deepest": int(deep["layers"].max()), "shallowest": int(shallow["layers"].min()),
                   "acc_deepest": float(d.mean()), "acc_shallowest": float(s.mean()),
                   "acc_id_deepest": float(deep["acc_id"].mean()), "acc_id_shallowest": float(shallow["acc_id"].mean()),
                   # Petty et al. hold total parameters fixed; the families hold the non-embedding count, so both
                   # are reported.
                   "params_nonembed_deepest": float(deep["n_params_nonembed"].mean()),
                   "params_nonembed_shallowest": float(shallow["n_params_nonembed"].mean()),
                   "params_total_deepest": float(deep["n_params"].mean()),
                   "params_total_shallowest": float(shallow["n_params"].mean()),
                   "diff": ci_entry(triple, d.size + s.size)}
            # Equal parameters is the claim's premise (Petty et al. hold the budget fixed): members whose
            # non-embedding counts differ by more than the tolerance compare sizes as well as depths.
            deep_p, shallow_p = fam["params_nonembed_deepest"], fam["params_nonembed_shallowest"]
            gap = abs(deep_p - shallow_p) / max(min(deep_p, shallow_p), 1.0)
            if not gap <= tol:
                fam["problem"] = (f"budget {b:g}: the deepest member has {deep_p:.0f} non-embedding parameters and "
                                  f"the shallowest {shallow_p:.0f}, {gap:.1%} apart, beyond the tolerance {tol:.0%} "
                                  "of an equal-parameter comparison")
            elif min(d.size, s.size) < MIN_REPLICATES:
                fam["problem"] = f"budget {b:g}: a deciding cell has fewer than {MIN_REPLICATES} seeds"
            else:
                # Every deep and shallow seed within EXACT_MATCH_BAND of the floor (or ceiling): 0/300 against
                # 1/300 measures the bound, not depth.
                why = at_bound({"the deepest member": d, "the shallowest member": s}, band=EXACT_MATCH_BAND)
                if why:
                    fam["problem"] = f"budget {b:g}: {why}"
            entry[f"budget_{b:g}"] = fam
            mine.append([split, b, triple, fam.get("problem")])
        # discrete=True: a cell whose seeds all score 0.0 is SCAN's usual outcome (shallow models fail every seed),
        # so only every cell of the split flat, or one value everywhere, is degenerate; it takes every family.
        why = degenerate(cells, discrete=True)
        for fam_row in mine:
            if why and fam_row[3] is None:
                fam_row[3] = why
                entry[f"budget_{fam_row[1]:g}"]["problem"] = why
        problems = [r[3] for r in mine if r[3] is not None]
        if problems:
            entry["problem"] = problems[0]
        # The split's number: its most clearly contradicting family, else its weakest (lowest lower bound).
        contra = [r for r in mine if r[3] is None and r[2][2] < margin]
        pick = (min(contra, key=lambda r: r[2][2]) if contra else
                min(mine, key=lambda r: r[2][1] if math.isfinite(r[2][1]) else -math.inf))
        entry["decided_by"] = f"budget_{pick[1]:g}"
        entry["diff"] = entry[f"budget_{pick[1]:g}"]["diff"]
        by_split[split] = entry
        families += [tuple(r) for r in mine]
    miscount, wrong = (param_count_mismatch(pd.concat(members), expected_nonembed_params, "n_params_nonembed",
                                            describe=("split", "budget", "layers")) if members else (None, []))
    if miscount:
        details["param_count_mismatch"] = wrong
        return _inconclusive(stat, len(rows), details, miscount)
    details["by_split"] = by_split
    details["deciding_cells"] = decide_cells
    details["seeds_per_cell"] = int(min(seeds_per_cell)) if seeds_per_cell else 0
    details["margin"] = margin
    if not families:
        return _inconclusive(stat, len(rows), details, "no generalization split has a family of two or more depths")
    n = len(rows)
    found = {s: _split_text(s, e) for s, e in by_split.items()}

    def use(fam) -> tuple[float, float, float]:
        split, b, triple, _ = fam
        details["split_used"] = split
        details["family_used"] = {"split": split, "budget": to_python(b)}
        details["confidence"] = by_split[split]["confidence"]
        return triple

    contradicting = [f for f in families if f[3] is None and f[2][2] < margin]
    if contradicting:
        fam = min(contradicting, key=lambda f: f[2][2])
        triple = use(fam)
        details["reason"] = (f"{found[fam[0]]}: at budget {fam[1]:g} the deepest member does not beat the shallowest "
                             f"(interval below the margin {margin:g}); " + _others(found, fam[0]))
        return Verdict(stat, "not_supported", triple, n, details)
    problems = [f for f in families if f[3] is not None]
    if problems:
        split, b, _, why = problems[0]
        details["split_used"] = split
        return _inconclusive(stat, n, details, f"split {split}: {why}; " + "; ".join(found.values()))
    fam = min(families, key=lambda f: f[2][1] if math.isfinite(f[2][1]) else -math.inf)
    triple = use(fam)
    if all(f[2][1] > margin for f in families):
        details["reason"] = (f"the deepest member beats the shallowest by more than {margin:g} in every family of "
                             "every generalization split: " + "; ".join(found.values()))
        return Verdict(stat, "supported", triple, n, details)
    details["reason"] = (f"{found[fam[0]]}: at budget {fam[1]:g} the interval includes the margin {margin:g}; "
                         + _others(found, fam[0]))
    return Verdict(stat, "inconclusive", triple, n, details)


def _split_text(split: str, entry: Mapping) -> str:
    """One split's finding in numbers, family by family: "split length, deepest − shallowest test exact match:
    budget 25000 +0.120 [+0.050, +0.190] (depth 8 0.410 vs depth 1 0.290); budget 100000 ... (97.5% intervals,
    Bonferroni over 2 families)"."""
    fams = "; ".join(f"budget {k.removeprefix('budget_')} {f['diff']['value']:+.3f} [{f['diff']['ci_low']:+.3f}, "
                     f"{f['diff']['ci_high']:+.3f}] (depth {f['deepest']} {f['acc_deepest']:.3f} vs depth "
                     f"{f['shallowest']} {f['acc_shallowest']:.3f})"
                     for k, f in entry.items() if k.startswith("budget_"))
    level = (f" ({entry['confidence']:.1%} intervals, Bonferroni over {entry['families']} families)"
             if entry["families"] > 1 else "")
    return f"split {split}, deepest − shallowest test exact match: {fams}{level}"


def _others(found: Mapping[str, str], split: str) -> str:
    rest = [t for s, t in found.items() if s != split]
    return ("other splits: " + "; ".join(rest)) if rest else "no other generalization split"


def _flat_pair(acc: np.ndarray, acc_id: np.ndarray) -> str | None:
    """Why a largest-model cell's seeds cannot carry a verdict, or None.

    Zero spread at a bound is a floor or ceiling, not a broken pipeline: test exact match 0.0 and
    in-distribution exact match 1.0 in every seed is Lake & Baroni's textbook outcome. Degenerate:
    both columns flat and equal (one value everywhere), or both flat with one of them strictly
    inside (0, 1) (e.g. 0.1 and 0.9 in every seed: the signature of copied records)."""
    if acc.size < 2 or np.ptp(acc) or np.ptp(acc_id):
        return None
    a, i = float(acc[0]), float(acc_id[0])
    if a == i:
        return f"every deciding value is {a:g}: nothing varies"
    if not ({a, i} <= {0.0, 1.0}):
        return (f"test {a:g} and in-distribution {i:g} exact match in every seed (zero spread inside (0, 1)): "
                "not a measurement of seed variation")
    return None


def planned_family_missing(df: pd.DataFrame, ok: pd.DataFrame, details: Mapping, verdict: str):
    """Guard of ``deeper_composes_better_at_equal_params``: every planned family (generalization split ×
    budget with two or more depths among *all* trials, failed and diverged included, rotary positions)
    must be decided with its planned deepest and shallowest members. Otherwise the rule compared
    surviving depths (say 4 against 1 when every depth-8 trial failed), or dropped a split or budget,
    and did not test the claim the study planned. A split that was never run at all is not in the
    table; an unfinished run is flagged by the answer page (``n_missing``)."""
    if not {"split", "budget", "layers"} <= set(df.columns) or "by_split" not in details:
        return None
    rows = df.assign(budget=pd.to_numeric(df["budget"], errors="coerce"),
                     layers=pd.to_numeric(df["layers"], errors="coerce"))
    if "pos" in rows and (rows["pos"] == PLANNED_POS).any():
        rows = rows[rows["pos"] == PLANNED_POS]
    missing = []
    for (split, b), g in rows[rows["split"] != IN_DISTRIBUTION].groupby(["split", "budget"]):
        if g["layers"].nunique() < 2:
            continue
        want = (int(g["layers"].max()), int(g["layers"].min()))
        got = details["by_split"].get(split, {}).get(f"budget_{b:g}")
        if got is None:
            missing.append(f"split {split}, budget {b:g}: no usable family (planned depths {want[1]} to {want[0]})")
        elif (got["deepest"], got["shallowest"]) != want:
            missing.append(f"split {split}, budget {b:g}: compared depth {got['deepest']} with {got['shallowest']}, "
                           f"planned {want[0]} with {want[1]}")
    if missing:
        return ("a planned family member has no usable trial (" + "; ".join(missing) + ")", "value_without_planned_family")
    return None


def largest_planned_model_missing(df: pd.DataFrame, ok: pd.DataFrame, details: Mapping, verdict: str):
    """Guard of ``seq2seq_fails_scan_splits``: the rule answered at a smaller budget than the largest one the
    study planned on the decided splits (its trials failed or diverged), so it did not test scale; or a depth
    planned at that budget on a decided split (rotary positions) has no usable trial there, so "every model of the
    largest budget fails" was read without it."""
    if "budget" not in df or "split" not in df or "budget_used" not in details:
        return None
    rows = df[df["split"].isin(FAILED_SPLITS)]
    planned = pd.to_numeric(rows["budget"], errors="coerce").max()
    if np.isfinite(planned) and details["budget_used"] < planned:
        return (f"the largest planned budget ({planned:g}) has no usable trial; the rule answered at "
                f"{details['budget_used']:g}", "value_at_smaller_budget")
    if "layers" not in rows or "cells_used" not in details or not np.isfinite(planned):
        return None
    if "pos" in rows and (rows["pos"] == PLANNED_POS).any():
        rows = rows[rows["pos"] == PLANNED_POS]
    top = rows[np.isclose(pd.to_numeric(rows["budget"], errors="coerce"), planned)]
    used = {(s, float(L)) for s, L in details["cells_used"]}
    missing = sorted({(str(s), float(L)) for s, L in zip(top["split"], pd.to_numeric(top["layers"], errors="coerce"))
                      if np.isfinite(L)} - used)
    if missing:
        return (f"a depth planned at the largest budget ({planned:g}) has no usable trial ("
                + "; ".join(f"split {s}, depth {L:g}" for s, L in missing)
                + "): every depth there must fail for the claim to hold", "value_without_planned_depth")
    return None


def seq2seq_fails_scan_splits(ok: pd.DataFrame, thresholds: Mapping[str, float], n_boot: int = 2000,
                              seed: int = 0) -> Verdict:
    """Every depth at the largest budget, on the length and add-jump splits (see the module docstring)."""
    stat = "largest_model_acc"
    thr = float(thresholds["threshold"])
    if ok.empty or "split" not in ok or _bad(ok, ("budget", "layers", "seed")):
        return _inconclusive(stat, 0, {}, "no trials with split, budget, layers and seed")
    rows, note = _planned_positions(ok[ok["split"].isin(FAILED_SPLITS)])
    details: dict = dict(note)
    if rows.empty:
        return _inconclusive(stat, 0, details, f"no trials on the {' or '.join(FAILED_SPLITS)} split")
    for check, key in ((mixed_recipes, "recipes"), (mixed_models, "model_configurations")):
        mixed = check(rows)
        if mixed:
            details[key] = mixed[1]
            return _inconclusive(stat, len(rows), details, mixed[0])
    budget = float(rows["budget"].max())
    top = rows[rows["budget"] == budget]
    details |= {"budget_used": budget, "threshold": thr,
                "layers_at_largest": sorted(int(L) for L in top["layers"].unique())}
    absent = [s for s in FAILED_SPLITS if s not in set(top["split"])]
    if absent:
        # "Fails both" needs both: one split alone (the other failed, diverged or was not run) decides nothing.
        return _inconclusive(stat, len(top), details, f"no usable trial on the {' and '.join(absent)} split at the "
                             f"largest budget ({budget:g}): the claim is about both splits")
    by_split: dict = {}
    results, spc = [], []  # (split, layers, triple, problem)
    for split, s_rows in top.groupby("split"):
        depths = sorted(s_rows["layers"].unique())
        confidence = _family_confidence(len(depths))
        by_split[split] = {"confidence": confidence, "depths": len(depths)}
        for layers in depths:
            g = s_rows[s_rows["layers"] == layers]
            bad = _bad(g, ("acc_test", "acc_id"))
            if bad:
                return _inconclusive(stat, len(top), details, f"split {split}, depth {layers:g}: {bad}")
            acc, acc_id = _seed_means(g, "acc_test"), _seed_means(g, "acc_id")
            spc.append(acc.size)
            details.setdefault("deciding_cells", []).append(deciding_cell(
                {"split": split, "budget": budget, "layers": layers, **_cell_key(g)}, acc.size))
            triple = bounded_mean_ci(acc, bounds=(0.0, 1.0), confidence=confidence)
            entry = {"acc": ci_entry(triple, acc.size), "acc_id": float(acc_id.mean())}
            # Whether the models learned their training distribution is the engine's competence gate (the
            # claim's Gate on acc_id); acc_id stays in the details for the report.
            if acc.size < MIN_REPLICATES:
                entry["problem"] = f"depth {layers:g}: {acc.size} seeds, fewer than {MIN_REPLICATES}"
            elif _flat_pair(acc, acc_id):
                entry["problem"] = f"depth {layers:g}: {_flat_pair(acc, acc_id)}"
            by_split[split][f"depth_{layers:g}"] = entry
            results.append((split, float(layers), triple, entry.get("problem")))
    details["by_split"] = by_split
    details["cells_used"] = [[s, to_python(L)] for s, L, _, _ in results]
    details["seeds_per_cell"] = int(min(spc))
    n = len(top)
    found = "; ".join(_sweep_text(s, e) for s, e in by_split.items())
    where = f"at the largest budget ({budget:g})"

    def use(r) -> tuple[float, float, float]:
        details.update(split_used=r[0], layers_used=to_python(r[1]), confidence=by_split[r[0]]["confidence"])
        return r[2]

    solved = [r for r in results if r[3] is None and r[2][1] > thr]
    if solved:
        r = max(solved, key=lambda r: r[2][1])
        triple = use(r)
        details["reason"] = (f"{where} the depth-{r[1]:g} model solves the {r[0]} split (interval above {thr:g}): "
                             f"test exact match {found}")
        return Verdict(stat, "not_supported", triple, n, details)
    problems = [r for r in results if r[3] is not None]
    if problems:
        details["split_used"] = problems[0][0]
        return _inconclusive(stat, n, details, f"split {problems[0][0]}: {problems[0][3]}; {where}: test exact "
                             f"match {found}")
    r = max(results, key=lambda r: r[2][2] if math.isfinite(r[2][2]) else math.inf)
    triple = use(r)
    if all(x[2][2] < thr for x in results):
        details["reason"] = (f"{where} every depth fails both splits (every interval below {thr:g}): test exact "
                             f"match {found}")
        return Verdict(stat, "supported", triple, n, details)
    details["reason"] = (f"{where}: the depth-{r[1]:g} interval on the {r[0]} split includes the threshold {thr:g}: "
                         f"test exact match {found}")
    return Verdict(stat, "inconclusive", triple, n, details)


def _sweep_text(split: str, entry: Mapping) -> str:
    """One split at the largest budget, depth by depth: "length: depth 2 0.150 [0.000, 0.420] over 8 seeds
    (in-distribution 0.990)" (with the Bonferroni level when several depths share the budget)."""
    cells = "; ".join(f"depth {k.removeprefix('depth_')} {e['acc']['value']:.3f} [{e['acc']['ci_low']:.3f}, "
                      f"{e['acc']['ci_high']:.3f}] over {e['acc']['n']} seeds (in-distribution {e['acc_id']:.3f})"
                      for k, e in entry.items() if k.startswith("depth_"))
    level = (f" ({entry['confidence']:.1%} intervals, Bonferroni over {entry['depths']} depths)"
             if entry["depths"] > 1 else "")
    return f"{split}: {cells}{level}"
