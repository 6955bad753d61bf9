"""Study files: a study YAML (built-in name or path) with ``--quick`` and ``--set`` into a validated
:class:`bindscale.core.config.StudyConfig`.

:func:`resolve_study` is the one entry point (CLI, API, runner); :func:`parse_override` and
:func:`apply_override` are the ``--set key=value`` parser. Numbers read the same here and in a study
file (``1e-3`` is a number, ``steps=1e3`` an integer). Every refusal is a :class:`ConfigError` of one line.
"""

from __future__ import annotations


import copy
import re
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from bindscale.core.errors import ConfigError


from bindscale.core.config import (
    StudyConfig,
    TrialBase,
    _trial_paths,
    data_location_paths,
    set_path,
    axis_path,
    format_validation_error,
    trial_class,
)


def builtin_studies() -> dict[str, Path]:
    """Study name → YAML path, for every study file a registered study ships (its package's ``*.yaml``)."""
    from bindscale.core import registry

    return registry.builtin_files()


def load_study_dict(ref: str) -> tuple[dict, str]:
    """Raw study dict from a built-in name or a YAML path; returns (dict, source).

    Raises:
        ConfigError: unknown study, unreadable file or malformed YAML.
    """
    studies = builtin_studies()
    if not str(ref).strip():  # before Path(), which reads "" as the current directory
        raise ConfigError(f"the study name is empty; give a study by name ({_study_names_text()}) or a path to a "
                          "study YAML file")
    path = studies.get(ref)
    if path is None:
        p = Path(ref)
        if p.suffix in (".yaml", ".yml") or p.exists():
            if p.is_dir():
                raise ConfigError(f"study {ref!r} is a directory; give a study YAML file or a built-in name")
            if not p.is_file():
                raise ConfigError(f"study file {ref!r} does not exist")
            path = p
        else:
            raise ConfigError(unknown_study(ref))
    try:
        data = yaml.load(path.read_text(), Loader=StudyLoader)  # noqa: S506 (a SafeLoader)
    except DuplicateKeyError as err:
        raise ConfigError(f"{path}: {err.problem} at line {err.problem_mark.line + 1}"
                          f" (first at line {err.first_line}); give each key once") from None
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        at = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise ConfigError(f"malformed YAML in {path}{at}: {getattr(err, 'problem', err)}") from None
    except OSError as err:
        raise ConfigError(f"cannot read study file {path}: {err.strerror}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"study file {path} is not UTF-8 text") from None
    if not isinstance(data, dict):
        raise ConfigError(f"study file {path} must be a YAML mapping with at least a 'name' field")
    return _numbers(data), str(path)


def _study_names() -> tuple[list[str], list[str]]:
    """The names ``bindscale run`` takes, each list sorted: the studies, and their variants (the other
    study files a study ships)."""
    from bindscale.core import registry

    registered = set(registry.studies())
    names = builtin_studies()
    return sorted(n for n in names if n in registered), sorted(n for n in names if n not in registered)


def _study_names_text() -> str:
    studies, variants = _study_names()
    return f"studies: {', '.join(studies)}" + (f"; variants: {', '.join(variants)}" if variants else "")


def unknown_study(ref: str, paths: bool = True) -> str:
    """The one-line error for a study name that names nothing, with the close match when there is one;
    ``paths``: the caller also takes a path to a study file, and the message says so."""
    import difflib

    studies, variants = _study_names()
    close = difflib.get_close_matches(ref, studies + variants, n=1)
    hint = f" (did you mean {close[0]}?)" if close else ""
    return f"unknown study {ref!r}{hint}; {_study_names_text()}" + (" (or a path to a .yaml file)" if paths else "")


class DuplicateKeyError(yaml.constructor.ConstructorError):
    """A mapping of a study file gives the same key twice (PyYAML would keep the last one silently)."""

    def __init__(self, key: Any, mark: Any, first: Any):
        super().__init__(None, None, f"duplicate key {key!r}", mark)
        self.first_line = first.line + 1


class StudyLoader(yaml.SafeLoader):
    """``yaml.safe_load`` that refuses a key given twice in one mapping."""

    def construct_mapping(self, node: Any, deep: bool = False) -> dict:
        if isinstance(node, yaml.MappingNode):
            seen: dict[Any, Any] = {}
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":  # `<<: *anchor` may be overridden: that is its use
                    continue
                key = self.construct_object(key_node, deep=True)
                try:
                    first = seen.setdefault(key, key_node.start_mark)
                except TypeError:  # an unhashable key: construct_mapping reports it
                    continue
                if first is not key_node.start_mark:
                    raise DuplicateKeyError(key, key_node.start_mark, first)
        return super().construct_mapping(node, deep)


def deep_merge(a: dict, b: dict) -> dict:
    """``b`` merged into a copy of ``a``; mappings merge, everything else (lists too) replaces."""
    out = copy.deepcopy(a)
    for k, v in b.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = deep_merge(out[k], v)
        else:
            out[k] = copy.deepcopy(v)
    return out


def parse_override(item: str) -> tuple[str, Any]:
    """``"key=value"`` → (key, YAML-parsed value).

    Raises:
        ConfigError: no ``=``, or a value that is not valid YAML.
    """
    if "=" not in item:
        raise ConfigError(f"--set {item!r}: expected key=value, e.g. train.steps=500 or width=[16,64]")
    key, raw = item.split("=", 1)
    try:
        value = yaml.load(raw, Loader=StudyLoader)  # noqa: S506 (a SafeLoader)
    except DuplicateKeyError as err:
        raise ConfigError(f"--set {item!r}: {err.problem}; give each key once") from None
    except yaml.YAMLError:
        raise ConfigError(f"--set {item!r}: value is not valid YAML") from None
    return key.strip(), _numbers(value)


_DECIMAL = re.compile(r"[-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?")
_EXPONENT_INT = re.compile(r"([-+]?[0-9]+)[eE]\+?([0-9]+)")  # 1e3, 2E+4: no dot, exponent >= 0


def _numbers(value: Any) -> Any:
    """Numbers YAML 1.1 reads as text, as numbers: a researcher writing ``3e-4`` or ``1e3`` means the number.

    YAML 1.1 reads an exponent only after a dot and with a sign (``1.0e-3``), so ``3e-4``,
    ``1e3`` and ``1.5e3`` arrive as strings. They become floats, except an integral number
    written in exponent form without a dot (``1e3``, ``2E+4``), which becomes an int so that
    int fields take it (``steps: 1e3``); ``1000.0`` stays a float. Applies to the values of
    mappings and lists, recursively (not to keys).
    """
    if isinstance(value, dict):
        return {k: _numbers(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_numbers(v) for v in value]
    if isinstance(value, str) and any(c in value for c in "eE.") and _DECIMAL.fullmatch(value):
        if (m := _EXPONENT_INT.fullmatch(value)) and int(m[2]) <= 18:  # (beyond int64 it stays a float)
            return int(m[1]) * 10 ** int(m[2])
        return float(value)
    return value


def apply_override(study: dict, key: str, value: Any) -> dict:
    """Apply one ``--set``. A trial field or axis name sets the base and pins that axis in
    every grid (a list value becomes the axis values); other keys set study fields.

    Raises:
        ConfigError: unknown key.
    """
    study = copy.deepcopy(study)
    top = set(StudyConfig.model_fields) - {"base", "grids"}
    if key.split(".")[0] == "is_quick":  # set by --quick only: a run must not pass for what it is not
        raise ConfigError(f"--set {key}: is_quick is set by --quick, not by --set")
    if key.split(".")[0] in top:
        if key.split(".")[0] == "quick":
            _check_quick_key(key, value, study)
        set_path(study, key, value)
        return study
    tcls = trial_class(study.get("base") or {})
    name = key[len("base."):] if key.startswith("base.") else key
    try:
        path = axis_path(name, tcls)
    except ConfigError:
        raise ConfigError(_unknown_override(key, name, tcls, top - {"is_quick"})) from None
    values = value if isinstance(value, list) else [value]
    aliases = {a for a, p in tcls.AXES.items() if p == path} | {path}
    grids = study.get("grids") or [{}]
    new_grids = []
    for grid in grids:
        grid = {k: v for k, v in grid.items() if k not in aliases}
        if isinstance(value, list):
            grid[path] = values
        new_grids.append(grid)
    study["grids"] = new_grids
    if not isinstance(value, list):
        base = study.setdefault("base", {})
        set_path(base, path, value)
    return study


def _check_quick_key(key: str, value: Any, study: dict) -> None:
    """Refuse a ``--set quick.…`` that the quick section cannot hold: it is a partial study, so its trial
    fields sit under ``quick.base`` (``quick.train.steps`` would reach the study's top level on ``--quick``,
    and be kept unread without it).

    Raises:
        ConfigError: one line, with the key meant where the rest names a trial field or axis.
    """
    parts = key.split(".")
    fields = sorted(set(StudyConfig.model_fields) - {"quick", "is_quick"})
    if len(parts) == 1 or parts[1] in fields:
        return
    rest, tcls = ".".join(parts[1:]), trial_class(study.get("base") or {})
    try:
        path = axis_path(rest, tcls)
    except ConfigError:
        raise ConfigError(f"--set {key}: the quick section has no field {parts[1]!r}; it takes study fields "
                          f"({', '.join(f'quick.{f}' for f in fields)}), trial fields under quick.base "
                          "(e.g. quick.base.train.steps)") from None
    if isinstance(value, list):  # a sweep: quick.base holds one value, quick.grids the axes
        raise ConfigError(f"--set {key}: the quick section keeps its sweeps under quick.grids; did you mean "
                          f"--quick --set {rest}=…?")
    raise ConfigError(f"--set {key}: the quick section keeps trial fields under quick.base; did you mean "
                      f"quick.base.{path}?")


def _unknown_override(key: str, name: str, tcls: type[TrialBase], study_fields: set[str]) -> str:
    """The one-line error for a ``--set`` key that names nothing: the fields of its section when
    the section exists (``train.fo`` → train's fields), else every kind of key allowed."""
    section = name.split(".")[0]
    fields = sorted(p for p in _trial_paths(tcls) if p.startswith(section + "."))
    if fields and name == section:  # `train=5`: a section, not one of its fields
        return f"--set {key}: {section} is a section; set one of its fields: {', '.join(fields)}"
    if fields:
        return f"--set {key}: {section} has no field {name[len(section) + 1:]!r}; allowed: {', '.join(fields)}"
    if not key.strip():
        return (f"--set: a key is missing before '='; allowed: a sweep axis ({', '.join(tcls.AXES)}), "
                f"a dotted trial field such as train.lr, or a study field ({', '.join(sorted(study_fields))})")
    return (f"--set {key}: unknown key; allowed: a sweep axis ({', '.join(tcls.AXES)}), "
            f"a dotted trial field such as train.lr, or a study field ({', '.join(sorted(study_fields))})")


def resolve_study(ref: str, quick: bool = False, overrides: list[str] | None = None) -> StudyConfig:
    """Load, merge ``quick``, apply ``--set`` overrides and validate a study.

    Raises:
        ConfigError: on any problem, with a one-line message.
    """
    data, source = load_study_dict(ref)
    parsed = [parse_override(item) for item in overrides or []]
    _check_repeated(parsed, overrides or [], data)

    def merged(apply: bool) -> dict:
        d = data
        # --set quick.… edits the quick variant itself, so it applies before the merge.
        for key, value in parsed if apply else []:
            if key.split(".")[0] == "quick":
                d = apply_override(d, key, value)
        if quick:
            q = d.get("quick")
            if q is not None and not isinstance(q, dict):
                raise ConfigError(f"{source}: 'quick' must be a mapping")
            d = deep_merge(d, q or {}) | {"is_quick": True}
        for key, value in parsed if apply else []:
            if key.split(".")[0] != "quick":
                d = apply_override(d, key, value)
        return d

    data_set = merged(True)
    try:
        study = _validate_study(data_set)
    except (ValidationError, ConfigError) as err:
        # Blame the --set values when the study is valid without them; the quick section when the file is
        # valid without --quick; else the study file.
        where = source
        if quick and _trials_ok(data) and not _quick_section_ok(data):
            where = f"{source}: the quick section (used by --quick)"
        elif parsed:
            try:
                _validate_study(merged(False))
                where = "--set " + " ".join(overrides or [])
            except (ValidationError, ConfigError):
                pass
        raise ConfigError(format_validation_error(err, where) if isinstance(err, ValidationError)
                          else f"{where}: {err}") from None
    try:
        trials = study.trials()
    except ConfigError as err:  # a grid value out of range: in the file, or made so by --set
        where = "--set " + " ".join(overrides or []) if parsed and _trials_ok(merged(False)) else source
        raise ConfigError(f"{where}: {err}") from None
    if not trials:
        raise ConfigError(f"{source}: the study has no trials")
    _check_overrides_kept(parsed, trials, source)
    if not quick:
        _check_quick_section(data, source)
    return study


def _quick_section_ok(data: dict) -> bool:
    try:
        _check_quick_section(data, "")
        return True
    except ConfigError:
        return False


def _check_quick_section(data: dict, source: str) -> None:
    """Validate a study file's ``quick`` section on a full run too: a broken smoke test should be found by
    whoever edits the file, not by the next user of ``--quick``. The file as written (no ``--set``)."""
    q = data.get("quick")
    if q is None:
        return
    where = f"{source}: the quick section (used by --quick)"
    if not isinstance(q, dict):
        raise ConfigError(f"{where} must be a mapping")
    d = deep_merge(data, q) | {"is_quick": True}
    try:
        if not _validate_study(d).trials():
            raise ConfigError("it has no trials")
    except ValidationError as err:
        raise ConfigError(format_validation_error(err, where)) from None
    except (ConfigError, ValueError) as err:
        raise ConfigError(f"{where}: {err}") from None


def _check_repeated(parsed: list[tuple[str, Any]], items: list[str], data: dict) -> None:
    """Refuse two ``--set`` of one field (``train.steps`` twice, or as ``steps`` and ``train.steps``): the
    last would win silently.

    Raises:
        ConfigError: one line naming the key.
    """
    top = set(StudyConfig.model_fields) - {"base", "grids"}
    try:
        tcls = trial_class(data.get("base") or {})
    except ConfigError:  # an unknown kind: the study's validation says so
        tcls = None
    seen: dict[str, tuple[str, str]] = {}
    for (key, _), item in zip(parsed, items):
        field = key
        if tcls is not None and key.split(".")[0] not in top:
            try:
                field = axis_path(key[len("base."):] if key.startswith("base.") else key, tcls)
            except ConfigError:  # an unknown key: apply_override says so
                pass
        if field in seen:
            first_key, first_item = seen[field]
            same = f"--set {key} is given twice" if first_key == key else \
                f"--set {first_key} and --set {key} both set {field}"
            raise ConfigError(f"{same} ({first_item.strip()}, then {item.strip()}); give each key once")
        seen[field] = (key, item)


def study_notes(study: StudyConfig) -> list[str]:
    """Lines to print before a valid study runs, for settings that probably do not do what was meant:
    a warm-up longer than half the steps, which the sequence trainers cut to half the steps so that the
    learning rate still decays (:func:`bindscale.train.loop.train_from_config`)."""
    trials = [t for t in study.trials() if t.trains()]
    cut = [(t.train.warmup_steps, t.train.steps) for t in trials
           if getattr(getattr(t, "train", None), "warmup_steps", None) is not None
           and t.train.warmup_steps > t.train.steps // 2]
    if not cut:
        return []
    (warmup, steps), which = cut[0], f"{len(cut)} of {len(trials)} trained trials"
    if len(set(cut)) > 1:
        which += ", e.g."
    how = "exceeds" if warmup > steps else "is more than half of"
    return [f"train.warmup_steps={warmup} {how} train.steps={steps} ({which}): the trainer cuts the warm-up "
            f"to half the steps ({steps // 2}) so that the learning rate still decays"]


def _check_overrides_kept(parsed: list[tuple[str, Any]], trials: list[TrialBase], source: str) -> None:
    """Refuse a ``--set`` of a trial field that no trial keeps: a trial class may drop the fields of another
    kind (e.g. a study's real-model fields on its trained transformers), and a value silently dropped
    would run a study other than the one asked for.

    Raises:
        ConfigError: one line, with the trial class's :attr:`TrialBase.OVERRIDE_HINTS` entry where it has one.
    """
    top = set(StudyConfig.model_fields) - {"base", "grids"}
    tcls = type(trials[0])
    dumps = [t.model_dump() for t in trials]
    for key, _ in parsed:
        if key.split(".")[0] in top:
            continue
        path = axis_path(key[len("base."):] if key.startswith("base.") else key, tcls)
        if not any(_has_path(d, path) for d in dumps):
            hint = tcls.OVERRIDE_HINTS.get(path)
            raise ConfigError(f"--set {key}: no trial of {source} has the field {path}, so the value would be "
                              "dropped" + (f"; {hint}" if hint else ""))


def _has_path(d: Any, path: str) -> bool:
    for k in path.split("."):
        if not isinstance(d, dict) or k not in d:
            return False
        d = d[k]
    return True


def _validate_study(data: dict) -> StudyConfig:
    """``StudyConfig.model_validate`` after the shape checks its before-validators rely on.

    Raises:
        ValidationError, ConfigError: without the file's name (the caller adds it).
    """
    verdicts = data.get("verdicts")
    if isinstance(verdicts, dict):
        for claim, params in verdicts.items():
            if params is not None and not isinstance(params, dict):
                raise ConfigError(f"verdicts.{claim}: expected a mapping of thresholds, e.g. {{margin: 0.05}} "
                                  f"(got {params!r})")
    return StudyConfig.model_validate(data)


def _trials_ok(data: dict) -> bool:
    try:
        _validate_study(data).trials()
        return True
    except (ValidationError, ConfigError):
        return False


#: Study-file fields a published run may hold otherwise than its shipped file: the tier's name (what is compared
#: against), the prose description, the ``--quick`` section (a published run is never quick) and whether trained
#: models were also written to disk. Every other field decides which trials run and how they are judged.
NOT_COMPARED = ("name", "description", "quick", "save_models")
ABSENT = "(absent)"


def _flatten(value: Any, prefix: str) -> dict[str, Any]:
    """A JSON value as ``dotted.key -> leaf`` (lists are leaves; an empty mapping sets nothing, so has none)."""
    if not isinstance(value, dict):
        return {prefix: value}
    out: dict[str, Any] = {}
    for key, item in value.items():
        out.update(_flatten(item, f"{prefix}.{key}"))
    return out


def _comparable(study: StudyConfig, exempt: frozenset[str]) -> dict[str, Any]:
    """The study's fields that make a tier what it is, flat (``base.train.steps``, ``grids[0].width``,
    ``verdicts.scaling.margin``): every field but :data:`NOT_COMPARED` and, in the base trial, the data-location
    fields in ``exempt`` (dotted trial paths). A grid over a data location is compared: it adds trials."""
    flat: dict[str, Any] = {}
    for key, value in study.model_dump(mode="json").items():
        if key in NOT_COMPARED:
            continue
        if key != "grids":
            flat.update(_flatten(value, key))
            continue
        for i, grid in enumerate(value):
            flat.update({f"grids[{i}].{axis}": values for axis, values in grid.items()} if grid
                        else {f"grids[{i}]": {}})
    return {k: v for k, v in flat.items() if not (k.startswith("base.") and k[len("base."):] in exempt)}


def shipped_differences(run: StudyConfig, shipped: StudyConfig) -> dict[str, tuple[Any, Any]]:
    """Where a run's resolved study differs from a shipped study file: dotted field -> (the run's value, the
    shipped value; :data:`ABSENT` where one side has no such field). Fields of :data:`NOT_COMPARED` and the
    data-location fields of either's trial class (:func:`bindscale.core.config.data_location_paths`: a treebank
    folder, a cache folder) are left out; an empty result means the run is the shipped file."""
    exempt = data_location_paths(type(run.base)) | data_location_paths(type(shipped.base))
    ours, theirs = _comparable(run, exempt), _comparable(shipped, exempt)
    return {k: (ours.get(k, ABSENT), theirs.get(k, ABSENT)) for k in sorted(ours.keys() | theirs.keys())
            if ours.get(k, ABSENT) != theirs.get(k, ABSENT)}
