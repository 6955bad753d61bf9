"""Figures of the ``ceiling`` study: satisfaction, feasibility and optimality gap against parameters (and data).

Each figure function takes the results table and returns a base64 PNG, or None when its data are missing.
Plotted means are over seeds with their 95% Student t interval (:func:`bindscale.kit.seed_summary`).

- ``ceiling_feas_vs_params``: test feasibility (the verdict's metric, the source's kind:
  :data:`.verdicts.VERDICT_METRIC`) against non-embedding parameters, one colour per family (the size sweep of
  :func:`.verdicts.size_sweep`), both fits drawn (solid: saturating ``a - b·N^-c``, dashed: power law
  ``1 - b·N^-c``), and real-model points (``model.kind: lm``) as stars at their parameter count (at the right
  edge when unknown). Each family's verdict metric (knapsack's optimal rate beside its feasibility, hollow
  squares) carries the verdict's own fit and its asymptote interval, as printed, as a band at the right: the
  report hands them over (:func:`figures`), so the figure neither refits them nor can show another interval.
  Metrics the verdict does not fit (knapsack feasibility) get fits without a bootstrap, and no band.
- ``ceiling_sat_vs_params``: test constraint satisfaction (bindscale's per-constraint share, the metric the
  hypothesis names; not the verdict's) the same way, with fits without a bootstrap and no band.
- ``ceiling_gap_vs_params``: optimality gap among feasible answers, without fits.
  Satisfaction and feasibility figures draw the uniform-random answers' level per family on the same test
  instances (dotted; a trial's ``random_<metric>_<family>`` column, else :mod:`.baselines`) and the
  hypothesised 55–60% (grey); fitted curves stop at the largest model of the sweep (no extrapolation drawn). The
  satisfaction caption states the metric definitions, the prompt and the parse rule (:data:`DEFINITIONS`).
- ``ceiling_sat_vs_data``: satisfaction against training instances per family at the budget with most
  training-set sizes, both fits drawn.
- ``ceiling_by_difficulty``: satisfaction, feasibility and optimality gap (rows) against the difficulty knob
  per family (columns), one line per model size of the size sweep, from each trial's ``by_difficulty`` table
  (test difficulties, then the held-out one, shaded); None (no figure) when no trial has that table.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any

import numpy as np
import pandas as pd

from matplotlib import colormaps
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from bindscale.kit import (
    ci_note,
    count_label,
    errorbar,
    id_ood_spans,
    legend,
    new_figure,
    seed_summary,
    titled,
    to_base64,
    metric_items,
    FIGSIZE,
    SMALL,
)

from . import CLAIMS
from .fits import compare, power_law, saturating
from .problems import FAMILIES
from .verdicts import (VERDICT_METRIC, _lm_name, constraint_satisfaction_plateaus, prepare_rows, size_sweep,
                       trained_rows)

#: The claim whose verdict's fits the satisfaction figure draws.
CLAIM = CLAIMS[0]

TITLES = {"sat": "Constraint satisfaction", "feas": "Feasibility", "gap": "Optimality gap"}
#: Rows of the by-difficulty figure: the metrics, then the share of unparsable answers beside them.
DIFFICULTY_ROWS = {**TITLES, "unparsable": "Unparsable answers"}
COLOURS = {"colouring": "tab:blue", "knapsack": "tab:orange", "assignment": "tab:green"}
METRIC_WORDS = {"sat": "satisfaction", "optimal": "optimal rate"}
LABELS = {"sat": "test constraint satisfaction (share of constraints met)",
          "feas": "test feasibility (share of answers meeting every constraint)",
          "gap": "optimality gap among feasible answers (|f - f*| / f*)"}


def _x(rows: pd.DataFrame) -> str:
    return "n_params_nonembed" if "n_params_nonembed" in rows and rows["n_params_nonembed"].notna().all() else "budget"


def verdict_fits(verdicts: Sequence[Mapping[str, Any]] | None) -> dict | None:
    """Per family, the fit the report's verdict made of its verdict metric (``details["by_family"]`` of
    :func:`.verdicts.constraint_satisfaction_plateaus`: curve parameters, ``x_min``, the asymptote interval as
    printed); None when ``verdicts`` holds no verdict of :data:`CLAIM`."""
    for v in verdicts or ():
        if v.get("claim") in (CLAIM.name, *CLAIM.aliases):
            return dict((v.get("details") or {}).get("by_family") or {})
    return None


def rule_fits(df: pd.DataFrame, thresholds: Mapping[str, float] | None = None) -> dict:
    """The same per-family fits computed from the table by the verdict rule itself (a figure drawn without the
    report's verdict), with the claim's default thresholds under ``thresholds``."""
    rows = prepare_rows(df) if len(df) else df
    if rows.empty:
        return {}
    return constraint_satisfaction_plateaus(rows, {**CLAIM.defaults, **(thresholds or {})}).details.get("by_family") or {}


#: How far past the largest model a fitted curve is drawn (a factor on the x axis: no extrapolation shown).
CURVE_END = 1.0


def random_level(rows: pd.DataFrame, family: str, metric: str) -> float:
    """The uniform-random answers' ``metric`` on the family's test instances: the ``random_{metric}_{family}``
    column a trained trial records, else recomputed from the sweep's task columns (:func:`.baselines.baselines`);
    NaN when neither is available."""
    col = f"random_{metric}_{family}"
    if col in rows:
        v = pd.to_numeric(rows[col], errors="coerce").dropna()
        if len(v):
            return float(v.iloc[0])
    task = []
    for c in ("task.max_difficulty", "task.n_test", "task.eval_seed"):
        v = pd.to_numeric(rows[c], errors="coerce").dropna() if c in rows else pd.Series(dtype=float)
        task.append(v.mode().iloc[0] if len(v) else math.nan)
    if not np.isfinite(task).all() or family not in FAMILIES:
        return math.nan
    from .baselines import baselines

    return float(baselines(family, *(int(v) for v in task))["random"].get(metric, math.nan))


def _draw_curves(ax, xs: pd.Series, x_min: float, sat: Mapping | None, pw: Mapping | None, colour: str) -> None:
    """The saturating curve (solid) and the power law (dashed) with these parameters (None / empty: a failed
    fit, not drawn), from the smallest size to the largest (:data:`CURVE_END`)."""
    grid = np.geomspace(xs.min(), xs.max() * CURVE_END, 80)
    xn = grid / x_min
    if sat:
        ax.plot(grid, saturating(xn, **sat), color=colour, lw=1.2)
    if pw:
        ax.plot(grid, power_law(xn, **pw), color=colour, lw=1.0, ls="--")


def _draw_own_fits(ax, g: pd.DataFrame, x: str, col: str, colour: str) -> None:
    """Both curves through a metric no verdict fits; no bootstrap (a band would be an interval no verdict prints)."""
    if g[x].nunique() < 3 or not np.isfinite(g[[x, col]].to_numpy(float)).all():
        return
    r = compare(g[x].to_numpy(float), g[col].to_numpy(float), n_boot=0)
    _draw_curves(ax, g[x], r["x_min"], r["saturating"].params, r["power_law"].params, colour)


def _draw_verdict_fit(ax, e: Mapping | None, xs: pd.Series, x: str, col: str, colour: str) -> None:
    """The verdict's fit of ``col`` (its ``by_family`` entry ``e``): both curves and the asymptote's interval as the
    verdict prints it (clipped at 1) as a band at the right. Nothing where the verdict fitted no curve."""
    if not e or e.get("column") != col or e.get("x") != x or "x_min" not in e:
        return
    _draw_curves(ax, xs, e["x_min"], e.get("saturating"), e.get("power_law"), colour)
    a = e.get("asymptote") or {}
    lo, hi = a.get("ci_low", math.nan), a.get("ci_high", math.nan)
    if np.isfinite([lo, hi]).all():
        ax.axhspan(lo, hi, xmin=0.93, xmax=1.0, color=colour, alpha=0.25)


def _lm_points(ax, df: pd.DataFrame, col: str, xmax: float) -> bool:
    lm = df[df["model_kind"] == "lm"] if "model_kind" in df else df.iloc[0:0]
    drawn = False
    for f in FAMILIES:
        c = f"{col}_{f}"
        if c not in lm:
            continue
        for _, r in lm.iterrows():
            if pd.isna(r[c]):
                continue
            n = r.get("n_params")
            xv = float(n) if n is not None and not pd.isna(n) else xmax * 8
            ax.plot([xv], [r[c]], marker="*", ms=12, color=COLOURS[f], mec="black", ls="none")
            ax.annotate(_lm_name(r)[:24], (xv, r[c]), fontsize=7, xytext=(4, 2),
                        textcoords="offset points")
            drawn = True
    return drawn


def _vs_params(df: pd.DataFrame, metric: str, fits: Mapping | None = None) -> str | None:
    """``metric`` against parameters per family; ``fits``: the verdict's per family (:func:`verdict_fits`), drawn
    with the fits of the metrics it does not fit (None: no fits). On the feasibility figure a family whose
    verdict metric is another (knapsack: optimal) has that metric drawn beside, with the verdict's fit."""
    rows = prepare_rows(df) if len(df) else df
    if rows.empty:
        return None
    sweep, _ = size_sweep(rows)
    if sweep.empty:
        return None
    x = _x(sweep)
    fig, ax = new_figure()
    ns: list = []
    unparsable = False
    for f in FAMILIES:
        col = f"{metric}_{f}"
        if col not in sweep or sweep[col].isna().all():
            continue
        g = sweep[[x, "seed", col]].dropna()
        s = seed_summary(g, x, col)
        errorbar(ax, s[x], s, (0.0, 1.0) if metric != "gap" else None, label=f, color=COLOURS[f])
        ns += list(s["n"])
        vm = VERDICT_METRIC.get(f)
        if fits is not None and vm == metric:
            _draw_verdict_fit(ax, fits.get(f), g[x], x, col, COLOURS[f])
        elif fits is not None:
            _draw_own_fits(ax, g, x, col, COLOURS[f])
            vcol = f"{vm}_{f}"  # the family's verdict metric beside its feasibility, with the verdict's fit
            if metric == "feas" and vm and vcol in sweep and sweep[vcol].notna().any():
                gv = sweep[[x, "seed", vcol]].dropna()
                sv = seed_summary(gv, x, vcol)
                errorbar(ax, sv[x], sv, (0.0, 1.0), label=f"{f}: {METRIC_WORDS.get(vm, vm)} (its verdict metric)",
                          color=COLOURS[f], marker="s", mfc="none")
                ns += list(sv["n"])
                _draw_verdict_fit(ax, fits.get(f), gv[x], x, vcol, COLOURS[f])
        if metric != "gap":  # the random-answer baseline on the same test instances (dotted)
            r = random_level(sweep, f, metric)
            if math.isfinite(r):
                ax.axhline(r, color=COLOURS[f], linestyle=":", linewidth=1)
            unparsable |= _draw_unparsable(ax, sweep, x, f)
    if not ns:
        return None
    lm = _lm_points(ax, rows, metric, float(sweep[x].max()))
    ax.set_xscale("log")
    ax.set_xlabel("non-embedding parameters" + (" (stars: real models, total parameters)" if lm else ""))
    ax.set_ylabel(LABELS[metric])
    if metric != "gap":
        ax.set_ylim(-0.03, 1.03)
        ax.axhspan(0.55, 0.60, color="grey", alpha=0.12)  # the hypothesised ceiling
    quals = [ci_note(ns)] + (["solid: a - b·N^-c, dashed: 1 - b·N^-c"] if fits is not None else []) + (
        ["band: the verdict's asymptote 95% bootstrap interval"] if fits is not None and metric == "feas" else []) + (
        ["grey: the hypothesised 55-60%", "dotted: uniform-random answers"] if metric != "gap" else []) + (
        [UNPARSABLE_NOTE] if unparsable else [])
    titled(ax, f"{TITLES[metric]} vs parameters per family", quals)
    legend(ax)
    return to_base64(fig)


#: The title's words for the unparsable share drawn beside a generated-answer metric.
UNPARSABLE_NOTE = "dash-dot ×: share of unparsable answers"


def _draw_unparsable(ax, rows: pd.DataFrame, x: str, family: str) -> bool:
    """The family's share of unparsable test answers (``unparsable_<family>``, mean over seeds) beside its metric,
    dash-dot with × markers in the family's colour: a low satisfaction or feasibility that is mostly unparsable
    output reads as such. False where the trials have no such column."""
    col = f"unparsable_{family}"
    if col not in rows or rows[col].isna().all():
        return False
    s = seed_summary(rows[[x, "seed", col]].dropna(), x, col)
    ax.plot(s[x], s["mean"], color=COLOURS[family], ls="-.", marker="x", lw=0.9, ms=5, alpha=0.8)
    return True


def fig_sat_vs_params(df: pd.DataFrame) -> str | None:
    """Satisfaction (bindscale's per-constraint share; not the verdict's metric) vs parameters, with fits
    without a bootstrap, the random answers' level and the hypothesised band."""
    return _vs_params(df, "sat", fits={})


def fig_feas_vs_params(df: pd.DataFrame, fits: Mapping | None = None,
                       thresholds: Mapping[str, float] | None = None) -> str | None:
    """Feasibility (the verdict's metric; knapsack's optimal rate beside it) vs parameters with both fits and the
    asymptote bands. ``fits``: the report's verdict's (:func:`verdict_fits`); without them the verdict rule
    computes them here (:func:`rule_fits`)."""
    return _vs_params(df, "feas", fits=rule_fits(df, thresholds) if fits is None else fits)


def fig_gap_vs_params(df: pd.DataFrame) -> str | None:
    """Optimality gap among feasible answers vs parameters."""
    return _vs_params(df, "gap")


def fig_sat_vs_data(df: pd.DataFrame) -> str | None:
    """Satisfaction vs training instances per family at the budget with most training-set sizes."""
    rows = trained_rows(prepare_rows(df)) if len(df) else df
    if rows.empty or "n_train" not in rows or rows["n_train"].nunique() < 2:
        return None
    counts = rows.groupby("budget")["n_train"].nunique()
    budget = max(b for b, c in counts.items() if c == counts.max())
    g0 = rows[rows["budget"] == budget]
    fig, ax = new_figure()
    ns: list = []
    for f in FAMILIES:
        col = f"sat_{f}"
        if col not in g0 or g0[col].isna().all():
            continue
        g = g0[["n_train", "seed", col]].dropna()
        s = seed_summary(g, "n_train", col)
        errorbar(ax, s["n_train"], s, (0.0, 1.0), label=f, color=COLOURS[f])
        ns += list(s["n"])
        _draw_own_fits(ax, g, "n_train", col, COLOURS[f])
    if not ns:
        return None
    ax.set_xscale("log")
    ax.set_xlabel("training instances per family")
    ax.set_ylabel(LABELS["sat"])
    ax.set_ylim(-0.03, 1.03)
    titled(ax, f"Constraint satisfaction vs training data at {budget / 1e6:g}M parameters", [ci_note(ns), "solid: saturating, dashed: power law"])
    legend(ax)
    return to_base64(fig)


def _size_colour(i: int, n: int) -> tuple:
    """The ``i``-th of ``n`` colours, light (small models) to dark (large)."""
    return colormaps["viridis_r"](0.15 + 0.75 * i / max(1, n - 1))


def _difficulty_rows(sweep: pd.DataFrame, x: str) -> pd.DataFrame:
    """One row per (trial, family, difficulty) of the test and held-out splits: size ``x``, seed, metrics."""
    out = []
    for size, seed, cell in zip(sweep[x], sweep["seed"], sweep["by_difficulty"]):
        for r in metric_items(cell):
            if isinstance(r, dict) and r.get("split") in ("test", "heldout") and r.get("family") in FAMILIES:
                out.append({"size": float(size), "seed": seed, "family": r["family"], "split": r["split"],
                            "difficulty": pd.to_numeric(r.get("difficulty"), errors="coerce"),
                            **{m: pd.to_numeric(r.get(m), errors="coerce") for m in DIFFICULTY_ROWS}})
    return pd.DataFrame(out).dropna(subset=["difficulty"]) if out else pd.DataFrame()


def fig_by_difficulty(df: pd.DataFrame) -> str | None:
    """Satisfaction, feasibility and gap against difficulty per family, one line per size (module docstring)."""
    rows = prepare_rows(df) if len(df) else df
    sweep = size_sweep(rows)[0] if not rows.empty else rows
    if sweep.empty or "by_difficulty" not in sweep:
        return None
    long = _difficulty_rows(sweep, _x(sweep))
    if long.empty:
        return None
    fams = [f for f in FAMILIES if f in set(long["family"])]
    sizes = sorted(long["size"].unique())
    rows_drawn = {m: t for m, t in DIFFICULTY_ROWS.items() if m in TITLES or long[m].notna().any()}
    fig = Figure(figsize=(FIGSIZE[0], 1.0 + 1.9 * len(rows_drawn)), dpi=100, layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(len(rows_drawn), len(fams), squeeze=False, sharex=True)
    colours = [_size_colour(i, len(sizes)) for i in range(len(sizes))]
    ns: list = []
    for j, f in enumerate(fams):
        g = long[long["family"] == f]
        trained = g.loc[g["split"] == "test", "difficulty"]
        for i, m in enumerate(rows_drawn):
            ax = axes[i, j]
            ax.grid(True, alpha=0.3)
            for size, colour in zip(sizes, colours):
                s = seed_summary(g[g["size"] == size], "difficulty", m).dropna(subset=["mean"])
                if len(s):
                    errorbar(ax, s["difficulty"], s, (0.0, 1.0) if m != "gap" else None, color=colour,
                              label=count_label(size), ms=3)
                    ns += list(s["n"])
            # head room for the span labels; half a step of margin so the held-out span has room
            ax.set_ylim(-0.03, 1.25) if m != "gap" else ax.set_ylim(0, max(ax.get_ylim()[1], 0.01) * 1.3)
            ax.set_xlim(g["difficulty"].min() - 0.5, g["difficulty"].max() + 0.5)
            if len(trained) and (g["split"] == "heldout").any():
                id_ood_spans(ax, float(trained.max()) + 0.5, "trained", "held\nout")
            ax.tick_params(labelsize=SMALL)
            if i == 0:
                ax.set_title(f, fontsize=SMALL + 2)
            if j == 0:
                ax.set_ylabel(rows_drawn[m].lower(), fontsize=SMALL + 1)
            if i == len(rows_drawn) - 1:
                ax.set_xlabel("difficulty", fontsize=SMALL + 1)
                ax.set_xticks(sorted(g["difficulty"].unique()))
    if not ns:
        return None
    fig.suptitle(f"Metrics{' and unparsable answers' if 'unparsable' in rows_drawn else ''} by difficulty per family, "
                 f"one line per size\n({ci_note(ns)})", fontsize=11)
    legend(axes[0, 0], ncol=len(sizes), title="non-embedding parameters")
    return to_base64(fig)


#: Metric definitions, prompt and parse rule, stated in the report, so a reader need not open the code to know what a number counts.
DEFINITIONS = (
    " Metrics, per family on the test instances: satisfaction = mean over instances of each instance's share of "
    "constraints met (an unparsable answer meets none); feasibility = share of instances whose answer meets every "
    "constraint; optimality gap = mean over feasible answers of |f - f*| / |f*| (f* the exact MILP optimum); "
    "optimal = share answered feasibly with gap 0. The verdict fits feasibility for colouring and assignment and "
    "'optimal' for knapsack: the empty selection meets knapsack's one constraint (capacity), so knapsack "
    "satisfaction and feasibility are 1.0 for an answer that learned nothing. Chance levels (details: baselines): "
    "uniform-random and all-zero answers on the same instances; on the default instances random answers meet "
    "0.75 of the colouring constraints and 0.68 of the assignment ones, so a 55-60% satisfaction would be below "
    "chance, whereas their feasibility is 0.07. Prompt (real models): the instance in words "
    "(e.g. 'Graph colouring. Nodes 0 to n-1. Edges: u-v, .... Give each node a colour from 0 to 3 so that the two "
    "ends of every edge have different colours, using as few distinct colours as possible.') then \"Answer with one "
    "line 'ANSWER:' followed by n integers separated by spaces: ...\". Parse rule: the last line containing "
    "'ANSWER:' (any case); the integers on that line after it (any separators); exactly n of them, each in range; "
    "else unparsable. Trained transformers emit the answer tokens directly (n integers, then the end token). "
    "ConstraintBench's 65.0% is not verified to be this satisfaction metric (its abstract pairs it with "
    "'feasibility is the primary bottleneck', and it scores tasks by a verifier of every constraint): the verdict "
    "reads it as feasibility and decides on our feasibility figure."
)


def fig_lm_vs_params(df: pd.DataFrame) -> str | None:
    """Real models (``model.kind: lm``) against their total parameters: per family the verdict metric
    (feasibility; knapsack feasible-and-optimal) with its exact 95% interval over the instances
    (:func:`.verdicts.proportion_ci`), the chance level on the same instances (the records' ``chance_*``
    columns; dotted, one short line per model), the share of unparsable answers (dash-dot ×) and the
    hypothesised 55-60% band. Models of unknown size stand at the right edge, marked "size unknown". None
    when the table has no real-model row."""
    rows = prepare_rows(df) if len(df) else df
    lm = rows[rows["model_kind"] == "lm"] if "model_kind" in rows else rows.iloc[0:0]
    if lm.empty:
        return None
    from .verdicts import proportion_ci, size_words

    sizes = pd.to_numeric(lm["n_params"], errors="coerce")
    known = sizes[np.isfinite(sizes)]
    right = float(known.max()) * 3 if len(known) else 1e8
    fig, ax = new_figure()
    drawn = False
    for k, f in enumerate(FAMILIES):
        m = VERDICT_METRIC[f]
        col = f"{m}_{f}"
        if col not in lm:
            continue
        pts = []
        for (_, r), s in zip(lm.iterrows(), sizes):
            v = pd.to_numeric(r.get(col), errors="coerce")
            if v is None or not np.isfinite(v):
                continue
            x = float(s) if np.isfinite(s) else right
            x *= 1.0 + 0.04 * (k - 1)  # families side by side
            lo, hi = proportion_ci(float(v), float(pd.to_numeric(r.get(f"n_{f}"), errors="coerce")))
            pts.append((x, float(v), lo, hi, r))
        if not pts:
            continue
        pts.sort(key=lambda t: t[0])
        xs = np.array([t[0] for t in pts])
        ys = np.array([t[1] for t in pts])
        err = np.array([[max(0.0, y - lo) if np.isfinite(lo) else 0.0 for _, y, lo, _, _ in pts],
                        [max(0.0, hi - y) if np.isfinite(hi) else 0.0 for _, y, _, hi, _ in pts]])
        ax.errorbar(xs, ys, yerr=err, marker="o", color=COLOURS[f], capsize=3, lw=1.2,
                    label=f"{f}: {METRIC_WORDS.get(m, 'feasibility')}")
        for x, _, _, _, r in pts:
            c = pd.to_numeric(r.get(f"chance_{m}_{f}"), errors="coerce")
            if c is not None and np.isfinite(c):
                ax.plot([x / 1.15, x * 1.15], [c, c], color=COLOURS[f], ls=":", lw=1.5)
            u = pd.to_numeric(r.get(f"unparsable_{f}"), errors="coerce")
            if u is not None and np.isfinite(u):
                ax.plot([x], [u], marker="x", color=COLOURS[f], ms=6, ls="none")
        if k == 0:
            for x, y, _, _, r in pts:
                s = pd.to_numeric(r.get("n_params"), errors="coerce")
                ax.annotate(f"{_lm_name(r)[:28]} ({size_words(float(s)) if s is not None else 'size unknown'})",
                            (x, y), fontsize=7, xytext=(4, 6), textcoords="offset points")
        drawn = True
    if not drawn:
        return None
    ax.set_xscale("log")
    lo, hi = ax.get_xlim()
    if hi / lo < 30:  # one or two sizes: at least a decade and a half either way, so the offsets stay small
        mid = math.sqrt(lo * hi)
        ax.set_xlim(mid / 6, mid * 6)
        from matplotlib.ticker import NullFormatter

        ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("total parameters of the real model" + (" (right edge: size unknown)" if len(known) < len(lm) else ""))
    ax.set_ylabel("test feasibility (knapsack: feasible and optimal)")
    ax.set_ylim(-0.03, 1.03)
    ax.axhspan(0.55, 0.60, color="grey", alpha=0.12)
    titled(ax, "Real models: verdict metric vs parameters",
           ["bars: exact 95% interval over instances", "dotted: chance level on the same instances",
            "×: share of unparsable answers", "grey: the hypothesised 55-60%"])
    legend(ax)
    return to_base64(fig)


def figures(study: Any = None, verdicts: Sequence[Mapping[str, Any]] | None = None) -> dict[str, tuple[Any, str]]:
    """Figure name → (function, caption). ``verdicts``: the report's (:func:`bindscale.core.study.StudyPlugin.figures`);
    the satisfaction figure draws their fits. Without them it computes the verdict rule's fits, with the study
    file's thresholds."""
    given = ((study or {}).get("verdicts") or {}).get(CLAIM.name) or {}
    thresholds = {k: v for k, v in given.items() if v is not None}
    return {
        "ceiling_sat_vs_params": (fig_sat_vs_params,
                                  "Test constraint satisfaction (share of constraints met per instance: the metric "
                                  "the hypothesis names, not the verdict's) against non-embedding parameters per "
                                  "family, both fits drawn (no bootstrap), up to the largest model; stars are real "
                                  "models on the same instances; grey: the hypothesised 55-60% ceiling (no primary "
                                  "source); dotted: uniform-random answers on the same instances; dash-dot with ×: the share of "
                                  "unparsable answers (which meet no constraint)." + DEFINITIONS),
        "ceiling_feas_vs_params": (partial(fig_feas_vs_params, fits=verdict_fits(verdicts), thresholds=thresholds),
                                   "Test feasibility (every constraint met: the verdict's metric, the source's kind) "
                                   "against parameters per family, both fits drawn up to the largest model; for each "
                                   "family's verdict metric (feasibility; for knapsack the optimal rate, hollow "
                                   "squares, since its empty answer is feasible) the fit is the verdict's and the "
                                   "band at the right is its asymptote with the 95% bootstrap interval over seeds "
                                   "the verdict prints; grey: the hypothesised 55-60%; dotted: uniform-random "
                                   "answers; dash-dot with ×: the share of unparsable answers (never feasible) "
                                   "(ConstraintBench: best model 65.0%, none of six frontier LLMs above "
                                   "30.5% on joint feasibility and optimality)."),
        "ceiling_gap_vs_params": (fig_gap_vs_params, "Relative optimality gap among feasible answers against "
                                  "parameters per family (0 = optimal)."),
        "ceiling_sat_vs_data": (fig_sat_vs_data, "Test constraint satisfaction against training instances per "
                                "family (the data axis), both fits drawn."),
        "ceiling_lm_vs_params": (fig_lm_vs_params,
                                 "Real language models on the same fixed instances (first n_test per family and "
                                 "difficulty): per family the verdict metric (feasibility; knapsack feasible and "
                                 "optimal) against the model's total parameters, with its exact (Clopper-Pearson) "
                                 "95% interval over the instances; dotted: the chance level of that metric on the "
                                 "same instances (the better of uniform-random and all-zero answers); ×: the share "
                                 "of unparsable answers (counted as infeasible); grey: the hypothesised 55-60%. "
                                 "The real-model verdict needs at least 3 sizes with parsable answers."),
        "ceiling_by_difficulty": (fig_by_difficulty, "Test constraint satisfaction, feasibility, optimality gap "
                                  "(among feasible answers) and the share of unparsable answers against the "
                                  "difficulty knob per family, one line per "
                                  "model size of the size sweep (mean over seeds); the last difficulty, shaded, "
                                  "is the held-out one, harder than any trained on."),
    }
