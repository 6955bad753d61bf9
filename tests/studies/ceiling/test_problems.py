"""The ceiling study's problems: solver labels against brute force, the checker on hand-made solutions,
parsing, metrics, and disjoint seeded instance sets."""

import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from bindscale.studies.ceiling import data as data_mod
from bindscale.studies.ceiling.config import CeilingTrial
from bindscale.studies.ceiling.problems import (
    FAMILIES,
    Problem,
    ProblemError,
    brute_force,
    canonical_colouring,
    make_problem,
    make_set,
)
from bindscale.studies.ceiling.scoring import evaluate, parse_text, parse_tokens
from bindscale.studies.ceiling.trial import VOCAB, pack


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("BINDSCALE_CACHE", str(tmp_path / "cache"))
    data_mod.eval_sets.cache_clear()
    data_mod.train_set.cache_clear()


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("difficulty", [1, 2])
def test_solver_optimum_equals_brute_force(family, difficulty):
    if family == "colouring" and difficulty == 2:
        difficulty = 1  # 4^10 colourings: brute force too slow for a unit test; difficulty 1 has 4^8
    rng = np.random.default_rng(7 + difficulty)
    for _ in range(3 if family == "colouring" else 12):
        p = make_problem(family, difficulty, rng)
        assert p.check(p.optimum).all()
        assert p.objective(p.optimum) == p.opt_value
        assert brute_force(p) == p.opt_value


def _colouring():
    return Problem("colouring", 1, 4, 4, {"edges": ((0, 1), (1, 2), (2, 3), (0, 2))},
                   ("edge 0-1", "edge 1-2", "edge 2-3", "edge 0-2"), ("edge",) * 4, "min", (0, 1, 2, 0), 3.0)


def _assignment():
    d = {"loads": (2, 3, 4), "costs": ((1, 5, 5), (5, 1, 5), (5, 5, 1)), "capacities": (4, 3, 4),
         "forbidden": ((0, 2),), "conflicts": ((0, 1),)}
    names = ("capacity m0", "capacity m1", "capacity m2", "task 0 not on m2", "tasks 0,1 apart")
    types = ("capacity",) * 3 + ("eligibility", "conflict")
    return Problem("assignment", 1, 3, 3, d, names, types, "min", (0, 1, 2), 3.0)


def test_checker_on_hand_made_colourings():
    p = _colouring()
    assert p.check((0, 1, 2, 0)).tolist() == [True, True, True, True]
    assert p.check((0, 0, 1, 1)).tolist() == [False, True, False, True]  # edges 0-1 and 2-3 clash
    assert p.check((1, 1, 1, 1)).tolist() == [False] * 4
    assert p.objective((0, 1, 2, 3)) == 4 and p.gap((0, 1, 2, 3)) == pytest.approx(1 / 3)
    assert canonical_colouring((3, 1, 3, 0)) == (0, 1, 0, 2)


def test_checker_on_hand_made_knapsacks():
    p = Problem("knapsack", 1, 3, 2, {"weights": (3, 4, 5), "values": (4, 5, 6), "capacity": 8},
                ("capacity",), ("capacity",), "max", (1, 0, 1), 10.0)
    assert p.check((1, 0, 1)).tolist() == [True]
    assert p.check((1, 1, 1)).tolist() == [False]  # weight 12 > 8
    assert p.check((0, 1, 0)).tolist() == [True] and p.gap((0, 1, 0)) == pytest.approx(0.5)


def test_checker_on_hand_made_assignments_each_constraint_type():
    p = _assignment()
    assert p.check((0, 1, 2)).all()
    # task 1 (load 3) joins task 2 (load 4) on m2: capacity m2 broken (7 > 4), the rest holds
    assert p.check((0, 2, 2)).tolist() == [True, True, False, True, True]
    # task 0 on m2 (forbidden); loads 4 / 3 / 2 fit the capacities: only eligibility broken
    assert p.check((2, 1, 0)).tolist() == [True, True, True, False, True]
    # tasks 0 and 1 share m0 (conflict) and overload it (5 > 4)
    assert p.check((0, 0, 2)).tolist() == [False, True, True, True, False]
    assert p.objective((0, 1, 2)) == 3


def test_malformed_solutions_are_refused():
    p = _colouring()
    for bad in [(0, 1, 2), (0, 1, 2, 0, 1), (0, 1, 2, 4), (0, 1, -1, 0), (0, 1, 2, 0.5), (True, 1, 2, 0)]:
        with pytest.raises(ProblemError):
            p.check(bad)


def test_parsers():
    p = _colouring()
    assert parse_tokens(["0", "1", "2", "0"], p) == (0, 1, 2, 0)
    assert parse_tokens(["0", "1", "2"], p) is None
    assert parse_tokens(["0", "1", "2", "4"], p) is None
    assert parse_tokens(["0", "e", "2", "0"], p) is None
    assert parse_text("thinking...\nANSWER: 0 1 2 0", p) == (0, 1, 2, 0)
    assert parse_text("answer: [0, 1, 2, 0]", p) == (0, 1, 2, 0)
    assert parse_text("ANSWER: 1 1 1 1\nANSWER: 0 1 2 0", p) == (0, 1, 2, 0)  # the last answer line
    assert parse_text("0 1 2 0", p) == (0, 1, 2, 0)  # lenient: a line of exactly n integers without the prefix
    assert parse_text("Colours:\n[0, 1, 2, 0]\n", p) == (0, 1, 2, 0)
    assert parse_text("**Answer:** 0 1 2 0", p) == (0, 1, 2, 0)
    assert parse_text("node 0 gets colour 1", p) is None  # two integers, not four: never guessed at
    assert parse_text("0 1 2", p) is None
    assert parse_text("ANSWER: 0 1 2\n0 1 2 0", p) is None  # the ANSWER line wins, and it is short
    assert parse_text("ANSWER: 0 -1 2 0", p) is None
    assert parse_text("", p) is None


def test_metrics_count_unparsable_apart_and_gap_among_feasible_only():
    p = _colouring()
    m = evaluate([p, p, p, p], [(0, 1, 2, 0), (0, 1, 2, 3), (0, 0, 1, 1), None])
    assert m["n"] == 4
    assert m["sat"] == pytest.approx((1 + 1 + 0.5 + 0) / 4)
    assert m["feas"] == pytest.approx(0.5)
    assert m["gap"] == pytest.approx((0 + 1 / 3) / 2)  # the two feasible answers
    assert m["optimal"] == pytest.approx(0.25)
    assert m["unparsable"] == pytest.approx(0.25)
    assert m["by_type"]["edge"] == [16, pytest.approx(10 / 16)]
    none = evaluate([p], [None])
    assert none["sat"] == 0 and none["feas"] == 0 and math.isnan(none["gap"]) and none["unparsable"] == 1
    with pytest.raises(ValueError):
        evaluate([p], [])


def test_sets_are_disjoint_seeded_and_nested():
    t = CeilingTrial.model_validate({"task": {"n_train": 30, "n_test": 8, "n_heldout": 6, "max_difficulty": 2}})
    sets = data_mod.instance_sets(t.task)
    for f in FAMILIES:
        tr, te, he = ({p.key for p in s[f]} for s in sets)
        assert len(tr) == 30 and len(te) == 16 and len(he) == 6
        assert not (tr & te) and not (tr & he) and not (te & he)
        assert {p.difficulty for p in sets.test[f]} == {1, 2} and {p.difficulty for p in sets.heldout[f]} == {3}
        for p in sets.train[f] + sets.test[f]:
            assert p.check(p.optimum).all()
    # another data seed: other training instances, the same test set; smaller sets are prefixes
    t2 = CeilingTrial.model_validate({"task": {"n_train": 30, "n_test": 4, "n_heldout": 6, "max_difficulty": 2,
                                               "data_seed": 1}})
    s2 = data_mod.instance_sets(t2.task)
    for f in FAMILIES:
        assert {p.key for p in s2.train[f]} != {p.key for p in sets.train[f]}
        assert [p.key for p in s2.test[f] if p.difficulty == 2] == [p.key for p in sets.test[f] if p.difficulty == 2][:4]
    # the disk cache gives the same sets back
    data_mod.eval_sets.cache_clear()
    data_mod.train_set.cache_clear()
    again = data_mod.instance_sets(t.task)
    assert [p.key for p in again.train["assignment"]] == [p.key for p in sets.train["assignment"]]
    assert again.test["knapsack"][0] == sets.test["knapsack"][0]


def test_make_set_refuses_a_too_small_space():
    with pytest.raises(RuntimeError, match="distinct"):
        make_set("knapsack", [1], 3, np.random.default_rng(0), exclude=set(), max_tries=0)


def test_packing_masks_the_solution_and_end_only():
    p = _colouring()
    tokens, mask = pack([p])
    prompt = VOCAB.prompt(p)
    assert tokens[0, :len(prompt)].tolist() == prompt
    targets = tokens[0, 1:][mask[0, :-1]].tolist()
    assert targets == VOCAB.target(p) == [VOCAB.stoi[s] for s in ("0", "1", "2", "0", "<eos>")]


def test_config_refuses_bad_values_in_one_line():
    from pydantic import ValidationError

    for bad in [{"task": {"families": "colouring,sudoku"}}, {"task": {"families": "knapsack,knapsack"}},
                {"task": {"max_difficulty": 9}}, {"model": {"kind": "lm", "endpoint": "ftp://x"}},
                {"model": {"kind": "transformer", "budget": 1000, "n_layers": 8, "n_heads": 8}}]:
        with pytest.raises(ValidationError):
            CeilingTrial.model_validate(bad)


def test_the_study_config_imports_neither_the_solver_nor_networkx():
    """A refused ``--set`` answers in well under a second (README): resolving and validating the ceiling studies
    imports :mod:`.problems` for its constants only, so scipy.optimize (the solver, 0.5-1 s) and networkx wait
    until instances are built."""
    code = ("import sys; from bindscale.core.studyfile import resolve_study; from bindscale.core.errors import ConfigError\n"
            "for name in ('ceiling', 'ceiling-lm', 'ceiling-ladder'):\n"
            "    resolve_study(name).trials(); resolve_study(name, quick=True).trials()\n"
            "try:\n    resolve_study('ceiling', overrides=['some.bad=1'])\nexcept ConfigError:\n    pass\n"
            "print(sorted(m for m in ('scipy.optimize', 'networkx') if m in sys.modules))")
    env = os.environ | {"PYTHONPATH": str(Path(__file__).parents[3] / "src")}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]", r.stdout
