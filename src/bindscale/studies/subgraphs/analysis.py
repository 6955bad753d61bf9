"""Subgraph statistics of multi-step tasks (Dziri et al.,
NeurIPS 2023, "Faith and Fate: Limits of Transformers on Compositionality").

- :func:`classify_nodes_dziri` labels every node of a predicted scratchpad with
  Dziri et al.'s error types as their paper defines them (correct, local error,
  propagation error, restoration, plus missing); :func:`classify_nodes` gives
  bindscale's finer labels, which split wrong nodes by whether the op applied to
  the *predicted* parents explains them. The report's error-type figure uses
  Dziri et al.'s definitions; bindscale's are kept beside them.
- :func:`subgraph_coverage`: whether a test node's whole ancestor computation
  occurs in the training graphs, among correct vs wrong nodes, by depth.
- :func:`relative_information_gain`: RIG(Y; X_S) = (H(Y) − H(Y | X_S)) / H(Y),
  how much of an output digit's entropy a few input digits explain (plug-in
  entropies from counts).
- :func:`fit_compounding`: accuracy ≈ (1 − ε)^depth, the error-compounding model.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Mapping, Sequence

import numpy as np
import pandas as pd
from scipy.optimize import curve_fit

from .tasks.compgraph import Example, Node, answer_nodes, node_depths, parents, recompute, signatures, topo_order

LABELS = ("correct", "local", "propagation", "restoration", "missing", "unobserved")
# Coarse grouping used by the coverage summary: did the node end up with the right value?
COARSE = {"correct": "correct", "restoration": "correct", "local": "wrong", "propagation": "wrong"}


def _written_nodes(example: Example, predicted_values: Mapping[Node, int | None], labels: dict[Node, str]):
    """Walk ``example``'s graph in topological order; label inputs ``"correct"``, nodes the format has no
    slot for ``"unobserved"`` and nodes never written ``"missing"`` in ``labels``; yield ``(node, gold,
    predicted)`` for every other node, for the caller to label."""
    g = example.graph
    for n in topo_order(g):
        if g.nodes[n]["op"] == "input":
            labels[n] = "correct"
        elif n not in predicted_values:
            labels[n] = "unobserved"
        elif predicted_values[n] is None:
            labels[n] = "missing"
        else:
            yield n, g.nodes[n]["value"], predicted_values[n]


def classify_nodes(example: Example, predicted_values: Mapping[Node, int | None]) -> dict[Node, str]:
    """Error type of every node of one prediction, bindscale's "recomputed" labels.

    Dziri et al., NeurIPS 2023, "Faith and Fate" name these types; this function
    sharpens them by recomputing each op on the predicted parents (their paper's
    definitions are :func:`classify_nodes_dziri`; both give the same right/wrong
    split, :data:`COARSE`). Labels (``v`` the node's predicted value, ``P`` its predicted parents, ``op(P)``
    its op applied to them, "wrong" meaning ≠ gold):

    - ``"correct"``: ``v`` right and nothing was repaired (inputs always; they come from the prompt);
    - ``"local"``: ``v`` wrong and not explained by the parents: ``v ≠ op(P)``
      (so a wrong value over all-correct parents is local), or a parent is missing;
    - ``"propagation"``: ``v`` wrong but ``v = op(P)``: a correct step on wrong parents;
    - ``"restoration"``: ``v`` right although a parent is wrong and ``op(P)`` would
      have been wrong — the model repaired an upstream error. A right ``v`` whose
      wrong parent does not change ``op(P)`` (e.g. a carry unaffected by a wrong
      units digit) is ``"correct"``: nothing needed repairing. (When a parent is
      missing, ``op(P)`` is unknown and any wrong parent makes it a restoration.)
    - ``"missing"``: the prediction never wrote the node (``None``);
    - ``"unobserved"``: the format has no slot for the node (intermediate nodes of
      answer-only examples); children then see its gold value.

    Args:
        example: the gold example.
        predicted_values: from :func:`compgraph.read_values`.

    Returns:
        node → label for every node of ``example.graph``.
    """
    g = example.graph
    labels: dict[Node, str] = {}
    for n, gold, v in _written_nodes(example, predicted_values, labels):
        ps = parents(g, n)
        pv = [predicted_values.get(p, g.nodes[p]["value"]) for p in ps]
        any_wrong = any(x is not None and x != g.nodes[p]["value"] for p, x in zip(ps, pv))
        implied = recompute(g, n, pv) if all(x is not None for x in pv) else None
        if v == gold:
            labels[n] = "restoration" if any_wrong and implied != gold else "correct"
        else:
            labels[n] = "propagation" if any_wrong and implied == v else "local"
    return labels


def classify_nodes_dziri(example: Example, predicted_values: Mapping[Node, int | None]) -> dict[Node, str]:
    """Error type of every node with Dziri et al.'s definitions.

    Dziri et al., NeurIPS 2023, "Faith and Fate: Limits of Transformers on
    Compositionality", §3: a node is judged by whether its value and its
    parents' values are right (equal to gold):

    - ``"correct"``: right, and every parent right (inputs always; they come from the prompt);
    - ``"local"``: wrong although every parent is right (the step itself failed);
    - ``"propagation"``: wrong, and a parent is wrong;
    - ``"restoration"``: right although a parent is wrong;
    - ``"missing"``: the prediction never wrote the node (``None``); it counts as a wrong parent;
    - ``"unobserved"``: the format has no slot for the node (intermediate nodes of
      answer-only examples); it counts as a right parent.

    Unlike :func:`classify_nodes`, nothing is recomputed: a wrong node over a
    wrong parent is a propagation error even when the op applied to the predicted
    parents would not give its value, and a right node over a wrong parent is a
    restoration even when the wrong parent did not matter. (The released analysis
    code of Faith and Fate differs from the paper's wording in two ways: it splits
    wrong nodes by recomputation, as :func:`classify_nodes` does, and it counts a
    node "correct" only when all its ancestors are; this function follows the paper.)

    Args:
        example: the gold example.
        predicted_values: from :func:`compgraph.read_values`.

    Returns:
        node → label for every node of ``example.graph``.
    """
    g = example.graph
    labels: dict[Node, str] = {}
    right: dict[Node, bool] = {}
    for n, gold, v in _written_nodes(example, predicted_values, labels):
        # Nodes labelled by _written_nodes: inputs and unobserved count as right parents, missing as wrong.
        for m in [m for m in labels if m not in right]:
            right[m] = labels[m] != "missing"
        right[n] = v == gold
        parents_right = all(right[p] for p in parents(g, n))
        if right[n]:
            labels[n] = "correct" if parents_right else "restoration"
        else:
            labels[n] = "local" if parents_right else "propagation"
    return labels


#: The node taxonomies a trial records: name → labelling function.
TAXONOMIES: dict[str, Callable[[Example, Mapping[Node, int | None]], dict[Node, str]]] = {
    "dziri": classify_nodes_dziri,
    "recomputed": classify_nodes,
}


def label_table(examples: Sequence[Example], labels: Sequence[Mapping[Node, str]]) -> pd.DataFrame:
    """Counts of node labels by depth, long format.

    Returns:
        DataFrame with columns ``depth, label, n, share`` (share of the depth's
        labelled nodes; inputs excluded).
    """
    rows = []
    for ex, lab in zip(examples, labels, strict=True):
        depth = node_depths(ex.graph)
        rows += [(depth[n], lab[n]) for n in lab if ex.graph.nodes[n]["op"] != "input"]
    df = pd.DataFrame(rows, columns=["depth", "label"])
    out = df.groupby(["depth", "label"]).size().rename("n").reset_index()
    out["share"] = out["n"] / out.groupby("depth")["n"].transform("sum")
    return out


def training_signatures(examples: Sequence[Example]) -> set[str]:
    """Signatures of every node of every training graph (see :func:`compgraph.signatures`)."""
    seen: set[str] = set()
    for ex in examples:
        seen.update(signatures(ex.graph).values())
    return seen


def subgraph_coverage(
    train_examples: Sequence[Example],
    test_examples: Sequence[Example],
    labels: Sequence[Mapping[Node, str]] | None = None,
    coarse: bool = True,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Whether each test node's whole ancestor computation occurs in training.

    A node is *seen* when some training graph has a node with the same signature
    (same op, value and, recursively, parents). Inputs are left out.

    Args:
        train_examples: the training data (or a sample of it).
        test_examples: the evaluated examples.
        labels: optional :func:`classify_nodes` output per test example.
        coarse: group labels into ``"correct"`` (correct, restoration) and
            ``"wrong"`` (local, propagation), dropping missing/unobserved nodes;
            if False keep the fine labels.

    Returns:
        ``(nodes, summary)``: ``nodes`` has one row per test node (``example``
        index, ``node``, ``op``, ``depth``, ``answer``, ``seen``, ``label``);
        ``summary`` is long format ``depth, label, n, seen_share`` (label
        ``"all"`` when no labels are given).

    Raises:
        ValueError: ``labels`` not aligned with ``test_examples``.
    """
    if labels is not None and len(labels) != len(test_examples):
        raise ValueError(f"{len(labels)} label dicts for {len(test_examples)} test examples")
    seen = training_signatures(train_examples)
    rows = []
    for e, ex in enumerate(test_examples):
        g, sig, depth = ex.graph, signatures(ex.graph), node_depths(ex.graph)
        for n in topo_order(g):
            d = g.nodes[n]
            if d["op"] == "input":
                continue
            label = "all" if labels is None else labels[e][n]
            if labels is not None and coarse:
                label = COARSE.get(label)
            rows.append((e, n, d["op"], depth[n], bool(d.get("answer")), sig[n] in seen, label))
    nodes = pd.DataFrame(rows, columns=["example", "node", "op", "depth", "answer", "seen", "label"])
    kept = nodes.dropna(subset=["label"])
    summary = (
        kept.groupby(["depth", "label"])["seen"].agg(n="size", seen_share="mean").reset_index()
        if len(kept)
        else pd.DataFrame(columns=["depth", "label", "n", "seen_share"])
    )
    return nodes, summary


def _entropy(cols: np.ndarray) -> float:
    """Plug-in entropy (nats) of the rows of ``cols`` ``(N, k)``; 0 for k = 0."""
    if cols.shape[1] == 0:
        return 0.0
    _, counts = np.unique(cols, axis=0, return_counts=True)
    p = counts / counts.sum()
    return float(-(p * np.log(p)).sum())


def relative_information_gain(inputs: np.ndarray, outputs: np.ndarray, subset: Sequence[int]) -> float:
    """RIG(Y; X_S) = (H(Y) − H(Y | X_S)) / H(Y), plug-in estimates from counts.

    ``H(Y | X_S) = H(X_S, Y) − H(X_S)``. 0 means X_S tells nothing about Y,
    1 that it determines Y (in this sample).

    Args:
        inputs: ``(N, D_in)`` integer features (e.g. input digits).
        outputs: ``(N,)`` integer target (e.g. one output digit).
        subset: column indices S of ``inputs`` (empty → 0).

    Returns:
        RIG in [0, 1]; NaN when H(Y) = 0 (a constant output).

    Raises:
        ValueError: shapes do not match, or an index is out of range.
    """
    X, y = np.asarray(inputs), np.asarray(outputs)
    if X.ndim != 2 or y.ndim != 1 or len(X) != len(y) or len(y) == 0:
        raise ValueError(f"need inputs (N, D) and outputs (N,) with N > 0, got {X.shape} and {y.shape}")
    idx = list(subset)
    if any(not 0 <= i < X.shape[1] for i in idx):
        raise ValueError(f"subset {idx} out of range for {X.shape[1]} input columns")
    h_y = _entropy(y[:, None])
    if h_y == 0:
        return float("nan")
    xs = X[:, idx]
    h_y_given_x = _entropy(np.column_stack([xs, y])) - _entropy(xs)
    return (h_y - h_y_given_x) / h_y


def _natural_key(name: object) -> tuple:
    # "a10" after "a9": split digits from letters.
    return tuple(int(t) if t.isdigit() else t for t in re.findall(r"\d+|\D+", str(name)))


def rig_table(examples: Sequence[Example], max_order: int = 2) -> pd.DataFrame:
    """RIG of every answer node vs every set of at most ``max_order`` input nodes.

    Examples of different sizes are aligned by node name; a node an example
    lacks counts as 0 (a leading zero for digits; an appended 0 does not change
    a max-sum answer either).

    Returns:
        Long DataFrame ``output, inputs (tuple of node names), order, rig``.

    Raises:
        ValueError: no examples, several tasks mixed, or ``max_order < 1``.
    """
    if not examples or len({ex.task for ex in examples}) != 1 or max_order < 1:
        raise ValueError("need a non-empty list of examples of one task and max_order >= 1")
    in_names = sorted({n for ex in examples for n, d in ex.graph.nodes(data=True) if d["op"] == "input"}, key=_natural_key)
    out_names = sorted({n for ex in examples for n in answer_nodes(ex.graph)}, key=_natural_key)
    X = np.zeros((len(examples), len(in_names)), dtype=np.int64)
    Y = np.zeros((len(examples), len(out_names)), dtype=np.int64)
    for r, ex in enumerate(examples):
        val = ex.graph.nodes
        X[r] = [val[n]["value"] if n in val else 0 for n in in_names]
        Y[r] = [val[n]["value"] if n in val else 0 for n in out_names]
    rows = []
    for o, out in enumerate(out_names):
        for order in range(1, max_order + 1):
            for sub in itertools.combinations(range(len(in_names)), order):
                rig = relative_information_gain(X, Y[:, o], sub)
                rows.append((out, tuple(in_names[i] for i in sub), order, rig))
    return pd.DataFrame(rows, columns=["output", "inputs", "order", "rig"])


def fit_compounding(
    depths: Sequence[float], accuracies: Sequence[float], weights: Sequence[float] | None = None
) -> tuple[float, float]:
    """Fit accuracy ≈ (1 − ε)^depth: a constant per-step error rate ε that compounds.

    Least squares on accuracies (not their log, so zero accuracies are usable),
    ε bounded to [0, 1]; ``weights`` (e.g. example counts per depth) weight the
    squared residuals.

    Returns:
        ``(eps, r2)``: the fitted ε and the (weighted) R² of the fit (NaN when
        the accuracies do not vary).

    Raises:
        ValueError: mismatched lengths, fewer than 2 points, or non-positive weights.
    """
    d, acc = np.asarray(depths, dtype=float), np.asarray(accuracies, dtype=float)
    w = np.ones_like(acc) if weights is None else np.asarray(weights, dtype=float)
    if not (d.shape == acc.shape == w.shape) or d.ndim != 1 or len(d) < 2:
        raise ValueError(f"need >= 2 matching depths/accuracies/weights, got {d.shape}, {acc.shape}, {w.shape}")
    if np.any(w <= 0):
        raise ValueError("weights must be positive")

    def model(x: np.ndarray, eps: float) -> np.ndarray:
        return (1.0 - eps) ** x

    # Start from the per-point ε that would explain each accuracy exactly.
    ok = (acc > 0) & (d > 0)
    eps0 = float(np.clip(np.median(1 - acc[ok] ** (1 / d[ok])), 1e-3, 1 - 1e-3)) if ok.any() else 0.5
    (eps,), _ = curve_fit(model, d, acc, p0=[eps0], sigma=1 / np.sqrt(w), bounds=(0.0, 1.0))
    resid = acc - model(d, eps)
    mean = np.average(acc, weights=w)
    ss_tot = float((w * (acc - mean) ** 2).sum())
    r2 = 1 - float((w * resid**2).sum()) / ss_tot if ss_tot > 0 else float("nan")
    return float(eps), r2


def accuracy_by(examples: Sequence[Example], correct: Sequence[bool], key: str | Callable[[Example], object]) -> pd.DataFrame:
    """Exact-match accuracy grouped by an example attribute (``"depth"``, ``"width"``, ``"sizes"``…) or a function.

    Returns:
        DataFrame ``<key>, n, accuracy`` sorted by key (column ``key`` for a function).

    Raises:
        ValueError: ``correct`` not aligned with ``examples``.
    """
    ok = np.asarray(correct, dtype=bool)
    if ok.shape != (len(examples),):
        raise ValueError(f"correct has shape {ok.shape}, expected ({len(examples)},)")
    name = key if isinstance(key, str) else "key"
    get: Callable[[Example], object] = (lambda ex: getattr(ex, key)) if isinstance(key, str) else key
    df = pd.DataFrame({name: [get(ex) for ex in examples], "correct": ok})
    return df.groupby(name, sort=True)["correct"].agg(n="size", accuracy="mean").reset_index()
