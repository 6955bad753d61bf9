"""Linear decodability of task constituents.

A ridge regression from one activation point to the constituents ``z`` (the
weighted k-hot code) is fit on in-distribution tasks and scored, as R², on
held-out combinations: a representation that encodes the constituents
linearly lets a probe trained on seen combinations read unseen ones
(Redhardt, Schug, Akram 2025; linear probes after Alain & Bengio 2016,
"Understanding intermediate layers using linear classifier probes").

Which layer to report is chosen on the fit data alone (:func:`probe_layers`):
cross-validated R² over folds of in-distribution *tasks*; the held-out score of
that layer is then reported. Choosing the layer by its held-out score and
reporting that same score (``decod_best``) is biased upwards: the maximum of
noisy scores.

The probe is scikit-learn's ``RidgeCV`` (intercept, penalty chosen by efficient leave-one-out CV,
Rifkin & Lippert 2007, "Notes on regularized least squares"), its folds ``GroupKFold`` and its score
``r2_score(multioutput="variance_weighted")``, written out here in NumPy (:func:`ridge_loo`,
:func:`group_folds`, :func:`r2_variance_weighted`): the same closed forms, with every penalty's
leave-one-out errors from one matrix product instead of one pass each, and no scikit-learn import in
the workers that train. Measured on the project's 2-core Xeon (one thread): importing scikit-learn's
estimators cost each sweep worker ~1.45 CPU-s, and a trial's probes (five layers, fit and 5-fold CV on
256 tasks × 2 inputs) ~0.6 CPU-s at width 256; equal to scikit-learn 1.9 to float rounding
(``tests/studies/scaling/test_probes.py`` compares them on the studies' shapes).
"""

from __future__ import annotations

import numpy as np
from threadpoolctl import threadpool_limits

ALPHAS = np.logspace(-4, 5, 19)
#: Folds of the layer-choosing cross-validation (over in-distribution tasks).
CV_FOLDS = 5


def _gcv_mode(rows: int, features: int) -> str | None:
    """The leave-one-out computation for a fit on ``rows`` × ``features``: one SVD of the design
    matrix (``"svd"``) when it is taller than wide, else (``None``) the Gram matrix's eigenvectors,
    scikit-learn's ``RidgeCV`` choice for wide matrices.

    scikit-learn's default for tall matrices (eigenvectors of the covariance) costs rows × features²
    per penalty, the SVD's rows × features once: measured, 512 × 256 (a width-256 MLP's hidden layer
    on 256 probe tasks × 2 inputs, 19 penalties, one thread): a fit and its 5-fold CV in 0.41 s against
    0.81 s, the chosen penalty the same and predictions within 2e-14 (float rounding).
    """
    return "svd" if rows > features else None


class Ridge:
    """A fitted ridge probe: ``predict(X) = X @ coef.T + intercept``; ``alpha`` the chosen penalty."""

    def __init__(self, coef: np.ndarray, intercept: np.ndarray, alpha: float):
        self.coef, self.intercept, self.alpha = coef, intercept, alpha

    def predict(self, X: np.ndarray) -> np.ndarray:
        return X @ self.coef.T + self.intercept


def ridge_loo(X: np.ndarray, y: np.ndarray, alphas: np.ndarray = ALPHAS, mode: str | None = "auto") -> Ridge:
    """Ridge regression with an intercept, its penalty chosen among ``alphas`` by leave-one-out error:
    scikit-learn's ``RidgeCV(alphas, gcv_mode=mode).fit(X, y)`` for dense 2-D ``y`` without sample
    weights (the first penalty with the least mean squared leave-one-out error over rows and targets).

    Args:
        X: ``(n, p)`` design matrix; y: ``(n, m)`` targets (float64 is used throughout).
        mode: ``"svd"`` (SVD of the centred ``X``), ``None`` (eigenvectors of the Gram matrix) or ``"auto"``
            (:func:`_gcv_mode`). A tall ``X`` (``n > p``) always takes the SVD: scikit-learn takes the covariance's
            eigenvectors there for ``None``, the same errors up to rounding.

    With ``X = U S Vᵀ`` (centred), the leave-one-out errors of penalty ``a`` are ``c / d`` with
    ``c = y + U M Uᵀ y`` and ``d = 1 + diag(U M Uᵀ) - (1 + U M Uᵀ 1) / n`` (the last term: the
    intercept), ``M = a / (S² + a) - 1`` (tall ``X``; wide: ``M = a / (S² + a)`` without the ones);
    the Gram matrix's eigenvectors ``Q``, values ``L``: ``c = Q D Qᵀ y``, ``d = diag(Q D Qᵀ) - Q D Qᵀ 1 / n``,
    ``D = 1 / (L + a)``. Every penalty at once: one product with ``M`` as a matrix of penalties.
    """
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    alphas = np.asarray(alphas, dtype=np.float64)
    n, p = X.shape
    if mode == "auto" or n > p:
        mode = _gcv_mode(n, p)
    x_off, y_off = np.average(X, axis=0), np.average(y, axis=0)
    Xc, yc = X - x_off, y - y_off
    A, m = len(alphas), yc.shape[1]
    if mode == "svd":
        U, s, VT = np.linalg.svd(Xc, full_matrices=False)
        s2 = s[:, None] ** 2
        Mk = alphas / (s2 + alphas) - (1.0 if n > p else 0.0)  # (k, A)
        Q, one = U, (1.0 if n > p else 0.0)
    else:
        L, Q = np.linalg.eigh(Xc @ Xc.T)
        Mk, one = 1.0 / (L[:, None] + alphas), 0.0  # (n, A)
    Qty = Q.T @ yc  # (k, m)
    Qt1 = Q.sum(axis=0)  # Qᵀ 1
    c = (Q @ (Mk[:, :, None] * Qty[:, None, :]).reshape(len(Qty), A * m)).reshape(n, A, m)
    d = (Q * Q) @ Mk + one - (Q @ (Mk * Qt1[:, None]) + one) / n  # (n, A)
    if one:
        c += yc[:, None, :]
    looe = np.ascontiguousarray((c / d[:, :, None]).transpose(1, 0, 2))  # (A, n, m)
    best, best_score = 0, None
    for a in range(A):  # the first penalty with the best score (a later one must be strictly better)
        score = np.mean(-(looe[a] ** 2))
        if best_score is None or score > best_score:
            best, best_score = a, score
    alpha = alphas[best]
    if mode == "svd":
        coef = (VT.T @ ((s / (s ** 2 + alpha))[:, None] * Qty)).T
    else:
        coef = (Xc.T @ c[:, best, :]).T
    return Ridge(coef, y_off - x_off @ coef.T, float(alpha))


def r2_variance_weighted(y: np.ndarray, pred: np.ndarray) -> float:
    """``sklearn.metrics.r2_score(y, pred, multioutput="variance_weighted")``: per target
    ``1 - SSE / SST`` (1 where the error is 0, 0 where only the variance is), averaged with the targets'
    ``SST`` as weights (uniformly where every target is constant); NaN for fewer than two rows."""
    if len(y) < 2:
        return float("nan")
    num = ((y - pred) ** 2).sum(axis=0)
    den = ((y - np.average(y, axis=0)) ** 2).sum(axis=0)
    scores = np.ones(y.shape[1])
    valid = (den != 0) & (num != 0)
    scores[valid] = 1 - num[valid] / den[valid]
    scores[(num != 0) & (den == 0)] = 0.0
    return float(np.average(scores, weights=den if np.any(den != 0) else None))


def group_folds(groups: np.ndarray, n_splits: int = CV_FOLDS) -> list[tuple[np.ndarray, np.ndarray]]:
    """``sklearn.model_selection.GroupKFold(n_splits).split(_, _, groups)`` as (train, test) row indices:
    groups by size, largest first (a stable sort, reversed), each to the fold with the fewest rows so far
    (the first such); a fold's test rows are its groups' rows in order.

    Raises:
        ValueError: fewer groups than folds.
    """
    uniq, idx = np.unique(groups, return_inverse=True)
    if n_splits > len(uniq):
        raise ValueError(f"group_folds: {n_splits} folds > {len(uniq)} groups")
    sizes = np.bincount(idx)
    order = np.argsort(sizes, kind="stable")[::-1]
    load = np.zeros(n_splits)
    fold_of = np.zeros(len(uniq))
    for g, w in zip(order, sizes[order]):
        f = np.argmin(load)
        load[f] += w
        fold_of[g] = f
    fold = fold_of[idx]
    rows = np.arange(len(groups))
    return [(rows[fold != f], rows[fold == f]) for f in range(n_splits)]


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
        ridge penalty is chosen by efficient leave-one-out CV on the fit set only (:func:`ridge_loo`).
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
        probe = ridge_loo(acts_fit, z_fit)
        return r2_variance_weighted(z_score, probe.predict(acts_score))


def cv_decodability(acts_fit: np.ndarray, z_fit: np.ndarray, groups: np.ndarray, n_splits: int = CV_FOLDS,
                    folds: list[tuple[np.ndarray, np.ndarray]] | None = None) -> float:
    """Cross-validated R² of the ridge probe on the fit set alone.

    Args:
        acts_fit: ``(N, D)`` activations on in-distribution tasks.
        z_fit: ``(N, M)`` their constituents.
        groups: ``(N,)`` task index of each row: folds split tasks, so the inputs of
            one task (which share ``z``) never sit on both sides of a fold.
        n_splits: folds (:func:`group_folds`, scikit-learn's ``GroupKFold``).
        folds: ``group_folds(groups, n_splits)`` where the caller has them already.

    Returns:
        Mean over folds of ``r2_score(..., multioutput="variance_weighted")`` (each fold's
        probe chooses its penalty by leave-one-out CV inside its training part). NaN when
        there are fewer groups than folds or the targets have no variance.
    """
    if len(np.unique(groups)) < n_splits or np.all(np.var(z_fit, axis=0) == 0):
        return float("nan")
    with threadpool_limits(limits=1):
        mode = _gcv_mode(len(acts_fit) * (n_splits - 1) // n_splits, acts_fit.shape[1])  # a fold's fit part
        scores = [r2_variance_weighted(z_fit[te], ridge_loo(acts_fit[tr], z_fit[tr], mode=mode).predict(acts_fit[te]))
                  for tr, te in (folds if folds is not None else group_folds(groups, n_splits))]
    return float(np.mean(scores))


def probe_layers(
    fit: dict[str, np.ndarray], z_fit: np.ndarray, groups: np.ndarray,
    score: dict[str, np.ndarray], z_score: np.ndarray,
) -> dict:
    """Probe every layer, choose one on the fit data, report its held-out decodability.

    Args:
        fit: layer name → ``(N, D)`` activations on in-distribution tasks.
        z_fit, groups: ``(N, M)`` constituents and ``(N,)`` task index of the fit rows.
        score: layer name → ``(N', D)`` activations on held-out tasks (same names).
        z_score: ``(N', M)`` constituents of the score rows.

    Returns:
        ``{"heldout": {name: held-out R²}, "cv": {name: CV R² on fit data},
        "cv_layer": chosen name (None when no layer has a finite CV score),
        "cv_heldout": held-out R² of the chosen layer (NaN when none)}``.

    Raises:
        KeyError: a fit layer has no score activations.
    """
    folds = group_folds(groups) if len(np.unique(groups)) >= CV_FOLDS else None
    heldout = {n: decodability(fit[n], z_fit, score[n], z_score) for n in fit}
    cv = {n: cv_decodability(fit[n], z_fit, groups, folds=folds) for n in fit}
    finite = {n: v for n, v in cv.items() if np.isfinite(v)}
    layer = max(finite, key=finite.get) if finite else None
    return {"heldout": heldout, "cv": cv, "cv_layer": layer,
            "cv_heldout": heldout[layer] if layer is not None else float("nan")}
