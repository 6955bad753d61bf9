"""Registry of studies: the built-in packages under ``bindscale/studies/`` and third-party
plugins registered under the entry-point group ``bindscale.studies``.

A third-party package declares, in its ``pyproject.toml``::

    [project.entry-points."bindscale.studies"]
    <study name> = "<package>.<module>:STUDY"

where ``STUDY`` satisfies :class:`bindscale.core.study.Study` (usually a
:class:`bindscale.core.study.StudyPlugin`). Discovery imports only the plugin objects
(light modules); the trainers and analyses they name are imported on use.
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import lru_cache
from importlib import metadata
from typing import Any

from bindscale.core.errors import ConfigError
from bindscale.core.study import Claim, Study

ENTRY_POINT_GROUP = "bindscale.studies"
#: The package whose sub-packages are the built-in studies. Loaded by name, as entry points are: the core
#: discovers studies and never imports one (studies sit above every wing; they import the core through the kit).
BUILTIN_PACKAGE = "bindscale.studies"


def builtin_package() -> Any:
    """The built-in studies' package (``bindscale/studies/``), imported by name."""
    return importlib.import_module(BUILTIN_PACKAGE)


@lru_cache(maxsize=1)
def _load() -> dict[str, Study]:
    builtin = builtin_package()
    found: dict[str, Study] = {}
    for info in sorted(pkgutil.iter_modules(builtin.__path__), key=lambda i: i.name):
        if info.ispkg:
            module = importlib.import_module(f"{builtin.__name__}.{info.name}")
            if hasattr(module, "STUDY"):
                _add(found, module.STUDY, f"{builtin.__name__}.{info.name}")
    for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
        try:
            plugin = ep.load()
        except Exception as err:  # noqa: BLE001 - a broken third-party plugin must not break the others
            raise ConfigError(f"study plugin {ep.name!r} ({ep.value}) cannot be loaded: "
                              f"{type(err).__name__}: {err}") from None
        _add(found, plugin, ep.value)
    implicit = [s.name for s in found.values() if s.implicit_kind]
    if len(implicit) > 1:
        raise ConfigError(f"studies {', '.join(implicit)} all claim trials without a kind; at most one may")
    claims: dict[str, str] = {}
    for s in found.values():
        for c in s.claims:
            if c.name in claims:
                raise ConfigError(f"claim {c.name!r} is defined by both study {claims[c.name]} and {s.name}")
            claims[c.name] = s.name
    return found


#: Where each study came from: a built-in package name or an entry point's value.
_origin: dict[str, str] = {}


def _add(found: dict[str, Study], plugin: Any, where: str) -> None:
    if not isinstance(plugin, Study):
        raise ConfigError(f"{where}: STUDY does not implement bindscale.core.study.Study")
    if plugin.name in found:
        raise ConfigError(f"two studies are named {plugin.name!r} ({where})")
    if any(s.kind == plugin.kind for s in found.values()):
        raise ConfigError(f"two studies use trial kind {plugin.kind!r} ({where})")
    found[plugin.name] = plugin
    _origin[plugin.name] = where


def studies() -> dict[str, Study]:
    """Every registered study, by name (built-ins first, in name order)."""
    return dict(_load())


def builtin() -> dict[str, Study]:
    """The studies shipped with bindscale (its ``bindscale/studies/`` packages), by name."""
    return {n: s for n, s in _load().items() if _origin.get(n, "").startswith(BUILTIN_PACKAGE + ".")}


def get(name: str) -> Study:
    """The study called ``name``.

    Raises:
        ConfigError: no such study.
    """
    try:
        return _load()[name]
    except KeyError:
        raise ConfigError(f"unknown study {name!r}; registered: {', '.join(_load())}") from None


def by_kind(kind: str | None) -> Study:
    """The study whose trials carry ``kind`` (``None``: the study of trials without a kind).

    Raises:
        ConfigError: no study has that kind.
    """
    for s in _load().values():
        if (kind is None and s.implicit_kind) or s.kind == kind:
            return s
    allowed = ", ".join(s.kind for s in _load().values())
    raise ConfigError(f"base.kind: unknown study kind {kind!r}; allowed: {allowed}")


def kind_of(trial: Any) -> str | None:
    """``kind`` of a trial dict or config (``None`` when it has none)."""
    if isinstance(trial, dict):
        return trial.get("kind")
    return getattr(trial, "kind", None)


def for_trial(trial: Any) -> Study:
    """The study a trial (dict or config) belongs to."""
    return by_kind(kind_of(trial))


def claim(name: str) -> tuple[Study, Claim]:
    """The study defining claim ``name``, and the claim.

    Raises:
        KeyError: no study defines it.
    """
    for s in _load().values():
        for c in s.claims:
            if c.name == name:
                return s, c
    raise KeyError(name)


def for_study(study: dict) -> Study:
    """The study of a study config dict: its ``base.kind``, else the study of its first known
    claim, else the study of trials without a kind."""
    base = study.get("base")
    if isinstance(base, dict) and base.get("kind") is not None:
        return by_kind(base["kind"])
    for name in study.get("verdicts") or {}:
        try:
            return claim(name)[0]
        except KeyError:
            continue
    return by_kind(None)


def headline() -> Study:
    """The study ``bindscale run`` runs without a name: the one marked ``headline``, else the first."""
    found = _load()
    return next((s for s in found.values() if getattr(s, "headline", False)), next(iter(found.values())))


def run_order() -> list[str]:
    """The built-in studies in the order ``run all`` runs and the answer page lists them: headline first."""
    return sorted(builtin(), key=lambda n: (n != headline().name, n))


def builtin_files() -> dict[str, Any]:
    """Every study YAML shipped by a registered study: file stem → path."""
    out: dict[str, Any] = {}
    for s in _load().values():
        out.update(s.study_files())
    return out
