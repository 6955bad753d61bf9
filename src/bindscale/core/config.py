"""Validated configuration: the trial base class, and a study (a base trial plus sweep grids).

Every model forbids unknown fields, so a typo in a study file is an error, not
a silently ignored key. :func:`format_validation_error` turns pydantic's report
into the one line the CLI prints. Trial configs belong to their studies
(:mod:`bindscale.core.registry`); this module knows them only through the registry.
"""

from __future__ import annotations


import contextvars
import copy
import functools
import hashlib
import itertools
import json
from collections.abc import Mapping
import typing
from typing import Annotated, Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from bindscale.core.errors import ConfigError


class StrictModel(BaseModel):
    """Base of every config section: unknown fields are errors, nothing is coerced, values are frozen."""

    # strict: no silent coercion (``width: true`` is not 1); inf/NaN are not numbers a config may hold.
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)


def model_kind(v: Any) -> str:
    """A ``model`` section's kind (a dict or a config; ``"transformer"`` when unset): the discriminator of a
    study whose trials mix model kinds (a trained transformer beside a real or pretrained model)."""
    return v.get("kind", "transformer") if isinstance(v, dict) else getattr(v, "kind", "transformer")


def keep_own_kind_fields(data: Any, kinds: Mapping[str, type[BaseModel]]) -> Any:
    """``data`` (a trial's raw dict) with the ``model`` fields of the other kinds dropped: those that only another
    kind's config has. One study file can then sweep several model kinds (a grid sets ``model.kind`` over a
    transformer base, a ``--set`` of one kind's field reaches that kind's trials only), and every field left is
    still checked against its own kind. Anything that is not such a dict is returned as it is."""
    if not (isinstance(data, dict) and isinstance(data.get("model"), dict)):
        return data
    m = dict(data["model"])
    own = kinds.get(model_kind(m))
    if own is None:  # an unknown kind: left for the discriminator to refuse
        return data
    for other in kinds.values():
        for k in set(other.model_fields) - set(own.model_fields):
            m.pop(k, None)
    return {**data, "model": m}


#: Key of a field's ``json_schema_extra`` that marks it id-neutral at its default (:func:`id_neutral_field`).
ID_NEUTRAL = "id_neutral_default"


def id_neutral_field(default: Any, **kwargs: Any) -> Any:
    """A pydantic ``Field(default, **kwargs)`` that is *id-neutral at its default*: while a trial holds the
    default, the field is left out of the dump its id hashes (:attr:`TrialBase.trial_id`), so adding it to
    a section changes no existing trial's id. Use it for a field added to a section that recorded trials
    already have, whose default is what those trials did (e.g. a training precision whose default, fp32, is
    what every trial trained in before). The default must be a JSON-comparable value (not a factory).

    Raises:
        TypeError: ``kwargs`` holds a ``default_factory`` or a non-dict ``json_schema_extra``.
    """
    if "default_factory" in kwargs:
        raise TypeError("an id-neutral field needs a plain default, not a default_factory")
    extra = kwargs.pop("json_schema_extra", None) or {}
    if not isinstance(extra, dict):
        raise TypeError("json_schema_extra of an id-neutral field must be a dict")
    return Field(default, json_schema_extra={**extra, ID_NEUTRAL: True}, **kwargs)


def _is_id_neutral(info: Any) -> bool:
    extra = info.json_schema_extra
    return isinstance(extra, dict) and bool(extra.get(ID_NEUTRAL))


#: Key of a field's ``json_schema_extra`` that marks it a data location (:func:`data_location_field`).
DATA_LOCATION = "data_location"


def data_location_field(default: Any = None, **kwargs: Any) -> Any:
    """A pydantic ``Field(default, **kwargs)`` that only names *where* data lives on this machine (a treebank
    folder, a cache folder), not what the data is or how a trial uses it: its value differs from one machine
    to the next and moves no number. ``bindscale publish`` compares a run's study with its shipped file without
    these fields (a run that needs ``--set data.treebank=PATH`` is still the shipped tier); every other field
    must be as shipped. A field that picks the model or the data itself (a model path) is not one of these.

    Raises:
        TypeError: ``kwargs`` holds a non-dict ``json_schema_extra``.
    """
    extra = kwargs.pop("json_schema_extra", None) or {}
    if not isinstance(extra, dict):
        raise TypeError("json_schema_extra of a data-location field must be a dict")
    return Field(default, json_schema_extra={**extra, DATA_LOCATION: True}, **kwargs)


def _is_data_location(info: Any) -> bool:
    extra = info.json_schema_extra
    return isinstance(extra, dict) and bool(extra.get(DATA_LOCATION))


def data_location_paths(cls: "type[TrialBase]") -> frozenset[str]:
    """Dotted paths (``data.treebank``) of the data-location fields (:func:`data_location_field`) of trial class
    ``cls``'s sections, in any member of a section typed as a union of configs."""
    paths: set[str] = set()
    for section in cls.SECTIONS:
        info = cls.model_fields.get(section)
        for member in _config_members(info.annotation) if info is not None else []:
            paths |= {f"{section}.{name}" for name, f in member.model_fields.items() if _is_data_location(f)}
    return frozenset(paths)


def _without_id_neutral_defaults(obj: Any, dumped: Any) -> Any:
    """``dumped`` (``obj``'s JSON dump) without the id-neutral fields that hold their defaults, at any depth:
    in nested config sections and in configs held in lists, tuples and dicts."""
    if isinstance(obj, BaseModel) and isinstance(dumped, dict):
        out = {}
        for name, value in dumped.items():
            info = type(obj).model_fields.get(name)
            own = getattr(obj, name, None)
            if info is not None and _is_id_neutral(info) and own == info.default:
                continue
            out[name] = _without_id_neutral_defaults(own, value)
        return out
    if isinstance(obj, (list, tuple)) and isinstance(dumped, list) and len(obj) == len(dumped):
        return [_without_id_neutral_defaults(o, d) for o, d in zip(obj, dumped)]
    if isinstance(obj, dict) and isinstance(dumped, dict):
        return {k: _without_id_neutral_defaults(obj.get(k), v) for k, v in dumped.items()}
    return dumped


class TrialBase(StrictModel):
    """Base of every study's trial config: hashed id and flat record columns.

    Subclasses set :attr:`AXES` (short sweep-axis names → dotted paths), :attr:`SECTIONS`,
    and either a ``kind`` field (a ``Literal``) or :attr:`KIND` (the study of trials without one);
    :attr:`NESTED_METRICS` names the key levels and values of their keyed-table metrics.
    """

    #: Config sections whose fields become dotted record columns and sweep paths.
    SECTIONS: ClassVar[tuple[str, ...]] = ("task", "model", "train")
    #: Sweep axes by their short names → dotted path.
    AXES: ClassVar[dict[str, str]] = {"seed": "seed"}
    #: Kind of a trial class without a ``kind`` field.
    KIND: ClassVar[str] = ""
    #: Metrics that are keyed tables (nested dicts), stored in the results table as rows
    #: (:func:`bindscale.store.records.metric_rows`): metric → (names of its key levels, names of its values).
    NESTED_METRICS: ClassVar[dict[str, tuple[tuple[str, ...], tuple[str, ...]]]] = {}
    #: Where a ``--set`` of a field that no trial of the study keeps belongs (dotted path → one line): a class
    #: that drops the fields of another kind (e.g. a real model's on a trained one) says where they take effect.
    OVERRIDE_HINTS: ClassVar[dict[str, str]] = {}

    @property
    def trial_id(self) -> str:
        """First 16 hex digits of the SHA-256 of the canonical JSON config (:meth:`id_dump`).

        Every field enters the hash, so adding a field to a section would change the id of every trial that
        has the section, and orphan every recorded run of them. A field declared *id-neutral at its default*
        (:func:`id_neutral_field`) does not: :meth:`id_dump` leaves it out (in any nested section, and in
        sections inside lists and dicts) while its value equals its default, so trials that keep the default
        have the ids they had before the field existed; a trial that sets another value gets an id of its own.
        """
        blob = json.dumps(self.id_dump(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    def id_dump(self) -> dict[str, Any]:
        """The JSON dump :attr:`trial_id` hashes: :meth:`model_dump` (``mode="json"``) without the id-neutral
        fields (:func:`id_neutral_field`) that hold their defaults."""
        return _without_id_neutral_defaults(self, self.model_dump(mode="json"))

    @property
    def family(self) -> str:
        """The trial's kind (which study it belongs to)."""
        return getattr(self, "kind", None) or self.KIND

    def trains(self) -> bool:
        """Whether the trial trains its model with its ``train`` section (``False`` for a trial that reads a
        pretrained model, whose ``train`` at most paces its progress); :func:`study_notes` skips the others."""
        return True

    def flat(self) -> dict[str, Any]:
        """Config columns of a record, one per field: the study's short axis name where it
        defines one (``width``), the dotted path otherwise (``train.grad_clip``)."""
        d = self.model_dump(mode="json")
        out: dict[str, Any] = {f"{section}.{k}": v for section in self.SECTIONS for k, v in d[section].items()}
        out["seed"] = self.seed
        return self.config_columns(out)

    @classmethod
    def column_names(cls) -> tuple[str, ...]:
        """Names of the config columns a results table has for this class (:meth:`flat`'s keys, ``seed``
        included), whichever member of a union section a trial uses: the columns that make one unit."""
        return tuple(cls.config_columns({p: None for p in sorted(_trial_paths(cls))}))

    @classmethod
    def config_columns(cls, flat: Mapping[str, Any]) -> dict[str, Any]:
        """Config columns with one name per field, from a record's ``config`` in either form.

        Records written before the table had one column per field hold each aliased field twice
        (``width`` and ``model.width``, equal values); the short name is kept. Keys that are
        neither an alias nor an aliased path pass through unchanged. A record written before an
        id-neutral field (:func:`id_neutral_field`) was added gets that field's default: what it ran with.
        """
        alias = {path: name for name, path in cls.AXES.items()}
        alias_path = dict(cls.AXES)
        out: dict[str, Any] = {}
        for key, value in flat.items():
            out.setdefault(alias.get(key, key), value)
        # A record written before an id-neutral field existed (:func:`id_neutral_field`) trained with its default.
        for path, default in _id_neutral_defaults(cls, {alias_path.get(k, k) for k in flat}).items():
            if path not in flat and alias.get(path, path) not in flat:
                out.setdefault(alias.get(path, path), default)
        return out


def trial_class(base: Any) -> type[TrialBase]:
    """Trial config class of a study's base trial (dict or model), from its ``kind``.

    Raises:
        ConfigError: an unknown kind.
    """
    from bindscale.core import registry

    if isinstance(base, TrialBase):
        return type(base)
    return registry.by_kind(registry.kind_of(base) if isinstance(base, dict) else None).trial_class


def axis_path(name: str, cls: type[TrialBase]) -> str:
    """Dotted path for an axis of trial class ``cls`` given by short name or by path.

    Raises:
        ConfigError: not a known axis or trial field.
    """
    if name in cls.AXES:
        return cls.AXES[name]
    if name in _trial_paths(cls):
        return name
    raise ConfigError(
        f"unknown sweep axis {name!r}; allowed: {', '.join(cls.AXES)} or a dotted trial field such as train.lr"
    )


def _trial_paths(cls: type[TrialBase]) -> set[str]:
    """Dotted paths of every trial field, including those of each member of a section typed as a union of
    configs (e.g. ``data: GrammarData | TreebankData``, told apart by a ``source`` field)."""
    d = cls().model_dump()
    paths = {"seed"}
    for section in cls.SECTIONS:
        paths |= {f"{section}.{k}" for k in d[section]}
        for member in _config_members(cls.model_fields[section].annotation):
            paths |= {f"{section}.{k}" for k in member.model_fields}
    return paths


def _id_neutral_defaults(cls: type[TrialBase], paths: set[str] | None = None) -> dict[str, Any]:
    """Dotted path → default of every id-neutral section field (:func:`id_neutral_field`) of trial class
    ``cls``, in JSON form.

    A section typed as a union of configs (e.g. a decoder's ``train`` or a recurrent model's) contributes the
    id-neutral fields of the one member a record holds: ``paths``, the record's dotted config paths, name it when
    exactly one member has every non-id-neutral field the record holds of that section and nothing the member
    lacks. Without ``paths``, or when no single member fits, only the fields every member has, with one default.
    """
    out: dict[str, Any] = {}
    for section in cls.SECTIONS:
        info = cls.model_fields.get(section)
        members = _config_members(info.annotation) if info is not None else []
        if not members:
            continue
        if len(members) > 1 and paths is not None:
            held = {p.split(".", 1)[1] for p in paths if p.startswith(section + ".")}
            fits = [m for m in members if held <= set(m.model_fields)
                    and {n for n, f in m.model_fields.items() if not _is_id_neutral(f)} <= held]
            if len(fits) == 1:
                members = fits
        out |= _shared_id_neutral_defaults(section, tuple(members))
    return out


@functools.cache
def _shared_id_neutral_defaults(section: str, members: tuple[type[BaseModel], ...]) -> dict[str, Any]:
    """Dotted path → JSON default of the id-neutral fields every one of ``members`` has, with one default."""
    out: dict[str, Any] = {}
    names = set.intersection(*(set(m.model_fields) for m in members))
    for name in sorted(names):
        infos = [m.model_fields[name] for m in members]
        defaults = {json.dumps(f.default, sort_keys=True, default=str) for f in infos}
        if all(_is_id_neutral(f) for f in infos) and len(defaults) == 1:
            out[f"{section}.{name}"] = json.loads(defaults.pop())
    return out


def _config_members(ann: Any) -> list[type[BaseModel]]:
    """The config classes a field's annotation allows: itself, or each member of a (tagged) union."""
    out, todo = [], [ann]
    while todo:  # unwrap unions and Annotated[...] (a tagged union's members)
        a = todo.pop()
        if isinstance(a, type) and issubclass(a, BaseModel):
            out.append(a)
        elif typing.get_origin(a) is typing.Annotated:
            todo.append(typing.get_args(a)[0])
        else:
            todo += list(typing.get_args(a))
    return out


class StudyConfig(StrictModel):
    """A study: a base trial, grids of axes whose union is the set of trials, and its verdict rules.

    ``grids`` is a list of ``{axis: [values, ...]}``; each grid's cartesian
    product is taken over ``base`` and the union (deduplicated by trial id) is
    the study. ``quick`` is a partial study deep-merged over this one by
    ``--quick``.
    """

    name: str = Field(min_length=1, max_length=100, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$")
    description: str = ""
    #: The base trial: its ``kind`` picks the study's trial config class (:mod:`bindscale.core.registry`).
    base: Any = None
    grids: list[dict[str, list[Any]]] = Field(default_factory=lambda: [{}])
    quick: dict[str, Any] | None = None
    is_quick: bool = Field(False, description="set by --quick: this is the study's quick variant")
    # Strict: a quoted number ("0.05") is refused, not read as one; a typo'd threshold must not pass quietly.
    verdicts: dict[str, dict[str, Annotated[float, Field(strict=True)]]] = Field(
        default_factory=dict, description="claim → thresholds (each claim's ``thresholds``)")
    anchors: dict[str, str] = Field(default_factory=dict)
    save_models: bool = Field(False, description="also write each trial's trained model to models/<trial_id>.pt "
                              "(bindscale.store.checkpoints); not part of any trial id")

    @model_validator(mode="before")
    @classmethod
    def _resolve(cls, data: Any) -> Any:
        """Validate ``base`` with its study's trial class; study files written before a claim was
        renamed or a threshold retired (a run directory's study.yaml) still load: old names take
        the new ones, retired thresholds are dropped (each claim's ``aliases`` / ``retired``)."""
        if not isinstance(data, dict):
            return data
        base = data.get("base")
        if base is None or isinstance(base, dict):
            data = {**data, "base": _validate_base(base or {})}
        elif not isinstance(base, TrialBase):
            raise ValidationError.from_exception_data(cls.__name__, [{"type": "dict_type", "loc": ("base",),
                                                                      "input": base}])
        if isinstance(data.get("verdicts"), dict):
            from bindscale.core import registry

            study = registry.for_trial(data["base"])
            out = {}
            for name, params in data["verdicts"].items():
                claim = next((c for c in study.claims if name == c.name or name in c.aliases), None)
                if claim is not None:
                    name = claim.name
                    if isinstance(params, dict):
                        params = {k: v for k, v in params.items() if k not in claim.retired}
                out[name] = params
            data = {**data, "verdicts": out}
        return data

    @model_validator(mode="after")
    def _check_grids(self) -> "StudyConfig":
        from bindscale.core import registry

        tcls = type(self.base)
        for grid in self.grids:
            for axis, values in grid.items():
                axis_path(axis, tcls)
                if not values:
                    raise ValueError(f"axis {axis!r} has no values")
                # A repeated value would be merged into one trial silently (seed [0, 0] runs one seed).
                said = [json.dumps(v, sort_keys=True, default=str) for v in values]
                if len(set(said)) < len(said):
                    twice = next(v for v, s in zip(values, said) if said.count(s) > 1)
                    raise ValueError(f"axis {axis!r} lists {twice!r} more than once: give each value once")
        study = registry.for_trial(self.base)
        claims = {c.name: c for c in study.claims}
        for name, params in self.verdicts.items():
            if name not in claims:
                raise ValueError(f"unknown verdict {name!r} for the {study.name} study; allowed: "
                                 f"{', '.join(claims) or 'none'}")
            from bindscale.core.study import ENGINE_THRESHOLDS

            allowed = {**ENGINE_THRESHOLDS, **claims[name].thresholds}
            for key, value in (params or {}).items():
                if key not in allowed:
                    raise ValueError(f"verdicts.{name}: unknown threshold {key!r}; allowed: {', '.join(allowed)}")
                lo, hi = allowed[key]
                if not lo <= value <= hi:
                    raise ValueError(f"verdicts.{name}.{key}={value} is out of range [{lo}, {hi}]")
        for name in self.anchors:  # a misspelt claim under anchors: would be dropped without a word
            if name not in claims:
                raise ValueError(f"anchors: unknown claim {name!r} for the {study.name} study; allowed: "
                                 f"{', '.join(claims) or 'none'}")
        return self

    @property
    def family(self) -> str:
        """The kind of its trials (which study plugin runs them)."""
        return self.base.family

    @property
    def plugin(self) -> Any:
        """The :class:`bindscale.core.study.Study` that runs this study's trials."""
        from bindscale.core import registry

        return registry.for_trial(self.base)

    def trials(self) -> list[Any]:
        """All trials of the study, in a stable order, without duplicates.

        Raises:
            ConfigError: a grid value is out of range for its field.
        """
        tcls = type(self.base)
        base = self.base.model_dump(mode="json")
        seen: dict[str, TrialBase] = {}
        for grid in self.grids:
            axes = list(grid)
            for values in itertools.product(*(grid[a] for a in axes)):
                d = copy.deepcopy(base)
                for axis, value in zip(axes, values):
                    set_path(d, axis_path(axis, tcls), value)
                trial = validate(tcls, d, where=f"grid value {dict(zip(axes, values))}")
                seen.setdefault(trial.trial_id, trial)
        return list(seen.values())


def set_path(d: dict, path: str, value: Any) -> None:
    keys = path.split(".")
    for k in keys[:-1]:
        d = d.setdefault(k, {})
    d[keys[-1]] = value


#: Trial class of the base most recently validated in this context: pydantic re-wraps a base's
#: errors into StudyConfig's, and the one-line message lists the fields of the right class.
_BASE_CLASS: contextvars.ContextVar[type | None] = contextvars.ContextVar("bindscale_base_class", default=None)


def _validate_base(base: dict) -> TrialBase:
    """The base trial validated by its study's class; errors keep pydantic's form, located under ``base``."""
    tcls = trial_class(base)
    _BASE_CLASS.set(tcls)
    try:
        return tcls.model_validate(base)
    except ValidationError as err:
        details = [{"type": e["type"], "loc": ("base", *e["loc"]), "input": e.get("input"),
                    **({"ctx": e["ctx"]} if "ctx" in e else {})} for e in err.errors()]
        raise ValidationError.from_exception_data(tcls.__name__, details) from None


def format_validation_error(err: ValidationError, where: str = "") -> str:
    """One line naming the first offending field, what was given and what is allowed."""
    e = err.errors()[0]
    parts = list(e["loc"])
    loc = ".".join(str(p) for p in parts)  # empty: the whole study (say the file, ``where``, instead)
    msg = e["msg"]
    if msg.startswith(_PYDANTIC_PREFIX):  # a validator's own words, without pydantic's label
        msg = msg[len(_PYDANTIC_PREFIX):]
    if e["type"] == "extra_forbidden":
        parent = tuple(parts[:-1])
        msg = f"unknown field; allowed: {', '.join(_allowed_fields(err.title, parent))}"
    given = e.get("input")
    given_s = "" if e["type"] in ("extra_forbidden", "missing") or isinstance(given, dict) else f" (got {given!r})"
    prefix = "".join(f"{part}: " for part in (where, loc) if part)
    return f"{prefix}{msg}{given_s}"


_PYDANTIC_PREFIX = "Value error, "


#: The class :func:`validate` is validating: pydantic names it in its errors only by ``__name__``, which
#: two studies' trial classes may share (``TrialConfig`` by the study convention).
_VALIDATING: contextvars.ContextVar[type | None] = contextvars.ContextVar("bindscale_validating", default=None)


def _allowed_fields(title: str, parent: tuple) -> list[str]:
    from bindscale.core import registry

    hinted = _VALIDATING.get()
    if hinted is not None and hinted.__name__ == title:
        model: type[BaseModel] = hinted
    else:
        classes = {"StudyConfig": StudyConfig} | {s.trial_class.__name__: s.trial_class
                                                  for s in registry.studies().values()}
        model = classes.get(title, StudyConfig)
    if parent[:1] == ("base",):  # a base trial's error, located under base
        model = model if model is not StudyConfig else (_BASE_CLASS.get() or StudyConfig)
        parent = parent[1:] if model is not StudyConfig else parent
    parts = [str(p) for p in parent]
    while parts:
        field = model.model_fields.get(parts.pop(0))
        members = _config_members(field.annotation) if field is not None else []
        if len(members) > 1 and parts:  # a union: pydantic's location names the member (its tag or class)
            tag = parts.pop(0)
            members = [m for m in members if m.__name__ == tag
                       or any(f.default == tag for f in m.model_fields.values())]
        if len(members) != 1:
            return []
        model = members[0]
    return list(model.model_fields)


def validate(model: type[BaseModel], data: Any, where: str = "") -> Any:
    """``model.model_validate(data)`` with errors as :class:`ConfigError` (one line)."""
    token = _VALIDATING.set(model)
    try:
        return model.model_validate(data)
    except ValidationError as err:
        raise ConfigError(format_validation_error(err, where)) from None
    finally:
        _VALIDATING.reset(token)
