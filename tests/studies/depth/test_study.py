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


@pytest.mark.parametrize("name", ["depth", "depth-full", "depth-paper"])
def test_every_tier_trains_one_step_count_and_gives_deciding_cells_five_seeds(name):
    """The rules compare only cells of one training recipe (verdicts.mixed_recipes: the whole ``train`` section), so a
    tier whose trials trained different recipes would decide nothing; and three seeds decide nothing
    (their interval is too wide): each family's deepest and shallowest member and every depth at the largest budget on
    the length and add-jump splits (each must fail for Lake & Baroni's claim) have at least 5 seeds."""
    from collections import defaultdict

    from bindscale.core.studyfile import resolve_study

    trials = resolve_study(name).trials()
    assert len({t.train.model_dump_json() for t in trials}) == 1
    seeds = defaultdict(set)
    for t in trials:
        if t.model.pos == "rope":
            seeds[(t.task.split, t.model.budget, t.model.n_layers)].add(t.seed)
    families = defaultdict(set)
    for split, budget, layers in seeds:
        families[(split, budget)].add(layers)
    deciding = {(s, b, min(ls)) for (s, b), ls in families.items() if len(ls) > 1}
    deciding |= {(s, b, max(ls)) for (s, b), ls in families.items() if len(ls) > 1}
    decided = ("length", "addprim_jump")
    top = max(b for (s, b, _) in seeds if s in decided)
    deciding |= {(s, b, L) for (s, b, L) in seeds if s in decided and b == top}
    assert deciding and all(len(seeds[c]) >= 5 for c in deciding), {c: len(seeds[c]) for c in deciding}
    assert {"length", "addprim_jump"} <= {s for (s, _, _) in deciding}
