"""Verdict rules of the ``length_transfer`` study (Cai et al. 2025, "Extrapolation by Association:
Length Generalization Transfer in Transformers", arXiv 2506.09251).

Each claim is named after what Cai et al. assert (the size claim is the seed's question on their
setting), so "supported" means they are right. Terms:

- *condition* of a trial: ``alone`` (no auxiliary), ``related`` (an auxiliary set Cai et al. pair
  with the main task, :data:`.tasks.RELATED`), ``unrelated`` (no task of a related set) or
  ``partial`` (part of a related set, or one mixed with other tasks: used by no rule);
- *cell*: trials equal in everything but the auxiliary and the seed (:data:`CELL`); its replicates
  are distinct seeds (repeated records of a seed are averaged);
- *beyond L*: ``acc_beyond``, the main task's exact match at lengths L+1..aux_len;
- *transfer gain* of a co-trained trial (:func:`prepare_rows`): its ``acc_beyond`` minus the mean
  ``acc_beyond`` of the main-alone trials of its cell (NaN without such trials);
- *deciding trials* (:data:`DECIDING`): the pair the default study file plans as deciding — main task
  ``caprev`` (capitalise-and-reverse) alone, with ``cap+rev`` (related: Cai et al.'s capitalise + reverse
  set) and with ``copy`` (unrelated), RoPE. Chosen because it is the pair a CPU budget learns: at 3,000
  steps of 64 (peak lr 0.01, 40,000 examples) every member reaches its training lengths in pilots (the
  copy/MQAR and addition pairs do not, see the study files). Fixed here, never "the most common" pair of the table: a table without them is inconclusive;
- *size*: a model shape (``layers``, ``d_model``, ``heads``), ordered by ``layers · d_model²``; the
  *largest* / *smallest* size is the largest / smallest one with an ok deciding trial, and a guard
  (:func:`planned_size_guard`) makes a verdict inconclusive when that is not the largest / smallest
  size the table plans (a planned size whose trials all diverged or failed). At a deciding size the
  deciding trials must form exactly one cell (one ``main_len``, ``aux_len``, ``steps``, ``lr``, ...).

Rules (95% intervals; ``margin`` and the others are thresholds of the study file):

- ``length_transfer_exists``: related minus alone ``acc_beyond`` at the largest size (Welch,
  :func:`bindscale.verdicts.stats.mean_diff_ci`). Supported when the interval lies above ``margin``, not
  supported when below, else inconclusive.
- ``unrelated_aux_no_transfer``: unrelated minus alone at the same size; only once the related
  auxiliary transfers there (the transfer rule's test on the same cell is supported: a control shows
  nothing when nothing transfers). Supported when the interval lies below ``margin``, not supported
  when above. Related minus unrelated is reported beside.
- ``head_reuse_predicts_transfer``: Spearman correlation of ``head_corr`` with the transfer gain
  *within cells* (ranks residualised on cell indicators, :func:`bindscale.verdicts.stats.partial_spearman_within`:
  size and auxiliary cannot drive both), over the deciding pair's related and unrelated co-trained
  trials (:data:`DECIDING`, every size; the other pairs of the default file are not learned on its
  budget); pairs bootstrap. Every co-trained cell and the main-alone cell its gains are measured from
  are deciding cells, gated by the engine (no per-trial selection on the learning checks). Supported when the interval lies above ``margin``, not
  supported when below it (reuse predicts transfer weakly at best), inconclusive when it straddles it,
  with fewer than ``min_trials`` trials or with fewer than ``MIN_REPLICATES`` seeds in a cell and condition.
- ``transfer_grows_with_size``: (related − alone) at the largest size minus at the smallest, four
  independent seed groups (:func:`bindscale.verdicts.stats.strata_mean_ci`, weights 1, −1, −1, 1), every check
  at both sizes. Supported above ``margin``, not supported below.

Every gain rule is inconclusive, whatever the numbers, when a column it needs is missing, a value of a
deciding trial is NaN or infinite (values of other trials are reported, never deciding), a deciding
cell has fewer than ``MIN_REPLICATES`` seeds (a caveat below ``CONCLUSIVE_SEEDS``: the default file
plans 7 in every deciding cell, length_transfer-full 10, length_transfer-paper 8), or the deciding cells are degenerate
(:func:`bindscale.verdicts.engine.degenerate` with ``discrete=True``). One arm flat at 0 (or 1) beyond L
is a measurement once the gates pass and decides; every compared arm at 0, or every one at 1
(the alone arm too), is the metric's floor or ceiling (:func:`bindscale.kit.at_bound`) and says nothing:
inconclusive. A deciding trial with a NaN accuracy is left out and counted as a lost
seed of its cell (``details["deciding_cells"]``): the engine decides only with ``min_seeds`` of the
planned seeds left.

Competence gates (:data:`.GATES`, checked by the engine on every cell a rule names in
``details["deciding_cells"]``, per model: a seed that misses one is left out and counted against
``min_seeds``, and the rule decides again on the seeds left): the main task's exact match within its
training lengths ``acc_in`` ≥ ``min_in_acc`` in every deciding cell (the main-alone arm too: failing
beyond L says nothing about a task not learned within L; a co-trained main task below it was wrecked by
its auxiliary, which shows no transfer trivially), and the auxiliary's exact match within its own
lengths ``aux_acc_in`` ≥ ``min_aux_acc`` in every co-trained cell (an auxiliary that did not learn its
lengths has no length skill to lend or withhold); main-alone cells are named with
``gated=["acc_in"]``. Both levels are 0.95 (Cai et al.'s models solve their training ranges). The rules
report each arm's fits (``fits_largest_size``, ``fits_smallest_size``) and state their finding in
numbers in ``reason``.

Interval coverage (``benchmarks/length_transfer_coverage.py``, 1000 repetitions): per-seed exact match
beyond L is zero-inflated alone and bimodal co-trained (a few seeds transfer; Cai et al. report strong
seed instability). With a related cell of which a share p of seeds transfer (~0.8, else ~0.02) against
a zero-inflated alone cell, Welch's 95% interval covers 0.93 at p = 0.3 and 0.56 at p = 0.1 with 8
seeds per cell, 0.94 and 0.82 with 16; the percentile (0.92, 0.54; 0.94, 0.81) and BCa (0.93, 0.53;
0.96, 0.81) seed bootstraps of ``scipy.stats.bootstrap`` do no better, so Welch stays. The failure is
rare transfer: with 8 seeds no transferring seed is drawn 43% of the time at p = 0.1, and no interval
from those seeds can see it. Details therefore carry ``transferring_share_upper``: the one-sided 95%
upper bound on the share of related seeds beyond every alone seed (Clopper–Pearson), which a "not
supported" verdict does not exclude.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
import pandas as pd
from scipy import stats as sps

from bindscale.kit import (
    MIN_REPLICATES,
    NAN3,
    at_bound,
    ci_entry,
    no_room,
    deciding_cell,
    decide as _decide,
    decide_below,
    json_key,
    to_python,
    coerce_numeric,
    degenerate,
    Verdict,
    ok_rows,
    bootstrap_ci,
    correlation_ci,
    mean_ci,
    mean_diff_ci,
    partial_spearman_within,
    strata_mean_ci,
)

from .tasks import relation

#: Columns whose values make a cell (everything that differs between trials but the auxiliary and the seed).
CELL = ("main", "main_len", "aux_len", "n_train", "layers", "d_model", "heads", "pos", "steps", "lr", "model_path")
#: Columns of a model size.
SIZE = ("layers", "d_model", "heads")
NUMERIC = ("acc_in", "acc_beyond", "acc_past", "aux_acc_in", "head_corr", "head_corr_em", "head_jaccard",
           "n_params", "seed", "main_len", "aux_len", "layers", "d_model", "heads")
#: Numbers each gain rule needs.
NEED = ("acc_in", "acc_beyond", "aux_acc_in", "n_params", "seed", "main", "aux", "d_model")
#: The deciding trials: the pair the default study file plans as deciding (its first grids). Cai et al.'s
#: capitalise-and-reverse with capitalise + reverse, RoPE (their default), copy as the unrelated control
#: (learned at the auxiliary's lengths, shares no task with the related set). Auxiliary sets are compared as
#: sets, so ``rev+cap`` is ``cap+rev``.
DECIDING = {"main": "caprev", "related": "cap+rev", "unrelated": "copy", "pos": "rope"}


def _aux_tuple(v) -> tuple[str, ...]:
    s = str(v)
    return () if s in ("none", "", "nan", "None") else tuple(s.split("+"))


def _conditions(df: pd.DataFrame) -> list[str]:
    return [relation(str(m), _aux_tuple(a)) for m, a in zip(df["main"], df["aux"])]


def _cell_key(df: pd.DataFrame) -> pd.Series:
    cell = [c for c in CELL if c in df]
    if not cell or df.empty:  # agg(axis=1) on no rows gives a DataFrame, not a Series
        return pd.Series("", index=df.index, dtype=object)
    return df[cell].map(str).agg("|".join, axis=1)  # str(NaN) is "nan" (astype(str) may keep NaN missing)


def prepare_rows(df: pd.DataFrame) -> pd.DataFrame:
    """The ok rows, numbers coerced, with ``condition``, ``transfer_gain`` and ``alone_acc_in`` (the mean
    ``acc_in`` of the main-alone trials of the row's cell; see the module docstring)."""
    ok = coerce_numeric(ok_rows(df), NUMERIC)
    if not {"main", "aux"} <= set(ok.columns):
        return ok
    ok["condition"] = _conditions(ok)
    ok["transfer_gain"] = np.nan
    ok["alone_acc_in"] = np.nan
    if "acc_beyond" not in ok or not len(ok):
        return ok
    key = _cell_key(ok)
    is_alone = ok["condition"] == "alone"
    alone = ok[is_alone].groupby(key[is_alone])
    co = ~is_alone
    ok.loc[co, "transfer_gain"] = (ok.loc[co, "acc_beyond"].to_numpy(float)
                                   - key[co].map(alone["acc_beyond"].mean()).to_numpy(float))
    if "acc_in" in ok:
        ok["alone_acc_in"] = key.map(alone["acc_in"].mean()).to_numpy(float)
    return ok


def _missing(ok: pd.DataFrame, cols) -> list[str]:
    return [c for c in cols if c not in ok or not ok[c].notna().any()]


def _per_seed(rows: pd.DataFrame, col: str) -> np.ndarray:
    """One value per distinct seed (repeated records of a seed averaged)."""
    return rows.groupby("seed")[col].mean().to_numpy(float)


def _size_of(rows: pd.DataFrame) -> pd.Series:
    """Each row's size: a tuple of the :data:`SIZE` columns present."""
    cols = [c for c in SIZE if c in rows]
    return pd.Series([tuple(to_python(v) for v in t) for t in rows[cols].itertuples(index=False)], index=rows.index,
                     dtype=object)


def _order(size: tuple, cols: list[str]) -> tuple:
    """Sort key of a size: ``layers · d_model²`` (weights up to a constant), then ``d_model``."""
    v = dict(zip(cols, size))
    d = float(v.get("d_model", np.nan))
    return (float(v.get("layers", 1)) * d * d, d)


def _label(size: tuple, cols: list[str]) -> dict:
    return dict(zip(cols, size))


def _deciding(df: pd.DataFrame) -> pd.DataFrame:
    """The deciding trials (:data:`DECIDING`) of any table (ok rows or the whole table), with ``condition``."""
    if not {"main", "aux"} <= set(df.columns):
        return df.iloc[0:0]
    rows = df[df["main"].astype(str) == DECIDING["main"]].copy()
    if "pos" in rows:
        rows = rows[rows["pos"].astype(str) == DECIDING["pos"]]
    if "condition" not in rows:
        rows["condition"] = _conditions(rows) if len(rows) else []
    aux = [frozenset(_aux_tuple(a)) for a in rows["aux"]]
    related, unrelated = (frozenset(_aux_tuple(DECIDING[k])) for k in ("related", "unrelated"))
    keep = ((rows["condition"] == "alone")
            | ((rows["condition"] == "related") & np.array([a == related for a in aux], dtype=bool))
            | ((rows["condition"] == "unrelated") & np.array([a == unrelated for a in aux], dtype=bool)))
    return rows[keep]


def _cell_of(g: pd.DataFrame, among: pd.DataFrame) -> dict:
    """A deciding cell as :func:`bindscale.kit.deciding_cell` takes it: the columns that pick its trials ``g`` out of
    the table, in the order a reader looks for them: task, auxiliary, shape, position scheme, then the other
    :data:`CELL` settings only where they vary among ``among`` (the trials the rule read), so that the reason reads
    "main caprev, aux cap+rev, layers 2, d_model 64, heads 4, pos rope" and still names one cell."""
    order = ("main", "aux", "layers", "d_model", "heads", "pos")
    order += tuple(c for c in CELL if c not in order and c in among and among[c].astype(str).nunique() > 1)
    return {c: (str(g[c].iloc[0]) if c == "aux" else to_python(g[c].iloc[0]))
            for c in order if c in g and g[c].astype(str).nunique() == 1}


def _pair_text() -> str:
    return (f"{DECIDING['main']} alone / + {DECIDING['related']} (related) / + {DECIDING['unrelated']} (unrelated), "
            f"{DECIDING['pos']}")


def _upper_share(k: int, n: int) -> float:
    """One-sided 95% Clopper–Pearson upper bound on a share after ``k`` of ``n`` (Clopper & Pearson 1934)."""
    return 1.0 if k >= n else float(sps.beta.ppf(0.95, k + 1, n - k))


def _common(ok: pd.DataFrame, p: Mapping, stat: str, conds: tuple[str, ...], both: bool = False) -> tuple:
    """Shared checks of the gain rules: ``(None, info)`` when fine, else ``(inconclusive tuple, None)``.

    ``conds``: the conditions compared (``alone`` first); ``both``: the largest and the smallest size
    (else the largest). ``info``: ``(groups, details)``, ``groups[where][condition]`` the rows of one cell.
    """
    details: dict = {"seeds_per_cell": 0, "deciding_trials": _pair_text()}

    def stop(reason: str, n: int = 0) -> tuple:
        details["reason"] = reason
        return Verdict(stat, "inconclusive", NAN3, n, details), None

    miss = _missing(ok, NEED)
    if miss:
        return stop(f"no {', '.join(miss)} in the table: the rule needs {', '.join(NEED)}", len(ok))
    rows = _deciding(ok)
    absent = [c for c in conds if not (rows["condition"] == c).any()]
    if absent:
        return stop(f"no ok {' or '.join(absent)} trial among the deciding trials ({_pair_text()})", len(rows))
    cols = [c for c in SIZE if c in rows]
    size = _size_of(rows)
    sizes = sorted(set(size), key=lambda t: _order(t, cols))
    details["acc_beyond_by_size"] = {
        json_key(g["n_params"].mean()): {c: float(gc["acc_beyond"].mean()) for c, gc in g.groupby("condition")}
        for _, g in rows.groupby(size)}
    for col in ("acc_in", "acc_past"):  # within L, and past the auxiliary's length, beside "beyond L"
        if col in rows:
            details[f"{col}_by_size"] = {json_key(g["n_params"].mean()): {c: float(gc[col].mean())
                                                                      for c, gc in g.groupby("condition")}
                                         for _, g in rows.groupby(size)}
    targets = {"largest": sizes[-1]}
    if both:
        if len(sizes) < 2:
            return stop("fewer than two model sizes among the deciding trials", len(rows))
        targets["smallest"] = sizes[0]
    groups: dict = {}
    n = 0
    for where, sz in targets.items():
        g = rows[size == sz]
        n += len(g)
        details[f"{'deciding' if where == 'largest' else 'smallest'}_shape"] = _label(sz, cols)
        details["deciding_size" if where == "largest" else "smallest_size"] = json_key(g["n_params"].mean())
        lacking = [c for c in conds if not (g["condition"] == c).any()]
        if lacking:
            return stop(f"no ok {' or '.join(lacking)} trial at the {where} size {_label(sz, cols)} (a smaller size "
                        "does not stand in for it)", n)
        cells = _cell_key(g).nunique()
        if cells > 1:
            vary = [c for c in CELL if c in g and g[c].astype(str).nunique() > 1]
            return stop(f"the deciding trials at the {where} size form {cells} cells (differing in "
                        f"{', '.join(vary)}): one cell is compared, never a pool of settings", n)
        finite = np.ones(len(g), dtype=bool)
        for c in ("acc_in", "acc_beyond", "seed"):
            finite &= np.isfinite(g[c].to_numpy(float))
        finite &= (g["condition"] == "alone").to_numpy() | np.isfinite(g["aux_acc_in"].to_numpy(float))
        if not finite.all():
            # Dropped here, counted by the engine against the cell's planned seeds (min_seeds).
            details.setdefault("trials_with_nan_accuracies", {})[where] = int((~finite).sum())
            g = g[finite]
            lacking = [c for c in conds if not (g["condition"] == c).any()]
            if lacking:
                return stop(f"every {' and '.join(lacking)} trial at the {where} size has a NaN or infinite accuracy "
                            "or seed", n)
        groups[where] = {c: g[g["condition"] == c] for c in conds}
        # Every compared arm is a deciding cell: the engine counts its seeds and checks the claim's gates on it
        # (the main task within L everywhere, the auxiliary within its own lengths where there is one).
        details.setdefault("deciding_cells", []).extend(
            deciding_cell(_cell_of(gc, rows), gc["seed"].nunique(), gated=["acc_in"] if cond == "alone" else True)
            for cond, gc in groups[where].items())
    details["seeds_per_cell"] = int(min(gc["seed"].nunique() for g in groups.values() for gc in g.values()))
    if details["seeds_per_cell"] < MIN_REPLICATES:
        return stop(f"fewer than {MIN_REPLICATES} distinct seeds in a deciding cell", n)
    # Whether each arm learned its training range (main within L, auxiliary within its own lengths) is the
    # engine's competence gate on the deciding cells named above; the fits stay in the details for the report.
    for where, g in groups.items():
        details[f"fits_{where}_size"] = {c: {"acc_in": float(gc["acc_in"].mean()),
                                             **({} if c == "alone" else {"aux_acc_in": float(gc["aux_acc_in"].mean())})}
                                         for c, gc in g.items()}
    cells = [_per_seed(gc, "acc_beyond") for g in groups.values() for gc in g.values()]
    allv = np.concatenate(cells)
    if not np.isin(allv, (0.0, 1.0)).all():  # flat at 0 or 1 is a bound, judged by each rule on its own arms
        why = degenerate(cells, discrete=True)
        if why:
            return stop(f"degenerate deciding cells: {why} (every seed gave the same value)", n)
    return None, (groups, details)


def _bounded(groups: dict, arms: tuple[tuple[str, str], ...]) -> str | None:
    """:func:`bindscale.kit.at_bound` on exact match beyond L of the compared arms ((size, condition) pairs)."""
    return at_bound({f"{cond} at the {where} size": _per_seed(groups[where][cond], "acc_beyond")
                     for where, cond in arms})


def _share_bound(details: dict, g: dict, other: str) -> None:
    """``transferring_share_upper``: upper bound on the share of ``other`` seeds beyond every alone seed."""
    a, b = _per_seed(g[other], "acc_beyond"), _per_seed(g["alone"], "acc_beyond")
    k = int((a > b.max()).sum())
    details["transferring_seeds"] = f"{k} of {a.size}"
    details["transferring_share_upper"] = _upper_share(k, a.size)


def _gain_rule(ok: pd.DataFrame, p: Mapping, other: str, stat: str, decide) -> Verdict:
    conds = ("alone", "related", "unrelated") if other == "unrelated" else ("alone", "related")
    done, info = _common(ok, p, stat, conds)
    _beside(ok, done.details if done else info[1], other)
    if done:
        return done
    groups, details = info
    g = groups["largest"]
    a, b = _per_seed(g[other], "acc_beyond"), _per_seed(g["alone"], "acc_beyond")
    n = int(a.size + b.size)
    triple = mean_diff_ci(a, b)
    _share_bound(details, g, other)
    bound = _bounded(groups, (("largest", other), ("largest", "alone"))) or no_room(
        b, p["margin"], name="alone at the largest size")
    if bound:
        details["reason"] = f"{_pair_text()}: {bound} (beyond the training length L)"
        details["difference_at_the_bound"] = ci_entry(triple, n)
        return Verdict(stat, "inconclusive", NAN3, n, details)
    if other == "unrelated":
        rel = mean_diff_ci(_per_seed(g["related"], "acc_beyond"), b)
        details["related_minus_alone"] = ci_entry(rel, g["related"]["seed"].nunique() + b.size)
        details["related_minus_unrelated"] = ci_entry(mean_diff_ci(_per_seed(g["related"], "acc_beyond"), a),
                                                 g["related"]["seed"].nunique() + a.size)
        if _decide(rel, p["margin"]) != "supported":
            details["reason"] = (f"the related auxiliary does not transfer at this cell either (related − alone "
                                 f"{rel[0]:+.3f} [{rel[1]:.3f}, {rel[2]:.3f}], not above margin {p['margin']}): a "
                                 "control says nothing when nothing transfers")
            return Verdict(stat, "inconclusive", NAN3, n, details)
    verdict = decide(triple, p["margin"])
    side = {"supported": "above" if decide is _decide else "below", "not_supported": "below" if decide is _decide
            else "above"}.get(verdict, "across")
    details["reason"] = (f"{_pair_text()} at {details['deciding_size']} parameters: exact match beyond L {a.mean():.3f} "
                         f"with the {other} auxiliary ({a.size} seeds) vs {b.mean():.3f} alone ({b.size} seeds), "
                         f"gain {triple[0]:+.3f} [{triple[1]:+.3f}, {triple[2]:+.3f}], {side} the margin {p['margin']:g}"
                         + (f"; the related auxiliary's gain there {rel[0]:+.3f} [{rel[1]:+.3f}, {rel[2]:+.3f}]"
                            if other == "unrelated" else ""))
    return Verdict(stat, verdict, triple, n, details)


def _beside(ok: pd.DataFrame, details: dict, other: str) -> None:
    """Gains of every size, NoPE, the other task pairs, reported beside the deciding number (never deciding)."""
    if "condition" not in ok or "transfer_gain" not in ok:
        return
    co = ok[ok["condition"] == other]
    if co.empty:
        return
    keys = [c for c in ("pos", "main", "aux") if c in co]
    details["mean_gain_by_pos_main_aux"] = {"/".join(map(str, k if isinstance(k, tuple) else (k,))):
                                            float(g["transfer_gain"].mean())
                                            for k, g in co.groupby(keys)}
    if "pos" in co:
        for pos, g in co.groupby("pos"):
            details[f"gain_{pos}_all_cells"] = ci_entry(mean_ci(g["transfer_gain"]), len(g))
    if "n_params" in co:
        details["gain_by_size"] = {json_key(s): ci_entry(mean_ci(g["transfer_gain"]), len(g))
                                   for s, g in _deciding(co).groupby("n_params")}


def length_transfer_exists(ok: pd.DataFrame, p: Mapping, n_boot: int, seed: int) -> Verdict:
    """Cai et al. 2025: related co-training raises exact match beyond L (see the module docstring)."""
    return _gain_rule(ok, p, "related", "transfer_gain_related_minus_alone", _decide)


def unrelated_aux_no_transfer(ok: pd.DataFrame, p: Mapping, n_boot: int, seed: int) -> Verdict:
    """The control of Cai et al.'s "related": an unrelated auxiliary gives no gain beyond L where a related
    one does (see the module docstring)."""
    return _gain_rule(ok, p, "unrelated", "gain_unrelated_minus_alone", decide_below)


def transfer_grows_with_size(ok: pd.DataFrame, p: Mapping, n_boot: int, seed: int) -> Verdict:
    """The transfer gain is larger at the largest size than at the smallest (see the module docstring)."""
    stat = "transfer_gain_largest_minus_smallest_size"
    done, info = _common(ok, p, stat, ("alone", "related"), both=True)
    if done:
        return done
    groups, details = info
    big, small = groups["largest"], groups["smallest"]
    cells = [big["related"], big["alone"], small["related"], small["alone"]]
    vals = [_per_seed(c, "acc_beyond") for c in cells]
    n = int(sum(v.size for v in vals))
    details["gain_largest"] = ci_entry(mean_diff_ci(vals[0], vals[1]), vals[0].size + vals[1].size)
    details["gain_smallest"] = ci_entry(mean_diff_ci(vals[2], vals[3]), vals[2].size + vals[3].size)
    triple = strata_mean_ci(vals, weights=[1.0, -1.0, -1.0, 1.0])
    bound = _bounded(groups, tuple((w, c) for w in ("largest", "smallest") for c in ("related", "alone"))) or no_room(
        vals[1], p["margin"], name="alone at the largest size")
    if bound:
        details["reason"] = f"{_pair_text()}: {bound} (beyond the training length L)"
        details["difference_at_the_bound"] = ci_entry(triple, n)
        return Verdict(stat, "inconclusive", NAN3, n, details)
    gl, gs = details["gain_largest"], details["gain_smallest"]
    details["reason"] = (f"{_pair_text()}: gain beyond L (related − alone) {gl['value']:+.3f} [{gl['ci_low']:+.3f}, "
                         f"{gl['ci_high']:+.3f}] at {details['deciding_size']} parameters vs {gs['value']:+.3f} "
                         f"[{gs['ci_low']:+.3f}, {gs['ci_high']:+.3f}] at {details['smallest_size']}: difference "
                         f"{triple[0]:+.3f} [{triple[1]:+.3f}, {triple[2]:+.3f}], margin {p['margin']:g}")
    return Verdict(stat, _decide(triple, p["margin"]), triple, n, details)


def _within_spearman(a: np.ndarray) -> np.ndarray | float:
    """Columns of ``a`` (``(..., n, 2 + cells)``): x, y, cell indicators → within-cell Spearman."""
    return partial_spearman_within(a[..., 0], a[..., 1], a[..., 2:])


def head_reuse_predicts_transfer(ok: pd.DataFrame, p: Mapping, n_boot: int, seed: int) -> Verdict:
    """Cai et al. 2025: head-map similarity correlates with the transfer gain within cells (see the module
    docstring)."""
    stat = "spearman_head_similarity_vs_transfer_gain_within_cells"
    details: dict = {"seeds_per_cell": 0}
    miss = _missing(ok, ("head_corr", "transfer_gain", "seed", "acc_in", "aux_acc_in", "condition"))
    if miss:
        details["reason"] = (f"no {', '.join(miss)} in the table: the rule needs head similarities, transfer gains "
                             "and the learning checks' accuracies")
        return Verdict(stat, "inconclusive", NAN3, 0, details)
    # The deciding pair only (its related and unrelated co-trained trials, every size): the other pairs of the
    # default file are not learned on its budget, and every cell read here must pass the claim's gates.
    pair = _deciding(ok)
    details["deciding_trials"] = _pair_text()
    co = pair[pair["condition"].isin(["related", "unrelated"])]
    x, y = co["head_corr"].to_numpy(float), co["transfer_gain"].to_numpy(float)
    if np.isinf(x).any() or np.isinf(y).any():
        details["reason"] = "infinite head similarities or gains: bad data"
        return Verdict(stat, "inconclusive", NAN3, len(co), details)
    keep = np.isfinite(x) & np.isfinite(y)
    details["trials_without_a_value"] = int((~keep).sum())
    used = co[keep]
    n = int(keep.sum())
    # Every cell read is a deciding cell: the co-trained ones with a value (seeds lost to failed / diverged / NaN
    # trials count against min_seeds) and the main-alone cells their gains are measured from.
    # The engine checks the claim's gates on each (the alone cells on the main task only).
    entries = []
    if len(used):
        alone = pair[pair["condition"] == "alone"]
        akey, ukey = _cell_key(alone), _cell_key(used)
        for (k, aux), g in used.groupby([ukey, used["aux"].astype(str)]):
            entries.append(deciding_cell(_cell_of(g, pair), g["seed"].nunique()))
        for k in sorted(set(ukey)):
            g = alone[akey == k]
            if len(g):
                entries.append(deciding_cell(_cell_of(g, pair),
                                             int(g.loc[np.isfinite(g["acc_beyond"].to_numpy(float)), "seed"].nunique()),
                                             gated=["acc_in"]))
    details["deciding_cells"] = entries
    cell = _cell_key(used)
    details["cells"] = int(cell.nunique())
    details["seeds_per_cell"] = int(used.groupby([cell, used["condition"]])["seed"].nunique().min()) if n else 0
    for cond, g in used.groupby("condition"):
        details[f"mean_head_corr_{cond}"] = float(g["head_corr"].mean())
    if n:
        details["spearman_pooled_across_cells"] = ci_entry(correlation_ci(used["head_corr"], used["transfer_gain"],
                                                                     n_boot=n_boot, seed=seed), n)
        if "head_jaccard" in used:
            details["spearman_jaccard_vs_gain_pooled"] = ci_entry(correlation_ci(used["head_jaccard"],
                                                                            used["transfer_gain"], n_boot=n_boot,
                                                                            seed=seed), n)
    if n < p["min_trials"]:
        details["reason"] = (f"{n} co-trained trials of the deciding pair with a head similarity and a gain, "
                             f"fewer than {int(p['min_trials'])}")
        return Verdict(stat, "inconclusive", NAN3, n, details)
    if details["seeds_per_cell"] < MIN_REPLICATES:
        details["reason"] = (f"fewer than {MIN_REPLICATES} distinct seeds in a cell and condition: within-cell "
                             "differences of one or two seeds are no measurement of seed variation")
        return Verdict(stat, "inconclusive", NAN3, n, details)
    why = degenerate([x[keep]]) or degenerate([y[keep]])
    if why:
        details["reason"] = f"degenerate inputs: {why} (a correlation needs both to vary)"
        return Verdict(stat, "inconclusive", NAN3, n, details)
    codes = pd.factorize(cell)[0]
    design = (codes[:, None] == np.arange(1, codes.max() + 1)[None, :]).astype(float)
    data = np.column_stack([x[keep], y[keep], design])
    triple = bootstrap_ci(data, _within_spearman, n_boot=n_boot, seed=seed, vectorized=True)
    lo, hi = triple[1], triple[2]
    verdict = ("inconclusive" if not (np.isfinite(lo) and np.isfinite(hi)) else "supported" if lo > p["margin"]
               else "not_supported" if hi < p["margin"] else "inconclusive")
    means = ", ".join(f"{k.removeprefix('mean_head_corr_')} {v:.2f}" for k, v in details.items()
                      if k.startswith("mean_head_corr_"))
    details["reason"] = (f"within-cell Spearman correlation of head-map similarity with the transfer gain "
                         f"{triple[0]:+.2f} [{lo:+.2f}, {hi:+.2f}] over {n} co-trained trials in {details['cells']} "
                         f"cells ({_pair_text()}; mean head similarity {means}); "
                         f"{'above' if verdict == 'supported' else 'below' if verdict == 'not_supported' else 'across'}"
                         f" the margin {p['margin']:g}")
    return Verdict(stat, verdict, triple, n, details)


def planned_size_guard(df: pd.DataFrame, ok: pd.DataFrame, details: dict, verdict: str) -> tuple[str, str] | None:
    """A guard (:data:`bindscale.core.study.Guard`): a decided verdict is inconclusive when its deciding size is not
    the largest (or, for the size claim, the smallest) size the whole table (any status) plans for the
    deciding trials — e.g. every trial of the largest planned width diverged."""
    if verdict == "inconclusive" or "deciding_shape" not in details:
        return None
    rows = _deciding(df)
    cols = [c for c in SIZE if c in rows]
    if rows.empty or not cols:
        return None
    rows = coerce_numeric(rows, tuple(cols))
    planned = sorted(set(_size_of(rows)), key=lambda t: _order(t, cols))
    short = []
    for key, want in (("deciding_shape", planned[-1]), ("smallest_shape", planned[0])):
        if key in details and details[key] != _label(want, cols):
            short.append(f"{key.split('_')[0]} size {_label(want, cols)} planned, {details[key]} compared")
    if short:
        return ("the deciding trials have no usable ok trial at a planned size (" + "; ".join(short) + "): the "
                "rule would decide at another size than the study asked about", "value_at_another_size")
    return None


# --------------------------------------------------------------------------- the pretrained arm (length_transfer-lm)
# Verdict rule of the length_transfer study's pretrained arm (``length_transfer-lm``): does pretraining change
# transfer?
#
# Source: Cai et al. 2025, "Extrapolation by Association: Length Generalization Transfer in Transformers" (arXiv
# 2506.09251), abstract: "we observe similar transfer effects in pretrained language models, suggesting that
# pretraining equips models with reusable computational scaffolding that facilitates extrapolation in downstream
# settings" (they fine-tune SmolLM-360M beside their from-scratch models). bindscale reads the scaffolding as a
# testable difference: a fine-tuned pretrained model gains more from the related auxiliary beyond L than the same
# tasks' from-scratch model does.
#
# Rule (:func:`pretraining_adds_transfer`), on the deciding pair of :data:`.verdicts.DECIDING` (capitalise-and-reverse
# alone and with capitalise + reverse):
#
# - *transfer of a seed* in one arm: the main task's exact match beyond L (``acc_beyond``: lengths L+1..aux_len)
#   co-trained with the related auxiliary minus alone, both trials of that seed (repeated records averaged);
#   seeds with only one of the two trials are left out;
# - *arms*: the pretrained model (``model.kind: pretrained``; with several models the one with the most
#   parameters decides, every model's numbers are reported in ``details["by_model"]``) and the from-scratch
#   transformer at the largest width among the deciding pair's RoPE trials (the size ``length_transfer_exists``
#   decides at);
# - statistic: mean transfer of the pretrained arm minus mean transfer of the from-scratch arm, Welch's 95%
#   interval over the two arms' per-seed transfers (:func:`bindscale.verdicts.stats.mean_diff_ci`). Supported when it lies
#   above ``margin`` (pretraining adds transfer), not supported when it lies below (no more transfer than from
#   scratch, or less: ``details["direction"]`` says which), inconclusive when it straddles the margin.
#
# Inconclusive whatever the numbers: a column missing, no pretrained or no from-scratch trial of either arm, the arms
# at different lengths (``main_len``, ``aux_len``), a deciding arm split over several cells, fewer than
# :data:`bindscale.kit.MIN_REPLICATES` seeds with both trials in an arm (NaN or infinite accuracies drop a seed and
# count against its cell's planned seeds), every compared cell at exact match 0 (or 1) beyond L (the metric's bound,
# :func:`bindscale.kit.at_bound`), or per-seed transfers without spread in both arms (:func:`bindscale.kit.degenerate`).
# Competence gates (the engine, :data:`.GATES`, per model: each seed on its own): main within L ≥ ``min_in_acc`` in the
# four cells, the auxiliary within its lengths ≥ ``min_aux_acc`` in the two co-trained cells; a model that has not
# learned its training range decides nothing.

PRE_STAT = "transfer_gain_pretrained_minus_scratch"
#: Columns the rule reads.
PRE_NEED = ("acc_in", "acc_beyond", "aux_acc_in", "seed", "main", "aux", "model.kind")
_ARM_CELL = ("main", "main_len", "aux_len", "n_train", "steps", "lr", "layers", "d_model", "heads", "pos",
             "model_path")


def _kind(rows: pd.DataFrame) -> pd.Series:
    return rows["model.kind"].astype(str).where(rows["model.kind"].notna(), "transformer")


def _arm_cell(g: pd.DataFrame) -> dict:
    """The config columns that pick an arm's cell out of the table (those with one value in it)."""
    return {c: (str(g[c].iloc[0]) if c == "aux" else to_python(g[c].iloc[0]))
            for c in ("main", "aux", *_ARM_CELL[1:]) if c in g and g[c].notna().all() and g[c].astype(str).nunique() == 1}


def _transfers(arm: pd.DataFrame) -> tuple[np.ndarray, dict[str, pd.DataFrame]]:
    """Per-seed transfer (related minus alone ``acc_beyond``) over the seeds with both trials; the two cells."""
    cells = {c: arm[arm["condition"] == c] for c in ("alone", "related")}
    a = cells["alone"].groupby("seed")["acc_beyond"].mean()
    r = cells["related"].groupby("seed")["acc_beyond"].mean()
    both = a.index.intersection(r.index)
    return (r[both] - a[both]).to_numpy(float), cells


def _finite(rows: pd.DataFrame) -> pd.Series:
    ok = np.isfinite(rows[["acc_in", "acc_beyond", "seed"]].to_numpy(float)).all(axis=1)
    ok &= (rows["condition"] == "alone").to_numpy() | np.isfinite(rows["aux_acc_in"].to_numpy(float))
    return pd.Series(ok, index=rows.index)


def pretraining_adds_transfer(ok: pd.DataFrame, p: Mapping, n_boot: int, seed: int) -> Verdict:
    """Cai et al. 2025's pretrained-model transfer, read as: pretraining adds transfer beyond L (module docstring).

    Args:
        ok: the prepared ok rows (:func:`.verdicts.prepare_rows`).
        p: thresholds: ``margin`` (the gain's interval must clear it), ``min_in_acc`` / ``min_aux_acc`` (the gates).

    Returns:
        A :class:`bindscale.kit.Verdict`; ``details`` holds each arm's per-seed transfer with its t interval, each
        cell's fits, every pretrained model's numbers and ``reason`` in words.
    """
    details: dict = {"seeds_per_cell": 0,
                     "deciding_trials": f"{DECIDING['main']} alone / + {DECIDING['related']} (related)"}

    def stop(reason: str, n: int = 0) -> Verdict:
        details["reason"] = reason
        return Verdict(PRE_STAT, "inconclusive", NAN3, n, details)

    miss = [c for c in PRE_NEED if c not in ok or not ok[c].notna().any()]
    if "model.kind" in miss and "acc_beyond" not in miss:
        return stop("no pretrained-model trial in the table (model.kind): this rule compares the length_transfer-lm "
                    "study's fine-tuned pretrained model with the from-scratch transformer")
    if miss:
        return stop(f"no {', '.join(miss)} in the table: the rule needs {', '.join(PRE_NEED)}", len(ok))
    rows = coerce_numeric(ok, ("acc_in", "acc_beyond", "aux_acc_in", "seed", "n_params", "main_len", "aux_len",
                               "layers", "d_model", "heads"))
    rows = rows[rows["main"].astype(str) == DECIDING["main"]].copy()
    if "condition" not in rows:
        rows["condition"] = _conditions(rows) if len(rows) else []
    related = frozenset(_aux_tuple(DECIDING["related"]))
    aux = pd.Series([frozenset(_aux_tuple(a)) for a in rows["aux"]], index=rows.index, dtype=object)
    rows = rows[(rows["condition"] == "alone") | ((rows["condition"] == "related") & (aux == related))]
    kind = _kind(rows)
    pre = rows[kind == "pretrained"]
    scratch = rows[kind != "pretrained"]
    if "pos" in scratch:
        scratch = scratch[scratch["pos"].astype(str) == DECIDING["pos"]]
    for name, arm in (("pretrained", pre), ("from-scratch", scratch)):
        lacking = [c for c in ("alone", "related") if not (arm["condition"] == c).any()]
        if lacking:
            return stop(f"no ok {name} {' or '.join(lacking)} trial of the deciding pair ({details['deciding_trials']})",
                        len(rows))
    # The from-scratch arm: the largest width with both conditions (the size length_transfer_exists decides at).
    cols = [c for c in ("layers", "d_model", "heads") if c in scratch]
    size = _size_of(scratch)
    sizes = sorted(set(size), key=lambda t: _order(t, cols))
    scratch = scratch[size == sizes[-1]]
    details["scratch_shape"] = dict(zip(cols, sizes[-1]))
    if not {"alone", "related"} <= set(scratch["condition"]):
        return stop(f"the from-scratch arm's largest size {details['scratch_shape']} lacks an alone or a related "
                    "trial (a smaller size does not stand in for it)", len(rows))
    # Every pretrained model's numbers; the one with the most parameters decides.
    path = pre["model_path"].astype(str) if "model_path" in pre else pd.Series("?", index=pre.index)
    by_model = {}
    for mp, g in pre.groupby(path):
        tr, _ = _transfers(g[_finite(g)])
        by_model[mp] = {"n_params": json_key(g["n_params"].mean()) if "n_params" in g else None,
                        "label": str(g["model_label"].iloc[0]) if "model_label" in g else mp,
                        "acc_in": {c: float(x["acc_in"].mean()) for c, x in g.groupby("condition")},
                        "acc_beyond": {c: float(x["acc_beyond"].mean()) for c, x in g.groupby("condition")},
                        "transfer": ci_entry(mean_ci(tr), tr.size) if tr.size else None}
    details["by_model"] = by_model
    unsized = sorted(k for k in by_model if "n_params" not in pre or not pre.loc[path == k, "n_params"].notna().any())
    if len(by_model) > 1 and unsized:
        # The largest model decides: without every size a smaller model could decide in its place.
        return stop(f"parameter count unknown for {', '.join(unsized)}: the largest model, which decides, cannot be "
                    "told", len(rows))
    if "n_params" in pre and pre["n_params"].notna().any():
        chosen = max(by_model, key=lambda k: float(pre.loc[path == k, "n_params"].mean()))
    else:
        chosen = sorted(by_model)[-1]
    pre = pre[path == chosen]
    details["deciding_model"] = by_model[chosen]["label"]
    details["deciding_model_path"] = chosen
    if "n_params" in pre and pre["n_params"].notna().any():
        details["deciding_model_n_params"] = float(pre["n_params"].mean())
    for c in ("main_len", "aux_len"):
        if c in rows and pre[c].nunique() == 1 and scratch[c].nunique() == 1 and pre[c].iloc[0] != scratch[c].iloc[0]:
            return stop(f"the pretrained and from-scratch arms differ in {c} ({to_python(pre[c].iloc[0])} vs "
                        f"{to_python(scratch[c].iloc[0])}): transfer beyond L must be read in the same window", len(rows))
    arms, cells, entries, n_nan = {}, {}, [], 0
    for name, arm in (("pretrained", pre), ("scratch", scratch)):
        for cond in ("alone", "related"):
            g = arm[arm["condition"] == cond]
            vary = [c for c in _ARM_CELL if c in g and g[c].astype(str).nunique() > 1]
            if vary:
                return stop(f"the {name} {cond} trials form several cells (differing in {', '.join(vary)}): one cell is "
                            "compared, never a pool of settings", len(rows))
        fin = _finite(arm)
        n_nan += int((~fin).sum())
        arms[name], cells[name] = _transfers(arm[fin])
        for cond, g in cells[name].items():
            entries.append(deciding_cell(_arm_cell(g), int(g["seed"].nunique()),
                                         gated=["acc_in"] if cond == "alone" else True))
    details["deciding_cells"] = entries
    if n_nan:
        details["trials_with_nan_accuracies"] = n_nan
    details["seeds_per_cell"] = int(min(v.size for v in arms.values()))
    details["fits"] = {name: {c: {"acc_in": float(g["acc_in"].mean()), "acc_beyond": float(g["acc_beyond"].mean()),
                                  **({} if c == "alone" else {"aux_acc_in": float(g["aux_acc_in"].mean())})}
                              for c, g in cells[name].items() if len(g)} for name in cells}
    n = int(sum(v.size for v in arms.values()))
    if details["seeds_per_cell"] < MIN_REPLICATES:
        return stop(f"fewer than {MIN_REPLICATES} seeds with both an alone and a related trial in an arm "
                    f"(pretrained {arms['pretrained'].size}, from scratch {arms['scratch'].size})", n)
    tp, ts = arms["pretrained"], arms["scratch"]
    details["transfer_pretrained"] = ci_entry(mean_ci(tp), tp.size)
    details["transfer_scratch"] = ci_entry(mean_ci(ts), ts.size)
    bound = at_bound({f"{name} {c}": g.groupby("seed")["acc_beyond"].mean().to_numpy(float)
                      for name in cells for c, g in cells[name].items()})
    triple = mean_diff_ci(tp, ts)
    if bound:
        details["difference_at_the_bound"] = ci_entry(triple, n)
        return stop(f"{bound} (exact match beyond the training length L): no transfer can be read off either arm", n)
    # Room: a pretrained model that alone already extrapolates within the margin of the ceiling cannot add
    # transfer by the margin, so a difference below it says nothing about pretraining (the engine's no_room, as
    # length_transfer_exists reads its alone arm).
    pre_alone = cells["pretrained"].get("alone")
    room = no_room(pre_alone.groupby("seed")["acc_beyond"].mean().to_numpy(float) if pre_alone is not None else [],
                   float(p["margin"]), name=f"the fine-tuned {details['deciding_model']} alone (exact match beyond L)")
    if room:
        details["difference_without_room"] = ci_entry(triple, n)
        return stop(room, n)
    why = degenerate([tp, ts], discrete=True)
    if why:
        return stop(f"degenerate per-seed transfers: {why}", n)
    verdict = _decide(triple, float(p["margin"]))
    details["direction"] = ("pretraining adds transfer" if triple[1] > 0 else "pretraining lowers transfer"
                            if triple[2] < 0 else "no difference excluded")
    side = {"supported": "above", "not_supported": "below"}.get(verdict, "across")
    details["reason"] = (f"{details['deciding_trials']}: transfer beyond L (related − alone, per seed) "
                         f"{tp.mean():+.3f} fine-tuning {details['deciding_model']} ({tp.size} seeds) vs {ts.mean():+.3f} "
                         f"from scratch at {details['scratch_shape']} ({ts.size} seeds): difference {triple[0]:+.3f} "
                         f"[{triple[1]:+.3f}, {triple[2]:+.3f}], {side} the margin {float(p['margin']):g}")
    return Verdict(PRE_STAT, verdict, triple, n, details)


def pretrained_planned_size_guard(df: pd.DataFrame, ok: pd.DataFrame, details: dict, verdict: str
                                  ) -> tuple[str, str] | None:
    """Guard of ``pretraining_adds_transfer`` (:data:`bindscale.core.study.Guard`): the rule compares the largest
    pretrained model with the from-scratch transformer at the largest width; both must be the largest the whole
    table (any status: failed, diverged, planned without a record) plans for the deciding pair. When every trial of
    the largest planned width, or of the largest planned pretrained model, is lost, the rule would answer with a
    smaller one in its place."""
    if "scratch_shape" not in details or "model.kind" not in df:
        return None
    df = df.reset_index(drop=True)  # a concatenated table may repeat index labels
    rows = _deciding(df.drop(columns="pos")) if "pos" in df else _deciding(df)  # pretrained rows have no pos
    rows = rows[rows["condition"].isin(("alone", "related"))]
    if rows.empty:
        return None
    rows = coerce_numeric(rows, ("n_params", "layers", "d_model", "heads"))
    kind = _kind(rows)
    if "pos" in df:  # the from-scratch arm: RoPE trials only, as the rule reads them
        rows = rows[(kind == "pretrained") | (df.loc[rows.index, "pos"].astype(str) == DECIDING["pos"])]
        kind = _kind(rows)
    short = []

    def statuses(g: pd.DataFrame) -> str:
        return ", ".join(f"{n} {s}" for s, n in g["status"].astype(str).value_counts().items()) if "status" in g else "?"

    scratch = rows[kind != "pretrained"]
    cols = [c for c in SIZE if c in scratch]
    if len(scratch) and cols:
        scratch = scratch[scratch[cols].notna().all(axis=1)]
        size = _size_of(scratch)
        if len(size):
            want = max(set(size), key=lambda t: _order(t, cols))
            got = details["scratch_shape"]
            if any(k not in got or float(got[k]) != float(v) for k, v in zip(cols, want)):
                short.append(f"the largest planned from-scratch width {_label(want, cols)} has no usable trial pair "
                             f"(its trials: {statuses(scratch[size == want])}); the rule compared {got}")
    pre = rows[kind == "pretrained"]
    if len(pre) and "deciding_model_path" in details:
        path = pre["model_path"].astype(str) if "model_path" in pre else pd.Series("?", index=pre.index)
        mine = details.get("deciding_model_n_params", math.nan)
        for mp, g in pre.groupby(path):
            if mp == details["deciding_model_path"]:
                continue
            size = float(g["n_params"].max()) if "n_params" in g and g["n_params"].notna().any() else math.nan
            if not (math.isfinite(size) and math.isfinite(mine) and size <= mine):
                said = f"{size:,.0f} parameters" if math.isfinite(size) else "size unknown"
                short.append(f"the planned pretrained model {mp} ({said}) may be larger than the deciding "
                             f"{details['deciding_model_path']} but has no usable trial pair (its trials: "
                             f"{statuses(g)})")
    if short:
        return ("; ".join(short) + ": failed, diverged or missing (planned, no record), so the rule answered with a "
                "smaller model than the study asked about", "value_at_a_smaller_model")
    return None
