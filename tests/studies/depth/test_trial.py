"""The depth study's trial: data sets disjoint, packing, metrics against independent computations,
iso-parameter families, configs and data files."""

from pathlib import Path

import numpy as np
import pytest
import torch
import yaml
from sklearn.metrics import accuracy_score

from bindscale.core.errors import ConfigError
from bindscale.models.transformer import Transformer
from bindscale.kit import scan
from bindscale.studies.depth import plan
from bindscale.studies.depth.config import DepthTrial
from bindscale.models.shapes import nonembedding_params, shape_for_budget
from bindscale.studies.depth.trial import make_data, run_trial
from bindscale.train.seqdata import EOS, SEP, Vocab, acc_by_length, token_accuracy
from bindscale.train.seqdata import pack_pairs as pack

YAML = Path(__file__).resolve().parents[3] / "src" / "bindscale" / "studies" / "depth" / "depth.yaml"


def _families():
    """(budget, n_heads) → depths of every grid of the shipped study (default and quick)."""
    study = yaml.safe_load(YAML.read_text())
    out = {}
    for grid in study["grids"] + study["quick"]["grids"]:
        for b in grid["budget"]:
            out.setdefault(b, set()).update(grid["layers"])
    return out


@pytest.mark.parametrize("budget", sorted(_families()))
def test_every_family_of_the_study_matches_its_budget_within_5_percent(budget):
    depths = sorted(_families()[budget] | {1, 2, 4, 8})
    counts = []
    for L in depths:
        s = shape_for_budget(budget, L, 2)
        model = Transformer(20, L, s.d_model, s.n_heads, d_ff=s.d_ff, max_len=64)
        assert model.n_params_nonembedding() == s.n_params == nonembedding_params(L, s.d_model, s.d_ff)
        assert abs(s.n_params / budget - 1) < 0.05
        assert s.d_model % 4 == 0 and 2 <= s.d_ff / s.d_model <= 8
        counts.append(s.n_params)
    assert max(counts) / min(counts) < 1.05
    widths = [shape_for_budget(budget, L, 2).d_model for L in depths]
    assert widths == sorted(widths, reverse=True)  # deeper is thinner


def test_nonembedding_count_leaves_out_embeddings_and_head_for_both_position_schemes():
    for pos in ("rope", "learned"):
        m = Transformer(30, 3, 24, 2, d_ff=50, max_len=40, pos=pos)
        emb = 30 * 24 + 30 * 24 + (40 * 24 if pos == "learned" else 0)
        assert m.n_params() - m.n_params_nonembedding() == emb
        assert m.n_params_nonembedding() == nonembedding_params(3, 24, 50)
        assert m.blocks[0].mlp.fc.out_features == 50
    assert Transformer(30, 1, 24, 2, max_len=8).d_ff == 96  # default: mlp_ratio * d_model
    with pytest.raises(ValueError, match="d_ff"):
        Transformer(30, 1, 24, 2, d_ff=0)


def test_a_budget_too_small_is_refused():
    with pytest.raises(ValueError, match="too small"):
        shape_for_budget(300, 8, 2)


def test_train_id_check_and_test_sets_are_disjoint_and_fixed_across_seeds():
    for split in ("length", "addprim_jump", "simple"):
        a = make_data(DepthTrial(task={"split": split, "n_test": 200, "n_id": 100}, seed=0))
        b = make_data(DepthTrial(task={"split": split, "n_test": 200, "n_id": 100}, seed=5))
        train, ids, test = ({p.src for p in x} for x in (a.train, a.id_check, a.test))
        assert not train & ids and not train & test and not ids & test
        assert len(ids) == 100 and len(test) == 200
        assert a.test == b.test and a.id_check == b.id_check  # the eval_seed fixes them, not the trial seed
    c = make_data(DepthTrial(task={"split": "addprim_jump", "n_test": 200, "n_id": 100, "eval_seed": 1}))
    assert c.test != a.test
    jump = make_data(DepthTrial(task={"split": "addprim_jump", "n_id": 100}))
    assert sum(p.src == ("jump",) for p in jump.train) == 1467  # the repeated primitive is never withheld


def test_pack_masks_exactly_the_answer_and_its_end():
    pairs = [scan.Pair(("walk", "twice"), ("I_WALK", "I_WALK")), scan.Pair(("jump",), ("I_JUMP",))]
    v = Vocab(pairs)
    tokens, mask = pack(pairs, v)
    assert v.itos[:3] == ["<pad>", SEP, EOS]
    first = [v.itos[i] for i in tokens[0].tolist()]
    assert first == ["walk", "twice", SEP, "I_WALK", "I_WALK", EOS, "<pad>"]
    # position t is scored on token t+1: the targets are I_WALK, I_WALK, <eos>
    assert [first[t + 1] for t in torch.nonzero(mask[0]).flatten().tolist()] == ["I_WALK", "I_WALK", EOS]
    assert [v.itos[tokens[1, t + 1]] for t in torch.nonzero(mask[1]).flatten().tolist()] == ["I_JUMP", EOS]


def test_token_accuracy_matches_sklearn_on_aligned_positions():
    rng = np.random.default_rng(0)
    golds = [list(rng.integers(1, 5, size=rng.integers(1, 8))) for _ in range(40)]
    preds = [list(rng.integers(1, 5, size=rng.integers(0, 10))) for _ in range(40)]
    y_true, y_pred = [], []
    for p, g in zip(preds, golds):
        y_true += g
        y_pred += [(p[i] if i < len(p) else -1) for i in range(len(g))]  # a missing position is wrong
    assert token_accuracy(preds, golds) == pytest.approx(accuracy_score(y_true, y_pred))
    assert token_accuracy([[1, 2, 9]], [[1, 3]]) == 0.5  # hand-worked: extra tokens ignored
    assert np.isnan(token_accuracy([], []))


def test_accuracy_by_output_length_is_grouped_by_gold_length():
    pairs = [scan.Pair(("a",), ("X",) * n) for n in (24, 24, 25, 30, 24)]
    exact = np.array([True, False, True, False, True])
    assert acc_by_length(pairs, exact) == {"24": [3, pytest.approx(2 / 3)], "25": [2 - 1, 1.0], "30": [1, 0.0]}


def test_config_refuses_a_lone_data_file_and_unknown_labels(tmp_path):
    with pytest.raises(ValueError, match="go together"):
        DepthTrial(data={"train": "a.txt"})
    with pytest.raises(ValueError, match="not a generated SCAN split"):
        DepthTrial(task={"split": "cogs"})
    t = DepthTrial(task={"split": "cogs"}, data={"train": "a.tsv", "test": "b.tsv"})
    assert t.task.split == "cogs"
    with pytest.raises(ValueError, match="label"):
        DepthTrial(task={"split": "Bad Label"}, data={"train": "a.tsv", "test": "b.tsv"})
    assert DepthTrial(task={"split": "length"}).trial_id != DepthTrial(task={"split": "length"}, seed=1).trial_id


def test_check_trials_names_the_malformed_file_and_line(tmp_path):
    good, bad = tmp_path / "train.txt", tmp_path / "test.txt"
    good.write_text("IN: jump OUT: I_JUMP\n")
    bad.write_text("IN: walk OUT: I_WALK\nIN: walk twice\n")
    t = DepthTrial(task={"split": "length"}, data={"train": str(good), "test": str(bad)})
    with pytest.raises(ConfigError) as err:
        plan.check_trials([t])
    assert str(bad) in str(err.value) and "line 2" in str(err.value) and "\n" not in str(err.value)


def test_a_tiny_trial_trains_and_scores_from_files(tmp_path):
    train, test = scan.make_split("addprim_jump")
    (tmp_path / "tr.txt").write_text("\n".join(p.line() for p in train[:300]) + "\n")
    (tmp_path / "te.txt").write_text("\n".join(p.line() for p in test[:40]) + "\n")
    t = DepthTrial(task={"split": "addprim_jump", "n_test": 20, "n_id": 10},
                   data={"train": str(tmp_path / "tr.txt"), "test": str(tmp_path / "te.txt")},
                   model={"n_layers": 1, "budget": 3000}, train={"steps": 5, "batch_size": 8, "warmup_steps": 1})
    r = run_trial(t)
    m = r.metrics
    assert r.status == "ok" and m["n_test"] == 20 and m["n_id"] == 10 and m["n_train_examples"] == 290
    assert 0 <= m["acc_test"] <= m["tok_acc_test"] <= 1 or m["acc_test"] == 0
    assert sum(n for n, _ in m["acc_by_length"].values()) == 20
    assert abs(m["n_params_nonembed"] / 3000 - 1) < 0.05
    assert plan.trial_cost(t) > 0 and plan.job_cost([t, t]) == 2 * plan.trial_cost(t)
