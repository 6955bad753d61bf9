"""A study added from the ``new-study`` template keeps the core's checks green, on both routes.

The template study is written into ``tmp_path`` and registered in this process, either as a plugin (an
entry point of the group ``bindscale.studies``, faked by replacing the registry's entry-point discovery) or
built in (its folder put on ``bindscale.studies``' search path, where the registry looks for built-in
packages). With it registered, the core's checks that iterate over the registered studies run as they are
(the same functions as in ``tests/unit``): every claim carries a source headline and a competence gate and
is complete, ``run all --dry-run`` adds every study's estimate into one total, ``bindscale list`` lists it;
and the template's own tests pass.
"""

from __future__ import annotations

import importlib.util
import re
import shlex
import shutil
import sys
from importlib import metadata
from pathlib import Path
from types import SimpleNamespace

import pytest
from typer.testing import CliRunner

import bindscale.studies
from bindscale.cli import app
from bindscale.core import registry
from bindscale.core.scaffold import how_to_register, new_study

NAME = "curvefit_suite"


def _forget_study() -> None:
    registry._load.cache_clear()
    registry._origin.pop(NAME, None)
    vars(bindscale.studies).pop(NAME, None)
    for mod in [m for m in sys.modules if m.split(".")[0] == NAME or m.startswith(f"bindscale.studies.{NAME}")]:
        del sys.modules[mod]


@pytest.fixture(params=["plugin", "builtin"])
def registered(request, tmp_path, monkeypatch):
    """The template study ``NAME``, registered by one route; the registry forgets it afterwards."""
    package, test_file = new_study(NAME, tmp_path / "new")
    if request.param == "plugin":
        monkeypatch.syspath_prepend(str(package.parent))
        ours = metadata.EntryPoint(name=NAME, value=f"{NAME}:STUDY", group=registry.ENTRY_POINT_GROUP)
        real = metadata.entry_points

        def entry_points(**select):
            found = list(real(**select))
            return found + [ours] if select.get("group") == registry.ENTRY_POINT_GROUP else found

        monkeypatch.setattr(registry, "metadata", SimpleNamespace(entry_points=entry_points))
    else:
        extra = tmp_path / "builtin"
        extra.mkdir()
        shutil.move(str(package), extra / NAME)
        monkeypatch.setattr(bindscale.studies, "__path__", [*bindscale.studies.__path__, str(extra)])
    _forget_study()
    yield request.param, test_file
    _forget_study()


@pytest.mark.slow
def test_a_template_study_keeps_the_core_checks_green(registered, tmp_path):
    from tests.unit import test_anchors, test_gates, test_live_feedback, test_plugins

    route, test_file = registered
    study = registry.get(NAME)
    assert (NAME in registry.builtin()) == (route == "builtin")
    assert NAME in registry.run_order() if route == "builtin" else NAME not in registry.run_order()

    # every claim: a source headline (anchor), complete, references resolve; built-in claims: a gate
    for name, plugin in registry.studies().items():
        for claim in plugin.claims:
            test_anchors.test_every_builtin_claim_has_a_source_headline(name, claim)
        test_plugins.test_every_claim_is_complete_and_its_references_resolve(name)
    test_gates.test_every_builtin_claim_has_a_gate()
    assert all(c.gates and c.anchor for c in study.claims)
    assert "TEMPLATE" in study.claims[0].anchor.citation  # the placeholder says it is one

    # run all --dry-run: one estimate per study it runs (the new one too, when built in), and their total
    test_live_feedback.test_run_all_dry_run_adds_the_studies_estimates_into_one_total(tmp_path / "dry")
    out = CliRunner().invoke(app, ["run", "all", "--dry-run", "--workers", "2", "--out", str(tmp_path / "dry2")]).output
    assert (f"\n{NAME}: " in out) == (route == "builtin")
    assert len(re.findall(r"^estimated time: ~", out, flags=re.M)) == len(registry.run_order())
    assert re.search(r"^run all: ~.+ wall in all", out, flags=re.M)

    # bindscale list: one row per registered study (built-ins by name, then plugins), and its claim
    r = CliRunner().invoke(app, ["list"], env={"COLUMNS": "200"})
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    start = lines.index("studies:")
    assert [row.split()[0] for row in lines[start + 1:start + 1 + len(registry.studies())]] == list(registry.studies())
    assert any(line.split()[:2] == [NAME, f"{NAME}_wider_fits"] for line in lines)

    # the template's own tests, against the registered study
    spec = importlib.util.spec_from_file_location(f"test_{NAME}", test_file)
    own = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(own)
    for test in [getattr(own, n) for n in dir(own) if n.startswith("test_")]:
        test()


def test_the_printed_commands_test_the_file_where_they_put_it(tmp_path, monkeypatch):
    """``new-study``'s instructions run as printed from where it was run: the built-in route's ``pytest`` names
    the test where its ``mv`` put it (not where new-study wrote it), the plugin route's the written file."""
    monkeypatch.chdir(tmp_path)
    package, test_file = new_study(NAME, "new")
    text = how_to_register(package, test_file)
    assert (tmp_path / "new" / "pyproject.toml").read_text().count(f'{NAME} = "{NAME}:STUDY"') == 1
    commands = [line.strip() for line in text.splitlines()]
    pytests = [shlex.split(c.rsplit("; ", 1)[1])[1] for c in commands if c.startswith("then: bindscale list;")]
    builtin = next((c for c in commands if c.startswith("mkdir -p ")), None)
    if builtin is not None:  # a source checkout: the built-in route comes first
        moved_to = shlex.split(builtin)[-1]
        assert pytests[0] == f"{moved_to.rstrip('/')}/{test_file.name}"
        (move,) = [shlex.split(c) for c in commands if c.startswith(f"mv new/{NAME} ")]
        assert (tmp_path / move[-1]).resolve().parent == Path(bindscale.studies.__path__[0]).resolve()
    assert "pip install -e new" in commands and (tmp_path / pytests[-1]).exists()


def test_two_studies_made_in_one_dir_are_both_registered_by_its_metadata(tmp_path, monkeypatch):
    """Two studies made by ``new-study`` into one folder are both plugins of it: the entry points its
    ``pyproject.toml`` declares (each as the fixture above registers one) load both studies, with their packages
    and study files listed beside them, and each template's own tests pass against its study."""
    import tomllib

    names = ("curvefit_one", "curvefit_two")
    made = [new_study(name, tmp_path / "new") for name in names]
    data = tomllib.loads((tmp_path / "new" / "pyproject.toml").read_text())
    declared = data["project"]["entry-points"][registry.ENTRY_POINT_GROUP]
    assert declared == {n: f"{n}:STUDY" for n in names}
    assert data["tool"]["setuptools"]["packages"] == list(names)
    assert set(data["tool"]["setuptools"]["package-data"]) == set(names)

    monkeypatch.syspath_prepend(str(tmp_path / "new"))
    ours = [metadata.EntryPoint(name=n, value=v, group=registry.ENTRY_POINT_GROUP) for n, v in declared.items()]
    real = metadata.entry_points

    def entry_points(**select):
        found = list(real(**select))
        return found + ours if select.get("group") == registry.ENTRY_POINT_GROUP else found

    monkeypatch.setattr(registry, "metadata", SimpleNamespace(entry_points=entry_points))

    def forget() -> None:
        registry._load.cache_clear()
        for name in names:
            registry._origin.pop(name, None)
            for mod in [m for m in sys.modules if m.split(".")[0] == name]:
                del sys.modules[mod]

    forget()
    try:
        for name, (package, test_file) in zip(names, made):
            study = registry.get(name)
            assert study.name == name and study.claims[0].name == f"{name}_wider_fits"
            assert Path(sys.modules[study.package].__file__).parent == package
            spec = importlib.util.spec_from_file_location(f"test_{name}", test_file)
            own = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(own)
            for test in [getattr(own, n) for n in dir(own) if n.startswith("test_")]:
                test()
        assert set(names) <= set(registry.studies())
    finally:
        forget()
