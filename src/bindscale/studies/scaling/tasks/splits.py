"""Train / held-out splits of module combinations, and convex-hull labels.

Definitions:

* a training set is **compositional** when every module occurs in at least one
  training combination, and **connected** when the module co-occurrence graph
  of the training combinations (nodes = modules, an edge when two modules are
  active together in some training combination) is connected;
* a held-out combination is **in-hull** when each of its modules was seen in
  training and each pair of its modules co-occurred in some training
  combination, otherwise **out-of-hull**;
* a **withheld pair** is a pair of modules that never co-occurs in training:
  every combination holding both is held out, so each is out-of-hull by
  construction. A random hold-out of 25% of the 92 combinations of M=8, K=3
  has no out-of-hull combination in most seeds (every pair still co-occurs in
  some training triple); withholding one pair guarantees 7 (the pair and its
  6 triples) in every seed and at every coverage.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import networkx as nx
import numpy as np

from bindscale.kit import SplitError


def all_combinations(M: int, K: int) -> list[tuple[int, ...]]:
    """Every non-empty set of at most ``K`` of ``M`` modules, as sorted tuples (sizes 1..K)."""
    return [c for k in range(1, K + 1) for c in itertools.combinations(range(M), k)]


def cooccurrence_graph(combos: list[tuple[int, ...]], M: int) -> nx.Graph:
    """Graph on modules ``0..M-1`` with an edge for every pair active together in ``combos``."""
    g = nx.Graph()
    g.add_nodes_from(range(M))
    for c in combos:
        g.add_edges_from(itertools.combinations(c, 2))
    return g


def is_compositional(train: list[tuple[int, ...]], M: int) -> bool:
    """Every module appears in some training combination."""
    return set().union(*map(set, train)) == set(range(M)) if train else False


def is_connected(train: list[tuple[int, ...]], M: int) -> bool:
    """The co-occurrence graph of the training combinations is connected."""
    return nx.is_connected(cooccurrence_graph(train, M))


def in_hull(combo: tuple[int, ...], train: list[tuple[int, ...]]) -> bool:
    """All modules of ``combo`` seen in training and all its pairs co-occurred there."""
    return hull_labels([combo], train)[0]


def hull_labels(combos: list[tuple[int, ...]], train: list[tuple[int, ...]]) -> list[bool]:
    """:func:`in_hull` of each of ``combos``, the training set's modules and pairs gathered once (per
    combination, as :func:`in_hull` alone does, that was 0.65 of 0.85 CPU-s of building 12 trials' tasks at
    M=16, K=3: every held-out combination walked the whole training set)."""
    seen = set().union(*map(set, train)) if train else set()
    pairs = {p for c in train for p in itertools.combinations(c, 2)}
    return [set(c) <= seen and all(p in pairs for p in itertools.combinations(c, 2)) for c in combos]


@dataclass(frozen=True)
class Split:
    """Which combinations training sees.

    Attributes:
        train: training combinations (sorted module tuples).
        heldout: held-out combinations.
        inhull: one bool per held-out combination (see module docstring).
    """

    train: list[tuple[int, ...]]
    heldout: list[tuple[int, ...]]
    inhull: list[bool]

    @property
    def n_inhull(self) -> int:
        return int(sum(self.inhull))

    @property
    def n_outhull(self) -> int:
        return len(self.inhull) - self.n_inhull


def make_split(M: int, K: int, kind: str, holdout: float, rng: np.random.Generator, max_tries: int = 2000,
               withheld_pairs: int = 0) -> Split:
    """Split all combinations of ``M`` modules (up to ``K`` active) into train and held-out.

    Args:
        kind: ``"random"`` holds out ``round(holdout * C)`` combinations at random,
            redrawing until the training set is compositional and connected;
            ``"disconnected"`` splits the modules into two halves and trains only on
            combinations inside one half (every mixed combination is held out;
            ``holdout`` is ignored); ``"non_compositional"`` never trains one
            module (every combination holding it is held out) and holds out
            ``holdout`` of the rest at random, keeping the rest compositional and
            connected over the remaining modules.
        rng: the trial's ``split`` stream.
        withheld_pairs: (``random`` split) this many distinct module pairs, drawn at random, never
            co-occur in training: every combination holding one is held out first, and ``holdout``
            is the total held-out fraction, topped up at random (at least the withheld ones).

    Raises:
        SplitError: the constraints cannot be met (e.g. too large a hold-out).
    """
    combos = all_combinations(M, K)
    if withheld_pairs and (kind != "random" or K < 2):
        raise SplitError(f"withheld_pairs needs split 'random' and K>=2 (got split {kind!r}, K={K})")
    if kind == "random" and withheld_pairs:
        train, held = _withheld_pairs_holdout(combos, M, K, withheld_pairs, holdout, rng, max_tries)
    elif kind == "random":
        train, held = _random_holdout(combos, list(range(M)), holdout, rng, max_tries, M, K)
    elif kind == "disconnected":
        if K < 2 or M < 4:
            raise SplitError(f"split 'disconnected' needs M>=4 and K>=2 (got M={M}, K={K})")
        perm = rng.permutation(M)
        half = set(perm[: M // 2].tolist())
        train = [c for c in combos if set(c) <= half or not (set(c) & half)]
        held = [c for c in combos if c not in set(train)]
    elif kind == "non_compositional":
        unseen = int(rng.integers(M))
        rest = [c for c in combos if unseen not in c]
        train, held_rest = _random_holdout(rest, [m for m in range(M) if m != unseen], holdout, rng, max_tries, M, K)
        held = [c for c in combos if unseen in c] + held_rest
    else:
        raise SplitError(f"unknown split {kind!r}; allowed: random, disconnected, non_compositional")
    held = sorted(held, key=lambda c: (len(c), c))
    return Split(train=sorted(train, key=lambda c: (len(c), c)), heldout=held, inhull=hull_labels(held, train))


def _withheld_pairs_holdout(combos, M, K, n_pairs, holdout, rng, max_tries):
    """Hold out every combination containing one of ``n_pairs`` random module pairs, then top up at random."""
    pairs = list(itertools.combinations(range(M), 2))
    if n_pairs > len(pairs):
        raise SplitError(f"withheld_pairs={n_pairs} exceeds the {len(pairs)} module pairs of M={M}")
    n_total = int(round(holdout * len(combos)))
    for _ in range(max_tries):
        chosen = [pairs[i] for i in rng.choice(len(pairs), size=n_pairs, replace=False)]
        forced = [c for c in combos if any(set(p) <= set(c) for p in chosen)]
        rest = [c for c in combos if c not in set(forced)]
        n_more = max(0, n_total - len(forced))
        if len(rest) - n_more < 1:
            continue
        idx = rng.permutation(len(rest))
        train = [rest[i] for i in idx[n_more:]]
        if _ok(train, list(range(M))):
            return train, forced + [rest[i] for i in idx[:n_more]]
    raise SplitError(
        f"cannot withhold {n_pairs} module pair(s) and hold out {holdout:.0%} of the {len(combos)} combinations "
        f"(M={M}, K={K}) with training compositional and connected after {max_tries} draws; use fewer pairs "
        "or a smaller holdout"
    )


def _random_holdout(combos, modules, holdout, rng, max_tries, M, K):
    n_held = int(round(holdout * len(combos)))
    if n_held == 0:
        return list(combos), []
    if len(combos) - n_held < 1:
        raise SplitError(f"holdout={holdout} leaves no training combination (M={M}, K={K}: {len(combos)} combinations)")
    for _ in range(max_tries):
        idx = rng.permutation(len(combos))
        held = [combos[i] for i in idx[:n_held]]
        train = [combos[i] for i in idx[n_held:]]
        if _ok(train, modules):
            return train, held
    raise SplitError(
        f"cannot hold out {holdout:.0%} of the {len(combos)} combinations (M={M}, K={K}) and keep training "
        f"compositional and connected after {max_tries} draws; use a smaller holdout or a larger K"
    )


def _ok(train, modules) -> bool:
    seen = set().union(*map(set, train))
    if not set(modules) <= seen:
        return False
    g = cooccurrence_graph(train, max(modules) + 1).subgraph(modules)
    return nx.is_connected(g)
