"""Verdict rules of the ``depth`` study; each claim is named after what its source asserts, so
"supported" means the source is right (:data:`STATEMENTS`).

Rows (:func:`prepare_rows`): ok trials, numeric columns coerced. A *cell* is (split, budget, layers,
training budget: ``steps`` and ``train.batch_size`` where recorded) with rotary positions (the most common
``pos`` and heads where they vary); its replicates are distinct seeds (rows repeating a cell and seed are
averaged). Generalization splits are every ``split`` label but ``simple`` (SCAN's random split, in
distribution by construction).

One training recipe (:func:`mixed_recipes`): the rows a rule compares must share one value of every column of
the trial's ``train`` section (:data:`RECIPE`), else the claim is inconclusive and the reason names the recipes.
Every tier trains every model with one recipe (700 steps of 32 in ``depth.yaml``, 5,000 of 32 in
``depth-full.yaml``, 20,000 of 128 in ``depth-paper.yaml``: equal steps and sequences across depths is the fair
comparison), so a table of two recipes is two tiers' records merged, or cells retrained longer after missing the
competence gate. Deciding such a table on its most common recipe was the rule before, and a reviewer would not
accept it: the engine's gate leaves out the models that missed it and runs the rule again, which moved the most
common recipe, so a family whose deepest members missed the gate at 2,000 steps was decided by their 4,000-step
records under the same cell names. Deciding each recipe and combining the answers would need a rule for recipes
that disagree that no source gives; a recipe's own table (``bindscale report`` on its records) decides it.

- ``deeper_composes_better_at_equal_params`` (Petty et al. 2024). A
  *family* is one (split, budget) with at least two depths; its deepest and shallowest members are
  compared. Per generalization split ``s`` with families at budgets ``b_1..b_B``:
  ``D_s = (1/B) Σ_b [mean(acc_test | deepest, b) − mean(acc_test | shallowest, b)]`` with a
  Welch–Satterthwaite interval on groups adjusted after Agresti & Caffo 2000 (one pseudo-seed at 0 and one at
  1 in every cell, :func:`bindscale.verdicts.stats.bounded_strata_mean_ci`, groups weighted ±1/B): an
  exact-match cell of few seeds that happens to hold no successful seed is not read as certain failure.
  A split *holds* when its interval lies above ``margin``, *contradicts* when below. Supported when
  every generalization split holds; not supported when any contradicts (the contradicting split
  with the lowest upper bound decides); inconclusive otherwise. The deciding number is otherwise
  the split with the lowest lower bound (the weakest support). Guard
  (:func:`planned_family_missing`): inconclusive when a planned family's deepest or shallowest
  member, or a whole planned split or family, has no usable trial (no silent substitution of the
  surviving depths). A family whose deepest and shallowest members' non-embedding parameter counts differ by more
  than ``param_tolerance`` (:data:`PARAM_TOLERANCE`, 5%) is no equal-parameter comparison: the split is inconclusive.
  Those counts are read from the records, so each deciding record's ``n_params_nonembed`` must be the count its
  config gives (:func:`expected_nonembed_params`, exact match; :func:`bindscale.kit.param_count_mismatch`), else the
  claim is inconclusive and the reason names the records.
- ``seq2seq_fails_scan_splits`` (Lake & Baroni 2018). The *largest model*: the largest budget
  among the rows, at its most common depth. Per decided split (``length`` and ``addprim_jump``): mean test exact match over seeds with a t interval
  (:func:`bindscale.verdicts.stats.mean_ci`). A split is *failed* when the interval lies below ``threshold``
  and *solved* when above. Both splits must have usable trials at the largest model (budget and
  depth), else inconclusive. Supported when both are failed; not supported when either is solved
  (the most clearly solved decides); inconclusive otherwise. The deciding number is otherwise the split with the highest upper bound.

Test accuracies are read on a fixed, seeded subsample of each test set (``task.n_test``, 300 in the
default study), the same examples for every trial, so the intervals are over training seeds and do
not include the sampling error of that subsample (a binomial standard error of at most 2.9
percentage points per trial at 300 examples).

Coverage at 8 seeds (simulated in ``tests/studies/depth/test_coverage.py``, run with ``-m slow``;
4000 draws, nominal 95%): exact match is bounded and, on SCAN, skewed or bimodal across seeds. Student's
t interval of a single cell undercovered there (0.84 on Beta(0.3, 3) draws, 0.77 on Beta(0.2, 5)); the
intervals are now Hall's skewness-corrected t (:mod:`bindscale.verdicts.stats`), which covers
0.91 on Beta(0.3, 3), 0.88 on Beta(0.2, 5), 0.95 on the symmetric Beta(5, 5) and still only 0.72 when
15% of seeds succeed (bimodal: not fixable from 8 values). The plain Welch–Satterthwaite difference
covered 0.89 for two skewed groups of different shape (add-jump, one budget), 0.94 for four skewed groups
without effect (length, two budgets), 0.976 for two bimodal groups without effect, 0.72 for a bimodal
deep member against a failing shallow one, and 0.737 when a unimodal deep member has the mean of a
bimodal shallow one, where it read "deeper is better" in 26% of tables without any effect (a shallow
cell whose 8 seeds hold none of its 15% successes). The rule's interval adds one pseudo-seed at 0 and
one at 1 to every cell (Agresti & Caffo 2000; :func:`bindscale.verdicts.stats.bounded_strata_mean_ci`):
it covers 0.998-1.00 on all six draws at 5 and 8 seeds and reads "deeper is better" without an effect in
at most 0.3% of tables. It is conservative: against a failing shallow member (Beta(1, 50)), a deep
member at mean exact match 0.4 is found in 0.74 of tables at 8 seeds (0.01 at 5, 1.00 at 12), at 0.3 in
0.09 (0.90 at 12); so the deciding cells of ``depth-full`` hold 8 seeds. A seed bootstrap
(``scipy.stats.bootstrap``, BCa or percentile, 999 resamples) covers no better than t on these draws.

Both rules are inconclusive, whatever the numbers, when a deciding cell has fewer than
``MIN_REPLICATES`` seeds, when a deciding value is missing, NaN or infinite, when the deciding
models did not learn their training distribution (the claims' competence gate, :data:`.SCAN_GATE`,
checked by the engine on every model of every cell the rules name in ``details["deciding_cells"]``: a
seed whose in-distribution exact match ``acc_id`` is below ``min_id_acc``, 0.95 after Lake & Baroni, is
left out and counted against ``min_seeds``, and the rule decides again on the seeds left; failing out of
distribution says nothing about a model that did not learn), and when the deciding values are
degenerate (:func:`bindscale.verdicts.engine.degenerate`). For the first rule that is zero spread
in *every* deciding cell, or one value everywhere (all zero included): one cell whose seeds all score
0.0 is the usual SCAN measurement (the shallow member failing in every seed) and still lets the split
hold or contradict. For the second rule it is :func:`_flat_pair`:
both columns flat across seeds and equal, or both flat with one strictly inside (0, 1); test 0.0
with in-distribution 1.0 in every seed (the failure Lake & Baroni describe) is a verdict, and so
is test 0.0 in every seed with a varying in-distribution accuracy. An all-zero table stays
inconclusive (one value everywhere; its in-distribution accuracy also misses the gate). Details carry every split's
number (``by_split``) and ``seeds_per_cell``; ``reason`` states the finding in numbers (each split's
difference with its interval and each family's two members, or the largest model's exact match per split).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
import pandas as pd

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
    restrict_to_mode,
    ok_rows,
    mean_ci,
    bounded_strata_mean_ci,
)
from bindscale.models.shapes import shape_for_budget

from . import CLAIMS
from .config import DepthModelConfig

#: Each claim in words (supported = the source's claim holds).
STATEMENTS = {c.name: c.statement for c in CLAIMS}
NUMERIC = ("budget", "layers", "seed", "acc_test", "acc_id", "tok_acc_test", "tok_acc_id", "n_params_nonembed",
           "n_params")
#: The split that is in distribution by construction (never a generalization split).
IN_DISTRIBUTION = "simple"
#: Splits the scale claim is decided on (Lake & Baroni's two failures).
FAILED_SPLITS = ("length", "addprim_jump")
_FIXED = ("pos", "heads")
#: The record columns of a trial's ``train`` section (:class:`bindscale.kit.SeqTrainConfig`): one value of each is
#: one training recipe, and the rows a rule compares share one (:func:`mixed_recipes`).
RECIPE = ("steps", "train.batch_size", "lr", "train.weight_decay", "train.warmup_steps", "train.grad_clip",
          "train.precision")
#: The recipe columns in every deciding cell's key: the training budget, ``steps`` of ``batch_size`` sequences, so
#: that the engine's gates and seed counts read the cell's own recipe in the whole table (failed trials too).
BUDGET_KEYS = ("steps", "train.batch_size")


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
    (:data:`RECIPE`; a column the table lacks is not compared, a missing value is a value), with the recipes (the
    columns that differ → their values), or None. See the module docstring for why not the most common one."""
    cols = [c for c in RECIPE if c in rows]
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
    recipes = [dict(zip(varying, k)) for k in order]
    said = "; ".join(", ".join(f"{c} {_said_value(v)}" for c, v in r.items()) + f" ({counts[k]} trials)"
                     for r, k in zip(recipes, order))
    return (f"the compared trials hold {len(recipes)} training recipes ({said}): the study trains every model of a "
            "tier with one recipe and compares cells of one recipe, so neither the comparison across recipes nor a "
            "choice of one of them is the study's (a model that missed the competence gate under one would be "
            "replaced by another's records); decide each recipe's records on their own"), recipes


def _recipe_key(rows: pd.DataFrame) -> dict:
    """The training budget of a deciding cell's rows (:data:`BUDGET_KEYS` the table records), for its key."""
    return {c: rows[c].dropna().iloc[0] for c in BUDGET_KEYS if c in rows and rows[c].notna().any()}


def _rope_rows(ok: pd.DataFrame) -> tuple[pd.DataFrame, dict]:
    rows = ok
    if "pos" in rows and (rows["pos"] == "rope").any():
        rows = rows[rows["pos"] == "rope"]
    return restrict_to_mode(rows, _FIXED)


def deeper_composes_better_at_equal_params(ok: pd.DataFrame, thresholds: Mapping[str, float], n_boot: int = 2000,
                                           seed: int = 0) -> Verdict:
    """Deepest minus shallowest family member per generalization split (see the module docstring)."""
    stat = "deep_minus_shallow_acc"
    margin = float(thresholds["margin"])
    tol = float(thresholds.get("param_tolerance", PARAM_TOLERANCE))
    if ok.empty or "split" not in ok or _bad(ok, ("budget", "layers", "seed")):
        return _inconclusive(stat, 0, {}, "no trials with split, budget, layers and seed")
    rows, note = _rope_rows(ok)
    details: dict = dict(note)
    mixed = mixed_recipes(rows[rows["split"] != IN_DISTRIBUTION])
    if mixed:
        details["recipes"] = mixed[1]
        return _inconclusive(stat, len(rows), details, mixed[0])
    by_split: dict = {}
    results = []  # (split, triple, n)
    seeds_per_cell = []
    decide_cells: list[dict] = []
    compared: list[pd.DataFrame] = []  # the deciding rows, whose parameter counts are compared
    for split in sorted(s for s in rows["split"].dropna().unique() if s != IN_DISTRIBUTION):
        srows = rows[rows["split"] == split]
        groups, weights, cells, entry = [], [], [], {}
        budgets = [b for b, g in srows.groupby("budget") if g["layers"].nunique() >= 2]
        for b in budgets:
            g = srows[srows["budget"] == b]
            deep, shallow = g[g["layers"] == g["layers"].max()], g[g["layers"] == g["layers"].min()]
            bad = _bad(pd.concat([deep, shallow]), ("acc_test", "acc_id"))
            if bad:
                return _inconclusive(stat, len(rows), details, f"split {split}, budget {b:g}: {bad}")
            d, s = _seed_means(deep, "acc_test"), _seed_means(shallow, "acc_test")
            seeds_per_cell += [d.size, s.size]
            groups += [d, s]
            weights += [1.0 / len(budgets), -1.0 / len(budgets)]
            cells += [d, s]
            pair = [(d, deep), (s, shallow)]
            decide_cells += [deciding_cell({"split": split, "budget": b, "layers": int(x["layers"].iloc[0]),
                                            **({"pos": x["pos"].iloc[0]} if "pos" in x else {}), **_recipe_key(x)},
                                           v.size)
                             for v, x in pair]
            compared += [deep, shallow]
            entry[f"budget_{b:g}"] = {"deepest": int(deep["layers"].max()), "shallowest": int(shallow["layers"].min()),
                                      "acc_deepest": float(d.mean()), "acc_shallowest": float(s.mean()),
                                      "acc_id_deepest": float(deep["acc_id"].mean()),
                                      "acc_id_shallowest": float(shallow["acc_id"].mean()),
                                      # Petty et al. hold total parameters fixed; the families hold the
                                      # non-embedding count, so both are reported (review item 8).
                                      "params_nonembed_deepest": float(deep["n_params_nonembed"].mean()),
                                      "params_nonembed_shallowest": float(shallow["n_params_nonembed"].mean()),
                                      "params_total_deepest": float(deep["n_params"].mean()),
                                      "params_total_shallowest": float(shallow["n_params"].mean())}
        if not budgets:
            continue
        # Equal parameters is the claim's premise (Petty et al. hold the budget fixed): members whose non-embedding
        # counts differ by more than the tolerance compare sizes as well as depths.
        for key, member in [(k, m) for k, m in entry.items() if k.startswith("budget_")]:
            deep_p, shallow_p = member["params_nonembed_deepest"], member["params_nonembed_shallowest"]
            gap = abs(deep_p - shallow_p) / max(min(deep_p, shallow_p), 1.0)
            if not gap <= tol:
                entry.setdefault("problem", f"{key.replace('_', ' ')}: the deepest member has {deep_p:.0f} non-embedding "
                                 f"parameters and the shallowest {shallow_p:.0f}, {gap:.1%} apart, beyond the "
                                 f"tolerance {tol:.0%} of an equal-parameter comparison")
        # Whether the deciding members learned their training distribution is the engine's competence gate
        # (the claim's Gate on acc_id, every deciding cell); acc_id_deepest / _shallowest stay for the report.
        if min(len(c) for c in cells) < MIN_REPLICATES:
            entry.setdefault("problem", f"a deciding cell has fewer than {MIN_REPLICATES} seeds")
        # discrete=True: a cell whose seeds all score 0.0 is SCAN's usual outcome (shallow models fail
        # every seed), so only every cell flat, or one value everywhere, is degenerate.
        # Every deep and shallow seed exactly 0 (or 1) on this split: the floor (ceiling), not a depth effect.
        # Within EXACT_MATCH_BAND of the floor (or ceiling) in every seed of both: 0/300 against 1/300 decides nothing.
        why = at_bound({"the deepest members": np.concatenate(cells[0::2]),
                        "the shallowest members": np.concatenate(cells[1::2])}, band=EXACT_MATCH_BAND) \
            or degenerate(cells, discrete=True)
        if why:
            entry.setdefault("problem", why)
        triple = bounded_strata_mean_ci(groups, weights, bounds=(0.0, 1.0))
        entry["diff"] = ci_entry(triple, sum(len(c) for c in cells))
        by_split[split] = entry
        results.append((split, triple, sum(len(c) for c in cells), entry.get("problem")))
    miscount, wrong = (param_count_mismatch(pd.concat(compared), expected_nonembed_params, "n_params_nonembed",
                                            describe=("split", "budget", "layers")) if compared else (None, []))
    if miscount:
        details["param_count_mismatch"] = wrong
        return _inconclusive(stat, len(rows), details, miscount)
    details["by_split"] = by_split
    details["deciding_cells"] = decide_cells
    details["seeds_per_cell"] = int(min(seeds_per_cell)) if seeds_per_cell else 0
    details["margin"] = margin
    if not results:
        return _inconclusive(stat, len(rows), details, "no generalization split has a family of two or more depths")
    n = len(rows)
    found = {r[0]: _split_text(r[0], by_split[r[0]], r[1]) for r in results}
    contradicting = [r for r in results if r[3] is None and r[1][2] < margin]
    if contradicting:
        split, triple, _, _ = min(contradicting, key=lambda r: r[1][2])
        details["split_used"] = split
        details["reason"] = (f"{found[split]}: the deepest member does not beat the shallowest (interval below the "
                             f"margin {margin:g}); " + _others(found, split))
        return Verdict(stat, "not_supported", triple, n, details)
    problems = [r for r in results if r[3] is not None]
    if problems:
        split, _, _, why = problems[0]
        details["split_used"] = split
        return _inconclusive(stat, n, details, f"split {split}: {why}; " + "; ".join(found.values()))
    split, triple, _, _ = min(results, key=lambda r: r[1][1] if math.isfinite(r[1][1]) else -math.inf)
    details["split_used"] = split
    verdict = "supported" if all(r[1][1] > margin for r in results) else "inconclusive"
    if verdict == "inconclusive":
        details["reason"] = f"{found[split]}: the interval includes the margin {margin:g}; " + _others(found, split)
    else:
        details["reason"] = (f"the deepest member beats the shallowest by more than {margin:g} on every "
                             f"generalization split: " + "; ".join(found.values()))
    return Verdict(stat, verdict, triple, n, details)


def _split_text(split: str, entry: Mapping, triple: tuple[float, float, float]) -> str:
    """One split's finding in numbers: "split length: deepest − shallowest exact match +0.120 [+0.050, +0.190]
    (budget 25000: depth 8 0.410 vs depth 1 0.290; ...)"."""
    fams = "; ".join(f"budget {k.removeprefix('budget_')}: depth {f['deepest']} {f['acc_deepest']:.3f} vs depth "
                     f"{f['shallowest']} {f['acc_shallowest']:.3f}" for k, f in entry.items() if k.startswith("budget_"))
    return (f"split {split}: deepest − shallowest test exact match {triple[0]:+.3f} [{triple[1]:+.3f}, "
            f"{triple[2]:+.3f}] ({fams})")


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
    if "pos" in rows and (rows["pos"] == "rope").any():
        rows = rows[rows["pos"] == "rope"]
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
    study planned on the decided splits (its trials failed or diverged), so it did not test scale."""
    if "budget" not in df or "split" not in df or "budget_used" not in details:
        return None
    planned = pd.to_numeric(df.loc[df["split"].isin(FAILED_SPLITS), "budget"], errors="coerce").max()
    if np.isfinite(planned) and details["budget_used"] < planned:
        return (f"the largest planned budget ({planned:g}) has no usable trial; the rule answered at "
                f"{details['budget_used']:g}", "value_at_smaller_budget")
    return None


def seq2seq_fails_scan_splits(ok: pd.DataFrame, thresholds: Mapping[str, float], n_boot: int = 2000,
                              seed: int = 0) -> Verdict:
    """The largest model's test exact match on the length and add-jump splits (see the module docstring)."""
    stat = "largest_model_acc"
    thr = float(thresholds["threshold"])
    if ok.empty or "split" not in ok or _bad(ok, ("budget", "layers", "seed")):
        return _inconclusive(stat, 0, {}, "no trials with split, budget, layers and seed")
    rows, note = _rope_rows(ok)
    details: dict = dict(note)
    rows = rows[rows["split"].isin(FAILED_SPLITS)]
    if rows.empty:
        return _inconclusive(stat, 0, details, f"no trials on the {' or '.join(FAILED_SPLITS)} split")
    mixed = mixed_recipes(rows)
    if mixed:
        details["recipes"] = mixed[1]
        return _inconclusive(stat, len(rows), details, mixed[0])
    budget = float(rows["budget"].max())
    top = rows[rows["budget"] == budget]
    layers = float(top["layers"].value_counts().sort_index().idxmax())
    top = top[top["layers"] == layers]
    details |= {"budget_used": budget, "layers_used": layers, "threshold": thr}
    absent = [s for s in FAILED_SPLITS if s not in set(top["split"])]
    if absent:
        # "Fails both" needs both: one split alone (the other failed, diverged or was not run) decides nothing.
        return _inconclusive(stat, len(top), details, f"no usable trial on the {' and '.join(absent)} split at the "
                             f"largest model (budget {budget:g}, depth {layers:g}): the claim is about both splits")
    by_split, results, spc = {}, [], []
    for split, g in top.groupby("split"):
        bad = _bad(g, ("acc_test", "acc_id"))
        if bad:
            return _inconclusive(stat, len(top), details, f"split {split}: {bad}")
        acc, acc_id = _seed_means(g, "acc_test"), _seed_means(g, "acc_id")
        spc.append(acc.size)
        details.setdefault("deciding_cells", []).append(deciding_cell(
            {"split": split, "budget": budget, "layers": layers, **({"pos": g["pos"].iloc[0]} if "pos" in g else {}),
             **_recipe_key(g)}, acc.size))
        triple = mean_ci(acc)
        entry = {"acc": ci_entry(triple, acc.size), "acc_id": float(acc_id.mean())}
        # Whether the largest model learned its training distribution is the engine's competence gate (the
        # claim's Gate on acc_id); acc_id stays in the details for the report.
        if acc.size < MIN_REPLICATES:
            entry["problem"] = f"{acc.size} seeds, fewer than {MIN_REPLICATES}"
        elif _flat_pair(acc, acc_id):
            entry["problem"] = _flat_pair(acc, acc_id)
        by_split[split] = entry
        results.append((split, triple, entry.get("problem")))
    details["by_split"] = by_split
    details["seeds_per_cell"] = int(min(spc))
    n = len(top)
    model = f"the largest model (budget {budget:g}, depth {layers:g})"
    found = "; ".join(f"{s} {t[0]:.3f} [{t[1]:.3f}, {t[2]:.3f}] over {by_split[s]['acc']['n']} seeds "
                      f"(in-distribution {by_split[s]['acc_id']:.3f})" for s, t, _ in results)
    solved = [r for r in results if r[2] is None and r[1][1] > thr]
    if solved:
        split, triple, _ = max(solved, key=lambda r: r[1][1])
        details["split_used"] = split
        details["reason"] = f"{model} solves the {split} split (interval above {thr:g}): test exact match {found}"
        return Verdict(stat, "not_supported", triple, n, details)
    problems = [r for r in results if r[2] is not None]
    if problems:
        details["split_used"] = problems[0][0]
        return _inconclusive(stat, n, details, f"split {problems[0][0]}: {problems[0][2]}; {model}: test exact "
                             f"match {found}")
    split, triple, _ = max(results, key=lambda r: r[1][2] if math.isfinite(r[1][2]) else math.inf)
    details["split_used"] = split
    if all(r[1][2] < thr for r in results):
        details["reason"] = f"{model} fails both splits (every interval below {thr:g}): test exact match {found}"
        return Verdict(stat, "supported", triple, n, details)
    details["reason"] = f"{model}: the {split} interval includes the threshold {thr:g}: test exact match {found}"
    return Verdict(stat, "inconclusive", triple, n, details)
