"""Verdict rules of the ``length_transfer`` study (Cai et al. 2025, "Extrapolation by Association:
Length Generalization Transfer in Transformers", arXiv 2506.09251).

Each claim is named after what Cai et al. assert (the size claim is the seed's question on their
setting), so "supported" means they are right. Terms:

- *condition* of a trial: ``alone`` (no auxiliary), ``related`` (an auxiliary set Cai et al. pair
  with the main task, :data:`.tasks.RELATED`) or ``unrelated`` (any other auxiliary);
- *cell*: trials equal in everything but the auxiliary and the seed (:data:`CELL`); its replicates
  are distinct seeds (repeated records of a seed are averaged);
- *beyond L*: ``acc_beyond``, the main task's exact match at lengths L+1..aux_len;
- *transfer gain* of a co-trained trial (:func:`prepare_rows`): its ``acc_beyond`` minus the mean
  ``acc_beyond`` of the main-alone trials of its cell (NaN without such trials);
- *deciding slice*: RoPE trials (all trials when no ``pos`` column), the most common main task among
  related trials, the most common related auxiliary set of it.

Rules (95% intervals; ``margin`` and the others are thresholds of the study file):

- ``length_transfer_exists``: related minus alone ``acc_beyond`` at the largest model size of the
  slice (Welch, :func:`bindscale.stats.mean_diff_ci`). Supported when the interval lies above
  ``margin``, not supported when below, else inconclusive.
- ``unrelated_aux_no_transfer``: unrelated minus alone at the same cell. Supported when the
  interval lies below ``margin``, not supported when above.
- ``head_reuse_predicts_transfer``: Spearman correlation of ``head_corr`` with the transfer gain
  over every co-trained trial (pairs bootstrap, :func:`bindscale.stats.correlation_ci`). Supported
  when the interval lies above ``margin``, not supported when it lies below ``null_band`` (reuse
  predicts transfer weakly at best), else inconclusive; inconclusive with fewer than
  ``min_trials`` trials.
- ``transfer_grows_with_size``: (related − alone) at the largest size minus at the smallest, four
  independent seed groups (:func:`bindscale.stats.strata_mean_ci`, weights 1, −1, −1, 1). Supported
  above ``margin``, not supported below.

Every rule is inconclusive, whatever the numbers, when a column it needs is missing, a deciding
value is NaN or infinite, a deciding cell has fewer than ``MIN_REPLICATES`` seeds, the deciding
cells are degenerate (:func:`bindscale.report.verdicts.degenerate` with ``discrete=True``:
accuracies are shares of a few test examples, so one all-zero cell is a measurement, but every
cell flat or one value everywhere — all zero included — is not), the main task alone was not
learned within its training lengths (mean ``acc_in`` below ``min_in_acc``: failing beyond L then
says nothing), or the compared auxiliary was not learned within its own lengths (mean
``aux_acc_in`` of its trials at the deciding size below ``min_aux_acc``: it has no length skill to
transfer or withhold). Details carry ``seeds_per_cell`` and the numbers reported beside the deciding one
(NoPE, other sizes, other task pairs, past the auxiliary's length).
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
    _decide_below,
    _key,
    coerce_numeric,
    degenerate,
    ok_rows,
)
from bindscale.stats import correlation_ci, mean_ci, mean_diff_ci, strata_mean_ci

from .tasks import relation

#: Columns whose values make a cell (everything that differs between trials but the auxiliary and the seed).
CELL = ("main", "main_len", "aux_len", "n_train", "layers", "d_model", "heads", "pos", "steps", "lr")
NUMERIC = ("acc_in", "acc_beyond", "acc_past", "aux_acc_in", "head_corr", "head_corr_em", "head_jaccard",
           "n_params", "seed", "main_len", "aux_len")
#: Numbers each rule needs.
NEED = ("acc_in", "acc_beyond", "n_params", "seed", "main", "aux")


def _aux_tuple(v) -> tuple[str, ...]:
    s = str(v)
    return () if s in ("none", "", "nan", "None") else tuple(s.split("+"))


def prepare_rows(df: pd.DataFrame) -> pd.DataFrame:
    """The ok rows, numbers coerced, with ``condition`` and ``transfer_gain`` (see the module docstring)."""
    ok = coerce_numeric(ok_rows(df), NUMERIC)
    if not {"main", "aux"} <= set(ok.columns):
        return ok
    ok["condition"] = [relation(str(m), _aux_tuple(a)) for m, a in zip(ok["main"], ok["aux"])]
    cell = [c for c in CELL if c in ok]
    ok["transfer_gain"] = np.nan
    if "acc_beyond" not in ok or not len(ok):
        return ok
    key = ok[cell].astype(str).agg("|".join, axis=1)
    alone = ok[ok["condition"] == "alone"].groupby(key[ok["condition"] == "alone"])["acc_beyond"].mean()
    co = ok["condition"] != "alone"
    ok.loc[co, "transfer_gain"] = ok.loc[co, "acc_beyond"].to_numpy(float) - key[co].map(alone).to_numpy(float)
    return ok


def _missing(ok: pd.DataFrame, cols) -> list[str]:
    return [c for c in cols if c not in ok or not ok[c].notna().any()]


def _per_seed(rows: pd.DataFrame, col: str) -> np.ndarray:
    """One value per distinct seed (repeated records of a seed averaged)."""
    return rows.groupby("seed")[col].mean().to_numpy(float)


def _slice(ok: pd.DataFrame, details: dict) -> tuple[pd.DataFrame, str | None, str | None]:
    """The deciding slice (RoPE, most common main task with related trials, its most common related set)."""
    rows = ok
    if "pos" in rows and rows["pos"].notna().any():
        rows = rows[rows["pos"].astype(str) == "rope"]
    rel = rows[rows["condition"] == "related"]
    if rel.empty:
        return rows.iloc[0:0], None, None
    main = str(rel["main"].value_counts().sort_index().idxmax())
    aux = str(rel.loc[rel["main"] == main, "aux"].value_counts().sort_index().idxmax())
    rows = rows[(rows["main"] == main) & ((rows["condition"] != "related") | (rows["aux"] == aux))]
    details |= {"main_used": main, "related_aux_used": aux}
    return rows, main, aux


def _by_size(rows: pd.DataFrame) -> dict:
    """n_params → (condition → per-seed acc_beyond) in the slice."""
    out: dict = {}
    for size, g in rows.groupby("n_params"):
        out[size] = {c: _per_seed(gc, "acc_beyond") for c, gc in g.groupby("condition")}
    return out


def _common(ok: pd.DataFrame, p: Mapping, stat: str, other: str) -> tuple:
    """Shared checks of the gain rules: ``(None, slice info)`` when fine, else an inconclusive verdict tuple.

    ``other``: the co-trained condition compared with ``alone`` ("related" or "unrelated").
    """
    details: dict = {"seeds_per_cell": 0}
    miss = _missing(ok, NEED)
    if miss:
        details["reason"] = f"no {', '.join(miss)} in the table: the rule needs {', '.join(NEED)}"
        return (stat, "inconclusive", NAN3, len(ok), details), None
    rows, main, _ = _slice(ok, details)
    if main is None:
        details["reason"] = "no RoPE trial of a main task with its related auxiliary"
        return (stat, "inconclusive", NAN3, 0, details), None
    bad = int(sum((~np.isfinite(rows[c].to_numpy(float))).sum() for c in ("acc_in", "acc_beyond", "n_params", "seed")))
    if bad:
        details["reason"] = f"{bad} missing, NaN or infinite accuracies, sizes or seeds among the deciding trials"
        return (stat, "inconclusive", NAN3, len(rows), details), None
    sizes = _by_size(rows)
    details["acc_beyond_by_size"] = {_key(s): {c: float(v.mean()) for c, v in d.items()} for s, d in sizes.items()}
    for col in ("acc_in", "acc_past"):  # within L, and past the auxiliary's length, beside "beyond L"
        if col in rows:
            details[f"{col}_by_size"] = {_key(s): {c: float(gc[col].mean()) for c, gc in g.groupby("condition")}
                                         for s, g in rows.groupby("n_params")}
    have = [s for s, d in sizes.items() if "alone" in d and other in d]
    if not have:
        details["reason"] = f"no model size has both main-alone and {other} trials in the deciding slice"
        return (stat, "inconclusive", NAN3, len(rows), details), None
    largest = max(have)
    alone_in = rows[(rows["n_params"] == largest) & (rows["condition"] == "alone")]
    details["alone_acc_in_largest"] = float(alone_in["acc_in"].mean())
    co = rows[(rows["n_params"] == largest) & (rows["condition"] == other)]
    details[f"{other}_aux_acc_in_largest"] = (float(co["aux_acc_in"].mean()) if "aux_acc_in" in co
                                              and co["aux_acc_in"].notna().any() else float("nan"))
    details["deciding_size"] = _key(largest)
    return None, (rows, sizes, largest, details)


def _unlearned(details: dict, p: Mapping, other: str) -> str | None:
    """Why the deciding cell cannot speak, or None: the main task alone was not learned within L, or the
    auxiliary was not learned within its own lengths (then there is nothing it could transfer)."""
    if details["alone_acc_in_largest"] < p["min_in_acc"]:
        return (f"the main task alone reached exact match {details['alone_acc_in_largest']:.3f} within its "
                f"training lengths at the largest size, below min_in_acc {p['min_in_acc']}: it was not learned, so "
                f"failing beyond L says nothing about transfer")
    aux = details[f"{other}_aux_acc_in_largest"]
    if not aux >= p["min_aux_acc"]:  # NaN too: no auxiliary accuracy recorded
        return (f"the {other} auxiliary reached exact match {aux:.3f} within its own training lengths at the largest "
                f"size, below min_aux_acc {p['min_aux_acc']}: it was not learned, so it has no length skill to "
                f"transfer (or to withhold)")
    return None


def _gain_rule(ok: pd.DataFrame, p: Mapping, n_boot: int, seed: int, other: str, stat: str, decide) -> tuple:
    done, info = _common(ok, p, stat, other)
    if done:
        return done
    rows, sizes, largest, details = info
    a, b = sizes[largest][other], sizes[largest]["alone"]
    n = int(a.size + b.size)
    details["seeds_per_cell"] = int(min(a.size, b.size))
    triple = mean_diff_ci(a, b, n_boot, seed=seed)
    details["gain_by_size"] = {_key(s): _ci(mean_diff_ci(d[other], d["alone"]), d[other].size + d["alone"].size)
                               for s, d in sizes.items() if other in d and "alone" in d}
    _beside(ok, details, other)
    details["gain_by_pos_same_pair"] = _by_pos(ok, details["main_used"], details["related_aux_used"], other)
    if details["seeds_per_cell"] < MIN_REPLICATES:
        details["reason"] = f"fewer than {MIN_REPLICATES} distinct seeds in a deciding cell"
        return stat, "inconclusive", NAN3, n, details
    why = _unlearned(details, p, other)
    if why:
        details["reason"] = why
        return stat, "inconclusive", NAN3, n, details
    why = degenerate([a, b], discrete=True)
    if why:
        details["reason"] = (f"degenerate deciding cells: {why} (no trial of the cell reached any exact match beyond "
                             f"L, or every seed gave the same value)")
        return stat, "inconclusive", NAN3, n, details
    details["reason"] = (f"main task {details['main_used']}, largest size {details['deciding_size']} parameters: "
                         f"{other} {a.mean():.3f} vs alone {b.mean():.3f} exact match beyond L; margin {p['margin']}")
    return stat, decide(triple, p["margin"]), triple, n, details


def _beside(ok: pd.DataFrame, details: dict, other: str) -> None:
    """NoPE, the other task pairs and past-the-auxiliary gains, reported beside the deciding number."""
    co = ok[ok["condition"] == other]
    if "transfer_gain" not in ok or co.empty:
        return
    keys = [c for c in ("pos", "main", "aux") if c in co]
    details["mean_gain_by_pos_main_aux"] = {"/".join(map(str, k if isinstance(k, tuple) else (k,))):
                                            float(g["transfer_gain"].mean())
                                            for k, g in co.groupby(keys)}
    if "pos" in co:
        for pos, g in co.groupby("pos"):
            details[f"gain_{pos}_all_cells"] = _ci(mean_ci(g["transfer_gain"]), len(g))


def _by_pos(ok: pd.DataFrame, main: str, aux: str, other: str) -> dict:
    """Per position scheme, the ``other``-minus-alone gain beyond L of the deciding main task (and related
    set) at the largest size that has both, Welch interval: RoPE vs NoPE side by side (Cai et al. report
    RoPE transferring better than NoPE)."""
    if "pos" not in ok:
        return {}
    out = {}
    for pos, g in ok[ok["main"] == main].groupby(ok["pos"].astype(str)):
        g = g[(g["condition"] != "related") | (g["aux"] == aux)]
        sizes = _by_size(g)
        have = [s for s, d in sizes.items() if "alone" in d and other in d]
        if have:
            d = sizes[max(have)]
            out[pos] = {**_ci(mean_diff_ci(d[other], d["alone"]), d[other].size + d["alone"].size),
                        "n_params": _key(max(have))}
    return out


def length_transfer_exists(ok: pd.DataFrame, p: Mapping, n_boot: int, seed: int) -> tuple:
    """Cai et al. 2025: related co-training raises exact match beyond L (see the module docstring)."""
    return _gain_rule(ok, p, n_boot, seed, "related", "transfer_gain_related_minus_alone", _decide)


def unrelated_aux_no_transfer(ok: pd.DataFrame, p: Mapping, n_boot: int, seed: int) -> tuple:
    """Cai et al. 2025: an unrelated auxiliary gives no gain beyond L (see the module docstring)."""
    return _gain_rule(ok, p, n_boot, seed, "unrelated", "gain_unrelated_minus_alone", _decide_below)


def transfer_grows_with_size(ok: pd.DataFrame, p: Mapping, n_boot: int, seed: int) -> tuple:
    """The transfer gain is larger at the largest size than at the smallest (see the module docstring)."""
    stat = "transfer_gain_largest_minus_smallest_size"
    done, info = _common(ok, p, stat, "related")
    if done:
        return done
    rows, sizes, largest, details = info
    have = sorted(s for s, d in sizes.items() if "alone" in d and "related" in d)
    if len(have) < 2:
        details["reason"] = "fewer than two model sizes with both main-alone and related trials"
        return stat, "inconclusive", NAN3, len(rows), details
    small = have[0]
    groups = [sizes[largest]["related"], sizes[largest]["alone"], sizes[small]["related"], sizes[small]["alone"]]
    n = int(sum(g.size for g in groups))
    details["smallest_size"] = _key(small)
    details["seeds_per_cell"] = int(min(g.size for g in groups))
    details["gain_by_size"] = {_key(s): _ci(mean_diff_ci(sizes[s]["related"], sizes[s]["alone"]),
                                            sizes[s]["related"].size + sizes[s]["alone"].size) for s in have}
    triple = strata_mean_ci(groups, weights=[1.0, -1.0, -1.0, 1.0])
    if details["seeds_per_cell"] < MIN_REPLICATES:
        details["reason"] = f"fewer than {MIN_REPLICATES} distinct seeds in a deciding cell"
        return stat, "inconclusive", NAN3, n, details
    why = _unlearned(details, p, "related")
    if why:
        details["reason"] = why
        return stat, "inconclusive", NAN3, n, details
    why = degenerate(groups, discrete=True)
    if why:
        details["reason"] = f"degenerate deciding cells: {why}"
        return stat, "inconclusive", NAN3, n, details
    details["reason"] = (f"gain beyond L {triple[0]:+.3f} larger at {details['deciding_size']} than at "
                         f"{details['smallest_size']} parameters; margin {p['margin']}")
    return stat, _decide(triple, p["margin"]), triple, n, details


def head_reuse_predicts_transfer(ok: pd.DataFrame, p: Mapping, n_boot: int, seed: int) -> tuple:
    """Cai et al. 2025: head-map similarity correlates with the transfer gain (see the module docstring)."""
    stat = "spearman_head_similarity_vs_transfer_gain"
    details: dict = {"seeds_per_cell": 0}
    miss = _missing(ok, ("head_corr", "transfer_gain", "seed"))
    if miss:
        details["reason"] = f"no {', '.join(miss)} in the table: the rule needs head_corr and transfer gains"
        return stat, "inconclusive", NAN3, 0, details
    co = ok[ok["condition"] != "alone"]
    x, y = co["head_corr"].to_numpy(float), co["transfer_gain"].to_numpy(float)
    if np.isinf(x).any() or np.isinf(y).any():
        details["reason"] = "infinite head similarities or gains: bad data"
        return stat, "inconclusive", NAN3, len(co), details
    keep = np.isfinite(x) & np.isfinite(y)
    n = int(keep.sum())
    details["trials_without_a_value"] = int((~keep).sum())
    details["seeds_per_cell"] = int(co.loc[keep, "seed"].nunique()) if n else 0
    if "head_jaccard" in co:
        details["spearman_jaccard_vs_gain"] = _ci(correlation_ci(co["head_jaccard"], co["transfer_gain"],
                                                                 n_boot=n_boot, seed=seed), n)
    for cond, g in co.groupby("condition"):
        details[f"mean_head_corr_{cond}"] = float(g["head_corr"].mean())
    if n < p["min_trials"]:
        details["reason"] = f"{n} co-trained trials with a head similarity and a gain, fewer than {int(p['min_trials'])}"
        return stat, "inconclusive", NAN3, n, details
    why = degenerate([x[keep]]) or degenerate([y[keep]])
    if why:
        details["reason"] = f"degenerate inputs: {why} (a correlation needs both to vary)"
        return stat, "inconclusive", NAN3, n, details
    triple = correlation_ci(x[keep], y[keep], "spearman", n_boot=n_boot, seed=seed)
    lo, hi = triple[1], triple[2]
    verdict = ("inconclusive" if not np.isfinite(lo) else "supported" if lo > p["margin"]
               else "not_supported" if hi < p["null_band"] else "inconclusive")
    details["reason"] = (f"{n} co-trained trials; supported when the interval lies above {p['margin']}, not "
                         f"supported when it lies below {p['null_band']}")
    return stat, verdict, triple, n, details
