import math

import pandas as pd
import pytest

from bindscale.studies.subgraphs.config import SubgraphsTrial
from bindscale.studies.subgraphs.trial import evaluate, make_data, size_cells
from bindscale.studies.subgraphs.tasks import charvocab


def _trial(**task):
    return SubgraphsTrial(task={"n_train": 300, "n_test": 6, **task})


def test_size_cells_split_in_and_out_of_distribution():
    ind, ood = size_cells(_trial(family="maxsubseq", id_max=3, ood_max=5))
    assert ind == [(1,), (2,), (3,)] and ood == [(4,), (5,)]
    ind, ood = size_cells(_trial(family="multiplication", id_max=2, ood_max=3))
    assert ind == [(1, 1), (1, 2), (2, 1), (2, 2)]
    assert ood == [(1, 3), (2, 3), (3, 1), (3, 2), (3, 3)]


@pytest.mark.parametrize("family", ["maxsubseq", "multiplication"])
def test_test_examples_are_never_training_examples_and_sizes_follow_the_split(family):
    t = _trial(family=family, id_max=3, ood_max=4)
    train, test, in_dist = make_data(t)
    assert len(train) == 300
    assert not {ex.prompt for ex in train} & {ex.prompt for ex in test}
    assert all(max(ex.sizes) <= 3 for ex in train)
    assert all((max(ex.sizes) <= 3) == flag for ex, flag in zip(test, in_dist))
    assert any(in_dist) and not all(in_dist)
    again = make_data(t)
    assert [e.prompt for e in again[1]] == [e.prompt for e in test]  # reproducible
    other = make_data(t.model_copy(update={"seed": 1}))
    assert [e.prompt for e in other[0]] != [e.prompt for e in train]  # the seed matters


class _Oracle:
    """Answers every prompt with its gold target, or with a planted wrong first step."""

    def __init__(self, examples, wrong_first_step=False):
        self.gold = {ex.prompt: ex.target for ex in examples}
        self.wrong = wrong_first_step

    def generate(self, prompts, max_new_tokens, stop_id, **kw):
        out = []
        for p in prompts:
            target = self.gold[charvocab.decode(p + [stop_id])[:-1]]
            if self.wrong:
                first, rest = target.split(";", 1) if ";" in target else (target[:-1], "$")
                target = str(int(first) + 1) + (";" + rest if ";" in target else "$")
            out.append(charvocab.encode(target))
        return out


def test_a_perfect_model_scores_one_everywhere_and_all_nodes_correct():
    t = _trial(family="maxsubseq", id_max=4, ood_max=5)
    train, test, in_dist = make_data(t)
    m = evaluate(_Oracle(test), train, test, in_dist)
    assert m["acc_id"] == 1.0 and m["acc_ood"] == 1.0
    assert all(set(labs) == {"correct"} for labs in m["taxonomy_by_depth"].values())
    assert m["n_nodes_wrong"] == 0 and math.isnan(m["seen_wrong"])
    assert m["compound_eps"] == pytest.approx(0.0, abs=1e-4)


def test_multiplication_accuracy_is_reported_by_depth_under_both_conventions():
    t = _trial(family="multiplication", id_max=2, ood_max=3)
    train, test, in_dist = make_data(t)
    m = evaluate(_Oracle(test), train, test, in_dist)
    # Faith and Fate's depth: n + 3 to 2n + 2 edges for n = 1..3 digits of a; bindscale's: n + max(m, 2) + 1.
    assert {int(d) for d in m["acc_by_depth_source"]} <= set(range(4, 9))
    assert {int(d) for d in m["acc_by_depth"]} <= set(range(4, 8))
    assert sum(n for n, _ in m["acc_by_depth_source"].values()) == len(test)
    assert all(acc == 1.0 for _, acc in m["acc_by_depth_source"].values())
    assert all(set(labs) == {"correct"} for labs in m["taxonomy_dziri_by_depth"].values())
    dp = _trial(family="maxsubseq", id_max=3, ood_max=4)
    assert "acc_by_depth_source" not in evaluate(_Oracle(make_data(dp)[1]), *make_data(dp))


def test_a_wrong_first_dp_cell_is_a_local_error():
    t = _trial(family="maxsubseq", id_max=4, ood_max=5)
    train, test, in_dist = make_data(t)
    m = evaluate(_Oracle(test, wrong_first_step=True), train, test, in_dist)
    assert m["taxonomy_by_depth"]["1"]["local"] == pytest.approx(1.0)  # dp[0] has depth 1
    # dp[0] = x_0 + 1 over a right input is local for Dziri et al. too; its children's parents are then wrong.
    assert m["taxonomy_dziri_by_depth"]["1"]["local"] == pytest.approx(1.0)
    assert "local" not in m["taxonomy_dziri_by_depth"].get("2", {})
    assert m["n_nodes_wrong"] > 0


def _deciding_cells(name: str) -> dict:
    from bindscale.core.studyfile import resolve_study

    cells: dict = {}
    for t in resolve_study(name).trials():
        if t.task.scratchpad:  # both verdicts decide on scratchpad trials
            key = (t.task.family, t.task.n_train, t.model.n_layers, t.model.d_model)
            cells.setdefault(key, set()).add(t.seed)
    return cells


@pytest.mark.parametrize("name, seeds", [("subgraphs", 6), ("subgraphs-full", 6), ("subgraphs-paper", 5)])
def test_every_tier_has_enough_seeds_in_every_deciding_cell_and_a_wide_size_range(name, seeds):
    from bindscale.core.studyfile import resolve_study
    from bindscale.studies.subgraphs.trial import build_model

    cells = _deciding_cells(name)
    assert len(cells) >= 3 and min(len(s) for s in cells.values()) >= seeds
    # The scale claim reads the smallest against the largest size of a task: at least a 20x range.
    trials = resolve_study(name).trials()
    for family in {t.task.family for t in trials}:
        shapes = {(t.model.n_layers, t.model.d_model) for t in trials if t.task.family == family}
        small, large = min(shapes, key=lambda s: s[0] * s[1] ** 2), max(shapes, key=lambda s: s[0] * s[1] ** 2)
        if name != "subgraphs-paper":  # building 300M-parameter models only to count them is too slow
            by_shape = {(t.model.n_layers, t.model.d_model): t for t in trials if t.task.family == family}
            ratio = build_model(by_shape[large], 64).n_params() / build_model(by_shape[small], 64).n_params()
        else:
            ratio = large[0] * large[1] ** 2 / (small[0] * small[1] ** 2)
        assert ratio >= 10 if family == "multiplication" else ratio >= 20


def test_depth_matched_gap_removes_the_depth_confound():
    from bindscale.studies.subgraphs.trial import depth_matched_gap

    # Depth 1: all seen, mostly correct; depth 5: none seen, mostly wrong. Within each
    # depth seen-ness is the same for correct and wrong nodes: the matched gap is 0
    # although the raw gap is large.
    nodes = pd.DataFrame(
        [{"depth": 1, "label": "correct", "seen": True}] * 9 + [{"depth": 1, "label": "wrong", "seen": True}] * 1
        + [{"depth": 5, "label": "correct", "seen": False}] * 1 + [{"depth": 5, "label": "wrong", "seen": False}] * 9)
    raw = nodes[nodes.label == "correct"].seen.mean() - nodes[nodes.label == "wrong"].seen.mean()
    assert raw == pytest.approx(0.8) and depth_matched_gap(nodes) == pytest.approx(0.0)
    # Within depth 1, correct nodes seen 100%, wrong 0% (weight min(2, 2) = 2); depth 2 gap 0.5 (weight 1).
    nodes = pd.DataFrame([{"depth": 1, "label": "correct", "seen": True}] * 2
                         + [{"depth": 1, "label": "wrong", "seen": False}] * 2
                         + [{"depth": 2, "label": "correct", "seen": True}] * 1
                         + [{"depth": 2, "label": "wrong", "seen": s} for s in (True, False)])
    assert depth_matched_gap(nodes) == pytest.approx((2 * 1.0 + 1 * 0.5) / 3)


def test_figures_show_both_depth_conventions_and_both_taxonomies():
    import json

    from bindscale.studies.subgraphs.figures import SUBGRAPH_FIGURES, fig_acc_by_depth, fig_error_types

    row = {"status": "ok", "n_params": 1e5, "n_train": 4000, "scratchpad": True, "acc_id": 0.9, "acc_ood": 0.1,
           "compound_eps": 0.1, "compound_r2": 0.5,
           "acc_by_depth": json.dumps({"4": [5, 1.0], "5": [5, 0.6]}),
           "acc_by_depth_source": json.dumps({"4": [3, 1.0], "6": [7, 0.7]}),
           "taxonomy_dziri_by_depth": json.dumps({"1": {"correct": 0.5, "restoration": 0.5}}),
           "taxonomy_by_depth": json.dumps({"1": {"correct": 1.0}})}
    df = pd.DataFrame([row, {**row, "seed": 1}])
    assert fig_acc_by_depth(df) and fig_error_types(df) and SUBGRAPH_FIGURES["sg_error_types_recomputed"][0](df)
    assert "Dziri et al.'s definitions" in SUBGRAPH_FIGURES["sg_error_types"][1]
    assert fig_error_types(df.drop(columns="taxonomy_dziri_by_depth")) is None  # old records: no Dziri labels


def test_accuracy_figure_reads_the_scratchpad_flag_robustly_and_keeps_tasks_apart():
    # Review 2, item 19: string flags ("True"/"False" from a CSV) crashed the figure (int("True")).
    from bindscale.studies.subgraphs.figures import fig_acc_vs_params

    rows = [{"status": "ok", "task": task, "n_params": n, "n_train": 4000, "scratchpad": flag, "acc_id": 0.9,
             "acc_ood": 0.1 + 0.01 * s, "seed": s}
            for task in ("maxsubseq", "multiplication") for flag in ("True", "False", math.nan)
            for n in (1e5, 1e6) for s in range(3)]
    assert fig_acc_vs_params(pd.DataFrame(rows))


def test_reversed_multiplication_data_and_a_perfect_model():
    t = _trial(family="multiplication", id_max=2, ood_max=3, reverse=True)
    train, test, in_dist = make_data(t)
    assert all(ex.answer == str(eval(ex.prompt[:-1]))[::-1] for ex in train[:50])
    m = evaluate(_Oracle(test), train, test, in_dist)
    assert m["acc_id"] == 1.0 and m["acc_ood"] == 1.0 and m["n_nodes_wrong"] == 0
    with pytest.raises(ValueError, match="multiplication format"):
        _trial(family="maxsubseq", reverse=True)
