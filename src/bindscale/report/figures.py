"""Plotting helpers shared by every study's figures, and the figure renderer.

A study's figures (its plugin's ``figures(study, verdicts)``) map a name to a
function of the results table (all rows) returning a base64-encoded PNG, or
None when its data are missing. The report hands the figure set its verdict
dicts, so that a figure draws a number a verdict computed (a fit, a bootstrap
interval) instead of computing it again: it never shows another value than
the verdict prints. Conventions every figure follows, so that
figures of different studies read alike:

- every plotted mean over seeds carries its 95% Student t interval
  (``bindscale.verdicts.stats.mean_ci``) as an error bar or band, and the figure says how
  many seeds (:func:`ci_note`);
- legends sit outside the axes, below them (:func:`legend`), in font size 8;
- an axis of problem size or depth with an in-distribution range shades it and the
  out-of-distribution range beyond it, each labelled (:func:`id_ood_spans`);
- axes are labelled in words with units, never with a raw column name.

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
from matplotlib.transforms import blended_transform_factory

from bindscale.verdicts.stats import mean_ci

__all__ = ["render", "N_BOOT", "FIGSIZE", "SMALL", "ID_COLOUR", "OOD_COLOUR", "CI_WORDS", "new_figure", "to_base64",
           "seed_summary", "summary_of", "error_lengths", "errorbar", "band", "ci_note", "legend", "id_ood_spans",
           "count_label", "log_counts", "log_x", "fixed_qualifiers", "titled", "two_decimals", "curve_values"]

log = logging.getLogger(__name__)
N_BOOT = 1000  # unused by the t intervals of the error bars; kept for callers' signatures
FIGSIZE = (6.0, 4.0)
#: Font size of legends and in-axes labels (the report shows figures about 576 px wide: no smaller).
SMALL = 8
#: Colours of the in- and out-of-distribution spans.
ID_COLOUR, OOD_COLOUR = "tab:green", "tab:red"
#: What the interval of every plotted mean is, for titles and captions.
CI_WORDS = "mean ± 95% t interval over seeds"


# ----------------------------------------------------------------- helpers --

def new_figure() -> tuple[Figure, Any]:
    """A new report-sized figure (:data:`FIGSIZE` inches at 100 dpi, constrained layout) and its one axes.

    Uses matplotlib's object API with the Agg canvas (no pyplot state: safe in worker threads).
    Output: ``(figure, axes)``; render it with :func:`to_base64`.
    """
    fig = Figure(figsize=FIGSIZE, dpi=100, layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    ax.grid(True, alpha=0.3)
    return fig, ax


def to_base64(fig: Figure) -> str:
    """Render a figure to PNG and return it base64-encoded (ASCII)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return base64.b64encode(buf.getvalue()).decode("ascii")


def seed_summary(rows: pd.DataFrame, by: str | list[str], col: str) -> pd.DataFrame:
    """Mean of ``col`` per group with its Student t 95% interval: columns by..., mean, lo, hi, n."""
    out = []
    for key, g in rows.groupby(by, sort=True):
        m, lo, hi = mean_ci(g[col], N_BOOT)
        key = key if isinstance(key, tuple) else (key,)
        out.append((*key, m, lo, hi, int(np.isfinite(pd.to_numeric(g[col], errors="coerce")).sum())))
    cols = ([by] if isinstance(by, str) else list(by)) + ["mean", "lo", "hi", "n"]
    return pd.DataFrame(out, columns=cols)


def summary_of(values: Mapping[Any, Any], key: str = "x") -> pd.DataFrame:
    """Mean and Student t 95% interval of each list in ``values`` (x -> values over seeds): columns key, mean, lo, hi, n.

    Rows in the order of sorted x; an x without a finite value is left out.
    """
    out = []
    for x in sorted(values):
        v = np.asarray([float(u) for u in values[x]], dtype=float)
        v = v[np.isfinite(v)]
        if v.size:
            out.append((x, *mean_ci(v), int(v.size)))
    return pd.DataFrame(out, columns=[key, "mean", "lo", "hi", "n"])


def error_lengths(s: pd.DataFrame, bounds: tuple[float, float] | None = None) -> np.ndarray:
    """Asymmetric error-bar lengths from columns mean, lo, hi (NaN bounds draw no bar).

    ``bounds``: the range the quantity can take (a share: (0, 1)); the interval is drawn clipped to it.
    """
    lo, hi = s["lo"].to_numpy(float), s["hi"].to_numpy(float)
    if bounds is not None:
        lo, hi = np.clip(lo, *bounds), np.clip(hi, *bounds)
    yerr = np.vstack([s["mean"].to_numpy(float) - lo, hi - s["mean"].to_numpy(float)])
    return np.nan_to_num(np.clip(yerr, 0, None))


def errorbar(ax: Any, x: Any, s: pd.DataFrame, bounds: tuple[float, float] | None = None, **kw: Any) -> Any:
    """Plot means with their asymmetric 95% interval as error bars (NaN bounds draw no bar)."""
    if "fmt" not in kw:
        kw.setdefault("marker", "o")
    kw.setdefault("capsize", 3)
    return ax.errorbar(x, s["mean"], yerr=error_lengths(s, bounds), **kw)


def band(ax: Any, x: Any, s: pd.DataFrame, bounds: tuple[float, float] | None = None, **kw: Any) -> None:
    """Plot means as a line with their 95% interval as a shaded band (for dense x, e.g. training steps)."""
    (line,) = ax.plot(x, s["mean"], **kw)
    lo, hi = s["lo"].to_numpy(float), s["hi"].to_numpy(float)
    if bounds is not None:
        lo, hi = np.clip(lo, *bounds), np.clip(hi, *bounds)
    ok = np.isfinite(lo) & np.isfinite(hi)
    ax.fill_between(np.asarray(x, dtype=float)[ok], lo[ok], hi[ok], color=line.get_color(), alpha=0.2, lw=0)


def _n_seeds(ns: Any) -> str:
    """'n = 8' or 'n = 4–8' for the seeds behind each plotted mean."""
    ns = [int(n) for n in np.ravel(np.asarray(ns, dtype=float)) if np.isfinite(n) and n > 0]
    if not ns:
        return "n = 0"
    lo, hi = min(ns), max(ns)
    return f"n = {lo}" if lo == hi else f"n = {lo}–{hi}"


def ci_note(ns: Any, over: str = "seeds") -> str:
    """Title qualifier saying what the error bars are: 'mean ± 95% t interval over seeds, n = 8'.

    ``over``: what a mean is over, when not seeds alone (e.g. 'seeds × hold-outs', 'base models').
    """
    return f"{CI_WORDS.replace('seeds', over)}, {_n_seeds(ns)}"


def legend(ax: Any, ncol: int | None = None, handles: list | None = None, labels: list | None = None,
            title: str | None = None) -> None:
    """The legend below the axes (outside them: it never covers a point), font size :data:`SMALL`.

    The figure grows taller by the legend's height, so the axes keep their size and the figure its
    width (the report shows figures at a fixed width: a wider figure would shrink every font).
    ``ncol``: columns (default 3), fewer where they would not fit the figure's width.
    """
    fig = ax.figure
    if handles is None:
        handles, labels = ax.get_legend_handles_labels()
    if not handles:
        return
    w, h = fig.get_size_inches()
    renderer = fig.canvas.get_renderer()
    cols = ncol or min(3, len(handles))
    while True:
        leg = fig.legend(handles, labels, loc="outside lower center", ncol=cols, fontsize=SMALL,
                         title=title, title_fontsize=SMALL, frameon=False)
        box = leg.get_window_extent(renderer)
        if cols == 1 or box.width <= 0.98 * w * fig.dpi:
            break
        leg.remove()
        cols -= 1
    fig.set_size_inches(w, h + box.height / fig.dpi + 0.05)


def id_ood_spans(ax: Any, boundary: float, in_label: str = "in distribution",
                  out_label: str = "out of distribution") -> None:
    """Shade the x range up to ``boundary`` (in distribution) and beyond it (out of distribution).

    Each span is labelled at the top inside the axes (callers leave head room above their data,
    e.g. ``ylim`` up to 1.2 for an accuracy); a dotted line marks the boundary. Call after plotting:
    the spans cover the current x limits, which are kept.
    """
    lo, hi = ax.get_xlim()
    trans = blended_transform_factory(ax.transData, ax.transAxes)
    for a, b, colour, label in ((lo, min(boundary, hi), ID_COLOUR, in_label),
                                (max(boundary, lo), hi, OOD_COLOUR, out_label)):
        if b > a:
            ax.axvspan(a, b, color=colour, alpha=0.08, lw=0, zorder=0)
            ax.text((a + b) / 2, 0.985, label, transform=trans, ha="center", va="top", fontsize=SMALL,
                    color=colour, fontweight="bold")
    if lo < boundary < hi:
        ax.axvline(boundary, color="grey", ls=":", lw=1, zorder=1)
    ax.set_xlim(lo, hi)


def count_label(v: float) -> str:
    """A count for a tick label: 950, 26.6k, 1.2M."""
    for div, suffix in ((1e6, "M"), (1e3, "k")):
        if abs(v) >= div:
            return f"{v / div:.3g}{suffix}"
    return f"{v:g}"


def log_counts(ax: Any, values: Any) -> None:
    """Log x axis of counts (parameters) with the actual values as tick labels (26.6k, 101k) when few."""
    vals = sorted(set(float(v) for v in values if np.isfinite(v) and v > 0))
    ax.set_xscale("log")
    if 1 <= len(vals) <= 8:
        ax.set_xticks(vals, [count_label(v) for v in vals])
        ax.minorticks_off()


def log_x(ax: Any, values: Any, base: int = 2) -> None:
    """Log x axis with the actual values as tick labels when they are few."""
    vals = sorted(set(float(v) for v in values if np.isfinite(v) and v > 0))
    ax.set_xscale("log", base=base)
    if 1 < len(vals) <= 8:
        ax.set_xticks(vals)
        ax.set_xticklabels([f"{v:g}" for v in vals])
        ax.minorticks_off()


def fixed_qualifiers(note: dict[str, Any]) -> list[str]:
    """Qualifiers naming the values a restriction held fixed: ['depth 3']."""
    return [f"{k.removesuffix('_used')} {v}" for k, v in note.items() if k.endswith("_used")]


def titled(ax: Any, main: str, quals: list[str]) -> None:
    """Title with its qualifiers (holdout, fixed depth, what the error bars are...) in parentheses below
    it, wrapped to the figure's width."""
    lines: list[str] = []
    for q in quals:  # break between qualifiers, never inside one
        if lines and len(lines[-1]) + len(q) + 2 <= 66:
            lines[-1] += f", {q}"
        else:
            lines.append(q)
    quals_text = ",\n".join(lines)
    ax.set_title(main + (f"\n({quals_text})" if quals_text else ""), fontsize=11)


def two_decimals(v: float) -> str:
    """Two decimals, or n/a for an undefined value."""
    return f"{v:.2f}" if math.isfinite(v) else "n/a"


def curve_values(v: Any) -> list[float] | None:
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
