"""Build a run's report: ``report.html`` (self-contained) and ``summary.json``.

``build_report(run_dir, df, study)`` computes the verdicts and figures from the
results table and writes both files atomically (temp file + ``os.replace``),
so a reader never sees a half-written report. The HTML embeds its figures as
``data:image/png;base64`` URIs and carries no external CSS or JavaScript; all
user strings go through Jinja2 autoescaping. ``summary.json`` is strict JSON:
NaN becomes ``null`` and ±inf the strings ``"inf"`` / ``"-inf"``.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import os
from collections.abc import Mapping
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml

from bindscale.store.storage import RunStore
from bindscale.core.study import gate_lines
from jinja2 import Environment, FileSystemLoader, StrictUndefined

from bindscale.core.fmt import fmt, fmt_ci, unparsable_text, verdict_words
from bindscale.report.figures import render
from bindscale.report.text import SEP, breakable, child_label, clip, detail_label
from bindscale.verdicts.engine import compute_verdicts, study_as_dict

__all__ = ["build_report", "to_jsonable", "fmt", "fmt_ci", "unparsable_share", "unparsable_text", "what_ran"]

TEMPLATE_DIR = Path(__file__).parent / "templates"
TEMPLATE = "report.html.j2"

# --------------------------------------------------------------- formatting --

def to_jsonable(obj: Any) -> Any:
    """Recursively convert to strict-JSON-safe Python data.

    NaN -> None, +inf -> "inf", -inf -> "-inf", NumPy scalars/arrays -> Python
    numbers/lists, dict keys -> str, datetimes -> ISO strings.
    """
    if isinstance(obj, Mapping):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set, np.ndarray, pd.Series)):
        return [to_jsonable(v) for v in list(obj)]
    if isinstance(obj, np.generic):
        return to_jsonable(obj.item())
    if isinstance(obj, float):
        if math.isnan(obj):
            return None
        if math.isinf(obj):
            return "inf" if obj > 0 else "-inf"
        return obj
    if isinstance(obj, (_dt.datetime, _dt.date)):
        return obj.isoformat()
    if obj is None or isinstance(obj, (str, int, bool)):
        return obj
    return str(obj)


def fmt_cfg(v: Any) -> str:
    """Config value or count: 0.25, 256, 69 (no padding decimals)."""
    if isinstance(v, (float, np.floating)) and math.isfinite(v):
        return f"{float(v):g}"
    return fmt(v)


def _is_ci(v: Any) -> bool:
    return isinstance(v, Mapping) and {"value", "ci_low", "ci_high"} <= set(v)


def _scalar_items(parent: str, v: Mapping[str, Any]) -> str:
    """A dict of plain scalars on one line: 'width: 16; n seeds: 3' (keys read as ``child_label``)."""
    return "; ".join(f"{child_label(parent, a)}: {fmt(b)}" for a, b in v.items())


def _detail_rows(details: Mapping[str, Any], path: tuple[str, ...] = ()) -> list[tuple[str, str, str]]:
    """Flatten a verdict's details into (label, raw key, text) rows for the page.

    The label is readable (``detail_label``: 'held-out R² by width at min holdout › width 256'); the
    raw key ('heldout_r2_by_width_at_min_holdout › 256') goes into the label's hover title.
    CI dicts print as 'value [low, high] (n=..)'; a dict of plain scalars prints on one row as
    'k: v; ...'; nested dicts/lists become 'a › b' keys (list items '[i]', read '#i+1').
    """
    rows: list[tuple[str, str, str]] = []
    for k, v in details.items():
        here = (*path, str(k))
        label, raw = detail_label(here), SEP.join(here)

        def row(text: str) -> tuple[str, str, str]:
            return label, raw, text

        if _is_ci(v):
            rows.append(row(fmt_ci(v["value"], v["ci_low"], v["ci_high"], v.get("n"))))
        elif isinstance(v, Mapping):
            if v and all(not isinstance(x, (Mapping, list, tuple)) for x in v.values()):
                rows.append(row(_scalar_items(str(k), v)))
            elif v:
                rows.extend(_detail_rows(v, here))
        elif isinstance(v, (list, tuple)):
            if all(not isinstance(x, (Mapping, list, tuple)) for x in v):
                rows.append(row(", ".join(fmt(x) for x in v)))
            else:
                for i, x in enumerate(v):
                    item = x if isinstance(x, Mapping) else {"value": x}
                    rows.extend(_detail_rows(item, (*here, f"[{i}]")))
        else:
            rows.append(row(fmt(v)))
    return rows


# ------------------------------------------------------------------ tables --

def mean_table(ok: pd.DataFrame, keys: list[str], metrics: list[str],
               counts: tuple[str, ...] = ()) -> tuple[list[str], list[list[str]]]:
    """Per-configuration means over seeds of ``ok`` rows: (header, formatted rows).

    One row per combination of the ``keys`` present; the median of each ``counts`` column
    (e.g. training combinations); each metric's mean over the seeds that have a value
    ("(n=k)" where fewer than all do); the median ``n_params``.
    """
    keys = [k for k in keys if k in ok]
    if ok.empty or not keys:
        return [], []
    counts = tuple(c for c in counts if c in ok)
    median_params = "n_params" in ok and "n_params" not in metrics  # a metric already: its mean is the column
    header = keys + list(counts) + ["n seeds"] + metrics + (["n_params"] if median_params else [])
    out = []
    for key, g in ok.groupby(keys, sort=True, dropna=False):
        key = key if isinstance(key, tuple) else (key,)
        row = [fmt_cfg(x) for x in key]
        row += [fmt_cfg(pd.to_numeric(g[c], errors="coerce").median()) for c in counts] + [str(len(g))]
        row += [_mean_cell(pd.to_numeric(g[c], errors="coerce")) if c in g else "—" for c in metrics]
        if median_params:
            row.append(fmt_cfg(pd.to_numeric(g["n_params"], errors="coerce").median()))
        out.append(row)
    return header, out


def _mean_cell(values: pd.Series) -> str:
    """Mean over the seeds that have a value; "(n=k)" where fewer than all do (e.g. out-of-hull R²
    of a seed whose split left no out-of-hull combination)."""
    finite = np.isfinite(values.to_numpy(dtype=float))
    if not finite.any():
        return fmt(math.nan)
    cell = fmt(float(values[finite].mean()))
    return cell if finite.all() else f"{cell} (n={int(finite.sum())})"


def _problems(df: pd.DataFrame, axes: list[str]) -> list[dict[str, str]]:
    """Diverged / failed trials with their swept ``axes``, where they stopped and why."""
    if "status" not in df:
        return []
    bad = df[df["status"].astype(str) != "ok"]
    out = []
    for _, r in bad.iterrows():
        err = r.get("error")
        err = "" if err is None or (isinstance(err, float) and math.isnan(err)) else str(err)
        out.append({
            "trial_id": str(r.get("trial_id", "")),
            "status": str(r["status"]),
            "config": ", ".join(f"{c}={fmt_cfg(r[c])}" for c in axes if c in r.index),
            "diverged_step": fmt_cfg(r.get("diverged_step")) if "diverged_step" in r.index else "—",
            "error": err if len(err) <= 400 else err[:400] + " …",
        })
    return out


# -------------------------------------------------------------- unparsable --

#: Results-table columns ``unparsable_<part>`` (a generated-answer study's share of test answers that could
#: not be parsed, e.g. ceiling's per family); the train / held-out splits' columns are not the test's.
UNPARSABLE = "unparsable_"


def unparsable_share(df: pd.DataFrame) -> dict[str, float] | None:
    """The share of unparsable test answers over the run's ok trials, where its records have one
    (``unparsable_<part>`` columns): ``{"mean", "min", "max"}`` over trials (each trial's mean over parts);
    None for a study without generated answers. Shown beside every verdict's number: a
    low score that is mostly unparsable output must say so."""
    cols = [c for c in df.columns if str(c).startswith(UNPARSABLE)
            and not str(c).endswith(("_train", "_heldout"))]
    if not cols:
        return None
    ok = df[df["status"].astype(str) == "ok"] if "status" in df else df
    per_trial = ok[cols].apply(pd.to_numeric, errors="coerce").mean(axis=1, skipna=True).dropna()
    if per_trial.empty:
        return None
    return {"mean": float(per_trial.mean()), "min": float(per_trial.min()), "max": float(per_trial.max())}


# ---------------------------------------------------------------- what ran --

def _grid_ids(study: Mapping[str, Any]) -> list[set[str]] | None:
    """The trial ids each of the study's grids makes (None where the study dict cannot be read back)."""
    from bindscale.core.config import StudyConfig, validate

    try:
        cfg = validate(StudyConfig, dict(study))
        return [{t.trial_id for t in cfg.model_copy(update={"grids": [g]}).trials()} for g in cfg.grids]
    except Exception:  # noqa: BLE001 - a description, never a reason to fail the report
        return None


def _values(col: pd.Series) -> list[str]:
    """The distinct values of a config column as the page prints them, numbers in order."""
    vals = [v for v in col.dropna().unique().tolist()]
    try:
        vals = sorted(vals)
    except TypeError:
        pass
    return [fmt_cfg(v) for v in vals]


def _params(n: pd.Series) -> str:
    """"30.4k–114k parameters" (or one size) from an ``n_params`` column."""
    n = pd.to_numeric(n, errors="coerce").dropna()
    if n.empty:
        return ""

    def size(x: float) -> str:
        return f"{fmt(x / 1e6)}M" if x >= 1e6 else f"{fmt(x / 1e3)}k" if x >= 1e3 else fmt(int(x))

    lo, hi = float(n.min()), float(n.max())
    return f"{size(lo)} parameters" if lo == hi else f"{size(lo)}–{size(hi)} parameters"


def what_ran(df: pd.DataFrame, study: Mapping[str, Any], axes: Mapping[str, str]) -> list[str]:
    """What the run trained, one line per grid of its study, read from its results table (not from the
    study's prose, which describes the full design): the grid's swept values among the recorded trials,
    seeds, training steps and model sizes, e.g. ``"12 trials: main caprev; aux none, cap+rev; d_model 16,
    32; 3 seeds; 150 steps; 4.1k-14.6k parameters"``. ``axes``: the trial class's short axis names → paths."""
    if df.empty or "trial_id" not in df:
        return []
    short = {path: name for name, path in axes.items()}
    grids = list(study.get("grids") or [{}])
    ids = _grid_ids(study)
    rows = df.drop_duplicates("trial_id")
    groups: list[tuple[list[str], pd.DataFrame]] = []
    taken: set[str] = set()
    for i, grid in enumerate(grids):
        cols = [c for c in (short.get(k, k) for k in grid) if c in rows and c not in ("seed", "steps")]
        if ids is None:
            part = rows if i == 0 else rows.iloc[0:0]
        else:
            part = rows[rows["trial_id"].astype(str).isin(ids[i] - taken)]
            taken |= set(part["trial_id"].astype(str))
        if not part.empty:
            groups.append((cols, part))
    if ids is not None:
        rest = rows[~rows["trial_id"].astype(str).isin(taken)]
        if not rest.empty:  # records of trials no grid makes (e.g. a run resumed under another study file)
            groups.append(([], rest))
    lines = []
    for cols, part in groups:
        bits = [f"{c} {', '.join(_values(part[c]))}" for c in cols]
        if "seed" in part:
            n_seeds = part["seed"].nunique()
            bits.append(f"{n_seeds} seed{'s' if n_seeds != 1 else ''}")
        steps_col = "steps" if "steps" in part else "train.steps" if "train.steps" in part else None
        if steps_col:
            bits.append(f"{' / '.join(_values(part[steps_col]))} steps")
        if "n_params" in part and (sizes := _params(part["n_params"])):
            bits.append(sizes)
        lines.append(f"{len(part)} trial{'s' if len(part) != 1 else ''}: " + "; ".join(bits))
    return lines


# ------------------------------------------------------------------- write --

def _package_version() -> str | None:
    try:
        return metadata.version("bindscale")
    except metadata.PackageNotFoundError:
        return None


def _environment() -> Environment:
    env = Environment(
        loader=FileSystemLoader(TEMPLATE_DIR),
        autoescape=True,  # always on: descriptions and errors are user strings
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["fmt"] = fmt
    env.filters["breakable"] = breakable
    env.filters["clip"] = clip
    env.globals["verdict_words"] = verdict_words
    return env


def build_report(run_dir: str | os.PathLike, df: pd.DataFrame, study: Mapping[str, Any],
                 n_boot: int = 2000, run_info: Mapping[str, Any] | None = None,
                 unrecorded: pd.DataFrame | None = None) -> dict[str, Any]:
    """Write ``run_dir/report.html`` and ``run_dir/summary.json``.

    Inputs: the run directory (created if missing), the results table (one
    row per trial), the study config dict (``name``, ``description``,
    ``verdicts``, ``anchors``; a pydantic model works too), bootstrap size.
    Output: the summary dict exactly as written to ``summary.json``:
    ``study, description, verdicts, n_trials, n_ok, n_diverged, n_failed,
    generated, figures, report, bindscale_version``, plus ``run_info`` (e.g.
    ``quick``, ``n_planned``, ``n_missing``, ``steps``) when given.
    ``unrecorded``: planned trials without a record, for the verdicts' guards
    (:func:`bindscale.verdicts.engine.compute_verdicts`).
    """
    store = RunStore.of(run_dir)
    store.makedirs()
    study = study_as_dict(study)
    name = str(study.get("name") or store.path().rstrip("/").rsplit("/", 1)[-1])
    status = df["status"].astype(str) if "status" in df else pd.Series(["ok"] * len(df))
    from bindscale.core import registry

    plugin = registry.for_study(study)
    verdicts = compute_verdicts(df, study, n_boot=n_boot, unrecorded=unrecorded)
    if (unparsable := unparsable_share(df)) is not None:  # beside every number of a generated-answer study
        for v in verdicts:
            v["unparsable"] = unparsable
    figure_set = plugin.figures(study, verdicts=verdicts)  # a figure may draw what a verdict computed
    figures = render(figure_set, df)
    caption = {k: c for k, (_, c) in figure_set.items()}
    claim_figures = {c.name: list(c.figures) for c in plugin.claims}

    ran = what_ran(df, study, getattr(plugin.trial_class, "AXES", {}))
    summary = to_jsonable({
        "study": name,
        "description": study.get("description"),
        "what_ran": ran,
        "verdicts": verdicts,
        "n_trials": len(df),
        "n_ok": int((status == "ok").sum()),
        "n_diverged": int((status == "diverged").sum()),
        "n_failed": int((status == "failed").sum()),
        "generated": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "figures": [k for k, v in figures.items() if v],
        "report": "report.html",
        "bindscale_version": _package_version(),
        **dict(run_info or {}),
    })

    used: set[str] = set()
    sections = []
    for v in verdicts:
        figs = [(caption[f], figures[f]) for f in claim_figures.get(v["claim"], []) if figures.get(f)]
        used.update(claim_figures.get(v["claim"], []))
        sections.append({
            "claim": v["claim"],
            "title": v.get("title") or v["claim"],
            "statement": v.get("statement") or "",
            "verdict": v["verdict"],
            "statistic": v["statistic"],
            "statistic_text": v.get("statistic_text") or "",
            "value": fmt_ci(v["value"], v["ci_low"], v["ci_high"]),
            "unparsable": unparsable_text(v.get("unparsable")),
            "n_trials": v["n_trials"],
            "reference": v["reference"],
            "reason": v["details"].get("reason", ""),
            "details": _detail_rows({k: x for k, x in v["details"].items() if k not in ("reason", "gates")}),
            "gates": gate_lines(v["details"]),
            "figures": figs,
        })
    other = [(caption[k], b64) for k, b64 in figures.items() if b64 and k not in used]
    header, config_rows = plugin.config_table(df)

    html = _environment().get_template(TEMPLATE).render(
        name=name,
        description=study.get("description") or "",
        what_ran=ran,
        summary=summary,
        sections=sections,
        other_figures=other,
        config_header=header,
        config_rows=config_rows,
        problems=_problems(df, [a for a in plugin.trial_class.AXES if a != "seed"] + ["seed"]),
        study_yaml=yaml.safe_dump(study, sort_keys=False, allow_unicode=True) if study.get("base") else "",
    )
    store.write_text("report.html", html)
    # Each figure also as a file, for papers, notebooks and the answer page (figures/<name>.png).
    import base64

    for key, b64 in figures.items():
        if b64:
            store.write_bytes(f"figures/{key}.png", base64.b64decode(b64))
    store.write_text("summary.json", json.dumps(summary, indent=2, allow_nan=False) + "\n")
    return summary
