"""Probe every layer of one activation source and pick each probe's best layer on dev data.

This is the entry point for any model: give it, per layer, the ``(activations (n_words, d), Sentence)``
pairs of the fit, dev and test sentences; it fits the structural, polar and identity probes
(:mod:`.probes`), scores them on dev and test (:mod:`.scores`), and reports per probe the layer with
the best dev score. Where a probe is fit with both estimators (raw and whitened inputs, ``probe.inputs: dev``),
:func:`choose` picks the estimator with the layer, on dev scores only. Layers are names (``"0"`` = input
embeddings, ``"1"`` … in the synthetic study).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from .probe_types import Pair, Probe, gold_edges
from .probes import KINDS, ProbeSettings, fit_probe
from .scores import score

#: The metrics stored per (probe, layer, split), in the order of the trial's ``probe_layers`` table.
METRICS = ("uuas_hm", "las_hm", "luas_hm", "uuas_pp", "las_pp", "luas_pp", "spearman", "rel_acc", "dir_acc",
           "uas_hm", "uas_pp", "rel_bacc")
#: Scalar metrics recorded per probe kind (a subset of :data:`METRICS`); here, beside them, so that both
#: trainers (:mod:`.trial`, :mod:`.lmtrial`) take them from below instead of from each other.
SCALARS = ("uuas_hm", "las_hm", "uuas_pp", "las_pp", "spearman", "rel_acc", "dir_acc", "uas_hm", "uas_pp", "rel_bacc")
#: The ``probe_layers`` model name of the trained model's probes fit as the sources fit them (raw vectors,
#: :class:`.probes.ProbeSettings` ``inputs="scale"``), recorded beside the whitened fit when ``probe.inputs`` is
#: ``dev`` (:func:`table_name`; the untrained twin's is ``untrained_raw``).
RAW_MODEL = "trained_raw"
#: The estimators a probe can be fit with (:data:`.probes.INPUTS`), in the order ties between them go
#: (:func:`choose`): the sources' raw fit first — whitening changes the sources' estimator, so it must read more on
#: dev data to be chosen.
ESTIMATORS = ("scale", "whiten")
#: Dev metric that chooses a probe's layer (PolarProbe's convention: the anchors' numbers use it).
SELECT = "las_pp"


def probe_layers(layers: Mapping[str, tuple[Sequence[Pair], Sequence[Pair], Sequence[Pair]]],
                 kinds: Sequence[str] = KINDS, settings: ProbeSettings = ProbeSettings(), seed: int = 0,
                 on_layer: Callable[[str], None] | None = None) -> tuple[dict, dict[tuple[str, str], Probe]]:
    """Fit and score every probe kind on every layer.

    Args:
        layers: layer name → (fit, dev, test) pairs.
        kinds: probe kinds (:data:`.probes.KINDS`).
        settings: probe fitting settings.
        seed: the probes' initialisation and batch order (the same for every layer).
        on_layer: called with each layer's name once it is done (progress).

    Returns:
        ``table[kind][layer][split]`` = list of :data:`METRICS` values (split ``dev`` / ``test``), and
        the fitted probes by ``(kind, layer)``.
    """
    table: dict = {}
    probes: dict[tuple[str, str], Probe] = {}
    for layer, (fit, dev, test) in layers.items():
        for kind in kinds:
            probe = fit_probe(kind, fit, dev, settings, seed)
            probes[(kind, layer)] = probe
            scored = {split: score(probe, pairs) for split, pairs in (("dev", dev), ("test", test))}
            table.setdefault(kind, {})[layer] = {split: [sc[m] for m in METRICS] for split, sc in scored.items()}
        if on_layer:
            on_layer(layer)
    return table, probes


def best_layer(table: Mapping, kind: str, select: str = SELECT) -> str | None:
    """The layer whose dev ``select`` score is highest for probe ``kind`` (first on ties; None when all NaN)."""
    k = METRICS.index(select)
    best, where = -math.inf, None
    for layer, splits in table.get(kind, {}).items():
        v = splits["dev"][k]
        if v is not None and math.isfinite(v) and v > best:
            best, where = v, layer
    return where


#: The input-embedding layer's name (word-type vectors, no context): left out where a probe's layer is chosen
#: among the contextual layers (:func:`contextual_best_layer`).
INPUT_LAYER = "0"


def contextual_best_layer(table: Mapping, kind: str, select: str = SELECT) -> str | None:
    """:func:`best_layer` among the layers other than :data:`INPUT_LAYER` (the verdicts' choice)."""
    return best_layer({kind: {k: v for k, v in table.get(kind, {}).items() if str(k) != INPUT_LAYER}}, kind, select)


def estimators(inputs: str) -> tuple[str, ...]:
    """The estimators a trial fits for ``probe.inputs``: both (whitened first, the table named after the model) for
    ``dev``, else the one it names."""
    return ("whiten", "scale") if inputs == "dev" else (inputs,)


def table_name(model: str, estimator: str, fitted: Sequence[str]) -> str:
    """The ``probe_layers`` model name of ``model``'s (``trained`` / ``untrained``) fit with ``estimator`` among the
    estimators ``fitted`` (:func:`estimators`): the first fitted keeps the model's name, the raw fit beside it is
    ``{model}_raw``."""
    return model if estimator == fitted[0] else f"{model}_raw"


def estimator_tables(table: Mapping, model: str, inputs: str | None) -> dict[str, Mapping]:
    """Estimator → ``model``'s per-kind, per-layer table in a trial's ``probe_layers`` (read back from a record):
    ``model`` is the fit with ``probe.inputs`` (raw for ``scale``, whitened for ``whiten`` and ``dev``), and
    ``{model}_raw`` the raw fit beside it. Missing tables are left out."""
    own = "scale" if inputs == "scale" else "whiten"
    out = {}
    if table.get(model):
        out[own] = table[model]
    if own != "scale" and table.get(f"{model}_raw"):
        out["scale"] = table[f"{model}_raw"]
    return out


def choose(tables: Mapping[str, Mapping], kind: str, select: str = SELECT, contextual: bool = False,
           layer: str | None = None) -> tuple[str | None, str | None]:
    """The estimator and layer of probe ``kind`` with the highest *dev* ``select`` score over every estimator's
    table (``tables``: estimator → ``table[kind][layer][split]``); a test score is never read. ``contextual``: layer
    :data:`INPUT_LAYER` left out (the verdicts' choice); ``layer``: that layer only (the estimator alone chosen).
    Ties go to the estimator first in :data:`ESTIMATORS` (the raw fit), then to the first layer in table order.
    ``(None, None)`` when no dev score is finite.

    Fixed before any test number is read, the rule is: one model (trained, or its untrained twin), one probe kind,
    the pair (estimator, layer) with the best dev LAS in PolarProbe's convention — the layer chosen as
    :func:`best_layer` chooses it, the estimator beside it.
    """
    k = METRICS.index(select)
    best, where = -math.inf, (None, None)
    order = sorted(tables, key=lambda e: ESTIMATORS.index(e) if e in ESTIMATORS else len(ESTIMATORS))
    for est in order:
        for at, splits in (tables[est] or {}).get(kind, {}).items():
            if (contextual and str(at) == INPUT_LAYER) or (layer is not None and str(at) != str(layer)):
                continue
            v = splits["dev"][k]
            if v is not None and math.isfinite(v) and v > best:
                best, where = v, (est, at)
    return where


def las_by_sentence(tables: Mapping[str, Mapping], probes: Mapping[str, Mapping], pairs_at: Callable[[str], tuple],
                    prefix: str = "") -> dict:
    """Per test sentence, the LAS (PolarProbe's convention) of the polar and structural probes at their chosen
    estimator and contextual layer (:func:`choose`): ``{prefix}{kind}_las_pp_by_sentence`` (lists aligned with the
    chain's ``chain_las_pp_by_sentence``: the test sentences with a gold edge, in order). ``tables`` and ``probes``
    by estimator; ``probes[estimator]`` is keyed by ``(kind, layer)`` with the layer as the table names it or as an
    int; ``pairs_at(layer)`` → (fit, dev, test)."""
    out = {}
    for kind in ("polar", "structural"):
        est, at = choose(tables, kind, contextual=True)
        fitted = probes.get(est, {}) if est is not None else {}
        probe = None if at is None else fitted.get((kind, at), fitted.get((kind, int(at)) if at.isdigit() else None))
        out[f"{prefix}{kind}_las_pp_by_sentence"] = (
            score(probe, pairs_at(at)[2], per_sentence=True)["las_pp_by_sentence"] if probe is not None else [])
    return out


def relation_confusion(probe: Probe, pairs: Sequence[Pair]) -> dict[str, dict[str, int]]:
    """Counts of (gold relation → predicted relation) over gold edges read in their gold direction."""
    out: dict[str, dict[str, int]] = {}
    for acts, s in pairs:
        p = probe.project(acts)
        for d, h, r in gold_edges(s):
            v = p[d] - p[h]
            nv = np.linalg.norm(v)
            pred = probe.relations[int(np.argmax(probe.centroids @ (v / nv)))] if nv > 0 and probe.relations else "?"
            out.setdefault(r, {})
            out[r][pred] = out[r].get(pred, 0) + 1
    return out


def polar_picture(probe: Probe, fit: Sequence[Pair], test: Sequence[Pair], n_edges: int,
                  rng: np.random.Generator) -> dict[str, list]:
    """Up to ``n_edges`` test edges as ``[relation, angle (radians), squared length]`` for the polar picture.

    Each gold edge vector ``B(h_dep − h_head)`` is placed in the plane of the first two principal axes of
    the fit sentences' edge vectors (uncentred: direction matters); its angle there is
    ``atan2(y, x)``; its squared length is the full-space ``‖B(h_dep − h_head)‖²`` (the predicted tree
    distance of an edge, ideally 1).
    """
    def edges(pairs):
        rows = []
        for acts, s in pairs:
            p = probe.project(acts)
            rows += [(r, p[d] - p[h]) for d, h, r in gold_edges(s)]
        return rows

    train = edges(fit)
    if not train or n_edges == 0:
        return {}
    V = np.stack([v for _, v in train])
    _, _, vt = np.linalg.svd(V, full_matrices=False)
    axes = vt[:2] if vt.shape[0] >= 2 else np.vstack([vt, np.zeros_like(vt)])
    test_edges = edges(test)
    pick = rng.choice(len(test_edges), size=min(n_edges, len(test_edges)), replace=False) if test_edges else []
    out = {}
    for n, i in enumerate(sorted(int(i) for i in pick)):
        r, v = test_edges[i]
        xy = axes @ v
        out[str(n)] = [r, float(math.atan2(xy[1], xy[0])), float(v @ v)]
    return out
