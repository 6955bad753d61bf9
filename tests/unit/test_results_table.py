"""results.parquet: one column per config field, native Arrow types (no JSON text), readable by
pandas, pyarrow and (when installed) DuckDB, and read back by every study's rules and figures.

Records here have the shapes the three studies' trainers write (and the shapes older records
have: both column names per aliased field, curves and tables as JSON text).
"""

from __future__ import annotations

import json
import math

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from bindscale.verdicts.results_table import metric_items, metric_table, write_results
from bindscale.studies.modularity.config import ModularityTrial
from bindscale.studies.subgraphs.config import SubgraphsTrial
from bindscale.studies.scaling.config import TrialConfig

STEPS = [250, 500, 750, 1000]


def _scaling_metrics(seed: int) -> dict:
    r2 = 0.5 + 0.1 * seed
    return {
        "r2_heldout": r2, "r2_id": 0.9, "n_params": 1000 + seed, "precision_used": "fp32", "final_loss": 0.01,
        "curve_steps": STEPS, "curve_loss": [0.4, 0.2, 0.1, 0.05], "curve_r2_heldout": [0.1, 0.3, None, r2],
        "curve_r2_heldout_taskmean": [0.0, 0.2, 0.3, r2 - 0.1],
        "decod_layers": {"hidden.0": 0.9, "hidden.1": 0.8 + 0.01 * seed, "input": 1.0, "random.hidden.0": 0.5},
        "decod_layers_cv": {"hidden.0": 0.91, "hidden.1": None, "input": 1.0},
    }


def _subgraphs_metrics(seed: int) -> dict:
    return {
        "acc_id": 0.9, "acc_ood": 0.1 * seed, "n_params": 5000, "steps_per_s": 30.0,
        "curve_steps": [50, 100], "curve_loss": [2.5, 1.7 - 0.1 * seed],
        "acc_by_depth": {"3": [1, 1.0], "4": [32, 0.84375], "5": [32, 0.5 + 0.1 * seed]},
        "acc_by_size": {"2x2": [10, 1.0], "2x3": [12, 0.75]},
        "acc_by_width": {"2": [1, 1.0], "3": [32, 0.8]},
        "coverage_by_depth": {"1": {"correct": [160, 1.0], "wrong": [1, 1.0]},
                              "2": {"correct": [154, 0.9], "wrong": [7, 0.5]}},
        "taxonomy_by_depth": {"1": {"correct": 0.99, "local": 0.01}, "2": {"correct": 0.9, "propagation": 0.1}},
        "taxonomy_dziri_by_depth": {"1": {"correct": 0.99, "local": 0.01}, "2": {"restoration": 1.0}},
        "rig_top": {"y": {"1": ["('x0',)", 0.46], "2": ["('x0', 'x1')", 0.87]}, "z": {"1": ["('x1',)", 0.2]}},
        "examples": [{"prompt": "0,1=", "gold": "0;1;1$", "pred": "0;1;1$"}, {"prompt": "[1]", "gold": "{", "pred": ""}],
        "timings": {"train_s": 26.9, "eval_s": 0.5},
    }


def _modularity_metrics(seed: int) -> dict:
    run = {"net": "trained", "subroutine": "A", "mask_seed": 0, "acc_sub_target": 0.99, "acc_sub_other": 0.5,
           "acc_abl_target": 0.5, "acc_abl_other": 0.9, "structural": True, "sub_diff": 0.49, "abl_diff": -0.4}
    untrained = {"net": "untrained", "subroutine": "B", "mask_seed": 1, "acc_sub_target": 0.5,
                 "acc_sub_other": 0.5, "acc_abl_target": 0.5, "acc_abl_other": 0.5, "structural": False,
                 "sub_diff": 0.0, "abl_diff": None, "random_sub_diff": 0.0}
    return {"base_acc_test": 0.99, "frac_structural": 0.5 + 0.1 * seed, "sub_diff_A": 0.4, "final_loss": 1e-3,
            "curve_steps": [50, 100], "curve_loss": [0.42, 0.05], "runs": [run, untrained],
            "timings": {"train_s": 5.5, "mask_s": 22.6, "control_s": 0.0}}


STUDIES = {
    "scaling": (TrialConfig, _scaling_metrics, {}),
    "subgraphs": (SubgraphsTrial, _subgraphs_metrics, {"kind": "subgraphs"}),
    "modularity": (ModularityTrial, _modularity_metrics, {"kind": "modularity"}),
}


def _legacy_config(trial) -> dict:
    """``config`` of a record written before one column per field: every dotted field and every alias."""
    d = trial.model_dump(mode="json")
    out = {f"{s}.{k}": v for s in trial.SECTIONS for k, v in d[s].items()} | {"seed": trial.seed}
    return out | {a: out[p] for a, p in trial.AXES.items()}


def _legacy_metrics(metrics: dict) -> dict:
    """Metrics as older records hold them: the sequence trainers' curve as JSON text of pairs."""
    m = dict(metrics)
    if "curve_r2_heldout" not in m:  # subgraphs, modularity
        m["curve"] = json.dumps([[s, v] for s, v in zip(m.pop("curve_steps"), m.pop("curve_loss"))])
    return m


def _records(study: str, legacy: bool = False, n: int = 3) -> list[dict]:
    cls, metrics, base = STUDIES[study]
    recs = []
    for seed in range(n):
        t = cls.model_validate({**base, "seed": seed})
        m = metrics(seed)
        recs.append({"trial_id": t.trial_id, "study": study, "status": "ok", "diverged_step": None, "error": None,
                     "config": _legacy_config(t) if legacy else t.flat(), "trial_config": t.model_dump(mode="json"),
                     "metrics": _legacy_metrics(m) if legacy else m,
                     "provenance": {"git_hash": "abc", "device": "cpu"}})
    return recs


def _parquet(recs: list[dict], where) -> tuple[pa.Table, pd.DataFrame]:
    """(the file as Arrow reads it, the table write_results returns)."""
    df = write_results(where, recs)
    return pq.read_table(where / "results.parquet"), df


def _json_text_columns(df: pd.DataFrame) -> list[str]:
    return [c for c in df.columns if df[c].map(lambda v: isinstance(v, str) and v.startswith(("[", "{"))).any()]


@pytest.mark.parametrize("study", list(STUDIES))
def test_one_column_per_config_field_short_name_where_the_study_has_one(study, tmp_path):
    cls = STUDIES[study][0]
    table, df = _parquet(_records(study), tmp_path)
    aliases = {a for a in cls.AXES}
    paths = {p for a, p in cls.AXES.items() if p != a}
    assert aliases <= set(df.columns) and not paths & set(df.columns)
    assert len(set(df.columns)) == len(df.columns)
    # No two columns are the same field: a column equal in content to another is not its alias or path.
    for a, p in cls.AXES.items():
        assert p == a or p not in df
    # Fields without an alias keep their dotted name (train.grad_clip is not swept by its short name).
    assert "train.grad_clip" in df
    # Records written with both names give the same table.
    old_table, old_df = _parquet(_records(study, legacy=True), tmp_path / "old")
    assert {f.name: f.type for f in old_table.schema} == {f.name: f.type for f in table.schema}
    pd.testing.assert_frame_equal(old_df[list(df.columns)], df)


@pytest.mark.parametrize("study", list(STUDIES))
def test_no_json_text_and_nested_metrics_are_arrow_lists_and_structs(study, tmp_path):
    for legacy in (False, True):
        table, df = _parquet(_records(study, legacy=legacy), tmp_path / str(legacy))
        assert _json_text_columns(df) == []
        types = {f.name: f.type for f in table.schema}
        assert types["curve_steps"] == pa.list_(pa.int64()) and types["curve_loss"] == pa.list_(pa.float64())
        for name, (keys, values) in STUDIES[study][0].NESTED_METRICS.items():
            if name in types:
                assert pa.types.is_list(types[name]) and pa.types.is_struct(types[name].value_type), name
                assert [f.name for f in types[name].value_type] == [*keys, *values]
        for name in ("runs", "examples"):
            if name in types:
                assert pa.types.is_list(types[name]) and pa.types.is_struct(types[name].value_type)
        if "timings" in types:
            assert pa.types.is_struct(types["timings"])
        assert not any(pa.types.is_string(t) and n not in ("trial_id", "study", "status", "error")
                       and n.startswith(("curve", "acc_by", "decod_layers", "runs", "rig")) for n, t in types.items())


@pytest.mark.parametrize("study", list(STUDIES))
def test_table_values_equal_the_records(study, tmp_path):
    cls, metrics, _ = STUDIES[study]
    recs = _records(study)
    _, df = _parquet(recs, tmp_path)
    df = df.set_index("trial_id")
    for rec in recs:
        row = df.loc[rec["trial_id"]]
        for k, v in rec["config"].items():
            assert row[k] == v or (v is None and pd.isna(row[k])), k  # an all-null field reads as NaN
        for k, v in rec["metrics"].items():
            cell = row[k]
            if k in cls.NESTED_METRICS:
                got = metric_table(cell, *cls.NESTED_METRICS[k])
                assert json.dumps(got, sort_keys=True) == json.dumps(v, sort_keys=True), k
            elif isinstance(v, list) and v and isinstance(v[0], dict):
                assert [{kk: r[kk] for kk in d} for r, d in zip(metric_items(cell), v)] == v, k
            elif isinstance(v, list):
                assert [None if isinstance(x, float) and math.isnan(x) else x for x in cell] == v, k
            elif isinstance(v, dict):
                assert cell == v, k
            else:
                assert cell == v, k
        assert row["prov_git_hash"] == "abc"


def test_legacy_curve_text_is_split_into_steps_and_loss(tmp_path):
    recs = _records("subgraphs", legacy=True)
    assert isinstance(recs[0]["metrics"]["curve"], str)
    _, df = _parquet(recs, tmp_path)
    assert "curve" not in df
    assert list(df["curve_steps"].iloc[1]) == [50, 100] and list(df["curve_loss"].iloc[1]) == [2.5, pytest.approx(1.6)]


def test_metric_table_reads_every_form_a_cell_has_had(tmp_path):
    spec = SubgraphsTrial.NESTED_METRICS["coverage_by_depth"]
    nested = _subgraphs_metrics(0)["coverage_by_depth"]
    _, df = _parquet(_records("subgraphs"), tmp_path / "sg")
    for cell in (df["coverage_by_depth"].iloc[0], json.dumps(nested), nested):
        assert metric_table(cell, *spec) == nested
    for empty in (None, math.nan, "not json"):
        assert metric_table(empty, *spec) is None
    assert metric_items(None) == [] and metric_items(json.dumps([{"a": 1}])) == [{"a": 1}]


def test_the_table_loads_in_pandas_and_pyarrow_and_duckdb_if_installed(tmp_path):
    write_results(tmp_path, _records("scaling"))
    path = tmp_path / "results.parquet"
    df = pd.read_parquet(path)
    assert len(df) == 3 and pq.read_table(path).num_rows == 3
    long = df[["trial_id", "curve_steps", "curve_r2_heldout"]].explode(["curve_steps", "curve_r2_heldout"])
    assert len(long) == 3 * len(STEPS)
    duckdb = pytest.importorskip("duckdb")
    con = duckdb.connect()
    n, = con.execute(f"SELECT count(*) FROM (SELECT trial_id, unnest(curve_steps) AS step, "
                     f"unnest(curve_r2_heldout) AS r2 FROM '{path}')").fetchone()
    assert n == 3 * len(STEPS)
    layers = con.execute(f"SELECT l.layer, avg(l.r2) FROM (SELECT unnest(decod_layers) AS l FROM '{path}') "
                         f"GROUP BY 1 ORDER BY 1").fetchall()
    assert layers[0][0] == "hidden.0"


def test_study_readers_read_the_typed_table_as_they_read_json_text(tmp_path):
    from bindscale.studies.modularity.figures import fig_accuracies
    from bindscale.studies.scaling.verdicts import _layer_means
    from bindscale.studies.subgraphs.figures import (
        fig_acc_by_depth,
        fig_coverage_by_depth,
        fig_error_types,
        fig_information_gain,
    )

    _, df = _parquet(_records("scaling"), tmp_path / "sc")
    as_text = df["decod_layers"].map(lambda c: json.dumps(metric_table(c, ("layer",), ("r2",))))
    assert _layer_means(df["decod_layers"]) == _layer_means(as_text)
    assert _layer_means(df["decod_layers"])["hidden.1"] == pytest.approx(0.81)

    _, sg = _parquet(_records("subgraphs"), tmp_path / "sg")
    sg = sg.assign(n_train=4000, scratchpad=True, compound_eps=0.1, compound_r2=0.5)
    for fig in (fig_acc_by_depth, fig_coverage_by_depth, fig_error_types, fig_information_gain):
        assert fig(sg), fig.__name__

    _, mod = _parquet(_records("modularity"), tmp_path / "mod")
    rows = mod.assign(base_acc_test=1.0)
    assert fig_accuracies(rows, min_base_acc=0.0)


def test_a_metric_arrow_cannot_type_is_kept_as_json_text_with_a_warning(tmp_path, capsys):
    # No study records one; a third-party plugin's odd metric must not cost the whole table.
    recs = _records("scaling", n=2)
    recs[0]["metrics"]["odd"] = [1, "a"]
    _, df = _parquet(recs, tmp_path)
    assert json.loads(df["odd"].iloc[0]) == [1, "a"] and df["r2_heldout"].notna().all()
    assert "column 'odd' mixes kinds of values" in capsys.readouterr().err
