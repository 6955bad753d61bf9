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

from bindscale.storage import RunStore
from jinja2 import Environment, FileSystemLoader, StrictUndefined

from bindscale.report.figures import captions, make_figures
from bindscale.report.text import SEP, breakable, child_label, detail_label
from bindscale.report.verdicts import compute_verdicts, ok_rows, study_as_dict

__all__ = ["build_report", "to_jsonable", "fmt"]

TEMPLATE_DIR = Path(__file__).parent / "templates"
TEMPLATE = "report.html.j2"

# Figures shown in each claim's section; the rest go under "Other figures".
CLAIM_FIGURES = {
    "scaling": ["heldout_vs_width", "heldout_vs_train_combos", "training_curves"],
    "decodability": ["decodability"],
    "binding": ["heldout_vs_params"],
    "hull": ["hull_vs_width"],
    "scale_does_not_lift_ood": ["sg_acc_vs_params", "sg_acc_by_size"],
    "correct_steps_seen_in_training": ["sg_coverage_by_depth", "sg_error_types", "sg_acc_by_depth"],
    "structure_emerges": ["mod_scores", "mod_accuracies"],
    "structure_grows_with_width": ["mod_share_vs_width"],
    "pretraining_reliability": ["mod_share_by_pretraining"],
}
CLAIM_TITLES = {
    "scaling": "Scaling: width, data and coverage",
    "decodability": "Linear decodability predicts generalization",
    "binding": "Explicit binding: hypernetwork vs MLP",
    "hull": "Inside vs outside the training hull",
    "scale_does_not_lift_ood": "Out of distribution: does scale help? (Faith and Fate)",
    "correct_steps_seen_in_training": "Are correct steps the ones seen in training? (Faith and Fate)",
    "structure_emerges": "Do subroutines live in separable subnetworks? (Break It Down)",
    "structure_grows_with_width": "Does structural compositionality grow with width? (Break It Down)",
    "pretraining_reliability": "Does ordinary pretraining make it more reliable? (Break It Down)",
}
CONFIG_METRICS = ["r2_id", "r2_heldout", "r2_inhull", "r2_outhull", "decod_best"]


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


def fmt(v: Any) -> str:
    """Human-readable number: 3 decimals in the usual range, — for missing."""
    if v is None:
        return "—"
    if isinstance(v, (bool, np.bool_)):
        return str(bool(v))
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    if isinstance(v, (float, np.floating)):
        f = float(v)
        if math.isnan(f):
            return "—"
        if math.isinf(f):
            return "∞" if f > 0 else "−∞"
        if f.is_integer() and abs(f) >= 1000:
            return f"{int(f)}"
        return f"{f:.3f}" if f == 0 or 1e-3 <= abs(f) < 1e3 else f"{f:.3g}"
    return str(v)


def fmt_cfg(v: Any) -> str:
    """Config value or count: 0.25, 256, 69 (no padding decimals)."""
    if isinstance(v, (float, np.floating)) and math.isfinite(v):
        return f"{float(v):g}"
    return fmt(v)


def _is_ci(v: Any) -> bool:
    return isinstance(v, Mapping) and {"value", "ci_low", "ci_high"} <= set(v)


def fmt_ci(value: Any, low: Any, high: Any, n: Any = None) -> str:
    """'0.953 [0.941, 0.962]' (with ' (n=5)' when n is given)."""
    text = f"{fmt(value)} [{fmt(low)}, {fmt(high)}]"
    return text + (f" (n={n})" if n is not None else "")


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

SEQ_KEYS = ["task", "scratchpad", "n_train", "layers", "d_model"]
SEQ_METRICS = ["acc_id", "acc_ood", "compound_eps", "seen_correct", "seen_wrong"]
MOD_KEYS = ["architecture", "width", "depth", "pretraining"]
MOD_METRICS = ["base_acc_test", "frac_structural", "frac_robust", "sub_diff", "abl_diff", "density",
               "random_frac_structural", "untrained_frac_structural"]


def _seq_config_table(ok: pd.DataFrame, keys: list[str] = SEQ_KEYS,
                      metrics: list[str] = SEQ_METRICS) -> tuple[list[str], list[list[str]]]:
    """A study family's per-config means over seeds (subgraphs by default; modularity with its keys/metrics)."""
    keys = [k for k in keys if k in ok]
    header = keys + ["n seeds"] + metrics + ["n_params"]
    out = []
    for key, g in ok.groupby(keys, sort=True, dropna=False):
        row = [fmt_cfg(x) for x in key] + [str(len(g))]
        row += [fmt(float(np.nanmean(pd.to_numeric(g[c], errors="coerce")))) if c in g and
                pd.to_numeric(g[c], errors="coerce").notna().any() else "—" for c in metrics]
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


def _config_table(df: pd.DataFrame) -> tuple[list[str], list[list[str]]]:
    """Per-config means over seeds of the ok rows: (header, formatted rows)."""
    ok = ok_rows(df)
    if ok.empty:
        return [], []
    if "acc_id" in ok:  # the subgraphs study
        return _seq_config_table(ok)
    if "frac_structural" in ok:  # the modularity study
        return _seq_config_table(ok, MOD_KEYS, MOD_METRICS)
    keys = ["model", "width", "depth", "holdout"]
    # Encoding / split are shown only when they vary (otherwise noise).
    keys += [c for c in ("encoding", "split", "withheld_pairs") if c in ok and ok[c].nunique() > 1]
    header = keys + ["n_train_combos", "n seeds"] + CONFIG_METRICS + ["n_params"]
    out = []
    for key, g in ok.groupby(keys, sort=True, dropna=False):
        row = [fmt_cfg(x) for x in key]
        row += [fmt_cfg(g["n_train_combos"].median()), str(len(g))]
        row += [_mean_cell(g[c]) for c in CONFIG_METRICS]
        row.append(fmt_cfg(g["n_params"].median()))
        out.append(row)
    return header, out


def _problems(df: pd.DataFrame) -> list[dict[str, str]]:
    """Diverged / failed trials with where they stopped and why."""
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
            "config": ", ".join(f"{c}={fmt_cfg(r[c])}" for c in ("model", "architecture", "width", "depth", "holdout",
                                                                      "pretraining", "seed")
                                if c in r.index),
            "diverged_step": fmt_cfg(r.get("diverged_step")) if "diverged_step" in r.index else "—",
            "error": err if len(err) <= 400 else err[:400] + " …",
        })
    return out


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
    return env


def build_report(run_dir: str | os.PathLike, df: pd.DataFrame, study: Mapping[str, Any],
                 n_boot: int = 2000, run_info: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Write ``run_dir/report.html`` and ``run_dir/summary.json``.

    Inputs: the run directory (created if missing), the results table (one
    row per trial), the study config dict (``name``, ``description``,
    ``verdicts``, ``anchors``; a pydantic model works too), bootstrap size.
    Output: the summary dict exactly as written to ``summary.json``:
    ``study, description, verdicts, n_trials, n_ok, n_diverged, n_failed,
    generated, figures, report, bindscale_version``, plus ``run_info`` (e.g.
    ``quick``, ``n_planned``, ``n_missing``, ``steps``) when given.
    """
    store = RunStore.of(run_dir)
    store.makedirs()
    study = study_as_dict(study)
    name = str(study.get("name") or store.path().rstrip("/").rsplit("/", 1)[-1])
    status = df["status"].astype(str) if "status" in df else pd.Series(["ok"] * len(df))
    verdicts = compute_verdicts(df, study, n_boot=n_boot)
    figures = make_figures(df, study)
    caption = captions()

    summary = to_jsonable({
        "study": name,
        "description": study.get("description"),
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
        figs = [(caption[f], figures[f]) for f in CLAIM_FIGURES.get(v["claim"], []) if figures.get(f)]
        used.update(CLAIM_FIGURES.get(v["claim"], []))
        sections.append({
            "claim": v["claim"],
            "title": CLAIM_TITLES.get(v["claim"], v["claim"]),
            "statement": v.get("statement") or "",
            "verdict": v["verdict"],
            "statistic": v["statistic"],
            "value": fmt_ci(v["value"], v["ci_low"], v["ci_high"]),
            "n_trials": v["n_trials"],
            "reference": v["reference"],
            "reason": v["details"].get("reason", ""),
            "details": _detail_rows({k: x for k, x in v["details"].items() if k != "reason"}),
            "figures": figs,
        })
    other = [(caption[k], b64) for k, b64 in figures.items() if b64 and k not in used]
    header, config_rows = _config_table(df)

    html = _environment().get_template(TEMPLATE).render(
        name=name,
        description=study.get("description") or "",
        summary=summary,
        sections=sections,
        other_figures=other,
        config_header=header,
        config_rows=config_rows,
        problems=_problems(df),
        study_yaml=yaml.safe_dump(study, sort_keys=False) if study.get("base") else "",
    )
    store.write_text("report.html", html)
    store.write_text("summary.json", json.dumps(summary, indent=2, allow_nan=False) + "\n")
    return summary
