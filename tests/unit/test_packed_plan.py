"""The dry run and the planner price packed mini-batches (``train.pack``, opt-in: ``--set train.pack=true``) at their
measured cost: a packed study's estimate is its padded twin's with each trial's training time scaled by its study's
measured share of a packed step (depth: by split), its evaluation unchanged."""

import json
from pathlib import Path

import pytest

from bindscale.core import registry
from bindscale.core.studyfile import resolve_study
from bindscale.run.dryrun import describe_plan, job_seconds
from bindscale.run.planner import plan_jobs

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "results"
#: ``benchmarks/packing.py``'s run: steps per CPU-second packed over padded at each study's deciding shape.
PACKING = RESULTS / "packing_intel-xeon-processor_2026-12-07.json"
#: depth-full's deciding add-jump cells trained whole, packed and padded (``benchmarks/results`` file named in
#: depth's plan.py): training CPU-seconds padded over packed, per cell and seed.
GATE = RESULTS / "pack_gate_depth-full_intel-xeon-processor_2026-12-07.json"
#: The -full tiers of the studies whose plans price packing (each trains padded unless told otherwise).
TIERS = ("depth-full", "ceiling-full", "subgraphs-full")
#: How far the dry run's packed/padded training ratio may be from the measured one: the constants in the plan
#: modules are the measurements rounded to two decimals (1.28 for 1.2834, ...).
TOLERANCE = 0.01


def _speedups() -> dict[str, float]:
    """Measured packed-over-padded training speed by study (depth: by split, ``depth:length`` and ``depth:other``)."""
    shapes = json.loads(PACKING.read_text())["shapes"]
    gate = json.loads(GATE.read_text())
    return {"depth:length": shapes["depth"]["speed"]["ratio_of_medians"],
            "depth:other": gate["summary"]["train_cpu_speedup_mean"],
            "ceiling": shapes["ceiling"]["speed"]["ratio_of_medians"],
            "subgraphs": shapes["subgraphs"]["speed"]["ratio_of_medians"]}


def _plan_seconds(name: str, pack: bool) -> tuple[list, float, float]:
    """(trials, the dry run's CPU-seconds of the plan on 2 workers, its evaluation part: per-trial seconds)."""
    study = resolve_study(name, overrides=[f"train.pack={'true' if pack else 'false'}"])
    trials = study.trials()
    assert all(t.train.pack is pack for t in trials)
    jobs = plan_jobs(trials, n_workers=2, device="cpu")
    per_trial = registry.for_trial(trials[0]).seconds_per_cost[1]
    return trials, sum(job_seconds(j) for j in jobs), per_trial * len(trials)


def _split_key(trial) -> str:
    name = registry.for_trial(trial).name
    if name != "depth":
        return name
    return "depth:length" if trial.task.split == "length" and trial.data.train is None else "depth:other"


@pytest.mark.parametrize("name", TIERS)
def test_the_packed_dry_run_is_the_padded_one_at_the_measured_speed_up(name):
    """Training seconds (the estimate less its per-trial evaluation part) packed over padded equal the measured
    ratio, weighted by each kind of trial's padded training seconds (depth: the length split at one ratio, the
    others at another); evaluation is not packed and stays as it was."""
    speed = _speedups()
    padded_trials, padded, eval_padded = _plan_seconds(name, False)
    _, packed, eval_packed = _plan_seconds(name, True)
    assert eval_packed == eval_padded
    per_cost = registry.for_trial(padded_trials[0]).seconds_per_cost[0]
    plugin = registry.for_trial(padded_trials[0])
    weights: dict[str, float] = {}
    for t in padded_trials:
        weights[_split_key(t)] = weights.get(_split_key(t), 0.0) + per_cost * plugin.job_cost([t])
    expected = sum(w / speed[k] for k, w in weights.items()) / sum(weights.values())
    got = (packed - eval_packed) / (padded - eval_padded)
    assert got < 0.85, got  # at least 1.18x fewer training seconds at every tier
    assert got == pytest.approx(expected, rel=TOLERANCE), (got, expected, weights)


def test_the_printed_dry_run_of_a_packed_tier_is_shorter():
    """What `bindscale run depth-full --dry-run --workers 2 [--set train.pack=true]` prints: packed below padded."""
    import re

    def minutes(pack: bool) -> float:
        study = resolve_study("depth-full", overrides=[f"train.pack={'true' if pack else 'false'}"])
        text = describe_plan(study, workers=2, device="cpu")
        m = re.search(r"estimated time: ~(?:(\d+) h )?(\d+) min wall", text)
        assert m, text
        return 60 * int(m.group(1) or 0) + int(m.group(2))

    assert minutes(True) < 0.8 * minutes(False)
