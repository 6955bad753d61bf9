"""Structural, polar and identity probes of word representations, fit on any activations.

Sources:

- *Structural probe*: Hewitt & Manning 2019, "A structural probe for finding syntax in word
  representations" (NAACL). A rank-k linear map ``B`` (k × d) such that the squared distance
  ``‖B(h_i − h_j)‖²`` between two words' vectors approximates their distance in the dependency
  tree (edges between them). Loss as in their code (``L1DistanceLoss``): per sentence the sum over
  all word pairs of ``|d_tree(i, j) − ‖B(h_i − h_j)‖²|`` divided by the squared sentence length,
  averaged over the sentences of a batch.
- *Polar probe*: Diego-Simón, D'Ascoli, Chemla, Lakretz, King 2024, "A polar coordinate system
  represents syntax in large language models" (NeurIPS). The same map and distance loss, plus an
  angular term on the gold edges: each edge vector ``e = B(h_dependent − h_head)`` is normalised and
  the cosine of every pair of edges in a batch is pushed to 1 when the two share a relation type
  and to 0 (orthogonal) when they differ, a squared error ``(cos − [same type])²`` averaged over edge
  pairs, weighted by ``angular_weight``. Since ``h_head − h_dependent = −e``, an edge read in the
  wrong direction has cosine −1 with its type's direction: the sign gives the direction. *Where
  ours may differ:* we could not read the authors' code here (no copy was reachable); the paper
  describes a distance term as Hewitt & Manning's plus a contrastive angular term separating
  relation types. Our angular term is the squared-cosine form above (targets 1 / 0); their exact
  contrastive form, its weight and their rank may differ.
- *Identity probe*: ``B = I`` (no learned map), the control of both papers.

Every probe decodes the same way (:mod:`.scores`): a minimum spanning tree on its predicted
squared distances gives the unlabeled tree (UUAS); the relation type and direction of an edge come
from its normalised vector's nearest class centroid among ``±c_r`` (centroids: means of the
normalised gold edge vectors ``B(h_dep − h_head)`` of the fitting sentences, per relation type).

Inputs are word-level activations, one ``(n_words, d)`` float array per sentence, paired with its
:class:`~.treebank.Sentence`. Before fitting, the activations of a layer are divided by one scalar,
their root-mean-square vector norm over the fitting words (changes no angle and no ranking of
distances; lets one learning rate serve every layer, model and the near-zero untrained-model
embeddings). Fitting: Adam on mini-batches of sentences, early stopping on the dev loss.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from functools import lru_cache

import numpy as np
import torch
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import shortest_path

from .treebank import Sentence

__all__ = ["KINDS", "FIT_VERSION", "ProbeSettings", "Probe", "tree_distances", "fit_probe", "relation_centroids",
           "probe_key", "fit_probe_cached"]

KINDS = ("structural", "polar", "identity")
#: Version of :func:`fit_probe`'s results, part of a cached probe's key (:func:`probe_key`): bump it whenever a
#: change to the fitting, the scale or the centroids changes what a fit returns, so no stale probe is read.
FIT_VERSION = 1
#: One (activations (n_words, d), sentence) pair.
Pair = tuple[np.ndarray, Sentence]


@dataclass(frozen=True)
class ProbeSettings:
    """How a probe is fit (defaults suit the synthetic study; the real-model study may set others).

    Attributes:
        rank: k, rows of ``B`` (capped at the activation width d).
        angular_weight: weight of the polar probe's angular term.
        lr: Adam learning rate.
        batch_size: sentences per step.
        max_epochs: passes over the fitting sentences at most.
        patience: epochs without a better dev loss before stopping.
        lr_decay: the learning rate is multiplied by it after each epoch without a better dev loss.
    """

    rank: int = 32
    angular_weight: float = 1.0
    lr: float = 1e-2
    batch_size: int = 32
    max_epochs: int = 20
    patience: int = 2
    lr_decay: float = 0.5


def tree_distances(heads: Sequence[int]) -> np.ndarray:
    """Path lengths between every pair of words of a dependency tree, ``(n, n)`` float (0 on the diagonal).

    ``heads``: 1-based heads, 0 for the root (as :class:`Sentence`). Computed by
    :func:`scipy.sparse.csgraph.shortest_path` on the undirected tree (cached per tree; read-only).
    """
    return _tree_distances(tuple(int(h) for h in heads))


@lru_cache(maxsize=100_000)
def _tree_distances(heads: tuple[int, ...]) -> np.ndarray:
    n = len(heads)
    deps = [i for i in range(n) if heads[i] > 0]
    graph = csr_matrix((np.ones(len(deps)), (deps, [heads[i] - 1 for i in deps])), shape=(n, n))
    out = shortest_path(graph, directed=False, unweighted=True)
    out.setflags(write=False)
    return out


def gold_edges(s: Sentence) -> list[tuple[int, int, str]]:
    """``(dependent, head, relation)`` with 0-based word indices, root excluded."""
    return [(i, h - 1, s.deprels[i]) for i, h in enumerate(s.heads) if h > 0]


@dataclass
class Probe:
    """A fitted probe: its map, activation scale and relation centroids.

    Attributes:
        kind: one of :data:`KINDS`.
        B: ``(k, d)`` map (the identity for ``kind="identity"``).
        scale: activations are divided by it before ``B`` (see the module docstring).
        relations: relation names, the rows of ``centroids``.
        centroids: ``(R, k)`` unit vectors, mean normalised edge vector per relation.
        epochs: epochs run; ``dev_loss``: best dev loss (NaN for the identity probe).
    """

    kind: str
    B: np.ndarray
    scale: float
    relations: list[str] = field(default_factory=list)
    centroids: np.ndarray | None = None
    epochs: int = 0
    dev_loss: float = math.nan

    def project(self, acts: np.ndarray) -> np.ndarray:
        """``(n, d)`` activations → ``(n, k)`` probe coordinates ``B h / scale``."""
        return (np.asarray(acts, dtype=np.float64) / self.scale) @ self.B.T

    def distances(self, acts: np.ndarray) -> np.ndarray:
        """Predicted squared distances ``‖B(h_i − h_j)‖²``, ``(n, n)``, rounded to 1e-9 (float noise would
        otherwise break ties between equal distances at random, e.g. in the Spearman ranks)."""
        p = self.project(acts)
        diff = p[:, None, :] - p[None, :, :]
        return np.round((diff * diff).sum(-1), 9)


def _rms_scale(pairs: Sequence[Pair]) -> float:
    """Root-mean-square vector norm of all words' activations (1 when they are all zero)."""
    tot = sum(float((np.asarray(a, dtype=np.float64) ** 2).sum()) for a, _ in pairs)
    n = sum(len(s) for _, s in pairs)
    r = math.sqrt(tot / max(n, 1))
    return r if r > 0 and math.isfinite(r) else 1.0


def _check(pairs: Sequence[Pair], name: str) -> int:
    """Width d of the activations; raises ValueError on a shape mismatch or no sentence."""
    if not pairs:
        raise ValueError(f"{name}: no sentences")
    d = None
    for a, s in pairs:
        if a.ndim != 2 or a.shape[0] != len(s):
            raise ValueError(f"{name}: sentence {s.sent_id} has {len(s)} words but activations of shape "
                             f"{tuple(a.shape)} (need (n_words, d))")
        if d is None:
            d = a.shape[1]
        elif a.shape[1] != d:
            raise ValueError(f"{name}: sentence {s.sent_id} has activation width {a.shape[1]}, others {d}")
    return int(d)


class _Batch:
    """Padded tensors of a group of sentences: H ``(b, L, d)``, D ``(b, L, L)``, pair mask, edges."""

    def __init__(self, pairs: Sequence[Pair], scale: float, rel_index: dict[str, int]):
        b, L, d = len(pairs), max(len(s) for _, s in pairs), pairs[0][0].shape[1]
        H = np.zeros((b, L, d), np.float32)
        D = np.zeros((b, L, L), np.float32)
        M = np.zeros((b, L, L), bool)
        lengths = np.zeros(b, np.float32)
        eb, ed, eh, er = [], [], [], []
        for n, (a, s) in enumerate(pairs):
            m = len(s)
            H[n, :m] = np.asarray(a, np.float32) / scale
            D[n, :m, :m] = tree_distances(s.heads)
            M[n, :m, :m] = True
            lengths[n] = m
            for dep, head, rel in gold_edges(s):
                eb.append(n), ed.append(dep), eh.append(head), er.append(rel_index.get(rel, -1))
        self.H, self.D, self.M = torch.from_numpy(H), torch.from_numpy(D), torch.from_numpy(M)
        self.lengths = torch.from_numpy(lengths)
        self.edges = tuple(torch.tensor(x, dtype=torch.long) for x in (eb, ed, eh, er))


def _loss(B: torch.Tensor, batch: _Batch, kind: str, angular_weight: float) -> torch.Tensor:
    P = batch.H @ B.T  # (b, L, k)
    sq = (P * P).sum(-1)  # (b, L)
    pred = sq[:, :, None] + sq[:, None, :] - 2 * P @ P.transpose(1, 2)  # (b, L, L) squared distances
    err = ((pred - batch.D).abs() * batch.M).sum((1, 2)) / batch.lengths**2  # per sentence
    loss = err.mean()
    if kind == "polar":
        eb, ed, eh, er = batch.edges
        keep = er >= 0
        if int(keep.sum()) >= 2:
            e = P[eb[keep], ed[keep]] - P[eb[keep], eh[keep]]  # (m, k): dependent − head
            u = e / e.norm(dim=1, keepdim=True).clamp_min(1e-8)
            cos = u @ u.T
            same = (er[keep][:, None] == er[keep][None, :]).float()
            off = 1.0 - torch.eye(len(u))
            loss = loss + angular_weight * (((cos - same) ** 2) * off).sum() / off.sum()
    return loss


def _batches(pairs: Sequence[Pair], size: int, scale: float, rel_index: dict[str, int]) -> list[_Batch]:
    """Sentences grouped by length (little padding), ``size`` per batch."""
    order = sorted(range(len(pairs)), key=lambda n: len(pairs[n][1]))
    return [_Batch([pairs[n] for n in order[i:i + size]], scale, rel_index) for i in range(0, len(order), size)]


def relation_centroids(probe: Probe, pairs: Sequence[Pair]) -> tuple[list[str], np.ndarray]:
    """Relation names and ``(R, k)`` unit centroids of the normalised gold edge vectors ``B(h_dep − h_head)``."""
    if not pairs:
        return [], np.zeros((0, probe.B.shape[0]))
    P = probe.project(np.concatenate([np.asarray(a) for a, _ in pairs]))
    dep, head, rel, start = [], [], [], 0
    for _, s in pairs:
        for d, h, r in gold_edges(s):
            dep.append(start + d), head.append(start + h), rel.append(r)
        start += len(s)
    V = P[np.array(dep, int)] - P[np.array(head, int)]
    nv = np.linalg.norm(V, axis=1)
    ok = nv > 0
    rels = sorted({r for r, o in zip(rel, ok) if o})
    if not rels:
        return [], np.zeros((0, probe.B.shape[0]))
    index = {r: i for i, r in enumerate(rels)}
    C = np.zeros((len(rels), V.shape[1]))
    np.add.at(C, np.array([index[r] for r, o in zip(rel, ok) if o], int), V[ok] / nv[ok, None])
    norms = np.linalg.norm(C, axis=1, keepdims=True)
    return rels, C / np.where(norms > 0, norms, 1.0)


def fit_probe(kind: str, train: Sequence[Pair], dev: Sequence[Pair], settings: ProbeSettings = ProbeSettings(),
              seed: int = 0) -> Probe:
    """Fit one probe on ``train`` (early stopping on ``dev``) and its relation centroids on ``train``.

    Args:
        kind: ``"structural"``, ``"polar"`` or ``"identity"`` (no fitting; centroids only).
        train, dev: ``(activations (n_words, d), Sentence)`` pairs; same d throughout.
        settings: see :class:`ProbeSettings`.
        seed: initialises ``B`` (uniform in ±0.05, as Hewitt & Manning's code) and the batch order.

    Returns:
        The fitted :class:`Probe` (``B`` is ``(min(rank, d), d)``).

    Raises:
        ValueError: unknown kind, no sentences, or activations that do not match their sentences.
    """
    if kind not in KINDS:
        raise ValueError(f"probe kind {kind!r}; allowed: {', '.join(KINDS)}")
    d = _check(train, "train")
    if dev:
        _check(dev, "dev")
    scale = _rms_scale(train)
    if kind == "identity":
        probe = Probe(kind, np.eye(d), scale)
    else:
        rels = sorted({r for _, s in train for r in s.deprels if r != "root"})
        rel_index = {r: i for i, r in enumerate(rels)}
        g = torch.Generator().manual_seed(int(seed))
        k = min(settings.rank, d)
        B = ((torch.rand(k, d, generator=g) - 0.5) * 0.1).requires_grad_(True)
        opt = torch.optim.Adam([B], lr=settings.lr)
        tr = _batches(train, settings.batch_size, scale, rel_index)
        dv = _batches(dev, 4 * settings.batch_size, scale, rel_index) if dev else []
        best, best_B, bad, epochs = math.inf, B.detach().clone(), 0, 0
        for epoch in range(settings.max_epochs):
            epochs = epoch + 1
            for i in torch.randperm(len(tr), generator=g).tolist():
                loss = _loss(B, tr[i], kind, settings.angular_weight)
                opt.zero_grad()
                loss.backward()
                opt.step()
            with torch.no_grad():
                held = dv or tr
                val = sum(float(_loss(B, b, kind, settings.angular_weight)) * len(b.lengths) for b in held)
                val /= sum(len(b.lengths) for b in held)
            if not math.isfinite(val):
                break
            if val < best - 1e-6:
                best, best_B, bad = val, B.detach().clone(), 0
            else:  # as Hewitt & Manning's ReduceLROnPlateau (patience 0): a worse epoch lowers the rate
                bad += 1
                for group in opt.param_groups:
                    group["lr"] *= settings.lr_decay
                if bad >= settings.patience:
                    break
        probe = Probe(kind, best_B.double().numpy(), scale, epochs=epochs, dev_loss=best)
    probe.relations, probe.centroids = relation_centroids(probe, train)
    return probe


def probe_key(kind: str, train: Sequence[Pair], dev: Sequence[Pair], settings: ProbeSettings, seed: int) -> str:
    """sha256 (24 hex chars) of everything a fit depends on: :data:`FIT_VERSION`, the torch and numpy versions,
    the kind, every :class:`ProbeSettings` field, the seed, and, for the train and dev sentences in order,
    each one's activations (shape, dtype and bytes) and gold tree (heads and relations).

    Hashing the activations themselves (not the name of their cache) means any change to the model, the
    alignment, the sentences or the fit/dev split gives another key.
    """
    h = hashlib.sha256()
    h.update(json.dumps({"v": FIT_VERSION, "torch": torch.__version__, "numpy": np.__version__, "kind": kind,
                         "settings": asdict(settings), "seed": int(seed)}, sort_keys=True).encode())
    for name, pairs in (("train", train), ("dev", dev)):
        h.update(f"|{name}:{len(pairs)}|".encode())
        for a, s in pairs:
            a = np.ascontiguousarray(a)
            h.update(f"{a.shape}{a.dtype.str}".encode())
            h.update(memoryview(a).cast("B"))
            h.update(json.dumps([s.heads, s.deprels]).encode())
    return h.hexdigest()[:24]


def fit_probe_cached(kind: str, train: Sequence[Pair], dev: Sequence[Pair], settings: ProbeSettings, seed: int,
                     cache_dir: str | Path | None) -> tuple[Probe, bool]:
    """:func:`fit_probe`, or the same probe read back from ``cache_dir/{probe_key}.npz`` when an identical fit
    was stored there (``cache_dir`` None: no cache). Returns the probe and whether it came from the cache.

    A fit is written atomically (a temporary file renamed); an unreadable file is refit and overwritten.
    """
    if cache_dir is None:
        return fit_probe(kind, train, dev, settings, seed), False
    folder = Path(cache_dir)
    path = folder / f"{kind}-{probe_key(kind, train, dev, settings, seed)}.npz"
    if path.is_file():
        try:
            with np.load(path, allow_pickle=False) as z:
                probe = Probe(str(z["kind"]), z["B"], float(z["scale"]), [str(r) for r in z["relations"]],
                              z["centroids"], int(z["epochs"]), float(z["dev_loss"]))
            return probe, True
        except (OSError, ValueError, KeyError):
            pass
    probe = fit_probe(kind, train, dev, settings, seed)
    folder.mkdir(parents=True, exist_ok=True)
    tmp = folder / f".{path.name}.{os.getpid()}.tmp.npz"
    np.savez(tmp, kind=np.array(probe.kind), B=probe.B, scale=np.array(probe.scale),
             relations=np.array(probe.relations, dtype=str), centroids=probe.centroids,
             epochs=np.array(probe.epochs), dev_loss=np.array(probe.dev_loss))
    os.replace(tmp, path)
    return probe, False
