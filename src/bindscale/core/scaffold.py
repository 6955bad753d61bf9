"""``bindscale new-study``: a new study folder from the template shipped in ``bindscale/core/templates/study/``.

The template is a small but complete study wired by convention (:data:`bindscale.core.study.CONVENTION`):
config, trainer, plan, verdict rule, figure, report table, study file with a quick variant, and a test.
Its claim carries what the core asks of every built-in claim (a source headline :class:`~bindscale.core.study.Anchor`
and a competence :class:`~bindscale.core.study.Gate`), as placeholders marked ``TEMPLATE`` for the user to
replace with their source's, so that a study added from it keeps the test suite green on either route:
built in (moved into ``bindscale/studies/``) or a plugin (the ``pyproject.toml`` written beside it declares
the entry point). Several studies may share one ``--dir``: each later one adds its package, package data and
entry point to the ``pyproject.toml`` the first wrote (:func:`add_to_plugin_metadata`).
"""

from __future__ import annotations

import copy
import json
import keyword
import os
import re
import shlex
import tomllib
from importlib import resources
from pathlib import Path

from bindscale.core.errors import ConfigError

_NAME = re.compile(r"[a-z][a-z0-9_]*")


#: Names a study may not take: ``bindscale run all`` runs every built-in study.
RESERVED = frozenset({"all"})

#: The words on the first line of every ``pyproject.toml`` that ``new-study`` wrote; only such a file is
#: extended with a later study (a project's own ``pyproject.toml`` is never edited).
WRITTEN_BY = "written by `bindscale new-study`"


def new_study(name: str, directory: str | Path = ".") -> tuple[Path, Path]:
    """Write the template study ``name`` into ``directory``: the package ``directory/name/``, its test
    ``directory/test_name.py`` and the ``pyproject.toml`` that makes the folder an installable plugin package
    (its entry points register the studies; :func:`how_to_register`): written where ``directory`` has none;
    where ``new-study`` wrote one for an earlier study, extended with this one (:func:`add_to_plugin_metadata`),
    so every study of the folder stays declared; a project's own ``pyproject.toml`` is left as it is.

    Output: (package folder, test file).

    Raises:
        ConfigError: ``name`` is not a lowercase Python identifier, names a registered study, or
            ``directory/name`` or ``directory/test_name.py`` exists (a study of that name is already there), or
            the ``pyproject.toml`` new-study wrote there can no longer be extended safely. Nothing is written then.
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
    test_file = Path(directory) / f"test_{name}.py"
    for taken in (target, test_file):
        if taken.exists():
            raise ConfigError(f"new-study: {taken} already exists: {directory} already has a study named {name!r}; "
                              "choose another name (or remove that study first)")
    templates = sorted(resources.files("bindscale.core").joinpath("templates", "study").iterdir(),
                       key=lambda p: p.name)
    project = Path(directory) / "pyproject.toml"
    # The plugin route's package metadata, beside the study: decided before anything is written, so that a
    # metadata file that cannot take this study leaves the folder as it was.
    metadata = next(src.read_text(encoding="utf-8").replace("{{name}}", name) for src in templates
                    if src.name == "pyproject.toml.tmpl")
    if project.exists():
        metadata = add_to_plugin_metadata(project, name, header=metadata.splitlines()[0])
    try:
        target.mkdir(parents=True)
    except OSError as err:  # a parent that is a file, a read-only or system folder
        raise ConfigError(f"new-study: cannot create {target}: {err.strerror or err} (choose a --dir you can "
                          "write to)") from None
    for src in templates:
        out = src.name.removesuffix(".tmpl").replace("NAME", name)
        if not src.name.endswith(".tmpl") or out == "pyproject.toml":
            continue
        text = src.read_text(encoding="utf-8").replace("{{name}}", name)
        (test_file if out.startswith("test_") else target / out).write_text(text, encoding="utf-8")
    if metadata is not None:
        project.write_text(metadata, encoding="utf-8")
    return target, test_file


def _table(lines: list[str], header: str) -> tuple[int, int] | None:
    """Where the TOML table ``header`` (its ``[...]`` line) lies in ``lines``: (index of the header, index just
    past its last key line, trailing blank and comment lines excluded); None when there is no such table."""
    start = next((i for i, line in enumerate(lines) if line.strip() == header), None)
    if start is None:
        return None
    end = next((i for i in range(start + 1, len(lines)) if lines[i].lstrip().startswith("[")), len(lines))
    while end > start + 1 and (not lines[end - 1].strip() or lines[end - 1].lstrip().startswith("#")):
        end -= 1
    return start, end


def _add_key(lines: list[str], header: str, key_line: str) -> None:
    """Append ``key_line`` to the TOML table ``header`` in ``lines`` (the table is added at the end if absent)."""
    table = _table(lines, header)
    if table is None:
        lines += ["", header, key_line]
    else:
        lines.insert(table[1], key_line)


def _set_packages(lines: list[str], packages: list[str]) -> bool:
    """Rewrite the ``packages = [...]`` array of ``[tool.setuptools]`` in ``lines`` as ``packages`` (one line);
    False when that table has no such array."""
    table = _table(lines, "[tool.setuptools]")
    if table is None:
        return False
    start, end = table
    first = next((i for i in range(start + 1, end) if re.match(r"\s*packages\s*=\s*\[", lines[i])), None)
    if first is None:
        return False
    last = first  # an array written over several lines ends at the line that closes it
    while "]" not in lines[last].split("#", 1)[0] and last + 1 < end:
        last += 1
    lines[first:last + 1] = [f"packages = {json.dumps(packages)}"]
    return True


def add_to_plugin_metadata(project: Path, name: str, header: str) -> str | None:
    """The text of ``project`` (a ``pyproject.toml``) with the study ``name`` added beside the studies already
    declared there: its package in ``[tool.setuptools] packages``, its study file in the package data and its
    entry point ``name = "name:STUDY"`` in ``[project.entry-points."bindscale.studies"]``; what is declared already
    is kept as it is (never repeated), and the file's first line becomes ``header`` (the template's, naming no
    single study). None when ``project`` was not written by ``new-study`` (:data:`WRITTEN_BY`): a project's own
    metadata is the user's to edit (:func:`how_to_register` prints the lines).

    Raises:
        ConfigError: the file no longer reads as TOML, or the edit would not give exactly the old metadata plus
            this study's (its layout changed beyond what this edit can follow).
    """
    from bindscale.core.registry import ENTRY_POINT_GROUP

    text = project.read_text(encoding="utf-8")
    lines = text.splitlines()
    if not lines or WRITTEN_BY not in lines[0]:
        return None
    by_hand = (f"add {name} there by hand: {name!r} to [tool.setuptools] packages, {name} = [\"*.yaml\"] to "
               f"[tool.setuptools.package-data] and {name} = \"{name}:STUDY\" to "
               f"[project.entry-points.\"{ENTRY_POINT_GROUP}\"]")
    try:
        old = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise ConfigError(f"new-study: {project} is not valid TOML ({err}); fix it, or {by_hand}") from None
    setuptools = old.get("tool", {}).get("setuptools", {})
    packages = setuptools.get("packages", [])
    package_data = setuptools.get("package-data", {})
    entry_points = old.get("project", {}).get("entry-points", {}).get(ENTRY_POINT_GROUP, {})
    if not (isinstance(packages, list) and isinstance(package_data, dict) and isinstance(entry_points, dict)):
        raise ConfigError(f"new-study: {project} declares its packages in a way new-study does not extend; {by_hand}")
    lines[0] = header
    if name not in packages and not _set_packages(lines, [*packages, name]):
        raise ConfigError(f"new-study: {project} has no [tool.setuptools] packages list to extend; {by_hand}")
    if name not in package_data:
        _add_key(lines, "[tool.setuptools.package-data]", f'{name} = ["*.yaml"]')
    if name not in entry_points:
        _add_key(lines, f'[project.entry-points."{ENTRY_POINT_GROUP}"]', f'{name} = "{name}:STUDY"')
    new_text = "\n".join(lines) + "\n"
    expected = copy.deepcopy(old)
    tool = expected.setdefault("tool", {}).setdefault("setuptools", {})
    tool["packages"] = packages if name in packages else [*packages, name]
    tool.setdefault("package-data", {}).setdefault(name, ["*.yaml"])
    (expected.setdefault("project", {}).setdefault("entry-points", {}).setdefault(ENTRY_POINT_GROUP, {})
     .setdefault(name, f"{name}:STUDY"))
    try:
        ok = tomllib.loads(new_text) == expected
    except tomllib.TOMLDecodeError:
        ok = False
    if not ok:
        raise ConfigError(f"new-study: {project}'s layout changed beyond what new-study can extend safely; {by_hand}")
    return new_text


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
