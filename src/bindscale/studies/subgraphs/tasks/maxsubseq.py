"""Maximum-sum non-adjacent subsequence, solved by dynamic programming (the
subgraphs study; Dziri et al., NeurIPS 2023, "Faith and Fate: Limits of Transformers
on Compositionality", their DP task).

Given ``x_0 … x_{n-1}`` (small integers, default −5…5), find the largest sum of a
subsequence with no two adjacent elements (the empty one counts, so the answer
is ≥ 0). Forward formulation, with ``dp[-1] = dp[-2] = 0``::

    dp[i] = max(dp[i-1], dp[i-2] + x_i)        answer = dp[n-1]

The answer is the maximum sum (not Faith and Fate's selection indicator).
Graph: inputs ``x{i}``; cells ``dp{i}`` (op ``max``, parents ``x_i, dp[i-1],
dp[i-2]`` where they exist); the answer ``y`` (op ``copy`` of ``dp[n-1]``).
Depth ``n + 1``; width ``n`` (the inputs).

Scratchpad: one step per cell, then the answer::

    3,-1,4,-5,2=  3;3;7;7;9;9$

Answer-only target: ``9$``.

No depth in Faith and Fate's convention is computed for this task (unlike
multiplication, :func:`multiplication.source_depth`): their DP task outputs the
selection indicator, fills the table from the end with a separate sum node per
cell (``input[i] + dp[i+2]``) and adds a reconstruction pass, so its graph is of
a different problem, not another drawing of this one.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from .compgraph import Example, GraphBuilder

TASK = "maxsubseq"


def make_example(xs: Sequence[int], scratchpad: bool) -> Example:
    """The example ``x_0,…,x_{n-1}=`` with its DP graph.

    Raises:
        ValueError: an empty sequence or a non-integer element.
    """
    if len(xs) == 0:
        raise ValueError("the sequence must be non-empty")
    for v in xs:
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise ValueError(f"elements must be integers, got {v!r}")
    xs = [int(v) for v in xs]
    gb = GraphBuilder()
    for i, v in enumerate(xs):
        gb.input(f"x{i}", v)
    cells: list[str] = []
    for i in range(len(xs)):
        # Argument order (x_i, dp[i-1], dp[i-2]) is what OPS["max"] expects.
        cells.append(gb.op(f"dp{i}", "max", [f"x{i}"] + cells[::-1][:2]))
        if scratchpad:
            gb.write([[(cells[-1], None)]])
    y = gb.op("y", "copy", [cells[-1]], answer=True)
    gb.write([[(y, None)]])
    return gb.build(TASK, ",".join(map(str, xs)) + "=", (len(xs),), scratchpad)


def make_examples(seqs: Iterable[Sequence[int]], scratchpad: bool) -> list[Example]:
    """:func:`make_example` for each sequence."""
    return [make_example(s, scratchpad) for s in seqs]


def sample_at_length(rng: np.random.Generator, length: int, n: int, low: int = -5, high: int = 5) -> list[list[int]]:
    """``n`` sequences of exactly ``length`` integers drawn uniformly from ``[low, high]``.

    Raises:
        ValueError: ``length < 1`` or ``low > high``.
    """
    if length < 1 or low > high:
        raise ValueError(f"need length >= 1 and low <= high, got {length}, {low}, {high}")
    return [[int(v) for v in row] for row in rng.integers(low, high + 1, (n, length))]


def sample_sequences(
    rng: np.random.Generator, max_len: int, n: int, min_len: int = 1, low: int = -5, high: int = 5
) -> list[list[int]]:
    """``n`` sequences, lengths uniform in ``[min_len, max_len]``, elements uniform in ``[low, high]``.

    In distribution is length ≤ 5; see :func:`compgraph.is_in_distribution`.

    Raises:
        ValueError: ``min_len < 1``, ``max_len < min_len`` or ``low > high``.
    """
    if min_len < 1 or max_len < min_len:
        raise ValueError(f"need 1 <= min_len <= max_len, got {min_len}, {max_len}")
    lengths = rng.integers(min_len, max_len + 1, n)
    return [sample_at_length(rng, int(L), 1, low, high)[0] for L in lengths]
