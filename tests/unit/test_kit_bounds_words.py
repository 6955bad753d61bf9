"""The floor / ceiling reason names its arms in words that fit their number (a new user read "both sit" of one arm)."""

from bindscale.kit import at_bound


def test_the_bound_reason_fits_one_two_or_three_arms():
    assert "it sits at the floor" in at_bound({"trained": [0.0, 0.0]})
    assert "both sit at the ceiling" in at_bound({"a": [1.0], "b": [1.0, 1.0]})
    assert "all sit at the floor" in at_bound({"a": [0.0], "b": [0.0], "c": [0.0]})
    assert at_bound({"a": [0.0], "b": [0.5]}) is None
