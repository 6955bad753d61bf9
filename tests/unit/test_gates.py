"""Competence gates: no claim is decided by models that did not learn their training task."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from bindscale.core import registry
from bindscale.verdicts.engine import compute_verdicts, deciding_cell, gate_check
from bindscale.core.study import SUPPORTED, Claim, Gate, StudyPlugin, Verdict

GATE = Gate(metric="acc_id", threshold="min_id", what="in-distribution exact match",
            source="a test source: near-perfect training accuracy")
LOSS = Gate(metric="excess", threshold="max_excess", what="next-token loss above the entropy (nats)",
            source="a test source", higher=False)


def _table(fit_small=0.99, fit_big=0.99, seeds=8) -> pd.DataFrame:
    rows = []
    for w, fit in ((16, fit_small), (64, fit_big)):
        for s in range(seeds):
            rows.append({"trial_id": f"w{w}s{s}", "status": "ok", "width": w, "seed": s,
                         "acc_id": fit, "acc_ood": 0.2 + 0.002 * w + 0.001 * s, "excess": 0.05})
    return pd.DataFrame(rows)


def _cells(df):
    return [deciding_cell({"width": w}, int((df["width"] == w).sum())) for w in (16, 64)]


def test_a_cell_below_its_gate_is_named_with_its_fit():
    df = _table(fit_small=0.33)
    reason, report = gate_check(df, _cells(df), [GATE], {"min_id": 0.95})
    assert reason and "width 16: in-distribution exact match 0.33 < 0.95" in reason
    assert "width 64" not in reason
    (g,) = report["gates"]
    assert g["cells"] == {"width 16": 0.33, "width 64": 0.99} and g["missed"] == ["width 16"]
    assert g["says"] == "in-distribution exact match ≥ 0.95"


def test_a_fit_just_below_its_gate_shows_the_digits_that_miss_it():
    # The default run printed "auxiliary's exact match ... 0.95 < 0.95" for a mean of 0.9497.
    df = _table(fit_small=0.9497)
    reason, _ = gate_check(df, _cells(df), [GATE], {"min_id": 0.95})
    assert "width 16: in-distribution exact match 0.9497 < 0.95" in reason


def test_the_reports_gate_lines_show_the_digits_that_miss_the_level_too():
    from bindscale.core.study import gate_lines

    df = _table(fit_small=0.9497)
    _, report = gate_check(df, _cells(df), [GATE], {"min_id": 0.95})
    (line,) = gate_lines(report)
    assert "width 16 0.9497 (missed)" in line and "width 64 0.99" in line


@pytest.mark.parametrize("value, level, text", [(0.9497, 0.95, "0.9497"), (0.05004, 0.05, "0.05004"),
                                                (0.918, 0.9, "0.918"), (0.95, 0.95, "0.95"),
                                                (math.nan, 0.9, "—"), (0.0, 0.95, "0")])
def test_fmt_against_never_prints_a_value_equal_to_a_level_it_differs_from(value, level, text):
    from bindscale.core.fmt import fmt_against

    assert fmt_against(value, level) == text


def test_every_cell_at_its_gate_passes_and_the_level_is_inclusive():
    df = _table(fit_small=0.95, fit_big=1.0)
    assert gate_check(df, _cells(df), [GATE], {"min_id": 0.95})[0] is None


@pytest.mark.parametrize("damage", ["nan", "missing_column", "no_rows"])
def test_an_unmeasured_fit_never_passes(damage):
    df = _table()
    if damage == "nan":
        df["acc_id"] = math.nan
    elif damage == "missing_column":
        df = df.drop(columns="acc_id")
    cells = _cells(df)
    if damage == "no_rows":
        cells.append(deciding_cell({"width": 256}, 0))
    reason, _ = gate_check(df, cells, [GATE], {"min_id": 0.95})
    assert reason and "not recorded" in reason


def test_a_loss_gate_fails_above_its_level():
    df = _table()
    df.loc[df["width"] == 64, "excess"] = 0.8
    reason, _ = gate_check(df, _cells(df), [LOSS], {"max_excess": 0.1})
    assert reason and "width 64: next-token loss above the entropy (nats) 0.8 > 0.1" in reason


def test_controls_and_partial_gates():
    df = _table(fit_small=0.0)  # width 16 is an untrained control: it is not meant to learn
    cells = [deciding_cell({"width": 16}, 8, gated=False), deciding_cell({"width": 64}, 8)]
    assert gate_check(df, cells, [GATE, LOSS], {"min_id": 0.95, "max_excess": 0.1})[0] is None
    df["excess"] = 0.5
    cells = [deciding_cell({"width": 16}, 8, gated=["excess"]), deciding_cell({"width": 64}, 8, gated=["acc_id"])]
    reason, _ = gate_check(df, cells, [GATE, LOSS], {"min_id": 0.95, "max_excess": 0.1})
    assert "width 16: next-token" in reason and "width 64" not in reason


def test_a_claim_gate_must_name_a_threshold_with_a_default():
    with pytest.raises(ValueError, match="gate on acc_id reads threshold 'min_id'"):
        Claim(name="x", title="x", source="s", statement="s", statistic="s", side="scale_suffices",
              rule=lambda *a: None, gates=(GATE,))


# ---------------------------------------------------------------- the engine, on a toy claim --

def _rule(ok, thresholds, n_boot, seed):
    big = ok[ok["width"] == 64]
    small = ok[ok["width"] == 16]
    gain = float(big["acc_ood"].mean() - small["acc_ood"].mean())
    return Verdict("gain", SUPPORTED, (gain, gain - 0.01, gain + 0.01), len(ok),
                   {"reason": "the wider model extrapolates better", "deciding_cells": _cells(ok)})


def _no_cells_rule(ok, thresholds, n_boot, seed):
    return Verdict("gain", SUPPORTED, (0.1, 0.05, 0.15), len(ok), {"reason": "always"})


@pytest.fixture
def toy(monkeypatch):
    claims = tuple(Claim(name=n, title="toy", source="src", statement="st", statistic="gain", side="scale_suffices",
                         rule=r, thresholds={"min_id": (0.0, 1.0)}, defaults={"min_id": 0.95}, gates=(GATE,))
                   for n, r in (("toy_gain", _rule), ("toy_nocells", _no_cells_rule)))
    plugin = StudyPlugin(name="toygate", kind="toygate", claims=claims, trainer=lambda *a, **k: [])
    real = registry.claim

    def claim(name):
        for c in claims:
            if c.name == name:
                return plugin, c
        return real(name)

    monkeypatch.setattr(registry, "claim", claim)
    return plugin


def test_the_engine_turns_an_unlearned_decision_inconclusive_and_says_why(toy):
    (v,) = compute_verdicts(_table(fit_small=0.33), {"verdicts": {"toy_gain": {}}})
    assert v["verdict"] == "inconclusive" and np.isnan(v["value"])
    assert "did not learn their training task" in v["details"]["reason"]
    assert "width 16: no seed passed (8 missed it; in-distribution exact match 0.33 < 0.95 over them)" in \
        v["details"]["reason"]
    assert "8 missed a competence gate" in v["details"]["reason"]
    assert v["details"]["value_with_every_model"]["value"] == pytest.approx(0.096)
    (learned,) = compute_verdicts(_table(), {"verdicts": {"toy_gain": {}}})
    assert learned["verdict"] == "supported" and learned["details"]["gates"][0]["missed"] == []


def test_a_study_file_sets_the_gate_level(toy):
    (v,) = compute_verdicts(_table(fit_small=0.33), {"verdicts": {"toy_gain": {"min_id": 0.3}}})
    assert v["verdict"] == "supported" and v["details"]["gates"][0]["level"] == 0.3


def test_a_gated_rule_that_names_no_cell_decides_nothing(toy):
    (v,) = compute_verdicts(_table(), {"verdicts": {"toy_nocells": {}}})
    assert v["verdict"] == "inconclusive" and "named no deciding cell" in v["details"]["reason"]


def test_every_builtin_claim_has_a_gate():
    """Each claim states the fit its deciding models must reach."""
    ungated = [c.name for s in registry.builtin().values() for c in s.claims if not c.gates]
    assert ungated == []


def test_a_table_without_an_axis_says_its_seeds_may_repeat(toy, monkeypatch):
    """Reruns in a table lacking an axis column were counted as seeds silently."""
    df = _table()
    rerun = df.assign(trial_id="x" + df["trial_id"], acc_ood=df["acc_ood"] + 1e-6)
    both = pd.concat([df, rerun], ignore_index=True)
    (v,) = compute_verdicts(both, {"verdicts": {"toy_gain": {}}})
    assert "ambiguous_records" not in v["details"]  # no config class: nothing known of its axes

    class Config:  # the toy study's trial config: its sweep axes include lr, which the table lacks
        AXES = {"width": "model.width", "lr": "train.lr", "seed": "seed"}

        @staticmethod
        def column_names():
            return ("width", "lr", "seed")

    object.__setattr__(toy, "trial_config", Config)
    toy._found.clear()
    (v,) = compute_verdicts(both, {"verdicts": {"toy_gain": {}}})
    assert v["details"]["ambiguous_records"] == len(df)
    assert "no lr column" in v["details"]["caveat"] and "counted twice" in v["details"]["caveat"]
    (clean,) = compute_verdicts(df, {"verdicts": {"toy_gain": {}}})
    assert "ambiguous_records" not in clean["details"]


def test_the_reason_says_what_each_missed_gate_means():
    chain = Gate(metric="excess", threshold="max_excess", what="UUAS over the chain", source="s", higher=False,
                 missing="recovered no more of the tree than the linear chain")
    df = _table(fit_small=0.33)
    df["excess"] = 0.5
    reason, _ = gate_check(df, _cells(df), [GATE, chain], {"min_id": 0.95, "max_excess": 0.1})
    assert reason.startswith("the deciding models did not learn their training task and recovered no more of "
                             "the tree than the linear chain")
    reason, _ = gate_check(df.assign(acc_id=1.0), _cells(df), [GATE, chain], {"min_id": 0.95, "max_excess": 0.1})
    assert "did not learn" not in reason and "linear chain" in reason


def test_a_rule_that_filters_seeds_is_gated_on_the_seeds_it_used():
    """A per-seed filter (modularity keeps the base networks that learned) leaves the gate to those seeds; the
    dropped ones count against min_seeds instead."""
    df = _table(fit_small=0.99)
    df.loc[(df["width"] == 16) & (df["seed"] < 2), "acc_id"] = 0.5  # two seeds did not learn: cell mean 0.87
    plain = _cells(df)
    assert gate_check(df, plain, [GATE], {"min_id": 0.95})[0] is not None
    used = [deciding_cell({"width": 16}, 6, seeds=range(2, 8)), deciding_cell({"width": 64}, 8, seeds=range(8))]
    assert gate_check(df, used, [GATE], {"min_id": 0.95})[0] is None


# ------------------------------------------------------------ gates per model, not per cell mean --

def _mixed(acc_id_small: list, acc_id_big: list | None = None) -> pd.DataFrame:
    """The toy table with each width-16 seed's own training fit (and width 64's, when given)."""
    df = _table()
    df.loc[df["width"] == 16, "acc_id"] = acc_id_small
    if acc_id_big is not None:
        df.loc[df["width"] == 64, "acc_id"] = acc_id_big
    return df


def test_half_the_models_below_the_gate_decide_nothing_even_when_the_mean_passes(toy):
    """4 of 8 models at 0.90 and 4 at 1.00 average 0.95, which passed the cell's mean gate: those four never
    learned their task, so 4 of 8 seeds remain where 6 are needed."""
    df = _mixed([0.90] * 4 + [1.0] * 4)
    assert df.loc[df["width"] == 16, "acc_id"].mean() == pytest.approx(0.95)
    (v,) = compute_verdicts(df, {"verdicts": {"toy_gain": {}}})
    assert v["verdict"] == "inconclusive" and np.isnan(v["value"])
    assert "4 missed a competence gate" in v["details"]["reason"] and "4 remain" in v["details"]["reason"]
    assert v["details"]["lost_to_gates_by_cell"]["width 16"] == {"lost": 4, "planned_ok": 8,
                                                                  "by_gate": {"acc_id": 4}}


def test_one_model_below_the_gate_is_left_out_and_the_claim_still_decided(toy):
    """1 of 8 misses: 7 remain (6 needed); the value is computed without it, and the report says so."""
    df = _mixed([0.5] + [0.99] * 7)
    (v,) = compute_verdicts(df, {"verdicts": {"toy_gain": {}}})
    assert v["verdict"] == "supported"
    big = df[df["width"] == 64]["acc_ood"].mean()
    small = df[(df["width"] == 16) & (df["seed"] != 0)]["acc_ood"].mean()
    assert v["value"] == pytest.approx(big - small)
    assert v["details"]["lost_to_gates_by_cell"]["width 16"]["lost"] == 1
    assert v["details"]["lost_seeds_by_cell"]["width 16"]["statuses"] == {"missed a competence gate": 1}
    assert v["details"]["value_with_every_model"]["value"] != pytest.approx(v["value"])


def test_a_gate_metric_recorded_by_one_seed_does_not_pass_the_cell(toy):
    """Seven seeds never recorded the gate's metric (NaN) and one recorded a pass: the cell mean of the one
    used to pass the gate for all eight; now seven are lost and the claim is inconclusive."""
    df = _mixed([0.99] + [float("nan")] * 7)
    (v,) = compute_verdicts(df, {"verdicts": {"toy_gain": {}}})
    assert v["verdict"] == "inconclusive" and "7 missed a competence gate" in v["details"]["reason"]


def test_a_control_is_never_filtered_by_the_gate():
    """An untrained control (gated False) keeps every row whatever its fit; a partially gated cell is read only
    on its own gates."""
    from bindscale.verdicts.engine import gate_filter

    df = _mixed([0.0] * 8, [0.99] * 7 + [float("nan")])
    cells = [deciding_cell({"width": 16}, 8, gated=False), deciding_cell({"width": 64}, 8)]
    kept, lost = gate_filter(df, cells, [GATE], {"min_id": 0.95})
    assert (kept["width"] == 16).sum() == 8 and (kept["width"] == 64).sum() == 7
    assert lost == {"width 64": {"lost": 1, "planned_ok": 8, "by_gate": {"acc_id": 1}}}
    df["excess"] = 0.5
    cells = [deciding_cell({"width": 64}, 8, gated=["excess"])]
    kept, lost = gate_filter(df, cells, [GATE, LOSS], {"min_id": 0.95, "max_excess": 0.1})
    assert (kept["width"] == 64).sum() == 0 and lost["width 64"]["by_gate"] == {"excess": 8}


def test_the_engine_clips_an_interval_to_its_claims_bounds(monkeypatch):
    """A rule's t interval of an R² past 1 (the template study's quick run: 0.908 [0.818, 1.01]) is clipped to
    the claim's bounds on the page; the unclipped interval is kept in the details; the verdict is unchanged."""
    def rule(ok, thresholds, n_boot, seed):
        return Verdict("r2", SUPPORTED, (0.908, 0.818, 1.01), len(ok),
                       {"reason": "r2", "deciding_cells": [deciding_cell({"width": 64}, 8)]})

    claim = Claim(name="toy_bounded", title="t", source="s", statement="s", statistic="r2", side="scale_suffices",
                  rule=rule, thresholds={"min_id": (0.0, 1.0)}, defaults={"min_id": 0.95}, gates=(GATE,),
                  bounds=(None, 1.0))
    plugin = StudyPlugin(name="toybound", kind="toybound", claims=(claim,), trainer=lambda *a, **k: [])
    monkeypatch.setattr(registry, "claim", lambda name: (plugin, claim))
    (v,) = compute_verdicts(_table(), {"verdicts": {"toy_bounded": {}}})
    assert (v["value"], v["ci_low"], v["ci_high"]) == (0.908, 0.818, 1.0) and v["verdict"] == "supported"
    assert v["details"]["interval_clipped"] == {"bounds": [None, 1.0], "unclipped": [0.908, 0.818, 1.01]}


def test_every_builtin_claim_states_its_statistics_bounds_or_none():
    """Every built-in claim whose statistic is a rate, a share, a difference of them or a correlation states its
    bounds (the hull claim's difference of R² values has none: R² is unbounded below)."""
    unbounded = [c.name for s in registry.builtin().values() for c in s.claims if c.bounds == (None, None)]
    assert unbounded == ["hull"]


# ------------------------------------------- a rule that picks its cells from the data, after the gate filter --

def _widest_rule(ok, thresholds, n_boot, seed):
    """Compares the widest width present with width 16 (as a rule picking 'the largest model' does)."""
    top = ok["width"].max()
    gain = float(ok[ok["width"] == top]["acc_ood"].mean() - ok[ok["width"] == 16]["acc_ood"].mean())
    cells = [deciding_cell({"width": w}, int((ok["width"] == w).sum()), gated=bool(w != 16)) for w in (top, 16)]
    return Verdict("gain", SUPPORTED, (gain, gain - 0.01, gain + 0.01), len(ok),
                   {"reason": f"width {top:g} extrapolates better", "deciding_cells": cells})


@pytest.fixture
def widest(monkeypatch):
    claim = Claim(name="toy_widest", title="toy", source="src", statement="st", statistic="gain",
                  side="scale_suffices", rule=_widest_rule, thresholds={"min_id": (0.0, 1.0), "max_excess": (0, 5)},
                  defaults={"min_id": 0.95, "max_excess": 0.1}, gates=(GATE, LOSS))
    plugin = StudyPlugin(name="toywidest", kind="toywidest", claims=(claim,), trainer=lambda *a, **k: [])
    real = registry.claim
    monkeypatch.setattr(registry, "claim", lambda name: (plugin, claim) if name == "toy_widest" else real(name))


def _three_widths(fit_256=0.99, excess_256=0.05):
    df = pd.concat([_table(), _table().query("width == 64").assign(width=256)], ignore_index=True)
    df["trial_id"] = [f"t{i}" for i in range(len(df))]
    df.loc[df["width"] == 256, ["acc_id", "excess"]] = (fit_256, excess_256)
    return df


def test_a_cell_whose_every_model_missed_stays_a_deciding_cell_when_the_rule_answers_on_another(widest):
    """Every width-256 model missed the gate: the rule's second pass compares width 64 instead. The lost cell is
    still counted (8 of 8 lost) and named (no seed passed), so nothing is decided at a width the claim did not ask."""
    (v,) = compute_verdicts(_three_widths(fit_256=0.5), {"verdicts": {"toy_widest": {}}})
    assert v["verdict"] == "inconclusive" and np.isnan(v["value"])
    reason = v["details"]["reason"]
    assert "width 256: no seed passed (8 missed it; in-distribution exact match 0.5 < 0.95 over them)" in reason
    assert v["details"]["lost_seeds_by_cell"]["width 256"]["statuses"] == {"missed a competence gate": 8}
    assert reason.index("width 256: no seed passed") < reason.index("width 64 extrapolates better")


def test_a_cell_lost_to_one_gate_is_not_said_to_miss_the_others(widest):
    """Width 256 fits its task (acc_id 0.99) but its loss is 0.5 over the level: only the loss gate is named."""
    (v,) = compute_verdicts(_three_widths(excess_256=0.5), {"verdicts": {"toy_widest": {}}})
    gates = {g["metric"]: g for g in v["details"]["gates"]}
    assert gates["acc_id"]["missed"] == [] and gates["acc_id"]["cells"]["width 256"] == 0.99
    assert gates["excess"]["missed"] == ["width 256"]
    assert "in-distribution exact match" not in v["details"]["reason"].split(" (")[0]


def test_the_reports_gate_line_of_a_cell_none_of_whose_models_passed_gives_their_fit(toy):
    """Every width-16 model missed: the cell has no fit among the models kept, and the report says so with the fit
    of all its seeds, never 'not recorded' (it was recorded)."""
    from bindscale.core.study import gate_lines

    (v,) = compute_verdicts(_table(fit_small=0.33), {"verdicts": {"toy_gain": {}}})
    (line,) = gate_lines(v["details"])
    assert "width 16 none passed (0.33 over all its seeds) (missed)" in line and "not recorded" not in line
