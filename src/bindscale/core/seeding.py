"""Independent random streams per trial.

One root seed per trial is split with :class:`numpy.random.SeedSequence` into
named child streams, so that the teacher, the split, the initialisation and the
train / in-distribution test / held-out / probe-fit (``probe``) / probe-score
(``probe_score``) data never share randomness.
"""

from __future__ import annotations

import numpy as np
import torch

#: Stream names, in a fixed order: the position is the spawn key, so adding a
#: stream at the end never changes the existing ones.
STREAMS = ("teacher", "split", "encoding", "init", "train", "test", "heldout", "probe", "random_init",
           "datasets", "pretrain", "mask", "probe_score")


def stream_seed(root_seed: int, stream: str, *key: int) -> int:
    """A 63-bit seed for ``stream`` derived from ``root_seed``.

    ``key`` (non-negative integers) names an independent sub-stream, e.g. one per
    (mask seed, subroutine); without it the stream's own seed.

    Raises:
        KeyError: ``stream`` is not one of :data:`STREAMS`.
    """
    if stream not in STREAMS:
        raise KeyError(f"unknown seed stream {stream!r}; known: {', '.join(STREAMS)}")
    ss = np.random.SeedSequence(entropy=int(root_seed), spawn_key=(STREAMS.index(stream), *map(int, key)))
    return int(ss.generate_state(1, dtype=np.uint64)[0] >> np.uint64(1))


def generator(root_seed: int, stream: str, device: str | torch.device = "cpu", key: tuple[int, ...] = ()) -> torch.Generator:
    """A seeded :class:`torch.Generator` on ``device`` for one stream (or sub-stream ``key``) of one trial."""
    g = torch.Generator(device=device)
    g.manual_seed(stream_seed(root_seed, stream, *key))
    return g


def rng(root_seed: int, stream: str, *key: int) -> np.random.Generator:
    """A seeded NumPy generator for one stream (or sub-stream ``key``) of one trial."""
    return np.random.default_rng(stream_seed(root_seed, stream, *key))
