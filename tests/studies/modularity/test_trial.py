import json
import math

import pytest
import torch

from bindscale.core import seeding
from bindscale.core.config import StudyConfig, validate
from bindscale.studies.modularity.config import ModularityTrial
from bindscale.core.errors import ConfigError
from bindscale.studies.modularity.trial import (
    CompoundNet,
    build_net,
    make_data,
    noise_tolerance,
    pretrain,
    run_trial,
    search_masks,
    summarise,
    train_compound,
)
from bindscale.run.jobs import run_group
from bindscale.run.planner import job_cost

from .test_masks import C, S, hand_built

torch.set_num_threads(1)


def _trial(**kw) -> ModularityTrial:
    base = {"task": {"n_shapes": 3, "n_colours": 3, "n_train": 120, "n_test": 60},
            "model": {"architecture": "mlp", "width": 8, "depth": 2},
            "pretrain": {"steps": 20}, "train": {"steps": 40, "batch_size": 32, "warmup_steps": 5},
            "mask": {"steps": 20, "batch_size": 32, "n_mask_seeds": 2, "control_mask_seeds": 1}}
    for section, fields in kw.items():
        base[section] = base.get(section, {}) | fields if isinstance(fields, dict) else fields
    return ModularityTrial.model_validate(base)


TRANSFORMER = {"architecture": "transformer", "width": 8, "depth": 1, "n_heads": 2}


# -------------------------------------------------------------------- config


def test_config_axes_and_validation():
    t = _trial(model=TRANSFORMER, pretrain={"kind": "subroutines"}, seed=3)
    flat = t.flat()
    assert flat["architecture"] == "transformer" and flat["width"] == 8 and flat["pretraining"] == "subroutines"
    assert flat["mask_params"] == "hidden" and flat["mask_seeds"] == 2 and flat["seed"] == 3
    assert flat["mask.lr"] == 0.05 and "mask.params" not in flat  # one column per field: the short name
    with pytest.raises(ValueError, match="heads of even size"):
        _trial(model={"architecture": "transformer", "width": 12, "n_heads": 4})
    _trial(model={"architecture": "mlp", "width": 12, "n_heads": 4})  # heads do not matter for an MLP
    study = StudyConfig.model_validate({"name": "m", "base": {"kind": "modularity"},
                                        "grids": [{"architecture": ["mlp"], "pretraining": ["none", "subroutines"],
                                                   "width": [16, 32], "seed": [0, 1]}]})
    assert len(study.trials()) == 8 and {t.family for t in study.trials()} == {"modularity"}
    with pytest.raises(ConfigError, match="mask.lamda: unknown field; allowed: params, lambda_l0"):
        validate(StudyConfig, {"name": "m", "base": {"kind": "modularity", "mask": {"lamda": 1}}})


# ---------------------------------------------------------------------- data


def test_data_comes_from_its_own_stream_and_the_seed():
    t = _trial()
    a, b = make_data(t), make_data(t)
    assert all(torch.equal(a[k].tokens, b[k].tokens) for k in a)  # reproducible
    # the architecture, the pretraining and the training settings never change the data
    other = make_data(_trial(model=TRANSFORMER, pretrain={"kind": "subroutines"}, train={"steps": 7}))
    assert all(torch.equal(a[k].tokens, other[k].tokens) for k in a)
    c = make_data(_trial(seed=1))
    assert not torch.equal(a["compound_train"].tokens, c["compound_train"].tokens)
    assert not torch.equal(a["compound_train"].tokens[:60], a["compound_test"].tokens)  # sets differ
    assert len(a["compound_train"]) == 120 and len(a["sub_B_test"]) == 60


def test_base_and_control_networks_use_separate_init_streams():
    t = _trial()
    w = lambda net: torch.cat([p.flatten() for p in net.parameters()])  # noqa: E731
    assert torch.equal(w(build_net(t)), w(build_net(t)))
    assert not torch.equal(w(build_net(t)), w(build_net(t, "random_init")))
    assert not torch.equal(w(build_net(t)), w(build_net(_trial(seed=1))))


# -------------------------------------------------------------------- models


def test_mask_names_are_the_hidden_weight_matrices_unless_all():
    mlp = build_net(_trial(model={"depth": 3}))
    assert mlp.mask_names("hidden") == ["net.weights.0", "net.weights.1", "net.weights.2"]
    assert mlp.mask_names("all")[-1] == "net.weights.3"  # the readout
    tf = build_net(_trial(model=TRANSFORMER | {"depth": 2}))
    names = dict(tf.named_parameters())
    hidden = tf.mask_names("hidden")
    assert len(hidden) == 8 and all(n in names and names[n].dim() == 2 for n in hidden)
    assert not any("embed" in n or "head" in n or "ln" in n for n in hidden)
    assert set(tf.mask_names("all")) - set(hidden) == {"net.embed.weight", "net.head.weight"}


@pytest.mark.parametrize("model", [{}, TRANSFORMER])
def test_networks_give_one_logit_per_scene_and_features(model):
    t = _trial(model=model)
    net, data = build_net(t), make_data(t)
    x = data["compound_test"].xy(net.view)[0]
    assert net(x).shape == (60,)
    assert net.features(x).shape == (60, net.feature_dim)


@pytest.mark.parametrize("model,lr", [({}, 0.01), (TRANSFORMER, 0.003)])
def test_training_learns_and_pretraining_leaves_the_compound_readout_alone(model, lr):
    t = _trial(model={"width": 16} | model, task={"n_train": 400}, train={"steps": 150, "lr": lr},
               pretrain={"kind": "subroutines", "steps": 300})
    net, data = build_net(t), make_data(t)
    readout, body = ("net.weights.2", "net.weights.0") if model == {} else ("net.head.weight", "net.blocks.0.mlp.fc.weight")
    before = {n: p.detach().clone() for n, p in net.named_parameters()}
    pre = pretrain(net, data, t)
    after = dict(net.named_parameters())
    assert pre["status"] == "ok" and not torch.equal(after[body], before[body])
    if model == {}:
        assert min(pre["acc_A"], pre["acc_B"]) > 0.7
        assert torch.equal(after[readout], before[readout])  # the readout feeds only the compound logit
    else:  # a one-block transformer on this tiny task learns the colour pair first
        assert max(pre["acc_A"], pre["acc_B"]) > 0.7
    fit = train_compound(net, data, t)
    x, y = data["compound_train"].xy(net.view)
    assert fit["status"] == "ok" and ((net(x) > 0).long() == y).float().mean() > 0.75


# --------------------------------------------------------------- mask search


class _HandBuilt(CompoundNet):
    """The hand-built two-branch networks of test_masks as a CompoundNet; only the first layer is masked."""

    view, feature_dim = "onehot", S + C

    def __init__(self, form):
        super().__init__()
        from bindscale.studies.modularity.tasks import CompoundTask

        self.net = hand_built(CompoundTask(S, C), form)

    def forward(self, x):
        return self.net(x).squeeze(-1)

    def mask_names(self, which):
        return ["net.0.weight"]


def _hand_trial():
    # Most scenes for the masks' training sets, so the search sees every unit of the tiny 4 x 4 space fire.
    return _trial(task={"n_shapes": S, "n_colours": C, "n_train": 400, "n_test": 400, "base_fraction": 0.1,
                        "mask_fraction": 0.6},
                  mask={"steps": 200, "batch_size": 400, "n_mask_seeds": 2})


def test_search_masks_finds_the_disjoint_branches_of_a_modular_net_and_leaves_weights_alone():
    t = _hand_trial()
    net, data = _HandBuilt("violation"), make_data(t)
    before = {k: v.clone() for k, v in net.state_dict().items()}
    runs = search_masks(net, data, t, "trained", 2)
    assert [(r["subroutine"], r["mask_seed"], r["net"]) for r in runs] == [
        ("A", 0, "trained"), ("A", 1, "trained"), ("B", 0, "trained"), ("B", 1, "trained")]
    for r in runs:  # as computed by hand in test_scores: 1.0 / 0.5 / 0.5 / 1.0
        assert (r["acc_sub_target"], r["acc_sub_other"], r["acc_abl_target"], r["acc_abl_other"]) == (1, .5, .5, 1)
        assert r["sub_diff"] == 0.5 and r["abl_diff"] == -0.5 and r["structural"]
        assert r["density"] == pytest.approx(2 * S / net.net[0].weight.numel())
        assert r["binary_fraction"] >= 0.99
        assert r["abl_yes_target"] == 1.0 and r["abl_yes_other"] == 0.5  # ablated: "yes" unless B fails
    # A random mask of the same size keeps a stray weight now and then (the raw sign criterion counts it).
    assert sum(r["random_structural"] for r in runs) <= 1
    assert all(torch.equal(v, before[k]) for k, v in net.state_dict().items())
    s = summarise(runs)
    assert s["frac_structural"] == s["frac_structural_A"] == s["frac_structural_B"] == 1.0
    assert s["random_frac_structural"] <= 0.25 and math.isnan(s["untrained_frac_structural"])


def test_an_and_net_reads_not_structural_and_its_ablation_answers_no():
    t = _hand_trial()
    runs = search_masks(_HandBuilt("and"), make_data(t), t, "trained", 1, random_control=False)
    s = summarise(runs)
    assert s["frac_structural"] == 0.0 and s["abl_diff"] == 0.0 and s["abl_yes"] == 0.0
    assert math.isnan(s["random_sub_diff"])


def test_mask_seeds_and_networks_draw_different_minibatches():
    t = _trial(task={"n_train": 400}, mask={"steps": 30, "batch_size": 32, "lambda_l0": 0.05})
    net, data = build_net(t), make_data(t)
    train_compound(net, data, t)
    runs = search_masks(net, data, t, "trained", 2)
    dens = [r["density"] for r in runs if r["subroutine"] == "A"]
    assert dens[0] != dens[1]  # two mask seeds, two searches
    keys = {seeding.stream_seed(0, "mask", n, f, s) for n in range(2) for f in range(2) for s in range(3)}
    assert len(keys) == 12


def test_summarise_by_hand():
    def run(net, f, sub, abl, structural, **kw):
        return {"net": net, "subroutine": f, "sub_diff": sub, "abl_diff": abl, "structural": structural,
                "density": 0.1, "mask_accuracy": 1.0, "abl_yes_target": 0.2, "abl_yes_other": 0.4,
                "random_sub_diff": 0.0, "random_abl_diff": 0.1, "random_structural": False} | kw

    runs = [run("trained", "A", 0.4, -0.2, True), run("trained", "A", 0.2, 0.0, False),
            run("trained", "B", 0.3, -0.1, True, random_structural=True), run("trained", "B", 0.1, -0.3, True),
            run("untrained", "A", 0.2, 0.0, False), run("untrained", "B", 0.0, 0.0, False)]
    s = summarise(runs)
    assert s["frac_structural_A"] == 0.5 and s["frac_structural_B"] == 1.0 and s["frac_structural"] == 0.75
    assert s["sub_diff_A"] == pytest.approx(0.3) and s["abl_diff"] == pytest.approx(-0.15)
    assert s["random_frac_structural"] == 0.25 and s["random_frac_structural_B"] == 0.5
    assert s["untrained_sub_diff"] == pytest.approx(0.1) and s["untrained_frac_structural"] == 0.0
    assert s["abl_yes"] == pytest.approx(0.3)
    # beyond noise: only the runs with SubDiff > .15 and AblDiff < −.15 (the first of A, none of B)
    robust = summarise(runs, tolerance=0.15)
    assert robust["frac_robust_A"] == 0.5 and robust["frac_robust_B"] == 0.0 and robust["frac_robust"] == 0.25
    assert robust["frac_structural"] == 0.75  # the sign criterion ignores the tolerance
    assert summarise(runs)["frac_robust"] == 0.75  # tolerance 0 is the sign criterion


def test_noise_tolerance_is_two_standard_errors_of_an_accuracy_difference_at_chance():
    assert noise_tolerance(1000) == pytest.approx(2 * math.sqrt(0.25 / 1000 + 0.25 / 1000))
    assert noise_tolerance(1000) == pytest.approx(0.0447, abs=1e-4)


# ---------------------------------------------------------------- one trial


@pytest.mark.parametrize("model", [{}, TRANSFORMER])
def test_a_trial_records_scores_controls_and_every_run(model):
    t = _trial(model=model, pretrain={"kind": "subroutines"})
    (res,) = run_group([t], "cpu")  # the sweep dispatch
    m = res.metrics
    assert res.status == "ok"
    for key in ("base_acc_test", "base_acc_sub_A", "pretrain_acc_A", "frac_structural", "frac_structural_B",
                "frac_robust", "noise_tolerance",
                "sub_diff_A", "abl_diff_B", "density", "random_frac_structural", "random_abl_diff_A",
                "untrained_sub_diff", "untrained_frac_structural", "n_params", "n_masked"):
        assert isinstance(m[key], float | int) and math.isfinite(m[key]), key
    assert 0 <= m["frac_structural"] <= 1 and 0 < m["n_masked"] < m["n_params"]
    runs = m["runs"]
    assert len(runs) == 2 * (2 + 1)  # subroutines × (mask seeds + control seeds)
    assert sum(r["net"] == "untrained" for r in runs) == 2
    assert all(math.isnan(r["random_sub_diff"]) for r in runs if r["net"] == "untrained")
    assert set(m["timings"]) == {"train_s", "mask_s", "control_s"}
    assert job_cost([t]) > 0
    again = run_trial(t)
    assert json.dumps(again.metrics["runs"]) == json.dumps(runs)  # reproducible (NaN-safe comparison)


def test_no_untrained_control_when_it_has_no_seeds():
    m = run_trial(_trial(mask={"control_mask_seeds": 0})).metrics
    assert all(r["net"] == "trained" for r in m["runs"]) and math.isnan(m["untrained_frac_structural"])


# ------------------------------------------------- generic pretraining


def test_generic_pretraining_learns_the_match_count_with_one_head_and_leaves_the_readout_alone():
    t = _trial(model={"width": 16}, task={"n_train": 400}, train={"lr": 0.01},
               pretrain={"kind": "match_count", "steps": 300})
    net, data = build_net(t), make_data(t)
    before = {n: p.detach().clone() for n, p in net.named_parameters()}
    pre = pretrain(net, data, t)
    after = dict(net.named_parameters())
    assert pre["status"] == "ok" and "acc_A" not in pre  # one head, no per-subroutine score
    # chance of the 3-way count on sets balanced over the four (A, B) kinds is 1/2 (count 1 is half the rows)
    assert pre["acc"] > 0.7
    assert not torch.equal(after["net.weights.0"], before["net.weights.0"])
    assert torch.equal(after["net.weights.2"], before["net.weights.2"])  # the compound readout is untouched
    # the label is the number of shared attributes, A + B ∈ {0, 1, 2}, counted by hand from the tokens
    p = data["pretrain_A"]
    count = (p.tokens[:, 0] == p.tokens[:, 2]).long() + (p.tokens[:, 1] == p.tokens[:, 3]).long()
    assert torch.equal(count, p.a.long() + p.b.long()) and set(count.tolist()) == {0, 1, 2}


@pytest.mark.parametrize("model", [{}, TRANSFORMER])
def test_pretrain_needs_a_kind_and_the_trial_records_the_generic_condition(model):
    t = _trial(model=model, pretrain={"kind": "none"})
    with pytest.raises(ValueError, match="pretraining kind"):
        pretrain(build_net(t), make_data(t), t)
    m = run_trial(_trial(model=model, pretrain={"kind": "match_count"}, mask={"control_mask_seeds": 0})).metrics
    assert 0 <= m["pretrain_acc"] <= 1 and "pretrain_acc_A" not in m
    assert _trial(pretrain={"kind": "match_count"}).flat()["pretraining"] == "match_count"
