"""The study author's kit (:mod:`bindscale.kit`): its surface is documented, and studies use it instead
of the core's private helpers."""

import ast
import inspect
from pathlib import Path

import pytest

import bindscale.kit as kit
from bindscale.kit import INCONCLUSIVE, SUPPORTED, Verdict

ROOT = Path(__file__).parents[2]
STUDY_ROOTS = (ROOT / "src" / "bindscale" / "studies", ROOT / "tests" / "toy_study")


def _study_folder(path: Path) -> Path:
    """The study folder a file belongs to: the first folder below its root (studies/<name>/, toy_study/<pkg>/)."""
    for root in STUDY_ROOTS:
        if root in path.parents:
            rel = path.relative_to(root)
            return root / rel.parts[0] if len(rel.parts) > 1 else root
    raise AssertionError(path)


def _module_of(path: Path) -> list[str]:
    """Dotted package of a file (bindscale.studies.depth.sub for src/bindscale/studies/depth/sub/x.py)."""
    for root, base in ((ROOT / "src", ()), (ROOT / "tests" / "toy_study", ())):
        if root in path.parents:
            return list(base) + list(path.relative_to(root).with_suffix("").parts[:-1])
    raise AssertionError(path)


def _private_imports_from_outside(path: Path, source: str | None = None) -> list[str]:
    folder = _study_folder(path)
    folder_module = ".".join(_module_of(folder / "x.py"))
    found = []
    for node in ast.walk(ast.parse(source if source is not None else path.read_text(), str(path))):
        if not isinstance(node, ast.ImportFrom):
            continue
        if node.level:
            package = _module_of(path)
            base = package[: len(package) - (node.level - 1)] if node.level > 1 else package
            module = ".".join(base + ([node.module] if node.module else []))
        else:
            module = node.module or ""
        inside = module == folder_module or module.startswith(folder_module + ".")
        for alias in node.names:
            if alias.name.startswith("_") and not inside:
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}: from {module} import {alias.name}")
    return found


def test_no_study_imports_a_private_name_from_outside_its_folder():
    files = [p for root in STUDY_ROOTS for p in sorted(root.rglob("*.py"))]
    assert len(files) > 20
    bad = [hit for p in files for hit in _private_imports_from_outside(p)]
    assert not bad, "studies import private core names (use bindscale.kit):\n" + "\n".join(bad)


def test_the_private_import_check_sees_relative_and_nested_imports():
    probe = ROOT / "src" / "bindscale" / "studies" / "depth" / "verdicts.py"
    src = ("from ..scaling.verdicts import _x\nfrom .verdicts import _ok\nfrom bindscale.studies.depth.trial import _ok2\n"
           "def f():\n    from bindscale.report.figures import _errorbar\n")
    hits = _private_imports_from_outside(probe, src)
    assert [h.split("import ")[1] for h in hits] == ["_x", "_errorbar"]


@pytest.mark.parametrize("name", kit.__all__)
def test_every_kit_name_exists_and_is_documented(name):
    obj = getattr(kit, name)
    if inspect.isclass(obj) or callable(obj):
        assert (obj.__doc__ or "").strip(), f"kit.{name} has no docstring"
    else:  # a constant: documented in the kit's module docstring
        assert f"``{name}``" in kit.__doc__, f"kit.{name} is not described in bindscale.kit's docstring"


def test_kit_all_has_no_repeats_and_no_private_names():
    assert len(set(kit.__all__)) == len(kit.__all__)
    assert not [n for n in kit.__all__ if n.startswith("_")]
    assert set(dir(kit)) >= set(kit.__all__)


def test_importing_the_kit_for_a_plugin_stays_light():
    import subprocess
    import sys

    code = ("import sys, bindscale.kit\nfrom bindscale.kit import Claim, StudyPlugin, Verdict, TrialBase\n"
            "heavy = [m for m in ('torch', 'matplotlib', 'pandas') if m in sys.modules]\nprint(heavy)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_verdict_checks_its_outcome_and_is_no_tuple():
    v = Verdict("s", SUPPORTED, (0.5, 0.2, 0.8), 12, {"reason": "r"})
    assert (v.statistic, v.outcome, v.interval, v.details["reason"]) == ("s", "supported", (0.5, 0.2, 0.8), "r")
    assert (v.value, v.ci_low, v.ci_high, v.n_trials) == (0.5, 0.2, 0.8, 12)
    with pytest.raises(TypeError):
        _, outcome, _, _, _ = v  # the former 5-tuple: read the attributes
    with pytest.raises(ValueError, match="outcome"):
        Verdict("s", "yes", (0.5, 0.2, 0.8), 1)
    with pytest.raises(ValueError, match="interval"):
        Verdict("s", INCONCLUSIVE, (0.5, 0.2), 1)
    with pytest.raises(AttributeError):
        v.outcome = INCONCLUSIVE  # frozen


def test_a_rule_returning_a_tuple_is_a_rule_error(monkeypatch):
    import pandas as pd

    from bindscale.core import registry
    from bindscale.verdicts.engine import compute_verdicts

    from dataclasses import replace

    plugin, claim = registry.claim("scaling")
    old_style = replace(claim, rule=lambda *a: ("s", SUPPORTED, (1.0, 0.0, 2.0), 3, {}), guards=())
    monkeypatch.setattr(registry, "claim", lambda name: (plugin, old_style))
    with pytest.warns(RuntimeWarning, match="not a bindscale.kit.Verdict"):
        out = compute_verdicts(pd.DataFrame({"status": ["ok"]}), {"verdicts": {"scaling": {}}})
    assert out[0]["statistic"] == "rule_error" and out[0]["verdict"] == INCONCLUSIVE
