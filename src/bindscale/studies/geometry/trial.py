"""One trial of the ``geometry`` study: train a word-level language model on the grammar, probe every layer.

Claim under test (Diego-Simón et al., NeurIPS 2024, "A polar coordinate system represents syntax in
large language models"): word representations encode dependency structure by distance (Hewitt &
Manning 2019, "A structural probe for finding syntax in word representations") *and* by angle, so a
polar probe reads relation types and directions that the distance-only structural probe misses.

Steps (independent seed streams, :mod:`bindscale.core.seeding`):

1. Sentences (:func:`.grammar.make_splits`): the LM corpus (``train``), probe fit (``probe``), dev
   (``heldout``) and test (``test``), disjoint.
2. Language model: a decoder transformer (:class:`bindscale.models.transformer.Transformer`, init
   stream ``init``) over word tokens, sequences ``<s> w_1 … w_n </s>``, trained as a next-word model
   (every position scored) with :func:`bindscale.train.loop.train_seq_model` (batch order: ``train``).
   Its test loss (nats per predicted token on the test sentences) is recorded.
3. Activations: word ``i``'s vector at layer ``l`` is the residual stream at its position (input
   ``<s> w_1 … w_n``; causal, so a word sees only itself and the words before it): layer 0 is
   ``blocks.0.hook_resid_pre`` (the input embeddings), layer ``l`` = ``blocks.{l}.hook_resid_pre``
   after block ``l-1``, the last layer the last block's ``hook_resid_post``. The same for the
   untrained model (same initial weights: the random-model control) when ``probe.untrained_control``.
4. Probes (:func:`.layers.probe_layers`): structural, polar and identity on every layer, fit on the
   fit sentences, stopped early on dev, scored on dev and test. With ``probe.inputs: dev`` (the default)
   the structural and polar probes are fit twice, on whitened and on raw activations, for the trained
   model and for its untrained twin alike; each model's estimator and layer per probe are chosen together
   on dev LAS (:func:`.layers.choose`: ties to the raw fit, then the lower layer), never on test.
5. The word-pair labeller (:func:`.scores.word_pair_metrics`): each gold test edge's relation from the two
   words' identities alone, fit on the fit sentences' gold edges: the baseline of the relation verdicts.

Scalar metrics (test sentences, each probe at its own estimator and layer chosen on dev): ``{kind}_{metric}``
for the trained model, ``untrained_{kind}_{metric}`` (untrained model, its own choice),
``embed_{kind}_{metric}`` (layer 0 of the trained model: the input-embedding control), with
``metric`` in :data:`.layers.SCALARS`; ``best_layer_{kind}`` and ``inputs_{kind}`` (the estimator
chosen, ``whiten`` or ``scale``; ``untrained_`` the twin's); ``polar_minus_structural_las_pp`` (and ``_hm``);
``chain_{uuas,uas,las}_{hm,pp}`` (the linear-chain baseline, :func:`.scores.chain_metrics`);
``wordpair_rel_acc`` / ``wordpair_rel_bacc`` (the word-pair labeller on the test gold edges) with the shares of
edges it labelled from a seen pair / a seen dependent (``wordpair_pair_share``, ``wordpair_dependent_share``);
``{kind}_las_pp_by_sentence`` (polar and structural at their chosen layer >= 1, per test sentence, the units of
the LAS ratio's interval for one model); ``n_params``, ``train_tokens`` (input positions
trained on), ``lm_test_loss``, ``lm_test_entropy``, ``lm_excess_loss`` (the gate's fit), ``grammar_entropy``
(:func:`lm_fit_metrics`). Tables: ``probe_layers`` (models ``trained`` and ``untrained``: the fit with
``probe.inputs``, whitened for ``dev``; with ``dev`` also ``trained_raw`` and ``untrained_raw``: the structural
and polar probes fit as the sources fit them, on raw vectors, :func:`.layers.table_name`), ``confusion`` (polar
probe at its chosen estimator and layer), ``polar_edges`` (:func:`.layers.polar_picture`).
"""

from __future__ import annotations

import copy
import time
from dataclasses import replace
from collections.abc import Callable

import numpy as np
import torch

from bindscale.models.hooks import run_with_cache
from bindscale.models.transformer import Transformer
from bindscale.kit import (
    TrialResult,
    generator,
    rng,
    Prepared,
    run_alone,
    run_group as run_stack_group,
    PAD_ID,
    seq_loss,
)

from .config import GeometryTrial
from .entropy import corpus_nll, grammar_entropy
from .grammar import GrammarConfig, make_splits, vocabulary
from .layers import (METRICS, SCALARS, choose, las_by_sentence, polar_picture, probe_layers, relation_confusion,
                     table_name)
from .lmtrial import is_lm_trial, run_lm_trial
from .probes import KINDS, ProbeSettings
from .scores import chain_metrics, word_pair_metrics
from .treebank import Sentence

BOS_ID, EOS_ID = 1, 2


def grammar_config(trial: GeometryTrial) -> GrammarConfig:
    d = trial.data
    return GrammarConfig(p_adj=d.p_adj, p_nmod=d.p_nmod, p_np_coord=d.p_np_coord, p_obl=d.p_obl, p_adv=d.p_adv,
                         p_clause_coord=d.p_clause_coord, p_say=d.p_say, p_trans=d.p_trans, decay=d.decay,
                         max_words=d.max_words)


def task_family(trial: GeometryTrial, device: str | torch.device = "cpu") -> dict[str, list[Sentence]]:
    """The trial's sentences: ``lm``, ``fit``, ``dev``, ``test`` (``device`` unused)."""
    d = trial.data
    return make_splits(trial.seed, d.n_lm, d.n_fit, d.n_dev, d.n_test, grammar_config(trial))


def lm_fit_metrics(lm_test_loss: float, test: list[Sentence], cfg: GrammarConfig) -> dict[str, float]:
    """How close the LM came to the grammar (the claims' competence gate), in nats per token
    (every word and ``</s>``, as ``lm_test_loss`` counts them):

    - ``lm_test_entropy``: the grammar's own loss −log p(s) (exact, :func:`.entropy.sentence_logprob`) per
      token on the same test sentences: what a perfect LM scores there;
    - ``lm_excess_loss``: ``lm_test_loss − lm_test_entropy`` (≥ 0 in expectation: the LM's excess over the
      grammar on held-out sentences, paired sentence by sentence);
    - ``grammar_entropy`` / ``grammar_entropy_se``: the grammar's entropy rate by Monte Carlo on a seed stream
      no trial draws from (:func:`.entropy.grammar_entropy`), for reference.
    """
    nll, tokens = corpus_nll(test, cfg)
    h, se = grammar_entropy(cfg)
    test_h = nll / tokens if tokens else float("nan")
    return {"lm_test_entropy": test_h, "lm_excess_loss": lm_test_loss - test_h, "grammar_entropy": h,
            "grammar_entropy_se": se}


def word_ids() -> dict[str, int]:
    """Word → token id (0 pad, 1 ``<s>``, 2 ``</s>``, words from 3)."""
    return {w: i + 3 for i, w in enumerate(vocabulary())}


def encode(sentences: list[Sentence], with_eos: bool = True) -> tuple[torch.Tensor, torch.Tensor]:
    """Tokens ``(N, L)`` (``<s> w_1 … w_n [</s>]``, right-padded) and the loss mask (every next token scored)."""
    ids = word_ids()
    seqs = [[BOS_ID, *(ids[w] for w in s.words), *([EOS_ID] if with_eos else [])] for s in sentences]
    L = max(len(q) for q in seqs)
    tokens = torch.full((len(seqs), L), PAD_ID, dtype=torch.long)
    mask = torch.zeros((len(seqs), L), dtype=torch.bool)
    for n, q in enumerate(seqs):
        tokens[n, :len(q)] = torch.tensor(q)
        mask[n, :len(q) - 1] = True
    return tokens, mask


def build_model(trial: GeometryTrial) -> Transformer:
    """The trial's untrained transformer (``init`` stream)."""
    m = trial.model
    return Transformer(len(vocabulary()) + 3, m.n_layers, m.d_model, m.n_heads, m.mlp_ratio,
                       max_len=trial.data.max_words + 2, generator=generator(trial.seed, "init"))


def untrained_model(trial: GeometryTrial) -> Transformer:
    """The ``models`` hook: the trial's transformer before training."""
    return build_model(trial)


@torch.no_grad()
def word_activations(model: Transformer, sentences: list[Sentence], batch: int = 256) -> dict[str, list[np.ndarray]]:
    """Layer name (``"0"`` … ``str(n_layers)``) → per sentence its words' vectors ``(n_words, d_model)``."""
    model.eval()
    n = model.n_layers
    out: dict[str, list[np.ndarray]] = {str(l): [] for l in range(n + 1)}
    # Layer l < n is the stream entering block l; layer n the stream after the last block.
    names = [f"blocks.{l}.hook_resid_pre" for l in range(n)] + [f"blocks.{n - 1}.hook_resid_post"]
    # The patterns are hooked too (and not read): that makes attention explicit in every layer,
    # the computation these scores were fixed with (the fused kernel differs in float rounding).
    patterns = [f"blocks.{l}.attn.hook_pattern" for l in range(n)]
    for i in range(0, len(sentences), batch):
        chunk = sentences[i:i + batch]
        tokens, _ = encode(chunk, with_eos=False)
        _, cache = run_with_cache(model, tokens, names=names + patterns)
        points = [cache[name] for name in names]
        for l, x in enumerate(points):
            x = x.numpy()
            out[str(l)] += [x[n, 1:len(s) + 1].copy() for n, s in enumerate(chunk)]
    return out


def _layer_pairs(model: Transformer, splits: dict[str, list[Sentence]]) -> dict:
    acts = {k: word_activations(model, splits[k]) for k in ("fit", "dev", "test")}
    return {layer: tuple(list(zip(acts[k][layer], splits[k])) for k in ("fit", "dev", "test"))
            for layer in acts["fit"]}


def probe_settings(trial: GeometryTrial) -> ProbeSettings:
    return trial.probe.settings()


def summarise(tables: dict, prefix: str, layer: str | None = None) -> dict:
    """Scalar test metrics per probe kind at its estimator and layer chosen on dev (:func:`.layers.choose` over the
    estimators' ``tables``; at ``layer``, the estimator alone), keys ``{prefix}{kind}_{metric}``; with the layer
    chosen, ``{prefix}best_layer_{kind}`` and ``{prefix}inputs_{kind}`` (the estimator chosen: ``whiten`` /
    ``scale``) too."""
    out = {}
    for kind in KINDS:
        est, at = choose(tables, kind, layer=layer)
        row = tables[est].get(kind, {}).get(at, {}).get("test") if at is not None else None
        for m in SCALARS:
            i = METRICS.index(m)
            out[f"{prefix}{kind}_{m}"] = float(row[i]) if row and i < len(row) and row[i] is not None else float("nan")
        if layer is None:
            out[f"{prefix}best_layer_{kind}"] = int(at) if at is not None else -1
            out[f"{prefix}inputs_{kind}"] = est or ""
    return out


def probe_all(pairs: dict, estimators: tuple[str, ...], settings, seed: int) -> tuple[dict, dict]:
    """Every probe kind on every layer with each estimator (:func:`.layers.probe_layers`; the identity probe, which
    reads the activations as they are, with the first estimator only): (estimator → table, estimator → probes)."""
    tables, probes = {}, {}
    for est in estimators:
        kinds = KINDS if est == estimators[0] else ("structural", "polar")
        tables[est], probes[est] = probe_layers(pairs, kinds, replace(settings, inputs=est), seed)
    return tables, probes


def run_trial(trial: GeometryTrial, device: str | torch.device = "cpu",
              progress: Callable[[int], None] | None = None, return_models: bool = False) -> TrialResult:
    """Train, probe and score one geometry trial alone (see the module docstring); a NaN loss gives ``diverged``."""
    return run_alone(trial, device, progress, return_models, prepare=_prepare, finish=_result)


def _prepare(trial: GeometryTrial) -> Prepared:
    """The trial's untrained LM and its corpus as training tensors; context: ``(splits, untrained copy,
    loss mask of the corpus)`` (the copy is the random-model control: the same initial weights)."""
    splits = task_family(trial)
    tokens, mask = encode(splits["lm"])
    model = build_model(trial)
    return Prepared(model, tokens, mask, (splits, copy.deepcopy(model), mask))


def _result(trial: GeometryTrial, prepared: Prepared, model: Transformer, fit: dict, t_train: float,
            device: str | torch.device, return_models: bool) -> TrialResult:
    """A trained trial's record: its training summary and, unless it diverged, its test loss, probes and
    scores (module docstring) on ``model`` (the trial's own LM, or its stack member), moved to the CPU.

    ``t_train``: seconds from the start of the trial (its stack's, when stacked) to the end of training.
    """
    splits, untrained, mask = prepared.context
    t1 = time.perf_counter()
    tr = trial.train
    model.cpu().eval()
    kept = {"model": model} if return_models else {}
    lengths = mask.sum(1).float()
    metrics: dict = {"n_params": model.n_params(), "final_loss": fit["final_loss"],
                     "train_tokens": float(tr.steps * tr.batch_size * lengths.mean()),
                     "curve_steps": [s for s, _ in fit["loss_curve"]],
                     "curve_loss": [v for _, v in fit["loss_curve"]], "steps_per_s": fit["steps_per_s"],
                     "lm_sentences": len(splits["lm"])}
    if fit["status"] != "ok":
        return TrialResult(status=fit["status"], diverged_step=fit.get("diverged_step"), metrics=metrics, **kept)
    with torch.no_grad():
        tt, tm = encode(splits["test"])
        metrics["lm_test_loss"] = float(seq_loss(model, tt, tm))
    metrics |= lm_fit_metrics(metrics["lm_test_loss"], splits["test"], grammar_config(trial))
    metrics |= chain_metrics(splits["fit"], splits["test"])
    metrics |= word_pair_metrics(splits["fit"], splits["test"])
    settings = probe_settings(trial)
    fitted = trial.probe.estimators()
    trained_pairs = _layer_pairs(model, splits)
    tables, probes = probe_all(trained_pairs, fitted, settings, trial.seed)
    layers_table = {table_name("trained", est, fitted): t for est, t in tables.items()}
    metrics |= summarise(tables, "") | summarise(tables, "embed_", layer="0")
    metrics |= las_by_sentence(tables, probes, lambda layer: trained_pairs[layer])
    if trial.probe.untrained_control:
        utables, _ = probe_all(_layer_pairs(untrained, splits), fitted, settings, trial.seed)
        layers_table |= {table_name("untrained", est, fitted): t for est, t in utables.items()}
        metrics |= summarise(utables, "untrained_")
    for conv in ("pp", "hm"):
        metrics[f"polar_minus_structural_las_{conv}"] = metrics[f"polar_las_{conv}"] - metrics[f"structural_las_{conv}"]
    metrics["probe_layers"] = layers_table
    polar_est, polar_at = choose(tables, "polar")
    if polar_at is not None:
        fit_pairs, _, test_pairs = trained_pairs[polar_at]
        probe = probes[polar_est][("polar", polar_at)]
        metrics["confusion"] = relation_confusion(probe, test_pairs)
        metrics["polar_edges"] = polar_picture(probe, fit_pairs, test_pairs, trial.probe.n_picture_edges,
                                               rng(trial.seed, "probe_score"))
    metrics["timings"] = {"train_s": t_train, "probe_s": time.perf_counter() - t1}
    return TrialResult(status="ok", metrics=metrics, **kept)


def run_group(trials: list[GeometryTrial], device: str | torch.device = "cpu",
              progress: Callable[[int], None] | None = None, return_models: bool = False) -> list[TrialResult]:
    """A job's trials, in order; ``return_models``: the trained LMs too. A pretrained-model trial
    (``model.source: pretrained``) runs :func:`.lmtrial.run_lm_trial`. Trained LMs of one stack key
    (:func:`.plan.group_key`: same grammar and corpus sizes, same model, differing in seed, probe settings or
    per-trial training fields) train as one stacked transformer, each on its own corpus, and are each probed
    on their own member; the others train alone (:func:`bindscale.train.stack.run_group`). A record is the same
    either way, up to float rounding."""
    from .plan import group_key

    out: list = [None] * len(trials)
    trained = [i for i, t in enumerate(trials) if not is_lm_trial(t)]
    for i, t in enumerate(trials):
        if is_lm_trial(t):
            out[i] = run_lm_trial(t, device, progress)
    results = run_stack_group([trials[i] for i in trained], device, progress, return_models, key=group_key,
                               prepare=_prepare, finish=_result)
    for i, res in zip(trained, results):
        out[i] = res
    return out
