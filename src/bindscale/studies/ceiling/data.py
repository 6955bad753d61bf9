"""Train / test / held-out instance sets of a ceiling trial, cached on disk.

Sets per family (:mod:`.problems`), each drawn from its own seeded stream (:func:`bindscale.core.seeding.rng`):

- ``test``: ``n_test`` instances at each difficulty ``1 .. max_difficulty``, stream ``("test", family,
  difficulty)`` of ``eval_seed`` — the same for every trial and every model (trained or real), so cells are compared on
  the same instances;
- ``heldout``: ``n_heldout`` instances at ``max_difficulty + 1`` (harder than any training instance),
  stream ``("heldout", family, difficulty)`` of ``eval_seed``;
- ``train``: ``n_train`` instances spread evenly over ``1 .. max_difficulty`` (the remainder to the
  easiest), stream ``("train", family, difficulty)`` of ``data_seed``; an instance equal to a test or
  held-out one (same :attr:`.problems.Problem.key`: colouring graphs up to node relabelling) is redrawn, so
  the three sets are disjoint.

One stream per difficulty makes smaller sets prefixes of larger ones at every difficulty: a real-model
trial with a smaller ``n_test`` answers the first instances of the trained models' test set, and the
data axis's training sets are nested.

Solving costs about 10 ms per instance, so a set is cached as JSON under
``$BINDSCALE_CACHE/ceiling`` (else ``~/.cache/bindscale/ceiling``), keyed by everything that
determines it and by :data:`VERSION` (bump it when a generator changes); files are written to a
temporary name and renamed, so concurrent workers never read half a file.
"""

from __future__ import annotations

import hashlib
import json
import os
from functools import lru_cache
from pathlib import Path
from typing import NamedTuple

from bindscale.kit import rng

from .problems import FAMILIES, Problem, make_set

#: Generator version: part of every cache key.
VERSION = "v3"  # v3: colouring from 8 nodes, no edgeless graphs, keyed up to isomorphism


class InstanceSets(NamedTuple):
    """family → list of problems, per split."""

    train: dict[str, list[Problem]]
    test: dict[str, list[Problem]]
    heldout: dict[str, list[Problem]]


def cache_root() -> Path:
    """``$BINDSCALE_CACHE/ceiling``, else ``~/.cache/bindscale/ceiling``."""
    root = os.environ.get("BINDSCALE_CACHE")
    return Path(root) / "ceiling" if root else Path.home() / ".cache" / "bindscale" / "ceiling"


def problem_to_json(p: Problem) -> dict:
    """A problem as plain JSON (its data, constraints, sense and exact optimum): :func:`problem_from_json`
    rebuilds it, so a reader can re-check answers against it (the run's saved instances, :func:`.llm.recheck`)."""
    return _to_json(p)


def problem_from_json(d: dict) -> Problem:
    """The problem :func:`problem_to_json` wrote.

    Raises:
        KeyError, TypeError, ValueError: ``d`` is not such a dict.
    """
    return _from_json(d)


def _to_json(p: Problem) -> dict:
    return {"family": p.family, "difficulty": p.difficulty, "n_vars": p.n_vars, "n_values": p.n_values,
            "data": p.data, "names": p.constraint_names, "types": p.constraint_types, "sense": p.sense,
            "optimum": p.optimum, "opt_value": p.opt_value}


def _tuples(v):
    return tuple(_tuples(x) for x in v) if isinstance(v, list) else v


def _from_json(d: dict) -> Problem:
    data = {k: _tuples(v) for k, v in d["data"].items()}
    return Problem(d["family"], d["difficulty"], d["n_vars"], d["n_values"], data, tuple(d["names"]),
                   tuple(d["types"]), d["sense"], tuple(d["optimum"]), float(d["opt_value"]))


def _cached(name: str, build) -> list[Problem]:
    path = cache_root() / f"{name}.json"
    if path.is_file():
        try:
            return [_from_json(d) for d in json.loads(path.read_text())]
        except (ValueError, KeyError, TypeError):
            pass  # a damaged cache file is rebuilt
    problems = build()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    tmp.write_text(json.dumps([_to_json(p) for p in problems]))
    os.replace(tmp, path)
    return problems


def _digest(*parts) -> str:
    return hashlib.sha256(repr(parts).encode()).hexdigest()[:12]


@lru_cache(maxsize=32)
def eval_sets(family: str, max_difficulty: int, n_test: int, n_heldout: int, eval_seed: int
              ) -> tuple[tuple[Problem, ...], tuple[Problem, ...]]:
    """``(test, heldout)`` of one family (see the module docstring)."""
    fi = FAMILIES.index(family)
    test = _cached(f"{family}-test-{_digest(VERSION, max_difficulty, n_test, eval_seed)}",
                   lambda: [p for d in range(1, max_difficulty + 1)
                            for p in make_set(family, [d], n_test, rng(eval_seed, "test", fi, d))])
    held = _cached(f"{family}-heldout-{_digest(VERSION, max_difficulty, n_heldout, eval_seed)}",
                   lambda: make_set(family, [max_difficulty + 1], n_heldout,
                                    rng(eval_seed, "heldout", fi, max_difficulty + 1),
                                    exclude={p.key for p in test})) if n_heldout else []
    return tuple(test), tuple(held)


@lru_cache(maxsize=32)
def train_set(family: str, max_difficulty: int, n_train: int, data_seed: int, n_test: int, n_heldout: int,
              eval_seed: int) -> tuple[Problem, ...]:
    """The training instances of one family, disjoint from its test and held-out sets."""
    test, held = eval_sets(family, max_difficulty, n_test, n_heldout, eval_seed)
    exclude = {p.key for p in test + held}
    fi = FAMILIES.index(family)
    per = [n_train // max_difficulty + (1 if d < n_train % max_difficulty else 0) for d in range(max_difficulty)]
    name = f"{family}-train-{_digest(VERSION, max_difficulty, n_train, data_seed, n_test, n_heldout, eval_seed)}"

    def build() -> list[Problem]:
        out: list[Problem] = []
        for d, n in zip(range(1, max_difficulty + 1), per):
            out += make_set(family, [d], n, rng(data_seed, "train", fi, d), exclude=exclude)
        return out

    return tuple(_cached(name, build))


def instance_sets(task) -> InstanceSets:
    """The three sets of a trial's ``task`` section (:class:`.config.CeilingTaskConfig`).

    Raises:
        RuntimeError: a difficulty has too few distinct instances for the sizes asked.
    """
    tr, te, he = {}, {}, {}
    for f in task.family_list:
        te[f], he[f] = map(list, eval_sets(f, task.max_difficulty, task.n_test, task.n_heldout, task.eval_seed))
        tr[f] = list(train_set(f, task.max_difficulty, task.n_train, task.data_seed, task.n_test, task.n_heldout,
                               task.eval_seed))
    return InstanceSets(tr, te, he)
