"""Verdict rules of the ``geometry`` study (Diego-Simón et al., NeurIPS 2024, "A polar coordinate
system represents syntax in large language models"; Hewitt & Manning 2019, "A structural probe for
finding syntax in word representations").

Each claim is named after what its source asserts, so "supported" means the source is right.

Deciding rows: ok trials whose model was trained here (``model.source`` trained or absent), at the
most common value of every other swept setting (training steps, corpus size, learning rate, probe
rank and angular weight: :func:`bindscale.report.verdicts.restrict_to_mode`). A *cell* is one model
size (``n_params``); its replicates are distinct seeds (repeated records of a seed are averaged).
Each probe is scored at its own best layer chosen on dev sentences, on test sentences, in
PolarProbe's convention (``_pp``: per-sentence LAS with punctuation, the convention of the anchors).

- ``polar_beats_structural``: at the largest model, polar LAS − structural LAS
  (``polar_minus_structural_las_pp``), paired within each trial, mean over seeds with Student's t
  interval (:func:`bindscale.stats.mean_ci`). Supported when the interval lies above ``margin``; not
  supported when it lies below; inconclusive otherwise. The same difference at every size and in
  Hewitt & Manning's convention, and both probes' UUAS/LAS with the identity-probe, untrained-model and
  input-embedding controls, are in the details.
- ``geometry_grows_with_scale``: polar LAS at the largest model minus at the smallest, Welch's
  interval over seeds (:func:`bindscale.stats.mean_diff_ci`). Supported when it lies above ``margin``
  (LAS points as a share); not supported when below; inconclusive otherwise. The untrained model's
  and the identity probe's polar LAS per size are beside it: growth the controls show as well is not
  learned syntax (the details say so; the verdict is the source's claim about trained models).

Inconclusive, whatever the numbers, when a needed column is missing, a deciding value is NaN or
infinite, fewer than two model sizes are present, a size has fewer than ``MIN_REPLICATES`` distinct
seeds, or the deciding cells are degenerate (:func:`bindscale.report.verdicts.degenerate`: zero
spread within a cell, one value everywhere, all zero included).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from bindscale.report.verdicts import (
    MIN_REPLICATES,
    NAN3,
    _ci,
    _decide,
    _key,
    coerce_numeric,
    degenerate,
    restrict_to_mode,
)
from bindscale.stats import mean_ci, mean_diff_ci

from . import CLAIMS

DEFAULTS = {c.name: dict(c.defaults) for c in CLAIMS}
#: Swept settings fixed at their most common value before deciding.
FIXED = ("steps", "n_lm", "lr", "rank", "angular_weight", "heads")
KINDS = ("structural", "polar", "identity")
CONTROL_PREFIXES = {"trained": "", "untrained model": "untrained_", "input embeddings": "embed_"}


def deciding_rows(ok: pd.DataFrame) -> tuple[pd.DataFrame, dict]:
    """Trained-model rows at the most common value of every other swept setting, and the restriction note."""
    rows = ok
    if "model.source" in rows:
        rows = rows[rows["model.source"].fillna("trained").astype(str) == "trained"]
    return restrict_to_mode(rows, FIXED)


def _cells(rows: pd.DataFrame, col: str) -> dict[float, np.ndarray]:
    """Per model size, one value of ``col`` per distinct seed (a repeated seed's records averaged)."""
    per_seed = rows.groupby(["n_params", "seed"], sort=True)[col].mean().reset_index()
    return {s: g[col].to_numpy(float) for s, g in per_seed.groupby("n_params")}


def _screen(ok: pd.DataFrame, cols: tuple[str, ...], min_sizes: int = 1) -> tuple[pd.DataFrame | None, dict]:
    """The deciding rows, or None with a reason in the details (missing, NaN, fewer than ``min_sizes``
    model sizes or too few seeds)."""
    need = ("n_params", "seed", *cols)
    details: dict = {"seeds_per_cell": 0}
    missing = [c for c in need if c not in ok or not ok[c].notna().any()]
    if missing:
        details["reason"] = f"no {', '.join(missing)} in the table: the rule needs {', '.join(need)}"
        return None, details
    rows, note = deciding_rows(coerce_numeric(ok, need))
    details.update(note)
    if rows.empty:
        details["reason"] = "no trained-model trials"
        return None, details
    vals = rows[list(need)].to_numpy(dtype=float)
    bad = int((~np.isfinite(vals)).sum())
    if bad:
        details["reason"] = f"{bad} missing, NaN or infinite values among the deciding trials' {', '.join(need)}"
        return None, details
    sizes = sorted(rows["n_params"].unique())
    counts = rows.groupby("n_params")["seed"].nunique()
    details["seeds_per_cell"] = int(counts.min())
    details["sizes"] = [int(s) for s in sizes]
    if len(sizes) < min_sizes:
        details["reason"] = f"{len(sizes)} model size(s); the rule compares {min_sizes}"
        return None, details
    if details["seeds_per_cell"] < MIN_REPLICATES:
        details["reason"] = f"fewer than {MIN_REPLICATES} distinct seeds at some model size"
        return None, details
    return rows, details


def _controls(rows: pd.DataFrame, n_boot: int, seed: int) -> dict:
    """Per model size: mean test UUAS/LAS (both conventions) of every probe, for the model and each control."""
    out: dict = {}
    for name, prefix in CONTROL_PREFIXES.items():
        for kind in KINDS:
            for m in ("uuas_pp", "las_pp", "uuas_hm", "las_hm"):
                col = f"{prefix}{kind}_{m}"
                if col not in rows:
                    continue
                vals = pd.to_numeric(rows[col], errors="coerce")
                out.setdefault(name, {}).setdefault(kind, {})[m] = {
                    _key(s): float(vals[rows["n_params"] == s].mean()) for s in sorted(rows["n_params"].unique())}
    for m in ("uuas_pp", "uuas_hm"):
        if f"chain_{m}" in rows:
            out.setdefault("linear chain baseline", {})[m] = float(pd.to_numeric(rows[f"chain_{m}"], errors="coerce").mean())
    return out


def polar_beats_structural(ok: pd.DataFrame, p: Mapping, n_boot: int, seed: int) -> tuple:
    """Diego-Simón et al. 2024: the polar probe's LAS beats the structural probe's (see the module docstring)."""
    p = {**DEFAULTS["polar_beats_structural"], **p}
    stat = "polar_minus_structural_las_pp_largest_model"
    rows, details = _screen(ok, ("polar_minus_structural_las_pp", "polar_las_pp", "structural_las_pp"))
    if rows is None:
        return stat, "inconclusive", NAN3, 0, details
    cells = _cells(rows, "polar_minus_structural_las_pp")
    largest = max(cells)
    diff = cells[largest]
    details["by_size"] = {_key(s): _ci(mean_ci(v, n_boot, seed=seed), v.size) for s, v in cells.items()}
    if "polar_minus_structural_las_hm" in rows:
        hm = _cells(coerce_numeric(rows, ("polar_minus_structural_las_hm",)), "polar_minus_structural_las_hm")
        details["by_size_hewitt_manning_convention"] = {
            _key(s): _ci(mean_ci(v, n_boot, seed=seed), v.size) for s, v in hm.items()}
    details["controls"] = _controls(rows, n_boot, seed)
    details["largest_model_params"] = int(largest)
    big = rows[rows["n_params"] == largest]
    details["best_layers_largest_model"] = {  # layer (0 = input embeddings) -> trials choosing it, per probe
        kind: {_key(k): int(v) for k, v in pd.to_numeric(big[f"best_layer_{kind}"], errors="coerce").value_counts()
               .sort_index().items()}
        for kind in ("polar", "structural") if f"best_layer_{kind}" in big}
    why = degenerate([diff]) or degenerate([cells[largest], *(c for c in cells.values())])
    if why:
        details["reason"] = f"degenerate deciding cells: {why}"
        return stat, "inconclusive", NAN3, len(diff), details
    triple = mean_ci(diff, n_boot, seed=seed)
    verdict = _decide(triple, float(p["margin"]))
    details["reason"] = (f"polar − structural LAS (PolarProbe convention, each probe at its best dev layer) at the "
                         f"largest model ({int(largest):,} parameters) over {diff.size} seeds; supported when the "
                         f"interval lies above {p['margin']}, not supported when below")
    return stat, verdict, triple, len(diff), details


def geometry_grows_with_scale(ok: pd.DataFrame, p: Mapping, n_boot: int, seed: int) -> tuple:
    """The polar probe's LAS grows from the smallest to the largest model (see the module docstring)."""
    p = {**DEFAULTS["geometry_grows_with_scale"], **p}
    stat = "polar_las_pp_gain_largest_vs_smallest"
    rows, details = _screen(ok, ("polar_las_pp",), min_sizes=2)
    if rows is None:
        return stat, "inconclusive", NAN3, 0, details
    cells = _cells(rows, "polar_las_pp")
    small, large = min(cells), max(cells)
    details["polar_las_pp_by_size"] = {_key(s): _ci(mean_ci(v, n_boot, seed=seed), v.size) for s, v in cells.items()}
    details["controls"] = _controls(rows, n_boot, seed)
    for name, prefix in (("untrained_model", "untrained_"), ("identity_probe", ""), ("input_embeddings", "embed_")):
        col = f"{prefix}{'identity' if name == 'identity_probe' else 'polar'}_las_pp"
        if col in rows:
            c = _cells(coerce_numeric(rows, (col,)), col)
            details[f"{name}_gain"] = _ci(mean_diff_ci(c[large], c[small], n_boot, seed=seed), c[large].size + c[small].size)
    n = cells[large].size + cells[small].size
    why = degenerate(list(cells.values()))
    if why:
        details["reason"] = f"degenerate deciding cells: {why}"
        return stat, "inconclusive", NAN3, n, details
    triple = mean_diff_ci(cells[large], cells[small], n_boot, seed=seed)
    verdict = _decide(triple, float(p["margin"]))
    details["reason"] = (f"polar LAS (PolarProbe convention, best dev layer) at {int(large):,} minus at {int(small):,} "
                         f"parameters; supported when the interval lies above {p['margin']}, not supported when below")
    return stat, verdict, triple, n, details
