"""The package's wings import one way: each wing only from the wings before it, and a study only
through the doors meant for it.

Order (the design's "Wings"): ``core`` < ``models`` < ``train`` < ``store`` < ``verdicts`` < ``report`` <
``run`` < the doors (``kit``, ``api``, ``cli``, the package's ``__init__`` and ``__main__``). A study
(``bindscale.studies.<name>``, and the ``new-study`` template) imports from outside its own folder only
``bindscale.kit`` and ``bindscale.models`` (the models' named hook points are a public door of their
own). The graph is :func:`tests.unit.test_import_cycles.import_graph`'s: every import that can run,
module level and function-local alike.
"""

from __future__ import annotations

import re
from pathlib import Path

import networkx as nx
import pytest

import bindscale
from tests.unit.test_import_cycles import import_graph

SRC = Path(bindscale.__file__).parent
WINGS = ("core", "models", "train", "store", "verdicts", "report", "run")
DOORS = ("kit", "api", "cli", "__main__")
#: What a study may import from bindscale outside its own package.
STUDY_DOORS = ("bindscale.kit", "bindscale.models")


def rank(module: str, package: str = "bindscale") -> int | None:
    """The wing's place in the order (doors last); None for a study (its own rule) or a foreign module."""
    parts = module.split(".")
    if parts[0] != package:
        return None
    if len(parts) == 1:
        return len(WINGS)  # the package's face re-exports the API: a door
    top = parts[1]
    if top == "studies":
        return None
    if top in WINGS:
        return WINGS.index(top)
    if top in DOORS:
        return len(WINGS)
    raise AssertionError(f"{module}: in no wing ({', '.join(WINGS)}) and not a door ({', '.join(DOORS)})")


def back_arrows(graph: nx.DiGraph, package: str = "bindscale") -> list[str]:
    """Every import that runs from a lower wing to a higher one, or from a wing or a door into the studies
    (the registry loads studies by name; nothing of the core imports one)."""
    out = []
    for a, b in graph.edges:
        ra, rb = rank(a, package), rank(b, package)
        into_studies = b.split(".")[1:2] == ["studies"]
        if ra is not None and (into_studies or (rb is not None and rb > ra)):
            out.append(f"{a} → {b}")
    return sorted(out)


def study_escapes(graph: nx.DiGraph, package: str = "bindscale") -> list[str]:
    """Imports from a study to anything of the package outside its own folder but the study doors."""
    out = []
    for a, b in graph.edges:
        parts = a.split(".")
        if len(parts) < 3 or parts[1] != "studies":
            continue
        own = ".".join(parts[:3])
        if b == own or b.startswith(own + ".") or b == f"{package}.studies":
            continue
        doors = tuple(d.replace("bindscale", package, 1) for d in STUDY_DOORS)
        if not any(b == d or b.startswith(d + ".") for d in doors):
            out.append(f"{a} → {b}")
    return sorted(out)


def test_every_module_is_in_a_wing():
    for name in import_graph(SRC, "bindscale"):
        rank(name)


def test_no_arrow_runs_back_up():
    found = back_arrows(import_graph(SRC, "bindscale"))
    assert not found, "imports from a lower wing to a higher one:\n" + "\n".join(found)


def test_studies_import_only_through_their_doors():
    found = study_escapes(import_graph(SRC, "bindscale"))
    assert not found, "a study imports the core outside bindscale.kit / bindscale.models:\n" + "\n".join(found)


def test_template_imports_only_through_the_doors():
    """The ``new-study`` template is what a new study copies: its code imports bindscale through the
    study doors only (its test file may use the registry, as a test of the core would)."""
    bad = []
    for path in sorted((SRC / "core" / "templates" / "study").glob("*.py.tmpl")):
        if path.name.startswith("test_"):
            continue
        for line in path.read_text().splitlines():
            m = re.match(r"\s*(?:from|import)\s+(bindscale[\w.]*)", line)
            if m and not any(m.group(1) == d or m.group(1).startswith(d + ".") for d in STUDY_DOORS):
                bad.append(f"{path.name}: {line.strip()}")
    assert not bad, "\n".join(bad)


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_the_rules_find_what_they_are_for(tmp_path):
    """A synthetic package: core importing run (function-local) is a back arrow, run importing core is
    not; a study importing the store is an escape, one importing the kit, the models or its own
    modules is not; a module outside every wing is refused."""
    _write(tmp_path / "pkg", {
        "__init__.py": "", "kit.py": "from .core import a\n",
        "core/__init__.py": "", "core/a.py": "def f():\n    from ..run import r\n",
        "core/reg.py": "from .. import studies\n",
        "run/__init__.py": "", "run/r.py": "from ..core import a\n",
        "store/__init__.py": "", "store/s.py": "",
        "models/__init__.py": "", "models/m.py": "",
        "studies/__init__.py": "", "studies/toy/__init__.py": "from ...kit import a\n",
        "studies/toy/trial.py": "from ...store import s\nfrom ...models import m\nfrom . import verdicts\n",
        "studies/toy/verdicts.py": "",
    })
    graph = import_graph(tmp_path / "pkg", "pkg")
    assert back_arrows(graph, "pkg") == ["pkg.core.a → pkg.run.r", "pkg.core.reg → pkg.studies"]
    assert study_escapes(graph, "pkg") == ["pkg.studies.toy.trial → pkg.store.s"]
    with pytest.raises(AssertionError, match="in no wing"):
        rank("pkg.loose", "pkg")
