"""What a study is to the core: a :class:`Study` plugin and the :class:`Claim`\\s it tests.

A study is one package (built-in: ``bindscale/studies/<name>/``; third-party: any
package registered under the entry-point group ``bindscale.studies``) whose
``STUDY`` object satisfies :class:`Study`. The core (config loading, sweeps,
executors, records, report shell, CLI) only ever talks to studies through this
interface and :mod:`bindscale.registry`; it names no study.

:class:`StudyPlugin` is the ready-made implementation: its hooks are given as
``"module:attribute"`` strings, imported on first use, so that resolving and
validating a study never imports torch, pandas or scikit-learn (a one-line
error is printed in well under a second).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

#: Which side of the question a claim bears on (the answer page groups claims by it).
SIDES: dict[str, str] = {
    "scale_suffices": "scale suffices",
    "binding_needed": "binding needed",
    "where_scale_stops": "where scale stops",
}

#: The three outcomes of a claim. ``supported`` always means the cited source's claim holds.
SUPPORTED, NOT_SUPPORTED, INCONCLUSIVE = "supported", "not_supported", "inconclusive"
OUTCOMES = (SUPPORTED, NOT_SUPPORTED, INCONCLUSIVE)


@dataclass(frozen=True)
class Verdict:
    """What a claim's rule decided from the ok rows of its study's results table.

    The report turns it into the claim's verdict dict (``statistic``, ``verdict``, ``value``, ``ci_low``,
    ``ci_high``, ``n_trials``, ``details``: :func:`bindscale.report.verdicts.compute_verdicts`), after the
    claim's guards have had their say.

    Attributes:
        statistic: name of the deciding statistic, an identifier such as ``"heldout_r2_widest"`` (the
            claim's ``statistic`` text says it in words).
        outcome: :data:`SUPPORTED`, :data:`NOT_SUPPORTED` or :data:`INCONCLUSIVE`.
        interval: ``(value, ci_low, ci_high)``: the statistic and its 95% interval, in the statistic's
            own units; NaN where undefined (e.g. ``(nan, nan, nan)`` when inconclusive for lack of rows).
        n_trials: how many values (trials, or cells where the rule says so) the statistic is computed from.
        details: JSON-able facts behind the verdict for the report: ``reason`` (one sentence, why this
            outcome), per-cell intervals, ``seeds_per_cell`` (fewer than
            :data:`bindscale.report.verdicts.CONCLUSIVE_SEEDS` adds a caveat), restrictions applied...

    Raises:
        ValueError: ``outcome`` is not one of the three outcomes, or ``interval`` has not three numbers.
    """

    statistic: str
    outcome: str
    interval: tuple[float, float, float]
    n_trials: int
    details: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.outcome not in OUTCOMES:
            raise ValueError(f"verdict {self.statistic}: outcome {self.outcome!r} is not one of {', '.join(OUTCOMES)}")
        if len(self.interval) != 3:
            raise ValueError(f"verdict {self.statistic}: interval {self.interval!r} is not (value, low, high)")

    @property
    def value(self) -> float:
        """The statistic (first element of :attr:`interval`)."""
        return float(self.interval[0])

    @property
    def ci_low(self) -> float:
        """Low end of the statistic's 95% interval."""
        return float(self.interval[1])

    @property
    def ci_high(self) -> float:
        """High end of the statistic's 95% interval."""
        return float(self.interval[2])

    # Transition only: tests written against the former 5-tuple still unpack or index a verdict
    # (``stat, outcome, triple, n, details = rule(...)``). Rules return a Verdict; code reads attributes.
    def _fields(self) -> tuple:
        return (self.statistic, self.outcome, self.interval, self.n_trials, self.details)

    def __iter__(self):
        return iter(self._fields())

    def __getitem__(self, i: int) -> Any:
        return self._fields()[i]


#: A verdict rule: (ok rows, thresholds, n_boot, seed) -> :class:`Verdict`.
Rule = Callable[..., Verdict]
#: A guard run after a rule: (all rows, ok rows, details) -> (reason, details key for the rule's own value) or None.
Guard = Callable[..., "tuple[str, str] | None"]


def resolve(ref: Any) -> Any:
    """``"package.module:attr"`` → the attribute (imported now); anything else is returned as is.

    Raises:
        ImportError / AttributeError: the reference names nothing (a plugin's bug).
    """
    if not isinstance(ref, str):
        return ref
    module, _, attr = ref.partition(":")
    obj: Any = importlib.import_module(module)
    for part in attr.split(".") if attr else ():
        obj = getattr(obj, part)
    return obj


@dataclass(frozen=True)
class Claim:
    """One published claim a study tests, and how its verdict is decided.

    ``supported`` always means the cited source's claim holds (``statement``).

    Attributes:
        name: identifier, unique across all studies (a study file's ``verdicts`` key).
        title: the heading of its report section.
        source: authors, year and title of the source.
        statement: the claim in words, as its source makes it.
        statistic: what the deciding number is, in words (the rule names it exactly).
        side: key of :data:`SIDES`.
        rule: ``"module:function"`` or a callable (see :data:`Rule`).
        thresholds: threshold name → allowed (low, high), settable in the study file.
        defaults: threshold name → default value.
        figures: names of the figures (of its study) that decide it, first one shown on the answer page.
        guards: callables or references (see :data:`Guard`) that can turn a verdict inconclusive
            (e.g. the widest planned model produced no result).
        aliases: earlier names of the claim (old study files still load).
        retired: thresholds of earlier rules, dropped when an old study file is loaded.
    """

    name: str
    title: str
    source: str
    statement: str
    statistic: str
    side: str
    rule: Any
    thresholds: Mapping[str, tuple[float, float]] = field(default_factory=dict)
    defaults: Mapping[str, float] = field(default_factory=dict)
    figures: Sequence[str] = ()
    guards: Sequence[Any] = ()
    aliases: Sequence[str] = ()
    retired: Sequence[str] = ()

    def __post_init__(self) -> None:
        if self.side not in SIDES:
            raise ValueError(f"claim {self.name}: side {self.side!r} is not one of {', '.join(SIDES)}")
        if set(self.defaults) - set(self.thresholds):
            raise ValueError(f"claim {self.name}: defaults for unknown thresholds {set(self.defaults) - set(self.thresholds)}")


@runtime_checkable
class Study(Protocol):
    """The interface between the core and a study plugin.

    Attributes:
        name: the study's name (``bindscale run NAME``).
        kind: the ``kind`` its trial configs carry (a study file's ``base.kind``).
        implicit_kind: trial dicts without ``kind`` are this study's (at most one study:
            records written before kinds existed keep their trial ids).
        trial_config: the pydantic trial config class (subclass of
            :class:`bindscale.config.TrialBase`).
        claims: the claims it tests.
        description: one line for ``bindscale list``.
    """

    name: str
    kind: str
    implicit_kind: bool
    trial_config: type
    claims: Sequence[Claim]
    description: str

    def study_files(self) -> dict[str, Path]:
        """Study YAML files it ships: name → path (the default one is named like the study)."""

    def group_key(self, trial: Any) -> tuple:
        """Trials with equal keys may train together in one job (a stack)."""

    def run_group(self, trials: list, device: str, progress: Callable[[int], None] | None) -> list:
        """Train and analyse one job's trials; one result per trial (``.status``,
        ``.diverged_step``, ``.metrics``); ``progress(n)`` after every n steps."""

    def steps(self, trial: Any) -> int:
        """Training steps of one trial (the unit of progress)."""

    def job_cost(self, job: list) -> float:
        """Relative cost of a job (orders jobs, weighs the ETA)."""

    def trial_memory_bytes(self, trial: Any) -> int:
        """Upper estimate of one trial's memory inside a job, in bytes."""

    def check_trials(self, trials: list) -> None:
        """Raise :class:`bindscale.errors.ConfigError` for trials that cannot run (before anything is written)."""

    def prepare_rows(self, df: Any) -> Any:
        """The ok rows of the results table, typed, as its verdict rules expect them."""

    def figures(self, study: Mapping[str, Any] | None, verdicts: Sequence[Mapping[str, Any]] | None = None
                ) -> dict[str, tuple[Callable, str]]:
        """Figure name → (function(results table) -> base64 PNG or None, caption). ``verdicts``: the report's
        verdict dicts (:func:`bindscale.report.verdicts.compute_verdicts`), so that a figure can draw the
        numbers a verdict computed (a fit, an interval) instead of computing them again."""

    def config_table(self, df: Any) -> tuple[list[str], list[list[str]]]:
        """Per-configuration means over seeds for the report: (header, rows)."""


def _default_group_key(trial: Any) -> tuple:
    return (trial.family, trial.trial_id)


@dataclass(frozen=True)
class StudyPlugin:
    """A :class:`Study` whose hooks are lazy ``"module:attr"`` references.

    Hooks left ``None`` take a default: every trial its own job, cost ``steps`` per trial,
    256 MiB per trial, no extra checks, ok rows untouched, no figures, no config table.

    Optional hooks of the Python API (:mod:`bindscale.api`), none by default:
    ``models`` — ``function(trial, **model_kwargs) -> nn.Module``, the trial's untrained
    model (the one its trainer hands back with ``return_models=True``, before training;
    ``model_kwargs`` are those the trainer's results carry); ``tasks`` —
    ``function(trial, device) -> object``, what the trainer builds its data from. A trainer
    that can hand back its trained models takes a keyword argument ``return_models``.
    """

    name: str
    kind: str
    trial_config: Any  # a class or "module:Class"
    claims: Sequence[Claim]
    description: str
    directory: Path | None = None  # where its YAML files are
    implicit_kind: bool = False
    headline: bool = False  # what `bindscale run` runs without a study name (first verdicts in minutes)
    #: CPU-seconds per unit of ``job_cost`` and per trial, for ``--dry-run``'s estimate (None: no estimate),
    #: and whether the factor was measured on whole jobs of the study (else a rough fit).
    seconds_per_cost: tuple[float, float] | None = None
    seconds_measured: bool = False
    trainer: Any = None
    grouper: Any = None
    cost: Any = None
    memory: Any = None
    checker: Any = None
    rows: Any = None
    figure_set: Any = None
    table: Any = None
    models: Any = None
    tasks: Any = None
    #: ``function(trials) -> float``: seconds of one training step of ``trials`` as one stack on this
    #: machine (one thread); with it the planner sizes stacks by measurement (:func:`bindscale.sweep.plan_jobs`).
    step_timer: Any = None

    def __post_init__(self) -> None:
        if self.trainer is None:
            raise ValueError(f"study {self.name}: a trainer (run_group) is required")
        names = [c.name for c in self.claims]
        if len(set(names)) != len(names):
            raise ValueError(f"study {self.name}: claim names repeat: {names}")

    # The config class is resolved on use: a plugin module may define it after STUDY.
    @property
    def trial_class(self) -> type:
        return resolve(self.trial_config)

    def study_files(self) -> dict[str, Path]:
        if self.directory is None:
            return {}
        return {p.stem: p for p in sorted(Path(self.directory).glob("*.yaml"))}

    def group_key(self, trial: Any) -> tuple:
        return resolve(self.grouper)(trial) if self.grouper else _default_group_key(trial)

    def run_group(self, trials: list, device: str, progress: Callable[[int], None] | None = None,
                  return_models: bool = False) -> list:
        """Its trainer on ``trials``; ``return_models=True`` asks it for the trained models too
        (``TrialResult.model``; see :meth:`returns_models`)."""
        if not return_models:
            return resolve(self.trainer)(trials, device, progress)
        if not self.returns_models():
            raise NotImplementedError(f"study {self.name}: its trainer cannot hand back trained models "
                                      "(no return_models argument)")
        return resolve(self.trainer)(trials, device, progress, return_models=True)

    def returns_models(self) -> bool:
        """Whether its trainer takes ``return_models`` and it has a ``models`` builder (models can be
        returned, saved and rebuilt)."""
        import inspect

        if self.models is None:
            return False
        return "return_models" in inspect.signature(resolve(self.trainer)).parameters

    def build_model(self, trial: Any, **model_kwargs: Any) -> Any:
        """The trial's untrained model (its ``models`` hook).

        Raises:
            NotImplementedError: the study has no ``models`` hook.
        """
        if self.models is None:
            raise NotImplementedError(f"study {self.name} does not build models outside its trainer (no models hook)")
        return resolve(self.models)(trial, **model_kwargs)

    def build_tasks(self, trial: Any, device: str = "cpu") -> Any:
        """What the trial's trainer builds its data from (its ``tasks`` hook).

        Raises:
            NotImplementedError: the study has no ``tasks`` hook.
        """
        if self.tasks is None:
            raise NotImplementedError(f"study {self.name} does not expose its tasks (no tasks hook)")
        return resolve(self.tasks)(trial, device)

    def steps(self, trial: Any) -> int:
        return int(trial.train.steps)

    def job_cost(self, job: list) -> float:
        return float(resolve(self.cost)(job)) if self.cost else float(sum(self.steps(t) for t in job))

    def trial_memory_bytes(self, trial: Any) -> int:
        return int(resolve(self.memory)(trial)) if self.memory else 256 << 20

    def stack_step_seconds(self, trials: list) -> float | None:
        """Measured seconds of one training step of ``trials`` stacked (None: the study has no step timer)."""
        return float(resolve(self.step_timer)(trials)) if self.step_timer else None

    def check_trials(self, trials: list) -> None:
        if self.checker:
            resolve(self.checker)(trials)

    def prepare_rows(self, df: Any) -> Any:
        from .records import ok_rows

        return resolve(self.rows)(df) if self.rows else ok_rows(df)

    def figures(self, study: Mapping[str, Any] | None = None,
                verdicts: Sequence[Mapping[str, Any]] | None = None) -> dict[str, tuple[Callable, str]]:
        """Its figure set; the verdicts go to a figure set function that takes a ``verdicts`` argument."""
        import inspect

        if not self.figure_set:
            return {}
        make = resolve(self.figure_set)
        if verdicts is not None and "verdicts" in inspect.signature(make).parameters:
            return dict(make(study, verdicts=verdicts))
        return dict(make(study))

    def config_table(self, df: Any) -> tuple[list[str], list[list[str]]]:
        return resolve(self.table)(df) if self.table else ([], [])
