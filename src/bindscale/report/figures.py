"""Plotting helpers shared by every study's figures, and the figure renderer.

A study's figures (its plugin's ``figures(study)``) map a name to a function of
the results table (all rows) returning a base64-encoded PNG, or None when its
data are missing. Error bars are 95% intervals of the mean over seeds
(``bindscale.stats.mean_ci``, Student t).

Figures are drawn on ``matplotlib.figure.Figure`` with the Agg canvas
directly, never through pyplot, so building a report touches no global
backend state (safe in workers and threads).
"""

from __future__ import annotations

import base64
import io
import json
import logging
import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from bindscale.stats import mean_ci

__all__ = ["render", "N_BOOT", "FIGSIZE"]

log = logging.getLogger(__name__)
N_BOOT = 1000  # error bars only; verdicts use their own, larger bootstrap
FIGSIZE = (6.0, 4.0)


# ----------------------------------------------------------------- helpers --

def _new_figure() -> tuple[Figure, Any]:
    fig = Figure(figsize=FIGSIZE, dpi=100, layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    ax.grid(True, alpha=0.3)
    return fig, ax


def _to_b64(fig: Figure) -> str:
    """Render a figure to PNG and return it base64-encoded (ASCII)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return base64.b64encode(buf.getvalue()).decode("ascii")


def _summary(rows: pd.DataFrame, by: str | list[str], col: str) -> pd.DataFrame:
    """Mean of ``col`` per group with bootstrap CI: columns by..., mean, lo, hi, n."""
    out = []
    for key, g in rows.groupby(by, sort=True):
        m, lo, hi = mean_ci(g[col], N_BOOT)
        key = key if isinstance(key, tuple) else (key,)
        out.append((*key, m, lo, hi, int(np.isfinite(g[col]).sum())))
    cols = ([by] if isinstance(by, str) else list(by)) + ["mean", "lo", "hi", "n"]
    return pd.DataFrame(out, columns=cols)


def _errorbar(ax: Any, x: Any, s: pd.DataFrame, **kw: Any) -> None:
    """Plot means with asymmetric CI error bars (NaN bounds draw no bar)."""
    yerr = np.vstack([s["mean"] - s["lo"], s["hi"] - s["mean"]])
    yerr = np.nan_to_num(np.clip(yerr, 0, None))
    ax.errorbar(x, s["mean"], yerr=yerr, marker="o", capsize=3, **kw)


def _log_x(ax: Any, values: Any, base: int = 2) -> None:
    """Log x axis with the actual values as tick labels when they are few."""
    vals = sorted(set(float(v) for v in values if np.isfinite(v) and v > 0))
    ax.set_xscale("log", base=base)
    if 1 < len(vals) <= 8:
        ax.set_xticks(vals)
        ax.set_xticklabels([f"{v:g}" for v in vals])
        ax.minorticks_off()


def _fixed(note: dict[str, Any]) -> list[str]:
    """Qualifiers naming the values a restriction held fixed: ['depth 3']."""
    return [f"{k.removesuffix('_used')} {v}" for k, v in note.items() if k.endswith("_used")]


def _title(ax: Any, main: str, quals: list[str]) -> None:
    """Title with its qualifiers (holdout, fixed depth...) on a smaller second line."""
    ax.set_title(main + (f"\n({', '.join(quals)})" if quals else ""), fontsize=11)


def _two(v: float) -> str:
    """Two decimals, or n/a for an undefined value."""
    return f"{v:.2f}" if math.isfinite(v) else "n/a"


def _as_list(v: Any) -> list[float] | None:
    """A curve cell (list, array, or JSON string) as a list of floats, or None."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return None
    if isinstance(v, str):
        try:
            v = json.loads(v)
        except ValueError:
            return None
    try:
        return [float(x) if x is not None else math.nan for x in v]
    except TypeError:
        return None


def render(figures: Mapping[str, tuple[Callable[..., str | None], str]], df: pd.DataFrame) -> dict[str, str | None]:
    """Draw every figure: name -> base64 PNG, or None when its data are missing or it raised.

    A figure that raises is logged and left out: one broken plot must not cost the whole report.
    """
    out: dict[str, str | None] = {}
    for name, (fn, _) in figures.items():
        try:
            out[name] = fn(df)
        except Exception:  # noqa: BLE001 - report degrades, it does not fail
            log.exception("figure %s failed", name)
            out[name] = None
    return out
