"""``save_models`` through the CLI and the process pool: one model file per trial, written before its record."""

import torch

import bindscale as bs

from .conftest import bindscale

SMALL = ("--set", "seed=0", "--set", "width=[8]", "--set", "train.steps=10", "--set", "save_models=true", "--workers", "2")


def test_the_process_pool_saves_every_trials_model_and_a_resumed_run_keeps_them(tiny, tmp_path):
    out = tmp_path / "run"
    r = bindscale("run", tiny, "--out", out, *SMALL)
    assert r.returncode == 0, r.stderr
    records = sorted(p.stem for p in (out / "records").glob("*.json"))
    assert len(records) == 3 and sorted(p.stem for p in (out / "models").glob("*.pt")) == records
    assert not list((out / "models").glob(".*"))  # no temporary file left
    df = bs.load_results(out)
    row = df[df["model"] == "hypernet"].iloc[0]
    model = bs.load_model(out, row["trial_id"])
    assert type(model).__name__ == "Hypernet" and model.hidden[0].base_W.shape[1] == row["width"]
    before = {p.name: p.stat().st_mtime_ns for p in (out / "models").iterdir()}
    r = bindscale("run", tiny, "--out", out, *SMALL)
    assert "3 already recorded, 0 to run" in r.stderr.replace("\n", " ")
    assert {p.name: p.stat().st_mtime_ns for p in (out / "models").iterdir()} == before
    torch.testing.assert_close(bs.load_model(out, row["trial_id"]).hidden[0].base_W, model.hidden[0].base_W)
