"""Verdict rules of the ``subgraphs`` study (Dziri et al., NeurIPS 2023, "Faith and
Fate: Limits of Transformers on Compositionality").

Each claim is named after what Dziri et al. assert, so "supported" means they
are right (:data:`STATEMENTS` says each claim in words).

Both rules decide within each task separately: different tasks are never
compared or pooled. With several tasks a claim is supported only when it is
supported in every task, not supported when any task contradicts it (that
task's number decides), inconclusive otherwise (``details["by_task"]``,
``details["task_used"]``); trials without a task name are left out when
other trials have one; the figures show the most common task. A *cell* is one model size (and, for the second rule, one training-set size)
of that task; its replicates are distinct ``seed`` values: rows repeating a
(cell, seed) are averaged into one value, and a table without seeds is
inconclusive. The ``scratchpad`` column is read as a flag (booleans, 0/1 and
the strings true/false/yes/no); a value that is none of these is unknown and
its trial is left out.

What both rules refuse before reading a number (inconclusive, the reason
names what was found):

- *Parameter counts that are not the model's.* The scale rule orders and
  names its cells by the recorded ``n_params``, so a record whose count is
  wrong (the smallest and largest sizes' counts swapped turned a clear
  "scale lifts OOD", +0.29, into "supported", −0.20) moves the verdict and
  nothing else in the table shows it. Each deciding record's count is
  recomputed from its config (:func:`expected_params`: layers, ``d_model``,
  MLP ratio and the character vocabulary, as :func:`.trial.build_model`
  builds the transformer) and must match exactly
  (:func:`bindscale.kit.param_count_mismatch`, the engine function the
  depth, binding_scan and scaling studies use); a record without the shape
  columns cannot be checked and is refused too.
- *Values outside their range* (:data:`.METRIC_RANGES`, the study plugin's
  ``metric_ranges``, also checked by the engine before a rule runs):
  accuracies and shares in percent decided before ("supported", +25.7, with
  an interval [1, 1] that did not contain its point).
- *More than one training recipe* among the compared rows
  (:func:`bindscale.kit.mixed_recipes` over :data:`RECIPE`, every field of
  the trial's train and task sections but the task, the format and the
  training-set size, which the rules split, slice or compare by). A tier
  trains every model with one recipe, so two recipes are two tiers' records
  merged or cells retrained after missing the gate; before, a smallest size
  trained 8,000 steps against 500 for the others decided "supported" (a
  recipe, not scale, set the gain), and two recipes of one size and seed
  were averaged into one seed. The deciding cells carry their training
  budget (``steps``, ``train.batch_size``) in their keys, so the engine's
  gates and seed counts read the cell's own recipe in the whole table.

- ``scale_does_not_lift_ood``: out-of-distribution exact match does not rise
  with model size *and stays low*. Slice: scratchpad format where present,
  the largest training set. Two parts, with intervals over seeds:

  1. *No size lifts OOD accuracy*: for every model size above the smallest,
     the gain in mean OOD exact match over the smallest size. Exact match is
     bounded in [0, 1] and bimodal across seeds (a few seeds reach the OOD
     sizes, most do not), so the interval is Welch–Satterthwaite's on cells
     given one pseudo-seed at 0 and one at 1 (Agresti & Caffo 2000,
     :func:`bindscale.verdicts.stats.bounded_strata_mean_ci`, as the depth
     study reads its exact-match differences): a largest cell of 8 seeds
     that happens to hold none of its rare successes is not read as "no
     gain". Every size is tested against the smallest and any one gain
     contradicts the claim, so the intervals are at confidence
     ``1 − 0.05 / K`` for K sizes compared (Bonferroni, as binding_scan does
     over its kinds; ``details["gain_confidence"]``). Holds when every gain's
     interval lies below ``margin``; contradicted when any gain's interval
     lies above it (so a middle size that generalizes counts, not only the
     two ends). Its deciding number is the gain with the highest lower bound
     when one lies above ``margin``, else the gain with the highest upper
     bound (the one nearest to contradicting the source).
  2. *OOD stays low*: at the largest model, in-distribution minus OOD exact
     match, paired by seed (:func:`bindscale.verdicts.stats.mean_ci`). Holds when its
     interval lies above ``min_ood_drop``; contradicted when it lies below
     (OOD accuracy is about as high as in distribution).

  Supported when both hold; not supported when either is contradicted (the
  deciding number is then that part's); inconclusive otherwise. Also
  inconclusive, whatever the numbers, when a deciding trial's accuracy,
  size or seed is missing, NaN or infinite, when a model size has fewer than
  ``MIN_REPLICATES`` distinct seeds, when the deciding cells are degenerate
  (:func:`bindscale.verdicts.engine.degenerate`: a cell constant across its
  seeds, or one value everywhere), and when no model size is off the floor
  (at the floor everywhere a zero gain cannot tell "scale does not help"
  from "these OOD sizes are out of reach of every model in the grid"). A
  size is off the floor when its *median* seed's OOD exact match is above
  ``ood_floor`` (at least half its seeds reach it), not its mean: one seed
  of 8 at 0.45 beside seeds at 0.002 lifted a mean to 0.058, over the floor
  0.05, and the rule decided. The median is what a typical seed of the size
  reaches, and a minority of seeds cannot move it; an interval's lower bound
  was not chosen because the bounded interval clears 0.05 only from a mean of
  about 0.2 at 8 seeds, so a size steady at 0.15 would read as at the floor.

  Simulated (400 tables each, 8 seeds per size, in-distribution 0.985;
  ``tests/studies/subgraphs/test_verdicts.py`` reruns the first two with 200
  tables, ``-m slow``), Welch's 95% interval before → the rule now: five sizes
  whose gains all sit at the margin (OOD 0.20 → 0.25, sd 0.04) read "not
  supported" in 6.25% of tables before, in none now; the largest size bimodal
  (15% of its seeds at 0.8, the rest at 0.1 like every smaller size: a true
  gain of 0.105, twice the margin) read "supported" in 26.75% before (25.5% in
  the review's draws), in none now. The price is power, stated so that an
  inconclusive verdict is read for what it is: at 8 seeds per size the gain's
  interval is at least about ±0.23 wide whatever the seeds' spread (the
  pseudo-seeds set it), so a flat curve holds only from about 42 seeds per
  size (two sizes; 50 for three, 54 for five), and a gain over a smallest size
  at 0.1 contradicts the claim only from about 0.38 (two sizes), 0.43 (three)
  or 0.48 (five) at 8 seeds (0.50 to 0.66 at 6). Simulated: a flat curve
  (three sizes at 0.30, sd 0.04) read "supported" in 44% of tables before and
  in none now; gains of 0.1 and 0.3 (0.1 → 0.2 → 0.4, sd 0.02) read "not
  supported" in every table before and in none now (inconclusive); a gain of
  0.5 (0.1 → 0.6, sd 0.05) in every table before and in 99.75% now. Ruling out
  a gain of 0.05 that a minority of seeds might carry needs that many seeds:
  no interval valid for a bimodal cell does it from 8.
- ``correct_steps_seen_in_training``: a scratchpad step comes out right mostly
  when its whole ancestor computation occurred in training. Two parts, over
  the cells (model size × training-set size) of the scratchpad trials, each
  the mean of the cell means (every cell weighted equally) with Hall's
  skewness-corrected Welch–Satterthwaite interval
  (:func:`bindscale.verdicts.stats.strata_mean_ci`).

  1. *Correct steps are seen more often than wrong ones, at equal depth*: the
     depth-matched gap ``seen_gap_depth`` (share of correct nodes whose whole
     ancestor computation occurs in training minus that share among wrong
     nodes, compared within graph depths: deep nodes are both rarely seen and
     often wrong, so the raw difference, reported beside it, confounds
     "seen" with "shallow"). Holds when its interval lies above ``margin``,
     contradicted when below.
  2. *Correct steps are mostly seen ones*: the share of correct nodes whose
     whole ancestor computation occurs in training (``seen_correct``). Holds
     when its interval lies above 0.5, contradicted when below: a gap of
     0.08 against 0.01 says seen steps help, not that correct steps are
     mostly seen ones.

  Supported when both hold; not supported when either is contradicted;
  inconclusive otherwise. A part that is met while the other is
  contradicted is reported as met on its own, never as holding: the claim
  needs both. What "not supported" shows (the claim's
  ``not_supported_means``, "missed_level"): the source's mechanism is not
  found at the levels the rule names (correct steps not more often seen
  than wrong ones by ``margin`` at equal depth, or not mostly seen ones).
  It is no evidence for the other side of "where scale stops": the rule
  compares no model sizes and reads no out-of-distribution accuracy, so it
  cannot show scale going further (``scale_does_not_lift_ood`` decides
  that); a depth-matched gap near zero beside a large raw gap says that
  depth, not seen-ness, separates correct from wrong steps. A trial
  without a gap (NaN: no depth has both correct and wrong nodes) is left
  out and counted in
  ``trials_without_a_gap``. Inconclusive, whatever the numbers, when there
  are no scratchpad trials, when a column (``seen_gap_depth``,
  ``seen_correct``, ``seen_wrong``, ``n_params``, ``seed``) is missing, when
  a value is infinite or a trial with a gap lacks one of its shares (bad
  data), when a cell has fewer than ``MIN_REPLICATES`` distinct seeds with a
  gap, when the gaps are degenerate (constant across seeds or all equal, all
  zero included), or when seen-ness does not vary (every node seen in every
  trial, or none: the gap is 0 by construction).

  Hall's skewness-corrected t errs one way at the margin under strong skew
  (4 cells of 8 seeds, 400 tables): a gap at the margin with a long lower
  tail (0.05 + 0.05 (1 − Gamma(1))) read "supported" in 4.75%, one with a
  long upper tail "not supported" in 5.5% and a normal gap "not supported"
  in 4.25%, against 2.5% nominal; a share at 0.5 (Beta(2, 2)) 2.25% and
  2.75%. The bounded (Agresti–Caffo) interval the scale rule uses would bring
  these to 0% but leaves the gap undecidable near zero at the seeds a tier
  affords (it holds only from about 0.26 and is contradicted only below
  about −0.13 at 4 cells of 8 seeds): the shares are averages over a
  model's many steps, not a success a seed reaches or misses, so the rule
  keeps Hall's t and states this rate.

Competence gate (:data:`.ID_GATE`, both claims): every
deciding cell the rules name (every model size of the scale rule; every
(size, training set) cell of the steps rule; every task's cells when there
are several) must reach a mean in-distribution exact match ``acc_id`` of
``min_id_acc`` (0.95: Dziri et al.'s models are near-perfect in
distribution), checked by the engine; below it the claim is inconclusive
and the reason names the cell and its fit (an unlearned model's OOD failure,
or its wrong steps, say nothing about composition).

Every verdict's details carry ``seeds_per_cell``: the smallest number of
distinct seeds in a deciding cell; ``reason`` states the finding in numbers.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
import pandas as pd

from bindscale.kit import (
    MIN_REPLICATES,
    NAN3,
    TransformerConfig,
    bounded_strata_mean_ci,
    strata_mean_ci,
    ci_entry,
    deciding_cell,
    decide as _decide,
    decide_below,
    mixed_recipes,
    no_room,
    json_key,
    outside_range,
    param_count_mismatch,
    pooled_columns,
    coerce_numeric,
    degenerate,
    restrict_to_mode,
    Verdict,
    mean_ci,
)
from bindscale.models.shapes import nonembedding_params

from . import CLAIMS, METRIC_RANGES  # noqa: E402  (the plugin object: claims, their statements and defaults)
from .config import SubgraphsTrial

#: Each claim in words (supported = the source's claim holds), and its default thresholds.
STATEMENTS = {c.name: c.statement for c in CLAIMS}
DEFAULTS = {c.name: dict(c.defaults) for c in CLAIMS}
NUMERIC = ("n_params", "n_train", "acc_id", "acc_ood", "seen_correct", "seen_wrong", "seen_gap_depth",
           "compound_eps", "seed")
#: "Correct steps are mostly seen ones": the seen share of correct steps must exceed one half.
MOSTLY = 0.5
_TRUE, _FALSE = {"true", "1", "1.0", "yes", "y", "t"}, {"false", "0", "0.0", "no", "n", "f"}
#: Nominal level of every interval before the Bonferroni division over the sizes compared.
ALPHA = 0.05
#: The record columns of the trial's ``train`` and ``task`` sections that the rows a rule compares must share
#: (:func:`bindscale.kit.mixed_recipes`): every one but the task (each task is decided on its own), the scratchpad
#: flag (the rules pick one format) and ``n_train`` (the scale rule takes the largest training set; it is a cell
#: axis of the steps rule).
RECIPE = tuple(c for c in SubgraphsTrial.column_names()
               if SubgraphsTrial.AXES.get(c, c).startswith(("train.", "task.")) and c not in ("task", "scratchpad",
                                                                                               "n_train"))
#: The recipe columns in every deciding cell's key (the training budget: ``steps`` of ``batch_size`` sequences),
#: so that the engine's gates and seed counts read the cell's own recipe in the whole table, failed trials too.
BUDGET_KEYS = ("steps", "train.batch_size")
#: Config columns that name a record whose parameter count is wrong (:func:`bindscale.kit.param_count_mismatch`).
_DESCRIBE = ("task", "layers", "d_model", "heads", "model.mlp_ratio")


def _whole(v, name: str) -> int:
    """``v`` as an integer; a fractional or non-numeric config value cannot size a model."""
    f = float(v)
    if not f.is_integer():
        raise ValueError(f"{name} {v!r} is not a whole number")
    return int(f)


def expected_params(row: Mapping) -> int:
    """The ``n_params`` a record's config gives its transformer, as :func:`.trial.build_model` builds it.

    :class:`bindscale.models.transformer.Transformer` over the character vocabulary
    (:data:`.tasks.charvocab.VOCAB_SIZE`, one for every task), rotary positions: the blocks and the final
    LayerNorm (:func:`bindscale.models.shapes.nonembedding_params`, MLP hidden width ``mlp_ratio · d_model``)
    plus the token embedding and the untied vocabulary head, ``2 · vocab · d_model``. The head count and
    ``max_len`` (the rotary table's length, a buffer) hold no weights. ``row``: a results-table row as a dict
    without its missing entries; ``model.mlp_ratio`` at the trial config's default where the table lacks it.

    Raises:
        KeyError: no ``layers`` or ``d_model``.
        ValueError / TypeError: a model kind other than the transformer, a fractional or non-positive size, or
            ``d_model`` that does not split into the heads (no such model can be built).
    """
    from .tasks.charvocab import VOCAB_SIZE  # imports torch: only when a table is checked

    kind = row.get("model.kind", "transformer")
    if kind != "transformer":
        raise ValueError(f"model kind {kind!r}: the study builds transformers only")
    layers, d = _whole(row["layers"], "layers"), _whole(row["d_model"], "d_model")
    ratio = _whole(row.get("model.mlp_ratio", TransformerConfig.model_fields["mlp_ratio"].default), "mlp_ratio")
    if min(layers, d, ratio) < 1:
        raise ValueError(f"layers {layers}, d_model {d}, mlp_ratio {ratio}: sizes must be positive")
    if "heads" in row:
        heads = _whole(row["heads"], "heads")
        if heads < 1 or d % heads:
            raise ValueError(f"d_model {d} does not split into {heads} heads")
    return nonembedding_params(layers, d, ratio * d) + 2 * VOCAB_SIZE * d


def _unfit_rows(rows: pd.DataFrame, details: dict) -> str | None:
    """Why the rows a rule compares cannot decide, or None: a value outside its range (:data:`.METRIC_RANGES`),
    more than one training recipe (:data:`RECIPE`; the recipes go to ``details["recipes"]``), or a recorded
    parameter count that is not the count the record's config gives (:func:`expected_params`; the records go to
    ``details["param_count_mismatch"]``)."""
    out = outside_range(rows, METRIC_RANGES)
    if out:
        return out
    mixed = mixed_recipes(rows, RECIPE)
    if mixed:
        details["recipes"] = mixed[1]
        return mixed[0]
    miscount, wrong = param_count_mismatch(rows, expected_params, describe=_DESCRIBE)
    if miscount:
        details["param_count_mismatch"] = wrong
        return miscount
    return None


def _prepare(ok: pd.DataFrame, numeric: tuple[str, ...] = NUMERIC) -> pd.DataFrame:
    """A copy with this study's ``numeric`` columns that are present coerced to numbers."""
    return coerce_numeric(ok, numeric)


def _flag(v) -> bool | None:
    """A scratchpad flag read robustly: booleans, 0/1 and true/false/yes/no strings; anything else is None."""
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, (int, float, np.integer, np.floating)):
        return None if not np.isfinite(v) or v not in (0, 1) else bool(v)
    if isinstance(v, str):
        s = v.strip().lower()
        return True if s in _TRUE else False if s in _FALSE else None
    return None


def scratchpad_flags(ok: pd.DataFrame) -> pd.Series:
    """Per row True (scratchpad), False (answer only) or None (unknown); all True without the column."""
    if "scratchpad" not in ok:
        return pd.Series([True] * len(ok), index=ok.index, dtype=object)
    return ok["scratchpad"].map(_flag).astype(object)


def _scratchpad_rows(ok: pd.DataFrame) -> pd.DataFrame:
    """The scratchpad trials when there are any, else the answer-only ones (unknown format: never)."""
    flags = scratchpad_flags(ok)
    if (flags == True).any():  # noqa: E712 (object Series holding True/False/None)
        return ok[flags == True]  # noqa: E712
    return ok[flags == False]  # noqa: E712


def focus_rows(ok: pd.DataFrame) -> pd.DataFrame:
    """Rows of the scale comparison: the most common task (the rules see one at a time), scratchpad format where
    present, the largest training set."""
    rows = _scratchpad_rows(restrict_to_mode(ok, ("task",))[0])
    if "n_train" in rows and rows["n_train"].notna().any():
        rows = rows[rows["n_train"] == rows["n_train"].max()]
    return rows


def _missing(ok: pd.DataFrame, cols: tuple[str, ...]) -> list[str]:
    """Columns of ``cols`` absent from ``ok`` or without any value."""
    return [c for c in cols if c not in ok or not ok[c].notna().any()]


def _nonfinite(rows: pd.DataFrame, cols: tuple[str, ...]) -> int:
    return int(sum((~np.isfinite(rows[c].to_numpy(dtype=float))).sum() for c in cols))


def _per_seed(rows: pd.DataFrame, cell: list[str], cols: list[str]) -> pd.DataFrame:
    """One row per (cell, distinct seed): repeated records of a seed are averaged, not counted as seeds."""
    return rows.groupby([*cell, "seed"], sort=True)[cols].mean().reset_index()


def _combine(parts: list[tuple[str, str, tuple[float, float, float]]]) -> tuple[str, int]:
    """Overall verdict of parts that must all hold, and the index of the deciding part.

    Not supported when any part is contradicted (the first such part decides); supported when all hold
    (the first part decides); otherwise inconclusive (the first undecided part).
    """
    verdicts = [v for _, v, _ in parts]
    if "not_supported" in verdicts:
        return "not_supported", verdicts.index("not_supported")
    if all(v == "supported" for v in verdicts):
        return "supported", 0
    return "inconclusive", verdicts.index("inconclusive")


def _part_word(part: str, verdict: str) -> str:
    """A part's own outcome ``part`` in words, beside the claim's ``verdict`` (both claims need every part): a part
    that is met reads "holds" only when the claim is supported; otherwise it is met on its own, so that a reason
    never reads as if the claim held when it does not."""
    if part == "not_supported":
        return "contradicted"
    if part == "inconclusive":
        return "undecided"
    return "holds" if verdict == "supported" else "met on its own, but the claim needs both parts"


def _cell_of(rows: pd.DataFrame, where: Mapping) -> dict:
    """A deciding cell named by config columns where the table has them (a failed trial has no ``n_params``),
    else by ``where`` itself (``n_params``, ``n_train``)."""
    at = rows
    for c, v in where.items():
        at = at[at[c] == v]
    shape = {c: at[c].iloc[0] for c in ("task", "n_train", "layers", "d_model", "heads") if c in at and len(at)
             and at[c].nunique() == 1}
    if "scratchpad" in at and len(at) and at["scratchpad"].astype(str).nunique() == 1:
        # the answer-only control shares a shape with a scratchpad cell: the format picks the cell's trials
        shape["scratchpad"] = at["scratchpad"].iloc[0]
    shape |= {c: at[c].iloc[0] for c in BUDGET_KEYS if c in at and len(at) and at[c].notna().all()
              and at[c].nunique() == 1}
    return shape if {"layers", "d_model"} & set(shape) else {**shape, **where}


def _level(confidence: float, k: int) -> str:
    """An interval's level in words: "95% interval", or with its Bonferroni division over ``k`` comparisons."""
    return f"{100 * confidence:.3g}% interval" + (f", Bonferroni over {k} sizes" if k > 1 else "")


def _scale_one_task(ok: pd.DataFrame, p: Mapping, n_boot: int, seed: int) -> Verdict:
    """:func:`scale_does_not_lift_ood` within the rows of one task."""
    stat = "ood_acc_gain_best_size_vs_smallest"
    ok = _prepare(ok)
    need = ("acc_ood", "acc_id", "n_params", "seed")
    if _missing(ok, need):
        return Verdict(stat, "inconclusive", NAN3, len(ok), {
            "reason": f"no {', '.join(_missing(ok, need))} in the table: the rule needs {', '.join(need)}",
            "seeds_per_cell": 0})
    rows = focus_rows(ok)
    details: dict = {"ood_floor": float(p["ood_floor"]), "min_ood_drop": float(p["min_ood_drop"]),
                     "seeds_per_cell": 0}
    if pooled_columns(rows, ("heads",)):
        details["pooled_over"] = pooled_columns(rows, ("heads",))
    if rows.empty:
        details["reason"] = "no trial of a known format (scratchpad or answer only) in the deciding slice"
        return Verdict(stat, "inconclusive", NAN3, 0, details)
    bad = _nonfinite(rows, need)
    if bad:
        details["reason"] = f"{bad} missing, NaN or infinite accuracies, sizes or seeds among the deciding trials"
        return Verdict(stat, "inconclusive", NAN3, len(rows), details)
    unfit = _unfit_rows(rows, details)
    if unfit:
        details["reason"] = unfit
        return Verdict(stat, "inconclusive", NAN3, len(rows), details)
    cells = _per_seed(rows, ["n_params"], ["acc_id", "acc_ood"])
    sizes = sorted(cells["n_params"].unique())
    ood = {s: cells.loc[cells["n_params"] == s, "acc_ood"].to_numpy(float) for s in sizes}
    n = len(cells)
    details["seeds_per_cell"] = int(min(v.size for v in ood.values()))
    details["ood_by_params"] = {json_key(s): float(v.mean()) for s, v in ood.items()}
    details["id_by_params"] = {json_key(s): float(g.mean()) for s, g in cells.groupby("n_params")["acc_id"]}
    if len(sizes) < 2:
        details["reason"] = "the deciding slice (one task, scratchpad, largest training set) has fewer than two model sizes"
        return Verdict(stat, "inconclusive", NAN3, n, details)
    small, large = sizes[0], sizes[-1]
    big = cells[cells["n_params"] == large]
    # Every size is read (each one's gain over the smallest, the largest's ID − OOD): each is a deciding cell, and
    # the engine checks the claim's gate (in-distribution exact match) on each.
    details["deciding_cells"] = [deciding_cell(_cell_of(rows, {"n_params": size}), ood[size].size) for size in sizes]
    drop = (big["acc_id"] - big["acc_ood"]).to_numpy(float)
    # Every size above the smallest is tested against it and the rule contradicts the claim when any one gains:
    # Bonferroni over the sizes compared. Exact match is bounded and bimodal across seeds: Agresti–Caffo's interval.
    confidence = 1.0 - ALPHA / (len(sizes) - 1)
    details["gain_confidence"] = confidence
    gains = {s: bounded_strata_mean_ci([ood[s], ood[small]], [1.0, -1.0], bounds=METRIC_RANGES["acc_ood"],
                                       confidence=confidence) for s in sizes[1:]}
    details["ood_gain_over_smallest"] = {json_key(s): ci_entry(g, ood[s].size + ood[small].size) for s, g in gains.items()}
    details["largest_model_acc_id"] = ci_entry(mean_ci(big["acc_id"], n_boot, seed=seed), len(big))
    details["largest_model_acc_ood"] = ci_entry(mean_ci(big["acc_ood"], n_boot, seed=seed), len(big))
    drop_ci = mean_ci(drop, n_boot, seed=seed)
    details["largest_model_id_minus_ood"] = ci_entry(drop_ci, drop.size)
    details["best_ood_cell"] = float(max(v.mean() for v in ood.values()))
    medians = {s: float(np.median(v)) for s, v in ood.items()}
    details["ood_median_by_params"] = {json_key(s): m for s, m in medians.items()}
    if details["seeds_per_cell"] < MIN_REPLICATES:
        details["reason"] = f"fewer than {MIN_REPLICATES} distinct seeds at some model size"
        return Verdict(stat, "inconclusive", NAN3, n, details)
    why = degenerate(list(ood.values())) or degenerate([drop])
    if why:
        details["reason"] = f"degenerate deciding cells: {why}"
        return Verdict(stat, "inconclusive", NAN3, n, details)
    # Whether the models learned the task in distribution is the engine's competence gate on every size. Off the
    # floor is a size's median seed, not its mean: one seed that reaches the OOD sizes does not lift a cell.
    if not max(medians.values()) > p["ood_floor"]:
        above = {s: int((v > p["ood_floor"]).sum()) for s, v in ood.items()}
        most = max(sizes, key=lambda s: above[s])
        details["reason"] = (f"OOD exact match of the median seed is at most {max(medians.values()):.3f} at every "
                             f"model size, not above the floor {p['ood_floor']} (at most {above[most]} of "
                             f"{ood[most].size} seeds of a size above it; the best size's mean "
                             f"{details['best_ood_cell']:.3f}): at the floor a zero gain cannot tell 'scale does not "
                             f"help' from 'no model here can reach these sizes'")
        return Verdict(stat, "inconclusive", NAN3, n, details)
    # Room: when the smallest model is already within the margin of the ceiling out of distribution, no size can
    # gain the margin over it, and "no size lifts OOD" would be the ceiling's finding, not the claim's.
    room = no_room(ood[small], p["margin"], name=f"the smallest model ({int(small):,} parameters, OOD exact match)")
    if room:
        details["reason"] = room
        return Verdict(stat, "inconclusive", NAN3, n, details)
    above = [s for s, g in gains.items() if g[1] > p["margin"]]
    at = max(above, key=lambda s: gains[s][1]) if above else max(gains, key=lambda s: gains[s][2])
    details["deciding_size"] = json_key(at)
    parts = [(stat, decide_below(gains[at], p["margin"]), gains[at]),
             ("id_minus_ood_acc_largest_model",
              _decide(drop_ci, p["min_ood_drop"]), drop_ci)]
    verdict, k = _combine(parts)
    details["parts"] = {"no_size_lifts_ood": parts[0][1], "ood_stays_low": parts[1][1]}
    g, ids = gains[at], details["id_by_params"]
    words = {part: _part_word(part, verdict) for part in ("supported", "not_supported", "inconclusive")}
    details["reason"] = (f"OOD exact match by size {', '.join(f'{int(s):,}: {ood[s].mean():.3f}' for s in sizes)} "
                         f"(in distribution {', '.join(f'{ids[json_key(s)]:.3f}' for s in sizes)}); the largest gain "
                         f"over the smallest, at {int(at):,} parameters, {g[0]:+.3f} [{g[1]:+.3f}, {g[2]:+.3f}] "
                         f"({_level(confidence, len(sizes) - 1)}) against the margin {p['margin']:g} "
                         f"({words[parts[0][1]]}); the largest model's ID − OOD "
                         f"{drop_ci[0]:.3f} [{drop_ci[1]:.3f}, {drop_ci[2]:.3f}] against {p['min_ood_drop']:g} "
                         f"({words[parts[1][1]]})")
    return Verdict(parts[k][0], verdict, parts[k][2], n, details)


def _cells_mean_ci(values: list[np.ndarray], bounds: tuple[float, float]) -> tuple[float, float, float]:
    """The mean of the cell means (every cell weighted equally) with Hall's skewness-corrected Welch–Satterthwaite
    interval (:func:`bindscale.kit.strata_mean_ci`); NaN without cells. ``bounds`` (the metric's range) is kept
    for the range check's callers: the shares are averages over a model's many scratchpad steps, not one outcome
    a seed either reaches or misses, so the bounded interval's pseudo-seeds (built for bimodal exact match)
    would only hide a gap the seeds measure well (see the module docstring for the rate at strong skew)."""
    return strata_mean_ci(values, [1.0 / len(values)] * len(values)) if values else NAN3


def _steps_one_task(ok: pd.DataFrame, p: Mapping, n_boot: int, seed: int) -> Verdict:
    """:func:`correct_steps_seen_in_training` within the rows of one task."""
    stat = "seen_share_gap_correct_vs_wrong"
    ok = _prepare(ok)
    need = ("seen_gap_depth", "seen_correct", "seen_wrong", "n_params", "seed")
    if _missing(ok, need):
        return Verdict(stat, "inconclusive", NAN3, 0, {
            "reason": f"no {', '.join(_missing(ok, need))} in the table: the rule needs {', '.join(need)}",
            "seeds_per_cell": 0})
    rows = ok[scratchpad_flags(ok) == True]  # noqa: E712
    details: dict = {"seeds_per_cell": 0}
    if rows.empty:
        details["reason"] = "no scratchpad trials: steps are not written"
        return Verdict(stat, "inconclusive", NAN3, 0, details)
    vals = rows[list(need)].to_numpy(dtype=float)
    gap_ok = np.isfinite(rows["seen_gap_depth"].to_numpy(dtype=float))
    details["trials_without_a_gap"] = int((~gap_ok).sum())
    bad = int(np.isinf(vals).sum() + np.isnan(vals[gap_ok]).sum())
    if bad:
        details["reason"] = (f"{bad} infinite values, or NaN shares, sizes or seeds in trials with a gap: "
                             "bad data, not a measurement")
        return Verdict(stat, "inconclusive", NAN3, len(rows), details)
    unfit = _unfit_rows(rows, details)
    if unfit:
        details["reason"] = unfit
        return Verdict(stat, "inconclusive", NAN3, len(rows), details)
    cell = [c for c in ("n_params", "n_train") if c in rows and rows[c].notna().all()]
    per = _per_seed(rows[gap_ok], cell, ["seen_gap_depth", "seen_correct", "seen_wrong"])
    groups = [g for _, g in per.groupby(cell)] if len(per) else []
    gaps = [g["seen_gap_depth"].to_numpy(float) for g in groups]
    correct = [g["seen_correct"].to_numpy(float) for g in groups]
    n = len(per)
    details["seeds_per_cell"] = int(min((g.size for g in gaps), default=0))
    details["cells"] = len(groups)
    details["deciding_cells"] = [deciding_cell(_cell_of(rows, dict(zip(cell, k if isinstance(k, tuple) else (k,)))),
                                               g["seed"].nunique())
                                 for k, g in per.groupby(cell)] if cell and len(per) else []
    details["raw_gap_all_depths"] = ci_entry(_cells_mean_ci(
        [(g["seen_correct"] - g["seen_wrong"]).to_numpy(float) for g in groups], METRIC_RANGES["seen_gap_depth"]), n)
    details["seen_share_correct"] = ci_entry(_cells_mean_ci(correct, METRIC_RANGES["seen_correct"]), n)
    details["seen_share_wrong"] = ci_entry(_cells_mean_ci([g["seen_wrong"].to_numpy(float) for g in groups],
                                                          METRIC_RANGES["seen_wrong"]), n)
    if "compound_eps" in rows:
        details["compounding_eps_median"] = float(np.nanmedian(rows["compound_eps"])) if len(rows) else math.nan
    if not groups or details["seeds_per_cell"] < MIN_REPLICATES:
        details["reason"] = f"fewer than {MIN_REPLICATES} distinct seeds with both correct and wrong nodes in a cell"
        return Verdict(stat, "inconclusive", NAN3, n, details)
    shares = per[["seen_correct", "seen_wrong"]].to_numpy(float).ravel()
    if np.all(shares == 0) or np.all(shares == 1):
        details["reason"] = ("seen-ness does not vary: " + ("every node" if shares[0] == 1 else "no node")
                             + " occurs in training, so the gap is 0 by construction")
        return Verdict(stat, "inconclusive", NAN3, n, details)
    why = degenerate(gaps) or degenerate(correct)
    if why:
        details["reason"] = f"degenerate deciding cells: {why}"
        return Verdict(stat, "inconclusive", NAN3, n, details)
    gap_ci = _cells_mean_ci(gaps, METRIC_RANGES["seen_gap_depth"])
    share_ci = _cells_mean_ci(correct, METRIC_RANGES["seen_correct"])
    parts = [(stat, _decide(gap_ci, p["margin"]), gap_ci),
             ("seen_share_correct",
              _decide(share_ci, MOSTLY), share_ci)]
    verdict, k = _combine(parts)
    details["parts"] = {"correct_more_often_seen_at_equal_depth": parts[0][1], "correct_mostly_seen": parts[1][1]}
    words = {part: _part_word(part, verdict) for part in ("supported", "not_supported", "inconclusive")}
    wrong = details["seen_share_wrong"]
    details["reason"] = (f"over {len(groups)} cells ({n} seeds): correct steps' whole computation seen in training "
                         f"{share_ci[0]:.3f} [{share_ci[1]:.3f}, {share_ci[2]:.3f}] (wrong steps {wrong['value']:.3f}) "
                         f"against {MOSTLY} ({words[parts[1][1]]}); at equal depth correct minus wrong "
                         f"{gap_ci[0]:+.3f} [{gap_ci[1]:+.3f}, {gap_ci[2]:+.3f}] against the margin {p['margin']:g} "
                         f"({words[parts[0][1]]})")
    if verdict == "not_supported":
        missing = ("at equal depth correct steps are not seen in training more often than wrong steps by the margin"
                   if k == 0 else "most correct steps are not ones seen in training")
        details["reason"] += (f"; not supported: {missing} (the source's subgraph matching is not found here; no "
                              "model sizes are compared, so this is no evidence that scale goes further)")
    return Verdict(parts[k][0], verdict, parts[k][2], n, details)


def _by_task(rule, ok: pd.DataFrame, p: Mapping, n_boot: int, seed: int) -> Verdict:
    """``rule`` decided within each task; all tasks must hold (:func:`_combine`), tasks are never pooled."""
    ok = _prepare(ok)
    tasks = sorted(ok["task"].dropna().unique(), key=str) if "task" in ok else []
    untasked = int(ok["task"].isna().sum()) if tasks else 0
    if len(tasks) <= 1:
        one = rule(ok[ok["task"].notna()] if tasks else ok, p, n_boot, seed)
        if tasks:
            one.details["task_used"] = json_key(tasks[0])
        if untasked:
            one.details["trials_without_a_task"] = untasked
        return one
    results = [rule(ok[ok["task"] == t], p, n_boot, seed) for t in tasks]
    verdict, k = _combine([(r.statistic, r.outcome, r.interval) for r in results])
    stat, triple, n, details = results[k].statistic, results[k].interval, results[k].n_trials, results[k].details
    by_task = {json_key(t): {"verdict": r.outcome, **ci_entry(r.interval, r.n_trials), "reason": r.details.get("reason", "")}
               for t, r in zip(tasks, results)}
    # Every task's deciding cells: the claim holds only when it holds in every task, so each task's models must
    # have learned theirs (the engine's gate and seed counts see them all).
    details = {**details, "deciding_cells": [c for r in results for c in r.details.get("deciding_cells", [])],
               "task_used": json_key(tasks[k]), "by_task": by_task,
               "seeds_per_cell": int(min(r.details.get("seeds_per_cell", 0) for r in results)),
               "reason": (f"decided within each of {len(tasks)} tasks (never pooled or compared across tasks): "
                          f"supported only when every task supports, not supported when any contradicts; task "
                          f"{json_key(tasks[k])} decides: {details.get('reason', '')}")}
    if untasked:
        details["trials_without_a_task"] = untasked
    return Verdict(stat, verdict, triple, n, details)  # the deciding task is details["task_used"]


def scale_does_not_lift_ood(ok: pd.DataFrame, p: Mapping, n_boot: int, seed: int) -> Verdict:
    """Dziri et al. 2023: OOD exact match does not rise with model size and stays low (see the module docstring)."""
    return _by_task(_scale_one_task, ok, {**DEFAULTS["scale_does_not_lift_ood"], **p}, n_boot, seed)


def correct_steps_seen_in_training(ok: pd.DataFrame, p: Mapping, n_boot: int, seed: int) -> Verdict:
    """Dziri et al. 2023: correct steps are mostly seen ones, more than wrong ones are (see the module docstring)."""
    return _by_task(_steps_one_task, ok, {**DEFAULTS["correct_steps_seen_in_training"], **p}, n_boot, seed)


#: Claim name → rule (the plugin's claims reference these).
RULES = {"scale_does_not_lift_ood": scale_does_not_lift_ood,
         "correct_steps_seen_in_training": correct_steps_seen_in_training}


# --------------------------------------------------------------------------------------------------------------
# Guard of ``scale_does_not_lift_ood``: the largest planned model size must be among the sizes the rule read
# --------------------------------------------------------------------------------------------------------------

_SHAPE = ("layers", "d_model")


def _size_key(rows: pd.DataFrame) -> tuple[pd.Series, str]:
    """Per row an orderable model size and how it is named: from the config columns (layers × d_model², a failed
    or unrecorded trial has no ``n_params``) where the table has them, else ``n_params``."""
    if all(c in rows for c in _SHAPE):
        layers = pd.to_numeric(rows["layers"], errors="coerce")
        d = pd.to_numeric(rows["d_model"], errors="coerce")
        return layers * d * d + d * 1e-9, "shape"  # ties in layers × d² broken by the wider model
    return pd.to_numeric(rows.get("n_params", pd.Series(math.nan, index=rows.index)), errors="coerce"), "n_params"


def _size_words(rows: pd.DataFrame, how: str) -> str:
    if how == "shape":
        r = rows.iloc[0]
        heads = sorted(pd.to_numeric(rows["heads"], errors="coerce").dropna().unique()) if "heads" in rows else []
        return (f"{int(r['layers'])} layers × d_model {int(r['d_model'])}"
                + (f", heads {', '.join(f'{int(h)}' for h in heads)}" if heads else ""))
    return f"{float(rows['n_params'].iloc[0]):,.0f} parameters"


def largest_planned_size_missing(df: pd.DataFrame, ok: pd.DataFrame, details: Mapping, verdict: str):
    """Guard of ``scale_does_not_lift_ood``: within each decided task and the deciding format (scratchpad where
    planned), the largest model size the study planned (every status: ok, failed, diverged, planned without a
    record, and any training-set size) must be among the sizes the rule decided on. When its trials all failed,
    never wrote a record, or ran only with a smaller training set than the deciding slice, the rule answered at a
    smaller size: "scale does not lift OOD" was then not tested at the scale the study asked about."""
    cells = [c.get("cell", {}) for c in details.get("deciding_cells") or []]
    if not cells or df.empty:
        return None
    df = df.reset_index(drop=True)  # a concatenated table may repeat index labels
    size, how = _size_key(df)
    if how == "n_params" and not any("n_params" in c for c in cells):
        return None
    if "task" in df and df["task"].notna().any():
        tasks = sorted(df["task"].dropna().unique(), key=str)
        decided = {json_key(c["task"]) for c in cells if "task" in c}
        tasks = [t for t in tasks if json_key(t) in decided] if decided else (
            [t for t in tasks if json_key(t) == details.get("task_used")] or tasks)
    else:
        tasks = [None]
    flags = scratchpad_flags(df)
    short = []
    for t in tasks:
        in_task = df["task"] == t if t is not None else pd.Series(True, index=df.index)
        fmt = True if (flags[in_task] == True).any() else False  # noqa: E712 (planned scratchpad trials: that format)
        planned = df[in_task & (flags == fmt) & size.notna()]
        if planned.empty:
            continue
        top = planned[size[planned.index] == size[planned.index].max()]
        mine = [c for c in cells if t is None or "task" not in c or json_key(c["task"]) == json_key(t)]
        if how == "shape":
            want = (float(top["layers"].iloc[0]), float(top["d_model"].iloc[0]))
            got = any(all(k in c for k in _SHAPE) and (float(c["layers"]), float(c["d_model"])) == want for c in mine)
        else:
            want = float(top["n_params"].iloc[0])
            got = any("n_params" in c and np.isclose(float(c["n_params"]), want) for c in mine)
        if got:
            continue
        status = top["status"].astype(str).value_counts() if "status" in top else pd.Series(dtype=int)
        trials = ", ".join(f"{n} {s}" for s, n in status.items())
        if "n_train" in top and top["n_train"].notna().any():
            trials += f"; n_train {', '.join(f'{float(v):g}' for v in sorted(pd.to_numeric(top['n_train'], errors='coerce').dropna().unique()))}"
        short.append(f"{'task ' + json_key(t) + ': ' if t is not None else ''}the largest planned model size "
                     f"({_size_words(top, how)}) is not among the sizes the rule decided on (its trials: {trials})")
    if short:
        return ("; ".join(short) + " — failed, diverged, missing (planned, no record) or ok only with a smaller "
                "training set than the deciding slice, so the rule answered at a smaller size",
                "value_without_largest_planned_size")
    return None
