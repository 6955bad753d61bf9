"""Computation graphs of multi-step tasks (the subgraphs study; Dziri et al.,
NeurIPS 2023, "Faith and Fate: Limits of Transformers on Compositionality").

Every example carries the graph of the algorithm that solves it: nodes are the
intermediate values, edges the data dependences (parent → child, the parent's
position among the child's arguments in the edge attribute ``arg``). Node
attributes:

- ``op``: the operation, a key of :data:`OPS` (or ``"input"``);
- ``value``: the gold value (``int``), always computed by ``OPS[op]`` from the
  parents' values, so a graph is consistent by construction;
- ``k``: the integer parameter of the op (a shift or a place value; 0 if unused);
- ``answer``: True on the nodes that make up the final answer;
- ``span``: ``(start, end)`` character offsets in the target where the value is
  written (only on written nodes: every non-input node of a scratchpad example,
  the answer nodes of an answer-only one).

Text layout. The target is a list of *steps* separated by ``;``, each a list of
*fields* separated by ``,``, ending with the stop character ``$``; the answer is
the last step. A field is either one whole number (one node, possibly
negative) or a fixed-width group of digit nodes read by place value (e.g. the
carry and the digit of ``6·3 + 0 = 18`` written as ``18``). A whole-number field
may be written least significant digit first (place :data:`REVERSED`; ``4920``
as ``0294``), the reversed-digit format of multiplication. The layout lives in
``graph.graph["layout"]`` and the target is *rendered from the graph*
(:func:`render_target`), so gold text and graph cannot disagree. A prediction
is read back by splitting on the separators (:func:`read_values`): field k of
step s is compared with the gold field k of step s whatever its length, so one
number written with a wrong digit count does not shift the rest.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import networkx as nx

STOP = "$"
STEP_SEP = ";"
ITEM_SEP = ","

Node = Hashable
# One written entry: a node and its place value in the field (None = the whole field,
# REVERSED = the whole field, least significant digit first).
Entry = tuple[Node, "int | None"]
#: Place of a whole-number field written least significant digit first (non-negative values only).
#: Reversed digits let a left-to-right decoder emit a sum's low digits, whose carries it already
#: knows, before the high ones (Lee et al. 2023, "Teaching Arithmetic to Small Transformers").
REVERSED = -1

_INT = re.compile(r"-?\d+")


def _dp_max(args: Sequence[int], k: int) -> int:
    # Parents ordered (x_i, dp[i-1], dp[i-2]); absent ones (i < 2) are the boundary dp[-1] = dp[-2] = 0.
    skip = args[1] if len(args) > 1 else 0
    take = args[0] + (args[2] if len(args) > 2 else 0)
    return max(skip, take)


# op name -> f(ordered parent values, k) -> value. Used both to build gold graphs and to
# re-apply an op to *predicted* parent values when labelling errors.
OPS: dict[str, Callable[[Sequence[int], int], int]] = {
    "mul": lambda a, k: math.prod(a),
    "digit": lambda a, k: sum(a) % 10,
    "carry": lambda a, k: sum(a) // 10,
    # Digits (least significant first) composed into a number, shifted left by k places.
    "compose": lambda a, k: sum(v * 10**i for i, v in enumerate(a)) * 10**k,
    "add": lambda a, k: sum(a),
    # Digit at place k of the parents' sum.
    "place": lambda a, k: sum(a) // 10**k % 10,
    "max": _dp_max,
    "copy": lambda a, k: a[0],
}


@dataclass(frozen=True, eq=False)
class Example:
    """One task instance with its computation graph.

    Attributes:
        task: ``"multiplication"`` or ``"maxsubseq"``.
        prompt: the model's input, ending with ``=`` (e.g. ``"762*31="``).
        target: what the model must generate after the prompt, ending with ``$``.
        answer: the final answer as written (the last step of ``target``, without ``$``).
        graph: the computation graph (see the module docstring).
        sizes: operand digit counts (multiplication) or ``(length,)`` (DP).
        depth: longest path from an input node, in edges, in bindscale's graph.
        width: largest number of nodes (inputs included) at one depth.
        scratchpad: whether ``target`` writes the intermediate steps.
        depth_source: the depth (edges) of the same problem under the source's graph
            convention where bindscale knows it (multiplication:
            :func:`multiplication.source_depth`), else None.
    """

    task: str
    prompt: str
    target: str
    answer: str
    graph: nx.DiGraph = field(repr=False)
    sizes: tuple[int, ...]
    depth: int
    width: int
    scratchpad: bool
    depth_source: int | None = None


def topo_order(graph: nx.DiGraph) -> list[Node]:
    """Nodes in a topological order that follows insertion order where it is free (deterministic)."""
    index = {n: i for i, n in enumerate(graph.nodes)}
    return list(nx.lexicographical_topological_sort(graph, key=index.__getitem__))


def parents(graph: nx.DiGraph, node: Node) -> list[Node]:
    """Parents of ``node`` in argument order (edge attribute ``arg``)."""
    return sorted(graph.predecessors(node), key=lambda p: graph.edges[p, node]["arg"])


def recompute(graph: nx.DiGraph, node: Node, parent_values: Sequence[int]) -> int:
    """Apply ``node``'s op to the given (ordered) parent values.

    Raises:
        ValueError: ``node`` is an input (it has no op to apply).
    """
    data = graph.nodes[node]
    if data["op"] == "input":
        raise ValueError(f"node {node!r} is an input; it has no op to recompute")
    return OPS[data["op"]](list(parent_values), data.get("k", 0))


def node_depths(graph: nx.DiGraph) -> dict[Node, int]:
    """Depth of every node: the longest path (in edges) from a source (input) node."""
    depth: dict[Node, int] = {}
    for n in topo_order(graph):
        ps = list(graph.predecessors(n))
        depth[n] = 1 + max(depth[p] for p in ps) if ps else 0
    return depth


def graph_depth(graph: nx.DiGraph) -> int:
    """Longest path from an input node, in edges (0 for a graph of inputs only or an empty one)."""
    return max(node_depths(graph).values(), default=0)


def graph_width(graph: nx.DiGraph) -> int:
    """Largest number of nodes sharing one depth (inputs count at depth 0)."""
    return max(Counter(node_depths(graph).values()).values(), default=0)


def signatures(graph: nx.DiGraph) -> dict[Node, str]:
    """Canonical signature of every node's whole ancestor computation.

    A node's signature hashes its op, ``k``, value and its parents' signatures in
    argument order, so two nodes (in any graphs) share it exactly when they sit on
    top of the same computation tree. Node names, and hence positions, do not
    enter: ``2·3 = 6`` is the same subgraph in any column. Hex digests (stable
    across processes, unlike ``hash``) keep deep signatures small.
    """
    sig: dict[Node, str] = {}
    for n in topo_order(graph):
        d = graph.nodes[n]
        parts = [d["op"], str(d.get("k", 0)), str(d["value"])] + [sig[p] for p in parents(graph, n)]
        sig[n] = hashlib.blake2b("|".join(parts).encode(), digest_size=12).hexdigest()
    return sig


def ancestors_signature(graph: nx.DiGraph, node: Node) -> str:
    """Signature of ``node``'s ancestor computation (see :func:`signatures`)."""
    keep = nx.ancestors(graph, node) | {node}
    return signatures(graph.subgraph(keep))[node]


def answer_nodes(graph: nx.DiGraph) -> list[Node]:
    """The nodes flagged ``answer``, in insertion order."""
    return [n for n, d in graph.nodes(data=True) if d.get("answer")]


def is_in_distribution(sizes: Sequence[int], max_size: int) -> bool:
    """True when every operand size (or the length) is at most ``max_size``."""
    return all(s <= max_size for s in sizes)


def _whole(entries: Sequence[Entry]) -> bool:
    """True when the field is one whole number (plain or reversed), not a group of digit slots."""
    return len(entries) == 1 and entries[0][1] in (None, REVERSED)


def _field_text(entries: Sequence[Entry], value_of: Callable[[Node], int]) -> str:
    if _whole(entries):
        node, place = entries[0]
        v = int(value_of(node))
        if place is None:
            return str(v)
        if v < 0:
            raise ValueError(f"node {node!r} is written reversed but has negative value {v}")
        return str(v)[::-1]
    width = max(place for _, place in entries) + 1
    chars = ["0"] * width
    for node, place in entries:
        v = int(value_of(node))
        if not 0 <= v <= 9:
            raise ValueError(f"node {node!r} is a digit slot but has value {v}")
        chars[width - 1 - place] = str(v)
    return "".join(chars)


def _render(graph: nx.DiGraph, values: Mapping[Node, int] | None = None) -> tuple[str, dict[Node, tuple[int, int]]]:
    def value_of(n: Node) -> int:
        return values[n] if values is not None and n in values else graph.nodes[n]["value"]

    text, spans = "", {}
    for s, step in enumerate(graph.graph["layout"]):
        if s:
            text += STEP_SEP
        for f, entries in enumerate(step):
            if f:
                text += ITEM_SEP
            ft, start = _field_text(entries, value_of), len(text)
            for node, place in entries:
                spans[node] = (start, start + len(ft)) if place in (None, REVERSED) else (start + len(ft) - 1 - place, start + len(ft) - place)
            text += ft
    return text + STOP, spans


def render_target(graph: nx.DiGraph, values: Mapping[Node, int] | None = None) -> str:
    """Write the target text from the graph's layout.

    Args:
        graph: a graph with ``graph.graph["layout"]``.
        values: optional node → value overrides (e.g. to plant errors in a test);
            other nodes use their gold ``value``.

    Raises:
        ValueError: a digit slot would hold a value outside 0–9.
    """
    return _render(graph, values)[0]


def _split_fields(predicted_target: str) -> list[list[str | None]]:
    stop = predicted_target.find(STOP)
    body = predicted_target if stop < 0 else predicted_target[:stop]
    steps: list[list[str | None]] = [list(step.split(ITEM_SEP)) for step in body.split(STEP_SEP)]
    if stop < 0:
        # No stop: the text after the last separator may be cut off mid-number, so it is not a reading.
        steps[-1][-1] = None
    return steps


def read_values(example: Example, predicted_target: str) -> dict[Node, int | None]:
    """Read node values back from a predicted target string.

    Step s, field f of the prediction (split on ``;`` then ``,``, cut at the first
    ``$``) is compared with step s, field f of the gold layout. A field must be an
    integer (``-?\\d+``); digit nodes take the digit at their place value of it
    (a shorter number reads as leading zeros, extra leading digits belong to no
    node: exact match catches them); a reversed field (:data:`REVERSED`) must be
    digits only and is read right to left. Without a ``$`` the last field is
    treated as unfinished.

    Args:
        example: the gold example.
        predicted_target: generated text after the prompt.

    Returns:
        Every input node (read from the prompt, so its gold value) and every
        written node → its predicted value, or None where the prediction has no
        such field or the field does not parse. Nodes the format never writes
        (intermediate nodes of answer-only examples) are absent.
    """
    g = example.graph
    out: dict[Node, int | None] = {n: d["value"] for n, d in g.nodes(data=True) if d["op"] == "input"}
    pred = _split_fields(predicted_target)
    for s, step in enumerate(g.graph["layout"]):
        for f, entries in enumerate(step):
            text = pred[s][f] if s < len(pred) and f < len(pred[s]) else None
            v = int(text) if text is not None and _INT.fullmatch(text) else None
            if _whole(entries) and entries[0][1] == REVERSED:
                v = int(text[::-1]) if text is not None and text.isdigit() and text.isascii() else None
            for node, place in entries:
                if place in (None, REVERSED) or v is None:
                    out[node] = v
                else:
                    out[node] = v // 10**place % 10 if v >= 0 else None
    return out


def check_consistency(example: Example) -> None:
    """Check that an example's gold text and graph agree; raises ``AssertionError`` naming the node.

    Every written node's span holds its value, the text reads back to the graph's
    values (:func:`read_values`), and every non-input node's value is its op applied
    to its parents' values.
    """
    g = example.graph
    written = {n for n, d in g.nodes(data=True) if "span" in d}
    inputs = {n for n, d in g.nodes(data=True) if d["op"] == "input"}
    got = read_values(example, example.target)
    want = {n: g.nodes[n]["value"] for n in written | inputs}
    assert got == want, f"text reads back {got} != graph {want}"
    reversed_nodes = {node for step in g.graph["layout"] for entries in step for node, place in entries
                      if place == REVERSED}
    for n in written:
        s, e = g.nodes[n]["span"]
        want_text = str(g.nodes[n]["value"])[:: -1 if n in reversed_nodes else 1]
        assert example.target[s:e] == want_text, f"node {n!r}: span text != value"
    for n in set(g.nodes) - inputs:
        value = recompute(g, n, [g.nodes[p]["value"] for p in parents(g, n)])
        assert value == g.nodes[n]["value"], f"node {n!r}: op gives {value}, graph holds {g.nodes[n]['value']}"


def predicted_answer(predicted_target: str) -> str | None:
    """The answer part of a generated target: its last step before ``$`` (None without a ``$``)."""
    stop = predicted_target.find(STOP)
    return None if stop < 0 else predicted_target[:stop].rsplit(STEP_SEP, 1)[-1]


class GraphBuilder:
    """Builds a computation graph node by node, in computation order, plus its text layout.

    Values are always computed by :data:`OPS` from the parents, so a task module
    only states the algorithm's structure.
    """

    def __init__(self) -> None:
        self.graph = nx.DiGraph()
        self.steps: list[tuple[tuple[Entry, ...], ...]] = []

    def input(self, node: Node, value: int) -> Node:
        """Add an input node (read from the prompt)."""
        self.graph.add_node(node, op="input", value=int(value), k=0)
        return node

    def op(self, node: Node, op: str, args: Sequence[Node], k: int = 0, answer: bool = False) -> Node:
        """Add ``node = OPS[op](values of args, k)`` with edges ``args[i] → node`` (``arg=i``).

        Raises:
            ValueError: unknown op, or ``node`` already exists.
        """
        if op not in OPS:
            raise ValueError(f"unknown op {op!r}; allowed: {sorted(OPS)}")
        if node in self.graph:
            raise ValueError(f"node {node!r} already exists")
        value = OPS[op]([self.graph.nodes[a]["value"] for a in args], k)
        self.graph.add_node(node, op=op, value=int(value), k=k, answer=answer)
        for i, a in enumerate(args):
            self.graph.add_edge(a, node, arg=i)
        return node

    def write(self, fields: Iterable[Sequence[Entry]]) -> None:
        """Append one step to the layout: a list of fields, each a list of ``(node, place)``."""
        self.steps.append(tuple(tuple(entries) for entries in fields))

    def build(self, task: str, prompt: str, sizes: Sequence[int], scratchpad: bool,
              depth_source: int | None = None) -> Example:
        """Render the target from the graph, set spans and measure depth/width (``depth_source``: see :class:`Example`)."""
        g = self.graph
        g.graph["layout"] = tuple(self.steps)
        target, spans = _render(g)
        nx.set_node_attributes(g, spans, "span")
        answer = target[: -len(STOP)].rsplit(STEP_SEP, 1)[-1]
        return Example(task, prompt, target, answer, g, tuple(sizes), graph_depth(g), graph_width(g), scratchpad,
                       depth_source)
