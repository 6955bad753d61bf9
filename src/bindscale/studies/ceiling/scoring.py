"""Parsing model outputs into solutions, and the ceiling study's metrics.

Definitions (per family and split; every instance weighs the same):

- *constraint satisfaction* ``sat``: mean over instances of the share of the instance's constraints
  the answer satisfies (:meth:`.problems.Problem.check`). Whether this is the metric behind
  ConstraintBench's 65.0% (arXiv 2602.22465) is **unverified**: its abstract pairs that number with
  "feasibility is the primary bottleneck", so compare our feasibility ``feas`` beside it, not
  satisfaction alone. An unparsable answer satisfies none.
- *feasibility* ``feas``: share of instances whose answer satisfies every constraint.
- *optimality gap* ``gap``: mean over feasible answers of ``|f(x) - f*| / |f*|`` (NaN when no
  answer is feasible).
- *optimal* ``optimal``: share of instances answered feasibly with gap 0 — joint feasibility and
  optimality, ConstraintBench's second number (none of its six models above 30.5%).
- *unparsable* ``unparsable``: share of answers that are not ``n_vars`` integers in range; counted
  apart, and scored as violating every constraint.
- ``by_type``: satisfaction pooled over the constraints of one type (edge, capacity, eligibility,
  conflict) — the share of that type's constraints satisfied, over all instances.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

import numpy as np

from .problems import Problem, ProblemError

METRICS = ("sat", "feas", "gap", "optimal", "unparsable")
_ANSWER = re.compile(r"\bANSWER\b[^\n\d-]*([^\n]*)", re.IGNORECASE)  # the integers must be on the ANSWER line


def parse_tokens(tokens: Sequence[str], p: Problem) -> tuple[int, ...] | None:
    """A transformer's output tokens (up to, not including, the end token) → solution, or None when it is not
    exactly ``n_vars`` integers in ``0 .. n_values - 1``."""
    if len(tokens) != p.n_vars or not all(t.isdigit() for t in tokens):
        return None
    x = tuple(int(t) for t in tokens)
    return x if all(v < p.n_values for v in x) else None


def parse_text(text: str, p: Problem) -> tuple[int, ...] | None:
    """A chat model's reply → solution, or None (a parse failure, counted apart as ``unparsable``).

    Lenient rule (stated in the report), in this order:

    1. the last line holding the word ``ANSWER`` (any case, markdown such as ``**Answer:**`` allowed): the
       integers after that word on the line (any separators: spaces, commas, brackets);
    2. else (no such word, or no digit after it on its line) the last line holding exactly ``n_vars``
       integers, after the last ``ANSWER`` when there is one (a reply that gives the values without the
       prefix, e.g. ``0 1 2 0`` or ``[0, 1, 2, 0]``, or on the line below ``ANSWER:``).

    The integers so found must be exactly ``n_vars``, each in ``0 .. n_values - 1``; a negative number, too
    many or too few, or one out of range is a parse failure (never guessed at).
    """
    text = text or ""
    found = list(_ANSWER.finditer(text))
    if found and re.search(r"\d", found[-1][1]):
        line = found[-1][1]
    else:  # no ANSWER word, or nothing after it on its line: the values on a later line
        rest = text[found[-1].end():] if found else text
        lines = [ln for ln in rest.splitlines() if len(re.findall(r"-?\d+", ln)) == p.n_vars]
        if not lines:
            return None
        line = lines[-1]
    nums = re.findall(r"-?\d+", line)
    return parse_tokens(nums, p) if all(not n.startswith("-") for n in nums) else None


def evaluate(problems: Sequence[Problem], answers: Sequence[tuple[int, ...] | None]) -> dict:
    """Metrics of ``answers`` (None: unparsable) to ``problems``.

    Returns:
        ``{"n", "sat", "feas", "gap", "optimal", "unparsable", "by_difficulty": {d: [n, sat, feas, gap,
        optimal, unparsable]}, "by_type": {type: [n_constraints, sat]}}`` (see the module docstring);
        NaN for every rate of an empty set.

    Raises:
        ValueError: ``problems`` and ``answers`` differ in length.
    """
    if len(problems) != len(answers):
        raise ValueError(f"{len(problems)} problems but {len(answers)} answers")
    rows = []  # (difficulty, sat share, feasible, gap, unparsable)
    types: dict[str, list[int]] = {}
    for p, x in zip(problems, answers):
        if x is None:
            ok = np.zeros(p.n_constraints, dtype=bool)
        else:
            try:
                ok = p.check(x)
            except ProblemError:
                ok, x = np.zeros(p.n_constraints, dtype=bool), None
        feas = x is not None and bool(ok.all())
        gap = p.gap(x) if feas else math.nan
        rows.append((p.difficulty, float(ok.mean()) if ok.size else float(x is not None), feas, gap, x is None))
        for t, good in zip(p.constraint_types, ok):
            c = types.setdefault(t, [0, 0])
            c[0] += 1
            c[1] += int(good)

    def summary(rs) -> list:
        if not rs:
            return [0] + [math.nan] * 5
        sat = float(np.mean([r[1] for r in rs]))
        feas = float(np.mean([r[2] for r in rs]))
        gaps = [r[3] for r in rs if r[2]]
        gap = float(np.mean(gaps)) if gaps else math.nan
        optimal = float(np.mean([r[2] and r[3] == 0 for r in rs]))
        return [len(rs), sat, feas, gap, optimal, float(np.mean([r[4] for r in rs]))]

    n, sat, feas, gap, optimal, unp = summary(rows)
    by_d = {str(d): summary([r for r in rows if r[0] == d]) for d in sorted({r[0] for r in rows})}
    by_t = {t: [c[0], c[1] / c[0] if c[0] else math.nan] for t, c in sorted(types.items())}
    return {"n": n, "sat": sat, "feas": feas, "gap": gap, "optimal": optimal, "unparsable": unp,
            "by_difficulty": by_d, "by_type": by_t}


def trial_metrics(sets: dict[str, dict[str, list[Problem]]], answers: dict[str, dict[str, list]]) -> dict:
    """Record metrics from per-split, per-family answers: flat columns ``{metric}_{family}`` (test split),
    ``{metric}_{family}_{split}`` (other splits), the instance counts ``n_{family}`` / ``n_{family}_{split}``
    and the nested ``by_difficulty`` / ``by_type`` tables."""
    out: dict = {"by_difficulty": {}, "by_type": {}}
    for split, fams in sets.items():
        bd, bt = {}, {}
        for fam, problems in fams.items():
            if not problems:
                continue
            m = evaluate(problems, answers[split][fam])
            suffix = "" if split == "test" else f"_{split}"
            for k in METRICS:
                out[f"{k}_{fam}{suffix}"] = m[k]
            out[f"n_{fam}{suffix}"] = m["n"]
            bd[fam], bt[fam] = m["by_difficulty"], m["by_type"]
        out["by_difficulty"][split], out["by_type"][split] = bd, bt
    return out
