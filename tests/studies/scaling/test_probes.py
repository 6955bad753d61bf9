import numpy as np

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
