"""The trial ids of the shipped scaling study files: adding a student kind must not move the id of any trial
already run (the published -full run's records are keyed by them).

The hashes below were measured on the study files before the TPR student existed: SHA-256 of the sorted
trial ids joined by newlines, of ``resolve_study(name, quick).trials()``. Today's files add TPR trials;
every other trial must keep its id, and every TPR trial must have an id of its own.
"""

from __future__ import annotations

import hashlib

import pytest

from bindscale.api import resolve_study

#: (study, quick) -> (number of trials, SHA-256 of their sorted ids), before the TPR student was added.
BEFORE = {
    ("scaling", False): (160, "1e5f4eb6fc51b1b9ddfd69bf581c42eabe68c414b09ff8b0c99b7ace65910787"),
    ("scaling", True): (39, "e09c41c282d7c173f3eaadc231f6cee6465091e4c5dfd30186078422d20ed3ee"),
    ("scaling-full", False): (288, "4c9c58e08f1fa601a04aec816cb5fead15fb76a1366d9d271b40eb90bdb187d9"),
    ("scaling-full", True): (39, "e09c41c282d7c173f3eaadc231f6cee6465091e4c5dfd30186078422d20ed3ee"),
    ("scaling-paper", False): (240, "497d4a322bcb89088d7e13e1dc0f750b264fdd3813424328a01528ed9d3f68f5"),
    ("scaling-paper", True): (15, "40e0acbd5113600c383affd89dad3877909858a8fbd0193786d53614bb4311fe"),
}


def _digest(ids: list[str]) -> str:
    return hashlib.sha256("\n".join(sorted(ids)).encode()).hexdigest()


@pytest.mark.parametrize("name,quick", sorted(BEFORE), ids=[f"{n}{'-quick' if q else ''}" for n, q in sorted(BEFORE)])
def test_the_trials_run_before_the_tpr_student_keep_their_ids(name, quick):
    trials = resolve_study(name, quick=quick).trials()
    old = [t.trial_id for t in trials if t.model.kind != "tpr"]
    new = [t.trial_id for t in trials if t.model.kind == "tpr"]
    assert (len(old), _digest(old)) == BEFORE[(name, quick)]
    assert len(set(new)) == len(new) and not set(new) & set(old)


def test_the_tpr_ladders_of_the_default_and_full_tiers():
    """8 seeds in every TPR cell of the default and -full tiers (3 in the quick variants); the -full ladder spans
    the MLP grid's parameter range from below its smallest to between its two largest MLPs."""
    from bindscale.studies.scaling.tpr import tpr_params

    def cells(name, quick=False):
        out: dict[int, set[int]] = {}
        for t in resolve_study(name, quick=quick).trials():
            if t.model.kind == "tpr":
                out.setdefault(t.model.width, set()).add(t.seed)
        return out

    default, full = cells("scaling"), cells("scaling-full")
    assert sorted(default) == [16, 32, 64, 128] and all(len(s) == 8 for s in default.values())
    assert sorted(full) == [16, 32, 64, 128, 256, 512] and all(len(s) == 8 for s in full.values())
    assert all(len(s) == 3 for q in (cells("scaling", True), cells("scaling-full", True)) for s in q.values())
    mlp = sorted({2 * w * w + 43 * w + 16 for w in (16, 32, 64, 128, 256, 512)})  # the -full MLPs, depth 3
    tpr = [tpr_params(8, 16, 16, w, 1) for w in sorted(full)]
    assert tpr[0] < mlp[0] and mlp[-2] < tpr[-1] < mlp[-1]
