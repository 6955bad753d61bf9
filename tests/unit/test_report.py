"""report.html and summary.json built from a synthetic results table."""

from __future__ import annotations

import base64
import importlib.util
import json
import math
from pathlib import Path

import pandas as pd
import pytest

from bindscale.report import build_report
from bindscale.report.figures import render
from bindscale.studies.scaling.figures import FIGURES, fig_decodability, fig_training_curves, figures


def make_figures(df, study=None):
    return render(figures(study), df)
from bindscale.report.html import to_jsonable

# The synthetic table lives in the scaling study's test_verdicts.py; load it by path so this works
# whether or not tests/ is a package.
_spec = importlib.util.spec_from_file_location(
    "_verdict_fixtures", Path(__file__).parents[1] / "studies" / "scaling" / "test_verdicts.py")
_fx = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_fx)
make_results, STUDY = _fx.make_results, _fx.STUDY

PNG = b"\x89PNG\r\n\x1a\n"


def _strict_loads(text: str):
    def refuse(token):
        raise ValueError(f"non-strict JSON constant {token}")
    return json.loads(text, parse_constant=refuse)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("run")
    study = {**STUDY, "description": "Held-out <script>alert('x')</script> & more"}
    summary = build_report(run_dir, make_results(effect=True), study, n_boot=500)
    return run_dir, summary


def test_files_written_and_self_contained(built):
    run_dir, _ = built
    html = (run_dir / "report.html").read_text(encoding="utf-8")
    assert 'class="verdicts"' in html and "heldout_r2_at_largest_scale" in html
    assert "data:image/png;base64," in html
    assert "<script" not in html and "&lt;script&gt;" in html  # description escaped
    assert "&amp; more" in html
    assert "<link" not in html and 'src="http' not in html
    assert "&lt;boom&gt; &amp; friends" in html  # failed trial's error, escaped
    assert "Per-configuration results" in html and "hypernet" in html
    assert "The claim (supported = it holds): Redhardt, Schug, Akram 2025: plain MLPs generalize" in html
    assert not list(run_dir.glob("*.tmp"))  # atomic writes leave no temp files


def test_each_claim_shows_its_competence_gate_beside_the_verdict(built):
    """The report says the fit the deciding models had to reach, and theirs."""
    run_dir, summary = built
    html = (run_dir / "report.html").read_text(encoding="utf-8")
    scaling = next(v for v in summary["verdicts"] if v["claim"] == "scaling")
    (gate,) = scaling["details"]["gates"]
    assert gate["metric"] == "r2_id" and gate["cells"] and gate["missed"] == []
    assert "Learned first (competence gate): " + gate["says"] in html


def test_summary_is_strict_json_with_required_keys(built):
    run_dir, summary = built
    on_disk = _strict_loads((run_dir / "summary.json").read_text(encoding="utf-8"))
    assert on_disk == summary
    for key in ("study", "verdicts", "n_trials", "n_ok", "n_diverged", "n_failed", "generated"):
        assert key in on_disk
    assert on_disk["study"] == "scaling"
    assert (on_disk["n_trials"], on_disk["n_diverged"], on_disk["n_failed"]) == (146, 1, 1)
    assert on_disk["n_ok"] == 144
    assert all(v["statement"] for v in on_disk["verdicts"])  # each claim in words
    assert [v["verdict"] for v in on_disk["verdicts"]] == ["supported"] * 4


def test_nan_and_inf_become_strict_json(tmp_path):
    data = to_jsonable({"a": math.nan, "b": [math.inf, -math.inf], 3: {"c": 1.5}})
    assert data == {"a": None, "b": ["inf", "-inf"], "3": {"c": 1.5}}
    json.dumps(data, allow_nan=False)
    # A null study: no hypernet, so binding is NaN throughout; still valid JSON.
    df = make_results(effect=False, hypernet=False, n_seeds=2)
    summary = build_report(tmp_path, df, STUDY, n_boot=100)
    on_disk = _strict_loads((tmp_path / "summary.json").read_text(encoding="utf-8"))
    binding = [v for v in on_disk["verdicts"] if v["claim"] == "binding"][0]
    assert binding["value"] is None and binding["n_trials"] == 0
    assert summary == on_disk


def test_each_figure_is_a_png_or_none():
    df = make_results(effect=True, n_seeds=2)
    figs = make_figures(df, STUDY)
    assert set(figs) == set(FIGURES)
    for name, b64 in figs.items():
        assert b64 is not None, name
        assert base64.b64decode(b64).startswith(PNG)
    # Missing data -> None, not an exception.
    empty = df[df["status"] == "failed"]
    assert all(v is None for v in make_figures(empty).values())
    assert fig_decodability(df.assign(decod_best=math.nan)) is None
    assert fig_training_curves(df.drop(columns=["curve_steps", "curve_r2_heldout"])) is None


def test_builds_from_parquet_roundtrip(tmp_path):
    """List columns come back from Parquet as arrays; the report must cope."""
    df = make_results(effect=True, n_seeds=2)
    df.to_parquet(tmp_path / "results.parquet")
    back = pd.read_parquet(tmp_path / "results.parquet")
    summary = build_report(tmp_path, back, {"name": "p", "verdicts": {"scaling": {}}}, n_boot=100)
    assert "training_curves" in summary["figures"]
    assert [v["claim"] for v in summary["verdicts"]] == ["scaling"]


def test_degenerate_tables_still_build(tmp_path):
    df = make_results(effect=True, n_seeds=1)
    for i, part in enumerate([df.iloc[:0], df[df["status"] != "ok"]]):
        summary = build_report(tmp_path / str(i), part, STUDY, n_boot=50)
        assert summary["n_ok"] == 0 and summary["figures"] == []
        assert {v["verdict"] for v in summary["verdicts"]} == {"inconclusive"}
        assert "No trial finished ok." in (tmp_path / str(i) / "report.html").read_text()


def test_config_table_says_when_a_mean_covers_fewer_seeds():
    from bindscale.studies.scaling.table import config_table as _config_table

    df = pd.DataFrame({
        "status": ["ok"] * 3, "model": ["mlp"] * 3, "width": [16] * 3, "depth": [3] * 3, "holdout": [0.5] * 3,
        "n_train_combos": [46] * 3, "n_params": [1000] * 3, "seed": [0, 1, 2],
        "r2_id": [0.9, 0.8, 0.7], "r2_heldout": [0.5, 0.4, 0.3], "r2_inhull": [0.6, 0.5, 0.4],
        "r2_outhull": [0.2, math.nan, 0.4],  # seed 1's split has no out-of-hull combination
        "decod_best": [0.9, 0.9, 0.9],
    })
    header, rows = _config_table(df)
    cells = dict(zip(header, rows[0]))
    assert cells["n seeds"] == "3"
    assert cells["r2_heldout"].startswith("0.4") and "(n=" not in cells["r2_heldout"]
    assert cells["r2_outhull"].endswith("(n=2)") and cells["r2_outhull"].startswith("0.3")
