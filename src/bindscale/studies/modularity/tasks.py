"""Compound binary tasks made of two subroutines (the modularity study;
Lepori, Serre, Pavlick, NeurIPS 2023, "Break It Down: Evidence for Structural
Compositionality in Neural Networks").

A *scene* is two objects, each with a shape (``n_shapes`` values) and a colour
(``n_colours`` values). Two subroutines read independent factors of it:

- subroutine **A** = "object 1 and object 2 have the same shape",
- subroutine **B** = "object 1 and object 2 have the same colour",

and the compound label is ``A AND B``. Because shape and colour are drawn
independently, the two subroutines share no input feature: a network that
solves the compound task *can* do it with two separate circuits, and the
mask search asks whether it does.

How this maps to Break It Down. The paper trains a model on a compound task
built from two subroutines (e.g. the vision task Inside-Contact: +/- Inside
and +/- Contact), then looks for a subnetwork that computes one subroutine
and tests it, and its ablation, on datasets in which only one subroutine
decides the answer. Here:

- the **compound** datasets (:meth:`CompoundTask.compound`) are what the
  base model is trained on; positives (A and B true) are half of the rows and
  the three kinds of negatives share the other half equally, so chance (the
  majority-class rate) is 0.5;
- the **subroutine** datasets (:meth:`CompoundTask.subroutine`) hold the other
  factor *true* and balance the target one, so the compound label equals the
  target subroutine's truth value: only that factor decides the answer. They
  play the role of the paper's "+/- Inside" / "+/- Contact" test sets, and
  the subroutine-A training set is what the mask for A is trained on;
- the **pretraining** datasets (:meth:`CompoundTask.pretrain`) are balanced
  over the four (A, B) kinds; labelled with one subroutine's truth value they
  are that subroutine as a task of its own (the subroutine-head pretraining),
  and the generic pretraining reads the same rows with the label A + B (how
  many attributes match; :func:`bindscale.studies.modularity.trial.pretrain`).

**Disjoint data.** :func:`make_datasets` first partitions the scene space
(:func:`partition_scenes`) into a part for the base network's training and
pretraining sets, one for the masks' training sets and one for every test set,
so no test scene was trained on and the masks never see the base network's
training scenes. Only ``n_shapes · n_colours`` scenes have both factors true,
so the positives of every set come from that few scenes split three ways: at
8 × 8 that is 16 test positives, which a small MLP memorises instead of
learning (held-out compound accuracy 0.53–0.88 measured); the study uses 16 × 16.

Our scenes are symbolic tokens, not images or sentences: the point is a
controlled setting where the two factors are independent by construction.

Two input views of the same rows:

- ``tokens`` ``(N, 4)`` int64 ids for a transformer, positions
  ``(shape1, colour1, shape2, colour2)``; shape ``s`` has id ``s``, colour
  ``c`` has id ``n_shapes + c`` (one vocabulary of ``n_shapes + n_colours``);
- ``onehot`` ``(N, D)`` float32 for an MLP, ``D = 2 (n_shapes + n_colours)``:
  the one-hot of each slot over its own values, concatenated in the same
  order ``[shape1 | colour1 | shape2 | colour2]``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

#: Subroutine names: A reads the shapes, B the colours.
FACTORS = ("A", "B")
#: Token positions of a scene.
SLOTS = ("shape1", "colour1", "shape2", "colour2")
#: Keys of :func:`make_datasets`, in the order their generators are spawned.
DATASETS = (
    "compound_train", "compound_test",
    "sub_A_train", "sub_A_test", "sub_B_train", "sub_B_test",
    "pretrain_A", "pretrain_B",
)
#: Parts of the scene space (:func:`partition_scenes`): what the base network is trained on
#: (compound and pretraining sets), what the masks are trained on (subroutine training sets),
#: and what everything is scored on (compound and subroutine test sets).
PARTS = ("base", "mask", "test")
#: The part each dataset draws its scenes from.
PART_OF = {"compound_train": "base", "pretrain_A": "base", "pretrain_B": "base",
           "sub_A_train": "mask", "sub_B_train": "mask",
           "compound_test": "test", "sub_A_test": "test", "sub_B_test": "test"}
#: The four kinds of scene, (A, B) = (same shape, same colour).
KINDS = ((True, True), (True, False), (False, True), (False, False))


@dataclass
class CompoundDataset:
    """One dataset of scenes.

    Attributes:
        name: what it is ("compound", "sub_A", "pretrain_B", …).
        tokens: ``(N, 4)`` int64 token ids (see the module docstring).
        onehot: ``(N, D)`` float32 flat one-hot features.
        labels: ``(N,)`` int64 in {0, 1}: the label of *this* dataset's task
            (compound label for "compound" and "sub_*", the subroutine's truth
            value for "pretrain_*").
        a, b: ``(N,)`` bool truth values of subroutines A (same shape) and B (same colour).
        chance: majority-class rate of ``labels``, the accuracy of a constant guess.
    """

    name: str
    tokens: torch.Tensor
    onehot: torch.Tensor
    labels: torch.Tensor
    a: torch.Tensor
    b: torch.Tensor
    chance: float

    def __len__(self) -> int:
        return len(self.labels)

    def xy(self, view: str = "onehot") -> tuple[torch.Tensor, torch.Tensor]:
        """``(inputs, labels)`` with inputs ``onehot`` ``(N, D)`` or ``tokens`` ``(N, 4)``.

        Raises:
            ValueError: ``view`` is neither "onehot" nor "tokens".
        """
        if view not in ("onehot", "tokens"):
            raise ValueError(f"unknown input view {view!r}; allowed: 'onehot', 'tokens'")
        return getattr(self, view), self.labels


class CompoundTask:
    """Generator of compound "same shape AND same colour" scenes.

    Args:
        n_shapes: number of shape values (≥ 2: "different shape" needs two).
        n_colours: number of colour values (≥ 2).

    Raises:
        ValueError: a vocabulary size is below 2 or above 10 000.
    """

    def __init__(self, n_shapes: int = 8, n_colours: int = 8):
        for name, v in (("n_shapes", n_shapes), ("n_colours", n_colours)):
            if not isinstance(v, (int, np.integer)) or not 2 <= v <= 10_000:
                raise ValueError(f"{name}={v!r} must be an integer in [2, 10000]")
        self.n_shapes, self.n_colours = int(n_shapes), int(n_colours)

    @property
    def vocab_size(self) -> int:
        """Number of distinct token ids."""
        return self.n_shapes + self.n_colours

    @property
    def seq_len(self) -> int:
        """Tokens per scene (L = 4)."""
        return len(SLOTS)

    @property
    def dim(self) -> int:
        """Width ``D`` of the one-hot view."""
        return 2 * (self.n_shapes + self.n_colours)

    def factor_columns(self, factor: str) -> list[int]:
        """One-hot columns that carry ``factor`` ("A": both shapes, "B": both colours).

        Raises:
            ValueError: unknown factor.
        """
        _check_factor(factor)
        S, C = self.n_shapes, self.n_colours
        if factor == "A":
            return list(range(S)) + list(range(S + C, 2 * S + C))
        return list(range(S, S + C)) + list(range(2 * S + C, 2 * (S + C)))

    # -- datasets -----------------------------------------------------------------------

    def compound(self, n: int, rng: np.random.Generator, pool=None) -> CompoundDataset:
        """``n`` scenes labelled ``A AND B``, chance 0.5 (for even ``n``).

        Exactly ``n // 2`` rows are positive; the remaining rows are split as
        evenly as possible over (A, ¬B), (¬A, B), (¬A, ¬B), so no single factor
        gives the label away. Rows are shuffled.

        Raises:
            ValueError: ``n < 1``.
        """
        _check_n(n)
        n_pos = n // 2
        neg = _even_split(n - n_pos, 3)
        a = np.array([True] * n_pos + [True] * neg[0] + [False] * neg[1] + [False] * neg[2])
        b = np.array([True] * n_pos + [False] * neg[0] + [True] * neg[1] + [False] * neg[2])
        return self._build("compound", a, b, a & b, rng, pool)

    def subroutine(self, factor: str, n: int, rng: np.random.Generator, pool=None) -> CompoundDataset:
        """Subroutine test set: the other factor held true, ``factor`` balanced.

        The label is the compound label ``A AND B``, which here equals the
        truth value of ``factor``: only ``factor`` decides the answer.
        ``n // 2`` rows are positive; chance 0.5 for even ``n``. ``pool``: as in
        :meth:`scenes` (also for :meth:`compound` and :meth:`pretrain`).

        Raises:
            ValueError: unknown factor or ``n < 1``.
        """
        _check_factor(factor)
        _check_n(n)
        target = np.arange(n) < n // 2
        other = np.ones(n, dtype=bool)
        a, b = (target, other) if factor == "A" else (other, target)
        return self._build(f"sub_{factor}", a, b, a & b, rng, pool)

    def pretrain(self, factor: str, n: int, rng: np.random.Generator, pool=None) -> CompoundDataset:
        """Subroutine ``factor`` as its own task: label = its truth value.

        The other factor varies independently: the four (A, B) combinations
        have (as nearly as possible) equal counts, so the label is balanced
        and carries no information about the other factor.

        Raises:
            ValueError: unknown factor or ``n < 1``.
        """
        _check_factor(factor)
        _check_n(n)
        k = _even_split(n, 4)
        target = np.array([True] * (k[0] + k[1]) + [False] * (k[2] + k[3]))
        other = np.array([True] * k[0] + [False] * k[1] + [True] * k[2] + [False] * k[3])
        a, b = (target, other) if factor == "A" else (other, target)
        return self._build(f"pretrain_{factor}", a, b, target, rng, pool)

    def scenes(self, a: np.ndarray, b: np.ndarray, rng: np.random.Generator,
               pool: dict[tuple[bool, bool], np.ndarray] | None = None) -> np.ndarray:
        """Draw one scene per row with the requested truth values.

        Args:
            a, b: ``(N,)`` bool: whether the two shapes (colours) must be equal.
            rng: the generator; the first object's attributes are uniform,
                the second's equal them or are uniform over the *other* values.
            pool: optional scenes to draw from, by kind ``(a, b)`` (one part of
                :func:`partition_scenes`): each row is then uniform over the pool's
                scenes of its kind (with replacement). Without it, uniform over all
                scenes of the kind — the same distribution on the whole scene space.

        Returns:
            ``(N, 4)`` int64 attribute values ``(shape1, colour1, shape2, colour2)``
            (shapes in ``[0, n_shapes)``, colours in ``[0, n_colours)``; not token ids).

        Raises:
            ValueError: a row asks for a kind the pool has no scene of.
        """
        n = len(a)
        if pool is not None:
            out = np.zeros((n, 4), dtype=np.int64)
            for kind in KINDS:
                rows = np.flatnonzero((a == kind[0]) & (b == kind[1]))
                if rows.size:
                    if len(pool.get(kind, ())) == 0:
                        raise ValueError(f"the scene pool has no scene of kind (A, B) = {kind}")
                    out[rows] = pool[kind][rng.integers(len(pool[kind]), size=rows.size)]
            return out
        s1 = rng.integers(self.n_shapes, size=n)
        c1 = rng.integers(self.n_colours, size=n)
        # A shift in [1, V) moves to a uniformly drawn *different* value.
        s2 = np.where(a, s1, (s1 + rng.integers(1, self.n_shapes, size=n)) % self.n_shapes)
        c2 = np.where(b, c1, (c1 + rng.integers(1, self.n_colours, size=n)) % self.n_colours)
        return np.stack([s1, c1, s2, c2], axis=1).astype(np.int64)

    def _build(self, name: str, a: np.ndarray, b: np.ndarray, label: np.ndarray, rng, pool=None) -> CompoundDataset:
        perm = rng.permutation(len(a))
        a, b, label = a[perm], b[perm], label[perm]
        attrs = self.scenes(a, b, rng, pool)
        S, C = self.n_shapes, self.n_colours
        tokens = attrs.copy()
        tokens[:, 1] += S
        tokens[:, 3] += S
        onehot = np.zeros((len(a), self.dim), dtype=np.float32)
        offsets = np.array([0, S, S + C, 2 * S + C])
        rows = np.arange(len(a))[:, None]
        onehot[rows, attrs + offsets] = 1.0
        p = float(label.mean())
        return CompoundDataset(
            name=name,
            tokens=torch.from_numpy(tokens),
            onehot=torch.from_numpy(onehot),
            labels=torch.from_numpy(label.astype(np.int64)),
            a=torch.from_numpy(a),
            b=torch.from_numpy(b),
            chance=max(p, 1.0 - p),
        )


def all_scenes(task: CompoundTask) -> np.ndarray:
    """Every scene of ``task``, ``(n_shapes² n_colours², 4)`` attribute values in lexicographic order."""
    grid = np.meshgrid(np.arange(task.n_shapes), np.arange(task.n_colours),
                       np.arange(task.n_shapes), np.arange(task.n_colours), indexing="ij")
    return np.stack([g.ravel() for g in grid], axis=1).astype(np.int64)


def partition_scenes(task: CompoundTask, rng: np.random.Generator, fractions: tuple[float, float, float] = (0.5, 0.25, 0.25)
                     ) -> dict[str, dict[tuple[bool, bool], np.ndarray]]:
    """Split the scene space into disjoint parts :data:`PARTS` (base / mask / test), kind by kind.

    Every scene belongs to exactly one part, so a dataset drawn from one part shares no
    scene with a dataset drawn from another: the test sets are disjoint from the base
    network's and the masks' training sets, and the masks' training set from the base
    network's. The split is stratified by kind (A, B): each of the four kinds (whose sizes
    differ a lot — only ``n_shapes · n_colours`` scenes have both factors true) is shuffled
    by ``rng`` and cut in the proportions ``fractions`` (largest remainder, at least one
    scene per part), so every part holds every kind.

    Args:
        task: the scene space (``n_shapes² n_colours²`` scenes).
        rng: the generator of the shuffle (its own stream: the partition is a seed of its own).
        fractions: shares of (base, mask, test); positive, summing to 1.

    Returns:
        ``{part: {kind: (n, 4) int64 attribute values}}``.

    Raises:
        ValueError: fractions not positive or not summing to 1, or a kind with fewer than
            three scenes (it cannot be split three ways).
    """
    f = np.asarray(fractions, dtype=float)
    if f.shape != (3,) or not np.all(f > 0) or not np.isclose(f.sum(), 1.0):
        raise ValueError(f"fractions={fractions!r} must be three positive shares summing to 1")
    scenes = all_scenes(task)
    a, b = scenes[:, 0] == scenes[:, 2], scenes[:, 1] == scenes[:, 3]
    out: dict[str, dict] = {part: {} for part in PARTS}
    for kind in KINDS:
        pool = scenes[(a == kind[0]) & (b == kind[1])]
        if len(pool) < len(PARTS):
            raise ValueError(f"only {len(pool)} scenes of kind (A, B) = {kind}: too few to split three ways")
        pool = pool[rng.permutation(len(pool))]
        counts = _largest_remainder(len(pool), f)
        for part, chunk in zip(PARTS, np.split(pool, np.cumsum(counts)[:-1])):
            out[part][kind] = chunk
    return out


def make_datasets(
    task: CompoundTask, rng: np.random.Generator, n_train: int, n_test: int,
    fractions: tuple[float, float, float] = (0.5, 0.25, 0.25),
) -> dict[str, CompoundDataset]:
    """Every dataset of one trial, each drawn from its own child of ``rng``, on disjoint scenes.

    Keys are :data:`DATASETS`: compound train/test, subroutine train/test for A
    and B (the mask for a subroutine is trained on ``sub_X_train`` and scored on
    the ``sub_*_test`` sets), and the pretraining sets (``n_train`` rows each).
    The scene space is first split by :func:`partition_scenes` (``fractions`` of
    base / mask / test) on a child generator of its own; each dataset draws its
    rows from its part (:data:`PART_OF`), so no test row is a scene of any training
    set and no mask-training row a scene the base network was trained on. Rows
    repeat scenes within a set when the set is larger than its part. Children are
    spawned in a fixed order (:data:`DATASETS`, then the partition), so one seed
    always gives the same datasets.

    Raises:
        ValueError: ``n_train`` or ``n_test`` is below 1, or the scene space is too
            small to split (see :func:`partition_scenes`).
    """
    children = rng.spawn(len(DATASETS) + 1)
    g = dict(zip(DATASETS, children))
    parts = partition_scenes(task, children[-1], fractions)
    pool = {k: parts[PART_OF[k]] for k in DATASETS}
    out = {"compound_train": task.compound(n_train, g["compound_train"], pool["compound_train"]),
           "compound_test": task.compound(n_test, g["compound_test"], pool["compound_test"])}
    for f in FACTORS:
        for k, n, make in ((f"sub_{f}_train", n_train, task.subroutine), (f"sub_{f}_test", n_test, task.subroutine),
                           (f"pretrain_{f}", n_train, task.pretrain)):
            out[k] = make(f, n, g[k], pool[k])
    return {k: out[k] for k in DATASETS}


def _largest_remainder(n: int, fractions: np.ndarray) -> list[int]:
    """``n`` split in proportions ``fractions`` (largest remainder), every count at least 1 (needs ``n ≥ len``)."""
    k = len(fractions)
    raw = fractions * (n - k)  # one reserved per part, the rest by share
    counts = np.floor(raw).astype(int)
    order = np.argsort(-(raw - counts), kind="stable")
    counts[order[: (n - k) - counts.sum()]] += 1
    return (counts + 1).tolist()


def _even_split(n: int, k: int) -> list[int]:
    """``n`` split into ``k`` counts differing by at most one (larger ones first)."""
    return [n // k + (i < n % k) for i in range(k)]


def _check_factor(factor: str) -> None:
    if factor not in FACTORS:
        raise ValueError(f"unknown subroutine {factor!r}; allowed: {', '.join(FACTORS)}")


def _check_n(n: int) -> None:
    if n < 1:
        raise ValueError(f"dataset size n={n} must be at least 1")
