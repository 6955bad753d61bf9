import json
import os

import pandas as pd
import pytest

from .conftest import assert_typed_table, bindscale


def test_tiny_study_end_to_end_and_report_rebuild(tiny, tmp_path):
    out = tmp_path / "run"
    r = bindscale("run", tiny, "--out", out, "--workers", "1")
    assert r.returncode == 0, r.stderr
    for f in ("report.html", "summary.json", "results.parquet", "study.yaml"):
        assert (out / f).is_file(), f
    summary = json.loads((out / "summary.json").read_text(), parse_constant=lambda c: pytest.fail(c))
    assert summary["study"] == "tiny"
    assert {v["claim"] for v in summary["verdicts"]} == {"scaling", "decodability", "binding", "hull"}
    assert all(v["verdict"] in ("supported", "not_supported", "inconclusive") for v in summary["verdicts"])
    df = pd.read_parquet(out / "results.parquet")
    assert len(df) == 16 and df.trial_id.is_unique and set(df.status) == {"ok"}
    assert {"r2_heldout", "r2_inhull", "r2_outhull", "decod_best", "n_params", "width", "prov_git_hash"} <= set(df)
    assert "model.width" not in df and assert_typed_table(out).equals(df)
    html = (out / "report.html").read_text()
    assert "<script>alert(1)</script>" not in html and "data:image/png;base64" in html
    # Rebuild from records alone.
    (out / "report.html").unlink()
    (out / "results.parquet").unlink()
    r2 = bindscale("report", out)
    assert r2.returncode == 0, r2.stderr
    assert (out / "report.html").is_file()
    assert pd.read_parquet(out / "results.parquet").equals(df)
    # Re-running is a no-op: every trial already recorded.
    r3 = bindscale("run", tiny, "--out", out, "--workers", "1")
    assert "16 already recorded, 0 to run" in r3.stderr.replace("\n", " ")
    assert "stacked jobs" not in r3.stderr  # no plan to describe (it said "0 stacked jobs on 1 worker(s)")
    # While a live run holds the directory, `report` is refused and writes nothing (the run writes its own).
    from bindscale.store.lock import RunLock

    before = (out / "report.html").stat().st_mtime_ns
    with RunLock(out):
        r4 = bindscale("report", out)
    assert r4.returncode == 2 and "is being written by a live bindscale run (pid" in r4.stderr, r4.stderr
    assert len([ln for ln in r4.stderr.splitlines() if ln.strip()]) == 1
    assert (out / "report.html").stat().st_mtime_ns == before


def test_list(tiny):
    r = bindscale("list")
    assert r.returncode == 0
    assert "scaling" in r.stdout and "hyperteacher" in r.stdout and "structure_emerges" in r.stdout


@pytest.mark.parametrize(
    "args,needle",
    [
        (["run", "nosuchstudy"], "unknown study 'nosuchstudy'"),
        (["run", "--set", "model.widht=3"], "--set model.widht: model has no field 'widht'; allowed: model.activation"),
        (["run", "--set", "fooo=3"], "--set fooo: unknown key; allowed: a sweep axis (model, width"),
        (["run", "--set", "task.holdout=1.5"], "task.holdout"),
        (["run", "--set", "holdout=0.99"], "split cannot be made"),
        (["run", "--set", "K=1"], "split cannot be made"),
        (["run", "--set", "holdout=0"], "holds out no combination"),
        (["run", "--device", "tpu"], "--device 'tpu'"),
        (["run", "--workers", "0"], "--workers 0"),
        (["run", "--set", "train.steps"], "expected key=value"),
        (["report", "/nonexistent/dir"], "/nonexistent/dir does not exist"),
    ],
)
def test_bad_input_is_one_line_exit_2_and_writes_nothing(tmp_path, args, needle):
    out = tmp_path / "out"
    r = bindscale(*args, *(["--out", out] if args[0] == "run" else []), cwd=tmp_path)
    assert r.returncode == 2, (r.stdout, r.stderr)
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and needle in lines[0], r.stderr
    assert not out.exists() and not (tmp_path / "runs").exists()


def test_malformed_yaml_and_unwritable_out(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\ngrids: [ {width: [1, 2}\n")
    r = bindscale("run", bad, "--out", tmp_path / "o")
    assert r.returncode == 2 and "malformed YAML" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    blocker = tmp_path / "file"
    blocker.write_text("x")
    r = bindscale("run", "--quick", "--out", blocker / "sub")
    assert r.returncode == 2 and "--out" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    r = bindscale("run", "--quick", "--out", blocker)
    assert r.returncode == 2 and "not a directory" in r.stderr
    # An empty --out is a mistake (an unset shell variable), not the default directory.
    r = bindscale("run", "--quick", "--out", "", cwd=tmp_path)
    assert r.returncode == 2 and "--out: empty path" in r.stderr and not (tmp_path / "runs").exists()
    r = bindscale("run", "--quick", "--out", "/")
    assert r.returncode == 2 and "the filesystem root" in r.stderr and not os.path.exists("/study.yaml")


def test_quick_default_study_plans_both_models():
    from bindscale.core.studyfile import resolve_study

    full, quick = resolve_study("scaling").trials(), resolve_study("scaling", quick=True).trials()
    assert {t.model.kind for t in quick} == {"mlp", "hypernet", "tpr"}
    assert len(quick) < len(full) and max(t.train.steps for t in quick) < min(t.train.steps for t in full)


def test_error_messages_keep_square_brackets(tmp_path):
    r = bindscale("run", tmp_path / "[ray].yaml")
    assert r.returncode == 2 and "[ray].yaml" in r.stderr
