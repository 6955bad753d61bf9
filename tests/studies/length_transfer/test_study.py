from pathlib import Path

import pandas as pd
import pytest

from bindscale.report.browser import assert_fits

from integration.conftest import assert_resumes, assert_typed_table, run_quick, run_tiny

TINY_LT = Path(__file__).parent / "tiny.yaml"
CLAIMS = ["length_transfer_exists", "unrelated_aux_no_transfer", "head_reuse_predicts_transfer",
          "transfer_grows_with_size"]


@pytest.mark.slow
def test_a_tiny_length_transfer_study_runs_end_to_end_and_reports_its_claims(tmp_path):
    out = tmp_path / "lt"
    _, df = run_tiny(TINY_LT, out, CLAIMS, 4)  # one seed: no verdict
    assert set(df["pos"]) == {"rope", "none"}
    for col in ("acc_in", "acc_beyond", "acc_past", "acc_by_length", "heads_main", "heads_aux", "head_corr",
                "head_jaccard", "aux_acc_by_length", "n_params"):
        assert col in df
    row = df[df["aux"] == "mqar"].iloc[0]
    assert {r["length"] for r in row["acc_by_length"]} == {str(n) for n in range(2, 8)}
    assert len(row["heads_main"]) == 2  # 1 layer x 2 heads
    assert_typed_table(out)
    html = (out / "report.html").read_text()
    assert "Does a related longer task extend" in html and "data:image/png;base64," in html
    assert_resumes(TINY_LT, out, 4)


@pytest.mark.slow
def test_quick_length_transfer_study_gives_verdicts(tmp_path):
    _, summary = run_quick("length_transfer", tmp_path / "q")
    assert [v["claim"] for v in summary["verdicts"]] == CLAIMS
    assert all(v["verdict"] in ("supported", "not_supported", "inconclusive") for v in summary["verdicts"])
    assert all("seeds_per_cell" in v["details"] for v in summary["verdicts"])
    df = pd.read_parquet(tmp_path / "q" / "results.parquet")
    assert set(df["status"]) == {"ok"} and len(df) == 24
    assert_fits(tmp_path / "q" / "report.html", skip_if_missing=False)
