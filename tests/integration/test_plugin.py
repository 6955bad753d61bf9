"""A third-party study added as one folder (tests/toy_study/) and registered through the
``bindscale.studies`` entry-point group: run, resume and report through the CLI."""

import json
import re
import os
import subprocess
import sys
from pathlib import Path

import pytest

TOY = Path(__file__).parents[1] / "toy_study"


@pytest.fixture()
def toy_env(tmp_path):
    """An environment where the toy package is installed: importable, with distribution metadata whose
    entry_points.txt registers it (what `pip install` of a package declaring the entry point writes)."""
    site = tmp_path / "site"
    dist = site / "bindscale_toy-0.1.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: bindscale-toy\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[bindscale.studies]\ntoy = bindscale_toy:STUDY\n")
    path = os.pathsep.join([str(site), str(TOY), os.environ.get("PYTHONPATH", "")])
    return os.environ | {"PYTHONPATH": path, "PYTHONUNBUFFERED": "1", "COLUMNS": "200"}


def _cli(env, *args, cwd=None):
    return subprocess.run([sys.executable, "-m", "bindscale", *map(str, args)], capture_output=True, text=True,
                          env=env, cwd=cwd, timeout=300)


def test_toy_plugin_runs_resumes_and_reports(toy_env, tmp_path):
    r = _cli(toy_env, "list")
    assert r.returncode == 0 and re.search(r"\n  toy +\(toy\) A toy study", r.stdout) and "toy_fits" in r.stdout, r.stderr
    out = tmp_path / "run"
    r = _cli(toy_env, "run", "toy", "--out", out, "--workers", "1")
    assert r.returncode == 0, r.stderr
    assert len(list((out / "records").glob("*.json"))) == 6
    summary = json.loads((out / "summary.json").read_text())
    (v,) = summary["verdicts"]
    assert v["claim"] == "toy_fits" and v["verdict"] == "supported" and v["side"] == "scale_suffices"
    assert (out / "figures" / "score_vs_width.png").exists()
    r = _cli(toy_env, "run", "toy", "--out", out, "--workers", "1")
    assert "6 already recorded, 0 to run" in r.stderr.replace("\n", " ")
    r = _cli(toy_env, "report", out)
    assert r.returncode == 0, r.stderr
    assert "The toy model fits a line" in (out / "report.html").read_text()
    # a study file of the plugin's kind works by path too, with --set on its own axes
    r = _cli(toy_env, "run", TOY / "bindscale_toy" / "toy.yaml", "--out", tmp_path / "by_path", "--workers", "1",
             "--set", "width=[8]", "--set", "verdicts.toy_fits.threshold=0.99")
    assert r.returncode == 0, r.stderr
    (v,) = json.loads((tmp_path / "by_path" / "summary.json").read_text())["verdicts"]
    assert v["n_trials"] == 3


def test_without_the_plugin_its_kind_is_a_clear_error(tmp_path):
    r = subprocess.run([sys.executable, "-m", "bindscale", "run", TOY / "bindscale_toy" / "toy.yaml", "--out",
                        tmp_path / "x"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "unknown study kind 'toy'" in r.stderr
    assert not (tmp_path / "x").exists()
