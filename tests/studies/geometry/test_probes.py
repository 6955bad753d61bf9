"""Probes, decoding and metrics of the geometry study on planted geometries and a hand-labelled treebank."""

import numpy as np
import pytest
import torch
from scipy.stats import spearmanr

from bindscale.studies.geometry.grammar import GrammarConfig, make_splits
from bindscale.studies.geometry.probes import (
    Probe,
    ProbeSettings,
    fit_probe,
    fit_probe_cached,
    probe_key,
    tree_distances,
)
from bindscale.studies.geometry.scores import (
    chain_uuas,
    hm_spearman,
    label_edge,
    mst_edges,
    prim_parents,
    row_spearman,
    score,
    sentence_counts,
)
from bindscale.studies.geometry.treebank import read_conllu

HAND = """# sent_id = s1
1\tThe\tthe\tDET\t_\t_\t2\tdet\t_\t_
2\tcat\tcat\tNOUN\t_\t_\t3\tnsubj\t_\t_
3\tsat\tsit\tVERB\t_\t_\t0\troot\t_\t_
4\t.\t.\tPUNCT\t_\t_\t3\tpunct\t_\t_

# sent_id = s2
1\tdogs\tdog\tNOUN\t_\t_\t2\tnsubj\t_\t_
2\trun\trun\tVERB\t_\t_\t0\troot\t_\t_
3\tfast\tfast\tADV\t_\t_\t2\tadvmod\t_\t_
4\t.\t.\tPUNCT\t_\t_\t2\tpunct\t_\t_
"""


def _hand(tmp_path):
    p = tmp_path / "hand.conllu"
    p.write_text(HAND)
    s1, s2 = read_conllu(p)
    # identity probe in 4 dims, one axis per relation: det, nsubj, punct, advmod
    probe = Probe("identity", np.eye(4), 1.0, ["det", "nsubj", "punct", "advmod"], np.eye(4))
    a1 = np.array([[1, 1, 0, 0], [0, 1, 0, 0], [0, 0, 0, 0], [0, 0, 1, 0]], float)  # The cat sat .
    a2 = np.array([[0, -1, 0, 0], [0, 0, 0, 0], [0, 0, 0, 1], [0, 0, 0.5, 1]], float)  # dogs run fast .
    return probe, [(a1, s1), (a2, s2)]


def test_hand_labelled_treebank_scores_under_both_conventions(tmp_path):
    """Worked by hand. s1: the spanning tree is the gold tree and every edge points along its relation
    axis: all right. s2: '.' lies 0.25 from 'fast' and 1.25 from 'run', so the tree takes fast–. instead
    of run–. (PolarProbe convention: 2 of 3 edges; without punctuation 2 of 2); dogs − run = −nsubj axis,
    so nsubj is found but read as run depending on dogs (direction wrong); run–fast is advmod, right.
    Hewitt & Manning (corpus, no punctuation): UUAS 4/4, LUAS 4/4, LAS 3/4. PolarProbe (per sentence,
    punctuation): UUAS (1 + 2/3)/2, LUAS (1 + 2/3)/2, LAS (1 + 1/3)/2. Relation accuracy on the 6 gold
    edges in gold direction: dogs→run scores −1 on nsubj, 0 elsewhere (argmax: det, wrong); '.'→run is
    (0,0,.5,1)/|.|: advmod (wrong): 4/6. Direction: only dogs→run is reversed: 5/6."""
    probe, pairs = _hand(tmp_path)
    sc = score(probe, pairs)
    assert sc["uuas_hm"] == 1.0 and sc["luas_hm"] == 1.0 and sc["las_hm"] == 0.75
    assert sc["uuas_pp"] == pytest.approx(5 / 6) and sc["luas_pp"] == pytest.approx(5 / 6)
    assert sc["las_pp"] == pytest.approx(2 / 3)
    assert sc["rel_acc"] == pytest.approx(4 / 6) and sc["dir_acc"] == pytest.approx(5 / 6)
    assert mst_edges(probe.distances(pairs[1][0])) == {(0, 1), (1, 2), (2, 3)}
    assert mst_edges(probe.distances(pairs[1][0]), keep=[0, 1, 2]) == {(0, 1), (1, 2)}
    assert label_edge(probe.project(pairs[1][0]), 0, 1, probe.relations, probe.centroids) == ("nsubj", 1, 0)
    # linear chain: s1 The–cat–sat–. is its tree; s2 dogs–run–fast–. misses run–. (2/3); without punctuation
    # every gold edge is a chain edge: 4/4
    assert chain_uuas([s for _, s in pairs]) == {"uuas_hm": 1.0, "uuas_pp": pytest.approx(5 / 6)}


def test_mst_matches_networkx_and_scipy_and_keeps_zero_distances():
    import networkx as nx
    from scipy.sparse.csgraph import minimum_spanning_tree

    rng = np.random.default_rng(0)
    for n in (2, 5, 12, 40):
        x = rng.normal(size=(n, 3))
        d = ((x[:, None] - x[None]) ** 2).sum(-1)
        d[0, 1] = d[1, 0] = 0.0  # identical words: a zero distance is still an edge
        g = nx.Graph()
        g.add_weighted_edges_from((i, j, d[i, j]) for i in range(n) for j in range(i + 1, n))
        want = {tuple(sorted(e)) for e in nx.minimum_spanning_tree(g).edges()}
        assert mst_edges(d) == want and len(want) == n - 1
        tree = minimum_spanning_tree(np.triu(d + 1.0, 1)).tocoo()  # +1: scipy reads a 0 as no edge
        assert {(int(min(a, b)), int(max(a, b))) for a, b in zip(tree.row, tree.col)} == want
        keep = [0, 2, 3] if n > 3 else [0, 1]
        sub = {tuple(sorted((keep[a], keep[b]))) for a, b in
               nx.minimum_spanning_tree(nx.from_numpy_array(d[np.ix_(keep, keep)] + 1.0)).edges()}
        assert mst_edges(d, keep) == sub


def _reference_score(probe, pairs):
    """The metrics sentence by sentence and edge by edge (sentence_counts, label_edge), as score computed them
    before it was vectorised."""
    from sklearn.metrics import balanced_accuracy_score

    tot, per, rows, rel_ok, dir_ok, n = {"gold": 0, "uuas": 0, "luas": 0, "las": 0}, {"uuas": [], "luas": [], "las": []}, {}, 0, 0, 0
    uas_hm, uas_pp, gold_rels, pred_rels = [0, 0], [], [], []
    for a, s in pairs:
        p, dist = probe.project(a), probe.distances(a)
        hm = sentence_counts(probe, a, s, punct=False)
        tot = {k: tot[k] + hm[k] for k in tot}
        pp = sentence_counts(probe, a, s, punct=True)
        if pp["gold"]:
            for k in per:
                per[k].append(pp[k] / pp["gold"])
        rows.setdefault(len(s), []).append(row_spearman(dist, tree_distances(s.heads)))
        # UAS edge by edge: a gold edge of the decoded tree whose decoded dependent is the gold one
        for punct in (False, True):
            keep = [i for i in range(len(s)) if punct or s.upos[i] != "PUNCT"]
            gold = [(d, h - 1) for d, h in enumerate(s.heads) if h > 0 and d in keep and h - 1 in keep]
            tree = mst_edges(dist, keep) if len(keep) > 1 else set()
            right = sum((min(d, h), max(d, h)) in tree and label_edge(p, d, h, probe.relations, probe.centroids)[1] == d
                        for d, h in gold)
            if punct and gold:
                uas_pp.append(right / len(gold))
            elif not punct:
                uas_hm[0], uas_hm[1] = uas_hm[0] + right, uas_hm[1] + len(gold)
        for d, h in ((d, h - 1) for d, h in enumerate(s.heads) if h > 0):
            v = p[d] - p[h]
            pred = probe.relations[int(np.argmax(probe.centroids @ (v / np.linalg.norm(v))))]
            rel_ok += pred == s.deprels[d]
            gold_rels.append(s.deprels[d]), pred_rels.append(pred)
            dir_ok += label_edge(p, d, h, probe.relations, probe.centroids)[1] == d
            n += 1
    out = {f"{k}_hm": tot[k] / tot["gold"] for k in ("uuas", "luas", "las")}
    return out | {f"{k}_pp": float(np.mean(v)) for k, v in per.items()} | {
        "spearman": hm_spearman(rows), "rel_acc": rel_ok / n, "dir_acc": dir_ok / n, "n_sentences": len(pairs),
        "uas_hm": uas_hm[0] / uas_hm[1], "uas_pp": float(np.mean(uas_pp)),
        "rel_bacc": balanced_accuracy_score(gold_rels, pred_rels)}


def test_vectorised_score_equals_the_per_sentence_reference(short_splits):
    """score batches the projection, the edge labels, the Spearman ranks and Prim's trees over sentences:
    the same numbers as decoding sentence by sentence, for a noisy random probe (many wrong edges, both
    directions, punctuation words) and a probe whose rank exceeds the width (identity)."""
    rng = np.random.default_rng(3)
    pairs = [(rng.normal(size=(len(s), 10)), s) for s in short_splits["test"]]
    assert any("PUNCT" in s.upos for _, s in pairs)
    for probe in (fit_probe("identity", pairs, []),
                  Probe("polar", rng.normal(size=(4, 10)), 2.0)):
        if probe.centroids is None:
            from bindscale.studies.geometry.probes import relation_centroids
            probe.relations, probe.centroids = relation_centroids(probe, pairs[:20])
        got, want = score(probe, pairs), _reference_score(probe, pairs)
        assert got.keys() == want.keys()
        for k in want:
            assert got[k] == pytest.approx(want[k], rel=1e-12, abs=1e-12), k
    # the batched Prim is the single-graph one, graph by graph
    D = rng.random((5, 7, 7))
    for g, par in enumerate(prim_parents(D)):
        assert {(min(j, p), max(j, p)) for j, p in enumerate(par) if p >= 0} == mst_edges(D[g])


def test_row_spearman_equals_scipy_with_ties():
    rng = np.random.default_rng(1)
    pred = rng.integers(0, 4, size=(6, 9)).astype(float)
    gold = rng.integers(0, 3, size=(6, 9)).astype(float)
    pred[2] = 1.0  # constant row: NaN, as scipy
    ours = row_spearman(pred, gold)
    for r in range(6):
        want = spearmanr(pred[r], gold[r]).statistic
        assert (np.isnan(ours[r]) and np.isnan(want)) or ours[r] == pytest.approx(want)
    # Hewitt & Manning's average: per length over all rows, then over lengths 5..50 only
    assert hm_spearman({4: [np.array([0.0])], 5: [np.array([1.0, 0.5]), np.array([0.0])],
                        7: [np.array([0.9, np.nan])]}) == pytest.approx((0.5 + 0.9) / 2)
    assert np.isnan(hm_spearman({3: [np.array([1.0])]}))


def _planted(sents, with_relations, d=48, seed=0):
    """Planted geometry, rotated into ``d`` dimensions. Word vector = sum over the edges on its path to
    the root of a one-hot per edge slot (the dependent's position), so ‖h_i − h_j‖² is exactly the tree
    distance. ``with_relations``: each edge contributes 0.5 × its slot's one-hot + a one-hot of its
    relation instead, so an edge's direction names its relation (cos ≈ 0.8 to the relation's axis) and
    the sign its direction; adjacent words stay nearest (1.25 vs at least 2.5) as long as no word has
    two dependents of one relation (the angle test draws sentences without adjectives)."""
    from bindscale.studies.geometry.grammar import RELATIONS

    S = 12 + (len(RELATIONS) if with_relations else 0)
    A = np.linalg.qr(np.random.default_rng(seed).normal(size=(d, S)))[0]
    out = []
    for s in sents:
        X = np.zeros((len(s), S))
        for i in range(len(s)):
            j = i
            while s.heads[j] > 0:
                X[i, j] += 0.5 if with_relations else 1.0
                if with_relations:
                    X[i, 12 + RELATIONS.index(s.deprels[j])] += 1.0
                j = s.heads[j] - 1
        out.append((X @ A.T, s))
    return out


@pytest.fixture(scope="module")
def short_splits():
    torch.set_num_threads(1)
    return make_splits(1, 0, 200, 40, 40, GrammarConfig(max_words=12))


SLOW_FIT = ProbeSettings(rank=24, max_epochs=300, patience=8, lr=1e-2)


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["structural", "polar"])
def test_probes_recover_planted_distances(short_splits, kind):
    fit, dev, test = (_planted(short_splits[k], False) for k in ("fit", "dev", "test"))
    probe = fit_probe(kind, fit, dev, SLOW_FIT if kind == "structural" else
                      ProbeSettings(**{**SLOW_FIT.__dict__, "angular_weight": 0.0}), seed=0)
    err = np.mean([np.abs(probe.distances(a) - tree_distances(s.heads)).mean() for a, s in test])
    assert err < 0.1  # squared probe distance ≈ tree distance (units: edges)
    sc = score(probe, test)
    assert sc["uuas_pp"] == 1.0 and sc["uuas_hm"] == 1.0 and sc["spearman"] > 0.9
    ident = score(fit_probe("identity", fit, dev), test)  # distances exact: every tree, ρ = 1
    assert ident["uuas_pp"] == 1.0 and ident["spearman"] == pytest.approx(1.0)


@pytest.mark.slow
def test_polar_probe_recovers_planted_angles():
    splits = make_splits(2, 0, 200, 40, 40, GrammarConfig(max_words=12, p_adj=0.0))
    fit, dev, test = (_planted(splits[k], True) for k in ("fit", "dev", "test"))
    # The angles are planted in the raw coordinates: fit there (inputs 'scale'). Whitened inputs distort them
    # and the fit must undo it: it still labels the trees (measured: relation accuracy 0.988, LAS 0.993, UUAS 1).
    white = score(fit_probe("polar", fit, dev, SLOW_FIT, seed=0), test)
    assert white["uuas_pp"] >= 0.97 and white["rel_acc"] >= 0.95 and white["las_pp"] >= 0.95
    SLOW_FIT_RAW = ProbeSettings(**{**SLOW_FIT.__dict__, "inputs": "scale"})
    polar = fit_probe("polar", fit, dev, SLOW_FIT_RAW, seed=0)
    sc = score(polar, test)
    assert sc["rel_acc"] == 1.0 and sc["dir_acc"] == 1.0 and sc["uuas_pp"] >= 0.97 and sc["las_pp"] >= 0.95
    # same-relation edges are nearly parallel in the polar probe's space, other pairs nearly orthogonal,
    # more so than in the structural probe's (fit on distances alone)
    same, diff = _cosines(polar, test)
    assert same > 0.8 and diff < 0.3
    s_same, s_diff = _cosines(fit_probe("structural", fit, dev, SLOW_FIT_RAW, seed=0), test)
    assert same - diff > s_same - s_diff


def _cosines(probe, pairs):
    """Mean cosine of gold edge vectors B(h_dep − h_head) of one relation, and mean |cos| across relations."""
    vecs, rels = [], []
    for a, s in pairs:
        p = probe.project(a)
        for d in range(len(s)):
            if s.heads[d] > 0:
                v = p[d] - p[s.heads[d] - 1]
                vecs.append(v / np.linalg.norm(v))
                rels.append(s.deprels[d])
    u, rel = np.stack(vecs), np.array(rels)
    c = u @ u.T
    same = rel[:, None] == rel[None, :]
    off = ~np.eye(len(u), dtype=bool)
    return float(c[same & off].mean()), float(np.abs(c[~same]).mean())


def test_fit_probe_rejects_mismatched_activations(short_splits):
    s = short_splits["fit"][0]
    with pytest.raises(ValueError, match=f"train: sentence {s.sent_id} has {len(s)} words"):
        fit_probe("structural", [(np.zeros((len(s) + 1, 4)), s)], [])
    with pytest.raises(ValueError, match="probe kind 'cubic'"):
        fit_probe("cubic", [(np.zeros((len(s), 4)), s)], [])


def test_probe_cache_reads_back_the_same_fit_and_is_invalidated_by_what_matters(short_splits, tmp_path):
    """A cached fit is the fit (bit for bit); its key changes with each input a fit depends on: the kind,
    any setting, the seed, any activation value, the width, a head, a relation, the fit/dev split."""
    import dataclasses

    from bindscale.studies.geometry import probes as P

    rng = np.random.default_rng(5)
    fit = [(rng.normal(size=(len(s), 6)).astype(np.float32), s) for s in short_splits["fit"][:30]]
    dev = [(rng.normal(size=(len(s), 6)).astype(np.float32), s) for s in short_splits["dev"][:10]]
    settings = ProbeSettings(rank=4, max_epochs=3)
    first, cached = fit_probe_cached("polar", fit, dev, settings, 0, tmp_path)
    assert not cached and len(list(tmp_path.glob("polar-*.npz"))) == 1
    again, cached = fit_probe_cached("polar", fit, dev, settings, 0, tmp_path)
    assert cached
    for f in ("kind", "scale", "relations", "epochs", "dev_loss"):
        assert getattr(again, f) == getattr(first, f), f
    assert np.array_equal(again.B, first.B) and np.array_equal(again.centroids, first.centroids)
    assert score(again, dev) == score(first, dev)
    assert fit_probe_cached("polar", fit, dev, settings, 0, None)[1] is False  # no folder: no cache

    key = probe_key("polar", fit, dev, settings, 0)
    a0, s0 = fit[0]
    bumped = a0.copy()
    bumped[0, 0] = np.nextafter(bumped[0, 0], np.float32(np.inf))
    other_head = dataclasses.replace(s0, heads=(s0.heads[1], s0.heads[0]) + s0.heads[2:])
    other_rel = dataclasses.replace(s0, deprels=("xcomp",) + s0.deprels[1:])
    variants = {
        "kind": probe_key("structural", fit, dev, settings, 0),
        "seed": probe_key("polar", fit, dev, settings, 1),
        "rank": probe_key("polar", fit, dev, dataclasses.replace(settings, rank=5), 0),
        "angular_weight": probe_key("polar", fit, dev, dataclasses.replace(settings, angular_weight=0.5), 0),
        "lr": probe_key("polar", fit, dev, dataclasses.replace(settings, lr=0.02), 0),
        "activation": probe_key("polar", [(bumped, s0)] + fit[1:], dev, settings, 0),
        "dtype": probe_key("polar", [(a0.astype(np.float64), s0)] + fit[1:], dev, settings, 0),
        "head": probe_key("polar", [(a0, other_head)] + fit[1:], dev, settings, 0),
        "relation": probe_key("polar", [(a0, other_rel)] + fit[1:], dev, settings, 0),
        "split": probe_key("polar", fit[:-1], [fit[-1]] + dev, settings, 0),
        "dev": probe_key("polar", fit, dev[:-1], settings, 0),
    }
    assert key not in variants.values() and len(set(variants.values())) == len(variants)
    old = P.FIT_VERSION
    try:
        P.FIT_VERSION = old + 1
        assert probe_key("polar", fit, dev, settings, 0) != key
        assert fit_probe_cached("polar", fit, dev, settings, 0, tmp_path)[1] is False
    finally:
        P.FIT_VERSION = old
    # a damaged file is refit and replaced
    path = next(tmp_path.glob(f"polar-{key}.npz"))
    path.write_bytes(b"not a zip")
    probe, cached = fit_probe_cached("polar", fit, dev, settings, 0, tmp_path)
    assert not cached and np.array_equal(probe.B, first.B)
    assert fit_probe_cached("polar", fit, dev, settings, 0, tmp_path)[1]


# --------------------------------------------- the authors' fitting options --

def _batch_and_map(short_splits, d=48, k=6, seed=0):
    from bindscale.studies.geometry.probes import _Batch

    pairs = _planted(short_splits["fit"][:5], True, d=d)
    rels = sorted({r for _, s in pairs for r in s.deprels if r != "root"})
    B = torch.from_numpy(np.random.default_rng(seed).normal(size=(k, d)).astype(np.float32))
    return pairs, _Batch(pairs, 1.0, {r: i for i, r in enumerate(rels)}), B


def test_angular_term_is_the_authors_cosine_distance_form_up_to_the_diagonal(short_splits):
    """The authors' code: MSE between clamp(1 − cos, 0, 2) and 0 (same relation) / 1 (different) over every
    pair of a batch's edges including the diagonal; ours leaves the diagonal out. Recomputed here by hand."""
    from bindscale.studies.geometry.probes import _loss

    pairs, batch, B = _batch_and_map(short_splits)
    ours = float(_loss(B, batch, "polar", 1.0) - _loss(B, batch, "structural", 1.0))
    P = [a @ B.numpy().T for a, _ in pairs]
    edges = [(P[n][h - 1] - P[n][i], s.deprels[i]) for n, (_, s) in enumerate(pairs)
             for i, h in enumerate(s.heads) if h > 0]  # theirs: head − dependent
    u = np.stack([e / np.linalg.norm(e) for e, _ in edges])
    rel = np.array([r for _, r in edges])
    gold = (rel[:, None] != rel[None, :]).astype(float)
    theirs = np.mean((np.clip(1 - u @ u.T, 0, 2) - gold) ** 2)
    m = len(u)
    assert ours == pytest.approx(theirs * m * m / (m * m - m), rel=1e-4)


def test_root_term_is_the_squared_error_to_the_root_vector(short_splits):
    from bindscale.studies.geometry.probes import _loss

    pairs, batch, B = _batch_and_map(short_splits)
    r = torch.linspace(-1, 1, B.shape[0])
    extra = float(_loss(B, batch, "polar", 1.0, r, 0.3) - _loss(B, batch, "polar", 1.0))
    want = np.mean([np.mean(((a @ B.numpy().T)[s.heads.index(0)] - r.numpy()) ** 2) for a, s in pairs])
    assert extra == pytest.approx(0.3 * want, rel=1e-4)
    assert float(_loss(B, batch, "structural", 1.0, r, 0.3)) == pytest.approx(float(_loss(B, batch, "structural", 1.0)))


def test_raw_and_unit_centroids_by_hand():
    from bindscale.studies.geometry.probes import relation_centroids
    from bindscale.studies.geometry.treebank import Sentence

    s = Sentence("x", ("a", "b", "c"), (0, 1, 1), ("root", "obj", "obj"), ("NOUN", "NOUN", "NOUN"))
    acts = np.array([[0.0, 0.0], [2.0, 0.0], [0.0, 1.0]])  # edges dep − head: (2, 0) and (0, 1)
    probe = Probe("structural", np.eye(2), 1.0)
    _, unit = relation_centroids(probe, [(acts, s)], "unit")
    _, raw = relation_centroids(probe, [(acts, s)], "raw")
    assert unit[0] == pytest.approx(np.array([1, 1]) / np.sqrt(2))
    assert raw[0] == pytest.approx(np.array([2, 1]) / np.sqrt(5))
    with pytest.raises(ValueError, match="centroids"):
        relation_centroids(probe, [(acts, s)], "median")


def test_epoch_by_dev_las_keeps_the_best_dev_las(short_splits):
    fit, dev = (_planted(short_splits[k], True) for k in ("fit", "dev"))
    settings = ProbeSettings(rank=8, max_epochs=3, patience=3, select_by="dev_las", centroids="raw", root_weight=0.01)
    probe = fit_probe("polar", fit, dev, settings, seed=0)
    assert 0.0 <= probe.dev_loss <= 1.0 and probe.epochs == 3
    assert probe.dev_loss == pytest.approx(score(probe, dev)["las_pp"])  # what was kept is what was chosen


def test_authors_preset_and_recipe_field():
    from bindscale.studies.geometry.config import ProbeConfig

    a = ProbeSettings.authors()
    assert (a.rank, a.angular_weight, a.root_weight, a.lr, a.batch_size, a.select_by, a.centroids) == (
        1024, 0.01, 0.01, 1e-3, 200, "dev_las", "raw")
    assert ProbeConfig(recipe="authors", max_epochs=7).settings() == ProbeSettings.authors(max_epochs=7, patience=2,
                                                                                          inputs="whiten")
    assert ProbeConfig().settings() == ProbeSettings()
    with pytest.raises(ValueError, match="recipe 'authors' sets rank"):
        ProbeConfig(recipe="authors", rank=64)
    with pytest.raises(ValueError, match="select_by"):
        ProbeSettings(select_by="dev_uuas")
