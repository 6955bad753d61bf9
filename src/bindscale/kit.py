"""The study author's kit: everything a study needs from bindscale's core, under public names.

A study (``bindscale/studies/<name>/`` or a third-party package, see :mod:`bindscale.core.registry`) imports
from here and from its own folder, never a private (underscore) name of the core::

    from bindscale.kit import Anchor, Claim, StudyPlugin         # __init__.py: the claims, their sources' anchors, the plugin
    from bindscale.kit import TrialBase, StrictModel             # config.py: the trial config
    from bindscale.kit import TrialResult                        # trial.py: one result per trial
    from bindscale.kit import Verdict, ok_rows, decide, ci_entry # verdicts.py: one rule per claim
    from bindscale.kit import new_figure, errorbar, to_base64    # figures.py

Names live where they always did (:mod:`bindscale.core.study`, :mod:`bindscale.verdicts.engine`,
:mod:`bindscale.report.figures`, :mod:`bindscale.train.loop`...); this module only re-exports them, with
the plotting and verdict helpers that are private there given public names here. What a study module
imports at registry time (``Claim``, ``StudyPlugin``, ``Verdict``, the outcomes, ``TrialBase``) is imported
now; the rest (pandas, matplotlib, torch behind it) is imported on first access, so that
``from bindscale.kit import Claim`` in a study's ``__init__.py`` keeps ``bindscale list`` fast.

Constants:
    ``SUPPORTED``, ``NOT_SUPPORTED``, ``INCONCLUSIVE``: the three outcomes of a :class:`Verdict`
    (``supported`` always means the cited source's claim holds).
    ``MISSING``: status of a planned trial that has no record (the guards see such rows).
    ``NAN3``: ``(nan, nan, nan)``, the interval of a verdict that has no number.
    ``MIN_REPLICATES``: fewest seeds a deciding cell may have for any verdict (3: a t interval needs a spread).
    ``CONCLUSIVE_SEEDS``: seeds per deciding cell below which a verdict carries a caveat (8).
    ``MIN_SEEDS``: default of every claim's ``min_seeds`` threshold, the share of a deciding cell's planned
    seeds that must be finite (0.75: 6 of 8); a rule names its deciding cells with ``deciding_cell``.
    ``SIDES``: side key -> words (a :class:`Claim`'s ``side``: which side of the question it bears on).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from bindscale.core.config import StrictModel, TrialBase
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
    # trial configs and results
    "StrictModel", "TrialBase", "TrialResult",
    # verdicts
    "Verdict", "SUPPORTED", "NOT_SUPPORTED", "INCONCLUSIVE", "MISSING", "NAN3", "MIN_REPLICATES",
    "CONCLUSIVE_SEEDS", "MIN_SEEDS", "deciding_cell", "gate_check", "at_bound", "no_room", "one_per_unit", "ok_rows", "coerce_numeric", "restrict_to_mode", "degenerate", "ci_entry", "json_key",
    "to_python", "decide", "decide_below", "finite_values", "pooled_columns",
    # figures
    "new_figure", "to_base64", "seed_summary", "summary_of", "error_lengths", "errorbar", "band", "ci_note",
    "legend", "titled", "count_label", "log_counts", "log_x", "fixed_qualifiers", "id_ood_spans",
    "two_decimals", "curve_values",
    # the report's per-configuration table
    "mean_table",
    # sequence-model training (shared by the transformer studies)
    "train_from_config", "fit_minibatches", "greedy_predictions", "batch_indices",
    # stacked sequence training: same-shape trials as one stacked transformer
    "train_stacked_from_config", "StackedTransformer",
]

#: Public name -> (module, name there), imported on first access (heavy dependencies behind them).
_LAZY: dict[str, tuple[str, str]] = {
    "TrialResult": ("bindscale.train.result", "TrialResult"),
    "MISSING": ("bindscale.verdicts.engine", "MISSING"),
    "NAN3": ("bindscale.verdicts.engine", "NAN3"),
    "MIN_REPLICATES": ("bindscale.verdicts.engine", "MIN_REPLICATES"),
    "CONCLUSIVE_SEEDS": ("bindscale.verdicts.engine", "CONCLUSIVE_SEEDS"),
    "MIN_SEEDS": ("bindscale.verdicts.engine", "MIN_SEEDS"),
    "deciding_cell": ("bindscale.verdicts.engine", "deciding_cell"),
    "gate_check": ("bindscale.verdicts.engine", "gate_check"),
    "at_bound": ("bindscale.verdicts.engine", "at_bound"),
    "no_room": ("bindscale.verdicts.engine", "no_room"),
    "one_per_unit": ("bindscale.core.rows", "one_per_unit"),
    "ok_rows": ("bindscale.core.rows", "ok_rows"),
    "coerce_numeric": ("bindscale.verdicts.engine", "coerce_numeric"),
    "restrict_to_mode": ("bindscale.verdicts.engine", "restrict_to_mode"),
    "degenerate": ("bindscale.verdicts.engine", "degenerate"),
    "ci_entry": ("bindscale.verdicts.engine", "_ci"),
    "json_key": ("bindscale.verdicts.engine", "_key"),
    "to_python": ("bindscale.verdicts.engine", "_py"),
    "decide": ("bindscale.verdicts.engine", "_decide"),
    "decide_below": ("bindscale.verdicts.engine", "_decide_below"),
    "finite_values": ("bindscale.verdicts.engine", "_finite"),
    "pooled_columns": ("bindscale.verdicts.engine", "_pooled"),
    "new_figure": ("bindscale.report.figures", "_new_figure"),
    "to_base64": ("bindscale.report.figures", "_to_b64"),
    "seed_summary": ("bindscale.report.figures", "_summary"),
    "summary_of": ("bindscale.report.figures", "_summary_of"),
    "error_lengths": ("bindscale.report.figures", "_yerr"),
    "errorbar": ("bindscale.report.figures", "_errorbar"),
    "band": ("bindscale.report.figures", "_band"),
    "ci_note": ("bindscale.report.figures", "_ci_note"),
    "legend": ("bindscale.report.figures", "_legend"),
    "titled": ("bindscale.report.figures", "_title"),
    "count_label": ("bindscale.report.figures", "_count"),
    "log_counts": ("bindscale.report.figures", "_log_counts"),
    "log_x": ("bindscale.report.figures", "_log_x"),
    "fixed_qualifiers": ("bindscale.report.figures", "_fixed"),
    "id_ood_spans": ("bindscale.report.figures", "_id_ood_spans"),
    "two_decimals": ("bindscale.report.figures", "_two"),
    "curve_values": ("bindscale.report.figures", "_as_list"),
    "mean_table": ("bindscale.report.html", "mean_table"),
    "train_from_config": ("bindscale.train.loop", "train_from_config"),
    "fit_minibatches": ("bindscale.train.loop", "fit_minibatches"),
    "greedy_predictions": ("bindscale.train.loop", "greedy_predictions"),
    "batch_indices": ("bindscale.train.loop", "batch_indices"),
    "train_stacked_from_config": ("bindscale.train.loop", "train_stacked_from_config"),
    "StackedTransformer": ("bindscale.models.stacked_transformer", "StackedTransformer"),
}

if TYPE_CHECKING:  # what type checkers and IDEs see (the same objects __getattr__ hands out)
    from bindscale.core.rows import ok_rows, one_per_unit
    from bindscale.report.html import mean_table
    from bindscale.report.figures import _as_list as curve_values
    from bindscale.report.figures import _band as band
    from bindscale.report.figures import _ci_note as ci_note
    from bindscale.report.figures import _count as count_label
    from bindscale.report.figures import _errorbar as errorbar
    from bindscale.report.figures import _fixed as fixed_qualifiers
    from bindscale.report.figures import _id_ood_spans as id_ood_spans
    from bindscale.report.figures import _legend as legend
    from bindscale.report.figures import _log_counts as log_counts
    from bindscale.report.figures import _log_x as log_x
    from bindscale.report.figures import _new_figure as new_figure
    from bindscale.report.figures import _summary as seed_summary
    from bindscale.report.figures import _summary_of as summary_of
    from bindscale.report.figures import _title as titled
    from bindscale.report.figures import _to_b64 as to_base64
    from bindscale.report.figures import _two as two_decimals
    from bindscale.report.figures import _yerr as error_lengths
    from bindscale.verdicts.engine import CONCLUSIVE_SEEDS, MIN_REPLICATES, MIN_SEEDS, MISSING, NAN3
    from bindscale.verdicts.engine import at_bound, deciding_cell
    from bindscale.verdicts.engine import coerce_numeric, degenerate, restrict_to_mode
    from bindscale.verdicts.engine import _ci as ci_entry
    from bindscale.verdicts.engine import _decide as decide
    from bindscale.verdicts.engine import _decide_below as decide_below
    from bindscale.verdicts.engine import _finite as finite_values
    from bindscale.verdicts.engine import _key as json_key
    from bindscale.verdicts.engine import _pooled as pooled_columns
    from bindscale.verdicts.engine import _py as to_python
    from bindscale.models.stacked_transformer import StackedTransformer
    from bindscale.train.loop import batch_indices, fit_minibatches, greedy_predictions, train_from_config
    from bindscale.train.loop import train_stacked_from_config
    from bindscale.train import TrialResult


def __getattr__(name: str) -> Any:
    try:
        module, attr = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    value = getattr(importlib.import_module(module), attr)
    globals()[name] = value  # the next access is a plain lookup
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
