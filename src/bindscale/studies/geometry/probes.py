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
  wrong direction has cosine −1 with its type's direction: the sign gives the direction.
  *Read against the authors' code* (pjdisi/PolarProbe, ``train.py``): their angular term is the same
  function — the squared error between the cosine distance ``1 − cos`` of every pair of a batch's
  edges and 0 (same relation) or 1 (different), i.e. ``(cos − [same])²`` — averaged over all pairs
  including each edge with itself (ours leaves the diagonal out, which only rescales the term by
  ``(m − 1)/m``); their edge is ``head − dependent`` (ours the opposite: the loss and the decoding
  are invariant to that global sign). Differences kept as options of :class:`ProbeSettings` (the
  ``authors`` preset sets all of them to the authors' values): rank (theirs 1024; ours 32),
  angular weight (theirs λ = 0.01 at the command-line default, swept 0.01–10; ours 1), a root term
  (theirs β = 0.01: a learned vector ``r`` in probe space and the squared error between it and the
  root word's coordinates; ours none), the epoch (theirs: the epoch of best dev LAS over 200
  epochs; ours: early stopping on the dev loss), the centroids (theirs: means of the raw edge vectors
  over at most 5,000 training sentences; ours: means of unit edge vectors over the fitting
  sentences), learning rate 1e-3 and 200 sentences a batch (ours 1e-2 and 32).
- *Identity probe*: ``B = I`` (no learned map), the control of both papers.

Every probe decodes the same way (:mod:`.scores`): a minimum spanning tree on its predicted
squared distances gives the unlabeled tree (UUAS); the relation type and direction of an edge come
from its normalised vector's nearest class centroid among ``±c_r`` (centroids: means of the
normalised gold edge vectors ``B(h_dep − h_head)`` of the fitting sentences, per relation type).

Inputs are word-level activations, one ``(n_words, d)`` float array per sentence, paired with its
:class:`~.treebank.Sentence`. How a layer's activations enter the fit (:class:`ProbeSettings` ``inputs``):

- ``"whiten"`` (bindscale's default): PCA whitening on the fitting words — centred, rotated onto their
  principal axes and each axis divided by its standard deviation (axes whose variance is below
  ``WHITEN_RCOND`` (1e-10) × the largest are dropped), as scikit-learn's ``PCA(whiten=True)`` transforms. The
  probe ``B_w`` is fit on the whitened vectors and stored folded back, ``B = B_w Wᵀ`` (k × d), so it is
  still a rank-k linear map of the raw activations (the centring shifts every word alike and cancels in every
  difference): the same family of probes, but another estimator — the conditioning, the initialisation's
  scale relative to the data and the early-stopping path all change, and dropped axes limit ``B``'s rows to
  the kept ones. Why: a trained LM's states are strongly anisotropic, and Adam on raw states underfits within
  any affordable number of epochs (pilots in ``geometry.yaml``, 4 × 128 seed 0: polar UUAS 0.291 raw,
  0.679 whitened, the same 300 sentences). Where many isotropic nuisance dimensions dominate it can do
  worse than the raw fit (review, a planted tree beside 300 nuisance dimensions: UUAS 0.26 whitened, 0.54
  raw), which is why the raw fit is run and reported beside it; on pretrained LMs' 384-576-wide states it read
  less than the raw fit (``geometry-lm.yaml``), and that study keeps ``"scale"``.
- ``"scale"`` (the sources' fit; Hewitt & Manning's and the polar probe's code fit on raw vectors): divided
  by one scalar, their root-mean-square vector norm over the fitting words (changes no angle and no ranking
  of distances; lets one learning rate serve every layer and model).

Fitting: Adam on mini-batches of sentences, early stopping on the dev loss.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch

from .probe_types import Pair, Probe, gold_edges, tree_distances
from .scores import score

__all__ = ["KINDS", "INPUTS", "FIT_VERSION", "ProbeSettings", "whitening", "Probe", "tree_distances", "fit_probe",
           "relation_centroids",
           "probe_key", "fit_probe_cached"]

KINDS = ("structural", "polar", "identity")
#: How a fit chooses its epoch (:class:`ProbeSettings` ``select_by``).
SELECT_BY = ("dev_loss", "dev_las")
#: How relation centroids average edge vectors (:class:`ProbeSettings` ``centroids``).
CENTROIDS = ("unit", "raw")
#: How activations enter a fit (:class:`ProbeSettings` ``inputs``; module docstring).
INPUTS = ("whiten", "scale")
#: Whitening drops principal axes whose variance is below this fraction of the largest: numerically null axes
#: (fewer fitting words than dimensions; float32 rounding leaves them near 1e-14), while an axis whose standard
#: deviation is 1e-5 of the largest is kept (a trained LM's few huge dimensions must not hide its small ones).
#: Activations stored in a coarser float raise the floor to ``WHITEN_EPS_FACTOR`` × that dtype's eps²: float16's
#: rounding puts null axes at 6e-7-1.6e-6 of the largest (measured in review), and whitening them would blow
#: rounding noise up to unit variance (a planted tree's UUAS fell from 1.00 to 0.91).
WHITEN_RCOND = 1e-10
WHITEN_EPS_FACTOR = 16.0
#: Version of :func:`fit_probe`'s results, part of a cached probe's key (:func:`probe_key`): bump it whenever a
#: change to the fitting, the scale or the centroids changes what a fit returns, so no stale probe is read.
FIT_VERSION = 4
@dataclass(frozen=True)
class ProbeSettings:
    """How a probe is fit (defaults suit the synthetic study; the real-model study may set others).

    Attributes:
        rank: k, rows of ``B`` (capped at the activation width d).
        root_weight: weight of the root term (0: none; the authors' β): a learned ``r`` (k,) and the squared
            error ``‖B h_root − r‖²`` (mean over coordinates) averaged over a batch's sentences.
        select_by: ``"dev_loss"`` (early stopping on the dev loss, Hewitt & Manning's) or ``"dev_las"`` (the
            epoch of best dev LAS, per sentence with punctuation: the authors' choice for the polar probe).
        centroids: ``"unit"`` (means of unit edge vectors) or ``"raw"`` (means of raw edge vectors, the
            authors'); either way decoding compares directions (cosines) with them.
        angular_weight: weight of the polar probe's angular term.
        lr: Adam learning rate.
        batch_size: sentences per step.
        max_epochs: passes over the fitting sentences at most.
        patience: epochs without a better dev loss before stopping.
        lr_decay: the learning rate is multiplied by it after each epoch without a better dev loss.
        inputs: ``"whiten"`` (PCA-whitened fitting words, bindscale's) or ``"scale"`` (one scalar, the sources');
            see the module docstring. The identity probe always reads the activations as they are.
    """

    rank: int = 32
    angular_weight: float = 1.0
    lr: float = 1e-2
    batch_size: int = 32
    max_epochs: int = 20
    patience: int = 2
    lr_decay: float = 0.5
    root_weight: float = 0.0
    select_by: str = "dev_loss"
    centroids: str = "unit"
    inputs: str = "whiten"

    def __post_init__(self):
        if self.select_by not in SELECT_BY:
            raise ValueError(f"select_by {self.select_by!r}; allowed: {', '.join(SELECT_BY)}")
        if self.centroids not in CENTROIDS:
            raise ValueError(f"centroids {self.centroids!r}; allowed: {', '.join(CENTROIDS)}")
        if self.inputs not in INPUTS:
            raise ValueError(f"inputs {self.inputs!r}; allowed: {', '.join(INPUTS)}")
        if self.root_weight < 0:
            raise ValueError(f"root_weight {self.root_weight} is negative")

    @classmethod
    def authors(cls, **changes) -> "ProbeSettings":
        """The polar probe as the authors' code fits it (pjdisi/PolarProbe ``train.py`` defaults): rank 1024
        (capped at the model width), angular weight 0.01, root weight 0.01, Adam at 1e-3 on 200 sentences
        a batch, the epoch of best dev LAS, centroids of raw edge vectors. Their 200 epochs without early
        stopping are ``max_epochs`` / ``patience`` here (patience counted in epochs without a better dev
        LAS; their run has none), and their constant learning rate is ``lr_decay=1``. Their inputs are the
        raw vectors (``inputs="scale"``)."""
        base = dict(rank=1024, angular_weight=0.01, root_weight=0.01, lr=1e-3, batch_size=200, select_by="dev_las",
                    centroids="raw", lr_decay=1.0, max_epochs=50, patience=5, inputs="scale")
        return cls(**(base | changes))


def _rms_scale(pairs: Sequence[Pair]) -> float:
    """Root-mean-square vector norm of all words' activations (1 when they are all zero)."""
    tot = sum(float((np.asarray(a, dtype=np.float64) ** 2).sum()) for a, _ in pairs)
    n = sum(len(s) for _, s in pairs)
    r = math.sqrt(tot / max(n, 1))
    return r if r > 0 and math.isfinite(r) else 1.0


def whitening(pairs: Sequence[Pair], rcond: float = WHITEN_RCOND) -> tuple[np.ndarray, np.ndarray]:
    """PCA whitening of all words' activations: their mean ``mu`` (d,) and ``W`` (d, d'), with
    ``(h − mu) @ W`` of identity sample covariance (ddof 1, scikit-learn's ``PCA(whiten=True)``): ``W``'s
    columns are the principal axes divided by their standard deviations, axes of variance at most ``rcond`` ×
    the largest dropped, or ``WHITEN_EPS_FACTOR`` × eps² of the activations' float type when that is larger
    (d' ≤ d; d' = 0 when every word has the same vector, or there is one word).

    Raises:
        ValueError: a NaN or infinite activation (e.g. a float16 overflow): it would leave no axis to whiten.
    """
    eps = max((float(np.finfo(np.asarray(a).dtype).eps) for a, _ in pairs
               if np.issubdtype(np.asarray(a).dtype, np.floating)), default=0.0)
    rcond = max(rcond, WHITEN_EPS_FACTOR * eps * eps)
    X = np.concatenate([np.asarray(a, dtype=np.float64) for a, _ in pairs])
    if not np.isfinite(X).all():
        raise ValueError(f"{int((~np.isfinite(X)).sum())} NaN or infinite activation values among the fitting "
                         "words: whitening needs finite activations")
    mu = X.mean(0)
    if len(X) < 2:
        return mu, np.zeros((X.shape[1], 0))
    w, V = np.linalg.eigh(np.cov(X - mu, rowvar=False, ddof=1).reshape(X.shape[1], X.shape[1]))
    keep = w > rcond * w.max() if w.max() > 0 else np.zeros_like(w, bool)
    return mu, V[:, keep] / np.sqrt(w[keep])


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
        roots = np.zeros(b, np.int64)  # each sentence's (first) root word
        for n, (a, s) in enumerate(pairs):
            m = len(s)
            roots[n] = next((i for i, h in enumerate(s.heads) if h == 0), 0)
            H[n, :m] = np.asarray(a, np.float32) / scale
            D[n, :m, :m] = tree_distances(s.heads)
            M[n, :m, :m] = True
            lengths[n] = m
            for dep, head, rel in gold_edges(s):
                eb.append(n), ed.append(dep), eh.append(head), er.append(rel_index.get(rel, -1))
        self.H, self.D, self.M = torch.from_numpy(H), torch.from_numpy(D), torch.from_numpy(M)
        self.lengths = torch.from_numpy(lengths)
        self.roots = torch.from_numpy(roots)
        self.edges = tuple(torch.tensor(x, dtype=torch.long) for x in (eb, ed, eh, er))


def _loss(B: torch.Tensor, batch: _Batch, kind: str, angular_weight: float, root: torch.Tensor | None = None,
          root_weight: float = 0.0) -> torch.Tensor:
    """Distance loss (+ the polar probe's angular term and, with ``root`` (k,), its root term)."""
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
        if root is not None and root_weight > 0:
            at_root = P[torch.arange(len(batch.roots)), batch.roots]  # (b, k)
            loss = loss + root_weight * ((at_root - root) ** 2).mean()
    return loss


def _batches(pairs: Sequence[Pair], size: int, scale: float, rel_index: dict[str, int]) -> list[_Batch]:
    """Sentences grouped by length (little padding), ``size`` per batch."""
    order = sorted(range(len(pairs)), key=lambda n: len(pairs[n][1]))
    return [_Batch([pairs[n] for n in order[i:i + size]], scale, rel_index) for i in range(0, len(order), size)]


def relation_centroids(probe: Probe, pairs: Sequence[Pair], how: str = "unit") -> tuple[list[str], np.ndarray]:
    """Relation names and ``(R, k)`` unit centroids of the gold edge vectors ``B(h_dep − h_head)``: each the
    normalised mean of the unit edge vectors (``how="unit"``) or of the raw ones (``"raw"``, the authors')."""
    if how not in CENTROIDS:
        raise ValueError(f"centroids {how!r}; allowed: {', '.join(CENTROIDS)}")
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
    np.add.at(C, np.array([index[r] for r, o in zip(rel, ok) if o], int),
              V[ok] / nv[ok, None] if how == "unit" else V[ok])
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
        The fitted :class:`Probe` (``B`` is ``(min(rank, d'), d)``, d' the whitened axes kept, else d).

    Raises:
        ValueError: unknown kind, no sentences, or activations that do not match their sentences.
    """
    if kind not in KINDS:
        raise ValueError(f"probe kind {kind!r}; allowed: {', '.join(KINDS)}")
    d = _check(train, "train")
    if not all(np.isfinite(a).all() for a, _ in train):
        raise ValueError("train: NaN or infinite activation values among the fitting words (a probe fit on them "
                         "would be garbage whatever its inputs setting)")
    if dev:
        _check(dev, "dev")
    scale = _rms_scale(train)
    W = None
    if kind != "identity" and settings.inputs == "whiten":
        mu, W = whitening(train)
        if W.shape[1] == 0:  # every word the same vector: nothing to whiten, the scalar scale is as good
            W = None
        else:
            train, dev = ([((np.asarray(a, np.float64) - mu) @ W, s) for a, s in pairs] for pairs in (train, dev))
            d, scale = W.shape[1], 1.0
    if kind == "identity":
        probe = Probe(kind, np.eye(d), scale)
    else:
        rels = sorted({r for _, s in train for r in s.deprels if r != "root"})
        rel_index = {r: i for i, r in enumerate(rels)}
        g = torch.Generator().manual_seed(int(seed))
        k = min(settings.rank, d)
        B = ((torch.rand(k, d, generator=g) - 0.5) * 0.1).requires_grad_(True)
        # The root vector (polar probe with a root term only): its own parameter, zero at the start.
        root = torch.zeros(k, requires_grad=True) if kind == "polar" and settings.root_weight > 0 else None
        opt = torch.optim.Adam([B] + ([root] if root is not None else []), lr=settings.lr)
        tr = _batches(train, settings.batch_size, scale, rel_index)
        dv = _batches(dev, 4 * settings.batch_size, scale, rel_index) if dev else []
        by_las = settings.select_by == "dev_las"
        best, best_B, bad, epochs = math.inf, B.detach().clone(), 0, 0
        for epoch in range(settings.max_epochs):
            epochs = epoch + 1
            for i in torch.randperm(len(tr), generator=g).tolist():
                loss = _loss(B, tr[i], kind, settings.angular_weight, root, settings.root_weight)
                opt.zero_grad()
                loss.backward()
                opt.step()
            with torch.no_grad():
                held = dv or tr
                val = sum(float(_loss(B, b, kind, settings.angular_weight, root, settings.root_weight))
                          * len(b.lengths) for b in held)
                val /= sum(len(b.lengths) for b in held)
            if not math.isfinite(val):
                break
            if by_las:  # minus the dev LAS, so that lower is better as for the loss
                val = -_dev_las(B, scale, kind, train, dev or train, settings.centroids)
            if val < best - 1e-6:
                best, best_B, bad = val, B.detach().clone(), 0
            else:  # as Hewitt & Manning's ReduceLROnPlateau (patience 0): a worse epoch lowers the rate
                bad += 1
                for group in opt.param_groups:
                    group["lr"] *= settings.lr_decay
                if bad >= settings.patience:
                    break
        probe = Probe(kind, best_B.double().numpy(), scale, epochs=epochs, dev_loss=-best if by_las else best)
    probe.relations, probe.centroids = relation_centroids(probe, train, settings.centroids)
    if W is not None:  # fold the whitening into B: a map of the raw activations (the centring cancels in differences)
        probe.B = probe.B @ W.T
    return probe


def _dev_las(B: torch.Tensor, scale: float, kind: str, train: Sequence[Pair], dev: Sequence[Pair],
             how: str) -> float:
    """Dev LAS (per sentence, punctuation included: the authors' selection metric) of the map ``B`` with
    centroids from ``train``; 0 where it is NaN (an epoch that labels nothing is never the best)."""
    probe = Probe(kind, B.detach().double().numpy(), scale)
    probe.relations, probe.centroids = relation_centroids(probe, train, how)
    las = float(score(probe, dev)["las_pp"])
    return las if math.isfinite(las) else 0.0


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
