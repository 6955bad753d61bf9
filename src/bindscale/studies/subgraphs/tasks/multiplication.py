"""Multi-digit multiplication with a long-multiplication scratchpad (the
subgraphs study; Dziri et al., NeurIPS 2023, "Faith and Fate: Limits of Transformers
on Compositionality", whose multiplication graph this follows).

Graph of ``a × b`` (``a_i``, ``b_j``: digits, least significant first; ``n``,
``m``: digit counts):

- inputs ``a{i}``, ``b{j}``;
- per digit pair: ``m{i}.{j} = a_i·b_j`` (op ``mul``), then the digit and carry of
  ``m{i}.{j} + c{i-1}.{j}``: ``d{i}.{j}`` (``digit``), ``c{i}.{j}`` (``carry``);
- per digit of b: the partial product ``r{j} = a·b_j·10^j`` (``compose`` of
  ``d0.j … d{n-1}.j, c{n-1}.j``, shifted by j);
- the running sum ``s{j} = s{j-1} + r{j}`` for ``1 ≤ j ≤ m-2`` (``s0`` is ``r0``);
- answer digits ``y{k}`` = digit k of (last running sum + ``r{m-1}``) (``place``).

Scratchpad: one step per digit of b — for each digit of a the product and the
two-character "carry digit" pair, then the shifted partial product — the
running sums as their own steps, then the answer::

    762*31=  2,02,6,06,7,07,762;6,06,18,18,21,22,22860;23622$

(``21,22``: 7·3 = 21, plus carry 1 → carry 2, digit 2.) Answer-only target:
``23622$``. A 3×3-digit target is at most 85 characters.

Reversed-digit format (``reverse=True``): the same graph and steps, but every
whole number of the target (partial products, running sums, the answer) is
written least significant digit first, as the digits are computed; the
per-column fields and the prompt are unchanged::

    762*31=  2,02,6,06,7,07,267;6,06,18,18,21,22,06822;22632$

A left-to-right decoder then emits each sum digit after the carries it depends
on (Lee et al. 2023, "Teaching Arithmetic to Small Transformers", who find
reversed outputs far easier to learn). Faith and Fate write numbers in the usual
order; a study that uses this format says so.

Depth conventions. This graph's depth is ``n + max(m, 2) + 1`` edges: the
carry chain of a row, the partial product, then one running sum per further
digit of b, then the answer digits. Faith and Fate's released multiplication
graphs (their scratchpad graph, ``multiplication/build_graph.py`` in
github.com/nouhadziri/faith-and-fate) are built differently: a column splits
into carry and digit only when its value reaches 10, a carry adds a sum node in
the next column, each row's digits are concatenated left to right, and one
final node adds every shifted row at once. Their depth therefore does not grow
with b and depends on where carries occur: ``n + 3`` edges without carries up
to ``2n + 2`` with a carry in every column (4–12 edges for 1–5 digits).
:func:`source_depth` computes it; each :class:`Example` carries both.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import networkx as nx
import numpy as np

from .compgraph import REVERSED, Example, GraphBuilder

TASK = "multiplication"


def make_example(a: int, b: int, scratchpad: bool, reverse: bool = False) -> Example:
    """The example ``a*b=`` with its computation graph.

    Args:
        a, b: non-negative integers (a's digits index the columns, b's the rows).
        scratchpad: write the long-multiplication steps before the answer.
        reverse: write partial products, running sums and the answer least significant
            digit first (the module docstring's reversed-digit format); ``answer`` is then
            the product's digits reversed.

    Raises:
        ValueError: a negative or non-integer operand.
    """
    for v in (a, b):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0:
            raise ValueError(f"operands must be non-negative integers, got {v!r}")
    a, b = int(a), int(b)
    da = [int(c) for c in reversed(str(a))]
    db = [int(c) for c in reversed(str(b))]
    whole = REVERSED if reverse else None  # place of a whole-number field
    gb = GraphBuilder()
    for i, v in enumerate(da):
        gb.input(f"a{i}", v)
    for j, v in enumerate(db):
        gb.input(f"b{j}", v)

    acc = None  # running sum of the partial products so far
    for j in range(len(db)):
        fields, digits, carry = [], [], None
        for i in range(len(da)):
            m = gb.op(f"m{i}.{j}", "mul", [f"a{i}", f"b{j}"])
            args = [m] if carry is None else [m, carry]
            d = gb.op(f"d{i}.{j}", "digit", args)
            carry = gb.op(f"c{i}.{j}", "carry", args)
            # Carry and digit share one two-character field: "18" = carry 1, digit 8.
            fields += [[(m, None)], [(carry, 1), (d, 0)]]
            digits.append(d)
        r = gb.op(f"r{j}", "compose", digits + [carry], k=j)
        fields.append([(r, whole)])
        if scratchpad:
            gb.write(fields)
        if j == len(db) - 1:
            last = [r] if acc is None else [acc, r]
        elif acc is None:
            acc = r
        else:
            acc = gb.op(f"s{j}", "add", [acc, r])
            if scratchpad:
                gb.write([[(acc, whole)]])

    product = a * b
    n_y = len(str(product))
    ys = [gb.op(f"y{k}", "place", last, k=k, answer=True) for k in range(n_y)]
    # A digit slot's place p is written at character n_y - 1 - p: place k reads the usual
    # order, place n_y - 1 - k puts y0 (the units) first.
    gb.write([[(y, n_y - 1 - k if reverse else k) for k, y in enumerate(ys)]])
    ex = gb.build(TASK, f"{a}*{b}=", (len(da), len(db)), scratchpad, depth_source=source_depth(a, b))
    if ex.answer != str(product)[:: -1 if reverse else 1]:  # the graph is the algorithm; this guards it against Python's product
        raise RuntimeError(f"graph computed {ex.answer} for {a}*{b}={product}")
    return ex


def source_graph(a: int, b: int) -> nx.DiGraph:
    """The dependency structure of ``a × b`` under Faith and Fate's graph convention.

    Dziri et al., NeurIPS 2023, "Faith and Fate: Limits of Transformers on
    Compositionality": the scratchpad graph of their released code, rebuilt here
    from its description (structure only, no values kept). Per digit ``b_j``
    (a row) and digit ``a_i`` (a column, least significant first):

    - a product node ``("p", i, j)`` with parents ``("a", i)`` and ``("b", j)``;
    - if the previous column of the row passed a carry, a sum node
      ``("s", i, j)`` = product + carry;
    - if the column is not the row's last and its value (product or sum) is
      ≥ 10, it splits into a carry ``("c", i, j)`` (passed to the next column)
      and a digit ``("r", i, j)``; otherwise the value itself is the column's
      digit and no carry passes on;
    - a concatenation node ``("o", i, j)`` with parents the column's digit and
      ``("o", i-1, j)``;
    - per row a shift node ``("shift", j)`` (times 10^j) after the last
      concatenation, and one node ``"final"`` whose parents are all shifts.

    Raises:
        ValueError: a negative or non-integer operand.
    """
    for v in (a, b):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0:
            raise ValueError(f"operands must be non-negative integers, got {v!r}")
    da = [int(c) for c in reversed(str(int(a)))]
    db = [int(c) for c in reversed(str(int(b)))]
    g = nx.DiGraph()
    for j, y in enumerate(db):
        carry: tuple[tuple, int] | None = None  # (carry node, its value)
        prev = None
        for i, x in enumerate(da):
            node, value = ("p", i, j), x * y
            g.add_edges_from([(("a", i), node), (("b", j), node)])
            if carry is not None:
                g.add_edges_from([(node, ("s", i, j)), (carry[0], ("s", i, j))])
                node, value = ("s", i, j), value + carry[1]
            carry = None
            if i < len(da) - 1 and value >= 10:
                g.add_edges_from([(node, ("c", i, j)), (node, ("r", i, j))])
                carry, node = (("c", i, j), value // 10), ("r", i, j)
            g.add_edge(node, ("o", i, j))
            if prev is not None:
                g.add_edge(prev, ("o", i, j))
            prev = ("o", i, j)
        g.add_edges_from([(prev, ("shift", j)), (("shift", j), "final")])
    return g


def source_depth(a: int, b: int) -> int:
    """Depth (longest path from an input, in edges) of ``a × b`` under Faith and Fate's graph
    convention (:func:`source_graph`); their analysis scripts count nodes on that path, one more.

    ``n + 3`` without carries up to ``2n + 2`` with a carry in every column (n = digits of a);
    independent of b's length. E.g. 7×8 → 4, 12×13 → 5, 57×68 → 6.
    """
    return int(nx.dag_longest_path_length(source_graph(a, b)))


def make_examples(pairs: Iterable[tuple[int, int]], scratchpad: bool, reverse: bool = False) -> list[Example]:
    """:func:`make_example` for each ``(a, b)``."""
    return [make_example(a, b, scratchpad, reverse) for a, b in pairs]


def _numbers(rng: np.random.Generator, digits: int, n: int) -> list[int]:
    if digits < 1:
        raise ValueError(f"digit count must be >= 1, got {digits}")
    if digits == 1:
        return [int(v) for v in rng.integers(0, 10, n)]
    # Digit by digit, so any size works (no int64 overflow); leading digit nonzero.
    lead = rng.integers(1, 10, n)
    rest = rng.integers(0, 10, (n, digits - 1))
    return [int(str(lead[t]) + "".join(map(str, rest[t]))) for t in range(n)]


def sample_at_sizes(rng: np.random.Generator, digits_a: int, digits_b: int, n: int) -> list[tuple[int, int]]:
    """``n`` operand pairs with exactly ``digits_a`` and ``digits_b`` digits (1-digit numbers include 0).

    Raises:
        ValueError: a digit count below 1.
    """
    return list(zip(_numbers(rng, digits_a, n), _numbers(rng, digits_b, n)))


def sample_operands(
    rng: np.random.Generator, max_digits_a: int, max_digits_b: int, n: int, min_digits: int = 1
) -> list[tuple[int, int]]:
    """``n`` operand pairs whose digit counts are drawn uniformly from
    ``[min_digits, max_digits_a] × [min_digits, max_digits_b]``, then the numbers
    uniformly at those sizes (so small sizes are not swamped by large ones).

    Raises:
        ValueError: ``min_digits < 1`` or a maximum below ``min_digits``.
    """
    if min_digits < 1 or max_digits_a < min_digits or max_digits_b < min_digits:
        raise ValueError(f"need 1 <= min_digits <= max digits, got {min_digits}, {max_digits_a}, {max_digits_b}")
    da = rng.integers(min_digits, max_digits_a + 1, n)
    db = rng.integers(min_digits, max_digits_b + 1, n)
    return [sample_at_sizes(rng, int(x), int(y), 1)[0] for x, y in zip(da, db)]


def size_grid(max_digits_a: int, max_digits_b: int, min_digits: int = 1) -> list[tuple[int, int]]:
    """Every ``(digits_a, digits_b)`` pair in ``[min_digits, max]²``, row-major.

    In distribution is both sizes ≤ 3; see :func:`compgraph.is_in_distribution`.
    """
    return [(x, y) for x in range(min_digits, max_digits_a + 1) for y in range(min_digits, max_digits_b + 1)]


def operand_sizes(pairs: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """Digit counts of each ``(a, b)``."""
    return [(len(str(a)), len(str(b))) for a, b in pairs]
