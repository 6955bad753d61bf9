"""The floor / ceiling reason (and its band) names its arms in words that fit their number (a new user read "both sit" of one arm)."""

import pytest

from bindscale.kit import at_bound


def test_the_bound_reason_fits_one_two_or_three_arms():
    assert "it sits at the floor" in at_bound({"trained": [0.0, 0.0]})
    assert "both sit at the ceiling" in at_bound({"a": [1.0], "b": [1.0, 1.0]})
    assert "all sit at the floor" in at_bound({"a": [0.0], "b": [0.0], "c": [0.0]})
    assert at_bound({"a": [0.0], "b": [0.5]}) is None

def test_at_bound_band_widens_the_floor_and_ceiling_and_refuses_a_negative_band():
    near = {"a": [0.0, 0.0, 0.0], "b": [0.0, 1 / 300, 2 / 300]}
    assert at_bound(near) is None  # not exactly at the floor
    assert "within 0.02 of 0" in at_bound(near, band=0.02)
    assert at_bound({"a": [0.0, 0.0], "b": [0.0, 0.03]}, band=0.02) is None  # one seed off the band
    assert "within 0.02 of 1" in at_bound({"a": [0.99, 1.0], "b": [0.985, 1.0]}, band=0.02)
    with pytest.raises(ValueError):
        at_bound(near, band=-0.1)
    with pytest.raises(ValueError):
        at_bound(near, band=float("nan"))
