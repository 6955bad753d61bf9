"""Report of a run: verdicts, figures, ``report.html`` and ``summary.json``.

Input everywhere is the results table (``results.parquet``; one row per
trial) and the study config dict. Each claim is decided by
:func:`bindscale.verdicts.engine.compute_verdicts` (the verdicts wing);
``build_report`` writes the self-contained HTML page and the strict-JSON
summary.
"""

from bindscale.report.html import build_report

__all__ = ["build_report"]
