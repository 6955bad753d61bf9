"""The probes' whitened inputs (probes.py ``inputs: whiten``): the transform against scikit-learn's PCA, the folded
map against the loss it was fit on, the conditioning it is for, and the sources' raw fit reported beside it."""

import numpy as np
import pandas as pd
import pytest
import torch
from scipy.spatial.distance import pdist
from sklearn.decomposition import PCA

from bindscale.studies.geometry.grammar import GrammarConfig, make_splits
from bindscale.studies.geometry.probes import ProbeSettings, _batches, _loss, fit_probe, whitening
from bindscale.studies.geometry.scores import score

from .test_probes import _planted


def _pairs(X, sizes):
    """Split the rows of ``X`` into fake sentences' activations (only the shapes matter to ``whitening``)."""
    out, i = [], 0
    for n in sizes:
        out.append((X[i:i + n], list(range(n))))
        i += n
    return out


def test_whitening_equals_scikit_learn_pca_whiten():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 12)) @ np.diag(np.logspace(-1, 3, 12)) @ np.linalg.qr(rng.normal(size=(12, 12)))[0]
    X += 50.0  # an offset: whitening centres
    mu, W = whitening(_pairs(X, [40] * 10))
    Z = (X - mu) @ W
    assert W.shape == (12, 12)
    np.testing.assert_allclose(np.cov(Z, rowvar=False), np.eye(12), atol=1e-8)
    ref = PCA(whiten=True).fit(X).transform(X)  # the same up to a rotation (sign and order of the axes)
    np.testing.assert_allclose(pdist(Z), pdist(ref), rtol=1e-6)


def test_whitening_drops_null_axes_and_degenerate_inputs():
    rng = np.random.default_rng(1)
    low = rng.normal(size=(300, 5)) @ rng.normal(size=(5, 20))  # rank 5 in 20 dimensions
    assert whitening(_pairs(low, [30] * 10))[1].shape == (20, 5)
    assert whitening(_pairs(np.ones((30, 8)), [10, 10, 10]))[1].shape == (8, 0)  # every word the same vector
    assert whitening(_pairs(np.ones((1, 8)), [1]))[1].shape == (8, 0)  # one word: no covariance


def test_whitening_drops_the_rounding_noise_of_coarse_floats_and_refuses_non_finite_values():
    rng = np.random.default_rng(3)
    low = rng.normal(size=(2000, 32)) @ rng.normal(size=(32, 128))  # rank 32 in 128 dimensions
    assert whitening(_pairs(low.astype(np.float32), [100] * 20))[1].shape == (128, 32)
    # float16 rounding lifts the 96 null axes to ~1e-6 of the largest variance: they are noise, not axes
    assert whitening(_pairs(low.astype(np.float16), [100] * 20))[1].shape == (128, 32)
    bad = low.astype(np.float16)
    bad[5, 7] = np.inf  # a float16 overflow
    with pytest.raises(ValueError, match="NaN or infinite"):
        whitening(_pairs(bad, [100] * 20))
    with pytest.raises(ValueError, match="NaN or infinite"):
        fit_probe("structural", _pairs(np.where(np.arange(128) == 0, np.nan, low[:300]), [30] * 10),
                  [], ProbeSettings(rank=4, max_epochs=1))


@pytest.fixture(scope="module")
def planted():
    torch.set_num_threads(1)
    splits = make_splits(3, 0, 120, 30, 30, GrammarConfig(max_words=12))
    rng = np.random.default_rng(2)
    # Anisotropic: the planted tree geometry (48 dims) plus 16 nuisance dimensions of large variance per word,
    # mixed by a random ill-conditioned map (singular values 1e-2 ... 1e2), as trained LMs' states are.
    mix = np.linalg.qr(rng.normal(size=(64, 64)))[0] @ np.diag(np.logspace(-2, 2, 64)) @ np.linalg.qr(
        rng.normal(size=(64, 64)))[0]
    out = {}
    for k in ("fit", "dev", "test"):
        out[k] = [(np.hstack([a, 3.0 * rng.normal(size=(len(s), 16))]) @ mix, s)
                  for a, s in _planted(splits[k], True)]
    return out


@pytest.mark.parametrize("kind", ["structural", "polar"])
def test_folded_map_reads_raw_activations_as_it_was_fit(planted, kind):
    """The stored B (k × d) on raw activations gives the loss the fit minimised on whitened ones (its dev loss)."""
    fit, dev = planted["fit"], planted["dev"]
    s = ProbeSettings(rank=8, max_epochs=4)
    probe = fit_probe(kind, fit, dev, s, seed=0)
    assert probe.B.shape == (8, 64) and probe.scale == 1.0
    rels = sorted({r for _, x in fit for r in x.deprels if r != "root"})
    batches = _batches(dev, 4 * s.batch_size, 1.0, {r: i for i, r in enumerate(rels)})
    B = torch.tensor(probe.B, dtype=torch.float32)
    with torch.no_grad():
        val = sum(float(_loss(B, b, kind, s.angular_weight)) * len(b.lengths) for b in batches) / len(dev)
    assert val == pytest.approx(probe.dev_loss, rel=2e-3)


def test_whitening_conditions_the_fit_and_the_sources_fit_is_kept(planted):
    """On ill-conditioned states a short fit reads the planted trees once whitened, and not on raw vectors
    (the reason for bindscale's default); inputs 'scale' is still the raw fit."""
    fit, dev, test = planted["fit"], planted["dev"], planted["test"]
    s = ProbeSettings(rank=16, max_epochs=20)
    white = score(fit_probe("structural", fit, dev, s, seed=0), test)["uuas_pp"]
    raw = score(fit_probe("structural", fit, dev, ProbeSettings(rank=16, max_epochs=20, inputs="scale"), seed=0),
                test)["uuas_pp"]
    assert white >= 0.95 and raw < white - 0.1


def test_inputs_setting_is_checked_and_recorded_as_fit():
    from bindscale.studies.geometry.config import ProbeConfig

    with pytest.raises(ValueError, match="inputs"):
        ProbeSettings(inputs="pca")
    assert ProbeSettings().inputs == "whiten" and ProbeSettings.authors().inputs == "scale"
    assert ProbeConfig(inputs="scale").settings().inputs == "scale"
    # the recipe takes inputs from the config, so a record's probe.inputs is what was fit; the authors' own fit
    # is recipe authors with inputs scale
    assert ProbeConfig(recipe="authors").settings().inputs == "whiten"
    assert ProbeConfig(recipe="authors", inputs="scale").settings() == ProbeSettings.authors(max_epochs=20, patience=2)


def test_every_estimator_is_reported_only_when_every_unit_has_both():
    """The raw and whitened fits' test numbers are reported beside the chosen one (verdicts.estimator_report, which
    replaced the trained model's raw-fit report when the estimator came to be chosen on dev), for the trained model
    and its twin, with how often each was chosen; nothing when a unit lacks a number or the rows hold one estimator."""
    from bindscale.studies.geometry.verdicts import ESTIMATOR_PREFIX, REL, estimator_report

    cols = {}
    for prefix in ("", "untrained_"):
        for est, ep in ESTIMATOR_PREFIX.items():
            c = f"ctx_{prefix}{ep}"
            lift = 0.1 if est == "whiten" else 0.0
            cols |= {f"{c}polar_uuas_pp_minus_chain": [-0.1 + lift, -0.12 + lift, -0.09 + lift, -0.11 + lift],
                     f"{c}polar_minus_structural_las_pp": [0.04, 0.05, 0.03, 0.06],
                     f"{c}polar_minus_structural_{REL}": [0.02, 0.01, 0.03, 0.02],
                     f"{c}polar_uuas_pp": [0.4 + lift] * 4, f"{c}polar_{REL}": [0.3] * 4, f"{c}structural_{REL}": [0.28] * 4}
        cols[f"ctx_{prefix}inputs_polar"] = ["whiten", "whiten", "scale", "whiten"]
    units = pd.DataFrame(cols)
    out, words = estimator_report(units)
    assert out["trained"]["scale"]["polar_uuas_pp_minus_chain"]["value"] == pytest.approx(-0.105)
    assert out["trained"]["whiten"]["polar_uuas_pp_minus_chain"]["value"] == pytest.approx(-0.005)
    assert out["untrained twin"]["scale"]["polar_minus_structural_las_pp"]["value"] == pytest.approx(0.045)
    assert out["trained"]["chosen_on_dev"]["polar"] == {"scale": 1, "whiten": 3}
    assert "not deciding" in words and "whitened 3/4" in words and "raw 1/4" in words
    bad = units.assign(**{f"ctx_untrained_raw_polar_{REL}": [0.3, np.nan, 0.3, 0.3]})
    assert estimator_report(bad) == ({}, "")  # a NaN unit: nothing reported
    one = units[[c for c in units if "raw_" not in c]]
    assert estimator_report(one) == ({}, "")  # one estimator (probe.inputs whiten or scale): nothing beside it
    assert estimator_report(units.iloc[:0]) == ({}, "")
