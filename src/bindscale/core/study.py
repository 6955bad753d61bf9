"""What a study is to the core: a :class:`Study` plugin and the :class:`Claim`\\s it tests.

A study is one package (built-in: ``bindscale/studies/<name>/``; third-party: any
package registered under the entry-point group ``bindscale.studies``) whose
``STUDY`` object satisfies :class:`Study`. The core (config loading, sweeps,
executors, records, report shell, CLI) only ever talks to studies through this
interface and :mod:`bindscale.core.registry`; it names no study.

:class:`StudyPlugin` is the ready-made implementation. Given its ``package``, it finds its hooks
by convention in the study's folder (:data:`CONVENTION`: ``trial.run_group``, ``plan.job_cost``,
``verdicts.prepare_rows``, ``figures.figures``...) and each claim's rule as ``verdicts.<claim name>``;
a hook is given explicitly only where a study differs, as a ``"module:attribute"`` string (relative to
the package when it starts with a dot) or an object. Hooks are imported on first use, so that
resolving and validating a study never imports torch, pandas or scikit-learn (a one-line error is
printed in well under a second).
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from bindscale.core.fmt import fmt_against

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
    ``ci_high``, ``n_trials``, ``details``: :func:`bindscale.verdicts.engine.compute_verdicts`), after the
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
            :data:`bindscale.verdicts.engine.CONCLUSIVE_SEEDS` adds a caveat), restrictions applied...

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



#: Thresholds the verdict engine reads for every claim, beside each claim's own (name → allowed (low, high)):
#: ``min_seeds``, the share (≤ 1) or number (> 1) of a deciding cell's planned seeds that must be finite
#: (:data:`bindscale.verdicts.engine.MIN_SEEDS`).
ENGINE_THRESHOLDS: dict[str, tuple[float, float]] = {"min_seeds": (0.0, 1000.0)}


@dataclass(frozen=True)
class Gate:
    """The fit a claim's deciding models must reach on their *training* distribution before it is decided.

    A model that has not learned its training task measures capacity, not composition: failing out of
    distribution, a plateau or "no gain" then says nothing about the claim. The engine
    (:func:`bindscale.verdicts.engine.gate_check`) reads ``metric`` in every deciding cell the rule names
    (:func:`bindscale.verdicts.engine.deciding_cell`, unless the cell says it is a control that need not
    learn, such as an untrained twin) per model: every seed of such a cell whose fit misses the level (or was
    never recorded) is left out (:func:`bindscale.verdicts.engine.gate_filter`), the rule decides again on the
    seeds left, and the lost seeds count against the claim's ``min_seeds``; the reason names the cell, its lost
    seeds and their fit, and the report shows the gate beside the verdict.

    Attributes:
        metric: column of the study's prepared rows holding each trial's fit (e.g. ``"acc_id"``); the
            study's ``prepare_rows`` may derive it.
        threshold: name of the claim threshold that holds the level (so a study file can set it, like any
            threshold); the claim's ``thresholds`` and ``defaults`` must have it.
        what: the fit in words, as the report prints it ("in-distribution exact match on SCAN's training
            commands").
        source: why this level: what the cited source reports of its own models' fit (authors, year).
        higher: True when a fit must reach at least the level (accuracy); False when it must stay at or
            below it (a loss, or a loss's excess over the data's entropy).
        missing: what a cell that misses the gate did not do, as the reason says it ("did not learn their
            training task"; a probe's gate: "recovered no more of the tree than the linear chain").
    """

    metric: str
    threshold: str
    what: str
    source: str
    higher: bool = True
    missing: str = "did not learn their training task"

    def passes(self, fit: float, level: float) -> bool:
        """Whether a fit (one model's, or a mean over models) meets ``level`` (NaN never does)."""
        return bool(fit >= level) if self.higher else bool(fit <= level)

    def says(self, level: float) -> str:
        """The gate in words: "in-distribution exact match ≥ 0.95"."""
        return f"{self.what} {'≥' if self.higher else '≤'} {level:g}"


def gate_lines(details: Mapping[str, Any]) -> list[str]:
    """The claim's competence gates in words, one line each, for the report beside its verdict.

    ``details["gates"]`` as :func:`bindscale.verdicts.engine.gate_check` writes it → e.g. "in-distribution
    exact match ≥ 0.95 (Lake & Baroni 2018: ...): width 16 0.33 (missed), width 64 0.99".
    """
    out = []
    for g in details.get("gates") or []:
        every = g.get("cells_every_seed") or {}  # a cell none of whose models passed has no fit of its own

        def fit_text(label: str, fit: float | None) -> str:
            if fit is not None:
                return fmt_against(fit, g.get("level", fit))
            if every.get(label) is not None:
                return f"none passed ({fmt_against(every[label], g.get('level', every[label]))} over all its seeds)"
            return "not recorded"

        cells = ", ".join(f"{label} {fit_text(label, fit)}{' (missed)' if label in g.get('missed', ()) else ''}"
                          for label, fit in g["cells"].items())
        out.append(f"{g['says']} ({g['source']}): {cells or 'no deciding cell'}")
    return out


@dataclass(frozen=True)
class Anchor:
    """The source's headline result for a claim, as the source states it: what the answer page shows
    beside bindscale's deciding number, so that a reader can compare the two.

    Where the source gives a number, ``number`` holds it in the source's own unit (``70.1`` with unit
    ``"% LAS"``, not 0.701); where it gives none, ``number`` is None and ``quote`` holds the sentence
    that states the result. A quote is the source's wording; where that wording could not be checked
    against the source, ``paraphrase=True`` and the text says "paraphrase". Nothing here is computed by
    bindscale except where a field says so (a parameter count derived from a stated architecture).

    Attributes:
        citation: authors, year, venue or arXiv id.
        metric: what the number (or the quoted sentence) measures, in the source's terms.
        model_size: the source's models in words ("a 7B-parameter LM", "2-layer LSTM, 200 units").
        params: parameter count of the source's largest model that the headline comes from, for the
            scale comparison of :mod:`bindscale.verdicts.anchors`; None where the source does not state it (the
            relation is then "not comparable": a scale that cannot be compared is not comparable).
        number: the headline number in the source's unit, or None (then ``quote`` is required).
        unit: the number's unit ("%", "% LAS", "R²"); "" for a quote.
        quote: the sentence stating the result (required when ``number`` is None; may accompany a number).
        paraphrase: True when ``quote`` is bindscale's paraphrase, not verified wording.
        says: the number as the source puts it, when it is more than one figure ("LAS 70.1 (polar) vs
            51.1 (structural)"); "" to print ``number`` and ``unit``.
        statistics: identifiers of bindscale's deciding statistics (a rule's ``Verdict.statistic``) that
            measure the source's metric, so that the two numbers can be read side by side; empty when
            bindscale decides the claim on another measure (the relation is then "not comparable").

    Raises:
        ValueError: neither a finite number nor a quote; a number that is not finite; params not positive.
    """

    citation: str
    metric: str
    model_size: str
    params: float | None = None
    number: float | None = None
    unit: str = ""
    quote: str | None = None
    paraphrase: bool = False
    says: str = ""
    statistics: Sequence[str] = ()

    def __post_init__(self) -> None:
        import math

        if self.number is None and not (self.quote or "").strip():
            raise ValueError(f"anchor ({self.citation}): give the source's number, or quote its sentence")
        if self.number is not None and not math.isfinite(float(self.number)):
            raise ValueError(f"anchor ({self.citation}): number {self.number!r} is not finite")
        if self.params is not None and not float(self.params) > 0:
            raise ValueError(f"anchor ({self.citation}): params {self.params!r} must be a positive count")

    @property
    def text(self) -> str:
        """One line a reader sees: the result (``says``, else number, unit and metric), the model size and
        the citation: "LAS 70.1 (polar probe) vs 51.1 (structural probe), x1.37 — a 7B-parameter pretrained LM;
        Diego-Simón et al. 2024 ..."; without a number: 'no number; quote: "…" — ...' (or 'no number;
        paraphrase: … — ...'). The metric is its own field (``metric``), beside the line.
        """
        if self.number is not None:
            head = self.says or f"{self.number:g}{self.unit if self.unit.startswith('%') else ' ' + self.unit} {self.metric}"
        else:
            head = (f"no number; paraphrase: {self.quote}" if self.paraphrase
                    else f"no number; quote: \u201c{self.quote}\u201d")
        return f"{head} — {self.model_size}; {self.citation}"

    def as_dict(self) -> dict[str, Any]:
        """The anchor as ``answer.json`` carries it: number, unit, metric, model_size, params, citation,
        quote, paraphrase, text."""
        return {"number": None if self.number is None else float(self.number), "unit": self.unit,
                "metric": self.metric, "model_size": self.model_size,
                "params": None if self.params is None else float(self.params), "citation": self.citation,
                "quote": self.quote, "paraphrase": self.paraphrase, "text": self.text}


#: What a claim's "not supported" can mean for its side (:attr:`Claim.not_supported_means`).
NOT_SUPPORTED_MEANS = ("opposite", "missed_level")


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
        rule: ``"module:function"`` or a callable (see :data:`Rule`); ``None``: its study's
            ``verdicts.<name>`` (:class:`StudyPlugin` fills it in). A reference starting with a dot is
            relative to the study's package (``".verdicts:my_rule"``).
        thresholds: threshold name → allowed (low, high), settable in the study file.
        defaults: threshold name → default value.
        figures: names of the figures (of its study) that decide it, first one shown on the answer page.
        guards: callables or references (see :data:`Guard`; relative ones as for ``rule``) that can turn
            a verdict inconclusive (e.g. the widest planned model produced no result).
        aliases: earlier names of the claim (old study files still load).
        retired: thresholds of earlier rules, dropped when an old study file is loaded.
        gates: :class:`Gate`\\s: the fit on their training distribution the deciding models must reach
            before the claim is decided (every built-in claim has at least one).
        anchor: the source's headline result as the source states it (:class:`Anchor`), shown beside
            bindscale's deciding number with the relation :func:`bindscale.verdicts.anchors.relation` decides
            (every built-in claim has one; None only for a third-party claim that gives none).
        bounds: the range its deciding statistic can take, ``(low, high)`` with None for no bound (an R²:
            ``(None, 1)``; an accuracy or a share: ``(0, 1)``; a difference of two: ``(-1, 1)``; a correlation:
            ``(-1, 1)``; a ratio: ``(0, None)``). The engine clips the interval to it (never the point): a bound
            the quantity cannot pass is no information lost, and coverage is unchanged.
        not_supported_means: what a "not supported" verdict says about the side the claim bears on:
            ``"opposite"`` (evidence for the other side: e.g. scale did lift accuracy) or ``"missed_level"``
            (only a level or band the claim names was missed: e.g. a plateau found above the claimed band). A
            rule may say it per verdict (``details["not_supported_means"]``); the synthesis counts only the
            former against the side.
        own_hypothesis: the claim is the project's own question or synthesis, not a source's published claim
            (its ``source`` then starts with "bindscale's"); the answer page, ``answer.json`` and the synthesis
            mark it as such, and a side of the question never rests on such claims alone.
    """

    name: str
    title: str
    source: str
    statement: str
    statistic: str
    side: str
    rule: Any = None
    thresholds: Mapping[str, tuple[float, float]] = field(default_factory=dict)
    defaults: Mapping[str, float] = field(default_factory=dict)
    figures: Sequence[str] = ()
    guards: Sequence[Any] = ()
    aliases: Sequence[str] = ()
    retired: Sequence[str] = ()
    gates: Sequence[Gate] = ()
    anchor: Anchor | None = None
    bounds: tuple[float | None, float | None] = (None, None)
    not_supported_means: str = "opposite"
    own_hypothesis: bool = False

    def __post_init__(self) -> None:
        if self.not_supported_means not in NOT_SUPPORTED_MEANS:
            raise ValueError(f"claim {self.name}: not_supported_means {self.not_supported_means!r} is not one of "
                             f"{', '.join(NOT_SUPPORTED_MEANS)}")
        if self.source.startswith("bindscale's") and not self.own_hypothesis:
            raise ValueError(f"claim {self.name}: its source is bindscale's own ({self.source[:40]}…); mark it "
                             "own_hypothesis=True so that the answer does not count it as a published claim")
        for gate in self.gates:
            if gate.threshold not in self.thresholds or gate.threshold not in self.defaults:
                raise ValueError(f"claim {self.name}: gate on {gate.metric} reads threshold {gate.threshold!r}, "
                                 "which the claim's thresholds and defaults must both have")
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
            :class:`bindscale.core.config.TrialBase`).
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
        """Raise :class:`bindscale.core.errors.ConfigError` for trials that cannot run (before anything is written)."""

    def prepare_rows(self, df: Any) -> Any:
        """The ok rows of the results table, typed, as its verdict rules expect them."""

    def figures(self, study: Mapping[str, Any] | None, verdicts: Sequence[Mapping[str, Any]] | None = None
                ) -> dict[str, tuple[Callable, str]]:
        """Figure name → (function(results table) -> base64 PNG or None, caption). ``verdicts``: the report's
        verdict dicts (:func:`bindscale.verdicts.engine.compute_verdicts`), so that a figure can draw the
        numbers a verdict computed (a fit, an interval) instead of computing them again."""

    def config_table(self, df: Any) -> tuple[list[str], list[list[str]]]:
        """Per-configuration means over seeds for the report: (header, rows)."""


def _default_group_key(trial: Any) -> tuple:
    return (trial.family, trial.trial_id)


#: Where :class:`StudyPlugin` looks for a hook it was not given: hook -> (module of the study's
#: package, attribute). ``trainer`` and ``trial_config`` are required; a study without one of the
#: others takes the hook's default (see :class:`StudyPlugin`). What planning calls (grouping, cost,
#: memory, checks, step timing) is looked for in ``plan``, a light module: planning and ``--dry-run``
#: must not import the trainer's torch just to find a hook absent.
CONVENTION: dict[str, tuple[str, str]] = {
    "trial_config": ("config", "TrialConfig"),
    "trainer": ("trial", "run_group"),
    "grouper": ("plan", "group_key"),
    "models": ("trial", "untrained_model"),
    "tasks": ("trial", "task_family"),
    "step_timer": ("plan", "stack_step_seconds"),
    "step_counter": ("plan", "optimizer_steps"),
    "cost": ("plan", "job_cost"),
    "memory": ("plan", "trial_memory_bytes"),
    "checker": ("plan", "check_trials"),
    "rows": ("verdicts", "prepare_rows"),
    "figure_set": ("figures", "figures"),
    "table": ("table", "config_table"),
}
#: The module of a study's package where a claim's rule is ``<claim name>``, unless the claim names one.
RULES_MODULE = "verdicts"
_REQUIRED = ("trainer", "trial_config")


def _absolute(ref: Any, package: str | None) -> Any:
    """``".module:attr"`` relative to ``package`` -> ``"package.module:attr"``; anything else as is."""
    if isinstance(ref, str) and ref.startswith("."):
        if package is None:
            raise ValueError(f"relative reference {ref!r} needs the study's package (StudyPlugin(package=__name__))")
        return package + ref
    return ref


def _package_dir(package: str) -> Path:
    """The folder of ``package`` (being imported: its ``__init__`` is the caller)."""
    mod = sys.modules.get(package)
    if mod is not None and getattr(mod, "__file__", None):
        return Path(mod.__file__).parent
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise ValueError(f"{package!r} is not a package")
    return Path(next(iter(spec.submodule_search_locations)))


def _lookup(package: str, module: str, attr: str) -> Any:
    """``package.module.attr``, or None when the module or the attribute does not exist.

    An import error raised *inside* an existing module (a missing dependency, a bug) propagates.
    """
    name = f"{package}.{module}"
    try:
        mod = importlib.import_module(name)
    except ModuleNotFoundError as err:
        if err.name == name:
            return None
        raise
    return getattr(mod, attr, None)


@dataclass(frozen=True)
class StudyPlugin:
    """A :class:`Study` whose hooks are found by convention in its package, or given as lazy references.

    A study that follows the convention declares only what is its own::

        STUDY = StudyPlugin(name="toy", kind="toy", claims=CLAIMS, description="...", package=__name__)

    With ``package`` (the study's package, ``__name__`` in its ``__init__.py``) every hook left
    ``None`` is looked up, on first use, as :data:`CONVENTION` says (``trainer`` is
    ``<package>.trial.run_group``, ``cost`` is ``<package>.plan.job_cost``...), each claim without a
    rule gets ``<package>.verdicts.<claim name>``, relative references (``".lmtrial:check_trials"``)
    are taken relative to the package, and ``directory`` (where its YAML files are) defaults to the
    package's folder. A hook given explicitly overrides the convention.

    Hooks neither given nor found take a default: every trial its own job, cost ``steps`` per trial,
    256 MiB per trial, no extra checks, ok rows untouched, no figures, no config table.

    Raises:
        ValueError: claim names repeat; a relative reference without ``package``; no trainer given
            and no ``package`` to find one in.
        LookupError: (on use) a required hook (``trainer``, ``trial_config``) is neither given nor found.

    Optional hooks of the Python API (:mod:`bindscale.api`), none by default:
    ``models`` — ``function(trial, **model_kwargs) -> nn.Module``, the trial's untrained
    model (the one its trainer hands back with ``return_models=True``, before training;
    ``model_kwargs`` are those the trainer's results carry); ``tasks`` —
    ``function(trial, device) -> object``, what the trainer builds its data from. A trainer
    that can hand back its trained models takes a keyword argument ``return_models``.
    """

    name: str
    kind: str
    trial_config: Any = None  # a class or "module:Class"; None: <package>.config.TrialConfig
    claims: Sequence[Claim] = ()
    description: str = ""
    directory: Path | None = None  # where its YAML files are; None: the package's folder
    package: str | None = None  # the study's package: hooks, rules and YAML files by convention
    implicit_kind: bool = False
    headline: bool = False  # what `bindscale run` runs without a study name (first verdicts in minutes)
    #: The version of the study's results: bumped whenever a change to its code moves its numbers (its
    #: records carry the version they were made at; a published study made at an older version is
    #: stale, and ``tests/integration/test_result_versions.py`` fails until the bump is made).
    result_version: int = 1
    #: metric column -> (lowest, highest) value it can take (R² at most 1, a share in [0, 1]): a results table
    #: with a value outside makes every claim of the study inconclusive before its rule runs (percent units,
    #: a broken metric; :func:`bindscale.verdicts.engine.outside_range`). Empty: no check beyond the rules' own.
    metric_ranges: Mapping[str, tuple[float, float]] = field(default_factory=dict)
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
    #: machine (one thread); with it the planner sizes stacks by measurement (:func:`bindscale.run.planner.plan_jobs`),
    #: whether it is given here or found by convention (``plan.stack_step_seconds``; the transformer
    #: studies' timers time a stacked transformer, :func:`bindscale.train.stack.stack_step_seconds`).
    step_timer: Any = None
    #: ``function(trial) -> int``: optimizer steps of one trial where they are more than its progress unit
    #: (``steps``; e.g. pretraining and mask searches besides training); the GPU estimate counts them.
    step_counter: Any = None
    _found: dict = field(default_factory=dict, init=False, repr=False, compare=False)  # hook -> object

    def __post_init__(self) -> None:
        if self.trainer is None and self.package is None:
            raise ValueError(f"study {self.name}: a trainer (run_group) is required, or the package to find it in")
        names = [c.name for c in self.claims]
        if len(set(names)) != len(names):
            raise ValueError(f"study {self.name}: claim names repeat: {names}")
        pkg = self.package
        for hook in CONVENTION:
            object.__setattr__(self, hook, _absolute(getattr(self, hook), pkg))
        # Claims get absolute references now (the report resolves a claim's rule without its study).
        claims = tuple(replace(c, rule=_absolute(c.rule, pkg) if c.rule is not None else
                               (f"{pkg}.{RULES_MODULE}:{c.name}" if pkg else None),
                               guards=tuple(_absolute(g, pkg) for g in c.guards)) for c in self.claims)
        missing = [c.name for c in claims if c.rule is None]
        if missing:
            raise ValueError(f"study {self.name}: claims {missing} have no rule (give one, or the study's package)")
        object.__setattr__(self, "claims", claims)
        if self.directory is None and pkg is not None:
            object.__setattr__(self, "directory", _package_dir(pkg))

    def __getstate__(self) -> dict:
        # Resolved hooks stay behind (a worker resolves its own); only the references travel.
        return {**self.__dict__, "_found": {}}

    def hook(self, name: str) -> Any:
        """The object of hook ``name`` (a key of :data:`CONVENTION`): given, else found by convention, else None.

        Raises:
            LookupError: a required hook (``trainer``, ``trial_config``) is neither given nor found.
        """
        if name not in self._found:
            ref = getattr(self, name)
            if ref is not None:
                obj = resolve(ref)
            elif self.package is not None:
                obj = _lookup(self.package, *CONVENTION[name])
            else:
                obj = None
            if obj is None and name in _REQUIRED:
                module, attr = CONVENTION[name]
                raise LookupError(f"study {self.name}: no {name} given and no {self.package}.{module}.{attr}")
            self._found[name] = obj
        return self._found[name]

    # The config class is resolved on use: a plugin module may define it after STUDY.
    @property
    def trial_class(self) -> type:
        return self.hook("trial_config")

    def study_files(self) -> dict[str, Path]:
        if self.directory is None:
            return {}
        return {p.stem: p for p in sorted(Path(self.directory).glob("*.yaml"))}

    def group_key(self, trial: Any) -> tuple:
        grouper = self.hook("grouper")
        return grouper(trial) if grouper else _default_group_key(trial)

    def run_group(self, trials: list, device: str, progress: Callable[[int], None] | None = None,
                  return_models: bool = False) -> list:
        """Its trainer on ``trials``; ``return_models=True`` asks it for the trained models too
        (``TrialResult.model``; see :meth:`returns_models`)."""
        if not return_models:
            return self.hook("trainer")(trials, device, progress)
        if not self.returns_models():
            raise NotImplementedError(f"study {self.name}: its trainer cannot hand back trained models "
                                      "(no return_models argument)")
        return self.hook("trainer")(trials, device, progress, return_models=True)

    def returns_models(self) -> bool:
        """Whether its trainer takes ``return_models`` and it has a ``models`` builder (models can be
        returned, saved and rebuilt)."""
        import inspect

        if self.hook("models") is None:
            return False
        return "return_models" in inspect.signature(self.hook("trainer")).parameters

    def build_model(self, trial: Any, **model_kwargs: Any) -> Any:
        """The trial's untrained model (its ``models`` hook).

        Raises:
            NotImplementedError: the study has no ``models`` hook.
        """
        models = self.hook("models")
        if models is None:
            raise NotImplementedError(f"study {self.name} does not build models outside its trainer (no models hook)")
        return models(trial, **model_kwargs)

    def build_tasks(self, trial: Any, device: str = "cpu") -> Any:
        """What the trial's trainer builds its data from (its ``tasks`` hook).

        Raises:
            NotImplementedError: the study has no ``tasks`` hook.
        """
        tasks = self.hook("tasks")
        if tasks is None:
            raise NotImplementedError(f"study {self.name} does not expose its tasks (no tasks hook)")
        return tasks(trial, device)

    def steps(self, trial: Any) -> int:
        return int(trial.train.steps)

    def optimizer_steps(self, trial: Any) -> int:
        """Optimizer steps of one trial: its ``step_counter`` hook's count, else :meth:`steps`."""
        counter = self.hook("step_counter")
        return int(counter(trial)) if counter else self.steps(trial)

    def job_cost(self, job: list) -> float:
        cost = self.hook("cost")
        return float(cost(job)) if cost else float(sum(self.steps(t) for t in job))

    def trial_memory_bytes(self, trial: Any) -> int:
        memory = self.hook("memory")
        return int(memory(trial)) if memory else 256 << 20

    def stack_step_seconds(self, trials: list) -> float | None:
        """Measured seconds of one training step of ``trials`` stacked (None: the study has no step timer)."""
        timer = self.hook("step_timer")
        return float(timer(trials)) if timer else None

    def check_trials(self, trials: list) -> None:
        checker = self.hook("checker")
        if checker:
            checker(trials)

    def prepare_rows(self, df: Any) -> Any:
        from bindscale.core.rows import ok_rows

        rows = self.hook("rows")
        return rows(df) if rows else ok_rows(df)

    def figures(self, study: Mapping[str, Any] | None = None,
                verdicts: Sequence[Mapping[str, Any]] | None = None) -> dict[str, tuple[Callable, str]]:
        """Its figure set; the verdicts go to a figure set function that takes a ``verdicts`` argument."""
        import inspect

        make = self.hook("figure_set")
        if not make:
            return {}
        if verdicts is not None and "verdicts" in inspect.signature(make).parameters:
            return dict(make(study, verdicts=verdicts))
        return dict(make(study))

    def config_table(self, df: Any) -> tuple[list[str], list[list[str]]]:
        table = self.hook("table")
        return table(df) if table else ([], [])
