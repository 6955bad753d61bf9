import numpy as np
import pytest

from bindscale.studies.subgraphs.tasks import multiplication
from bindscale.studies.subgraphs.tasks.compgraph import (
    check_consistency,
    node_depths,
    parents,
    read_values,
    render_target,
)


def test_hand_worked_762_times_31():
    ex = multiplication.make_example(762, 31, scratchpad=True)
    g = ex.graph
    value = {n: d["value"] for n, d in g.nodes(data=True)}
    # Worked on paper. Row of b0 = 1: 2·1, 6·1, 7·1, no carries -> 762.
    # Row of b1 = 3: 2·3 = 6; 6·3 = 18 -> digit 8 carry 1; 7·3 = 21, + 1 = 22 -> digit 2 carry 2 -> 2286, shifted 22860.
    # 762 + 22860 = 23622.
    expected = {
        "a0": 2, "a1": 6, "a2": 7, "b0": 1, "b1": 3,
        "m0.0": 2, "d0.0": 2, "c0.0": 0, "m1.0": 6, "d1.0": 6, "c1.0": 0, "m2.0": 7, "d2.0": 7, "c2.0": 0,
        "r0": 762,
        "m0.1": 6, "d0.1": 6, "c0.1": 0, "m1.1": 18, "d1.1": 8, "c1.1": 1, "m2.1": 21, "d2.1": 2, "c2.1": 2,
        "r1": 22860,
        "y0": 2, "y1": 2, "y2": 6, "y3": 3, "y4": 2,
    }  # fmt: skip
    assert value == expected
    assert ex.prompt == "762*31=" and ex.answer == "23622"
    assert ex.target == "2,02,6,06,7,07,762;6,06,18,18,21,22,22860;23622$"
    assert ex.sizes == (3, 2) and ex.scratchpad and ex.task == "multiplication"
    # Depths: m 1, first carry 2, second 3, third 4, partial product 5, answer 6; six products at depth 1.
    assert (ex.depth, ex.width) == (6, 6)
    assert node_depths(g)["c2.1"] == 4 and node_depths(g)["y2"] == 6
    assert parents(g, "d2.1") == ["m2.1", "c1.1"]
    assert parents(g, "r1") == ["d0.1", "d1.1", "d2.1", "c2.1"]
    assert parents(g, "y3") == ["r0", "r1"]
    assert g.nodes["r0"]["span"] == (15, 18) and g.nodes["c1.1"]["span"] == (27, 28) and g.nodes["d1.1"]["span"] == (28, 29)
    assert g.nodes["y4"]["span"] == (42, 43) and g.nodes["y0"]["span"] == (46, 47)


def test_answer_only_and_three_row_layout():
    ex = multiplication.make_example(762, 31, scratchpad=False)
    assert ex.target == "23622$" and ex.answer == "23622"
    spans = {n: d["span"] for n, d in ex.graph.nodes(data=True) if "span" in d}
    assert spans == {"y4": (0, 1), "y3": (1, 2), "y2": (2, 3), "y1": (3, 4), "y0": (4, 5)}
    # 12·345 by hand: 2·5 = 10 -> carry 1 digit 0; 1·5 + 1 = 6 -> row 60. 12·4 = 48 -> 480. 12·3 = 36 -> 3600.
    # Running sum 60 + 480 = 540, then 540 + 3600 = 4140.
    ex3 = multiplication.make_example(12, 345, scratchpad=True)
    assert ex3.target == "10,10,5,06,60;8,08,4,04,480;540;6,06,3,03,3600;4140$"
    assert ex3.graph.nodes["s1"]["value"] == 540 and ex3.answer == "4140"
    assert multiplication.make_example(0, 9, True).target == "0,00,0;0$"
    with pytest.raises(ValueError):
        multiplication.make_example(-3, 4, True)


def test_text_graph_round_trip_on_random_examples():
    rng = np.random.default_rng(0)
    for a, b in multiplication.sample_operands(rng, 5, 5, 120):
        for scratchpad in (True, False):
            ex = multiplication.make_example(a, b, scratchpad)
            g = ex.graph
            assert ex.answer == str(a * b)
            written = {n for n, d in g.nodes(data=True) if "span" in d}
            inputs = {n for n, d in g.nodes(data=True) if d["op"] == "input"}
            assert written == (set(g.nodes) - inputs if scratchpad else {f"y{k}" for k in range(len(str(a * b)))})
            check_consistency(ex)


def test_target_length_stays_compact():
    assert len(multiplication.make_example(999, 999, True).target) == 85
    rng = np.random.default_rng(1)
    lengths = [len(multiplication.make_example(a, b, True).target) for a, b in multiplication.sample_at_sizes(rng, 3, 3, 50)]
    assert max(lengths) <= 85


def test_samplers():
    rng = np.random.default_rng(2)
    pairs = multiplication.sample_operands(rng, 4, 2, 400, min_digits=2)
    sizes = multiplication.operand_sizes(pairs)
    assert set(sizes) == set(multiplication.size_grid(4, 2, min_digits=2)) == {(2, 2), (3, 2), (4, 2)}
    exact = multiplication.sample_at_sizes(np.random.default_rng(3), 7, 1, 50)
    assert all(len(str(a)) == 7 and 0 <= b <= 9 for a, b in exact)
    assert multiplication.sample_operands(np.random.default_rng(5), 3, 3, 20) == multiplication.sample_operands(
        np.random.default_rng(5), 3, 3, 20
    )
    assert len(multiplication.size_grid(3, 3)) == 9
    with pytest.raises(ValueError):
        multiplication.sample_operands(rng, 0, 2, 5)


def test_reversed_format_writes_whole_numbers_units_first_and_reads_them_back():
    # 762·31 by hand (see the first test): rows 762 and 22860, answer 23622, each written units first.
    ex = multiplication.make_example(762, 31, scratchpad=True, reverse=True)
    assert ex.target == "2,02,6,06,7,07,267;6,06,18,18,21,22,06822;22632$" and ex.answer == "22632"
    assert ex.prompt == "762*31="  # the prompt keeps the usual order
    g = ex.graph
    assert g.nodes["r0"]["value"] == 762 and g.nodes["r0"]["span"] == (15, 18)
    assert g.nodes["y0"]["span"] == (42, 43) and g.nodes["y4"]["span"] == (46, 47)  # units digit first
    # Same graph as the usual format: only the text differs.
    plain = multiplication.make_example(762, 31, scratchpad=True)
    assert {n: d["value"] for n, d in g.nodes(data=True)} == {n: d["value"] for n, d in plain.graph.nodes(data=True)}
    assert (ex.depth, ex.width) == (plain.depth, plain.width)
    # 12·345 = 4140: running sum 540 written "045", answer "0414" (a trailing zero is the product's units).
    assert multiplication.make_example(12, 345, True, reverse=True).target == (
        "10,10,5,06,06;8,08,4,04,084;045;6,06,3,03,0063;0414$")
    assert multiplication.make_example(762, 31, False, reverse=True).target == "22632$"
    rng = np.random.default_rng(4)
    for a, b in multiplication.sample_operands(rng, 4, 4, 60):
        for scratchpad in (True, False):
            rev = multiplication.make_example(a, b, scratchpad, reverse=True)
            assert rev.answer == str(a * b)[::-1]
            check_consistency(rev)


def test_reversed_fields_are_read_right_to_left_and_a_wrong_digit_lands_on_its_node():
    ex = multiplication.make_example(762, 31, scratchpad=True, reverse=True)
    got = read_values(ex, "2,02,6,06,7,07,267;6,06,18,18,21,22,06832;22632$")  # r1 read as 23860
    assert got["r0"] == 762 and got["r1"] == 23860 and got["y0"] == 2 and got["y4"] == 2
    assert read_values(ex, "2,02,6,06,7,07,-267;6$")["r0"] is None  # a reversed field is digits only
    with pytest.raises(ValueError):
        render_target(ex.graph, {"r0": -762})
