"""``bindscale new-study``: a new study folder from the template shipped in ``bindscale/core/templates/study/``.

The template is a small but complete study wired by convention (:data:`bindscale.core.study.CONVENTION`):
config, trainer, plan, verdict rule, figure, report table, study file with a quick variant, and a test.
Its claim carries what the core asks of every built-in claim (a source headline :class:`~bindscale.core.study.Anchor`
and a competence :class:`~bindscale.core.study.Gate`), as placeholders marked ``TEMPLATE`` for the user to
replace with their source's, so that a study added from it keeps the test suite green on either route:
built in (moved into ``bindscale/studies/``) or a plugin (the ``pyproject.toml`` written beside it declares
the entry point).
"""

from __future__ import annotations

import keyword
import os
import re
import shlex
from importlib import resources
from pathlib import Path

from bindscale.core.errors import ConfigError

_NAME = re.compile(r"[a-z][a-z0-9_]*")


#: Names a study may not take: ``bindscale run all`` runs every built-in study.
RESERVED = frozenset({"all"})


def new_study(name: str, directory: str | Path = ".") -> tuple[Path, Path]:
    """Write the template study ``name`` into ``directory``: the package ``directory/name/``, its test
    ``directory/test_name.py`` and, where ``directory`` has none, a ``pyproject.toml`` that makes the folder an
    installable plugin package (its entry point registers the study; :func:`how_to_register`).

    Output: (package folder, test file).

    Raises:
        ConfigError: ``name`` is not a lowercase Python identifier, names a registered study, or
            ``directory/name`` exists.
    """
    from bindscale.core import registry

    if not _NAME.fullmatch(name) or keyword.iskeyword(name):
        raise ConfigError(f"new-study: {name!r} is not a lowercase Python identifier (letters, digits, _)")
    if name in registry.studies():
        raise ConfigError(f"new-study: a study named {name!r} is already registered")
    if name in RESERVED or name in registry.builtin_files():
        raise ConfigError(f"new-study: {name!r} is a word bindscale run already gives a meaning "
                          f"({'every built-in study' if name == 'all' else 'a shipped study file'}); choose another name")
    import importlib.util

    if importlib.util.find_spec(name) is not None:
        raise ConfigError(f"new-study: {name!r} is the name of an installed Python package; a study package of that "
                          "name would shadow it (or be shadowed): choose another name")
    if Path(directory).exists() and not Path(directory).is_dir():
        raise ConfigError(f"new-study: --dir {directory} is a file, not a folder")
    target = Path(directory) / name
    if target.exists():
        raise ConfigError(f"new-study: {target} already exists")
    test_file = Path(directory) / f"test_{name}.py"
    target.mkdir(parents=True)
    for src in sorted(resources.files("bindscale.core").joinpath("templates", "study").iterdir(), key=lambda p: p.name):
        if not src.name.endswith(".tmpl"):
            continue
        text = src.read_text(encoding="utf-8").replace("{{name}}", name)
        out = src.name.removesuffix(".tmpl").replace("NAME", name)
        if out == "pyproject.toml":  # the plugin route's package metadata, beside the study (never over one)
            if not (Path(directory) / out).exists():
                (Path(directory) / out).write_text(text, encoding="utf-8")
            continue
        (test_file if out.startswith("test_") else target / out).write_text(text, encoding="utf-8")
    return target, test_file


def _builtin_folders() -> tuple[Path, Path | None]:
    """Where built-in studies live (``bindscale/studies/``) and, in a source checkout, their tests
    (``tests/studies/``; None when this bindscale is not a source checkout)."""
    from bindscale.core.registry import builtin_package

    package = Path(next(iter(builtin_package().__path__))).resolve()
    tests = package.parents[2] / "tests" / "studies"
    return package, (tests if package.parents[1].name == "src" and tests.is_dir() else None)


def _here(path: Path) -> str:
    """``path`` for a shell in the current directory: relative when below it, quoted when it must be."""
    path = Path(os.path.abspath(path))
    try:
        shown = str(path.relative_to(Path.cwd()))
    except ValueError:
        shown = str(path)
    return shlex.quote(shown)


def how_to_register(package: Path, test_file: Path) -> str:
    """What to do next with a new study folder, as commands to run from the current directory: register
    it (built in, or as a plugin) and test it, then replace the template's placeholders."""
    name = package.name
    home = package.parent
    studies, tests = _builtin_folders()
    lines = [f"made study {name}: {_here(package)}/ and {_here(test_file)}", "register it, either"]
    if tests is not None:
        lines += ["  - built in (every package in bindscale/studies/ with a STUDY is registered):",
                  f"      mv {_here(package)} {_here(studies / name)}",
                  f"      mkdir -p {_here(tests / name)} && mv {_here(test_file)} {_here(tests / name)}/",
                  f"    then: bindscale list; bindscale run {name} --quick; pytest {_here(tests / name / test_file.name)}",
                  f"    and give it the built-in studies' reference numbers (the suite checks every built-in study's "
                  f"quick run against them): bindscale run {name} --quick --out runs/{name}-quick && "
                  f"python -m tests.integration.reference runs/{name}-quick",
                  "    or"]
    else:
        lines += [f"  - built in: only in a source checkout of bindscale (this one is installed in {studies}); or"]
    project = home / "pyproject.toml"
    declared = project.exists() and f'{name} = "{name}:STUDY"' in project.read_text(encoding="utf-8")
    lines += [f"  - as a plugin, through its entry point in {_here(project)} "
              + ("(there already):" if declared else "(add it there, beside your package's own metadata):"),
              '      [project.entry-points."bindscale.studies"]', f'      {name} = "{name}:STUDY"',
              f"      pip install -e {_here(home)}",
              f"    then: bindscale list; bindscale run {name} --quick; pytest {_here(test_file)}",
              f"then replace the placeholders marked TEMPLATE in the study's __init__.py (the claim's source, its anchor: "
              f"the source's headline result, and its gate's level) and {name}.yaml, and the toy task with your own."]
    return "\n".join(lines)
