"""A stratum that lost seeds (fewer than MIN_REPLICATES ok on a side, or a side gone) is still a deciding cell, so the
engine counts its lost seeds and a contradicting stratum cannot vanish (a hostile review's tables)."""

import numpy as np
import pandas as pd
import pytest

from bindscale.verdicts.engine import compute_verdicts
from tests.studies.modularity.test_verdicts import _table

METRICS = ("frac_robust", "sub_diff", "abl_diff", "base_acc_test")


def _run(df, claim):
    return compute_verdicts(df, {"verdicts": {claim: {}}}, n_boot=200)[0]


def _fail(df, mask):
    out = df.copy()
    out.loc[mask, "status"] = "failed"
    for c in METRICS:
        out.loc[mask, c] = np.nan
    return out


def _two(mlp_robust, cnn_robust):
    full = pd.concat([_table(robust=mlp_robust, arch="mlp"), _table(robust=cnn_robust, arch="cnn")],
                     ignore_index=True)
    full["trial_id"] = [f"t{i}" for i in range(len(full))]
    return full


def test_width_claim_with_the_contradicting_strata_thinned_is_inconclusive():
    # mlp grows with width, cnn shrinks: together not a clear gain
    full = _two({(16, "none"): 0.1, (64, "none"): 0.6, (16, "match_count"): 0.1, (64, "match_count"): 0.6},
                {(16, "none"): 0.4, (64, "none"): 0.1, (16, "match_count"): 0.4, (64, "match_count"): 0.1})
    assert _run(full, "structure_grows_with_width")["verdict"] != "supported"
    thinned = _fail(full, (full.architecture == "cnn") & (full.width == 64) & (full.seed >= 2))
    v = _run(thinned, "structure_grows_with_width")
    assert v["verdict"] == "inconclusive"  # was "supported" on the mlp strata alone
    assert "architecture cnn, width 64" in v["details"]["reason"] and "6 failed" in v["details"]["reason"]


@pytest.mark.parametrize("lost_seeds", [6, 8])
def test_pretraining_claim_with_the_contradicting_side_lost_is_inconclusive(lost_seeds):
    # mlp gains from pretraining, cnn loses: together not supported
    full = _two({(16, "none"): 0.1, (64, "none"): 0.1, (16, "match_count"): 0.6, (64, "match_count"): 0.6},
                {(16, "none"): 0.5, (64, "none"): 0.5, (16, "match_count"): 0.1, (64, "match_count"): 0.1})
    assert _run(full, "pretraining_reliability")["verdict"] == "not_supported"
    lost = _fail(full, (full.architecture == "cnn") & (full.pretraining == "match_count")
                 & (full.seed >= 8 - lost_seeds))
    v = _run(lost, "pretraining_reliability")
    assert v["verdict"] == "inconclusive"  # was "supported" on the mlp strata alone
    reason = v["details"]["reason"]
    assert f"{lost_seeds} of 8 seeds of the deciding cell (architecture cnn" in reason
    assert "did not learn" not in reason  # lost seeds, not an unlearned model


def test_a_stratum_planned_thin_loses_nothing():
    full = _two({(16, "none"): 0.1, (64, "none"): 0.1, (16, "match_count"): 0.6, (64, "match_count"): 0.6},
                {(16, "none"): 0.1, (64, "none"): 0.1, (16, "match_count"): 0.6, (64, "match_count"): 0.6})
    assert _run(full, "pretraining_reliability")["verdict"] == "supported"
    # the cnn arm planned with 2 seeds only: too thin to compare, but nothing was lost
    planned_thin = full[(full.architecture == "mlp") | (full.seed < 2)]
    v = _run(planned_thin, "pretraining_reliability")
    assert v["verdict"] == "supported" and v["details"]["strata_not_compared"]
