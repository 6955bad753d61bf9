"""Careless input at the command line, answered in one line (exit 2) or one note, and fast: an ``--out``
that is a file, a quick field outside ``quick.base``, a report of a run with no record, a misspelt study,
``list`` in a pipe, a ``--set`` given twice, a warm-up longer than the steps."""

import io
import os
import subprocess
import sys

import pytest
import yaml
from rich.console import Console

from bindscale.core import registry
from bindscale.core.studyfile import resolve_study, study_notes
from bindscale.core.errors import ConfigError

from .test_ergonomics import _IMPORTS_AFTER, SRC, TINY, cli, one_error_line


def _refused_light(args, cwd) -> str:
    """The one error line of ``bindscale ARGS``, checking that it came before torch, sklearn and pandas."""
    r = subprocess.run([sys.executable, "-c", _IMPORTS_AFTER, *map(str, args)], capture_output=True, text=True,
                       env=os.environ | {"PYTHONPATH": SRC}, cwd=cwd, timeout=120)
    assert r.stdout.strip() == "exit 2 []", (r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    return lines[0]


# ----------------------------------------------------------------------------- --out is a file


def test_an_out_in_a_published_folder_or_holding_foreign_run_files_is_refused(tmp_path):
    import json

    from bindscale.run.options import check_out_dir

    pub = tmp_path / "pub"
    (pub / "binding_scan").mkdir(parents=True)
    (pub / "MANIFEST.json").write_text(json.dumps({"written_by": "bindscale publish"}))
    for out in (pub, pub / "binding_scan", pub / "new"):  # the folder, a study's folder, a new one inside
        with pytest.raises(ConfigError, match="published folder"):
            check_out_dir(out)
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("x")
    check_out_dir(mine)  # other files are the user's business: a run writes none of them
    (mine / "report.html").write_text("my own report")
    with pytest.raises(ConfigError, match="holds report.html but no run's study.yaml"):
        check_out_dir(mine)
    (mine / "study.yaml").write_text("name: x")  # a run directory: the run resumes or replaces its own outputs
    check_out_dir(mine)
    # Refused in one line, before anything is written, by the run and its dry run alike.
    line = _refused_light(["run", "scaling", "--out", pub / "binding_scan"], tmp_path)
    assert "is inside a published folder" in line
    assert (pub / "binding_scan").exists() and not any((pub / "binding_scan").iterdir())


@pytest.mark.parametrize("extra", [[], ["--dry-run"]])
def test_an_out_that_is_a_file_is_refused_before_torch(tmp_path, extra):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    line = _refused_light(["run", "scaling", "--out", blocker, *extra], tmp_path)
    assert f"--out {blocker}: exists and is not a directory" in line
    line = _refused_light(["run", "scaling", "--out", blocker / "sub", *extra], tmp_path)
    assert f"--out {blocker / 'sub'}: cannot create it, {blocker} is not a writable directory" in line
    assert [p.name for p in tmp_path.iterdir()] == ["file"] and blocker.read_text() == "x"


# ----------------------------------------------------------------------------- --set quick.…


@pytest.mark.parametrize("key,needle", [
    ("quick.train.steps=5", "--set quick.train.steps: the quick section keeps trial fields under quick.base; "
                            "did you mean quick.base.train.steps?"),
    ("quick.steps=5", "did you mean quick.base.train.steps?"),  # an axis's short name
    ("quick.width=[8,16]", "keeps its sweeps under quick.grids; did you mean --quick --set width=…?"),
    ("quick.bogus=1", "--set quick.bogus: the quick section has no field 'bogus'; it takes study fields (quick.anchors"),
])
@pytest.mark.parametrize("quick", [True, False])
def test_a_trial_field_of_the_quick_section_points_at_quick_base(key, needle, quick):
    with pytest.raises(ConfigError) as err:
        resolve_study("scaling", quick=quick, overrides=[key])
    assert needle in str(err.value)


def test_the_quick_sections_own_fields_still_take_a_set():
    study = resolve_study("scaling", quick=True, overrides=["quick.base.train.steps=5", "quick.description=q"])
    assert {t.train.steps for t in study.trials()} == {5} and study.description == "q"


# ----------------------------------------------------------------------------- report without a record


@pytest.mark.parametrize("records_dir", [False, True])
def test_report_of_a_run_with_no_record_says_nothing_was_recorded(tmp_path, records_dir):
    from bindscale.store.rundir import study_yaml

    run = tmp_path / "my run"
    run.mkdir()
    (run / "study.yaml").write_text(study_yaml(resolve_study(str(TINY))))
    if records_dir:  # the run made records/ and was stopped before its first trial finished
        (run / "records").mkdir()
    line = one_error_line(cli("report", run))
    assert f"{run}: nothing has been recorded yet" in line
    assert f"run it with `bindscale run '{run}/study.yaml' --out '{run}'`" in line
    assert not (run / "report.html").exists() and not (run / "results.parquet").exists()
    # The command it gives runs the same study.
    again = resolve_study(str(run / "study.yaml"))
    assert [t.trial_id for t in again.trials()] == [t.trial_id for t in resolve_study(str(TINY)).trials()]


def test_report_of_an_empty_path_is_one_line():
    assert "empty run-directory path" in one_error_line(cli("report", ""))


# ----------------------------------------------------------------------------- unknown study


def test_an_unknown_study_lists_studies_sorted_variants_apart_and_the_close_match(tmp_path):
    line = _refused_light(["run", "scalng"], tmp_path)
    assert "unknown study 'scalng' (did you mean scaling?); studies: " in line
    studies = line.split("; studies: ")[1].split("; variants: ")[0].split(", ")
    variants = line.split("; variants: ")[1].split(" (or a path")[0].split(", ")
    assert studies == sorted(n for n in registry.builtin_files() if n in registry.studies())
    assert variants == sorted(n for n in registry.builtin_files() if n not in registry.studies())
    assert "geometry-lm" in variants and "ceiling-ladder" in variants and "scaling" in studies
    with pytest.raises(ConfigError, match=r"\(did you mean geometry-lm\?\)"):
        resolve_study("geometry_lm")
    with pytest.raises(ConfigError) as err:
        resolve_study("zzzz")
    assert "did you mean" not in str(err.value)


# ----------------------------------------------------------------------------- list


def test_list_in_a_pipe_cuts_nothing():
    from bindscale.cli import first_sentence

    r = cli("list", columns=80)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert "…" not in r.stdout and max(map(len, lines)) > 80
    width = max(map(len, registry.studies()))
    for name, s in registry.studies().items():
        assert f"  {name:<{width}}  ({s.kind}) {first_sentence(s.description)}" in lines
    assert lines[-1].startswith("run one: ") and lines[-1].endswith("bindscale run all")  # whole, on one line


def test_list_on_a_terminal_keeps_one_line_per_study(monkeypatch):
    import bindscale.cli as cli_module

    buf = io.StringIO()
    monkeypatch.setattr(cli_module, "Console", lambda **kw: Console(file=buf, force_terminal=True, width=80,
                                                                    color_system=None))
    cli_module.list_()
    rows = [ln for ln in buf.getvalue().splitlines() if ln.startswith("  ")]
    assert all(len(row) <= 80 for row in rows) and any(row.endswith("…") for row in rows)


def test_list_with_a_plugin_that_cannot_load_says_one_line_and_exits_2(monkeypatch, capsys):
    import typer

    import bindscale.cli as cli_module

    def broken():
        raise ConfigError("study plugin my_x (my_x:STUDY) cannot be loaded: ModuleNotFoundError: No module named 'my_x'")

    monkeypatch.setattr(registry, "studies", broken)
    with pytest.raises(typer.Exit) as err:
        cli_module.list_()
    assert err.value.exit_code == 2
    out = capsys.readouterr()
    assert "cannot be loaded" in out.err + out.out and "Traceback" not in out.err + out.out


# ----------------------------------------------------------------------------- --set twice


@pytest.mark.parametrize("sets,needle", [
    (["train.steps=5", "train.steps=7"], "--set train.steps is given twice (train.steps=5, then train.steps=7); "
                                         "give each key once"),
    (["steps=5", "train.steps=7"], "--set steps and --set train.steps both set train.steps (steps=5, then "
                                   "train.steps=7)"),
    (["seed=[0]", "base.seed=1"], "--set seed and --set base.seed both set seed"),
    (["quick.base.train.steps=5", "quick.base.train.steps=6"], "--set quick.base.train.steps is given twice"),
])
def test_a_key_set_twice_is_refused(tmp_path, sets, needle):
    line = _refused_light(["run", TINY, *[a for s in sets for a in ("--set", s)], "--out", tmp_path / "o"], tmp_path)
    assert needle in line


# ----------------------------------------------------------------------------- warm-up


def test_a_warmup_longer_than_the_steps_is_noted(tmp_path):
    r = cli("run", "length_transfer", "--set", "train.steps=2", "--print-config", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    n = len(resolve_study("length_transfer", overrides=["train.steps=2"]).trials())
    w = resolve_study("length_transfer").trials()[0].train.warmup_steps  # the study file's warm-up
    assert r.stderr.splitlines() == [f"note: train.warmup_steps={w} exceeds train.steps=2 ({n} of {n} trained "
                                     "trials): the trainer cuts the warm-up to half the steps (1) so that the "
                                     "learning rate still decays"]
    assert yaml.safe_load(r.stdout)["base"]["train"]["steps"] == 2  # a note, not an error
    note, = study_notes(resolve_study("length_transfer", overrides=[f"train.steps={w + 50}"]))
    assert note.startswith(f"train.warmup_steps={w} is more than half of train.steps={w + 50}")


@pytest.mark.parametrize("quick", [False, True])
def test_no_built_in_study_is_noted(quick):
    for name in registry.builtin_files():
        assert study_notes(resolve_study(name, quick=quick)) == [], name


def test_trials_of_pretrained_models_are_not_noted():
    # geometry-lm probes pretrained models: its train.steps (100, beside the default warm-up 100) paces progress
    assert study_notes(resolve_study("geometry-lm", overrides=["train.steps=2"])) == []
    study = resolve_study("ceiling-lm", overrides=["train.steps=2"])  # trained transformers and a real model
    trained = sum(t.trains() for t in study.trials())
    assert 0 < trained < len(study.trials())
    assert f"({trained} of {trained} trained trials)" in study_notes(study)[0]


def test_a_dry_run_says_when_it_would_use_fewer_workers_than_asked(tmp_path):
    r = cli("run", TINY, "--dry-run", "--workers", "999", "--out", tmp_path / "o")
    assert r.returncode == 0, r.stderr
    assert f"note: --workers 999 would run as {len(os.sched_getaffinity(0))} (" in r.stderr + r.stdout
    r = cli("run", TINY, "--dry-run", "--workers", "2", "--executor", "inline", "--out", tmp_path / "o")
    assert "note: --workers 2 would run as 1 (the inline executor" in r.stderr + r.stdout


@pytest.mark.parametrize("study", [str(TINY), "all"])
def test_a_dry_run_refuses_the_options_a_run_refuses(tmp_path, study):
    r = cli("run", study, "--dry-run", "--retries", "-1", "--out", tmp_path / "o")
    assert r.returncode == 2 and one_error_line(r) == "error: --retries -1: must be 0 or more", r.stderr
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("arg, want", [("train=5", "error: --set train: train is a section; set one of its fields: train."),
                                       ("=5", "error: --set: a key is missing before '='; allowed: a sweep axis")])
def test_a_set_of_a_section_or_of_no_key_says_what_is_wrong(tmp_path, arg, want):
    r = cli("run", TINY, "--dry-run", "--set", arg, "--out", tmp_path / "o")
    assert one_error_line(r).startswith(want), r.stderr


def test_keep_own_kind_fields_drops_only_the_other_kinds_fields():
    from pydantic import BaseModel

    from bindscale.core.config import keep_own_kind_fields, model_kind

    class A(BaseModel):
        kind: str = "transformer"
        width: int = 1

    class B(BaseModel):
        kind: str = "lm"
        path: str = ""

    kinds = {"transformer": A, "lm": B}
    both = {"seed": 0, "model": {"kind": "lm", "width": 8, "path": "m.gguf"}}
    assert keep_own_kind_fields(both, kinds) == {"seed": 0, "model": {"kind": "lm", "path": "m.gguf"}}
    assert keep_own_kind_fields({"model": {"width": 8, "path": "p"}}, kinds) == {"model": {"width": 8}}
    odd = {"model": {"kind": "rnn", "width": 8, "path": "p"}}  # unknown: left for the discriminator to refuse
    assert keep_own_kind_fields(odd, kinds) is odd and keep_own_kind_fields("x", kinds) == "x"
    assert model_kind({}) == "transformer" and model_kind(B()) == "lm"
