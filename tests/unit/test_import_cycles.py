"""No import cycles among bindscale's modules (with a cycle, the order of the first imports decides which names exist).

The graph is parsed with :mod:`ast` (nothing is imported) from every import statement that can run:
at module level and inside functions alike. Module-level imports alone would miss the cycles this
rule is for: the orchestration layer's cycle (runner → answer → runner, plan ↔ sweep, ...) was held
apart by function-local imports, and a module-level graph had no cycle at all. A function-local
import is still fine where it defers a heavy module (torch, pandas, the report) to keep
``import bindscale`` and the CLI's refusals fast, as long as it points down the layers.
Imports under ``if TYPE_CHECKING:`` are left out: they never execute, so they cannot form a cycle
at run time, and annotations may name a module above.
"""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx
import pytest

import bindscale

SRC = Path(bindscale.__file__).parent

def _module_names(root: Path, package: str) -> dict[str, Path]:
    """Every module under ``root`` by dotted name; a package's ``__init__`` is the package itself."""
    names = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        names[".".join([package, *parts])] = path
    return names


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(tree: ast.Module):
    """Every import statement of the module that can run: its body, blocks, functions and classes,
    but not ``if TYPE_CHECKING:`` blocks."""
    stack = list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        elif isinstance(node, ast.If) and _is_type_checking(node.test):
            stack += node.orelse
        else:
            stack += [child for child in ast.iter_child_nodes(node) if isinstance(child, ast.stmt)]
            stack += [h for h in getattr(node, "handlers", ())]  # except blocks (not statements)
            stack += [c for c in getattr(node, "cases", ())]  # match cases


def import_graph(root: Path, package: str) -> nx.DiGraph:
    """Module → module edges of the package's imports (imports of other packages are left out)."""
    modules = _module_names(root, package)
    graph = nx.DiGraph()
    graph.add_nodes_from(modules)
    for name, path in modules.items():
        is_pkg = path.name == "__init__.py"
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in _imports(tree):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                if node.level:  # relative: from the module's package, up level - 1 packages
                    base = name.split(".") if is_pkg else name.split(".")[:-1]
                    base = base[:len(base) - (node.level - 1)]
                    stem = ".".join(base + ([node.module] if node.module else []))
                else:
                    stem = node.module
                # ``from X import y`` imports the module X.y where there is one, else a name of X.
                targets = [f"{stem}.{a.name}" if f"{stem}.{a.name}" in modules else stem for a in node.names]
            for target in targets:
                # ``import a.b.c`` runs a, a.b and a.b.c; the edge goes to the deepest module of ours.
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target and target != name:
                    graph.add_edge(name, target)
    return graph


def cycles(graph: nx.DiGraph) -> list[set[str]]:
    """The strongly connected components with more than one module: each holds at least one cycle."""
    return sorted((c for c in nx.strongly_connected_components(graph) if len(c) > 1), key=sorted)


def _describe(graph: nx.DiGraph, component: set[str]) -> str:
    sub = graph.subgraph(component)
    shown = [" → ".join([*c, c[0]]) for c in sorted(nx.simple_cycles(sub), key=len)[:5]]
    return f"{sorted(component)}: e.g. " + "; ".join(shown)


def assert_no_cycles(graph: nx.DiGraph, allowed: set[frozenset[str]] = frozenset()) -> None:
    """Fail listing every cycle (strongly connected component) not exactly one of ``allowed``: a known
    cycle that grows to take in another module fails too."""
    found = [c for c in cycles(graph) if frozenset(c) not in allowed]
    assert not found, "import cycles:\n" + "\n".join(_describe(graph, c) for c in found)


def test_no_import_cycles():
    """Any cycle fails, with the modules and some of its cycles."""
    assert_no_cycles(import_graph(SRC, "bindscale"), set())


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_the_rule_finds_a_cycle(tmp_path):
    """A synthetic package: a → sub.b → a (relative imports, a package's __init__) is reported, and
    so is c ↔ d through a function-local import; an import under TYPE_CHECKING is not an edge."""
    _write(tmp_path / "pkg", {
        "__init__.py": "",
        "a.py": "from .sub import b\n",
        "sub/__init__.py": "from .b import thing\n",
        "sub/b.py": "from ..a import x\nthing = 1\n",
        "c.py": "def f():\n    try:\n        from . import d\n    except ImportError:\n        pass\n",
        "d.py": "from . import c\n",
        "e.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from . import f\n",
        "f.py": "import pkg.e\n",
    })
    graph = import_graph(tmp_path / "pkg", "pkg")
    assert cycles(graph) == [{"pkg.a", "pkg.sub.b"}, {"pkg.c", "pkg.d"}]
    assert graph.has_edge("pkg.sub", "pkg.sub.b") and graph.has_edge("pkg.f", "pkg.e")
    assert not graph.has_edge("pkg.e", "pkg.f")
    with pytest.raises(AssertionError, match=r"import cycles:\n.*pkg\.a.*pkg\.sub\.b.*\n.*pkg\.c"):
        assert_no_cycles(graph)
    with pytest.raises(AssertionError, match="pkg.c"):  # an allowance covers its own cycle only
        assert_no_cycles(graph, {frozenset({"pkg.a", "pkg.sub.b"})})
