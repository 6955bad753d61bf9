"""length_transfer verdict rules on synthetic tables: each can be supported and can fail, and missing,
NaN, all-zero or unlearned inputs give inconclusive, never a verdict."""

import numpy as np
import pandas as pd
import pytest

from bindscale.report.verdicts import compute_verdicts
from bindscale.studies.length_transfer import CLAIMS
from bindscale.studies.length_transfer.verdicts import (
    head_reuse_predicts_transfer,
    length_transfer_exists,
    prepare_rows,
    transfer_grows_with_size,
    unrelated_aux_no_transfer,
)

P = {c.name: dict(c.defaults) for c in CLAIMS}
SIZES = {32: 27_000, 64: 101_000}


def table(related=(0.05, 0.45), unrelated=(0.0, 0.0), alone_in=0.9, seeds=8, reuse=1.0, noise=0.03, seed=0,
          aux_in=0.9):
    """Copy trials alone / + mqar (related) / + sub (unrelated) at two sizes; ``related`` and ``unrelated`` are
    the true gains beyond L at the (small, large) size over an alone level of 0.05; ``reuse`` is the correlation's
    sign: each co-trained trial's head similarity follows its gain (1), its negative (-1) or neither (0)."""
    rng = np.random.default_rng(seed)
    rows = []
    for i, (d, n_params) in enumerate(SIZES.items()):
        for aux, gain in (("none", (0.0, 0.0)), ("mqar", related), ("sub", unrelated)):
            for s in range(seeds):
                beyond = float(np.clip(0.05 + gain[i] + rng.normal(0, noise), 0, 1))
                noise_sim = rng.normal(0, 0.05)
                rows.append({"trial_id": f"{d}{aux}{s}", "status": "ok", "main": "copy", "aux": aux, "pos": "rope",
                             "main_len": 8, "aux_len": 16, "layers": 2, "d_model": d, "heads": 4, "steps": 600,
                             "lr": 0.003, "n_train": 8000, "n_params": n_params, "seed": s,
                             "acc_in": float(np.clip(alone_in + rng.normal(0, 0.02), 0, 1)), "acc_beyond": beyond,
                             "aux_acc_in": np.nan if aux == "none" else float(np.clip(aux_in + rng.normal(0, 0.02),
                                                                                       0, 1)),
                             "head_corr": (np.nan if aux == "none" else
                                           float(np.tanh(reuse * 3 * (beyond - 0.05) + noise_sim)))})
    return pd.DataFrame(rows)


def rule(fn, df, name):
    return fn(prepare_rows(df), P[name], 500, 0)


def test_prepare_rows_labels_conditions_and_computes_gains_within_cells():
    ok = prepare_rows(table())
    assert set(ok["condition"]) == {"alone", "related", "unrelated"}
    assert ok.loc[ok["condition"] == "alone", "transfer_gain"].isna().all()
    one = ok[(ok["condition"] == "related") & (ok["d_model"] == 64)].iloc[0]
    alone = ok[(ok["condition"] == "alone") & (ok["d_model"] == 64)]["acc_beyond"].mean()
    assert one["transfer_gain"] == pytest.approx(one["acc_beyond"] - alone)


# -- transfer exists ------------------------------------------------------------------------------------------

def test_transfer_supported_when_related_training_lifts_accuracy_beyond_L():
    stat, verdict, (v, lo, hi), n, d = rule(length_transfer_exists, table(), "length_transfer_exists")
    assert verdict == "supported" and lo > 0.05 and v == pytest.approx(0.45, abs=0.05)
    assert d["seeds_per_cell"] == 8 and d["deciding_size"] == "101000" and d["main_used"] == "copy"


def test_transfer_not_supported_when_related_equals_alone():
    _, verdict, (_, lo, hi), _, _ = rule(length_transfer_exists, table(related=(0.0, 0.0)), "length_transfer_exists")
    assert verdict == "not_supported" and hi < 0.05


@pytest.mark.parametrize("fn,name", [(length_transfer_exists, "length_transfer_exists"),
                                     (unrelated_aux_no_transfer, "unrelated_aux_no_transfer"),
                                     (transfer_grows_with_size, "transfer_grows_with_size")])
def test_gain_rules_are_inconclusive_on_missing_nan_all_zero_or_unlearned_inputs(fn, name):
    df = table()
    assert rule(fn, df.drop(columns=["acc_beyond"]), name)[1] == "inconclusive"
    nan = df.copy()
    nan.loc[(nan["aux"] == "none") & (nan["d_model"] == 64), "acc_beyond"] = np.nan
    assert rule(fn, nan, name)[1] == "inconclusive"
    zero = df.assign(acc_beyond=0.0)
    out = rule(fn, zero, name)
    assert out[1] == "inconclusive" and "degenerate" in out[4]["reason"]
    out = rule(fn, table(alone_in=0.1), name)
    assert out[1] == "inconclusive" and "main task alone" in out[4]["reason"]
    out = rule(fn, table(aux_in=0.1, unrelated=(0.3, 0.3)), name)  # the auxiliary itself was not learned
    assert out[1] == "inconclusive" and "auxiliary reached" in out[4]["reason"]
    assert rule(fn, df.drop(columns=["aux_acc_in"]), name)[1] == "inconclusive"
    assert rule(fn, df[df["seed"] < 2], name)[1] == "inconclusive"  # two seeds per cell
    assert rule(fn, df.iloc[0:0], name)[1] == "inconclusive"
    assert rule(fn, df.assign(acc_beyond=0.3), name)[1] == "inconclusive"  # one value everywhere


# -- unrelated control ----------------------------------------------------------------------------------------

def test_unrelated_control_supported_when_it_gives_nothing_and_not_when_it_transfers():
    _, verdict, (_, _, hi), _, _ = rule(unrelated_aux_no_transfer, table(), "unrelated_aux_no_transfer")
    assert verdict == "supported" and hi < 0.05
    _, verdict, (_, lo, _), _, _ = rule(unrelated_aux_no_transfer, table(unrelated=(0.3, 0.3)),
                                        "unrelated_aux_no_transfer")
    assert verdict == "not_supported" and lo > 0.05


# -- size -------------------------------------------------------------------------------------------------------

def test_size_supported_when_the_gain_grows_and_not_when_it_stays():
    _, verdict, (v, lo, _), _, d = rule(transfer_grows_with_size, table(), "transfer_grows_with_size")
    assert verdict == "supported" and v == pytest.approx(0.4, abs=0.05) and d["smallest_size"] == "27000"
    _, verdict, (_, _, hi), _, _ = rule(transfer_grows_with_size, table(related=(0.4, 0.4), noise=0.01),
                                  "transfer_grows_with_size")
    assert verdict == "not_supported" and hi < 0.05
    one = table()
    assert rule(transfer_grows_with_size, one[one["d_model"] == 64], "transfer_grows_with_size")[1] == "inconclusive"


# -- head reuse ------------------------------------------------------------------------------------------------

def test_head_reuse_supported_when_similarity_tracks_gain_and_not_when_it_does_not():
    df = table(related=(0.2, 0.45), unrelated=(0.0, 0.02))
    stat, verdict, (r, lo, hi), n, _ = rule(head_reuse_predicts_transfer, df, "head_reuse_predicts_transfer")
    assert verdict == "supported" and lo > 0 and n == 32
    _, verdict, (r, lo, hi), _, _ = rule(head_reuse_predicts_transfer, table(related=(0.2, 0.45), reuse=-1.0),
                                         "head_reuse_predicts_transfer")
    assert verdict == "not_supported" and hi < 0.2


def test_head_reuse_inconclusive_on_missing_nan_all_zero_or_too_few():
    df = table()
    name = "head_reuse_predicts_transfer"
    assert rule(head_reuse_predicts_transfer, df.drop(columns=["head_corr"]), name)[1] == "inconclusive"
    assert rule(head_reuse_predicts_transfer, df.assign(head_corr=np.nan), name)[1] == "inconclusive"
    assert rule(head_reuse_predicts_transfer, df.assign(acc_beyond=0.0), name)[1] == "inconclusive"  # gains all 0
    assert rule(head_reuse_predicts_transfer, df.assign(head_corr=0.0), name)[1] == "inconclusive"
    few = df[df["seed"] < 2]
    out = rule(head_reuse_predicts_transfer, few, name)
    assert out[1] == "inconclusive" and "fewer than 10" in out[4]["reason"]
    inf = df.copy()
    inf.loc[inf["aux"] == "mqar", "head_corr"] = np.inf
    assert rule(head_reuse_predicts_transfer, inf, name)[1] == "inconclusive"


def test_every_claim_through_the_verdict_engine():
    study = {"verdicts": {c.name: {} for c in CLAIMS}, "anchors": {}}
    out = {v["claim"]: v for v in compute_verdicts(table(), study, n_boot=300)}
    assert out["length_transfer_exists"]["verdict"] == "supported"
    assert out["unrelated_aux_no_transfer"]["verdict"] == "supported"
    assert out["transfer_grows_with_size"]["verdict"] == "supported"
    assert {v["side"] for v in out.values()} <= {"scale_suffices", "where_scale_stops"}
    assert "caveat" not in out["length_transfer_exists"]["details"]  # 8 seeds per deciding cell
