"""The recurrent encoder-decoder's records (binding_scan-lake2018.yaml, Lake & Baroni 2018's setting) never decide a
claim of the study: a table that holds them beside the decoders' is decided, by the engine with its gates,
guards and seed counts, exactly as the table without them, whatever they score; a table of them alone decides
nothing."""

import math

import pandas as pd
import pytest

from bindscale.studies.binding_scan import verdicts as V
from bindscale.verdicts.engine import compute_verdicts

from .test_verdicts import BEATS, SCALE, SPLITS, _design, _table

STUDY = {"verdicts": {"binding_beats_plain_on_scan": BEATS, "scale_partially_overcomes_binding": SCALE}}
KEPT = ("claim", "verdict", "value", "ci_low", "ci_high", "n_trials")


def _recurrent(acc_test, seeds=8, status="ok", splits=SPLITS):
    """Records as binding_scan-lake2018.yaml's trials write them (their config columns and metrics)."""
    return pd.DataFrame([{
        "status": status, "trial_id": f"rnn-{split}-{s}", "split": split, "model": "lstm_seq2seq", "hidden": 100,
        "layers": 1, "dropout": 0.1, "attention": True, "steps": 100_000, "train.batch_size": 1, "lr": 0.001,
        "train.grad_clip": 5.0, "teacher_forcing": 0.5, "n_test": 0, "task.n_id": 0, "seed": s,
        "acc_test": acc_test, "tok_acc_test": acc_test, "acc_id": math.nan, "acc_train": 0.99,
        "n_params_nonembed": 221_700, "n_params": 225_508} for split in splits for s in range(seeds)])


def _decided(df, **kw):
    out = compute_verdicts(df, STUDY, **kw)
    return [({k: v for k, v in d.items() if k in KEPT}, d["details"].get("reason")) for d in out]


DESIGNS = {
    "supported": _design(),
    "not supported": {**_design(), ("around_right", "transformer", 100_000): 0.6,
                      ("around_right", "syntactic_attention", 100_000): 0.2,
                      ("around_right", "tp_transformer", 100_000): 0.1},
    "inconclusive": _design(sa=0.3, tp=0.25),
}


@pytest.mark.parametrize("with_pos", [True, False])
@pytest.mark.parametrize("name", DESIGNS)
@pytest.mark.parametrize("rnn_acc", [0.0, 0.012, 1.0])
def test_recurrent_records_change_no_verdict(name, rnn_acc, with_pos):
    """With and without the decoders' ``pos`` column (the rules keep the rotary rows where there are any, which
    would leave recurrent rows out by accident; a table without the column keeps every row)."""
    plain = _table(DESIGNS[name]) if with_pos else _table(DESIGNS[name]).drop(columns=["pos"])
    without = _decided(plain)
    assert [v["verdict"] for v, _ in without] != ["inconclusive", "inconclusive"] or name == "inconclusive"
    mixed = pd.concat([plain, _recurrent(rnn_acc)], ignore_index=True)
    assert _decided(mixed) == without
    # and planned recurrent trials without a record (the guards see the whole plan) change nothing either
    missing = _recurrent(math.nan, status="missing").drop(columns=["acc_test", "tok_acc_test", "acc_id", "acc_train"])
    assert _decided(mixed, unrecorded=missing) == without


def test_the_check_above_fails_where_the_rules_read_recurrent_rows(monkeypatch):
    """Not vacuous: with rows prepared without leaving the recurrent ones out, the same mixed table is decided
    otherwise (their recipe differs from the decoders')."""
    from bindscale.core import registry
    from bindscale.kit import coerce_numeric, ok_rows

    plain = _table(DESIGNS["supported"]).drop(columns=["pos"])
    mixed = pd.concat([plain, _recurrent(1.0)], ignore_index=True)
    monkeypatch.setitem(registry.get("binding_scan")._found, "rows",
                        lambda df: coerce_numeric(ok_rows(df, V.NUMERIC), V.NUMERIC))
    assert _decided(mixed) != _decided(plain)


def test_the_rules_never_see_a_recurrent_row():
    rows = V.prepare_rows(pd.concat([_table(_design()), _recurrent(0.5)], ignore_index=True))
    assert "lstm_seq2seq" not in set(rows["model"]) and len(rows) == len(_table(_design()))


def test_recurrent_records_alone_decide_nothing():
    for (claim, verdict, *_), reason in [(tuple(d.values()), r) for d, r in _decided(_recurrent(0.012))]:
        assert verdict == "inconclusive", (claim, reason)


def test_the_reports_table_shows_them_beside_the_decoders_rows():
    from bindscale.studies.binding_scan.table import config_table

    plain = _table(_design())
    header, rows = config_table(plain)
    assert "hidden" not in header and "acc_train" not in header  # a table without them is as it was
    mixed_header, mixed = config_table(pd.concat([plain, _recurrent(0.012)], ignore_index=True))
    recurrent = [r for r in mixed if r[1] == "lstm_seq2seq"]
    assert len(recurrent) == len(SPLITS) and len(mixed) == len(rows) + len(SPLITS)
    at = {k: mixed_header.index(k) for k in ("hidden", "dropout", "attention", "acc_test", "acc_train")}
    assert [recurrent[0][at[k]] for k in at] == ["100", "0.1", "True", "0.0120", "0.990"]



def test_the_report_table_names_each_column_once():
    """binding_scan's table asks for n_params as a metric: the generic table no longer adds its median column
    beside it (the report of binding_scan-lake2018 showed n_params twice)."""
    import pandas as pd

    from bindscale.report.html import mean_table

    ok = pd.DataFrame({"model": ["a", "a", "b"], "acc": [0.1, 0.3, 0.5], "n_params": [10, 10, 20]})
    header, rows = mean_table(ok, ["model"], ["acc", "n_params"])
    assert header == ["model", "n seeds", "acc", "n_params"] and all(len(r) == len(header) for r in rows)
    header, rows = mean_table(ok, ["model"], ["acc"])  # not asked for: the median column, as before
    assert header == ["model", "n seeds", "acc", "n_params"] and rows[1][-1] == "20"
