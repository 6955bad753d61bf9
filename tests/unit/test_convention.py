"""Studies wired by convention (:data:`bindscale.core.study.CONVENTION`): hooks and rules are found by module and
function name in the study's package; an explicit reference overrides; what is neither takes its default."""

import sys
import textwrap

import pytest

from bindscale.core import registry
from bindscale.core.study import CONVENTION, Claim, StudyPlugin, resolve

#: What each built-in study has beyond the convention, and which conventional hooks it lacks.
OVERRIDES = {
    "ceiling": {},
    "depth": {},
    "geometry": {"checker": "bindscale.studies.geometry.lmtrial:check_trials"},
    "length_transfer": {},
    "modularity": {"figure_set": "bindscale.studies.modularity.figures:modularity_figures"},
    "subgraphs": {},
}
#: The trial config classes by their own names (config.TrialConfig is an alias).
CONFIGS = {"ceiling": "CeilingTrial", "depth": "DepthTrial", "geometry": "GeometryTrial",
           "length_transfer": "LengthTransferTrial", "modularity": "ModularityTrial", "subgraphs": "SubgraphsTrial"}
#: The transformer studies stack their trials (grouper, step_timer: plan.py, over bindscale.train.stack).
ABSENT = {
    "ceiling": {"step_counter"},
    "depth": {"step_counter"},
    "geometry": {"step_counter"},  # rows: prepare_rows joins the contextual scores its gates read
    "length_transfer": {"step_counter"},  # checker: plan.check_trials (the pretrained arm names model.path)
    "modularity": {"grouper", "step_timer", "checker", "rows"},
    "subgraphs": {"checker", "rows", "step_counter"},
}


@pytest.mark.parametrize("name", sorted(OVERRIDES))
def test_builtin_hooks_are_the_conventional_functions_unless_overridden(name):
    study = registry.get(name)
    for hook, (module, attr) in CONVENTION.items():
        got = study.hook(hook)
        if hook in ABSENT[name]:
            assert got is None, (name, hook)
        else:
            ref = OVERRIDES[name].get(hook, f"bindscale.studies.{name}.{module}:{attr}")
            assert got is resolve(ref), (name, hook)
    for c in study.claims:
        assert c.rule.startswith(f"bindscale.studies.{name}.verdicts:")
        assert callable(resolve(c.rule)) and all(callable(resolve(g)) for g in c.guards)
    assert study.study_files()[name].name == f"{name}.yaml"
    assert study.trial_class.__name__ == CONFIGS[name] and study.trial_class.model_fields["kind"].default == study.kind


@pytest.fixture()
def package(tmp_path, monkeypatch):
    """A throwaway study package ``conv_pkg`` with the given modules."""
    root = tmp_path / "conv_pkg"
    root.mkdir()
    (root / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))

    def make(**modules: str) -> str:
        for mod, text in modules.items():
            (root / f"{mod}.py").write_text(textwrap.dedent(text))
        return "conv_pkg"

    yield make
    for m in [m for m in sys.modules if m == "conv_pkg" or m.startswith("conv_pkg.")]:
        del sys.modules[m]


def _claim(**kw):
    return Claim(name="c_one", title="t", source="s", statement="st", statistic="x", side="scale_suffices", **kw)


def test_a_package_study_finds_its_hooks_and_rules(package):
    pkg = package(trial="def run_group(trials, device, progress=None):\n    return ['ran']\n",
                  config="class TrialConfig:\n    pass\n",
                  verdicts="def c_one(*a):\n    return 'rule'\ndef other(*a):\n    return 'other'\n"
                           "def guard(*a):\n    return None\n")
    s = StudyPlugin(name="conv", kind="conv", claims=(_claim(guards=(".verdicts:guard",)),), package=pkg)
    assert s.run_group([1], "cpu") == ["ran"] and s.trial_class.__name__ == "TrialConfig"
    assert s.claims[0].rule == "conv_pkg.verdicts:c_one" and s.claims[0].guards == ("conv_pkg.verdicts:guard",)
    assert s.directory.name == "conv_pkg"
    # no plan, figures or table module: the defaults
    assert s.job_cost([]) == 0.0 and s.trial_memory_bytes(None) == 256 << 20 and s.figures() == {}
    assert s.config_table(None) == ([], []) and s.check_trials([]) is None and s.hook("rows") is None
    # an explicit rule (relative or absolute) wins
    s2 = StudyPlugin(name="conv", kind="conv", claims=(_claim(rule=".verdicts:other"),), package=pkg)
    assert resolve(s2.claims[0].rule)() == "other"


def test_a_missing_trainer_or_a_broken_module_is_an_error(package):
    pkg = package(config="class TrialConfig:\n    pass\n", plan="import no_such_module_anywhere\n")
    s = StudyPlugin(name="conv", kind="conv", claims=(_claim(),), package=pkg)
    with pytest.raises(LookupError, match="no trainer given and no conv_pkg.trial.run_group"):
        s.run_group([], "cpu")
    with pytest.raises(ModuleNotFoundError, match="no_such_module_anywhere"):  # a bug inside plan, not "no plan"
        s.job_cost([])


def test_without_a_package_the_references_are_explicit():
    with pytest.raises(ValueError, match="trainer"):
        StudyPlugin(name="x", kind="x", trial_config=object, claims=())
    with pytest.raises(ValueError, match="relative reference"):
        StudyPlugin(name="x", kind="x", trial_config=object, claims=(), trainer=".trial:run_group")
    with pytest.raises(ValueError, match="no rule"):
        StudyPlugin(name="x", kind="x", trial_config=object, claims=(_claim(),), trainer=print)
