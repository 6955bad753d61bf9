"""Hostile review of the binding claims' ladders (``binding``: hypernetwork vs MLP; ``binding_tpr``: TPR student vs
MLP; both :func:`bindscale.studies.scaling.verdicts.binding_ratio`): parameters-to-target are interpolated between
the first cell of a model's width ladder that reaches the target and the cell before it, so every planned cell of
the ladder up to there, at the planned hold-out, decides the number, and a ladder whose held-out R² falls with
width was not trained, not short of capacity.

The tables are the review's: an MLP ladder 16 / 64 / 256 (held-out R² 0.45 / 0.85 / 0.97) against a binding
student at 0.6 / 0.8 / 0.92 (which needs more parameters than the MLP: not supported), the TPR student at widths
32 / 64 / 128 and the hypernetwork at 8 / 24 / 48 (about the TPR's parameter counts: 3240 / 12744 / 35640), 8
seeds, noise 0.01. Every record carries the parameter count its config gives.

A second review: students below the target that did not learn their training tasks (gated per model), students
trained on another task or with another recipe (not compared), and reruns of a seed (one seed, not two).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from bindscale.studies.scaling.tpr import tpr_params
from bindscale.verdicts.engine import compute_verdicts
from tests.studies.scaling.test_verdicts import _row, make_results, mlp_params, student_params

MLP_MEANS, MLP_WIDTHS = (0.45, 0.85, 0.97), (16, 64, 256)
SECOND_MEANS = (0.6, 0.8, 0.92)
#: The binding student's widths, by kind: the hypernetwork's hold about the TPR student's parameter counts.
SECOND_WIDTHS = {"tpr": (32, 64, 128), "hypernet": (8, 24, 48)}
#: The claim whose rule reads each binding student.
CLAIM = {"tpr": "binding_tpr", "hypernet": "binding"}
SHORT = {"tpr": "TPR", "hypernet": "hypernet"}


def _table(kind: str = "tpr", mlp_means=MLP_MEANS, second_means=SECOND_MEANS, mlp_widths=MLP_WIDTHS,
           second_widths=None, holdouts=(0.25,), mlp_r2_id=None, n_seeds: int = 8, seed: int = 0,
           sd: float = 0.01) -> pd.DataFrame:
    """The review's table: per model, a cell per width and hold-out, ``n_seeds`` seeds around its mean; the binding
    student at ``second_widths`` (default: its kind's :data:`SECOND_WIDTHS`)."""
    rng = np.random.default_rng(seed)
    rows: list[dict] = []
    second_widths = SECOND_WIDTHS[kind] if second_widths is None else second_widths
    for h in holdouts:
        for model, widths, means in (("mlp", mlp_widths, mlp_means), (kind, second_widths, second_means)):
            for j, (w, m) in enumerate(zip(widths, means)):
                p = tpr_params(8, 16, 16, w, 2) if model == "tpr" else student_params(model, w)
                fit = mlp_r2_id[j] if model == "mlp" and mlp_r2_id else 0.97
                for s in range(n_seeds):
                    rows.append(_row(len(rows), model=model, width=w, depth=2, holdout=h, seed=s,
                                     r2_heldout=m + rng.normal(0, sd), r2_id=fit, n_params=p))
    return pd.DataFrame(rows)


def _verdict(df: pd.DataFrame, kind: str = "tpr", unrecorded: pd.DataFrame | None = None) -> dict:
    return compute_verdicts(df, {"verdicts": {CLAIM[kind]: {}}}, n_boot=400, unrecorded=unrecorded)[0]


def _fail(df: pd.DataFrame, mask: pd.Series, status: str = "failed") -> pd.DataFrame:
    """The trials of ``mask`` as the runner records a failure: no metrics (held-out R², fit, parameters)."""
    df = df.copy()
    df.loc[mask, "status"] = status
    df.loc[mask, ["r2_heldout", "r2_id", "n_params"]] = math.nan
    return df


# ---------------------------------------------- a lost cell of the ladder is bracketed across, silently --

@pytest.mark.parametrize("kind", ["tpr", "hypernet"])
@pytest.mark.parametrize("keep_n_params", [True, False])
def test_a_failed_cell_below_the_target_is_not_bracketed_across(kind, keep_n_params):
    """Review: every MLP trial at width 64 failed; the rule interpolated from width 16 instead, doubling the MLP's
    parameters-to-target, and not supported became supported. A failed record carries no parameter count
    (``keep_n_params`` False): the lost cell is then placed by its width."""
    df = _table(kind)
    honest = _verdict(df, kind)
    assert honest["verdict"] == "not_supported" and honest["value"] < 1
    lost = (df["model"] == "mlp") & (df["width"] == 64)
    failed = _fail(df, lost)
    if keep_n_params:
        failed.loc[lost, "n_params"] = mlp_params(64, 2)
    v = _verdict(failed, kind)
    assert v["verdict"] == "inconclusive" and math.isnan(v["value"]), v["details"]["reason"]
    reason = v["details"]["reason"]
    assert reason.startswith("a planned cell of the ladder up to the target has no usable trial (MLP width 64 "
                             "(depth 2): failed 8) at hold-out 0.25"), reason
    assert "its own result there: supported" in reason  # what the hole said
    assert v["details"]["lost_ladder_cells"] == {"mlp": [{"width": 64, "depth": 2, "statuses": "failed 8", "n_params": (
        mlp_params(64, 2) if keep_n_params else None)}]}
    assert v["details"]["value_without_the_lost_cells"]["value"] > 1


def test_a_failed_cell_of_the_binding_students_ladder_is_not_bracketed_across():
    """Review (the TPR side, moving the ratio the other way): the TPR cell that first reaches the target failed,
    and the next one up was read as the first to reach it."""
    df = _table(second_means=(0.6, 0.95, 0.97), second_widths=(8, 16, 32))
    assert _verdict(df)["verdict"] == "supported"
    v = _verdict(_fail(df, (df["model"] == "tpr") & (df["width"] == 16)))
    assert v["verdict"] == "inconclusive" and math.isnan(v["value"])
    assert "(TPR width 16 (depth 2): failed 8)" in v["details"]["reason"]


def test_a_planned_cell_without_any_record_is_lost_too():
    """A cell the plan has and the table has not (its trials never wrote a record): the runner hands it to the
    engine as unrecorded rows, which the guard reads as planned."""
    df = _table()
    lost = (df["model"] == "mlp") & (df["width"] == 64)
    plan = df.loc[lost, ["trial_id", "model", "width", "depth", "holdout", "seed", "encoding", "split", "M", "K",
                         "steps", "lr", "weight_decay"]].assign(status="missing")
    v = _verdict(df[~lost], unrecorded=plan)
    assert v["verdict"] == "inconclusive" and "(MLP width 64 (depth 2): missing 8)" in v["details"]["reason"]


def test_seeds_lost_in_a_cell_below_the_bracket_count_against_min_seeds():
    """Every cell of the ladder up to the bracket is a deciding cell: 3 of 8 seeds failed at MLP width 16 (below the
    interpolation's start) leave 5, fewer than the 6 of 8 min_seeds asks for."""
    df = _table()
    v = _verdict(df)
    cells = [(c["cell"]["model"], c["cell"]["width"], c.get("gated", True)) for c in v["details"]["deciding_cells"]]
    below, reach = ["id_minus_heldout_r2"], ["r2_id"]  # the gate below the target, the claim's level at it
    assert cells == [("mlp", 16, below), ("mlp", 64, below), ("mlp", 256, reach),
                     ("tpr", 32, below), ("tpr", 64, below), ("tpr", 128, reach)]
    lost = (df["model"] == "mlp") & (df["width"] == 16) & (df["seed"] < 3)
    v = _verdict(_fail(df, lost))
    assert v["verdict"] == "inconclusive" and math.isnan(v["value"])
    label = "model mlp, hold-out 0.25, width 16, depth 2"
    assert v["details"]["lost_seeds_by_cell"][label]["statuses"] == {"failed": 3}
    assert f"3 of 8 seeds of the deciding cell ({label})" in v["details"]["reason"]


def test_a_lost_cell_above_the_bracket_changes_nothing():
    """The ladder ends at the cell that reaches the target: a failed wider cell (not the widest) does not decide."""
    df = _table(mlp_means=(0.45, 0.85, 0.97, 0.975, 0.98), mlp_widths=(16, 64, 256, 512, 1024))
    before = _verdict(df)
    v = _verdict(_fail(df, (df["model"] == "mlp") & (df["width"] == 512)))
    assert before["verdict"] == v["verdict"] == "not_supported"
    assert v["value"] == pytest.approx(before["value"]) and "lost_ladder_cells" not in v["details"]


# ---------------------------------------------- the planned hold-out, not the smallest one that survived --

def _two_holdouts(kind: str = "tpr") -> pd.DataFrame:
    a = _table(kind, holdouts=(0.25,))
    b = _table(kind, mlp_means=(0.30, 0.60, 0.93), holdouts=(0.5,), seed=1)
    b["trial_id"] = b["trial_id"] + "h5"
    return pd.concat([a, b], ignore_index=True)


@pytest.mark.parametrize("lost_model", ["mlp", "tpr"])
def test_a_lost_planned_holdout_is_not_replaced_by_the_next_one(lost_model):
    """Review: every MLP trial at hold-out 0.25 failed and the rule answered at hold-out 0.5 (a coverage where the MLP
    is worse), supported where hold-out 0.25 said not supported."""
    df = _two_holdouts()
    honest = _verdict(df)
    assert honest["verdict"] == "not_supported" and honest["details"]["holdout"] == 0.25
    v = _verdict(_fail(df, (df["model"] == lost_model) & (df["holdout"] == 0.25)))
    assert v["verdict"] == "inconclusive" and math.isnan(v["value"]), v["details"]["reason"]
    who = "MLP" if lost_model == "mlp" else "TPR"
    assert v["details"]["reason"].startswith(
        f"the smallest hold-out planned for both the MLP and the TPR is 0.25, and the {who} has no usable trial "
        f"there (MLP: {'failed' if lost_model == 'mlp' else 'ok'} 24; TPR: {'failed' if lost_model == 'tpr' else 'ok'}"
        " 24): the rule answered at hold-out 0.5")
    assert v["details"]["lost_planned_holdout"]["planned_holdout"] == 0.25
    assert v["details"]["value_at_another_holdout"]["value"] > 0


# ---------------------------------------------- a ladder that falls with width was not trained --

def test_a_wider_cell_below_a_narrower_one_is_a_broken_ladder():
    """Review: the width-64 MLP did not learn (in-distribution R² 0.30, held-out 0.30, below the width-16 MLP's 0.45),
    and as the interpolation's ungated start it set the MLP's count: supported where the trained ladder says not
    supported."""
    df = _table(mlp_means=(0.45, 0.30, 0.97), mlp_r2_id=[0.6, 0.30, 0.97])
    v = _verdict(df)
    assert v["verdict"] == "inconclusive" and math.isnan(v["value"]), v["details"]["reason"]
    reason = v["details"]["reason"]
    assert reason.startswith("a ladder falls with width below the target: MLP width 64 (depth 2) has held-out R² 0.29")
    assert "below width 16's 0.45" in reason
    (fall,) = v["details"]["ladder_falls_with_width"]
    assert (fall["model"], fall["narrower_width"], fall["wider_width"]) == ("MLP", 16, 64)
    assert fall["difference"]["ci_high"] < 0 and v["details"]["value_off_the_falling_ladder"]["value"] > 1


def test_small_students_below_the_fit_level_and_a_flat_step_still_decide():
    """Capacity is what the ladder measures: small students that miss R² 0.9 in distribution decide (they are not
    gated), and a step that stays level within the seeds' noise is not a fall."""
    df = _table(mlp_means=(0.45, 0.85, 0.97), mlp_r2_id=[0.5, 0.86, 0.97])
    assert _verdict(df)["verdict"] == "not_supported"
    # (a level step is flagged by chance in about 1 table in 40, the one-sided 2.5% of the interval: this draw is not)
    flat = _table(mlp_means=(0.80, 0.80, 0.97), mlp_r2_id=[0.85, 0.85, 0.97], seed=1)
    v = _verdict(flat)
    assert v["verdict"] == "not_supported" and "ladder_falls_with_width" not in v["details"], v["details"]["reason"]


def test_the_planted_table_still_decides_binding():
    """The engine's planted table (make_results) is unchanged by the ladder checks: supported, nothing lost."""
    v = compute_verdicts(make_results(effect=True), {"verdicts": {"binding": {}}}, n_boot=400)[0]
    assert v["verdict"] == "supported", v["details"]["reason"]
    assert not {"lost_ladder_cells", "lost_planned_holdout", "ladder_falls_with_width"} & set(v["details"])


# ---------------------------------------------- every ladder cell the interpolation reads is gated per model --

def _unlearned(df: pd.DataFrame, model: str, width: int, seeds, fit: float = 0.30,
               heldout: float = 0.78) -> pd.DataFrame:
    """``seeds`` of the cell (model, width) as students that did not learn their training tasks: in-distribution R²
    ``fit``, held-out R² ``heldout`` (above their fit)."""
    df = df.copy()
    m = (df["model"] == model) & (df["width"] == width) & df["seed"].isin(list(seeds))
    df.loc[m, "r2_id"] = fit + 0.01 * np.arange(m.sum()) / max(int(m.sum()), 1)
    df.loc[m, "r2_heldout"] = heldout + 0.01 * np.arange(m.sum()) / max(int(m.sum()), 1)
    return df


@pytest.mark.parametrize("kind", ["tpr", "hypernet"])
def test_unlearned_students_at_the_interpolations_start_are_gated(kind):
    """Review: 4 of 8 MLPs of width 64, the interpolation's start, fit their training tasks to R² 0.30 and held-out
    combinations to 0.78. The cell was not gated (only the cell reaching the target was), its mean fell, the MLP
    seemed to need more parameters, and the claim was decided on them. Every cell the interpolation reads is gated
    per model: below the target, a student's in-distribution R² must be at least its held-out R², so these four are
    left out and 4 of 8 seeds remain where 6 are needed. The binding student here needs what the MLP needs (ratio
    about 1: inconclusive); with the four unlearned MLPs the old rule said supported."""
    df = _table(kind, second_means=(0.6, 0.85, 0.95))
    honest = _verdict(df, kind)
    assert honest["verdict"] == "inconclusive" and honest["ci_low"] < 1 < honest["ci_high"], honest["details"]["reason"]
    v = _verdict(_unlearned(df, "mlp", 64, range(4)), kind)
    assert v["verdict"] == "inconclusive", v["details"]["reason"]
    assert v["details"]["value_with_every_model"]["ci_low"] > 1  # what the unlearned students said: supported
    assert v["ci_low"] < 1 < v["ci_high"]  # the four that learned say what the honest table says
    label = "model mlp, hold-out 0.25, width 64, depth 2"
    assert v["details"]["lost_to_gates_by_cell"][label] == {"lost": 4, "planned_ok": 8,
                                                            "by_gate": {"id_minus_heldout_r2": 4}}
    assert v["details"]["lost_seeds_by_cell"][label]["statuses"] == {"missed a competence gate": 4}
    assert f"4 of 8 seeds of the deciding cell ({label})" in v["details"]["reason"]
    gate = next(g for g in v["details"]["gates"] if g["metric"] == "id_minus_heldout_r2")
    assert gate["level"] == 0 and label in gate["cells"]


@pytest.mark.parametrize("kind", ["tpr", "hypernet"])
def test_one_unlearned_student_below_the_target_is_left_out_and_the_rest_decide(kind):
    """One unlearned MLP under the interpolation's start (width 16) and one at it: each is left out, counted
    against min_seeds (7 of 8 remain), and the ratio is read from the students that learned."""
    df = _table(kind)
    bad = _unlearned(_unlearned(df, "mlp", 64, [0]), "mlp", 16, [3], fit=0.2, heldout=0.3)
    v = _verdict(bad, kind)
    assert v["verdict"] == "not_supported", v["details"]["reason"]
    for w in (16, 64):
        label = f"model mlp, hold-out 0.25, width {w}, depth 2"
        assert v["details"]["lost_seeds_by_cell"][label]["statuses"] == {"missed a competence gate": 1}
    clean = _verdict(df[~(((df["model"] == "mlp") & (df["width"] == 64) & (df["seed"] == 0))
                          | ((df["model"] == "mlp") & (df["width"] == 16) & (df["seed"] == 3)))], kind)
    assert v["value"] == pytest.approx(clean["value"]) and v["ci_low"] == pytest.approx(clean["ci_low"])


def test_the_binding_students_ladder_below_the_target_is_gated_too():
    """The other side: unlearned TPR students at the TPR's interpolation start (held-out 0.55 over a fit of 0.3)
    would make the TPR seem to need more parameters, against the claim; they are left out as well."""
    df = _table(second_means=(0.6, 0.95, 0.97), second_widths=(8, 16, 32))
    assert _verdict(df)["verdict"] == "supported"
    v = _verdict(_unlearned(df, "tpr", 8, range(3), fit=0.3, heldout=0.55))
    assert v["verdict"] == "inconclusive", v["details"]["reason"]
    assert v["details"]["lost_to_gates_by_cell"]["model tpr, hold-out 0.25, width 8, depth 2"]["lost"] == 3


# ---------------------------------------------- the two students share every task and training field --

@pytest.mark.parametrize("kind", ["tpr", "hypernet"])
@pytest.mark.parametrize("column, mlp_value, other_value", [
    ("task.teacher", "reference", "per_task_scale"),
    ("task.samples_per_task", 16, 64),
    ("train.grad_clip", 1.0, 0.1),
    ("train.grad_clip", 1.0, None),  # clipping off against on
    ("train.eval_tasks", 256, 64),
])
def test_students_of_another_task_or_recipe_are_not_compared(kind, column, mlp_value, other_value):
    """Review: the binding student's rows came from another teacher, another number of samples per task or another
    gradient clip than the MLP's, and the ratio was decided as if they were one experiment. Every task and training
    field of the trial config must be shared, else inconclusive, naming the field."""
    df = _table(kind).assign(**{column: mlp_value})
    assert _verdict(df, kind)["verdict"] == "not_supported"
    df[column] = df[column].astype(object)
    df.loc[df["model"] == kind, column] = other_value
    v = _verdict(df, kind)
    assert v["verdict"] == "inconclusive" and math.isnan(v["value"]), v["details"]["reason"]
    def words(x):
        return "null" if x is None else f"{x:g}" if isinstance(x, float) else str(x)

    assert (f"the MLP and {SHORT[kind]} trials at hold-out 0.25 do not share one value of {column} ({column}: MLP "
            f"{words(mlp_value)}, {SHORT[kind]} {words(other_value)})") in v["details"]["reason"]
    assert set(v["details"]["differing_fields"]) == {column}


def test_every_field_that_differs_is_named():
    df = _table().assign(**{"task.teacher": "reference", "train.grad_clip": 1.0, "task.samples_per_task": 16})
    tpr = df["model"] == "tpr"
    df.loc[tpr, "task.teacher"] = "per_task_scale"
    df.loc[tpr, "train.grad_clip"] = 0.1
    v = _verdict(df)
    assert v["verdict"] == "inconclusive"
    assert set(v["details"]["differing_fields"]) == {"task.teacher", "train.grad_clip"}
    assert "do not share one value of task.teacher, train.grad_clip" in v["details"]["reason"]


def test_the_compared_fields_are_read_off_the_trial_config():
    """Every field of the trial config's task and train sections is compared, by its column name: the sweep axes
    held at a value both students have, every other field at one value."""
    from bindscale.studies.scaling.config import TaskConfig, TrainConfig, TrialConfig
    from bindscale.studies.scaling.verdicts import BINDING_FIXED, BINDING_LIKE

    alias = {path: name for name, path in TrialConfig.AXES.items()}
    want = {alias.get(f"{sec}.{f}", f"{sec}.{f}") for sec, cls in (("task", TaskConfig), ("train", TrainConfig))
            for f in cls.model_fields}
    assert want - {"holdout", "withheld_pairs"} <= set(BINDING_LIKE) | set(BINDING_FIXED)
    assert {"task.teacher", "task.samples_per_task", "train.grad_clip"} <= set(BINDING_FIXED)


def test_a_field_no_grid_sweeps_must_hold_one_value_even_where_both_students_have_it():
    """The MLP's ladder also ran with another gradient clip (a second tier's records merged in): not a value to pick
    by count (the gate's second pass can move the count), but two recipes in one table."""
    df = _table().assign(**{"train.grad_clip": 1.0})
    extra = df[df["model"] == "mlp"].assign(**{"train.grad_clip": 0.1, "r2_heldout": lambda d: d["r2_heldout"] - 0.2})
    v = _verdict(pd.concat([df, extra.assign(trial_id=extra["trial_id"] + "c")], ignore_index=True))
    assert v["verdict"] == "inconclusive", v["details"]["reason"]
    assert v["details"]["differing_fields"] == {"train.grad_clip": {"mlp": [0.1, 1], "tpr": [1]}}
    assert "(train.grad_clip: MLP 0.1, 1, TPR 1)" in v["details"]["reason"]


def test_a_sweep_axis_is_held_at_a_value_both_students_have():
    """The MLP also ran a longer grid (steps is a sweep axis), with more records than the shared one: the rule
    compares at the length both students ran, not at the most common length (which only the MLP has), and says so."""
    df = _table()
    runs = [_table(seed=k + 1) for k in range(3)]  # 24 seeds of the longer MLP grid
    longer = pd.concat([t[t["model"] == "mlp"].assign(steps=4000, trial_id=t["trial_id"] + f"L{k}",
                                                      seed=t["seed"] + 8 * k, r2_heldout=t["r2_heldout"] - 0.05)
                        for k, t in enumerate(runs)], ignore_index=True)
    v, alone = _verdict(pd.concat([df, longer], ignore_index=True)), _verdict(df)
    assert v["verdict"] == alone["verdict"] == "not_supported", v["details"]["reason"]
    assert v["value"] == pytest.approx(alone["value"])
    assert v["details"]["steps_used"] == 1000 and v["details"]["steps_present"] == [1000, 4000]


# ---------------------------------------------- reruns of a configuration and seed are one seed --

def _rerun(df: pd.DataFrame, shift: float = 0.0, seed: int = 5) -> pd.DataFrame:
    """Each record again, as a rerun of its configuration and seed under another trial id, with another held-out R²
    (the table lacks axis columns, so the engine cannot tell a rerun from another setting of a missing axis)."""
    rng = np.random.default_rng(seed)
    again = df.assign(trial_id=df["trial_id"] + "r", r2_heldout=df["r2_heldout"] + shift + rng.normal(0, 0.01, len(df)))
    return pd.concat([df, again], ignore_index=True)


def test_reruns_of_a_seed_are_not_counted_as_seeds():
    """Review: a table without every axis column, each of its 2 seeds run twice: 4 records per cell were read as 4
    seeds (enough for an interval); they are 2 seeds, fewer than a verdict needs."""
    df = _rerun(_table(n_seeds=2))
    assert {"activation", "batch_tasks", "withheld_pairs"} - set(df.columns)  # the table lacks axis columns
    v = _verdict(df)
    assert v["verdict"] == "inconclusive" and v["details"]["reason"].startswith("fewer than 3 seeds in a deciding cell")
    assert v["details"]["seeds_per_cell"] == 2
    assert all(c["n_seeds"] == 2 for lad in v["details"]["ladders_to_target"].values() for c in lad)


def test_reruns_of_a_seed_are_averaged_within_it():
    """3 seeds, each run twice: one value per seed, the mean of its runs, and 3 seeds per cell; the ratio is the
    one of the table holding each seed's mean once."""
    df = _rerun(_table(n_seeds=3))
    v = _verdict(df)
    assert v["details"]["seeds_per_cell"] == 3
    assert all(c["n"] == 3 for c in v["details"]["deciding_cells"])
    cols = ["model", "width", "depth", "holdout", "seed"]
    means = df.groupby(cols, as_index=False).agg({"r2_heldout": "mean", "r2_id": "mean", "n_params": "first"})
    once = pd.DataFrame([_row(i, **{k: r[k] for k in cols}, r2_heldout=r["r2_heldout"], r2_id=r["r2_id"],
                              n_params=r["n_params"]) for i, r in means.iterrows()])
    alone = _verdict(once)
    assert v["verdict"] == alone["verdict"]
    assert (v["value"], v["ci_low"], v["ci_high"]) == pytest.approx((alone["value"], alone["ci_low"], alone["ci_high"]))
