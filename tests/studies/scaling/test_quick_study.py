import json

import pandas as pd
import pytest

from bindscale.report.browser import assert_fits

from integration.conftest import bindscale


@pytest.mark.slow
def test_quick_headline_study_shows_width_and_coverage_effects(tmp_path):
    """The quick study through the CLI: held-out R² rises with width, coverage helps, all claims get verdicts."""
    out = tmp_path / "q"
    r = bindscale("run", "--quick", "--out", out)
    assert r.returncode == 0, r.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert [v["claim"] for v in summary["verdicts"]] == ["scaling", "decodability", "binding", "binding_tpr", "hull"]
    df = pd.read_parquet(out / "results.parquet")
    mlp = df[(df.model == "mlp") & (df.status == "ok")]
    by_width = mlp[mlp.holdout == mlp.holdout.min()].groupby("width").r2_heldout.mean()
    assert by_width.is_monotonic_increasing, by_width
    by_cover = mlp[mlp.width == mlp.width.max()].groupby("holdout").r2_heldout.mean()
    assert by_cover.iloc[0] > by_cover.iloc[-1], by_cover
    decod = next(v for v in summary["verdicts"] if v["claim"] == "decodability")
    # The quick study's students stay below the in-distribution gate (r2_id < 0.9): no claim is decided, the
    # deciding number moves to value_of_unlearned_models and the reason names the cells.
    assert decod["verdict"] == "inconclusive" and decod["value"] is None, decod
    assert "did not learn their training task" in decod["details"]["reason"]
    assert decod["details"]["value_of_unlearned_models"]["value"] > 0.5
    assert all(g["missed"] for g in decod["details"]["gates"])

    # Seeds 0 and 1 alone on one worker stack the same trials differently (stacks of 2, 4, 8 instead of
    # 3, 6, 12) and still give the same bits (one torch thread per worker: bindscale.run.jobs). The study trains
    # in fp32 on every CPU, so the bits do not depend on whether this machine has AMX.
    one = tmp_path / "one_worker"
    r = bindscale("run", "--quick", "--out", one, "--workers", "1", "--set", "seed=[0,1]")
    assert r.returncode == 0, r.stderr
    got = pd.read_parquet(one / "results.parquet").set_index("trial_id").sort_index()
    ref = df.set_index("trial_id").sort_index().loc[got.index]
    assert len(got) == 32
    assert set(got["stack_size"]) != set(ref["stack_size"]) and set(got["precision_used"]) == {"fp32"}
    cols = ["status", "r2_id", "r2_heldout", "r2_inhull", "final_loss", "decod_best", "decod_input"]
    pd.testing.assert_frame_equal(got[cols], ref[cols], check_exact=True)
    assert_fits(out / "report.html", skip_if_missing=False)  # nothing wider than 1024 or 800 px (Chromium)
