import pytest
import torch

from bindscale.studies.scaling.tasks.encodings import WEIGHT_LEVELS, Encoder


def enc(name, M=4, K=2, seed=0):
    g = torch.Generator().manual_seed(seed)
    return Encoder(name, M, K, g, (3, 2), n_shots=5)


Z = torch.tensor([[0.5, 0.0, 0.9, 0.0], [0.0, 0.7, 0.0, 0.0], [1.0, 0.6, 0.0, 0.0]])


def test_identity_and_dims():
    assert torch.equal(enc("identity")(Z), Z)
    assert enc("tokens").dim == 8 and enc("fewshot").dim == 5 * (3 + 2) and enc("orthogonal").dim == 4


def test_orthogonal_is_a_rotation():
    e = enc("orthogonal")
    torch.testing.assert_close(e.Q @ e.Q.T, torch.eye(4), atol=1e-5, rtol=0)
    torch.testing.assert_close(e(Z).norm(dim=1), Z.norm(dim=1))


def test_tokens_hand_worked():
    out = enc("tokens")(Z).view(3, 2, 4)
    expected = torch.zeros(3, 2, 4)
    expected[0, 0, 0], expected[0, 1, 2] = 0.5, 0.9  # slots in ascending module order
    expected[1, 0, 1] = 0.7  # second slot empty
    expected[2, 0, 0], expected[2, 1, 1] = 1.0, 0.6
    assert torch.equal(out, expected)


def test_invertible_map_can_be_inverted():
    e = enc("invertible")
    h = e(Z)
    # Undo A2, then leaky ReLU (slope 0.2), then A1 and the offset.
    u = h @ torch.linalg.inv(e.A2.T)
    u = torch.where(u >= 0, u, u / 0.2)
    z = (u - e.c) @ torch.linalg.inv(e.A1.T)
    torch.testing.assert_close(z, Z, atol=1e-5, rtol=0)
    assert not torch.allclose(h, Z)


def test_interval_shuffle_is_a_bijection_that_keeps_zeros():
    e = enc("interval_shuffle", M=1, K=1, seed=3)
    w = torch.linspace(0.5005, 0.9995, 500).unsqueeze(1)  # off the piece boundaries
    out = e(w)
    assert torch.all((out >= 0.5) & (out <= 1.0))
    assert len(torch.unique(out.round(decimals=5))) == 500  # injective on a fine grid
    assert torch.equal(e(torch.zeros(2, 1)), torch.zeros(2, 1))
    # Within one interval the map is a shift: piecewise linear with slope 1.
    piece = ((w - 0.5) / 0.1).floor()
    d = torch.diff(out[:, 0])[(torch.diff(piece[:, 0]) == 0)]
    torch.testing.assert_close(d, torch.full_like(d, float(w[1] - w[0])), atol=1e-5, rtol=0)
    assert not torch.all(torch.diff(out[:, 0]) > 0) or e.perm.tolist() == [[0, 1, 2, 3, 4]]


def test_fewshot_needs_demonstrations():
    e = enc("fewshot")
    with pytest.raises(ValueError):
        e(Z)
    xd, yd = torch.randn(3, 5, 3), torch.randn(3, 5, 2)
    assert e(Z, (xd, yd)).shape == (3, 25)


def test_interval_shuffle_is_injective_on_the_reference_weight_levels():
    """Every level of WEIGHT_LEVELS lies on a piece boundary; in float32 0.7 is 0.6999999, which
    the old floor put at the end of piece 1 and mapped onto another level's image."""
    levels = torch.tensor(WEIGHT_LEVELS).unsqueeze(1)
    for seed in range(30):
        out = enc("interval_shuffle", M=1, K=1, seed=seed)(levels)
        assert len(torch.unique(out.round(decimals=4))) == len(WEIGHT_LEVELS), seed
        assert out[-1, 0] == 1.0  # the top level is not reshuffled (as the reference)
        # The other levels are piece starts, so they map onto levels again.
        torch.testing.assert_close(((out[:-1] - 0.5) / 0.1).round(), (out[:-1] - 0.5) / 0.1, atol=1e-4, rtol=0)
