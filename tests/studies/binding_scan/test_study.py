"""The binding_scan study as the core sees it: registered with its three tiers, its deciding cells seeded as
each tier says, trials grouped so that only plain transformers stack, and a tiny run end to end."""

from collections import defaultdict
from pathlib import Path

import pytest
from integration.conftest import assert_typed_table, bindscale, run_quick, run_tiny

from bindscale.core import registry
from bindscale.core.studyfile import builtin_studies, resolve_study
from bindscale.studies.binding_scan import plan

TINY = Path(__file__).parent / "tiny.yaml"
CLAIMS = ["binding_beats_plain_on_scan", "scale_partially_overcomes_binding"]
TIERS = {"binding_scan": 5, "binding_scan-full": 8, "binding_scan-paper": 10}


def test_the_study_and_its_tiers_are_registered():
    study = registry.get("binding_scan")
    assert [c.name for c in study.claims] == CLAIMS
    assert all(c.side == "binding_needed" and not c.own_hypothesis and c.anchor is not None for c in study.claims)
    assert all(c.gates and c.gates[0].metric == "acc_id" and c.defaults["min_id_acc"] == 0.95 for c in study.claims)
    assert set(TIERS) <= set(builtin_studies())
    r = bindscale("list")
    assert r.returncode == 0 and "binding_scan" in r.stdout and "binding_scan-full" in r.stdout


@pytest.mark.parametrize("name, seeds", TIERS.items())
def test_every_tier_trains_one_step_count_and_seeds_every_deciding_cell(name, seeds):
    """The rules compare cells of one step count; the deciding cells (the largest and smallest plain model and
    the binding models at or below the largest plain budget, per split) have the tier's seeds."""
    trials = resolve_study(name).trials()
    assert len({t.train.steps for t in trials}) == 1
    cells = defaultdict(set)
    for t in trials:
        cells[(t.task.split, t.model.kind, t.model.budget)].add(t.seed)
    for split in {s for s, _, _ in cells}:
        plain = sorted(b for s, k, b in cells if s == split and k == "transformer")
        deciding = [(split, "transformer", plain[0]), (split, "transformer", plain[-1])]
        for kind in ("syntactic_attention", "tp_transformer"):
            budgets = [b for s, k, b in cells if s == split and k == kind and b <= plain[-1]]
            assert budgets, (split, kind)
            deciding.append((split, kind, max(budgets)))
        assert all(len(cells[c]) >= seeds for c in deciding), {c: len(cells[c]) for c in deciding}
    assert resolve_study(name, quick=True).trials()


def test_only_plain_transformers_share_a_stack():
    trials = resolve_study("binding_scan").trials()
    keys = defaultdict(list)
    for t in trials:
        keys[plan.group_key(t)].append(t)
    for group in keys.values():
        kinds = {t.model.kind for t in group}
        assert len(kinds) == 1
        assert len(group) == 1 or kinds == {"transformer"}
    assert max(len(g) for g in keys.values()) == 5


def test_the_quick_dry_run_plans(tmp_path):
    r = bindscale("run", "binding_scan", "--quick", "--dry-run")
    assert r.returncode == 0, r.stderr
    assert "estimated time" in r.stdout + r.stderr


@pytest.mark.slow
def test_a_tiny_binding_study_runs_end_to_end(tmp_path):
    out = tmp_path / "b"
    run_tiny(TINY, out, CLAIMS, 6, ("acc_test", "acc_id", "tok_acc_test", "acc_by_length", "n_params_nonembed",
                                    "model", "split", "budget"))
    assert_typed_table(out)
    assert "Does an explicit binding mechanism beat a larger plain transformer" in (out / "report.html").read_text()


@pytest.mark.slow
def test_quick_binding_study_gives_its_verdicts_and_figures(tmp_path):
    _, summary = run_quick("binding_scan", tmp_path / "q")
    assert [v["claim"] for v in summary["verdicts"]] == CLAIMS
    assert all("seeds_per_cell" in v["details"] for v in summary["verdicts"])
    assert (tmp_path / "q" / "report.html").read_text().count("data:image/png;base64,") >= 2
