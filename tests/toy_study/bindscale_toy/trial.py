"""The toy study's trainer: random features fitted to a line by gradient descent (NumPy only)."""

import numpy as np

from bindscale.kit import TrialResult


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
