import numpy as np

from bindscale.probes import decodability


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
