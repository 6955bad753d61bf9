"""Report of a run: verdicts, figures, ``report.html`` and ``summary.json``.

Input everywhere is the results table (``results.parquet``; one row per
trial) and the study config dict. ``compute_verdicts`` decides each claim;
``build_report`` writes the self-contained HTML page and the strict-JSON
summary.
"""

from bindscale.report.html import build_report
from bindscale.verdicts.engine import compute_verdicts

__all__ = ["build_report", "compute_verdicts"]
