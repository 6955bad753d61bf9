"""The study author's kit: everything a study needs from bindscale's core, under public names.

A study (``bindscale/studies/<name>/`` or a third-party package, see :mod:`bindscale.core.registry`) imports
bindscale from here (and the models from :mod:`bindscale.models`), never from a core module directly::

    from bindscale.kit import Anchor, Claim, StudyPlugin         # __init__.py: the claims, their sources' anchors, the plugin
    from bindscale.kit import TrialBase, StrictModel             # config.py: the trial config
    from bindscale.kit import ConfigError, stack_key             # plan.py: checks and stack grouping
    from bindscale.kit import TrialResult, rng, generator        # trial.py: one result per trial, seeded streams
    from bindscale.kit import Verdict, ok_rows, decide, mean_ci  # verdicts.py: one rule per claim
    from bindscale.kit import new_figure, errorbar, to_base64    # figures.py

Every name lives in its home module under the name it has here (:mod:`bindscale.core.study`,
:mod:`bindscale.verdicts.engine`, :mod:`bindscale.verdicts.stats`, :mod:`bindscale.report.figures`,
:mod:`bindscale.train.loop`, :mod:`bindscale.train.stack`...); this module only re-exports it, so that
a function has one address and a study one door. What a study module imports at registry time
(``Claim``, ``StudyPlugin``, ``Verdict``, the outcomes, ``TrialBase``, the errors) is imported now; the
rest (pandas, matplotlib, torch behind it) is imported on first access (:data:`_LAZY`), so that
``from bindscale.kit import Claim`` in a study's ``__init__.py`` keeps ``bindscale list`` fast.

A few shared modules are re-exported whole, under their own name, where a study reads a family of names
through one namespace (``from bindscale.kit import scan``, then ``scan.make_split(...)``, ``scan.SPLITS``):
:data:`_MODULES` maps each to its home module, imported on first access like :data:`_LAZY`'s names.

Modules:
    ``scan``: SCAN (Lake & Baroni 2018) generated from its grammar, its splits, the SCAN / COGS file loaders
    and its ``task`` config section (:mod:`bindscale.train.scan`), shared by the SCAN studies (``depth``,
    ``binding_scan``); the sequence-task helpers they train and score with are exported by name
    (``Vocab``, ``ScanData``, ``scan_data``, ``pack_pairs``, ``score_pairs``, ``token_accuracy``,
    ``acc_by_length``, ``scan_result``: :mod:`bindscale.train.seqdata`).

Constants:
    ``SUPPORTED``, ``NOT_SUPPORTED``, ``INCONCLUSIVE``: the three outcomes of a :class:`Verdict`
    (``supported`` always means the cited source's claim holds).
    ``MISSING``: status of a planned trial that has no record (the guards see such rows).
    ``NAN3``: ``(nan, nan, nan)``, the interval of a verdict that has no number.
    ``MIN_REPLICATES``: fewest seeds a deciding cell may have for any verdict (3: a t interval needs a spread).
    ``CONCLUSIVE_SEEDS``: seeds per deciding cell below which a verdict carries a caveat (8).
    ``MIN_SEEDS``: default of every claim's ``min_seeds`` threshold, the share of a deciding cell's planned
    seeds that must be finite (0.75: 6 of 8); a rule names its deciding cells with ``deciding_cell``.
    ``EXACT_MATCH_BAND``: the band around 0 and 1 within which two arms' exact-match shares measure the bound,
    not the models (0.02: 6 of 300 test examples; ``at_bound``'s ``band``).
    ``SIDES``: side key -> words (a :class:`Claim`'s ``side``: which side of the question it bears on).
    ``FIGSIZE``: a report figure's size in inches (6 x 4, at 100 dpi); ``SMALL``: font size of legends and
    in-axes labels (8); ``ID_COLOUR``, ``OOD_COLOUR``: colours of the in- and out-of-distribution spans;
    ``N_BOOT``: bootstrap resamples a figure asks an interval for (1000).
    ``PAD_ID``: the padding token id of the sequence trainer (0; sequences are right-padded with it).
    ``ALIGN``: elements per 64-byte cache line of fp32, the fused AdamW kernel's work unit (16).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from bindscale.core.config import (
    StrictModel,
    TrialBase,
    data_location_field,
    id_neutral_field,
    keep_own_kind_fields,
    model_kind,
)
from bindscale.core.errors import BindscaleError, ConfigError, SplitError
from bindscale.core.study import (
    INCONCLUSIVE,
    NOT_SUPPORTED,
    SIDES,
    SUPPORTED,
    Anchor,
    Claim,
    Gate,
    Study,
    StudyPlugin,
    Verdict,
)

__all__ = [
    # the plugin and its claims
    "Anchor", "Claim", "Gate", "Study", "StudyPlugin", "SIDES",
    # errors a user can fix (the CLI prints them as one line)
    "BindscaleError", "ConfigError", "SplitError",
    # trial configs and results
    "StrictModel", "TrialBase", "TrialResult", "keep_own_kind_fields", "model_kind", "data_location_field",
    "id_neutral_field",
    "SeqTrainConfig", "TransformerConfig", "PositionalTransformerConfig",
    # independent random streams per trial
    "stream_seed", "rng", "generator",
    # verdicts
    "Verdict", "SUPPORTED", "NOT_SUPPORTED", "INCONCLUSIVE", "MISSING", "NAN3", "MIN_REPLICATES",
    "CONCLUSIVE_SEEDS", "MIN_SEEDS", "deciding_cell", "gate_check", "gate_filter", "needed_seeds", "at_bound",
    "EXACT_MATCH_BAND", "no_room", "mixed_recipes", "distinct_settings", "outside_range", "param_count_mismatch", "one_per_unit",
    "ok_rows", "coerce_numeric", "restrict_to_mode", "degenerate", "ci_entry", "json_key", "to_python", "decide",
    "decide_below", "finite_values", "pooled_columns",
    # intervals
    "mean_ci", "mean_diff_ci", "strata_mean_ci", "bounded_strata_mean_ci", "bounded_mean_ci", "bootstrap_ci", "correlation_ci", "partial_spearman_within",
    "within_bounds",
    # the results table's keyed-table and list cells
    "metric_table", "metric_items",
    # figures
    "FIGSIZE", "SMALL", "ID_COLOUR", "OOD_COLOUR", "N_BOOT",
    "new_figure", "to_base64", "seed_summary", "summary_of", "error_lengths", "errorbar", "band", "ci_note",
    "legend", "titled", "count_label", "log_counts", "log_x", "fixed_qualifiers", "id_ood_spans",
    "two_decimals", "curve_values",
    # numbers in words, the report's per-configuration table
    "fmt", "mean_table",
    # sequence-model training (shared by the transformer studies)
    "PAD_ID", "pack_sequences", "seq_loss", "train_from_config", "fit_minibatches", "greedy_predictions",
    "batch_indices",
    # stacked sequence training: same-shape trials as one stacked transformer
    "stack_key", "Prepared", "run_alone", "run_group", "hook_model", "stack_step_seconds",
    "train_stacked_from_config", "StackedTransformer",
    # a study's own stacked students: the per-trial AdamW and the speed settings (bindscale.train.speed)
    "StackedAdamW", "ALIGN", "training_settings", "training_precision", "measured_threads", "step_timer",
    "helper_thread_settings",
    # SCAN, shared by the SCAN studies: the module (_MODULES), its task section and the sequence-task helpers
    "scan", "ScanTaskConfig", "Vocab", "ScanData", "scan_data", "pack_pairs", "score_pairs", "token_accuracy",
    "acc_by_length", "scan_result",
]

#: Public name -> its home module, imported on first access (heavy dependencies behind most of them).
#: Every name is the one it has at home: the kit renames nothing.
_LAZY: dict[str, str] = {
    "TrialResult": "bindscale.train.result",
    "SeqTrainConfig": "bindscale.train.sections",
    "TransformerConfig": "bindscale.train.sections",
    "PositionalTransformerConfig": "bindscale.train.sections",
    "stream_seed": "bindscale.core.seeding",
    "rng": "bindscale.core.seeding",
    "generator": "bindscale.core.seeding",
    "one_per_unit": "bindscale.core.rows",
    "ok_rows": "bindscale.core.rows",
    "fmt": "bindscale.core.fmt",
    "MISSING": "bindscale.verdicts.engine",
    "NAN3": "bindscale.verdicts.engine",
    "MIN_REPLICATES": "bindscale.verdicts.engine",
    "CONCLUSIVE_SEEDS": "bindscale.verdicts.engine",
    "MIN_SEEDS": "bindscale.verdicts.engine",
    "deciding_cell": "bindscale.verdicts.engine",
    "gate_check": "bindscale.verdicts.engine",
    "gate_filter": "bindscale.verdicts.engine",
    "needed_seeds": "bindscale.verdicts.engine",
    "at_bound": "bindscale.verdicts.engine",
    "EXACT_MATCH_BAND": "bindscale.verdicts.engine",
    "no_room": "bindscale.verdicts.engine",
    "mixed_recipes": "bindscale.verdicts.engine",
    "distinct_settings": "bindscale.verdicts.engine",
    "outside_range": "bindscale.verdicts.engine",
    "param_count_mismatch": "bindscale.verdicts.engine",
    "coerce_numeric": "bindscale.verdicts.engine",
    "restrict_to_mode": "bindscale.verdicts.engine",
    "degenerate": "bindscale.verdicts.engine",
    "ci_entry": "bindscale.verdicts.engine",
    "json_key": "bindscale.verdicts.engine",
    "to_python": "bindscale.verdicts.engine",
    "decide": "bindscale.verdicts.engine",
    "decide_below": "bindscale.verdicts.engine",
    "finite_values": "bindscale.verdicts.engine",
    "pooled_columns": "bindscale.verdicts.engine",
    "mean_ci": "bindscale.verdicts.stats",
    "mean_diff_ci": "bindscale.verdicts.stats",
    "strata_mean_ci": "bindscale.verdicts.stats",
    "bounded_strata_mean_ci": "bindscale.verdicts.stats",
    "bounded_mean_ci": "bindscale.verdicts.stats",
    "bootstrap_ci": "bindscale.verdicts.stats",
    "correlation_ci": "bindscale.verdicts.stats",
    "partial_spearman_within": "bindscale.verdicts.stats",
    "within_bounds": "bindscale.verdicts.stats",
    "metric_table": "bindscale.verdicts.results_table",
    "metric_items": "bindscale.verdicts.results_table",
    "FIGSIZE": "bindscale.report.figures",
    "SMALL": "bindscale.report.figures",
    "ID_COLOUR": "bindscale.report.figures",
    "OOD_COLOUR": "bindscale.report.figures",
    "N_BOOT": "bindscale.report.figures",
    "new_figure": "bindscale.report.figures",
    "to_base64": "bindscale.report.figures",
    "seed_summary": "bindscale.report.figures",
    "summary_of": "bindscale.report.figures",
    "error_lengths": "bindscale.report.figures",
    "errorbar": "bindscale.report.figures",
    "band": "bindscale.report.figures",
    "ci_note": "bindscale.report.figures",
    "legend": "bindscale.report.figures",
    "titled": "bindscale.report.figures",
    "count_label": "bindscale.report.figures",
    "log_counts": "bindscale.report.figures",
    "log_x": "bindscale.report.figures",
    "fixed_qualifiers": "bindscale.report.figures",
    "id_ood_spans": "bindscale.report.figures",
    "two_decimals": "bindscale.report.figures",
    "curve_values": "bindscale.report.figures",
    "mean_table": "bindscale.report.html",
    "PAD_ID": "bindscale.train.loop",
    "pack_sequences": "bindscale.train.loop",
    "seq_loss": "bindscale.train.loop",
    "train_from_config": "bindscale.train.loop",
    "fit_minibatches": "bindscale.train.loop",
    "greedy_predictions": "bindscale.train.loop",
    "batch_indices": "bindscale.train.loop",
    "train_stacked_from_config": "bindscale.train.loop",
    "stack_key": "bindscale.train.stack",
    "Prepared": "bindscale.train.stack",
    "run_alone": "bindscale.train.stack",
    "run_group": "bindscale.train.stack",
    "hook_model": "bindscale.train.stack",
    "stack_step_seconds": "bindscale.train.stack",
    "StackedTransformer": "bindscale.models.stacked_transformer",
    "StackedAdamW": "bindscale.train.stacked_adamw",
    "ALIGN": "bindscale.train.stacked_adamw",
    "training_settings": "bindscale.train.speed",
    "training_precision": "bindscale.train.speed",
    "measured_threads": "bindscale.train.speed",
    "step_timer": "bindscale.train.speed",
    "helper_thread_settings": "bindscale.train.speed",
    "ScanTaskConfig": "bindscale.train.scan",
    "Vocab": "bindscale.train.seqdata",
    "ScanData": "bindscale.train.seqdata",
    "scan_data": "bindscale.train.seqdata",
    "pack_pairs": "bindscale.train.seqdata",
    "score_pairs": "bindscale.train.seqdata",
    "token_accuracy": "bindscale.train.seqdata",
    "acc_by_length": "bindscale.train.seqdata",
    "scan_result": "bindscale.train.seqdata",
}

#: Public name -> a whole module re-exported under it (its own name at home), imported on first access: for
#: a shared module a study reads through one namespace (``scan.make_split``, ``scan.SPLITS``, ``scan.Pair``).
_MODULES: dict[str, str] = {
    "scan": "bindscale.train.scan",
}

if TYPE_CHECKING:  # what type checkers and IDEs see: exactly the objects __getattr__ hands out (_LAZY, _MODULES)
    from bindscale.core.fmt import fmt
    from bindscale.core.rows import ok_rows, one_per_unit
    from bindscale.core.seeding import generator, rng, stream_seed
    from bindscale.models.stacked_transformer import StackedTransformer
    from bindscale.report.figures import (
        FIGSIZE,
        ID_COLOUR,
        N_BOOT,
        OOD_COLOUR,
        SMALL,
        band,
        ci_note,
        count_label,
        curve_values,
        error_lengths,
        errorbar,
        fixed_qualifiers,
        id_ood_spans,
        legend,
        log_counts,
        log_x,
        new_figure,
        seed_summary,
        summary_of,
        titled,
        to_base64,
        two_decimals,
    )
    from bindscale.report.html import mean_table
    from bindscale.train import scan
    from bindscale.train.loop import (
        PAD_ID,
        batch_indices,
        fit_minibatches,
        greedy_predictions,
        pack_sequences,
        seq_loss,
        train_from_config,
        train_stacked_from_config,
    )
    from bindscale.train.result import TrialResult
    from bindscale.train.scan import ScanTaskConfig
    from bindscale.train.sections import (
        PositionalTransformerConfig,
        SeqTrainConfig,
        TransformerConfig,
    )
    from bindscale.train.seqdata import (
        ScanData,
        Vocab,
        acc_by_length,
        pack_pairs,
        scan_data,
        scan_result,
        score_pairs,
        token_accuracy,
    )
    from bindscale.train.speed import (
        helper_thread_settings,
        measured_threads,
        step_timer,
        training_precision,
        training_settings,
    )
    from bindscale.train.stack import (
        Prepared,
        hook_model,
        run_alone,
        run_group,
        stack_key,
        stack_step_seconds,
    )
    from bindscale.train.stacked_adamw import ALIGN, StackedAdamW
    from bindscale.verdicts.engine import (
        CONCLUSIVE_SEEDS,
        EXACT_MATCH_BAND,
        MIN_REPLICATES,
        MIN_SEEDS,
        MISSING,
        NAN3,
        at_bound,
        ci_entry,
        coerce_numeric,
        decide,
        decide_below,
        deciding_cell,
        distinct_settings,
        degenerate,
        finite_values,
        gate_check,
        gate_filter,
        json_key,
        mixed_recipes,
        needed_seeds,
        no_room,
        outside_range,
        param_count_mismatch,
        pooled_columns,
        restrict_to_mode,
        to_python,
    )
    from bindscale.verdicts.results_table import metric_items, metric_table
    from bindscale.verdicts.stats import (
        bootstrap_ci,
        bounded_mean_ci,
        bounded_strata_mean_ci,
        correlation_ci,
        mean_ci,
        mean_diff_ci,
        partial_spearman_within,
        strata_mean_ci,
        within_bounds,
    )


def __getattr__(name: str) -> Any:
    if name in _MODULES:  # a whole module (``from bindscale.kit import scan``)
        value = importlib.import_module(_MODULES[name])
        globals()[name] = value
        return value
    try:
        module = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # the next access is a plain lookup
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
