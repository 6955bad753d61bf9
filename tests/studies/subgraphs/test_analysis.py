import math

import numpy as np
import pytest
from scipy.stats import entropy
from sklearn.metrics import mutual_info_score

from bindscale.studies.subgraphs.analysis import (
    accuracy_by,
    classify_nodes,
    fit_compounding,
    label_table,
    relative_information_gain,
    rig_table,
    subgraph_coverage,
)
from bindscale.studies.subgraphs.tasks import maxsubseq, multiplication
from bindscale.studies.subgraphs.tasks.compgraph import read_values, render_target


def _labels(ex, text):
    return classify_nodes(ex, read_values(ex, text))


def _non_default(labels, default="correct"):
    return {n: lab for n, lab in labels.items() if lab != default}


def test_gold_scratchpads_are_correct_at_every_node_and_depth():
    rng = np.random.default_rng(0)
    exs = [multiplication.make_example(a, b, True) for a, b in multiplication.sample_operands(rng, 4, 4, 40)]
    exs += [maxsubseq.make_example(xs, True) for xs in maxsubseq.sample_sequences(rng, 8, 40)]
    labels = [_labels(ex, ex.target) for ex in exs]
    assert all(set(lab.values()) == {"correct"} for lab in labels)
    table = label_table(exs, labels)
    assert set(table["label"]) == {"correct"} and (table["share"] == 1).all()
    assert set(table["depth"]) == set(range(1, max(ex.depth for ex in exs) + 1))


def test_planted_wrong_product_is_local_and_propagates_downstream():
    ex = multiplication.make_example(762, 31, True)
    # 6·3 written as 19 (local); the carry/digit, partial product and answer then follow 19 faithfully:
    # 19 + 0 -> digit 9 (carry still 1), row 2296 -> 22960, 762 + 22960 = 23722.
    text = "2,02,6,06,7,07,762;6,06,19,19,21,22,22960;23722$"
    assert render_target(ex.graph, {"m1.1": 19, "d1.1": 9, "r1": 22960, "y2": 7}) == text
    labels = _labels(ex, text)
    assert _non_default(labels) == {"m1.1": "local", "d1.1": "propagation", "r1": "propagation", "y2": "propagation"}
    # The carry of 19 equals that of 18 and the other answer digits of 23722 equal 23622's: nothing to repair.
    assert labels["c1.1"] == labels["y3"] == "correct"
    assert list(labels)[:5] == ["a0", "a1", "a2", "b0", "b1"]  # topological order
    # A wrong digit that does not follow its wrong parent is local too.
    assert _labels(ex, text.replace("19,19", "19,17"))["d1.1"] == "local"


def test_slip_repaired_later_is_restoration():
    ex = multiplication.make_example(762, 31, True)
    # 6·3 written as 19, but the next field uses 18: digit 8 is right although its parent says 9.
    labels = _labels(ex, "2,02,6,06,7,07,762;6,06,19,18,21,22,22860;23622$")
    assert _non_default(labels) == {"m1.1": "local", "d1.1": "restoration"}
    dp = maxsubseq.make_example([3, -1, 4, -5, 2], True)
    assert _non_default(_labels(dp, "3;3;7;7;8;9$")) == {"dp4": "local", "y": "restoration"}
    assert _non_default(_labels(dp, "3;3;7;7;8;8$")) == {"dp4": "local", "y": "propagation"}


def test_dp_error_propagates_through_the_table():
    dp = maxsubseq.make_example([3, -1, 4, -5, 2], True)
    # dp0 = 4 instead of 3; then max(4, -1) = 4, max(4, 4 + 4) = 8, max(8, 4 - 5) = 8, max(8, 8 + 2) = 10.
    labels = _labels(dp, "4;4;8;8;10;10$")
    assert labels["dp0"] == "local"
    assert all(labels[n] == "propagation" for n in ("dp1", "dp2", "dp3", "dp4", "y"))
    assert all(labels[f"x{i}"] == "correct" for i in range(5))


def test_missing_and_unobserved():
    ex = multiplication.make_example(762, 31, True)
    labels = _labels(ex, "2,02,6,06,7,07,762;6,06,18")  # cut off, no stop
    assert labels["d0.1"] == "correct" and labels["m1.1"] == "missing" and labels["y0"] == "missing"
    # An unreadable parent: the child is judged on its own value.
    labels = _labels(ex, "2,02,6,06,7,07,762;6,06,1x,18,21,22,22860;23622$")
    assert labels["m1.1"] == "missing" and labels["d1.1"] == "correct" and labels["r1"] == "correct"
    ans = multiplication.make_example(762, 31, False)
    labels = _labels(ans, "23722$")
    assert labels["y2"] == "local" and labels["y4"] == "correct" and labels["r1"] == labels["m0.0"] == "unobserved"
    assert labels["a0"] == "correct"


def test_subgraph_coverage_by_hand():
    train = [multiplication.make_example(12, 3, True)]
    test = [multiplication.make_example(22, 3, True)]
    nodes, _ = subgraph_coverage(train, test)
    seen = dict(zip(nodes["node"], nodes["seen"]))
    # 22·3: both products are 2·3 = 6 (seen as 12·3's first column); the first column's digit/carry are 12·3's too.
    # The second column adds carry 0 to 6, which 12·3 never did (it added 0 to 1·3 = 3): unseen from there on.
    assert seen == {
        "m0.0": True, "d0.0": True, "c0.0": True, "m1.0": True,
        "d1.0": False, "c1.0": False, "r0": False, "y0": False, "y1": False,
    }  # fmt: skip
    assert multiplication.make_example(22, 3, True).target == "6,06,6,06,66;66$"
    # Prediction 6,06,6,07,76;76: tens digit 7 (local), row 76 and answer tens digit 7 follow it, units 6 right.
    labels = [_labels(test[0], "6,06,6,07,76;76$")]
    assert _non_default(labels[0]) == {"d1.0": "local", "r0": "propagation", "y1": "propagation"}
    assert _labels(test[0], "6,06,6,07,67;67$")["r0"] == "local"  # 67 does not follow digits 6, 7 (that is 76)
    nodes, summary = subgraph_coverage(train, test, labels)
    got = {(r.depth, r.label): (r.n, r.seen_share) for r in summary.itertuples()}
    assert got == {
        (1, "correct"): (2, 1.0), (2, "correct"): (2, 1.0), (3, "correct"): (1, 0.0), (3, "wrong"): (1, 0.0),
        (4, "wrong"): (1, 0.0), (5, "correct"): (1, 0.0), (5, "wrong"): (1, 0.0),
    }  # fmt: skip
    fine = subgraph_coverage(train, test, labels, coarse=False)[1]
    assert set(fine["label"]) == {"correct", "local", "propagation"}
    # A test example that is in training is fully seen.
    assert subgraph_coverage(train + test, test)[0]["seen"].all()


def test_rig_matches_sklearn_and_scipy():
    # Hand case: y = [0, 1, 1, 1], x = [0, 0, 1, 1]. H(Y) = 1/4 ln 4 + 3/4 ln 4/3, H(Y|X) = 1/2 ln 2.
    x, y = np.array([[0], [0], [1], [1]]), np.array([0, 1, 1, 1])
    h_y = 0.25 * math.log(4) + 0.75 * math.log(4 / 3)
    assert relative_information_gain(x, y, [0]) == pytest.approx((h_y - 0.5 * math.log(2)) / h_y, abs=1e-12)
    rng = np.random.default_rng(0)
    X = rng.integers(0, 4, (300, 3))
    y = (X[:, 0] + (rng.random(300) < 0.3) * X[:, 1]) % 4
    h = entropy(np.bincount(y))
    for j in range(3):
        assert relative_information_gain(X, y, [j]) == pytest.approx(mutual_info_score(X[:, j], y) / h, abs=1e-10)
    pair = X[:, 0] * 10 + X[:, 1]
    assert relative_information_gain(X, y, [0, 1]) == pytest.approx(mutual_info_score(pair, y) / h, abs=1e-10)
    assert relative_information_gain(X, y, []) == 0.0
    assert math.isnan(relative_information_gain(X, np.zeros(300, dtype=int), [0]))
    with pytest.raises(ValueError):
        relative_information_gain(X, y, [3])


def test_rig_table_finds_the_units_digit_rule():
    rng = np.random.default_rng(1)
    exs = [multiplication.make_example(a, b, False) for a, b in multiplication.sample_at_sizes(rng, 2, 2, 300)]
    table = rig_table(exs, max_order=2)
    y0 = table[table["output"] == "y0"].set_index("inputs")["rig"]
    assert y0[("a0", "b0")] == pytest.approx(1.0)  # the units digit is a0·b0 mod 10
    assert y0.drop(("a0", "b0")).max() < 0.9
    assert set(table["order"]) == {1, 2} and len(y0) == 4 + 6


def test_fit_compounding_recovers_eps():
    d = np.arange(1, 11)
    eps, r2 = fit_compounding(d, 0.9**d)
    assert eps == pytest.approx(0.1, abs=1e-6) and r2 == pytest.approx(1.0, abs=1e-9)
    rng = np.random.default_rng(0)
    n = rng.integers(50, 500, len(d))
    acc = rng.binomial(n, 0.8**d) / n
    eps, r2 = fit_compounding(d, acc, weights=n)
    assert abs(eps - 0.2) < 0.02 and r2 > 0.95
    # Weights decide between two inconsistent points.
    eps_a, _ = fit_compounding([1, 2], [0.5, 0.81], weights=[1000, 1])
    eps_b, _ = fit_compounding([1, 2], [0.5, 0.81], weights=[1, 1000])
    assert eps_a == pytest.approx(0.5, abs=0.01) and eps_b == pytest.approx(0.1, abs=0.01)
    assert fit_compounding([1, 2, 3], [1.0, 1.0, 1.0])[0] == pytest.approx(0.0, abs=1e-3)
    with pytest.raises(ValueError):
        fit_compounding([1], [0.5])


def test_accuracy_by():
    exs = [maxsubseq.make_example(xs, False) for xs in ([1], [1, 2], [2, 1], [1, 2, 3])]
    df = accuracy_by(exs, [True, True, False, False], "depth")
    assert df.to_dict("list") == {"depth": [2, 3, 4], "n": [1, 2, 1], "accuracy": [1.0, 0.5, 0.0]}
    df = accuracy_by(exs, [True, True, False, False], lambda ex: len(ex.answer))
    assert df["n"].tolist() == [4]
    with pytest.raises(ValueError):
        accuracy_by(exs, [True], "depth")


# ---- Dziri et al.'s taxonomy beside bindscale's recomputed one ----

def _both(ex, values):
    """(Dziri et al.'s labels, bindscale's recomputed labels) of a scratchpad with planted ``values``."""
    from bindscale.studies.subgraphs.analysis import classify_nodes_dziri

    pred = read_values(ex, render_target(ex.graph, values))
    return _non_default(classify_nodes_dziri(ex, pred)), _non_default(classify_nodes(ex, pred))


def test_dziri_taxonomy_on_a_2x2_product_without_carries():
    ex = multiplication.make_example(12, 13, True)  # 12·13 = 156: rows 36 and 120, no carry anywhere
    assert ex.target == "6,06,3,03,36;2,02,1,01,120;156$"
    # 2·3 written 7 and followed faithfully: digit 7, row 37, answer 157.
    dziri, recomputed = _both(ex, {"m0.0": 7, "d0.0": 7, "r0": 37, "y0": 7})
    # Dziri et al.: the carry 0, and the answer's tens and hundreds digits, are right under a wrong parent.
    assert dziri == {"m0.0": "local", "d0.0": "propagation", "c0.0": "restoration", "r0": "propagation",
                     "y0": "propagation", "y1": "restoration", "y2": "restoration"}
    # Recomputed: the wrong parent does not change them (7 // 10 = 0 = 6 // 10; 37 + 120 = 157 keeps 5 and 1).
    assert recomputed == {"m0.0": "local", "d0.0": "propagation", "r0": "propagation", "y0": "propagation"}
    # A wrong row over right digits is local in both; the answer's units digit then propagates it.
    assert _both(ex, {"r0": 35, "y0": 5}) == ({"r0": "local", "y0": "propagation", "y1": "restoration",
                                                "y2": "restoration"}, {"r0": "local", "y0": "propagation"})
    # A wrong digit under a wrong product that does not follow it: propagation for Dziri et al., local recomputed.
    dziri, recomputed = _both(ex, {"m0.0": 7, "d0.0": 8})
    assert dziri["d0.0"] == "propagation" and recomputed["d0.0"] == "local"
    # A right digit under a wrong product that would give a wrong digit: restoration in both.
    dziri, recomputed = _both(ex, {"m0.0": 7})
    assert dziri["d0.0"] == recomputed["d0.0"] == "restoration"


def test_dziri_taxonomy_on_a_2x2_product_with_carries():
    ex = multiplication.make_example(57, 68, True)  # 57·68 = 3876: 7·8 = 56, 5·8 + 5 = 45; 7·6 = 42, 5·6 + 4 = 34
    assert ex.target == "56,56,40,45,456;42,42,30,34,3420;3876$"
    # Carry of 56 written 4: the next column adds 4 (44), row 446, answer 446 + 3420 = 3866.
    dziri, recomputed = _both(ex, {"c0.0": 4, "d1.0": 4, "c1.0": 4, "r0": 446, "y1": 6})
    assert dziri == {"c0.0": "local", "d1.0": "propagation", "c1.0": "restoration", "r0": "propagation",
                     "y0": "restoration", "y1": "propagation", "y2": "restoration", "y3": "restoration"}
    assert recomputed == {"c0.0": "local", "d1.0": "propagation", "r0": "propagation", "y1": "propagation"}


def test_dziri_taxonomy_gold_missing_and_unobserved():
    from bindscale.studies.subgraphs.analysis import classify_nodes_dziri

    rng = np.random.default_rng(1)
    exs = [multiplication.make_example(a, b, True) for a, b in multiplication.sample_operands(rng, 4, 4, 20)]
    exs += [maxsubseq.make_example(xs, True) for xs in maxsubseq.sample_sequences(rng, 8, 20)]
    assert all(set(classify_nodes_dziri(ex, read_values(ex, ex.target)).values()) == {"correct"} for ex in exs)
    ex = multiplication.make_example(762, 31, True)
    labels = classify_nodes_dziri(ex, read_values(ex, "2,02,6,06,7,07,762;6,06,18"))  # cut off, no stop
    assert labels["m1.1"] == "missing" and labels["y0"] == "missing" and labels["d0.1"] == "correct"
    # A missing parent counts as wrong: a right child of it is a restoration.
    labels = classify_nodes_dziri(ex, read_values(ex, "2,02,6,06,7,07,762;6,06,1x,18,21,22,22860;23622$"))
    assert labels["m1.1"] == "missing" and labels["d1.1"] == "restoration" and labels["r1"] == "correct"
    # Answer only: intermediate nodes are unobserved and count as right parents, so a wrong digit is local.
    ans = multiplication.make_example(762, 31, False)
    labels = classify_nodes_dziri(ans, read_values(ans, "23722$"))
    assert labels["y2"] == "local" and labels["y4"] == "correct" and labels["r1"] == "unobserved"
    # Dziri et al.'s right/wrong split is bindscale's: the coverage summary does not depend on the taxonomy.
    from bindscale.studies.subgraphs.analysis import COARSE

    pred = read_values(ex, "2,02,6,06,7,07,762;6,06,19,18,21,22,22860;23622$")
    a, b = classify_nodes_dziri(ex, pred), classify_nodes(ex, pred)
    assert {n: COARSE.get(v) for n, v in a.items()} == {n: COARSE.get(v) for n, v in b.items()}
