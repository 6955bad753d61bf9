"""Ergonomics of the command line: numbers in study files, duplicate keys, --dry-run and
--print-config, a sane ETA, fast one-line errors that name the file, `list`, the resource
tracker after a killed driver, and constraints.txt pinning every installed package."""

import io
import os
import re
import signal
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest
import yaml
from rich.console import Console

import bindscale
from bindscale.core.studyfile import _numbers, parse_override, resolve_study
from bindscale.core.errors import ConfigError

ROOT = Path(__file__).resolve().parents[2]
TINY = ROOT / "tests" / "integration" / "tiny.yaml"
SRC = str(Path(bindscale.__file__).resolve().parents[1])  # this checkout, whatever is installed


def cli(*args, cwd=None, columns=80) -> subprocess.CompletedProcess:
    """``python -m bindscale ARGS`` in a subprocess, importing this checkout's package."""
    env = os.environ | {"PYTHONPATH": SRC, "PYTHONUNBUFFERED": "1", "COLUMNS": str(columns)}
    return subprocess.run([sys.executable, "-m", "bindscale", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, env=env, timeout=300)


def one_error_line(r: subprocess.CompletedProcess) -> str:
    assert r.returncode == 2, (r.stdout, r.stderr)
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, r.stderr
    return lines[0]


def study_file(tmp_path: Path, text: str, name: str = "s.yaml") -> str:
    p = tmp_path / name
    p.write_text(text)
    return str(p)


# ----------------------------------------------------------------------------- 1. numbers


def test_exponent_numbers_read_as_numbers_and_integral_ones_as_ints():
    assert _numbers("1e3") == 1000 and isinstance(_numbers("1e3"), int)
    assert _numbers("2E+4") == 20000 and isinstance(_numbers("2E+4"), int)
    assert _numbers("-1e2") == -100 and isinstance(_numbers("-1e2"), int)
    assert _numbers("3e-4") == pytest.approx(3e-4) and isinstance(_numbers("3e-4"), float)
    assert isinstance(_numbers("1000.0"), float) and isinstance(_numbers("1.5e3"), float)
    assert isinstance(_numbers("1e40"), float)  # beyond int64: a float (an int field refuses it)
    for text in ("abc", "e", "1e", "1.2.3", "relu", "1e3x", "e5", "."):
        assert _numbers(text) == text
    assert _numbers({"1e3": ["1e-3", {"a": "2e2"}], "k": "x"}) == {"1e3": [1e-3, {"a": 200}], "k": "x"}
    assert parse_override("steps=1e3") == ("steps", 1000)
    assert parse_override("lr=[1e-3, 3e-4]") == ("lr", [1e-3, 3e-4])


def test_set_steps_in_exponent_form_is_an_int():
    study = resolve_study(str(TINY), overrides=["steps=1e3", "train.lr=3e-4"])
    assert {t.train.steps for t in study.trials()} == {1000}
    assert {t.train.lr for t in study.trials()} == {3e-4}
    with pytest.raises(ConfigError, match=r"1000\.0"):  # a float written with a dot stays a float
        resolve_study(str(TINY), overrides=["steps=1000.0"])


def test_study_yaml_reads_exponent_numbers_like_set(tmp_path):
    text = TINY.read_text().replace("steps: 60,", "steps: 6e1, lr: 1e-3,")
    assert "lr: 1e-3" in text
    study = resolve_study(study_file(tmp_path, text))
    assert {t.train.steps for t in study.trials()} == {60}
    assert {t.train.lr for t in study.trials()} == {1e-3}
    # in grids too
    grid = study_file(tmp_path, TINY.read_text().replace("seed: [0, 1]}\n  - {model: [hypernet]",
                                                         "seed: [0, 1], lr: [1e-3, 3e-4]}\n  - {model: [hypernet]"), "g.yaml")
    assert {t.train.lr for t in resolve_study(grid).trials()} == {1e-3, 3e-4, 0.001}


# ----------------------------------------------------------------------------- 2. duplicate keys


@pytest.mark.parametrize("text,key,line", [
    ("name: a\ndescription: x\nname: b\n", "name", 3),
    ("name: a\nbase:\n  train: {lr: 0.1, steps: 5, lr: 0.2}\n", "lr", 3),
    ("name: a\nbase:\n  train:\n    lr: 0.1\n    lr: 0.2\n", "lr", 5),
])
def test_duplicate_keys_are_an_error_naming_key_file_and_line(tmp_path, text, key, line):
    path = study_file(tmp_path, text)
    with pytest.raises(ConfigError) as err:
        resolve_study(path)
    msg = str(err.value)
    assert f"duplicate key {key!r}" in msg and path in msg and f"at line {line}" in msg and "\n" not in msg


def test_yaml_merge_keys_may_still_be_overridden():
    from bindscale.core.studyfile import StudyLoader

    assert yaml.load("a: &x {k: 1, j: 2}\nb: {<<: *x, k: 3}\n", Loader=StudyLoader)["b"] == {"k": 3, "j": 2}
    with pytest.raises(yaml.YAMLError, match="duplicate key 'k'"):
        yaml.load("a: &x {k: 1}\nb: {<<: *x, k: 3, k: 4}\n", Loader=StudyLoader)


def test_duplicate_key_on_the_command_line_is_one_line_exit_2(tmp_path):
    path = study_file(tmp_path, "name: a\nname: b\n")
    line = one_error_line(cli("run", path, "--out", tmp_path / "o"))
    assert f"{path}: duplicate key 'name' at line 2 (first at line 1)" in line
    assert not (tmp_path / "o").exists()


# ----------------------------------------------------------------------------- 3. --dry-run, --print-config


def test_dry_run_prints_the_plan_and_writes_nothing(tmp_path):
    r = cli("run", TINY, "--dry-run", "--out", tmp_path / "o", "--workers", "1", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert out.startswith("tiny: 16 trials\n")
    assert "grid 1: 12 trials (model mlp, width 8/16/32, holdout 0.3/0.6, seed 0/1)" in out
    assert "grid 2: 4 trials (model hypernet, depth 1, width 4/8, holdout 0.3, seed 0/1)" in out
    assert re.search(r"\n\d+ stacked jobs on 1 worker\(s\) \(inline\), device cpu; trials per stack: \d", out)
    assert re.search(r"estimated time: ~[\d.]+ s wall on 1 worker", out)
    assert "an estimate" in out and "measured on" in out and "nothing was run or written" in out
    assert list(tmp_path.iterdir()) == []


def test_dry_run_leaves_out_recorded_trials_and_checks_like_a_run(tmp_path):
    from bindscale.run.dryrun import describe_plan
    from bindscale.store.records import write_record

    study = resolve_study(str(TINY))
    trials = study.trials()
    for t in trials[:3]:
        write_record(tmp_path, {"trial_id": t.trial_id, "status": "ok", "config": {}})
    write_record(tmp_path, {"trial_id": trials[3].trial_id, "status": "failed", "config": {}})
    before = sorted(p.name for p in (tmp_path / "records").iterdir())
    text = describe_plan(study, workers=2, device="cpu", out=str(tmp_path))
    assert f"3 already recorded in {tmp_path}, 13 to run" in text
    assert sorted(p.name for p in (tmp_path / "records").iterdir()) == before
    assert "different study configuration" not in text  # no study.yaml there yet
    # A folder holding another study: the dry run says what the run would say (it said nothing).
    from bindscale.store.rundir import study_yaml

    (tmp_path / "study.yaml").write_text(study_yaml(resolve_study(str(TINY), overrides=["lr=5e-4"])))
    text = describe_plan(study, workers=2, device="cpu", out=str(tmp_path))
    assert f"note: {tmp_path} holds a different study configuration; a run would replace it" in text
    (tmp_path / "study.yaml").write_text(study_yaml(study))
    assert "different study" not in describe_plan(study, workers=2, device="cpu", out=str(tmp_path))
    with pytest.raises(ConfigError, match="--workers 0"):
        describe_plan(study, workers=0, device="cpu")
    with pytest.raises(ConfigError, match="--executor 'bogus'"):
        describe_plan(study, executor="bogus")
    with pytest.raises(ConfigError, match="holds out no combination"):
        describe_plan(resolve_study(str(TINY), overrides=["holdout=0"]), device="cpu")


def test_time_estimate_schedules_jobs_on_the_workers():
    from bindscale.run.planner import schedule

    assert schedule([4.0, 3.0, 3.0], 2) == 6.0
    assert schedule([4.0, 3.0, 3.0], 1) == 10.0
    assert schedule([], 3) == 0.0


def test_print_config_prints_the_resolved_study_and_runs_nothing(tmp_path):
    r = cli("run", "scaling", "--quick", "--set", "train.steps=7", "--set", "seed=[0]", "--print-config", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    data = yaml.safe_load(r.stdout)
    assert data["name"] == "scaling" and data["is_quick"] is True and data["base"]["train"]["steps"] == 7
    assert list(tmp_path.iterdir()) == []
    # It loads back as the same study.
    printed = study_file(tmp_path, r.stdout, "printed.yaml")
    again = resolve_study(printed)
    expected = resolve_study("scaling", quick=True, overrides=["train.steps=7", "seed=[0]"])
    assert [t.trial_id for t in again.trials()] == [t.trial_id for t in expected.trials()]


# ----------------------------------------------------------------------------- 4. ETA


def _progress(monkeypatch, **kw):
    import bindscale.run.progress as prog

    clock = [0.0]
    monkeypatch.setattr(prog.time, "monotonic", lambda: clock[0])
    buf = io.StringIO()
    con = Console(file=buf, force_terminal=False, width=200)
    return prog.TrainingProgress(con, **kw), clock, buf


def test_eta_ignores_start_up_and_waits_for_measured_work(monkeypatch):
    # 1000 trial-steps at 10 per second, after 60 s of worker start-up.
    p, clock, buf = _progress(monkeypatch, total=1000, n_trials=2, every=0.0)
    with p:
        clock[0] = 60.0
        p.advance(25)  # first report: start-up + 2.5 s of steps; no rate yet
        clock[0] = 65.0
        p.advance(50)  # 5 s after the first report: too early
        clock[0] = 72.5
        p.advance(75)  # 12.5 s after the first report, 125 steps since: 10 steps/s
    lines = buf.getvalue().splitlines()
    assert [ln.split(", ")[-1] for ln in lines] == ["ETA estimating…", "ETA estimating…", "ETA 0:01:25"]
    assert lines[0].startswith("training (0/2 trials): 2% done (25/1000 trial-steps), 0:01:00 elapsed")
    # From the start, the old ETA would have been 72.5 s * 850/150 = 0:06:50.


def test_eta_needs_a_share_of_the_work_not_only_time(monkeypatch):
    p, clock, buf = _progress(monkeypatch, total=100_000, n_trials=1, every=0.0)
    with p:
        clock[0] = 5.0
        p.advance(10)
        clock[0] = 100.0
        p.advance(500)  # 0.5% of the work since the first report: still estimating
        clock[0] = 200.0
        p.advance(1000)  # 1.5%
    assert [ln.split(", ")[-1] for ln in buf.getvalue().splitlines()] == [
        "ETA estimating…", "ETA estimating…", "ETA 3:33:23"]  # 98 490 left at 1500 per 195 s


def test_eta_after_a_rerun_took_steps_back(monkeypatch):
    p, clock, buf = _progress(monkeypatch, total=1000, n_trials=1, every=0.0)
    with p:
        clock[0] = 10.0
        p.advance(100)
        clock[0] = 30.0
        p.advance(200)
        p.advance(-300)  # the job is re-run: below the first report's work, no rate
    assert buf.getvalue().splitlines()[-1].endswith("ETA estimating…")


def test_live_bar_says_estimating_until_work_is_measured(monkeypatch):
    import bindscale.run.progress as prog

    clock = [0.0]
    monkeypatch.setattr(prog.time, "monotonic", lambda: clock[0])
    buf = io.StringIO()
    con = Console(file=buf, force_terminal=True, width=160)
    with prog.TrainingProgress(con, total=1000, n_trials=1) as p:
        clock[0] = 30.0
        p.advance(10)
        assert p._bar.tasks[0].fields["eta"] == "ETA estimating…"
        clock[0] = 50.0
        p.advance(200)
        assert p._bar.tasks[0].fields["eta"] == "ETA 0:01:19"  # 790 left at 200 per 20 s


# ----------------------------------------------------------------------------- 5. fast errors

_IMPORTS_AFTER = """
import sys
import bindscale.cli as cli
sys.argv = ["bindscale", *sys.argv[1:]]
try:
    cli.main()
except SystemExit as e:
    print("exit", e.code, sorted(m for m in ("torch", "sklearn", "pandas", "matplotlib") if m in sys.modules))
"""


@pytest.mark.parametrize("args", [["run", "nosuchstudy"], ["run", "scaling", "--set", "width=-1"], ["run", ""],
                                  ["run", "scaling", "--set", "widht=3"], ["run", "--device", "tpu"],
                                  ["run", "--workers", "0"], ["run", "--executor", "foo"], ["run", "--retries", "-1"],
                                  ["run", "--address", "x"], ["run", "--out", ""], ["run", "--workers", "0", "--dry-run"],
                                  ["report", "/nonexistent/dir"]])
def test_a_bad_study_is_refused_before_torch_or_sklearn_is_imported(tmp_path, args):
    env = os.environ | {"PYTHONPATH": SRC}
    r = subprocess.run([sys.executable, "-c", _IMPORTS_AFTER, *args], capture_output=True, text=True, env=env,
                       cwd=tmp_path, timeout=120)
    assert r.stdout.strip() == "exit 2 []", (r.stdout, r.stderr)
    assert len(r.stderr.strip().splitlines()) == 1 and list(tmp_path.iterdir()) == []


# ----------------------------------------------------------------------------- 6. messages


def test_an_empty_study_name_says_so(tmp_path):
    line = one_error_line(cli("run", "", cwd=tmp_path))
    assert "study name is empty" in line and "directory" not in line
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("text,quick,needle", [
    ("name: x\nbase: 3\n", False, "base: Input should be a valid dictionary"),
    ("name: x\nbase: {task: 3}\n", False, "base.task: Input should be a valid dictionary"),
    ("name: x\nbase: {kind: nope}\n", False, "base.kind: unknown study kind 'nope'"),
    ("name: x\nbase: {task: {M: 4, K: 5}}\n", False, "base.task: K=5 must be at most M=4"),
    ("name: 5\n", False, "name: Input should be a valid string"),
    ("name: x\ngrids: {width: [1]}\n", False, "grids: Input should be a valid list"),
    ("name: x\ngrids: [3]\n", False, "grids.0: Input should be a valid dictionary"),
    ("name: x\ngrids: [{width: 16}]\n", False, "grids.0.width: Input should be a valid list"),
    ("name: x\ngrids: [{width: []}]\n", False, "axis 'width' has no values"),
    ("name: x\ngrids: [{seed: [0, 1, 0]}]\n", False, "axis 'seed' lists 0 more than once"),
    ("name: x\ngrids: [{wodth: [1]}]\n", False, "unknown sweep axis 'wodth'"),
    ("name: x\ngrids: [{width: [-1]}]\n", False, "grid value {'width': -1}: model.width"),
    ("name: x\ngrids: [{K: [5]}]\nbase: {task: {M: 4}}\n", False, "grid value {'K': 5}: task: K=5 must be at most M=4"),
    ("name: x\nverdicts: [1]\n", False, "verdicts: Input should be a valid dictionary"),
    ("name: x\nverdicts: {scaling: 3}\n", False, "verdicts.scaling: expected a mapping of thresholds"),
    ("name: x\nverdicts: {scaling: {r2_threshold: 7}}\n", False, "verdicts.scaling.r2_threshold=7.0 is out of range"),
    ("name: x\nverdicts: {nope: {}}\n", False, "unknown verdict 'nope'"),
    ("name: x\nanchors: [1]\n", False, "anchors: Input should be a valid dictionary"),
    ("name: x\nquick: 3\n", True, "'quick' must be a mapping"),
    ("name: x\nbogus: 1\n", False, "bogus: unknown field"),
    ("- 1\n- 2\n", False, "must be a YAML mapping"),
    ("", False, "must be a YAML mapping"),
    ("name: x\ngrids: [\n", False, "malformed YAML"),
])
def test_every_study_file_error_is_one_line_naming_the_file(tmp_path, text, quick, needle):
    path = study_file(tmp_path, text)
    with pytest.raises(ConfigError) as err:
        resolve_study(path, quick=quick)
    msg = str(err.value)
    assert path in msg and needle in msg, msg
    assert "(top level)" not in msg and "Value error" not in msg and "\n" not in msg


def test_set_errors_blame_the_set_values():
    with pytest.raises(ConfigError, match=r"^--set verdicts\.scaling=3: verdicts\.scaling: expected a mapping"):
        resolve_study("scaling", overrides=["verdicts.scaling=3"])
    with pytest.raises(ConfigError, match=r"^--set width=\[8,-1\]: grid value \{.*'model.width': -1\}: model.width"):
        resolve_study(str(TINY), overrides=["width=[8,-1]"])
    with pytest.raises(ConfigError, match=r"^--set verdicts\.nope\.x=1: unknown verdict 'nope'"):
        resolve_study("scaling", overrides=["verdicts.nope.x=1"])
    # a repeated value used to be merged into one trial: seed [0, 0] ran one seed
    with pytest.raises(ConfigError, match=r"^--set seed=\[0,0\]: axis 'seed' lists 0 more than once"):
        resolve_study("scaling", overrides=["seed=[0,0]"])


# ----------------------------------------------------------------------------- 7. list


def test_first_sentence():
    from bindscale.cli import first_sentence

    assert first_sentence("Headline study (Schug et al. 2024; \"Scaling can. Lead\"). Does it? Yes.") == (
        "Headline study (Schug et al. 2024; \"Scaling can. Lead\").")
    assert first_sentence("Faith and Fate (Dziri et al., NeurIPS 2023): do they\n compose? Character-level") == (
        "Faith and Fate (Dziri et al., NeurIPS 2023): do they compose?")
    assert first_sentence("no full stop") == "no full stop"
    assert first_sentence("") == ""


def test_list_prints_one_line_per_study():
    r = cli("list", columns=80)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    start = lines.index("studies:")
    from bindscale.core import registry

    n = len(registry.studies())  # built-in ones and any installed plugin
    rows = lines[start + 1:start + 1 + n]
    assert [row.split()[0] for row in rows] == list(registry.studies())  # built-ins by name, then plugins
    # Other study files of a study (geometry-lm) are listed under their study, so a user can find them.
    variants = {v: name for name, s in registry.studies().items() for v in s.study_files() if v != name}
    assert "geometry-lm" in variants
    assert lines[start + 1 + n] == "variants (other study files of a study):"
    rows = lines[start + 2 + n:start + 2 + n + len(variants)]
    assert {row.split()[0]: row.split()[2].rstrip(")") for row in rows} == variants
    assert lines[start + 2 + n + len(variants)] == "claims:"


def test_print_config_keeps_non_ascii_text_as_written():
    r = cli("run", "geometry", "--quick", "--print-config")
    assert r.returncode == 0, r.stderr
    assert "Diego-Simón" in r.stdout and "\\xF3" not in r.stdout


# ----------------------------------------------------------------------------- 8. resource tracker

_KILLED_DRIVER = """
import os, signal, sys
from multiprocessing import get_context
if sys.argv[1] == "quiet":
    from bindscale.run.executors import _start_resource_tracker
    _start_resource_tracker()
q = get_context("spawn").Queue()
print(q._rlock._semlock.name, flush=True)
os.kill(os.getpid(), signal.SIGKILL)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="named POSIX semaphores in /dev/shm")
def test_a_killed_driver_leaves_no_semaphore_and_no_leak_warning():
    env = os.environ | {"PYTHONPATH": SRC}
    runs = {}
    for mode in ("plain", "quiet"):
        # communicate() returns once the tracker, which holds stderr too, has cleaned up and exited.
        r = subprocess.run([sys.executable, "-c", _KILLED_DRIVER, mode], capture_output=True, text=True, env=env,
                           timeout=120)
        assert r.returncode == -signal.SIGKILL, r.stderr
        name = r.stdout.strip()
        assert name and not Path("/dev/shm", "sem." + name.lstrip("/")).exists()  # the tracker unlinked it
        runs[mode] = r.stderr
    assert "leaked semaphore objects" in runs["plain"]  # the warning this test is about is real
    assert "leaked semaphore" not in runs["quiet"] and runs["quiet"].strip() == ""


def test_the_tracker_filter_names_the_leak_warnings_line():
    from multiprocessing import resource_tracker

    from bindscale.run.executors import _leak_warning_filter

    rules = _leak_warning_filter().split(",")
    source = Path(resource_tracker.__file__).read_text().splitlines()
    for rule in rules:
        action, message, category, module, line = rule.split(":")
        assert (action, message, category, module) == ("ignore", "resource_tracker", "UserWarning",
                                                       "multiprocessing.resource_tracker")
        assert "warnings.warn('resource_tracker: There appear" in source[int(line) - 1] or "leaked" in source[int(line) - 1]


# ----------------------------------------------------------------------------- 9. constraints.txt


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _required_distributions() -> set[str]:
    """Installed distributions that bindscale needs: its dependencies and extras (pyproject.toml),
    and theirs, recursively. A missing one (the ``ray`` extra without ray) and its own requirements
    are left out; so are tools installed beside bindscale that it does not require (a linter)."""
    import tomllib

    from packaging.requirements import Requirement

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    todo = [Requirement(r) for r in project["dependencies"]]
    todo += [Requirement(r) for reqs in project.get("optional-dependencies", {}).values() for r in reqs]
    found: set[str] = set()
    while todo:
        req = todo.pop()
        name = _norm(req.name)
        if name in found:
            continue
        try:
            dist = metadata.distribution(req.name)
        except metadata.PackageNotFoundError:
            continue
        found.add(name)
        for text in dist.requires or []:
            dep = Requirement(text)
            extras = [""] + sorted(req.extras)
            if dep.marker is None or any(dep.marker.evaluate({"extra": e}) for e in extras):
                todo.append(dep)
    return found


def test_constraints_pin_every_installed_distribution():
    pinned = {}
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, _, version = line.partition("==")
            assert version, f"constraints.txt: {line!r} is not pinned with =="
            pinned[_norm(name)] = version
    required = _required_distributions()
    assert {"torch", "numpy", "pydantic", "typer", "rich", "pytest"} <= required
    missing = sorted(required - {"bindscale", "pip", "setuptools", "wheel"} - set(pinned))
    assert not missing, f"installed and required by bindscale but not pinned in constraints.txt: {', '.join(missing)}"


# ----------------------------------------------------------------------------- quick exit

_ENTRY = """
import atexit, sys, threading, time
atexit.register(lambda: print("atexit ran", flush=True))
if sys.argv[1] == "thread":  # a non-daemon thread still running: Python's own exit, which waits for it
    threading.Thread(target=lambda: (time.sleep(0.5), print("thread done", flush=True))).start()
sys.argv = ["bindscale", *sys.argv[2:]]
from bindscale.cli import entry
entry()
print("not reached")
"""


@pytest.mark.parametrize("case, args, rc", [("plain", ["list"], 0), ("plain", ["run", "nosuchstudy"], 2),
                                            ("thread", ["list"], 0)])
def test_the_command_exits_with_its_status_after_the_atexit_handlers(case, args, rc):
    env = os.environ | {"PYTHONPATH": SRC}
    r = subprocess.run([sys.executable, "-c", _ENTRY, case, *args], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == rc, r.stderr
    assert "atexit ran" in r.stdout and "not reached" not in r.stdout
    assert ("thread done" in r.stdout) == (case == "thread")
    assert "Traceback" not in r.stderr
    if rc == 0:
        assert "scaling" in r.stdout  # the command's own output, flushed before the exit
