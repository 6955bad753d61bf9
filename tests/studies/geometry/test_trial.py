"""One geometry trial: word tokens, activation alignment, metrics and tables (tiny settings)."""

import numpy as np
import pytest
import torch

from bindscale.studies.geometry.config import GeometryTrial
from bindscale.studies.geometry.grammar import vocabulary
from bindscale.studies.geometry.trial import (
    BOS_ID,
    EOS_ID,
    build_model,
    encode,
    run_trial,
    task_family,
    word_activations,
    word_ids,
)

TINY = GeometryTrial(data={"n_lm": 40, "n_fit": 16, "n_dev": 6, "n_test": 6, "max_words": 12},
                     model={"n_layers": 1, "d_model": 16, "n_heads": 2}, train={"steps": 4, "batch_size": 8},
                     probe={"max_epochs": 2, "rank": 8, "n_picture_edges": 10})


def test_tokens_mask_and_activations_align_with_words():
    torch.set_num_threads(1)
    splits = task_family(TINY)
    s = splits["fit"][0]
    tokens, mask = encode([s])
    ids = word_ids()
    assert tokens[0].tolist() == [BOS_ID, *(ids[w] for w in s.words), EOS_ID]
    assert mask[0].tolist() == [True] * (len(s) + 1) + [False]  # every next word and </s> scored
    assert len(ids) == len(vocabulary()) and min(ids.values()) == 3
    model = build_model(TINY)
    acts = word_activations(model, splits["fit"][:3])
    assert set(acts) == {"0", "1"}
    assert [a.shape for a in acts["0"]] == [(len(x), 16) for x in splits["fit"][:3]]
    emb = model.embed.weight.detach().numpy()
    np.testing.assert_allclose(acts["0"][0], emb[[ids[w] for w in s.words]], rtol=1e-6)  # layer 0 = embeddings


@pytest.mark.slow
def test_a_tiny_trial_records_every_metric_and_table():
    torch.set_num_threads(1)
    r = run_trial(TINY)
    m = r.metrics
    assert r.status == "ok"
    for prefix in ("", "untrained_", "embed_"):
        for kind in ("structural", "polar", "identity"):
            for metric in ("uuas_hm", "las_hm", "uuas_pp", "las_pp", "spearman", "rel_acc", "dir_acc", "uas_pp",
                           "uas_hm", "rel_bacc"):
                v = m[f"{prefix}{kind}_{metric}"]
                assert np.isnan(v) or 0.0 <= v <= 1.0 or metric == "spearman"
    # probe.inputs dev (the default): whitened and raw fits for the trained model and for its twin, structural and
    # polar at every layer, each model's estimator chosen on dev and recorded
    assert set(m["probe_layers"]) == {"trained", "untrained", "trained_raw", "untrained_raw"}
    assert set(m["probe_layers"]["trained"]["polar"]) == {"0", "1"}
    for raw in ("trained_raw", "untrained_raw"):
        assert set(m["probe_layers"][raw]) == {"structural", "polar"}
        assert set(m["probe_layers"][raw]["polar"]) == {"0", "1"}
    for prefix in ("", "untrained_"):
        assert {m[f"{prefix}inputs_{kind}"] for kind in ("structural", "polar")} <= {"whiten", "scale"}
    # the word-pair labeller on the same test gold edges
    assert 0.0 <= m["wordpair_rel_bacc"] <= 1.0 and 0.0 <= m["wordpair_rel_acc"] <= 1.0
    assert 0.0 < m["wordpair_pair_share"] + m["wordpair_dependent_share"] <= 1.0
    assert m["best_layer_polar"] in (0, 1) and m["n_params"] == build_model(TINY).n_params()
    assert m["polar_minus_structural_las_pp"] == pytest.approx(m["polar_las_pp"] - m["structural_las_pp"])
    assert sum(sum(v.values()) for v in m["confusion"].values()) > 0
    # the gate's fit: the LM's test loss against the grammar's exact loss on the same sentences
    assert m["lm_excess_loss"] == pytest.approx(m["lm_test_loss"] - m["lm_test_entropy"])
    assert 2.0 < m["lm_test_entropy"] < 4.0 and 2.0 < m["grammar_entropy"] < 4.0
    assert m["lm_excess_loss"] > 0.1  # four steps learn nothing like the grammar
    # the chain beside every UUAS/UAS/LAS; per-sentence LAS aligned with the chain's, for the sentence bootstrap
    for k in ("uuas", "uas", "las"):
        for conv in ("pp", "hm"):
            assert 0.0 <= m[f"chain_{k}_{conv}"] <= 1.0
    assert m["chain_las_pp"] <= m["chain_uas_pp"] <= m["chain_uuas_pp"] and m["chain_label"]
    n = len(m["chain_las_pp_by_sentence"])
    assert n == 6 and len(m["polar_las_pp_by_sentence"]) == n == len(m["structural_las_pp_by_sentence"])
    assert all(len(v) == 3 for v in m["polar_edges"].values())
    assert r.metrics == run_trial(TINY).metrics | {"steps_per_s": r.metrics["steps_per_s"],
                                                     "timings": r.metrics["timings"]}  # deterministic


@pytest.mark.slow
def test_the_sources_fit_alone_records_no_raw_table_and_the_same_probes_as_the_raw_beside_whitened():
    """inputs 'scale' is the sources' fit alone: no *_raw table, and its trained and untrained tables equal the raw
    fits that a run choosing on dev (inputs 'dev') records beside its whitened probes (same seed, same fitting code);
    inputs 'whiten' is the whitened fit alone, equal to the dev run's whitened tables."""
    torch.set_num_threads(1)
    both = run_trial(TINY).metrics["probe_layers"]
    raw = run_trial(TINY.model_copy(update={"probe": TINY.probe.model_copy(update={"inputs": "scale"})})).metrics
    white = run_trial(TINY.model_copy(update={"probe": TINY.probe.model_copy(update={"inputs": "whiten"})})).metrics
    assert set(raw["probe_layers"]) == set(white["probe_layers"]) == {"trained", "untrained"}
    assert {raw[f"inputs_{k}"] for k in ("structural", "polar")} == {"scale"}
    assert {white[f"untrained_inputs_{k}"] for k in ("structural", "polar")} == {"whiten"}
    for model in ("trained", "untrained"):
        for kind in ("structural", "polar"):
            assert raw["probe_layers"][model][kind] == both[f"{model}_raw"][kind]
            assert white["probe_layers"][model][kind] == both[model][kind]
