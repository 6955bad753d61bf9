from pathlib import Path

import pytest

from integration.conftest import assert_typed_table, bindscale, run_quick, run_tiny

TINY_DEPTH = Path(__file__).parent / "tiny.yaml"
CLAIMS = ["deeper_composes_better_at_equal_params", "seq2seq_fails_scan_splits"]


def test_a_tiny_depth_study_runs_end_to_end(tmp_path):
    out = tmp_path / "d"
    run_tiny(TINY_DEPTH, out, CLAIMS, 3, ("acc_test", "tok_acc_test", "acc_id", "acc_by_length", "n_params_nonembed",
                                          "d_ff", "split", "budget"))  # one seed per cell: inconclusive
    assert_typed_table(out)
    assert "At equal parameters, do deeper transformers compose better?" in (out / "report.html").read_text()


def test_a_malformed_data_file_is_one_line_and_nothing_is_written(tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_text("IN: jump OUT: I_JUMP\nIN: walk\n")
    out = tmp_path / "x"
    r = bindscale("run", TINY_DEPTH, "--out", out, "--set", f"data.train={bad}", "--set", f"data.test={bad}")
    assert r.returncode == 2 and str(bad) in r.stderr and "line 2" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    assert not (out / "summary.json").exists()


@pytest.mark.slow
def test_quick_depth_study_gives_its_verdicts_and_figures(tmp_path):
    _, summary = run_quick("depth", tmp_path / "q")
    assert [v["claim"] for v in summary["verdicts"]] == CLAIMS
    assert all("seeds_per_cell" in v["details"] for v in summary["verdicts"])
    html = (tmp_path / "q" / "report.html").read_text()
    assert html.count("data:image/png;base64,") >= 3
