from pathlib import Path

import pytest

from bindscale.report.browser import assert_fits

from integration.conftest import assert_resumes, assert_typed_table, run_quick, run_tiny

TINY_MOD = Path(__file__).parent / "tiny.yaml"
CLAIMS = ["structure_emerges", "structure_grows_with_width", "pretraining_reliability"]


def test_a_tiny_modularity_study_runs_end_to_end_and_reports_its_claims(tmp_path):
    out = tmp_path / "mod"
    summary, df = run_tiny(TINY_MOD, out, CLAIMS, 6)  # one base seed per cell: too few replicates, the report says why
    assert "3 base seeds" in summary["verdicts"][0]["details"]["reason"]
    assert set(summary["figures"]) == {"mod_scores", "mod_accuracies", "mod_share_vs_width", "mod_share_by_pretraining"}
    assert set(df["width"]) == {8, 16} and set(df["pretraining"]) == {"none", "match_count", "subroutines"}
    for col in ("base_acc_test", "frac_structural", "frac_robust", "sub_diff_A", "abl_diff_B", "random_frac_structural",
                "untrained_frac_structural", "density"):
        assert df[col].dtype == float and df[col].notna().all(), col
    runs = list(df["runs"].iloc[0])  # every mask run survives, as a list of structs
    assert len(runs) == 2 * (2 + 1) and {r["net"] for r in runs} == {"trained", "untrained"}
    html = (out / "report.html").read_text()
    assert "Do subroutines live in separable subnetworks?" in html and "data:image/png;base64," in html
    assert "frac_structural" in html  # the per-config table
    assert_typed_table(out)
    assert_resumes(TINY_MOD, out, 6)


@pytest.mark.slow
def test_quick_modularity_study_gives_verdicts(tmp_path):
    # Wall time is printed by run_quick and measured in benchmarks/, never asserted in a test.
    _, summary = run_quick("modularity", tmp_path / "q")
    assert [v["claim"] for v in summary["verdicts"]] == CLAIMS
    assert_fits(tmp_path / "q" / "report.html", skip_if_missing=False)  # nothing wider than 1024 or 800 px (Chromium)
    assert summary["n_ok"] == summary["n_trials"] == 18
    # 3 base seeds per cell, some of them filtered out by min_base_acc on held-out scenes: a decided claim
    # carries its number and interval, an undecided one says why
    for v in summary["verdicts"]:
        assert v["details"]["reason"]
        assert v["verdict"] == "inconclusive" or (v["value"] is not None and v["ci_low"] is not None)
        assert v["verdict"] == "inconclusive" or v["details"]["seeds_per_cell"] >= 3
