"""The toy study's trainer, verdict rule and figure, built from bindscale's shared pieces."""

import numpy as np
import pandas as pd

from bindscale.kit import NAN3, TrialResult, Verdict, ci_entry, errorbar, new_figure, seed_summary, to_base64
from bindscale.report.verdicts import INCONCLUSIVE, NOT_SUPPORTED, SUPPORTED, ok_rows
from bindscale.stats import mean_ci


def run_group(trials, device, progress=None):
    out = []
    for t in trials:
        rng = np.random.default_rng(t.seed)
        x = rng.uniform(-1, 1, (t.task.n + 64, 1))
        y = 2 * x[:, 0] + t.task.noise * rng.standard_normal(len(x))
        w_in = rng.standard_normal((1, t.model.width))
        feats = np.tanh(x @ w_in + rng.standard_normal(t.model.width))
        w = np.zeros(t.model.width)
        tr, te = slice(0, t.task.n), slice(t.task.n, None)
        for _ in range(t.train.steps):
            grad = feats[tr].T @ (feats[tr] @ w - y[tr]) / t.task.n
            w -= t.train.lr * grad
        if progress:
            progress(t.train.steps)
        resid = y[te] - feats[te] @ w
        out.append(TrialResult(metrics={"score": float(1 - resid.var() / y[te].var())}))
    return out


def fits(ok: pd.DataFrame, p, n_boot: int, seed: int) -> Verdict:
    ok = ok_rows(ok, ("width", "score"))
    if ok.empty:
        return Verdict("toy_score", INCONCLUSIVE, NAN3, 0, {"reason": "no ok trials"})
    top = ok[ok["width"] == ok["width"].max()]["score"]
    triple = mean_ci(top, n_boot, seed=seed)
    verdict = SUPPORTED if triple[1] > p["threshold"] else NOT_SUPPORTED if triple[2] < p["threshold"] else INCONCLUSIVE
    return Verdict("toy_score", verdict, triple, len(top), {"reason": f"threshold {p['threshold']}", "score": ci_entry(triple, len(top))})


def _fig(df: pd.DataFrame):
    ok = ok_rows(df, ("width", "score"))
    if ok.empty:
        return None
    fig, ax = new_figure()
    s = seed_summary(ok, "width", "score")
    errorbar(ax, s["width"], s)
    ax.set_xlabel("random features")
    ax.set_ylabel("held-out R²")
    return to_base64(fig)


def figures(study=None):
    return {"score_vs_width": (_fig, "Held-out R² vs number of random features; mean ± 95% t interval over seeds.")}
