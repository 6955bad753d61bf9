"""The geometry study end to end: a tiny study through the CLI, and (slow) the quick study."""

from pathlib import Path

import pytest

from integration.conftest import assert_resumes, assert_typed_table, run_quick, run_tiny

TINY_GEO = Path(__file__).parent / "tiny.yaml"
CLAIMS = ["polar_beats_structural", "geometry_grows_with_scale"]


def test_a_tiny_geometry_study_runs_end_to_end_and_reports_its_claims(tmp_path):
    out = tmp_path / "geo"
    run_tiny(TINY_GEO, out, CLAIMS, 2, ("polar_las_pp", "structural_uuas_hm", "identity_las_pp", "untrained_polar_las_pp",
                                       "embed_structural_uuas_pp", "chain_uuas_pp", "probe_layers", "confusion",
                                       "polar_edges"))  # one seed per size: inconclusive
    assert_typed_table(out)
    html = (out / "report.html").read_text()
    assert "Does a polar probe read syntax better" in html and "data:image/png;base64," in html
    assert_resumes(TINY_GEO, out, 2)


@pytest.mark.slow
def test_quick_geometry_study_gives_verdicts(tmp_path):
    _, summary = run_quick("geometry", tmp_path / "q")
    assert [v["claim"] for v in summary["verdicts"]] == CLAIMS
    for v in summary["verdicts"]:
        assert v["verdict"] in ("supported", "not_supported", "inconclusive")
        d = v["details"]
        if d.get("lost_to_gates_by_cell"):  # the quick LMs missed a gate per model: inconclusive, 3 planned per cell
            assert v["verdict"] == "inconclusive" and "did not learn their training task" in d["reason"]
            assert all(c["planned_ok"] == 3 for c in d["lost_to_gates_by_cell"].values())
        else:
            assert d["seeds_per_cell"] == 3 and "caveat" in d
