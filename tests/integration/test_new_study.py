"""``bindscale new-study``: the template study is made, registered as a plugin and run end to end (its
quick variant through the CLI, and its own tests)."""

import json
import os
import subprocess
import sys


def _cli(env, *args, cwd=None):
    return subprocess.run([sys.executable, "-m", "bindscale", *map(str, args)], capture_output=True, text=True,
                          env=env, cwd=cwd, timeout=300)


def test_new_study_is_registered_and_runs_its_quick_variant(tmp_path):
    env = os.environ | {"PYTHONUNBUFFERED": "1", "COLUMNS": "200"}
    r = _cli(env, "new-study", "curvefit", "--dir", tmp_path / "pkg")
    assert r.returncode == 0, r.stderr
    assert 'curvefit = "curvefit:STUDY"' in r.stdout
    assert (tmp_path / "pkg" / "curvefit" / "verdicts.py").exists() and (tmp_path / "pkg" / "test_curvefit.py").exists()
    assert "{{" not in "".join(p.read_text() for p in (tmp_path / "pkg").rglob("*.py"))
    # register it as an installed plugin would be: importable, with an entry point in its metadata
    dist = tmp_path / "site" / "curvefit-0.1.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: curvefit\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[bindscale.studies]\ncurvefit = curvefit:STUDY\n")
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path / "site"), str(tmp_path / "pkg"), env.get("PYTHONPATH", "")])
    r = _cli(env, "list")
    assert r.returncode == 0 and "curvefit_wider_fits" in r.stdout, r.stderr
    out = tmp_path / "run"
    r = _cli(env, "run", "curvefit", "--quick", "--out", out, "--workers", "1")
    assert r.returncode == 0, r.stderr
    (v,) = json.loads((out / "summary.json").read_text())["verdicts"]
    assert v["claim"] == "curvefit_wider_fits" and v["verdict"] == "supported" and v["n_trials"] == 3
    assert (out / "figures" / "curvefit_r2_vs_width.png").exists()
    # its own tests pass
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_curvefit.py"],
                       capture_output=True, text=True, env=env, cwd=tmp_path / "pkg", timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr


def test_new_study_refuses_a_bad_or_taken_name(tmp_path):
    r = _cli(os.environ, "new-study", "Not-a-name", "--dir", tmp_path)
    assert r.returncode == 2 and "not a lowercase Python identifier" in r.stderr
    r = _cli(os.environ, "new-study", "depth", "--dir", tmp_path)
    assert r.returncode == 2 and "already registered" in r.stderr
