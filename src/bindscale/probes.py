"""Linear decodability of task constituents (DESIGN §4 "Probe").

A ridge regression from one activation point to the constituents ``z`` (the
weighted k-hot code) is fit on in-distribution tasks and scored, as R², on
held-out combinations: a representation that encodes the constituents
linearly lets a probe trained on seen combinations read unseen ones
(Redhardt, Schug, Akram 2025; linear probes after Alain & Bengio 2016,
"Understanding intermediate layers using linear classifier probes").
"""

from __future__ import annotations

import numpy as np
from sklearn.linear_model import RidgeCV
from sklearn.metrics import r2_score
from threadpoolctl import threadpool_limits

ALPHAS = np.logspace(-4, 5, 19)


def decodability(
    acts_fit: np.ndarray, z_fit: np.ndarray, acts_score: np.ndarray, z_score: np.ndarray
) -> float:
    """Held-out R² of a ridge probe from activations to constituents.

    Args:
        acts_fit: ``(N, D)`` activations on in-distribution tasks (fit set).
        z_fit: ``(N, M)`` their constituents.
        acts_score, z_score: the same on held-out tasks (score set).

    Returns:
        ``r2_score(z_score, probe(acts_score), multioutput="variance_weighted")``; the
        ridge penalty is chosen by efficient leave-one-out CV on the fit set only.
        NaN when the score set is empty or its targets have no variance.
    """
    if len(acts_score) == 0 or np.all(np.var(z_score, axis=0) == 0):
        return float("nan")
    # No per-feature standardisation: a unit nearly constant on the fit set (e.g. a
    # rarely active ReLU) would be scaled up by 1/σ and blow up scores on held-out
    # tasks. Hidden units share one scale, and the CV-chosen penalty handles it.
    # One BLAS thread: the probe is small, and a thread count that depends on the
    # executor would change the last bits of the solution (records must not depend on it).
    with threadpool_limits(limits=1):
        probe = RidgeCV(alphas=ALPHAS)
        probe.fit(acts_fit, z_fit)
        return float(r2_score(z_score, probe.predict(acts_score), multioutput="variance_weighted"))
