"""Relation coding net of tree finding, and estimators chosen on dev data.

``polar_beats_structural`` is decided on the probes' gold-edge relation accuracy (balanced), net of the untrained
twin and set against a word-pair labeller (relations from the two words' identities alone), never on LAS, which
grows with UUAS alone (Diego-Simón et al. 2024, "A polar coordinate system represents syntax in large language
models"; Hewitt & Manning 2019, "A structural probe for finding syntax in word representations"). Each model's
estimator (raw or whitened inputs) is chosen with the layer on dev scores, and a trained model must read more of the
tree than its untrained twin (the twin gate). Synthetic tables where the claim must come out inconclusive or on the
other side, and where it must still be decided; the word-pair labeller against a hand-worked case."""

import math

import numpy as np
import pandas as pd
import pytest

from bindscale.studies.geometry.layers import (
    ESTIMATORS,
    METRICS,
    choose,
    estimator_tables,
)
from bindscale.studies.geometry.scores import (
    fit_word_pairs,
    word_pair_metrics,
    word_pair_scores,
)
from bindscale.studies.geometry.treebank import Sentence
from bindscale.studies.geometry.verdicts import (
    TWIN_MARGIN,
    WORDPAIR_MARGIN,
    contextual_scores,
    polar_beats_structural,
)
from bindscale.verdicts.engine import compute_verdicts

from .test_pretrained_verdict import _df, _model_rows
from .test_verdicts import SIZES, run, table

ONE = {"verdicts": {"polar_beats_structural": {}}}
BOTH = {"verdicts": {"polar_beats_structural": {}, "geometry_grows_with_scale": {}}}


def _verdict(df, study=ONE):
    return compute_verdicts(df, study, n_boot=200)


# ------------------------------------------------------------------- item A: relation coding, synthetic LMs --

def test_more_tree_with_no_better_labels_is_not_support():
    """The trained model finds more of the tree than its twin (UUAS 0.7 against 0.5) with the same label accuracy
    (polar 0.6, structural 0.4 on gold edges in both): its LAS gap net of the twin is positive and its LAS ratio
    1.75, which the LAS rule called supported; its relation labels gain nothing net of the twin, so the claim is not
    supported here (inconclusive); labels worse than the twin's make it not supported."""
    df = table([.49] * 4, [.28] * 4, uuas=0.7, untrained=(.35, .20), untrained_uuas=0.5, rel=(.6, .4),
               untrained_rel=(.6, .4), noise=0.01)
    result = run(polar_beats_structural, df)
    d = result.details
    assert d["las_gap_net_of_untrained_largest_model"]["ci_low"] > 0  # the LAS rule's statistic: a gain (0.06)
    assert d["headline"]["polar_over_structural_las_pp"]["ci_low"] > 1.1  # and the LAS ratio's bar
    assert abs(result.interval[0]) < 0.02 and result.outcome == "inconclusive", d["reason"]
    (v,) = _verdict(df)  # the gates pass (chain and twin): the rule's inconclusive stands
    assert v["verdict"] == "inconclusive" and not v["details"].get("lost_to_gates_by_cell"), v["details"]["reason"]
    worse = table([.49] * 4, [.28] * 4, uuas=0.7, untrained=(.35, .20), untrained_uuas=0.5, rel=(.5, .4),
                  untrained_rel=(.6, .3), noise=0.01)
    assert _verdict(worse)[0]["verdict"] == "not_supported"


def test_labels_no_better_than_word_pairs_are_not_support():
    """A polar probe whose gold-edge relation accuracy (0.40) lies below the word-pair labeller's (0.45) is not
    supported, though it beats the structural probe net of the twin; at the labeller's level (0.40) it is not
    supported either way the interval falls, never supported."""
    below = table([.5] * 4, [.3] * 4, rel=(.40, .25), untrained_rel=(.20, .20), wordpair=0.45, noise=0.01)
    (v,) = _verdict(below)
    parts = v["details"]["parts"]
    assert parts["net"]["ci_low"] > 0 and parts["wordpair"]["ci_high"] < 0
    assert v["verdict"] == "not_supported" and "word-pair labeller's -0.05" in v["details"]["reason"]
    level = table([.5] * 4, [.3] * 4, rel=(.40, .25), untrained_rel=(.20, .20), wordpair=0.40, noise=0.01)
    assert _verdict(level)[0]["verdict"] != "supported"


@pytest.mark.parametrize("damage", ["missing", "nan"])
def test_a_missing_or_nan_word_pair_baseline_decides_nothing(damage):
    good = table([.5] * 4, [.3] * 4, rel=(.5, .3), untrained_rel=(.25, .2))
    assert run(polar_beats_structural, good).outcome == "supported"
    if damage == "missing":
        df = good.drop(columns="wordpair_rel_bacc")
    else:
        df = good.copy()
        df.loc[(df["n_params"] == SIZES[-1]) & (df["seed"] == 2), "wordpair_rel_bacc"] = np.nan
    (v,) = _verdict(df)
    assert v["verdict"] == "inconclusive" and math.isnan(v["value"]), v["details"]["reason"]
    assert "wordpair_rel_bacc" in v["details"]["reason"] or "missing, NaN" in v["details"]["reason"]


def test_a_relation_lead_beyond_the_twin_and_the_word_pairs_is_still_decided():
    """Polar labels gold edges at 0.5 against the structural probe's 0.3, the twin's at 0.25 / 0.2, the word-pair
    labeller's 0.3, the tree read above the chain and the twin: supported, on the relation statistic, with the LAS
    gap and ratio reported beside it."""
    df = table([.5] * 4, [.3] * 4, rel=(.5, .3), untrained_rel=(.25, .2), wordpair=0.3)
    (v,) = _verdict(df)
    d = v["details"]
    assert v["verdict"] == "supported" and v["statistic"] == "polar_minus_structural_rel_bacc_net_of_untrained_largest_model"
    assert v["value"] == pytest.approx(0.15, abs=0.02) and d["parts"]["wordpair"]["value"] == pytest.approx(0.2, abs=0.02)
    assert "Reported, not deciding" in d["reason"] and "LAS ratio" in d["reason"]
    assert d["beside_linear_chain"][str(SIZES[-1])]["rel_bacc"]["word_pair_labeller"] == pytest.approx(0.3, abs=0.02)


# ---------------------------------------------------------------- item A: relation coding, pretrained models --

def test_pretrained_more_tree_with_no_better_labels_and_word_pairs():
    """Pretrained models, per model over probe-fit units: more tree than the twin with the same labels is not
    supported (inconclusive); labels below the word-pair labeller are not supported; a missing or NaN labeller
    decides nothing; a relation lead beyond both is supported."""
    same = _model_rows("m", 0.40, 0.25, uuas=(0.70, 0.68), untrained=(0.25, 0.15), untrained_uuas=(0.5, 0.48),
                       rel=(0.55, 0.35), untrained_rel=(0.55, 0.35))
    v = run(polar_beats_structural, _df(same))
    m = v.details["pretrained_models"]["m"]
    assert m["las_gap"]["ci_low"] > 0 and m["las_ratio"]["ci_low"] > 1.1  # what the LAS rule decided on
    assert v.outcome == "inconclusive", v.details["reason"]
    below = _model_rows("m", 0.40, 0.25, rel=(0.40, 0.25), untrained_rel=(0.2, 0.2), wordpair=0.48)
    assert run(polar_beats_structural, _df(below)).outcome == "not_supported"
    good = _model_rows("m", 0.40, 0.25, rel=(0.45, 0.25), untrained_rel=(0.2, 0.2), wordpair=0.30)
    (row,) = _verdict(_df(good))
    assert row["verdict"] == "supported", row["details"]["reason"]
    assert row["details"]["pretrained_models"]["m"]["parts"]["wordpair"]["value"] == pytest.approx(0.15, abs=0.01)
    v = run(polar_beats_structural, _df(_model_rows("m", 0.40, 0.25, rel=(0.45, 0.25), wordpair=None)))
    assert v.outcome == "inconclusive" and "wordpair_rel_bacc" in v.details["reason"]
    nan = _df(good)
    nan.loc[3, "wordpair_rel_bacc"] = np.nan
    v = run(polar_beats_structural, nan)
    assert v.outcome == "inconclusive" and "1 of 8 probe-fit units" in v.details["reason"]


# ------------------------------------------------------------------------------ item B: the twin gate --

def test_a_twin_that_reads_the_tree_as_well_decides_nothing():
    """The trained model's polar probe reads no more of the tree than its untrained twin's (UUAS 0.6 both): the twin
    gate is missed per model, so both claims are inconclusive though the rules alone decide them."""
    df = table([.2, .3, .4, .5], [.1] * 4, rel=(.5, .3), untrained_rel=(.25, .2), untrained_uuas=0.6)
    assert run(polar_beats_structural, df).outcome == "supported"
    for v in _verdict(df, BOTH):
        d = v["details"]
        assert v["verdict"] == "inconclusive", (v["claim"], d["reason"])
        assert "read no more of the tree than their untrained twin" in d["reason"]
        assert d["lost_to_gates_by_cell"]["layers 3, d_model 96, steps 800"]["by_gate"] == {TWIN_MARGIN: 8}
    # a twin 0.1 below passes the gate (0.01): decided again
    ok = table([.2, .3, .4, .5], [.1] * 4, rel=(.5, .3), untrained_rel=(.25, .2), untrained_uuas=0.5)
    assert [v["verdict"] for v in _verdict(ok, BOTH)] == ["supported", "supported"]


def test_a_pretrained_twin_that_reads_the_tree_as_well_decides_nothing():
    df = _df(_model_rows("m", 0.40, 0.25, rel=(0.45, 0.25), untrained_rel=(0.2, 0.2), untrained_uuas=(0.62, 0.60)))
    v = run(polar_beats_structural, df)
    assert v.outcome == "inconclusive" and "do not beat the untrained twin by 0.01 UUAS (the polar probe in 8" in \
        v.details["reason"]
    (row,) = _verdict(df)
    assert row["verdict"] == "inconclusive"


# ------------------------------------------------------------- item B: the estimator chosen on dev data --

def _split(dev: dict, test: dict) -> dict:
    """One (layer) entry of a per-layer table: METRICS lists with the given values (others 0.3)."""
    return {split: [vals.get(m, 0.3) for m in METRICS] for split, vals in (("dev", dev), ("test", test))}


def test_choose_reads_dev_only_and_ties_go_to_the_raw_fit():
    tables = {"whiten": {"polar": {"0": _split({"las_pp": 0.9}, {"las_pp": 0.9}),
                                   "1": _split({"las_pp": 0.5}, {"las_pp": 0.1}),
                                   "2": _split({"las_pp": 0.4}, {"las_pp": 0.8})}},
              "scale": {"polar": {"1": _split({"las_pp": 0.45}, {"las_pp": 0.95}),
                                  "2": _split({"las_pp": 0.3}, {"las_pp": 0.99})}}}
    assert choose(tables, "polar") == ("whiten", "0")
    assert choose(tables, "polar", contextual=True) == ("whiten", "1")
    assert choose(tables, "polar", layer="2") == ("whiten", "2")
    # every test number replaced (swapped between estimators, scrambled): the choice does not move
    rng = np.random.default_rng(0)
    scrambled = {e: {"polar": {l: {"dev": v["dev"], "test": list(rng.random(len(METRICS)))}
                               for l, v in t["polar"].items()}} for e, t in tables.items()}
    swapped = {"whiten": {"polar": {l: {"dev": v["dev"], "test": tables["scale"]["polar"].get(l, v)["test"]}
                                    for l, v in tables["whiten"]["polar"].items()}},
               "scale": {"polar": {l: {"dev": v["dev"], "test": tables["whiten"]["polar"][l]["test"]}
                                   for l, v in tables["scale"]["polar"].items()}}}
    for t in (scrambled, swapped):
        assert choose(t, "polar") == ("whiten", "0") and choose(t, "polar", contextual=True) == ("whiten", "1")
    # a tie on dev goes to the raw fit (the sources' estimator), whatever the test numbers and the table order
    tie = {"whiten": {"polar": {"1": _split({"las_pp": 0.5}, {"las_pp": 0.9})}},
           "scale": {"polar": {"1": _split({"las_pp": 0.5}, {"las_pp": 0.1})}}}
    assert ESTIMATORS[0] == "scale" and choose(tie, "polar") == ("scale", "1")
    assert choose(dict(reversed(list(tie.items()))), "polar") == ("scale", "1")
    # no finite dev score: nothing chosen
    assert choose({"whiten": {"polar": {"1": _split({"las_pp": math.nan}, {})}}}, "polar") == (None, None)


def _row(layers: dict, inputs: str | None = "dev", chain: float = 0.45, wordpair: float = 0.2) -> dict:
    """A results row whose probe_layers holds ``layers[model][kind][layer] = (dev dict, test dict)``."""
    rows = []
    for model, kinds in layers.items():
        for kind, by_layer in kinds.items():
            for layer, (dev, test) in by_layer.items():
                for split, vals in (("dev", dev), ("test", test)):
                    rows.append({"model": model, "probe": kind, "layer": layer, "split": split,
                                 **{m: vals.get(m, 0.3) for m in METRICS}})
    return {"probe_layers": rows, "chain_uuas_pp": chain, "wordpair_rel_bacc": wordpair,
            **({"probe.inputs": inputs} if inputs else {})}


def _model(dev_white, test_white, dev_raw, test_raw):
    """Both probes of one model, whitened and raw, at layer 1 (and a layer 0 that dev favours, never chosen)."""
    def kinds(dev, test):
        return {k: {"0": ({"las_pp": 0.99}, {"las_pp": 0.0}), "1": (dev, test)} for k in ("polar", "structural")}
    return kinds(dev_white, test_white), kinds(dev_raw, test_raw)


def test_each_model_chooses_its_estimator_on_dev_and_every_option_is_reported():
    """The trained model's dev scores favour the whitened fit, its twin's the raw fit: each is read at its own
    choice (test numbers of the chosen), the other estimator's test numbers beside it; swapping the test numbers
    between the estimators moves the numbers read, never the choice; the twin gate reads the chosen estimators."""
    tw, tr = _model({"las_pp": 0.5}, {"las_pp": 0.3, "uuas_pp": 0.7, "rel_bacc": 0.5},
                    {"las_pp": 0.4}, {"las_pp": 0.6, "uuas_pp": 0.4, "rel_bacc": 0.2})
    uw, ur = _model({"las_pp": 0.1}, {"las_pp": 0.2, "uuas_pp": 0.45, "rel_bacc": 0.3},
                    {"las_pp": 0.2}, {"las_pp": 0.1, "uuas_pp": 0.55, "rel_bacc": 0.1})
    row = _row({"trained": tw, "trained_raw": tr, "untrained": uw, "untrained_raw": ur})
    ctx = contextual_scores(pd.DataFrame([row])).iloc[0]
    assert ctx["ctx_inputs_polar"] == "whiten" and ctx["ctx_untrained_inputs_polar"] == "scale"
    assert ctx["ctx_best_layer_polar"] == 1  # layer 0 (dev 0.99) is never the verdicts' layer
    assert ctx["ctx_polar_las_pp"] == 0.3 and ctx["ctx_raw_polar_las_pp"] == 0.6  # the chosen; the other beside it
    assert ctx["ctx_untrained_polar_uuas_pp"] == 0.55 and ctx["ctx_untrained_whiten_polar_uuas_pp"] == 0.45
    assert ctx[TWIN_MARGIN] == pytest.approx(0.7 - 0.55)
    assert ctx[WORDPAIR_MARGIN] == pytest.approx(0.5 - 0.2)
    # the test numbers swapped between the estimators: the choice stays, the numbers read follow it
    swapped = _row({"trained": _model({"las_pp": 0.5}, {"las_pp": 0.6, "uuas_pp": 0.4, "rel_bacc": 0.2},
                                      {"las_pp": 0.4}, {"las_pp": 0.3, "uuas_pp": 0.7, "rel_bacc": 0.5})[0],
                    "trained_raw": _model({"las_pp": 0.5}, {}, {"las_pp": 0.4},
                                          {"las_pp": 0.3, "uuas_pp": 0.7, "rel_bacc": 0.5})[1],
                    "untrained": uw, "untrained_raw": ur})
    again = contextual_scores(pd.DataFrame([swapped])).iloc[0]
    assert again["ctx_inputs_polar"] == "whiten" and again["ctx_polar_las_pp"] == 0.6
    assert again["ctx_untrained_inputs_polar"] == "scale"


def test_records_of_one_estimator_are_read_at_it_and_the_raw_fit_only_reported():
    """A record fit with probe.inputs whiten (the raw fit beside it, as before the choice) is read at the whitened
    fit though the raw one scores better on dev; probe.inputs scale names the raw fit 'trained'."""
    tw, tr = _model({"las_pp": 0.3}, {"las_pp": 0.3}, {"las_pp": 0.5}, {"las_pp": 0.6})
    ctx = contextual_scores(pd.DataFrame([_row({"trained": tw, "trained_raw": tr, "untrained": tw},
                                               inputs="whiten")])).iloc[0]
    assert ctx["ctx_inputs_polar"] == "whiten" and ctx["ctx_polar_las_pp"] == 0.3 and ctx["ctx_raw_polar_las_pp"] == 0.6
    assert set(estimator_tables({"trained": {"polar": {}} | {"x": 1}}, "trained", "scale")) == {"scale"}
    assert estimator_tables({"trained": {"p": 1}, "trained_raw": {"p": 2}}, "trained", "dev") == {
        "whiten": {"p": 1}, "scale": {"p": 2}}


def test_the_trial_records_the_choice_it_scored():
    """The trial's scalar columns are the chosen estimator's (dev), and say which it was."""
    from bindscale.studies.geometry.trial import summarise

    tables = {"whiten": {k: {"0": _split({"las_pp": 0.2}, {"las_pp": 0.25}), "1": _split({"las_pp": 0.6}, {"las_pp": 0.1})}
                         for k in ("structural", "polar", "identity")},
              "scale": {k: {"0": _split({"las_pp": 0.3}, {"las_pp": 0.9}), "1": _split({"las_pp": 0.5}, {"las_pp": 0.9})}
                        for k in ("structural", "polar")}}
    out = summarise(tables, "")
    assert out["inputs_polar"] == "whiten" and out["best_layer_polar"] == 1 and out["polar_las_pp"] == 0.1
    assert out["inputs_identity"] == "whiten"
    embed = summarise(tables, "embed_", layer="0")
    assert embed["embed_polar_las_pp"] == 0.9 and "embed_inputs_polar" not in embed  # raw wins on dev at layer 0


# ---------------------------------------------------------------------------- the word-pair labeller --

def _sent(words, heads, rels):
    return Sentence("t", tuple(words), tuple(heads), tuple(rels), tuple("PUNCT" if w == "." else "X" for w in words))


FIT = [_sent(["the", "dog", "sees", "the", "cat", "."], [2, 3, 0, 5, 3, 3], ["det", "nsubj", "root", "det", "obj", "punct"]),
       _sent(["the", "cat", "sees", "the", "dog", "."], [2, 3, 0, 5, 3, 3], ["det", "nsubj", "root", "det", "obj", "punct"]),
       _sent(["The", "bird", "sleeps", "."], [2, 3, 0, 3], ["det", "nsubj", "root", "punct"])]


def test_the_word_pair_labeller_worked_by_hand():
    """Fit: det 5, nsubj 3, obj 2, punct 3 (root left out). (sees, dog) and (sees, cat) were nsubj once and obj once:
    a tie, to the relation commoner over all edges, nsubj. 'The' is read as 'the'.
    Test 'the bird sees the dog quickly .': the→bird det (pair (bird, the), from 'The bird'), right; bird→sees
    nsubj (no pair (sees, bird): the dependent 'bird', nsubj), right; the→dog det (pair), right; dog→sees obj (pair:
    nsubj), wrong; quickly→sees advmod (unseen: the default, det), wrong; .→sees punct (pair), right.
    Accuracy 4/6; balanced over det (2/2), nsubj (1/1), obj (0/1), advmod (0/1), punct (1/1): 3/5; by pair 4 of 6
    edges, by dependent 1, by default 1."""
    lab = fit_word_pairs(FIT)
    assert lab.default == "det" and lab.pairs[("sees", "dog")] == "nsubj" and lab.pairs[("bird", "the")] == "det"
    assert lab.label("Sees", "Dog") == ("nsubj", "pair") and lab.label("sees", "bird") == ("nsubj", "dependent")
    assert lab.label("sees", "quickly") == ("det", "default")
    test = [_sent(["the", "bird", "sees", "the", "dog", "quickly", "."], [2, 3, 0, 5, 3, 3, 3],
                  ["det", "nsubj", "root", "det", "obj", "advmod", "punct"])]
    got = word_pair_scores(lab, test)
    assert got["rel_acc"] == pytest.approx(4 / 6) and got["rel_bacc"] == pytest.approx(3 / 5)
    assert got["pair_share"] == pytest.approx(4 / 6) and got["dependent_share"] == pytest.approx(1 / 6)
    assert word_pair_metrics(FIT, test) == {f"wordpair_{k}": v for k, v in got.items()}
    # scikit-learn's balanced accuracy on the same labels
    from sklearn.metrics import balanced_accuracy_score

    gold = ["det", "nsubj", "det", "obj", "advmod", "punct"]
    pred = ["det", "nsubj", "det", "nsubj", "det", "punct"]
    assert got["rel_bacc"] == pytest.approx(balanced_accuracy_score(gold, pred))
    # no test edge, no fitting edge
    assert all(math.isnan(v) for v in word_pair_scores(lab, [_sent(["go"], [0], ["root"])]).values())
    assert fit_word_pairs([]).label("a", "b") == ("", "default")


def test_the_word_pair_labeller_on_grammar_sentences_is_a_strong_but_imperfect_baseline():
    """On the synthetic grammar word pairs label most edges (determiners, adjectives, prepositions follow from the
    words) but not all: a subject and an object share their (verb, noun) pairs. Measured on 300 fitting and 200
    test sentences of seeds 0-2: accuracy 0.81-0.83, balanced 0.65-0.68."""
    from bindscale.studies.geometry.grammar import GrammarConfig, make_splits

    splits = make_splits(0, 0, 300, 0, 200, GrammarConfig())
    got = word_pair_scores(fit_word_pairs(splits["fit"]), splits["test"])
    assert 0.75 < got["rel_acc"] < 0.9 and 0.55 < got["rel_bacc"] < 0.75
    assert got["pair_share"] + got["dependent_share"] == pytest.approx(1.0, abs=0.02)
