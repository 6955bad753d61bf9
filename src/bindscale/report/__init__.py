"""The report wing: what a reader sees of a run.

Lives here: each study's page (``report.html``) and ``summary.json`` (:mod:`.html`, with the figure helpers
of :mod:`.figures` and readable labels of :mod:`.text`), the headless-browser layout check (:mod:`.browser`),
the answer page over every study (:mod:`.answer`) and publishing it into the repository (:mod:`.publish`).
Input everywhere is the results table (``results.parquet``; one row per trial) and the study config dict.

May import: every wing below it (core, models, train, store, verdicts). Nothing is imported here on import of
the package: ``build_report`` (pandas, matplotlib behind it) loads on first use, so that the CLI's refusals
that only need the answer or publish modules stay fast.
"""

from __future__ import annotations

from typing import Any

__all__ = ["build_report"]


def __getattr__(name: str) -> Any:
    if name == "build_report":
        from bindscale.report.html import build_report

        return build_report
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
