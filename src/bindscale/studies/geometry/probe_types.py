"""What probes and their scores share: a probe's fitted form, gold trees' distances and edges.

Split from :mod:`.probes` (fitting) so that :mod:`.scores` (decoding and metrics) and the fitting, which
chooses its epoch by a score, import it without importing each other.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
import math

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import shortest_path

from .treebank import Sentence

__all__ = ["Pair", "Probe", "tree_distances", "gold_edges"]

#: One (activations (n_words, d), sentence) pair.
Pair = tuple[np.ndarray, Sentence]



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
        epochs: epochs run; ``dev_loss``: best dev loss (NaN for the identity probe), or the best dev LAS when
            the fit chose its epoch by it (``select_by="dev_las"``).
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
