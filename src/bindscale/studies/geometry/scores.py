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
  dependent as its dependent). PolarProbe's code labels and directs each edge of the predicted tree
  the same way (nearest centroid by ``1 − |cos|``, direction by the sign of the cosine).
- ``luas``: as ``las`` without the direction (pair and relation right).
- ``uas``: share of gold edges found with the right pair and direction, relation free (PolarProbe's
  ``evaluate_las_uuas``: the direction of a predicted edge is the sign of its cosine with the centroid of
  its predicted relation, the relation nearest by absolute cosine, as for ``las``).
- ``spearman``: Hewitt & Manning's distance Spearman — for each word, Spearman's ρ between its row of
  predicted distances and its row of tree distances (all words, diagonal included, as their code);
  averaged over all rows of all sentences of one length, then over lengths 5–50 (NaN without any).
- ``rel_acc``: on gold edges read in their gold direction (``B(h_dep − h_head)``), share whose nearest
  centroid ``+c_r`` is the gold relation; ``dir_acc``: on gold edges, share whose decoded direction
  (nearest of ``±c_r``, relation free) is the gold one. Punctuation edges included (``_pp``-like).
- ``rel_bacc``: balanced relation accuracy, PolarProbe's ``evaluate_ang`` with scikit-learn's
  ``balanced_accuracy_score``: the mean over the gold relations present of the share of their edges
  labelled right as ``rel_acc`` labels them (a gold relation the probe has no centroid for counts with
  recall 0, as the authors' ``mapping.get(rel, -1)`` does).

Where this differs from PolarProbe's code (``pjdisi/PolarProbe``, ``train.py``): their centroids are the
means of the raw edge vectors ``B(h_head − h_dep)`` of up to 5,000 training sentences, ours the
normalised means of the unit vectors ``B(h_dep − h_head)`` of the fit sentences (the opposite sign is the
same rule); they decode with networkx's minimum spanning tree (Kruskal), we with Prim's (the trees differ
only on ties); they drop sentences containing ".com" or "@"; ours keep them.

*Word-pair labeller* (:func:`fit_word_pairs`, :func:`word_pair_metrics`): the baseline a probe's gold-edge relation
accuracy is set against — each gold edge's relation predicted from the two words' identities alone, fit on the
fitting sentences' gold edges and scored on the same test gold edges as ``rel_acc`` / ``rel_bacc``.

``las_pp_by_sentence`` (with ``per_sentence=True``): the per-sentence LAS behind ``las_pp``, so an
interval can take sentences as its units (one pretrained model has no seeds).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.stats import rankdata

from .probe_types import Pair, Probe, gold_edges, tree_distances
from .treebank import Sentence

__all__ = ["mst_edges", "prim_parents", "label_edge", "score", "row_spearman", "hm_spearman", "sentence_counts", "chain_uuas",
           "chain_scores", "chain_label", "balanced_accuracy", "WordPairLabeller", "fit_word_pairs", "word_pair_scores",
           "word_pair_metrics"]

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
#: Most float64 elements of one batch of pairwise differences in :func:`score` (sentences × n × n × k).
_CHUNK = 4_000_000


def mst_edges(dist: np.ndarray, keep: Sequence[int] | None = None) -> set[tuple[int, int]]:
    """Edges ``(i, j)``, ``i < j``, of a minimum spanning tree of ``dist`` ``(n, n)`` over the words ``keep`` (all by default).

    Prim's algorithm (Prim 1957, "Shortest connection networks and some generalizations"), as
    Hewitt & Manning's code decodes (:func:`prim_parents`, here on one graph). Ties go to the lowest
    word index. Zero distances are ordinary edges. The tests check it against scipy and networkx.
    """
    idx = np.arange(dist.shape[0]) if keep is None else np.asarray(list(keep), dtype=int)
    if idx.size < 2:
        return set()
    parent = prim_parents(np.asarray(dist, dtype=np.float64)[np.ix_(idx, idx)][None])[0]
    return {(int(min(idx[p], idx[j])), int(max(idx[p], idx[j]))) for j, p in enumerate(parent) if p >= 0}


def prim_parents(dist: np.ndarray) -> np.ndarray:
    """Minimum spanning trees of ``c`` graphs of ``m`` nodes at once: ``dist`` ``(c, m, m)`` → parents ``(c, m)``.

    Prim's algorithm grown from node 0, vectorised over the graphs (one numpy step per added node, for
    all ``c`` graphs together: far quicker than :func:`scipy.sparse.csgraph.minimum_spanning_tree` for
    sentence-sized graphs). ``parent[g, j]`` is the node that ``j`` joined the tree through (−1 for node 0):
    the tree's edges are ``{j, parent[g, j]}``. Each step adds the cheapest outside node (ties: the
    lowest index); a node's parent changes only for a strictly cheaper connection. ``dist`` is read as
    undirected (``min(dist, dist.T)``).
    """
    d = np.asarray(dist, dtype=np.float64)
    d = np.minimum(d, d.transpose(0, 2, 1))
    c, m, _ = d.shape
    rows = np.arange(c)
    in_tree = np.zeros((c, m), bool)
    in_tree[:, 0] = True
    best = d[:, 0].copy()  # cheapest connection of each node to the tree
    parent = np.zeros((c, m), int)
    for _ in range(m - 1):
        j = np.argmin(np.where(in_tree, np.inf, best), axis=1)
        in_tree[rows, j] = True
        dj = d[rows, j]
        closer = ~in_tree & (dj < best)
        best = np.where(closer, dj, best)
        parent = np.where(closer, j[:, None], parent)
    parent[:, 0] = -1
    return parent


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


def balanced_accuracy(gold: Sequence, pred: Sequence) -> float:
    """Mean over the classes present in ``gold`` of the share of their items predicted right (scikit-learn's
    ``balanced_accuracy_score`` without its adjustment); NaN when ``gold`` is empty."""
    gold, pred = np.asarray(gold, dtype=object), np.asarray(pred, dtype=object)
    if gold.size == 0:
        return float("nan")
    return float(np.mean([np.mean(pred[gold == c] == c) for c in dict.fromkeys(gold.tolist())]))


def score(probe: Probe, pairs: Sequence[Pair], per_sentence: bool = False) -> dict[str, float]:
    """Every metric of the module docstring for one probe on ``(activations, sentence)`` pairs.

    Vectorised over the corpus: one projection of all words, the relation and direction of every gold
    edge from one product with the centroids, and the distance Spearman ranked once per sentence
    length; only the spanning trees are decoded sentence by sentence. Gives what
    :func:`sentence_counts` and :func:`label_edge` give edge by edge (the tests check it).

    Returns:
        ``uuas_hm, las_hm, luas_hm, uuas_pp, las_pp, luas_pp, spearman, rel_acc, dir_acc`` (shares in
        [0, 1]; NaN where nothing could be counted) and ``n_sentences``.
    """
    nan = float("nan")
    out: dict[str, float] = {}
    if not pairs:
        return {f"{k}_{c}": nan for c in ("hm", "pp") for k in ("uuas", "uas", "luas", "las")} | {
            "spearman": nan, "rel_acc": nan, "rel_bacc": nan, "dir_acc": nan, "n_sentences": 0} | (
            {"las_pp_by_sentence": []} if per_sentence else {})
    lengths = np.array([len(s) for _, s in pairs])
    starts = np.concatenate([[0], np.cumsum(lengths)])
    P_all = probe.project(np.concatenate([np.asarray(a) for a, _ in pairs]))
    # every gold edge of the corpus: global dependent and head rows, gold relation, sentence
    dep, head, rel, sent = [], [], [], []
    for n, (_, s) in enumerate(pairs):
        for d, h, r in gold_edges(s):
            dep.append(starts[n] + d), head.append(starts[n] + h), rel.append(r), sent.append(n)
    dep, head, sent = np.array(dep, int), np.array(head, int), np.array(sent, int)
    V = P_all[dep] - P_all[head]  # (E, k): B(h_dep − h_head)
    nv = np.linalg.norm(V, axis=1)
    labelled = (nv > 0) & bool(probe.relations)
    rels = np.array(list(probe.relations) + [""], dtype=object)
    if probe.relations:
        S = (V / np.where(nv > 0, nv, 1.0)[:, None]) @ np.asarray(probe.centroids).T  # (E, R)
        r_abs = np.argmax(np.abs(S), axis=1)
        forward = S[np.arange(len(S)), r_abs] > 0
        nearest = np.argmax(S, axis=1)
    else:
        r_abs = nearest = np.zeros(len(V), int)
        forward = np.zeros(len(V), bool)
    gold_rel = np.array(rel, dtype=object)
    pred_rel = np.where(labelled, rels[r_abs], "")  # label_edge: no relation for a zero vector
    rel_right = pred_rel == gold_rel
    dir_right = np.where(labelled, forward, True)  # label_edge keeps (i, j) for a zero vector
    punct_word = np.array([u == PUNCT for _, s in pairs for u in s.upos], bool)
    hm_edge = ~punct_word[dep] & ~punct_word[head]

    # predicted distances (as Probe.distances), computed for the sentences of one length together
    dists: list[np.ndarray] = [np.empty(0)] * len(pairs)
    rows: dict[int, list[np.ndarray]] = {}
    k = P_all.shape[1]
    for length in sorted(set(lengths.tolist())):
        same = np.flatnonzero(lengths == length)
        per_chunk = max(1, _CHUNK // max(length * length * k, 1))
        rhos = []
        for c0 in range(0, len(same), per_chunk):
            chunk = same[c0:c0 + per_chunk]
            Pg = np.stack([P_all[starts[n]:starts[n + 1]] for n in chunk])  # (c, n, k)
            diff = Pg[:, :, None, :] - Pg[:, None, :, :]
            Dg = np.round((diff * diff).sum(-1), 9)
            gold = np.concatenate([tree_distances(pairs[n][1].heads) for n in chunk])
            rhos.append(row_spearman(Dg.reshape(-1, length), gold))
            for n, D in zip(chunk, Dg):
                dists[n] = D
        rows[length] = [np.concatenate(rhos)]
    # the predicted trees, both conventions: per word its parent in the tree (global rows; −1: none)
    is_punct = [[u == PUNCT for u in s.upos] for _, s in pairs]
    keeps = {"pp": [np.arange(len(s)) for _, s in pairs],
             "hm": [np.flatnonzero(~np.array(p, bool)) for p in is_punct]}
    hit = {}
    for conv, keep in keeps.items():
        parent = np.full(len(P_all), -1)
        sizes = np.array([len(kp) for kp in keep])
        for m in sorted(set(sizes.tolist()) - {0, 1}):
            group = np.flatnonzero(sizes == m)
            local = prim_parents(np.stack([dists[n][np.ix_(keep[n], keep[n])] for n in group]))
            for n, par in zip(group, local):
                kp = keep[n]
                parent[starts[n] + kp[1:]] = starts[n] + kp[par[1:]]
        hit[conv] = (parent[dep] == head) | (parent[head] == dep)

    n_sent = len(pairs)
    count = (lambda w: np.bincount(sent, weights=w.astype(float), minlength=n_sent))
    # Hewitt & Manning: corpus level, edges between two non-punctuation words
    h = hit["hm"] & hm_edge
    tot = {"gold": int(hm_edge.sum()), "uuas": int(h.sum()), "luas": int((h & rel_right).sum()),
           "las": int((h & rel_right & dir_right).sum()), "uas": int((h & dir_right).sum())}
    # PolarProbe: per sentence, every edge; sentences without an edge are skipped
    h = hit["pp"]
    gold_n = count(np.ones(len(h), bool))
    has = gold_n > 0
    per = {"uuas": count(h)[has] / gold_n[has], "luas": count(h & rel_right)[has] / gold_n[has],
           "las": count(h & rel_right & dir_right)[has] / gold_n[has], "uas": count(h & dir_right)[has] / gold_n[has]}
    out = {f"{k}_hm": (tot[k] / tot["gold"] if tot["gold"] else nan) for k in ("uuas", "uas", "luas", "las")}
    out |= {f"{k}_pp": (float(np.mean(v)) if len(v) else nan) for k, v in per.items()}
    out["spearman"] = hm_spearman(rows)
    n_edges = len(V)
    out["rel_acc"] = int((labelled & (rels[nearest] == gold_rel)).sum()) / n_edges if n_edges else nan
    out["rel_bacc"] = balanced_accuracy(gold_rel, np.where(labelled, rels[nearest], ""))
    out["dir_acc"] = int(dir_right.sum()) / n_edges if n_edges else nan
    out["n_sentences"] = len(pairs)
    if per_sentence:
        out["las_pp_by_sentence"] = [float(v) for v in per["las"]]
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


def chain_label(fit: Sequence[Sentence]) -> str:
    """The relation the labelled linear chain gives every edge: the commonest relation of gold edges whose head is
    the word right after their dependent, in the fit sentences ("" when there is none)."""
    counts: dict[str, int] = {}
    for s in fit:
        for d, h, r in gold_edges(s):
            if h == d + 1:
                counts[r] = counts.get(r, 0) + 1
    return max(sorted(counts), key=counts.get) if counts else ""


def chain_scores(sentences: Sequence[Sentence], label: str = "", per_sentence: bool = False) -> dict:
    """The linear-chain baseline beside every UUAS, UAS and LAS: each word's head is the next word (the last
    word is the root), every edge labelled ``label`` (:func:`chain_label` of the fit sentences).

    Keys ``uuas_hm``, ``uas_hm``, ``las_hm`` (corpus level, punctuation skipped: the chain joins the kept
    words, as :func:`chain_uuas`) and ``uuas_pp``, ``uas_pp``, ``las_pp`` (per sentence, punctuation
    included); with ``per_sentence`` also ``las_pp_by_sentence``. A gold edge is found by the chain when its
    two words are neighbours (among the kept words); its direction is right when the head is the right one
    of the two; its label when it is also ``label``.
    """
    tot = {"gold": 0, "uuas": 0, "uas": 0, "las": 0}
    per: dict[str, list[float]] = {"uuas": [], "uas": [], "las": []}
    for s in sentences:
        for punct in (False, True):
            keep = [i for i in range(len(s)) if punct or s.upos[i] != PUNCT]
            rank = {w: n for n, w in enumerate(keep)}
            gold = [(d, h, r) for d, h, r in gold_edges(s) if d in rank and h in rank]
            if len(keep) < 2 or not gold:
                continue
            adj = [abs(rank[d] - rank[h]) == 1 for d, h, _ in gold]
            right = [a and rank[h] == rank[d] + 1 for a, (d, h, _) in zip(adj, gold)]
            lab = [ok and r == label for ok, (_, _, r) in zip(right, gold)]
            if punct:
                for k, v in (("uuas", adj), ("uas", right), ("las", lab)):
                    per[k].append(sum(v) / len(gold))
            else:
                tot["gold"] += len(gold)
                tot["uuas"], tot["uas"], tot["las"] = tot["uuas"] + sum(adj), tot["uas"] + sum(right), tot["las"] + sum(lab)
    nan = float("nan")
    out: dict = {f"{k}_hm": tot[k] / tot["gold"] if tot["gold"] else nan for k in ("uuas", "uas", "las")}
    out |= {f"{k}_pp": float(np.mean(v)) if v else nan for k, v in per.items()}
    if per_sentence:
        out["las_pp_by_sentence"] = per["las"]
    return out


def chain_metrics(fit: list[Sentence], test: list[Sentence]) -> dict:
    """The linear-chain baseline on the test sentences (:func:`chain_scores`, labelled with the fit
    sentences' :func:`chain_label`): ``chain_{uuas,uas,las}_{hm,pp}``, ``chain_label`` and
    ``chain_las_pp_by_sentence``."""
    label = chain_label(fit)
    chain = chain_scores(test, label, per_sentence=True)
    out: dict = {f"chain_{k}": v for k, v in chain.items()}
    out["chain_label"] = label
    return out


# ------------------------------------------------------------------------------------ word-pair labeller --

@dataclass(frozen=True)
class WordPairLabeller:
    """Relation labels from the two words' identities alone (the baseline of the relation-coding verdicts).

    A gold edge ``(dependent, head)`` gets, by the first level that knows it (word forms lowercased):

    1. ``pairs``: the commonest relation of the fitting gold edges with the same (head form, dependent form);
    2. ``dependents``: else the commonest relation of the fitting gold edges whose dependent has this form;
    3. ``default``: else the commonest relation of every fitting gold edge ("" when there is none).

    Ties between relations at a level go to the relation commoner over all fitting gold edges, then to the first
    in alphabetical order. It reads the edge in its gold direction, as ``rel_acc`` reads a probe's edge vector
    ``B(h_dep − h_head)``: it knows which word is the head, and nothing else about the sentence (no position, no
    context), so a probe whose labels do not beat it has shown nothing a lexicon of word pairs would not give.
    """

    pairs: dict
    dependents: dict
    default: str

    def label(self, head: str, dependent: str) -> tuple[str, str]:
        """(relation, level): level ``"pair"``, ``"dependent"`` or ``"default"``."""
        h, d = head.lower(), dependent.lower()
        if (h, d) in self.pairs:
            return self.pairs[(h, d)], "pair"
        if d in self.dependents:
            return self.dependents[d], "dependent"
        return self.default, "default"


def fit_word_pairs(fit: Sequence[Sentence]) -> WordPairLabeller:
    """The :class:`WordPairLabeller` of the fitting sentences' gold edges (root excluded, punctuation included)."""
    by_pair: dict[tuple[str, str], dict[str, int]] = {}
    by_dep: dict[str, dict[str, int]] = {}
    total: dict[str, int] = {}
    for s in fit:
        for d, h, r in gold_edges(s):
            hw, dw = s.words[h].lower(), s.words[d].lower()
            for counts in (by_pair.setdefault((hw, dw), {}), by_dep.setdefault(dw, {}), total):
                counts[r] = counts.get(r, 0) + 1

    def commonest(counts: dict[str, int]) -> str:
        return min(counts, key=lambda r: (-counts[r], -total.get(r, 0), r)) if counts else ""

    return WordPairLabeller({k: commonest(v) for k, v in by_pair.items()},
                            {k: commonest(v) for k, v in by_dep.items()}, commonest(total))


def word_pair_scores(labeller: WordPairLabeller, test: Sequence[Sentence]) -> dict[str, float]:
    """The labeller on every gold edge of ``test`` (root excluded, punctuation included: the edges ``rel_acc`` and
    ``rel_bacc`` of :func:`score` count): ``rel_acc`` (share right), ``rel_bacc`` (:func:`balanced_accuracy`), and
    the shares of edges labelled at the ``pair`` and ``dependent`` levels (the rest by the default). NaN without
    an edge."""
    gold, pred, levels = [], [], []
    for s in test:
        for d, h, r in gold_edges(s):
            rel, level = labeller.label(s.words[h], s.words[d])
            gold.append(r), pred.append(rel), levels.append(level)
    n = len(gold)
    nan = float("nan")
    if not n:
        return {"rel_acc": nan, "rel_bacc": nan, "pair_share": nan, "dependent_share": nan}
    return {"rel_acc": sum(g == p for g, p in zip(gold, pred)) / n, "rel_bacc": balanced_accuracy(gold, pred),
            "pair_share": levels.count("pair") / n, "dependent_share": levels.count("dependent") / n}


def word_pair_metrics(fit: Sequence[Sentence], test: Sequence[Sentence]) -> dict[str, float]:
    """The word-pair labeller fit on ``fit`` and scored on ``test`` (:func:`word_pair_scores`) as record columns
    ``wordpair_rel_acc``, ``wordpair_rel_bacc``, ``wordpair_pair_share``, ``wordpair_dependent_share``."""
    return {f"wordpair_{k}": v for k, v in word_pair_scores(fit_word_pairs(fit), test).items()}
