"""One ``geometry-lm`` trial: a pretrained Hugging Face model over a CoNLL-U treebank, probed layer by layer.

Claim under test (Diego-Simón et al., NeurIPS 2024, "A polar coordinate system represents syntax in
large language models"): the polar probe (distance *and* angle of edge vectors) reads relation type
and direction that Hewitt & Manning's (2019, "A structural probe for finding syntax in word
representations") distance-only structural probe misses. Here on real models and real trees.

Steps (seed streams of :mod:`bindscale.core.seeding`):

1. Sentences (:func:`treebank_draw`): the ``fit_split`` file (EWT dev) is shuffled (stream ``probe`` of
   the trial's seed) into ``n_dev`` dev and ``n_fit`` fitting sentences, disjoint; the ``test_split`` file
   (EWT test) is scored (all of it, or a draw of ``n_test`` sentences that is the same for every seed:
   :data:`TEST_DRAW_SEED`). The seed is the study's probe-fit unit: it changes the fit and dev sentences and
   the probes' initialisation, nothing else.
2. Activations (:mod:`.lm`): every hidden state of the model (0 = input embeddings), subwords
   averaged into words, cached on disk per layer (``data.cache_dir``) for the *whole* fit-split file and
   for the test sentences, so no cache key depends on the seed: the first seed of a model runs the forward
   passes, every other seed (and every re-run with the same model, sentences and alignment rule) reads
   the cache and never loads the model.
3. Probes (:mod:`.probes`, :mod:`.scores`): structural and polar on every ``model.layer_stride``-th
   hidden state (the first and last always), fit on fit, stopped early on dev, scored on dev and
   test; with ``probe.inputs: dev`` (the study file's) each is fit on raw and on whitened activations, and
   each kind's estimator and layer are the pair with the best dev LAS (PolarProbe's convention,
   :data:`.layers.SELECT`; :func:`.layers.choose`, ties to the raw fit), never chosen on test. Fitted
   probes are kept in ``cache_dir/probes`` (:data:`PROBE_CACHE`), keyed by a hash of everything a fit
   depends on (:func:`.probes.probe_key`: the activations' bytes, the gold trees, the fit/dev split, every
   probe setting, the seed, the fitting code's version): a re-run with nothing changed reads them back
   instead of refitting; any change refits.
4. Controls, where they are compared: the identity probe (no learned map) at the polar probe's best
   layer; when ``probe.untrained_control``, the same architecture built from its config with random
   weights (stream ``random_init`` of :data:`UNTRAINED_SEED_ROOT`: one random model for every seed), probed
   with each probe kind at that kind's best layer over all layers and at its best layer >= 1 (the
   verdict's), with every estimator fit for the trained model (the twin's estimator is its own choice on
   dev), and with the identity probe at the polar probe's best layer. Layer 0 of the
   trained model is the input-embedding control. (Only there, to keep a re-run within minutes.)

Scalar metrics (test sentences; ``metric`` in :data:`.layers.SCALARS`): ``{kind}_{metric}`` at the kind's
estimator and layer chosen on dev (identity: at the polar probe's layer), ``inputs_{kind}`` (the estimator
chosen), ``untrained_{kind}_{metric}`` (random model, at the trained model's best layer of that kind, its own
estimator chosen on dev there: ``untrained_inputs_{kind}``; identity at the polar one), ``embed_{kind}_{metric}``
(layer 0), ``best_layer_{kind}``, ``polar_minus_structural_las_pp`` / ``_hm``, ``n_params``, ``model_label``
(family, size, base/instruct, stored precision: :func:`bindscale.models.pretrained.describe_model`) with ``model_family`` /
``model_variant`` / ``model_weights``, ``untrained_init_seed``,
``n_layers``, ``n_fit`` / ``n_dev`` / ``n_test`` sentences, the linear-chain baseline
``chain_{uuas,uas,las}_{hm,pp}`` (:func:`.scores.chain_metrics`), the word-pair labeller ``wordpair_rel_acc`` /
``wordpair_rel_bacc`` (:func:`.scores.word_pair_metrics`: relations from the two words' identities, fit on the
unit's fit sentences, scored on the test gold edges), ``{kind}_las_pp_by_sentence`` (polar and
structural at their chosen layer >= 1, per test sentence: the units of the LAS ratio's interval), activation seconds, ``probes_fit`` /
``probes_from_cache`` (probes fitted here / read back from the probe cache). Tables as the
synthetic trial: ``probe_layers`` (``{"trained"|"untrained"|"trained_raw"|"untrained_raw": {kind: {layer: {split:
METRICS}}}}``; ``*_raw``: the sources' fit on raw vectors beside the whitened one, when ``probe.inputs`` is ``dev``),
``confusion`` (polar probe at its chosen estimator and layer, test) and ``polar_edges`` (the polar picture).
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any


from bindscale.kit import ConfigError

from .treebank import Sentence, read_conllu



#: Subfolder of the activation cache folder where fitted probes are kept (:func:`.probes.fit_probe_cached`).
PROBE_CACHE = "probes"


def is_lm_trial(trial: Any) -> bool:
    """Whether a geometry trial probes a pretrained model (``model.source == "pretrained"``)."""
    return getattr(getattr(trial, "model", None), "source", None) == "pretrained"


def default_cache_dir() -> Path:
    """``$BINDSCALE_CACHE/activations``, else ``~/.cache/bindscale/activations``."""
    root = os.environ.get("BINDSCALE_CACHE")
    return Path(root) / "activations" if root else Path.home() / ".cache" / "bindscale" / "activations"


def split_file(treebank: str | Path, split: str) -> Path:
    """The CoNLL-U file of ``split`` in a treebank folder (or beside a given file of it).

    Raises:
        ConfigError: no such folder, or no / several matching files (one line naming the folder).
    """
    p = Path(treebank).expanduser()
    folder = p.parent if p.is_file() else p
    if not folder.is_dir():
        raise ConfigError(f"data.treebank: {treebank} is no folder or file")
    for pattern in (f"*-ud-{split}.conllu", f"*{split}*.conllu"):
        found = sorted(folder.glob(pattern))
        if len(found) == 1:
            return found[0]
        if len(found) > 1:
            raise ConfigError(f"data.treebank: {len(found)} files in {folder} match {pattern} "
                              f"({', '.join(f.name for f in found)}); keep one per split")
    raise ConfigError(f"data.treebank: no {split} file (*-ud-{split}.conllu) in {folder}")


def check_trial(trial: Any) -> None:
    """Refuse, with one line and before anything is written, a pretrained-model trial that cannot run: no
    treebank, missing or malformed split files, too few sentences, no extra, or a model that is not there.

    Raises:
        ConfigError: ``data.treebank`` unset or without the split files; a split file that is not valid
            CoNLL-U (the reader's line: file, sentence, line, what is wrong); fewer dev sentences than
            ``n_fit + n_dev`` or no test sentence; the ``lm`` extra not installed; ``model.name`` neither an
            installed package, a model folder nor a ``.gguf`` file.
    """
    from bindscale.models.pretrained import require_lm, resolve_model
    from .lm import INSTALL_HINT

    require_lm(INSTALL_HINT)  # first: a user without the extra learns it before preparing a treebank
    if getattr(trial.data, "source", None) != "treebank":
        raise ConfigError("a pretrained model (model.source: pretrained) is probed over a treebank: "
                          "set data.source: treebank and data.treebank=PATH")
    if not trial.data.treebank:
        raise ConfigError("data.treebank is not set: give the folder of a CoNLL-U treebank with its dev and test "
                          "files (Universal Dependencies, e.g. UD English EWT from universaldependencies.org), "
                          "e.g. --set data.treebank=PATH/ud-english-ewt")
    _check_sentences(trial)
    resolve_model(trial.model.name)


def _check_sentences(trial: Any) -> None:
    """Read both split files (a treebank is small: EWT dev and test parse in about a second)."""
    d = trial.data
    counts = {}
    for split in dict.fromkeys((d.fit_split, d.test_split)):
        try:
            counts[split] = len(read_conllu(split_file(d.treebank, split)))
        except ValueError as e:  # TreebankError: already one line naming file, sentence and line
            raise ConfigError(f"data.treebank: {e}") from None
    need = d.n_dev + max(d.n_fit, 1)
    if counts[d.fit_split] < need:
        raise ConfigError(f"data.n_fit + data.n_dev: {need} sentences needed, the {d.fit_split} file has "
                          f"{counts[d.fit_split]}")
    if not counts[d.test_split]:
        raise ConfigError(f"data.treebank: the {d.test_split} file has no sentence")


#: Root seed of the test-sentence draw (``n_test``): the same test sentences for every trial seed, so the seed axis
#: varies the probe fits only and every unit is scored on one test set (paired units).
TEST_DRAW_SEED = 0
#: Root seed of the untrained twin's random weights (stream ``random_init``), the same for every trial seed: one
#: random model, its activations computed and cached once per model. The interval over seeds therefore covers
#: the probes' fitting (initialisation, fit and dev sentences), not the draw of the random weights.
UNTRAINED_SEED_ROOT = 0


def treebank_draw(trial: Any) -> dict[str, Any]:
    """The trial's sentences as indices into the fit-split file, so that one activation cache covers every seed.

    Returns ``{"pool": all sentences of the fit-split file (file order), "fit": indices of the n_fit fitting
    sentences, "dev": indices of the n_dev dev sentences (disjoint from fit), "test": the test sentences}``. The
    fit and dev draws depend on ``trial.seed`` (stream ``probe``: one permutation, dev its first ``n_dev``
    entries, fit the next ``n_fit``); the test draw does not (:data:`TEST_DRAW_SEED`, stream ``test``).

    Raises:
        ConfigError: the fit-split file has fewer than ``n_dev + 1`` sentences (``n_fit`` more when set).
    """
    from bindscale.kit import rng

    d = trial.data
    pool = read_conllu(split_file(d.treebank, d.fit_split))
    need = d.n_dev + max(d.n_fit, 1)
    if len(pool) < need:
        raise ConfigError(f"data.n_fit + data.n_dev: {need} sentences needed, the {d.fit_split} file has {len(pool)}")
    order = rng(trial.seed, "probe").permutation(len(pool))
    dev = sorted(order[:d.n_dev].tolist())
    fit = sorted(order[d.n_dev:d.n_dev + d.n_fit].tolist() if d.n_fit else order[d.n_dev:].tolist())
    test = read_conllu(split_file(d.treebank, d.test_split))
    if d.n_test and d.n_test < len(test):
        test = [test[i] for i in sorted(rng(TEST_DRAW_SEED, "test").choice(len(test), d.n_test, replace=False))]
    return {"pool": pool, "fit": fit, "dev": dev, "test": test}


def treebank_splits(trial: Any) -> dict[str, list[Sentence]]:
    """The trial's ``fit``, ``dev`` (disjoint seeded draws from the fit-split file) and ``test`` sentences
    (:func:`treebank_draw` as sentences).

    Raises:
        ConfigError: see :func:`treebank_draw`.
    """
    d = treebank_draw(trial)
    return {"fit": [d["pool"][i] for i in d["fit"]], "dev": [d["pool"][i] for i in d["dev"]], "test": d["test"]}


#: Hidden states probed at most when ``model.layer_stride`` is 0 (auto).
AUTO_LAYERS = 7


def probed_layers(n_layers: int, stride: int) -> list[int]:
    """Hidden states probed: ``0, stride, 2·stride, …`` and always the last (``n_layers − 1``). ``stride`` 0
    (auto): the smallest stride that probes at most :data:`AUTO_LAYERS` (SmolLM2's 31 hidden states: every
    5th; MiniLM's 7: all)."""
    if stride <= 0:
        stride = max(1, math.ceil((n_layers - 1) / (AUTO_LAYERS - 1)))
    return sorted(set(range(0, n_layers, stride)) | {n_layers - 1})


class _Units:
    """Turns fractions of a trial's work into whole progress units (``total`` in all)."""

    def __init__(self, total: int, progress: Callable[[int], None] | None):
        self.total, self.progress, self.done, self.frac = max(int(total), 1), progress, 0, 0.0

    def add(self, frac: float) -> None:
        self.frac = min(1.0, self.frac + frac)
        target = int(self.frac * self.total)
        if self.progress and target > self.done:
            self.progress(target - self.done)
        self.done = max(self.done, target)

    def finish(self) -> None:
        self.add(1.0)


def _settings(trial: Any):
    return trial.probe.settings()


def _scores(probe, pairs) -> list[float]:
    from .layers import METRICS
    from .scores import score

    s = score(probe, pairs)
    return [float(s[m]) for m in METRICS]


class _Source:
    """Activations of one model (trained or untrained) over the trial's sentences, through the cache.

    Two caches per model, neither keyed by the trial's seed: the whole fit-split file (``pool``: the fit and dev
    sentences of every seed are rows of it) and the test sentences (fixed across seeds). Extra seeds therefore
    cost probe fits only."""

    def __init__(self, source, draw: dict[str, Any], cache_dir: Path, untrained: bool, seed: int,
                 batch_size: int, device: str, units: _Units, share: float):
        from bindscale.models.pretrained import load_model
        from .lm import cache_activations, cache_key

        loaded: list = []

        def loader():
            if not loaded:
                loaded.append(load_model(source, untrained=untrained, seed=seed, device=device))
            return loaded[0]

        total = len(draw["pool"]) + len(draw["test"])
        step = (lambda n: units.add(share * n / total))
        self.caches = {}
        for name, sents in (("pool", draw["pool"]), ("test", draw["test"])):
            self.caches[name] = cache_activations(loader, sents, cache_dir, cache_key(source, sents, untrained, seed),
                                                  batch_size=batch_size, device=device, progress=step)
        self.loaded = bool(loaded)
        loaded.clear()  # the model is not kept once its activations are cached
        self.draw = draw
        self.n_layers = self.caches["test"].n_layers

    def pairs(self, layer: int) -> tuple[list, list, list]:
        pool, d = self.caches["pool"], self.draw
        fit = list(zip(pool.layer(layer, d["fit"]), (d["pool"][i] for i in d["fit"])))
        dev = list(zip(pool.layer(layer, d["dev"]), (d["pool"][i] for i in d["dev"])))
        return fit, dev, list(zip(self.caches["test"].layer(layer), d["test"]))


def _probe(pairs_at: Callable[[int], tuple], plan: dict[int, Sequence[str]], settings, seed: int,
           table: dict, probes: dict, on_done: Callable[[], None], cache: Path | None, counts: dict[str, int]) -> None:
    """Fit the probe kinds ``plan[layer]`` at each layer (or read an identical fit from ``cache``:
    :func:`.probes.fit_probe_cached`; ``counts["cached"]`` / ``counts["fit"]`` count them); scores into
    ``table[kind][str(layer)][split]``."""
    from .probes import fit_probe_cached

    for layer, kinds in sorted(plan.items()):
        fit, dev, test = pairs_at(layer)
        for kind in kinds:
            probe, cached = fit_probe_cached(kind, fit, dev, settings, seed, cache)
            counts["cached" if cached else "fit"] += 1
            probes[(kind, layer)] = probe
            table.setdefault(kind, {})[str(layer)] = {"dev": _scores(probe, dev), "test": _scores(probe, test)}
            on_done()


def _at(table: dict, kind: str, layer: int | None, prefix: str) -> dict[str, float]:
    """Test scores of probe ``kind`` at ``layer`` as ``{prefix}{kind}_{metric}`` (NaN where it was not probed)."""
    from .layers import METRICS, SCALARS

    row = table.get(kind, {}).get(str(layer), {}).get("test") if layer is not None else None
    return {f"{prefix}{kind}_{m}": (float(row[METRICS.index(m)]) if row else math.nan) for m in SCALARS}


def run_lm_trial(trial: Any, device: str = "cpu", progress: Callable[[int], None] | None = None):
    """Probe one pretrained model over a treebank (module docstring); returns a :class:`~bindscale.train.result.TrialResult`.

    Progress: ``trial.train.steps`` units in all (with the control: trained activations 30%, its probes 40%,
    the untrained model's activations 25%, its probes the rest).
    """
    from bindscale.kit import TrialResult, rng, stream_seed

    check_trial(trial)
    from .layers import choose, table_name
    from bindscale.models.pretrained import describe_model, resolve_model

    t0, c0 = time.perf_counter(), time.process_time()
    units = _Units(trial.train.steps, progress)
    draw = treebank_draw(trial)
    splits = {"fit": [draw["pool"][i] for i in draw["fit"]], "dev": [draw["pool"][i] for i in draw["dev"]],
              "test": draw["test"]}
    source = resolve_model(trial.model.name)
    cache_dir = Path(trial.data.cache_dir).expanduser() if trial.data.cache_dir else default_cache_dir()
    control = bool(trial.probe.untrained_control)
    share_fwd = 0.3 if control else 0.5
    trained = _Source(source, draw, cache_dir, False, 0, trial.model.batch_size, device, units, share_fwd)
    units.frac = max(units.frac, share_fwd)
    t_act = time.perf_counter() - t0
    settings = _settings(trial)
    fitted = trial.probe.estimators()  # dev: whitened and raw, each model's estimator chosen on dev with the layer
    layers = probed_layers(trained.n_layers, trial.model.layer_stride)
    n_main = 2 * len(fitted) * len(layers)
    share_main = 0.4 if control else 0.45
    tables: dict = {est: {} for est in fitted}
    probes: dict = {est: {} for est in fitted}
    probe_cache = cache_dir / PROBE_CACHE
    counts = {"cached": 0, "fit": 0}
    for est in fitted:
        _probe(trained.pairs, {layer: ("structural", "polar") for layer in layers}, replace(settings, inputs=est),
               trial.seed, tables[est], probes[est], lambda: units.add(share_main / n_main), probe_cache, counts)
    best = {k: choose(tables, k) for k in ("structural", "polar")}
    ctx = {k: choose(tables, k, contextual=True) for k in ("structural", "polar")}
    # controls where they are compared: each kind's best layer, over all layers and among layers >= 1 (the
    # verdict's), with every estimator (the twin's estimator is its own choice on dev); the identity probe beside
    # the polar one
    plan: dict[int, list[str]] = {}
    for kind in ("structural", "polar"):
        for at in dict.fromkeys((best[kind][1], ctx[kind][1])):
            if at is not None:
                plan.setdefault(int(at), []).append(kind)
    polar_at = int(best["polar"][1]) if best["polar"][1] is not None else None
    first = fitted[0]  # the identity probe reads the activations as they are: fit once, in the first table
    _probe(trained.pairs, {polar_at: ("identity",)} if polar_at is not None else {}, settings, trial.seed,
           tables[first], probes[first], lambda: None, probe_cache, counts)
    about = describe_model(source)
    metrics: dict = {"n_layers": trained.n_layers, "n_params": trained.caches["test"].meta["n_params"],
                     "model_label": about["label"], "model_family": about["family"], "model_variant": about["variant"],
                     "model_weights": about["weights"],
                     "n_fit": len(splits["fit"]), "n_dev": len(splits["dev"]), "n_test": len(splits["test"]),
                     "activations_loaded_model": trained.loaded}
    for kind in ("structural", "polar"):
        est, at = best[kind]
        metrics |= _at(tables.get(est, {}), kind, at, "")
        metrics[f"best_layer_{kind}"] = int(at) if at is not None else -1
        metrics[f"inputs_{kind}"] = est or ""
        metrics |= _at(tables.get(choose(tables, kind, layer="0")[0], {}), kind, 0, "embed_")
    metrics |= _at(tables[first], "identity", polar_at, "")
    from .layers import las_by_sentence
    from .scores import chain_metrics, word_pair_metrics

    metrics |= chain_metrics(splits["fit"], splits["test"])  # the linear-chain baseline beside every UUAS and LAS
    metrics |= word_pair_metrics(splits["fit"], splits["test"])  # relation labels from the two words alone
    metrics |= las_by_sentence(tables, probes, lambda layer: trained.pairs(int(layer)))
    layers_table = {table_name("trained", est, fitted): t for est, t in tables.items()}
    t_probe = time.perf_counter() - t0 - t_act
    if control:
        init = stream_seed(UNTRAINED_SEED_ROOT, "random_init") % 2**31
        metrics["untrained_init_seed"] = init
        rand = _Source(source, draw, cache_dir, True, init, trial.model.batch_size, device, units, 0.25)
        utables: dict = {est: {} for est in fitted}
        for est in fitted:
            _probe(rand.pairs, plan, replace(settings, inputs=est), trial.seed, utables[est], {}, lambda: None,
                   probe_cache, counts)
        layers_table |= {table_name("untrained", est, fitted): t for est, t in utables.items()}
        for kind in ("structural", "polar"):
            at = best[kind][1]
            est = choose(utables, kind, layer=at)[0] if at is not None else None
            metrics |= _at(utables.get(est, {}), kind, at, "untrained_")
            metrics[f"untrained_inputs_{kind}"] = est or ""
        metrics |= _at(utables[first], "identity", polar_at, "untrained_")
    for conv in ("pp", "hm"):
        metrics[f"polar_minus_structural_las_{conv}"] = metrics[f"polar_las_{conv}"] - metrics[f"structural_las_{conv}"]
    metrics["probe_layers"] = layers_table
    if polar_at is not None:
        fit, _, test = trained.pairs(polar_at)
        from .layers import polar_picture, relation_confusion

        probe = probes[best["polar"][0]][("polar", polar_at)]
        metrics["confusion"] = relation_confusion(probe, test)
        metrics["polar_edges"] = polar_picture(probe, fit, test, trial.probe.n_picture_edges,
                                               rng(trial.seed, "probe_score"))
    metrics["probes_from_cache"], metrics["probes_fit"] = counts["cached"], counts["fit"]
    metrics["timings"] = {"activations_s": t_act, "probe_s": t_probe,
                          "control_s": time.perf_counter() - t0 - t_act - t_probe, "cpu_s": time.process_time() - c0}
    units.finish()
    return TrialResult(status="ok", metrics=metrics)


def check_trials(trials: Sequence[Any]) -> None:
    """The study's ``checker`` part for pretrained-model trials: :func:`check_trial` on each (others pass).

    Raises:
        ConfigError: see :func:`check_trial`.
    """
    for t in trials:
        if is_lm_trial(t):
            check_trial(t)


def job_cost(trial: Any) -> float:
    """Relative cost of one pretrained-model trial, in the synthetic trials' units (the study's ``seconds_per_cost``:
    seconds ≈ 6.3e-11·cost + 13.2). A guess from the measured default run (UD EWT, n_fit 500, 20 epochs, 2-core
    Xeon at load ~4, one torch thread): the probe fits take ~21 CPU-s a trial (MiniLM; SmolLM2-135M ~25), scaled
    here by ``n_fit`` and ``max_epochs``; the forward passes (whole dev file and the test draw, trained and
    untrained: SmolLM2-135M ~210 CPU-s, MiniLM ~27) run once per model and are spread over 8 seeds. Those ~21 CPU-s
    were one estimator's fits; ``probe.inputs: dev`` fits two (not measured yet: counted twice)."""
    d, p = trial.data, trial.probe
    probe_s = 21.0 * (d.n_fit or 2000) / 500 * p.max_epochs / 20 * len(p.estimators())
    models = 2 if p.untrained_control else 1
    forward_s = 0.035 * (2000 + (d.n_test or 2000)) * models / 8
    return max(probe_s + forward_s - 13.2, 1.0) / 6.3e-11


def trial_memory_bytes(trial: Any) -> int:
    """A ~100M-parameter model in float32, one batch of hidden states and one layer of activations: 2 GiB."""
    return 2 << 30
