from pathlib import Path

import pytest

from bindscale.report.browser import assert_fits

from integration.conftest import assert_resumes, assert_typed_table, run_quick, run_tiny

TINY_SG = Path(__file__).parent / "tiny.yaml"


def test_a_tiny_subgraphs_study_runs_end_to_end_and_reports_its_claims(tmp_path):
    out = tmp_path / "sg"
    # one seed per size: too few replicates for a verdict, and the report says so
    summary, df = run_tiny(TINY_SG, out, ["scale_does_not_lift_ood", "correct_steps_seen_in_training"], 3)
    assert set(df["task"]) == {"maxsubseq", "multiplication"}
    for col in ("acc_id", "acc_ood", "compound_eps", "seen_gap_depth", "n_params", "taxonomy_dziri_by_depth",
                "acc_by_depth_source"):
        assert col in df
    assert all("seeds_per_cell" in v["details"] for v in summary["verdicts"])
    assert len(df["acc_by_size"].iloc[0]) and set(df["acc_by_size"].iloc[0][0]) == {"size", "n", "acc"}  # rows
    assert_typed_table(out)
    html = (out / "report.html").read_text()
    assert "Out of distribution: does scale help?" in html and "data:image/png;base64," in html
    assert "Dziri et al.&#39;s definitions" in html or "Dziri et al.'s definitions" in html  # error-type caption
    assert_resumes(TINY_SG, out, 3)


@pytest.mark.slow
def test_quick_subgraphs_study_gives_verdicts(tmp_path):
    _, summary = run_quick("subgraphs", tmp_path / "q")
    assert {v["claim"] for v in summary["verdicts"]} == {"scale_does_not_lift_ood", "correct_steps_seen_in_training"}
    assert_fits(tmp_path / "q" / "report.html", skip_if_missing=False)  # nothing wider than 1024 or 800 px (Chromium)
