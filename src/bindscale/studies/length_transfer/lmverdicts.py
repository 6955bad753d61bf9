"""Verdict rule of the length_transfer study's pretrained arm (``length_transfer-lm``): does pretraining change
transfer?

Source: Cai et al. 2025, "Extrapolation by Association: Length Generalization Transfer in Transformers" (arXiv
2506.09251), abstract: "we observe similar transfer effects in pretrained language models, suggesting that
pretraining equips models with reusable computational scaffolding that facilitates extrapolation in downstream
settings" (they fine-tune SmolLM-360M beside their from-scratch models). bindscale reads the scaffolding as a
testable difference: a fine-tuned pretrained model gains more from the related auxiliary beyond L than the same
tasks' from-scratch model does.

Rule (:func:`pretraining_adds_transfer`), on the deciding pair of :data:`.verdicts.DECIDING` (capitalise-and-reverse
alone and with capitalise + reverse):

- *transfer of a seed* in one arm: the main task's exact match beyond L (``acc_beyond``: lengths L+1..aux_len)
  co-trained with the related auxiliary minus alone, both trials of that seed (repeated records averaged);
  seeds with only one of the two trials are left out;
- *arms*: the pretrained model (``model.kind: pretrained``; with several models the one with the most
  parameters decides, every model's numbers are reported in ``details["by_model"]``) and the from-scratch
  transformer at the largest width among the deciding pair's RoPE trials (the size ``length_transfer_exists``
  decides at);
- statistic: mean transfer of the pretrained arm minus mean transfer of the from-scratch arm, Welch's 95%
  interval over the two arms' per-seed transfers (:func:`bindscale.stats.mean_diff_ci`). Supported when it lies
  above ``margin`` (pretraining adds transfer), not supported when it lies below (no more transfer than from
  scratch, or less: ``details["direction"]`` says which), inconclusive when it straddles the margin.

Inconclusive whatever the numbers: a column missing, no pretrained or no from-scratch trial of either arm, the arms
at different lengths (``main_len``, ``aux_len``), a deciding arm split over several cells, fewer than
:data:`bindscale.kit.MIN_REPLICATES` seeds with both trials in an arm (NaN or infinite accuracies drop a seed and
count against its cell's planned seeds), every compared cell at exact match 0 (or 1) beyond L (the metric's bound,
:func:`bindscale.kit.at_bound`), or per-seed transfers without spread in both arms (:func:`bindscale.kit.degenerate`).
Competence gates (the engine, :data:`.GATES`, mean over each cell's seeds): main within L ≥ ``min_in_acc`` in the
four cells, the auxiliary within its lengths ≥ ``min_aux_acc`` in the two co-trained cells; a model that has not
learned its training range decides nothing.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from bindscale.kit import (
    MIN_REPLICATES, NAN3, Verdict, at_bound, ci_entry, coerce_numeric, deciding_cell, decide, degenerate, json_key,
    to_python,
)
from bindscale.stats import mean_ci, mean_diff_ci

STAT = "transfer_gain_pretrained_minus_scratch"
#: Columns the rule reads.
NEED = ("acc_in", "acc_beyond", "aux_acc_in", "seed", "main", "aux", "model.kind")
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
    from .verdicts import DECIDING, _aux_tuple, _conditions, _order, _size_of

    details: dict = {"seeds_per_cell": 0,
                     "deciding_trials": f"{DECIDING['main']} alone / + {DECIDING['related']} (related)"}

    def stop(reason: str, n: int = 0) -> Verdict:
        details["reason"] = reason
        return Verdict(STAT, "inconclusive", NAN3, n, details)

    miss = [c for c in NEED if c not in ok or not ok[c].notna().any()]
    if "model.kind" in miss and "acc_beyond" not in miss:
        return stop("no pretrained-model trial in the table (model.kind): this rule compares the length_transfer-lm "
                    "study's fine-tuned pretrained model with the from-scratch transformer")
    if miss:
        return stop(f"no {', '.join(miss)} in the table: the rule needs {', '.join(NEED)}", len(ok))
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
    if "n_params" in pre and pre["n_params"].notna().any():
        chosen = max(by_model, key=lambda k: float(pre.loc[path == k, "n_params"].mean()))
    else:
        chosen = sorted(by_model)[-1]
    pre = pre[path == chosen]
    details["deciding_model"] = by_model[chosen]["label"]
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
    why = degenerate([tp, ts], discrete=True)
    if why:
        return stop(f"degenerate per-seed transfers: {why}", n)
    verdict = decide(triple, float(p["margin"]))
    details["direction"] = ("pretraining adds transfer" if triple[1] > 0 else "pretraining lowers transfer"
                            if triple[2] < 0 else "no difference excluded")
    side = {"supported": "above", "not_supported": "below"}.get(verdict, "across")
    details["reason"] = (f"{details['deciding_trials']}: transfer beyond L (related − alone, per seed) "
                         f"{tp.mean():+.3f} fine-tuning {details['deciding_model']} ({tp.size} seeds) vs {ts.mean():+.3f} "
                         f"from scratch at {details['scratch_shape']} ({ts.size} seeds): difference {triple[0]:+.3f} "
                         f"[{triple[1]:+.3f}, {triple[2]:+.3f}], {side} the margin {float(p['margin']):g}")
    return Verdict(STAT, verdict, triple, n, details)
