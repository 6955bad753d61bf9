import pytest

from bindscale.core.config import StudyConfig
from bindscale.core.studyfile import apply_override, builtin_studies, parse_override, resolve_study
from bindscale.core.errors import ConfigError
from bindscale.studies.scaling.config import TrialConfig


def test_builtin_scaling_study_loads_and_has_both_models():
    assert "scaling" in builtin_studies()
    study = resolve_study("scaling")
    kinds = {t.model.kind for t in study.trials()}
    assert kinds == {"mlp", "hypernet", "tpr"}
    quick = resolve_study("scaling", quick=True)
    assert len(quick.trials()) < len(study.trials())
    assert all(t.train.steps < 1000 for t in quick.trials())


def test_trial_id_is_a_stable_hash_of_the_config():
    a, b = TrialConfig(seed=1), TrialConfig(seed=1)
    assert a.trial_id == b.trial_id and len(a.trial_id) == 16
    assert TrialConfig(seed=2).trial_id != a.trial_id


def test_grid_union_dedupes():
    s = StudyConfig(name="x", grids=[{"width": [8, 16], "seed": [0, 1]}, {"width": [16], "seed": [1, 2]}])
    assert len(s.trials()) == 5


@pytest.mark.parametrize(
    "data,needle",
    [
        ({"name": "x", "base": {"model": {"widht": 3}}}, "model.widht: unknown field; allowed: kind, width"),
        ({"name": "x", "base": {"task": {"holdout": 1.5}}}, "task.holdout"),
        ({"name": "x", "base": {"task": {"M": 3, "K": 5}}}, "K=5 must be at most M=3"),
        ({"name": "x", "grids": [{"wdith": [1]}]}, "unknown sweep axis 'wdith'"),
        ({"name": "x", "grids": [{"width": [0]}]}, "model.width"),
        ({"name": "bad name!"}, "name"),
        ({"name": "x", "verdicts": {"nope": {}}}, "unknown verdict"),
    ],
)
def test_bad_configs_give_one_line_naming_the_field(tmp_path, data, needle):
    import yaml

    p = tmp_path / "s.yaml"
    p.write_text(yaml.safe_dump(data))
    with pytest.raises(ConfigError) as e:
        resolve_study(str(p))
    msg = str(e.value)
    assert needle in msg and "\n" not in msg


def test_malformed_yaml_and_unknown_study(tmp_path):
    p = tmp_path / "s.yaml"
    p.write_text("name: x\ngrids: [ {width: [1, 2}\n")
    with pytest.raises(ConfigError, match="malformed YAML.*line"):
        resolve_study(str(p))
    with pytest.raises(ConfigError, match="unknown study 'nosuch'; studies: .*scaling"):
        resolve_study("nosuch")
    with pytest.raises(ConfigError, match="does not exist"):
        resolve_study(str(tmp_path / "missing.yaml"))


def test_overrides():
    assert parse_override("train.steps=5") == ("train.steps", 5)
    assert parse_override("width=[8, 16]") == ("width", [8, 16])
    with pytest.raises(ConfigError, match="expected key=value"):
        parse_override("train.steps")
    study = {"name": "x", "grids": [{"width": [64, 128], "seed": [0, 1]}]}
    s = StudyConfig.model_validate(apply_override(study, "width", 8))
    assert {t.model.width for t in s.trials()} == {8} and len(s.trials()) == 2
    s = StudyConfig.model_validate(apply_override(study, "model.width", [4, 5, 6]))
    assert {t.model.width for t in s.trials()} == {4, 5, 6}
    s = StudyConfig.model_validate(apply_override(study, "train.steps", 7))
    assert {t.train.steps for t in s.trials()} == {7}
    with pytest.raises(ConfigError, match=r"^--set train.stepz: train has no field 'stepz'; allowed: .*train\.steps"):
        apply_override(study, "train.stepz", 7)
    with pytest.raises(ConfigError, match=r"^--set train.steps=-1: base.train.steps: .*\(got -1\)"):
        resolve_study("scaling", quick=True, overrides=["train.steps=-1"])
    # the quick variant's own field, named as the user wrote it
    with pytest.raises(ConfigError, match=r"^--set quick.base.train.steps=-5: base.train.steps"):
        resolve_study("scaling", quick=True, overrides=["quick.base.train.steps=-5"])
    with pytest.raises(ConfigError, match=r"^--set holdout=\[0.25,1.5\]: grid value .*task.holdout"):
        resolve_study("scaling", quick=True, overrides=["holdout=[0.25,1.5]"])


def test_set_reads_exponent_numbers_without_a_dot_as_numbers():
    from bindscale.core.studyfile import resolve_study

    assert {t.train.lr for t in resolve_study("scaling", overrides=["train.lr=3e-4"]).trials()} == {3e-4}
    study = resolve_study("scaling", overrides=["lr=[1e-3, 3e-4]"])
    assert sorted({t.train.lr for t in study.trials()}) == [3e-4, 1e-3]


def test_study_files_written_before_the_verdicts_review_still_load():
    """A run directory's study.yaml from before: renamed claims and retired thresholds."""
    data = {"name": "old", "base": {"task": {"family": "hyperteacher"}}, "grids": [{"seed": [0]}],
            "verdicts": {"binding": {"target_r2": 0.9, "tolerance": 0.01}, "hull": {"margin": 0.05}}}
    study = StudyConfig.model_validate(data)
    assert study.verdicts["binding"] == {"target_r2": 0.9}


def test_a_report_over_records_of_other_trial_configurations_says_so(tmp_path):
    from bindscale.run.runner import build_outputs

    (tmp_path / "records").mkdir()
    (tmp_path / "records" / "0123456789abcdef.json").write_text("{}")
    with pytest.raises(ConfigError, match="none of the 1 records .* belongs to this study's"):
        study = resolve_study("scaling", quick=True)
        build_outputs(tmp_path, study, study.trials())


def test_is_quick_cannot_be_set_and_a_quick_file_defaults_to_the_quick_directory(tmp_path):
    import yaml

    from bindscale.run.runner import default_out

    with pytest.raises(ConfigError, match="is_quick is set by --quick"):
        resolve_study("scaling", quick=True, overrides=["is_quick=false"])
    quick = resolve_study("scaling", quick=True)
    p = tmp_path / "q.yaml"
    p.write_text(yaml.safe_dump(quick.model_dump(mode="json")))  # what --print-config prints
    again = resolve_study(str(p))
    assert again.is_quick and str(default_out(again, quick=False)) == "runs/scaling-quick"
    assert {t.trial_id for t in again.trials()} == {t.trial_id for t in quick.trials()}


def test_report_of_a_missing_directory_says_so(tmp_path):
    from bindscale.run.runner import load_run_study

    with pytest.raises(ConfigError, match="does not exist"):
        load_run_study(tmp_path / "nope")
    with pytest.raises(ConfigError, match="not a bindscale run directory"):
        load_run_study(tmp_path)


def test_unknown_field_lists_the_fields_of_the_class_validated_when_two_share_a_name():
    """Two studies' trial classes are both named TrialConfig (the study convention); an unknown
    field lists the fields of the one being validated, not of whichever the registry names first."""
    from typing import Literal

    from bindscale.core.config import StrictModel, TrialBase, validate

    class OtherModel(StrictModel):
        breadth: int = 1

    class TrialConfig(TrialBase):  # noqa: F811 — the clash is the point
        kind: Literal["other"] = "other"
        model: OtherModel = OtherModel()
        seed: int = 0

    with pytest.raises(ConfigError, match=r"model\.foo: unknown field; allowed: breadth$"):
        validate(TrialConfig, {"model": {"breadth": 2, "foo": 3}}, where="trial config")
    with pytest.raises(ConfigError, match=r"allowed: kind, width, depth"):
        validate(globals()["TrialConfig"], {"model": {"kind": "mlp", "foo": 3}}, where="trial config")


_SMALL = """name: small
base:
  kind: subgraphs
  task: {family: maxsubseq}
grids:
  - {seed: [0, 1, 2]}
"""


def test_a_broken_quick_section_is_refused_on_a_full_run_too(tmp_path):
    f = tmp_path / "s.yaml"
    f.write_text(_SMALL + "quick:\n  base:\n    train: {stepz: 10}\n")
    for quick in (False, True):  # the same words with and without --quick
        with pytest.raises(ConfigError, match=r"the quick section \(used by --quick\): base\.train\.stepz"):
            resolve_study(str(f), quick=quick)
    f.write_text(_SMALL + "quick:\n  base:\n    train: {steps: 10}\n")
    assert resolve_study(str(f)).base.train.steps != 10 and resolve_study(str(f), quick=True).base.train.steps == 10


@pytest.mark.parametrize("value", ['"abc"', '"5"', "true"])
def test_a_threshold_that_is_not_a_number_is_refused(tmp_path, value):
    f = tmp_path / "s.yaml"
    f.write_text(_SMALL + f"verdicts:\n  scale_does_not_lift_ood: {{margin: {value}}}\n")
    with pytest.raises(ConfigError, match="margin"):
        resolve_study(str(f))
    f.write_text(_SMALL + "verdicts:\n  scale_does_not_lift_ood: {margin: 0}\n")
    assert resolve_study(str(f)).verdicts["scale_does_not_lift_ood"]["margin"] == 0.0


def test_a_misspelt_claim_under_anchors_is_refused_like_one_under_verdicts():
    """A new user's typo (``hul:`` under anchors) ran without a word; under verdicts it was refused."""
    with pytest.raises(ConfigError, match="anchors: unknown claim 'hul'"):
        resolve_study("scaling", overrides=["anchors.hul=a note"])
