"""Decoding trees from a probe and scoring them: UUAS, LAS, distance Spearman, relation and direction accuracy.

Decoding (Hewitt & Manning 2019, "A structural probe for finding syntax in word representations";
Diego-Simón et al. 2024, "A polar coordinate system represents syntax in large language models"):

- *Unlabeled tree*: the minimum spanning tree of the probe's predicted squared distances
  (Prim's algorithm, :func:`mst_edges`).
- *Relation and direction* of an edge ``{i, j}``: the unit vector ``u = B(h_i − h_j)/‖·‖`` is matched
  to the nearest of ``±c_r`` (largest ``|u·c_r|``, centroids from :func:`.probes.relation_centroids`):
  relation ``r``; ``i`` is the dependent when ``u·c_r > 0``, else ``j``.

Metrics, each under two conventions (suffix ``_hm`` and ``_pp``):

- ``_hm`` — Hewitt & Manning's: corpus level (correct edges summed over all sentences ÷ gold edges
  summed), punctuation excluded: the spanning tree is taken over the non-punctuation words only and
  the gold edges are the tree's edges between two non-punctuation words (their code runs Prim's
  algorithm skipping punctuation on both the gold and the predicted distances; with punctuation
  as leaves, as in UD, that is the same edge set). Sentences with fewer than two non-punctuation
  words are skipped.
  *Which words are punctuation differs from their code*: bindscale drops words whose UPOS is
  ``PUNCT``; Hewitt & Manning's code drops words whose PTB xpos is one of :data:`HM_PUNCT_XPOS`
  (``'' , . : `` -LRB- -RRB-``). On the synthetic grammar (punctuation is only "," and ".", no
  xpos) the two pick the same words; on UD treebanks they differ, e.g. hyphens (xpos ``HYPH``) and
  ``NFP`` tokens are UPOS ``PUNCT`` (dropped here, kept by Hewitt & Manning) and ``$`` / ``#`` are
  xpos ``$`` / ``#`` (kept by both). :data:`PUNCT_CONVENTION` says so in the verdict details.
- ``_pp`` — PolarProbe's evaluation: per sentence (correct ÷ the sentence's gold edges), punctuation
  included, averaged over sentences.

- ``uuas``: share of gold (undirected) edges in the predicted tree.
- ``las``: share of gold edges ``(dependent, head, relation)`` found with the right pair, relation and
  direction (the predicted tree's edge ``{dep, head}`` labelled with the gold relation and the gold
  dependent as its dependent).
- ``luas``: as ``las`` without the direction (pair and relation right).
- ``spearman``: Hewitt & Manning's distance Spearman — for each word, Spearman's ρ between its row of
  predicted distances and its row of tree distances (all words, diagonal included, as their code);
  averaged over all rows of all sentences of one length, then over lengths 5–50 (NaN without any).
- ``rel_acc``: on gold edges read in their gold direction (``B(h_dep − h_head)``), share whose nearest
  centroid ``+c_r`` is the gold relation; ``dir_acc``: on gold edges, share whose decoded direction
  (nearest of ``±c_r``, relation free) is the gold one. Punctuation edges included (``_pp``-like).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy.stats import rankdata

from .probes import Pair, Probe, gold_edges, tree_distances
from .treebank import Sentence

__all__ = ["mst_edges", "label_edge", "score", "row_spearman", "hm_spearman", "sentence_counts", "chain_uuas"]

PUNCT = "PUNCT"
#: The PTB xpos tags Hewitt & Manning's code (structural-probes, ``reporter.py``) leaves out of the trees.
HM_PUNCT_XPOS = ("''", ",", ".", ":", "``", "-LRB-", "-RRB-")
#: The punctuation convention in words, for the report (where it differs from the source's code).
PUNCT_CONVENTION = (
    "Hewitt & Manning convention (_hm) here: punctuation = words whose UPOS is PUNCT. Hewitt & Manning's code "
    "instead drops words whose PTB xpos is one of " + " ".join(HM_PUNCT_XPOS) + ". Same words on the synthetic "
    "grammar (punctuation is only ',' and '.'); on UD treebanks they differ (e.g. HYPH and NFP tokens are UPOS "
    "PUNCT, dropped here and kept by Hewitt & Manning). PolarProbe's convention (_pp) keeps all punctuation.")
#: Sentence lengths over which Hewitt & Manning average the distance Spearman.
SPEARMAN_LENGTHS = (5, 50)


def mst_edges(dist: np.ndarray, keep: Sequence[int] | None = None) -> set[tuple[int, int]]:
    """Edges ``(i, j)``, ``i < j``, of a minimum spanning tree of ``dist`` ``(n, n)`` over the words ``keep`` (all by default).

    Prim's algorithm (Prim 1957, "Shortest connection networks and some generalizations"), as
    Hewitt & Manning's code decodes, vectorised over the candidate words: O(n²), far quicker than
    :func:`scipy.sparse.csgraph.minimum_spanning_tree`'s validation for sentence-sized graphs (the
    tests check it against scipy and networkx). Ties go to the lowest word index. Zero distances are
    ordinary edges.
    """
    idx = np.arange(dist.shape[0]) if keep is None else np.asarray(list(keep), dtype=int)
    m = idx.size
    if m < 2:
        return set()
    sub = np.asarray(dist, dtype=np.float64)[np.ix_(idx, idx)]
    sub = np.minimum(sub, sub.T)  # an undirected graph
    in_tree = np.zeros(m, bool)
    in_tree[0] = True
    best = sub[0].copy()  # cheapest connection of each word to the tree
    parent = np.zeros(m, int)
    edges = set()
    for _ in range(m - 1):
        cand = np.where(in_tree, np.inf, best)
        j = int(np.argmin(cand))
        a, b = int(idx[parent[j]]), int(idx[j])
        edges.add((min(a, b), max(a, b)))
        in_tree[j] = True
        closer = ~in_tree & (sub[j] < best)
        best[closer] = sub[j][closer]
        parent[closer] = j
    return edges


def label_edge(p: np.ndarray, i: int, j: int, relations: list[str], centroids: np.ndarray) -> tuple[str, int, int]:
    """Relation, dependent and head of the edge ``{i, j}`` from probe coordinates ``p`` ``(n, k)`` (see the module docstring)."""
    v = p[i] - p[j]
    nv = np.linalg.norm(v)
    if nv == 0 or not relations:
        return "", i, j
    s = centroids @ (v / nv)  # (R,)
    r = int(np.argmax(np.abs(s)))
    return (relations[r], i, j) if s[r] > 0 else (relations[r], j, i)


def row_spearman(pred: np.ndarray, gold: np.ndarray) -> np.ndarray:
    """Spearman's ρ of each row pair of two ``(n, m)`` arrays (ties: average ranks), ``(n,)``; NaN for a constant row.

    Equals :func:`scipy.stats.spearmanr` row by row (the Pearson correlation of the ranks).
    """
    rp, rg = rankdata(pred, axis=1), rankdata(gold, axis=1)
    rp -= rp.mean(1, keepdims=True)
    rg -= rg.mean(1, keepdims=True)
    with np.errstate(all="ignore"):
        return (rp * rg).sum(1) / np.sqrt((rp * rp).sum(1) * (rg * rg).sum(1))


def hm_spearman(by_length: dict[int, list[np.ndarray]]) -> float:
    """Hewitt & Manning's average: per length the mean of all rows' ρ, then the mean over lengths 5–50."""
    lo, hi = SPEARMAN_LENGTHS
    means = [float(np.nanmean(np.concatenate(v))) for n, v in by_length.items()
             if lo <= n <= hi and np.isfinite(np.concatenate(v)).any()]
    return float(np.mean(means)) if means else float("nan")


def sentence_counts(probe: Probe, acts: np.ndarray, s: Sentence, punct: bool,
                    dist: np.ndarray | None = None, p: np.ndarray | None = None) -> dict[str, int]:
    """Gold edges and correct ``uuas`` / ``luas`` / ``las`` edges of one sentence; ``punct=False`` drops
    punctuation words. ``dist`` and ``p`` (the probe's distances and projection of ``acts``) are computed
    when not given."""
    keep = [i for i in range(len(s)) if punct or s.upos[i] != PUNCT]
    kept = set(keep)
    gold = [(d, h, r) for d, h, r in gold_edges(s) if d in kept and h in kept]
    out = {"gold": len(gold), "uuas": 0, "luas": 0, "las": 0}
    if len(keep) < 2 or not gold:
        return out
    pred = mst_edges(probe.distances(acts) if dist is None else dist, keep)
    p = probe.project(acts) if p is None else p
    for d, h, r in gold:
        if (min(d, h), max(d, h)) not in pred:
            continue
        out["uuas"] += 1
        rel, dep, _ = label_edge(p, d, h, probe.relations, probe.centroids)
        out["luas"] += rel == r
        out["las"] += rel == r and dep == d
    return out


def score(probe: Probe, pairs: Sequence[Pair]) -> dict[str, float]:
    """Every metric of the module docstring for one probe on ``(activations, sentence)`` pairs.

    Returns:
        ``uuas_hm, las_hm, luas_hm, uuas_pp, las_pp, luas_pp, spearman, rel_acc, dir_acc`` (shares in
        [0, 1]; NaN where nothing could be counted) and ``n_sentences``.
    """
    tot = {"gold": 0, "uuas": 0, "luas": 0, "las": 0}
    per: dict[str, list[float]] = {"uuas": [], "luas": [], "las": []}
    rows: dict[int, list[np.ndarray]] = {}
    rel_ok = dir_ok = n_edges = 0
    for acts, s in pairs:
        p = probe.project(acts)
        dist = probe.distances(acts)
        hm = sentence_counts(probe, acts, s, punct=False, dist=dist, p=p)
        for k in tot:
            tot[k] += hm[k]
        pp = sentence_counts(probe, acts, s, punct=True, dist=dist, p=p)
        if pp["gold"]:
            for k in per:
                per[k].append(pp[k] / pp["gold"])
        rows.setdefault(len(s), []).append(row_spearman(dist, tree_distances(s.heads)))
        for d, h, r in gold_edges(s):
            v = p[d] - p[h]
            nv = np.linalg.norm(v)
            if nv > 0 and probe.relations:
                rel_ok += probe.relations[int(np.argmax(probe.centroids @ (v / nv)))] == r
            dir_ok += label_edge(p, d, h, probe.relations, probe.centroids)[1] == d
            n_edges += 1
    nan = float("nan")
    out = {f"{k}_hm": (tot[k] / tot["gold"] if tot["gold"] else nan) for k in ("uuas", "luas", "las")}
    out |= {f"{k}_pp": (float(np.mean(v)) if v else nan) for k, v in per.items()}
    out["spearman"] = hm_spearman(rows)
    out["rel_acc"] = rel_ok / n_edges if n_edges else nan
    out["dir_acc"] = dir_ok / n_edges if n_edges else nan
    out["n_sentences"] = len(pairs)
    return out


def chain_uuas(sentences: Sequence[Sentence]) -> dict[str, float]:
    """UUAS of the linear-chain baseline (each word attached to its neighbour; Hewitt & Manning 2019's
    right-branching baseline, "LINEAR"), under both conventions: ``uuas_hm``, ``uuas_pp``.

    The chain is the minimum spanning tree of ``|i − j|`` over the kept words, so punctuation is
    skipped (its neighbours join) in Hewitt & Manning's convention.
    """
    gold_tot = hit_tot = 0
    per = []
    for s in sentences:
        pos = np.arange(len(s), dtype=float)
        dist = np.abs(pos[:, None] - pos[None, :])
        for punct in (False, True):
            keep = [i for i in range(len(s)) if punct or s.upos[i] != PUNCT]
            kept = set(keep)
            gold = [(min(d, h), max(d, h)) for d, h, _ in gold_edges(s) if d in kept and h in kept]
            if len(keep) < 2 or not gold:
                continue
            hits = len(set(gold) & mst_edges(dist, keep))
            if punct:
                per.append(hits / len(gold))
            else:
                gold_tot, hit_tot = gold_tot + len(gold), hit_tot + hits
    nan = float("nan")
    return {"uuas_hm": hit_tot / gold_tot if gold_tot else nan, "uuas_pp": float(np.mean(per)) if per else nan}
