import numpy as np
import pytest

from bindscale.studies.scaling.probes import decodability, probe_layers


def _codes(rng, n, M=6):
    z = rng.uniform(0.5, 1.0, (n, M)) * (rng.random((n, M)) < 0.4)
    return z


def test_probe_recovers_a_planted_linear_code():
    rng = np.random.default_rng(0)
    A = rng.normal(size=(6, 40))
    z_fit, z_score = _codes(rng, 400), _codes(rng, 200)
    noise = lambda n: 0.05 * rng.normal(size=(n, 40))  # noqa: E731
    r2 = decodability(z_fit @ A + noise(400), z_fit, z_score @ A + noise(200), z_score)
    assert r2 > 0.97


def test_probe_on_unrelated_features_scores_near_zero():
    rng = np.random.default_rng(1)
    z_fit, z_score = _codes(rng, 400), _codes(rng, 200)
    r2 = decodability(rng.normal(size=(400, 40)), z_fit, rng.normal(size=(200, 40)), z_score)
    assert r2 < 0.1


def test_probe_fails_on_a_nonlinear_code():
    rng = np.random.default_rng(2)
    z_fit, z_score = _codes(rng, 400), _codes(rng, 200)
    feat = lambda z: np.cos(12 * z)  # noqa: E731  non-monotone in the weight
    assert decodability(feat(z_fit), z_fit, feat(z_score), z_score) < 0.9
    assert np.isnan(decodability(feat(z_fit), z_fit, feat(z_score[:0]), z_score[:0]))


def test_a_nearly_constant_unit_does_not_blow_up_the_score():
    # A rarely active unit: constant on the fit set, large on held-out tasks.
    rng = np.random.default_rng(3)
    A = rng.normal(size=(6, 20))
    z_fit, z_score = _codes(rng, 300), _codes(rng, 200)
    f_fit, f_score = z_fit @ A, z_score @ A
    f_fit = np.column_stack([f_fit, np.full(300, 1e-6) + 1e-9 * rng.normal(size=300)])
    f_score = np.column_stack([f_score, rng.uniform(0, 5, size=200)])
    assert decodability(f_fit, z_fit, f_score, z_score) > 0.8


def test_layer_is_chosen_by_cross_validation_on_fit_data_not_by_the_heldout_score():
    """Layer "a" encodes z cleanly on in-distribution tasks but shifts on held-out ones; layer "b"
    is noisy everywhere. The best held-out layer is "b", the best CV layer "a": the choice must
    follow CV and report a's held-out score (a held-out-chosen maximum would report b's)."""
    rng = np.random.default_rng(0)
    A, B = rng.normal(size=(6, 30)), rng.normal(size=(6, 30))
    z_fit, z_score = _codes(rng, 400), _codes(rng, 200)
    groups = np.repeat(np.arange(200), 2)  # two rows per task
    fit = {"a": z_fit @ A + 0.01 * rng.normal(size=(400, 30)), "b": z_fit @ B + 1.0 * rng.normal(size=(400, 30))}
    score = {"a": z_score @ A + 3.0 * rng.normal(size=(200, 30)), "b": z_score @ B + 1.0 * rng.normal(size=(200, 30))}
    out = probe_layers(fit, z_fit, groups, score, z_score)
    assert max(out["heldout"], key=out["heldout"].get) == "b"
    assert out["cv"]["a"] > out["cv"]["b"]
    assert out["cv_layer"] == "a" and out["cv_heldout"] == out["heldout"]["a"] < out["heldout"]["b"]


def test_cv_decodability_matches_a_hand_rolled_group_cross_validation():
    from sklearn.linear_model import RidgeCV
    from sklearn.metrics import r2_score
    from sklearn.model_selection import GroupKFold

    from bindscale.studies.scaling.probes import ALPHAS, cv_decodability

    rng = np.random.default_rng(1)
    z = _codes(rng, 300)
    acts = z @ rng.normal(size=(6, 20)) + 0.5 * rng.normal(size=(300, 20))
    groups = np.repeat(np.arange(100), 3)
    ref = []
    for tr, te in GroupKFold(5).split(acts, z, groups):
        assert not set(groups[tr]) & set(groups[te])  # a task's rows never straddle a fold
        p = RidgeCV(alphas=ALPHAS).fit(acts[tr], z[tr])
        ref.append(r2_score(z[te], p.predict(acts[te]), multioutput="variance_weighted"))
    assert abs(cv_decodability(acts, z, groups) - np.mean(ref)) < 1e-10
    assert np.isnan(cv_decodability(acts[:6], z[:6], groups[:6]))  # 2 tasks < 5 folds


# ----------------------------------------------------------------------------- the NumPy probe against scikit-learn
# The probe is scikit-learn's RidgeCV / GroupKFold / r2_score written out in NumPy (bindscale.studies.scaling.probes):
# these pin it to scikit-learn on the studies' shapes (probe rows 512 = 256 tasks x 2 inputs; widths below, at and
# above the rows; dead ReLU units; a constant target) to float rounding.


def _acts(rng, n, D, z, dead=0.25):
    """ReLU activations of a noisy linear map of ``z``, a share of units dead (all zero)."""
    X = np.maximum(z @ rng.normal(size=(z.shape[1], D)) + 0.3 * rng.normal(size=(n, D)), 0)
    X[:, rng.random(D) < dead] = 0
    return X


def _sklearn_ridge(X, y, mode):
    from sklearn.linear_model import RidgeCV

    from bindscale.studies.scaling.probes import ALPHAS

    return RidgeCV(alphas=ALPHAS, gcv_mode=mode).fit(X, y)


SHAPES = [(512, 8), (512, 32), (410, 128), (512, 256), (410, 409), (512, 512), (200, 640)]


@pytest.mark.parametrize("n,D", SHAPES)
@pytest.mark.parametrize("seed", [0, 1])
def test_ridge_equals_sklearn_ridgecv(n, D, seed):
    from bindscale.studies.scaling.probes import _gcv_mode, ridge_loo

    rng = np.random.default_rng(seed)
    z = _codes(rng, n, M=16)
    z[:, 3] = 0.7  # a constant target
    X = _acts(rng, n, D, z)
    for mode in ("svd", None):
        if mode == "svd" and n <= D:
            continue  # the studies ask for an SVD only of tall matrices (_gcv_mode)
        ref, got = _sklearn_ridge(X, z, mode), ridge_loo(X, z, mode=mode)
        assert got.alpha == ref.alpha_
        np.testing.assert_allclose(got.coef, ref.coef_, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(got.intercept, ref.intercept_, rtol=1e-9, atol=1e-12)
        X2 = _acts(rng, 100, D, _codes(rng, 100, M=16))
        np.testing.assert_allclose(got.predict(X2), ref.predict(X2), rtol=1e-9, atol=1e-12)
    assert _gcv_mode(n, D) == ("svd" if n > D else None)


def test_ridge_chooses_the_first_of_equally_good_penalties_as_sklearn_does():
    """A target the features cannot reach: every penalty scores alike (the zero map plus the mean); scikit-learn
    keeps the first penalty unless a later one is strictly better."""
    from bindscale.studies.scaling.probes import ALPHAS, ridge_loo

    X = np.zeros((40, 5))
    y = np.random.default_rng(0).normal(size=(40, 2))
    assert ridge_loo(X, y).alpha == _sklearn_ridge(X, y, "svd").alpha_ == ALPHAS[0]


def test_ridge_picks_a_small_penalty_for_a_clean_code_and_a_large_one_for_noise():
    from bindscale.studies.scaling.probes import ALPHAS, ridge_loo

    rng = np.random.default_rng(4)
    z = _codes(rng, 300)
    clean, noise = z @ rng.normal(size=(6, 20)), rng.normal(size=(300, 20))
    assert ridge_loo(clean, z).alpha == _sklearn_ridge(clean, z, "svd").alpha_ == ALPHAS[0]
    assert ridge_loo(noise, z).alpha == _sklearn_ridge(noise, z, "svd").alpha_ >= 100


@pytest.mark.parametrize("sizes", [[2] * 256, [3] * 100, [1, 5, 2, 2, 7, 3, 3, 1, 4, 2, 6], [2] * 7 + [1] * 9])
def test_group_folds_equal_sklearn_group_kfold(sizes):
    from sklearn.model_selection import GroupKFold

    from bindscale.studies.scaling.probes import group_folds

    groups = np.repeat(np.random.default_rng(0).permutation(len(sizes)) * 3 + 5, sizes)  # ids neither 0.. nor sorted
    ref = list(GroupKFold(n_splits=5).split(np.zeros((len(groups), 1)), None, groups))
    got = group_folds(groups, 5)
    assert len(got) == len(ref) == 5
    for (tr, te), (rtr, rte) in zip(got, ref):
        np.testing.assert_array_equal(tr, rtr)
        np.testing.assert_array_equal(te, rte)
    with pytest.raises(ValueError):
        group_folds(groups[: sizes[0]], 5)


def test_r2_variance_weighted_equals_sklearn():
    from sklearn.metrics import r2_score

    from bindscale.studies.scaling.probes import r2_variance_weighted

    rng = np.random.default_rng(5)
    y = rng.normal(size=(50, 4))
    cases = [(y, y + 0.3 * rng.normal(size=y.shape)), (y, y.copy())]
    y_const = y.copy()
    y_const[:, 1] = 2.0  # constant target: weight 0 (imperfect) ...
    cases += [(y_const, y_const + 0.1), (y_const, np.where(np.arange(4) == 1, 2.0, y_const + 0.1))]  # ... or perfect
    every = np.full((50, 3), 1.5)
    cases += [(every, every), (every, every + 1.0)]  # all constant: uniform weights, 1 (perfect) or 0
    for t, p in cases:
        assert r2_variance_weighted(t, p) == pytest.approx(r2_score(t, p, multioutput="variance_weighted"), abs=1e-14)
    assert np.isnan(r2_variance_weighted(y[:1], y[:1]))


def _sklearn_probe_layers(fit, z_fit, groups, score, z_score):
    """The probe as bindscale computed it with scikit-learn up to December 2026 (RidgeCV, cross_val_score)."""
    from sklearn.linear_model import RidgeCV
    from sklearn.metrics import make_scorer, r2_score
    from sklearn.model_selection import GroupKFold, cross_val_score

    from bindscale.studies.scaling.probes import ALPHAS, CV_FOLDS, _gcv_mode

    def held(a_fit, a_score):
        p = RidgeCV(alphas=ALPHAS, gcv_mode=_gcv_mode(*a_fit.shape)).fit(a_fit, z_fit)
        return r2_score(z_score, p.predict(a_score), multioutput="variance_weighted")

    def cv(a_fit):
        mode = _gcv_mode(len(a_fit) * (CV_FOLDS - 1) // CV_FOLDS, a_fit.shape[1])
        return float(np.mean(cross_val_score(RidgeCV(alphas=ALPHAS, gcv_mode=mode), a_fit, z_fit, groups=groups,
                                             cv=GroupKFold(n_splits=CV_FOLDS),
                                             scoring=make_scorer(r2_score, multioutput="variance_weighted"))))

    return {n: held(fit[n], score[n]) for n in fit}, {n: cv(fit[n]) for n in fit}


@pytest.mark.parametrize("widths", [(32,), (128, 128), (256,), (409,)])
def test_probe_layers_equal_the_sklearn_probe_on_the_studies_shapes(widths):
    """256 probe tasks x 2 inputs, 16 modules: the input point and hidden layers of the study's widths, 409 the
    width where a CV fold's fit part (408-410 rows) is tall in some folds and wide in others."""
    rng = np.random.default_rng(sum(widths))
    z_fit, z_score = _codes(rng, 512, M=16), _codes(rng, 512, M=16)
    groups = np.repeat(np.arange(256), 2)
    fit = {f"hidden.{i}": _acts(rng, 512, D, z_fit) for i, D in enumerate(widths)}
    score = {n: _acts(rng, 512, a.shape[1], z_score) for n, a in fit.items()}
    out = probe_layers(fit, z_fit, groups, score, z_score)
    held, cv = _sklearn_probe_layers(fit, z_fit, groups, score, z_score)
    for n in fit:
        assert out["heldout"][n] == pytest.approx(held[n], abs=1e-12)
        assert out["cv"][n] == pytest.approx(cv[n], abs=1e-12)


def test_probes_import_no_scikit_learn():
    """A sweep worker fits every trial's probes: importing scikit-learn's estimators cost each worker ~1.45 CPU-s."""
    import subprocess
    import sys

    code = ("import sys, numpy as np; from bindscale.studies.scaling.probes import probe_layers; "
            "rng = np.random.default_rng(0); z = rng.random((40, 3)); a = {'h': z @ rng.random((3, 8))}; "
            "probe_layers(a, z, np.repeat(np.arange(20), 2), a, z); "
            "print(sorted(m for m in ('sklearn', 'scipy') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
