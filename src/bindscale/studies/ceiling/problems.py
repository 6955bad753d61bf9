"""Constrained problems with exact labels: graph colouring, 0/1 knapsack, task assignment.

Each family draws seeded instances at an integer *difficulty* (1 = smallest and loosest; larger
values add variables and tighten constraints, :data:`SIZES`), solves them exactly and scores any
proposed solution constraint by constraint (:meth:`Problem.check`).

A solution is one integer per variable, each in ``0 .. n_values - 1``:

- ``colouring`` — a colour per node. Constraints: one per edge (its ends differ). Objective:
  minimise the number of distinct colours used. Instances have a planted 3-colouring (edges only
  join different planted classes) and allow :data:`COLOURS` colours, so a feasible answer can be
  sub-optimal. Optimal labels are canonical: colours renumbered in order of first use, so that
  the many symmetric optima map to one target sequence.
- ``knapsack`` — 0/1 per item. Constraint: one, the capacity (total weight ≤ capacity); the
  per-constraint satisfaction rate of this family therefore equals its feasibility rate.
  Objective: maximise total value.
- ``assignment`` — a machine per task. Constraints of three types: capacity (one per machine:
  the loads assigned to it ≤ its capacity), eligibility (one per forbidden task–machine pair) and
  conflict (one per task pair that must not share a machine). Objective: minimise total cost.
  Instances are built around a planted feasible assignment, so every instance is feasible.

Exact labels: SciPy's :func:`scipy.optimize.milp` (the HiGHS branch-and-cut solver; Huangfu &
Hall 2018, "Parallelizing the dual revised simplex method", Math. Prog. Comp.). Chosen over
OR-Tools and python-constraint because SciPy is already a pinned dependency of bindscale (no new
package to install or keep), HiGHS is exact on these integer programs, and the instances are
small (at most a few dozen binaries). Tests compare the solver's optimum with brute force.

Serialisations: :meth:`Problem.tokens` (the trained transformer's prompt: whitespace tokens, every
number one token) and :meth:`Problem.text` (the natural-language prompt real language models get).
"""

from __future__ import annotations

import hashlib
import itertools
import warnings
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from scipy.optimize import LinearConstraint

# networkx and scipy.optimize are imported where they are used (Problem.key, milp_model, solve): the study's
# config imports this module for FAMILIES, and a refused ``--set`` must answer in well under a second.

FAMILIES = ("colouring", "knapsack", "assignment")
#: Colours a colouring answer may use; instances have a planted colouring with :data:`PLANTED` colours.
COLOURS, PLANTED = 4, 3
#: Machines of an assignment instance.
MACHINES = 3
#: Difficulty → size: nodes (colouring), items (knapsack), tasks (assignment).
#: Colouring starts at 8 nodes: 6-node planted graphs fall into fewer than 90 isomorphism classes, too few for
#: train and test sets disjoint up to relabelling (:attr:`Problem.key`).
SIZES = {"colouring": lambda d: 6 + 2 * d, "knapsack": lambda d: 4 + 2 * d, "assignment": lambda d: 3 + 2 * d}
#: Largest difficulty (sizes stay within what the solver and the token vocabulary take).
MAX_DIFFICULTY = 6


class ProblemError(ValueError):
    """A malformed instance or solution (wrong length, value out of range)."""


@dataclass(frozen=True)
class Problem:
    """One instance of a family, with its exact optimum.

    Attributes:
        family: one of :data:`FAMILIES`. difficulty: the knob it was drawn at.
        n_vars: variables of a solution. n_values: each variable takes ``0 .. n_values - 1``.
        data: the instance (tuples of ints; see each family's builder).
        constraint_names: one name per constraint (``edge 0-3``, ``capacity m1`` …), in check order.
        constraint_types: the type of each (``edge``, ``capacity``, ``eligibility``, ``conflict``).
        sense: ``"min"`` or ``"max"``.
        optimum: an optimal solution (canonical for colouring). opt_value: its objective value.
    """

    family: str
    difficulty: int
    n_vars: int
    n_values: int
    data: dict = field(compare=False, hash=False)
    constraint_names: tuple[str, ...] = ()
    constraint_types: tuple[str, ...] = ()
    sense: str = "min"
    optimum: tuple[int, ...] = ()
    opt_value: float = float("nan")

    # -- scoring -------------------------------------------------------------------------------
    def check(self, solution) -> np.ndarray:
        """Per-constraint satisfaction of ``solution``: bool array ``(n_constraints,)``.

        Raises:
            ProblemError: ``solution`` is not ``n_vars`` integers in ``0 .. n_values - 1`` (the
                parser turns such outputs into "unparsable": every constraint violated).
        """
        x = self._validate(solution)
        d = self.data
        if self.family == "colouring":
            return np.array([x[u] != x[v] for u, v in d["edges"]], dtype=bool)
        if self.family == "knapsack":
            return np.array([sum(w for w, xi in zip(d["weights"], x) if xi) <= d["capacity"]], dtype=bool)
        loads = np.zeros(MACHINES, dtype=np.int64)
        for i, j in enumerate(x):
            loads[j] += d["loads"][i]
        cap = [loads[j] <= d["capacities"][j] for j in range(MACHINES)]
        elig = [x[i] != j for i, j in d["forbidden"]]
        conf = [x[a] != x[b] for a, b in d["conflicts"]]
        return np.array(cap + elig + conf, dtype=bool)

    def objective(self, solution) -> float:
        """Objective value of ``solution`` (colours used; total value; total cost). Raises as :meth:`check`."""
        x = self._validate(solution)
        d = self.data
        if self.family == "colouring":
            return float(len(set(x)))
        if self.family == "knapsack":
            return float(sum(v for v, xi in zip(d["values"], x) if xi))
        return float(sum(d["costs"][i][j] for i, j in enumerate(x)))

    def gap(self, solution) -> float:
        """Relative optimality gap of a solution, ``|f(x) - f*| / |f*|`` (0 = optimal; the value is meaningful
        only for feasible solutions). Raises as :meth:`check`."""
        f = self.objective(solution)
        return abs(f - self.opt_value) / abs(self.opt_value) if self.opt_value else abs(f - self.opt_value)

    def _validate(self, solution) -> tuple[int, ...]:
        x = tuple(solution)
        if len(x) != self.n_vars:
            raise ProblemError(f"{self.family}: a solution has {self.n_vars} values, got {len(x)}")
        for v in x:
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not 0 <= v < self.n_values:
                raise ProblemError(f"{self.family}: value {v!r} outside 0..{self.n_values - 1}")
        return tuple(int(v) for v in x)

    @property
    def n_constraints(self) -> int:
        return len(self.constraint_names)

    # -- serialisations ------------------------------------------------------------------------
    def tokens(self) -> list[str]:
        """The transformer's prompt: family tag, then the instance, every number one token."""
        d = self.data
        if self.family == "colouring":
            out = ["COL", "n", str(self.n_vars), "k", str(COLOURS)]
            for u, v in d["edges"]:
                out += ["e", str(u), str(v)]
            return out
        if self.family == "knapsack":
            out = ["KNA", "cap", str(d["capacity"])]
            for w, v in zip(d["weights"], d["values"]):
                out += ["it", str(w), str(v)]
            return out
        out = ["ASG", "cap", *map(str, d["capacities"])]
        for i in range(self.n_vars):
            out += ["t", str(d["loads"][i]), "c", *map(str, d["costs"][i])]
        for i, j in d["forbidden"]:
            out += ["x", str(i), str(j)]
        for a, b in d["conflicts"]:
            out += ["y", str(a), str(b)]
        return out

    @cached_property
    def key(self) -> str:
        """Identity of the instance for train/test disjointness (16 hex chars). Colouring: the graph up to node
        relabelling, its Weisfeiler-Lehman hash (:func:`networkx.weisfeiler_lehman_graph_hash`; Shervashidze et
        al. 2011, "Weisfeiler-Lehman Graph Kernels"): isomorphic graphs always share it, and the rare
        non-isomorphic pair that also shares it is merely redrawn, so sets keyed by it are disjoint up to
        relabelling. Other families: sha256 of the prompt tokens."""
        if self.family == "colouring":
            import networkx as nx

            g = nx.Graph()
            g.add_nodes_from(range(self.n_vars))  # isolated nodes count
            g.add_edges_from(self.data["edges"])
            with warnings.catch_warnings():  # networkx 3.5 notes its hashes changed: ours are all made by one version
                warnings.simplefilter("ignore", UserWarning)
                return "c" + nx.weisfeiler_lehman_graph_hash(g, iterations=4, digest_size=8)[:15]
        return hashlib.sha256(" ".join(self.tokens()).encode()).hexdigest()[:16]

    def text(self) -> str:
        """The natural-language prompt given to real language models (the answer format is stated last)."""
        d = self.data
        if self.family == "colouring":
            edges = ", ".join(f"{u}-{v}" for u, v in d["edges"])
            body = (f"Graph colouring. Nodes 0 to {self.n_vars - 1}. Edges: {edges}. Give each node a colour "
                    f"from 0 to {COLOURS - 1} so that the two ends of every edge have different colours, using "
                    "as few distinct colours as possible.")
            fmt = f"the colour of node 0, node 1, ..., node {self.n_vars - 1}"
        elif self.family == "knapsack":
            items = "; ".join(f"item {i}: weight {w}, value {v}"
                              for i, (w, v) in enumerate(zip(d["weights"], d["values"])))
            body = (f"0/1 knapsack. Capacity {d['capacity']}. {items}. Choose items so that their total weight "
                    "is at most the capacity and their total value is as large as possible.")
            fmt = f"1 if item i is chosen else 0, for items 0 to {self.n_vars - 1}"
        else:
            caps = ", ".join(f"machine {j}: {c}" for j, c in enumerate(d["capacities"]))
            tasks = "; ".join(f"task {i}: load {d['loads'][i]}, cost on machines 0/1/2 = "
                              f"{'/'.join(map(str, d['costs'][i]))}" for i in range(self.n_vars))
            forb = ", ".join(f"task {i} not on machine {j}" for i, j in d["forbidden"]) or "none"
            conf = ", ".join(f"tasks {a} and {b}" for a, b in d["conflicts"]) or "none"
            body = (f"Task assignment. Assign each of tasks 0 to {self.n_vars - 1} to one of machines 0 to "
                    f"{MACHINES - 1}. Machine capacities (total load allowed): {caps}. {tasks}. Forbidden: {forb}. "
                    f"Pairs that must be on different machines: {conf}. Respect every constraint and make the "
                    "total cost as small as possible.")
            fmt = f"the machine of task 0, task 1, ..., task {self.n_vars - 1}"
        return (f"{body}\nAnswer with one line 'ANSWER:' followed by {self.n_vars} integers separated by spaces: "
                f"{fmt}.")


# ------------------------------------------------------------------------------------- builders

def _colouring(rng: np.random.Generator, difficulty: int) -> tuple[int, int, dict]:
    """Planted 3-colouring; each cross-class pair is an edge with probability 0.25 + 0.08 * difficulty; a graph
    without edges (any answer satisfies it) is redrawn."""
    n = SIZES["colouring"](difficulty)
    p = min(0.9, 0.25 + 0.08 * difficulty)
    while True:
        classes = rng.integers(0, PLANTED, size=n)
        edges = tuple((u, v) for u, v in itertools.combinations(range(n), 2)
                      if classes[u] != classes[v] and rng.random() < p)
        if edges:
            return n, COLOURS, {"edges": edges}


def _knapsack(rng: np.random.Generator, difficulty: int) -> tuple[int, int, dict]:
    """Weights and values in 1..9; capacity a share of the total weight that shrinks with difficulty
    (0.55 at 1, 0.3 from 6 on), at least the heaviest item (every item fits alone)."""
    n = SIZES["knapsack"](difficulty)
    w = rng.integers(1, 10, size=n)
    v = rng.integers(1, 10, size=n)
    share = max(0.3, 0.6 - 0.05 * difficulty)
    cap = max(int(w.max()), int(round(share * w.sum())))
    return n, 2, {"weights": tuple(map(int, w)), "values": tuple(map(int, v)), "capacity": cap}


def _assignment(rng: np.random.Generator, difficulty: int) -> tuple[int, int, dict]:
    """A planted assignment; capacities = its loads per machine plus a slack that shrinks with
    difficulty; ``difficulty`` forbidden pairs and ``difficulty`` conflicts, all satisfied by it."""
    n = SIZES["assignment"](difficulty)
    planted = rng.integers(0, MACHINES, size=n)
    loads = rng.integers(1, 6, size=n)
    costs = rng.integers(1, 10, size=(n, MACHINES))
    slack = max(0, 4 - difficulty)
    caps = tuple(int(loads[planted == j].sum()) + slack for j in range(MACHINES))
    pairs = [(i, j) for i in range(n) for j in range(MACHINES) if j != planted[i]]
    pick = rng.choice(len(pairs), size=min(difficulty, len(pairs)), replace=False)
    forbidden = tuple(sorted((int(pairs[k][0]), int(pairs[k][1])) for k in pick))
    cross = [(a, b) for a, b in itertools.combinations(range(n), 2) if planted[a] != planted[b]]
    pick = rng.choice(len(cross), size=min(difficulty, len(cross)), replace=False) if cross else []
    conflicts = tuple(sorted((int(cross[k][0]), int(cross[k][1])) for k in pick))
    return n, MACHINES, {"loads": tuple(map(int, loads)), "costs": tuple(tuple(map(int, r)) for r in costs),
                         "capacities": caps, "forbidden": forbidden, "conflicts": conflicts}


_BUILDERS = {"colouring": _colouring, "knapsack": _knapsack, "assignment": _assignment}


def _names(family: str, n: int, data: dict) -> tuple[tuple[str, ...], tuple[str, ...]]:
    if family == "colouring":
        return tuple(f"edge {u}-{v}" for u, v in data["edges"]), ("edge",) * len(data["edges"])
    if family == "knapsack":
        return ("capacity",), ("capacity",)
    names = ([f"capacity m{j}" for j in range(MACHINES)] + [f"task {i} not on m{j}" for i, j in data["forbidden"]]
             + [f"tasks {a},{b} apart" for a, b in data["conflicts"]])
    types = ["capacity"] * MACHINES + ["eligibility"] * len(data["forbidden"]) + ["conflict"] * len(data["conflicts"])
    return tuple(names), tuple(types)


# ------------------------------------------------------------------------------------- solver

def milp_model(family: str, n: int, k: int, data: dict) -> tuple[np.ndarray, list[LinearConstraint], int]:
    """The family as a binary program for :func:`scipy.optimize.milp` (minimisation).

    Variables: ``x[i, v]`` (variable ``i`` takes value ``v``), flattened row-major (``n * k``), plus for
    colouring ``k`` indicators ``y[c]`` (colour ``c`` used). Returns ``(c, constraints, n_vars)``.
    """
    from scipy.optimize import LinearConstraint

    nx = n * k
    ny = k if family == "colouring" else 0
    size = nx + ny

    def row() -> np.ndarray:
        return np.zeros(size)

    A, lo, hi = [], [], []
    for i in range(n):  # exactly one value per variable
        r = row()
        r[i * k:(i + 1) * k] = 1
        A.append(r), lo.append(1), hi.append(1)
    c = row()
    if family == "colouring":
        c[nx:] = 1  # minimise colours used
        for u, v in data["edges"]:
            for col in range(k):  # x[u,col] + x[v,col] <= y[col]
                r = row()
                r[u * k + col] = r[v * k + col] = 1
                r[nx + col] = -1
                A.append(r), lo.append(-np.inf), hi.append(0)
        for i in range(n):
            for col in range(k):  # x[i,col] <= y[col]
                r = row()
                r[i * k + col], r[nx + col] = 1, -1
                A.append(r), lo.append(-np.inf), hi.append(0)
    elif family == "knapsack":
        r = row()
        r[1::2] = data["weights"]  # x[i, 1]: item i chosen
        A.append(r), lo.append(-np.inf), hi.append(data["capacity"])
        c[1::2] = -np.asarray(data["values"], float)  # maximise value
    else:
        for j in range(k):
            r = row()
            r[j::k] = data["loads"]
            A.append(r), lo.append(-np.inf), hi.append(data["capacities"][j])
        for i, j in data["forbidden"]:
            r = row()
            r[i * k + j] = 1
            A.append(r), lo.append(0), hi.append(0)
        for a, b in data["conflicts"]:
            for j in range(k):
                r = row()
                r[a * k + j] = r[b * k + j] = 1
                A.append(r), lo.append(-np.inf), hi.append(1)
        c[:nx] = np.asarray(data["costs"], float).ravel()
    return c, [LinearConstraint(np.array(A), lo, hi)], size


def solve(family: str, n: int, k: int, data: dict) -> tuple[tuple[int, ...], float]:
    """An optimal solution and its objective value (in the family's own sense) by HiGHS.

    Raises:
        RuntimeError: the solver reports no optimal solution (never for generated instances, which are feasible).
    """
    from scipy.optimize import Bounds, milp

    c, cons, size = milp_model(family, n, k, data)
    res = milp(c, constraints=cons, integrality=np.ones(size), bounds=Bounds(0, 1))
    if res.status != 0 or res.x is None:
        raise RuntimeError(f"{family}: HiGHS found no optimal solution ({res.message})")
    x = np.round(res.x[:n * k]).reshape(n, k).argmax(axis=1)
    sol = tuple(int(v) for v in x)
    if family == "colouring":
        sol = canonical_colouring(sol)
    value = -res.fun if family == "knapsack" else res.fun
    return sol, float(round(value))


def canonical_colouring(sol) -> tuple[int, ...]:
    """Colours renumbered in order of first appearance (node 0 gets 0, the next new colour 1, …)."""
    first: dict[int, int] = {}
    return tuple(first.setdefault(int(v), len(first)) for v in sol)


def brute_force(p: Problem) -> float:
    """Best objective value over every solution (``n_values ** n_vars`` of them; tests only); NaN if none is feasible."""
    best = float("nan")
    for x in itertools.product(range(p.n_values), repeat=p.n_vars):
        if p.check(x).all():
            f = p.objective(x)
            if best != best or (f < best if p.sense == "min" else f > best):
                best = f
    return best


def make_problem(family: str, difficulty: int, rng: np.random.Generator) -> Problem:
    """Draw one instance of ``family`` at ``difficulty`` with ``rng`` and solve it exactly.

    Raises:
        ValueError: unknown family or a difficulty outside 1..:data:`MAX_DIFFICULTY`.
    """
    if family not in _BUILDERS:
        raise ValueError(f"unknown problem family {family!r}; allowed: {', '.join(FAMILIES)}")
    if not 1 <= difficulty <= MAX_DIFFICULTY:
        raise ValueError(f"difficulty {difficulty} outside 1..{MAX_DIFFICULTY}")
    n, k, data = _BUILDERS[family](rng, difficulty)
    names, types = _names(family, n, data)
    sol, value = solve(family, n, k, data)
    return Problem(family, difficulty, n, k, data, names, types, "max" if family == "knapsack" else "min", sol, value)


def make_set(family: str, difficulties, n_per: int, rng: np.random.Generator, exclude: set[str] = frozenset(),
             max_tries: int = 20) -> list[Problem]:
    """``n_per`` distinct instances per difficulty (none whose :attr:`Problem.key` is in ``exclude``).

    Raises:
        RuntimeError: ``max_tries * n_per`` draws did not give ``n_per`` new instances (the space is too small).
    """
    out: list[Problem] = []
    seen = set(exclude)
    for d in difficulties:
        got, tries = 0, 0
        while got < n_per:
            tries += 1
            if tries > max_tries * max(1, n_per):
                raise RuntimeError(f"{family} difficulty {d}: only {got} distinct new instances in {tries - 1} draws")
            p = make_problem(family, d, rng)
            if p.key in seen:
                continue
            seen.add(p.key)
            out.append(p)
            got += 1
    return out
