import networkx as nx
import pytest
import torch

from bindscale.studies.subgraphs.tasks import compgraph, maxsubseq, multiplication
from bindscale.studies.subgraphs.tasks import charvocab
from bindscale.studies.subgraphs.tasks.compgraph import (
    ancestors_signature,
    graph_depth,
    graph_width,
    node_depths,
    predicted_answer,
    read_values,
    render_target,
    signatures,
)


def _hand_graph():
    # u, v inputs; n1(u), n2(u), n3(v); n4(n1, n2); n5(u, n4): the longest path to n5 has 3 edges, the shortest 1.
    g = nx.DiGraph()
    for n in ("u", "v"):
        g.add_node(n, op="input", value=1)
    for n, ps in [("n1", ["u"]), ("n2", ["u"]), ("n3", ["v"]), ("n4", ["n1", "n2"]), ("n5", ["u", "n4"])]:
        g.add_node(n, op="add", value=0)
        for i, p in enumerate(ps):
            g.add_edge(p, n, arg=i)
    return g


def test_depth_and_width_of_a_hand_graph():
    g = _hand_graph()
    assert node_depths(g) == {"u": 0, "v": 0, "n1": 1, "n2": 1, "n3": 1, "n4": 2, "n5": 3}
    assert graph_depth(g) == 3
    assert graph_width(g) == 3  # depth 1 holds n1, n2, n3; the inputs are only 2
    g.remove_node("n3")
    assert graph_width(g) == 2


def test_signature_ignores_position_but_not_values_or_argument_order():
    s_12x3 = signatures(multiplication.make_example(12, 3, True).graph)
    s_2x3 = signatures(multiplication.make_example(2, 3, True).graph)
    s_3x2 = signatures(multiplication.make_example(3, 2, True).graph)
    s_4x3 = signatures(multiplication.make_example(4, 3, True).graph)
    assert s_12x3["m0.0"] == s_2x3["m0.0"]  # 2·3 in both
    assert s_12x3["c0.0"] == s_2x3["c0.0"]
    assert s_12x3["m0.0"] != s_3x2["m0.0"]  # same value 6, arguments swapped
    assert s_2x3["m0.0"] != s_4x3["m0.0"]
    assert s_12x3["y0"] != s_2x3["y0"]  # same value 6, different ancestors (12·3 = 36)
    g = multiplication.make_example(762, 31, True).graph
    assert ancestors_signature(g, "r1") == signatures(g)["r1"]
    assert isinstance(hash(ancestors_signature(g, "y4")), int)


def test_read_values_is_robust_to_a_wrong_length_field_and_truncation():
    ex = multiplication.make_example(762, 31, True)
    gold = {n: d["value"] for n, d in ex.graph.nodes(data=True)}
    # 6·3 written as 178 (three characters): only that node changes.
    bad = ex.target.replace(";6,06,18,", ";6,06,178,")
    got = read_values(ex, bad)
    assert got["m1.1"] == 178
    assert {n: v for n, v in got.items() if n != "m1.1"} == {n: v for n, v in gold.items() if n != "m1.1"}
    # Cut off without a stop: the unfinished last field is not read, later fields are missing.
    cut = read_values(ex, "2,02,6,06,7,0")
    assert (cut["m0.0"], cut["c0.0"], cut["d0.0"], cut["m2.0"]) == (2, 0, 2, 7)
    assert cut["c2.0"] is None and cut["d2.0"] is None and cut["r0"] is None and cut["y0"] is None
    assert cut["a2"] == 7  # inputs come from the prompt
    junk = read_values(ex, "2,0x,6,06,7,07,762;6,06,18,18,21,22,22860;23622$")
    assert junk["c0.0"] is None and junk["d0.0"] is None and junk["m1.0"] == 6 and junk["y4"] == 2
    assert all(v is None for n, v in read_values(ex, "").items() if n[0] not in "ab")
    # A shorter answer reads as leading zeros, digit by place value.
    short = read_values(ex, ex.target.replace("23622$", "3622$"))
    assert (short["y4"], short["y3"], short["y0"]) == (0, 3, 2)


def test_render_with_overrides_and_digit_bounds():
    ex = multiplication.make_example(762, 31, True)
    assert render_target(ex.graph) == ex.target
    assert render_target(ex.graph, {"d1.1": 9}) == "2,02,6,06,7,07,762;6,06,18,19,21,22,22860;23622$"
    with pytest.raises(ValueError):
        render_target(ex.graph, {"d1.1": 12})


def test_predicted_answer_and_in_distribution():
    assert predicted_answer("2,02;762;23622$junk") == "23622"
    assert predicted_answer("23622$") == "23622"
    assert predicted_answer("2,02;76") is None
    assert compgraph.is_in_distribution((3, 3), 3) and not compgraph.is_in_distribution((3, 4), 3)


def test_pack_mask_marks_positions_whose_next_token_is_target():
    exs = [
        multiplication.make_example(762, 31, True),
        multiplication.make_example(7, 5, False),
        maxsubseq.make_example([3, -1, 4, -5, 2], True),
    ]
    tokens, mask = charvocab.pack(exs)
    L = max(len(e.prompt + e.target) for e in exs)
    assert tokens.shape == mask.shape == (3, L) and tokens.dtype == torch.long and mask.dtype == torch.bool
    for r, ex in enumerate(exs):
        p, t = len(ex.prompt), len(ex.target)
        assert charvocab.decode(tokens[r]) == ex.prompt + ex.target
        assert mask[r].nonzero().flatten().tolist() == list(range(p - 1, p + t - 1))
        assert charvocab.decode(tokens[r, 1:][mask[r, :-1]]) == ex.target
        assert torch.all(tokens[r, p + t :] == charvocab.PAD)
    assert charvocab.pack(exs, max_len=L + 4)[0].shape == (3, L + 4)
    with pytest.raises(ValueError):
        charvocab.pack(exs, max_len=L - 1)


def test_encode_decode():
    assert charvocab.encode("") == []
    ids = charvocab.encode("3,-1=7;9$")
    assert charvocab.PAD not in ids and len(set(ids)) == len(ids) == 9
    assert charvocab.decode(ids + charvocab.encode("12$")) == "3,-1=7;9$"  # stops after the first $
    assert charvocab.decode([charvocab.PAD] + charvocab.encode("12") + [charvocab.PAD]) == "12"
    with pytest.raises(ValueError):
        charvocab.encode("12+3")
    with pytest.raises(ValueError):
        charvocab.decode([charvocab.VOCAB_SIZE])


# ---- Faith and Fate's depth convention beside bindscale's ----

@pytest.mark.parametrize("a, b, source, ours", [
    (7, 8, 4, 4),          # 1x1: product, concatenation, shift, final sum; ours: product, digit, row, answer digit
    (12, 13, 5, 5),        # 2x2 without carries: n + 3 = 5; ours n + max(m, 2) + 1 = 5
    (57, 68, 6, 5),        # 2x2, carry out of column 0: product, carry, sum, concatenation, shift, final = 2n + 2
    (105, 3, 7, 6),        # 3x1, carry only out of column 0 (0·3 + 1 = 1 stops it): 7 edges
    (999, 9, 8, 6),        # carries all along: 2n + 2 = 8
    (111, 111, 6, 7),      # no carries: n + 3 = 6; ours 3 + 3 + 1
    (12, 1111, 5, 7),      # the source's depth ignores b's length; ours grows with it (running sums)
    (99999, 99999, 12, 11),  # the source's maximum at 5 digits, 12 edges
    (11111, 11111, 8, 11),   # its minimum at 5 digits, n + 3
])
def test_source_depth_by_hand(a, b, source, ours):
    ex = multiplication.make_example(a, b, True)
    assert multiplication.source_depth(a, b) == ex.depth_source == source
    assert ex.depth == ours == len(str(a)) + max(len(str(b)), 2) + 1
    assert multiplication.make_example(a, b, False).depth_source == source


def test_source_graph_structure_of_57x68():
    g = multiplication.source_graph(57, 68)
    # Column 0 of each row splits 56 / 42 into carry and digit; the last column never splits; no column 2.
    assert {("c", 0, 0), ("r", 0, 0), ("s", 1, 0), ("c", 0, 1), ("s", 1, 1)} <= set(g)
    assert ("c", 1, 0) not in g and ("r", 1, 0) not in g
    assert set(g.predecessors("final")) == {("shift", 0), ("shift", 1)}
    assert nx.shortest_path_length(g, ("a", 1), "final") == 5  # a1, product, sum with carry, concatenation, shift, final
    path = [("a", 0), ("p", 0, 0), ("c", 0, 0), ("s", 1, 0), ("o", 1, 0), ("shift", 0), "final"]
    assert nx.is_path(g, path) and len(path) - 1 == nx.dag_longest_path_length(g)
    # No carry: 12·13 has no carry or sum node at all.
    assert not any(isinstance(n, tuple) and n[0] in ("c", "s") for n in multiplication.source_graph(12, 13))
    with pytest.raises(ValueError):
        multiplication.source_depth(-1, 3)


def test_maxsubseq_has_no_source_depth():
    assert maxsubseq.make_example([3, -1, 4], True).depth_source is None
