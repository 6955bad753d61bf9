"""``bindscale new-study``: a new study folder from the template shipped in ``bindscale/core/templates/study/``.

The template is a small but complete study wired by convention (:data:`bindscale.core.study.CONVENTION`):
config, trainer, plan, verdict rule, figure, report table, study file with a quick variant, and a test.
"""

from __future__ import annotations

import keyword
import re
from importlib import resources
from pathlib import Path

from bindscale.core.errors import ConfigError

_NAME = re.compile(r"[a-z][a-z0-9_]*")


def new_study(name: str, directory: str | Path = ".") -> tuple[Path, Path]:
    """Write the template study ``name`` into ``directory``: the package ``directory/name/`` and its test
    ``directory/test_name.py``.

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
        (test_file if out.startswith("test_") else target / out).write_text(text, encoding="utf-8")
    return target, test_file


def how_to_register(package: Path, test_file: Path) -> str:
    """What to do next with a new study folder: register it (built in, or as a plugin) and test it."""
    name = package.name
    return (f"made study {name}: {package}/ and {test_file}\n"
            "register it, either\n"
            f"  - built in: move {package}/ to src/bindscale/studies/{name}/ and {test_file.name} to tests/studies/{name}/\n"
            "    (every package there with a STUDY is registered: bindscale.core.registry); or\n"
            "  - as a plugin, in the pyproject.toml of the package that holds it, then pip install -e . :\n"
            '      [project.entry-points."bindscale.studies"]\n'
            f'      {name} = "{name}:STUDY"\n'
            f"then: bindscale list; bindscale run {name} --quick; pytest {test_file.name}")
