import importlib.util
import json
from pathlib import Path

import pandas as pd
import pytest

from integration.conftest import assert_resumes, assert_typed_table, bindscale, run_quick

TINY_CEILING = Path(__file__).parent / "tiny.yaml"


def test_a_tiny_ceiling_study_runs_end_to_end_and_resumes(tmp_path, monkeypatch):
    monkeypatch.setenv("BINDSCALE_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "c"
    r = bindscale("run", TINY_CEILING, "--out", out, "--workers", "1")
    assert r.returncode == 0, r.stderr
    summary = json.loads((out / "summary.json").read_text())
    [v] = summary["verdicts"]
    assert v["claim"] == "constraint_satisfaction_plateaus" and v["verdict"] == "inconclusive"  # 2 sizes, 1 seed
    df = pd.read_parquet(out / "results.parquet")
    assert len(df) == 2 and set(df["status"]) == {"ok"}
    for col in ("sat_knapsack", "feas_assignment", "gap_assignment", "unparsable_knapsack", "sat_knapsack_heldout",
                "sat_assignment_train", "n_params_nonembed", "budget", "by_difficulty", "by_type"):
        assert col in df, col
    assert_typed_table(out)
    assert "Do models plateau on constraint satisfaction" in (out / "report.html").read_text()
    assert "ceiling_by_difficulty" in summary["figures"] and (out / "figures" / "ceiling_by_difficulty.png").is_file()
    assert_resumes(TINY_CEILING, out, 2)
    # The largest size loses its record altogether (not marked failed): the plan still names it.
    [top] = [p for p in (out / "records").glob("*.json") if json.loads(p.read_text())["config"]["budget"] == 8000]
    top.unlink()
    r = bindscale("report", out)
    assert r.returncode == 0, r.stderr
    [v] = json.loads((out / "summary.json").read_text())["verdicts"]
    assert v["verdict"] == "inconclusive" and "largest planned size (8000)" in v["details"]["reason"]
    assert "1 missing" in v["details"]["reason"]


def _closed_loopback_url() -> str:
    """The URL of the unit tests' loopback chat server after it stopped: nothing listens there."""
    spec = importlib.util.spec_from_file_location("_llm_fixtures", Path(__file__).with_name("test_llm.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    with mod.Server(["ok"]) as s:
        return s.url


def test_an_unreachable_endpoint_stops_the_run_before_any_training(tmp_path):
    url = _closed_loopback_url()
    study = tmp_path / "mixed.yaml"  # a trained trial and a real-model trial, as in ceiling-lm
    study.write_text(TINY_CEILING.read_text().replace(
        "grids:\n", f"grids:\n  - {{model.kind: [lm], model.endpoint: ['{url}'], seed: [0]}}\n"))
    out = tmp_path / "e"
    r = bindscale("run", study, "--out", out, "--workers", "1")
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "cannot connect" in r.stderr and url in r.stderr
    assert not (out / "records").exists()  # nothing trained, nothing written


def test_an_endpoint_on_the_plain_ceiling_study_is_refused_in_one_line(tmp_path):
    out = tmp_path / "c"
    r = bindscale("run", "ceiling", "--out", out, "--set", "model.endpoint=http://127.0.0.1:9/v1")
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "--set model.endpoint" in r.stderr and "ceiling-lm study file (ceiling-lm.yaml)" in r.stderr
    assert not out.exists()

@pytest.mark.slow
def test_quick_ceiling_study_gives_its_verdict_and_figures(tmp_path, monkeypatch):
    monkeypatch.setenv("BINDSCALE_CACHE", str(tmp_path / "cache"))
    elapsed, summary = run_quick("ceiling", tmp_path / "q")
    assert [v["claim"] for v in summary["verdicts"]] == ["constraint_satisfaction_plateaus"]
    html = (tmp_path / "q" / "report.html").read_text()
    assert html.count("data:image/png;base64,") >= 3
    assert "no primary source" in html
