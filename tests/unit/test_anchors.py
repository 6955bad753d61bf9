"""Sources' anchors and reasons in words: every built-in claim carries its
source's headline, the relation rule reaches each of its words on synthetic rows, and ``answer.json``
keeps the finding (``reason``) apart from the rule's definition (``rule``)."""

import itertools
import json

import pytest

from bindscale.core import registry
from bindscale.verdicts.anchors import (
    CONTRADICTED,
    DIFFERENT_SCALE,
    NOT_COMPARABLE,
    REPRODUCED,
    RULE,
    SCALE_GAP,
    WORDS,
    relation,
)
from bindscale.report.answer import build_answer
from bindscale.kit import Anchor, Claim

CLAIMS = [(plugin.name, claim) for plugin in registry.builtin().values() for claim in plugin.claims]


@pytest.mark.parametrize("study,claim", CLAIMS, ids=[c.name for _, c in CLAIMS])
def test_every_builtin_claim_has_a_source_headline(study, claim):
    """A number in the source's unit, or the sentence quoted; a citation, a metric and a model size; a line
    a reader sees that says which it is."""
    a = claim.anchor
    assert isinstance(a, Anchor), f"{study}/{claim.name} carries no anchor"
    assert a.number is not None or (a.quote or "").strip(), claim.name
    assert a.citation.strip() and a.metric.strip() and a.model_size.strip(), claim.name
    if a.number is None:
        assert a.text.startswith("no number; " + ("paraphrase: " if a.paraphrase else "quote: ")), a.text
    else:
        assert a.unit.strip(), claim.name
    assert a.citation in a.text and "\n" not in a.text
    # the anchor names statistics its study's rules return (a typo would never match a verdict's statistic)
    if a.statistics:
        import importlib
        import inspect

        rules = inspect.getsource(importlib.import_module(f"bindscale.studies.{study}.verdicts"))
        for stat in a.statistics:
            assert f'"{stat}"' in rules, f"{claim.name}: no rule of {study} returns the statistic {stat}"


def test_anchor_needs_a_number_or_a_quote():
    with pytest.raises(ValueError, match="number, or quote"):
        Anchor(citation="X 2024", metric="m", model_size="s")
    with pytest.raises(ValueError, match="not finite"):
        Anchor(citation="X 2024", metric="m", model_size="s", number=float("nan"))
    with pytest.raises(ValueError, match="positive"):
        Anchor(citation="X 2024", metric="m", model_size="s", number=1.0, params=0)


def test_anchor_as_json():
    a = Anchor(citation="Lake & Baroni 2018", metric="exact match", model_size="LSTM", params=1e6, number=1.2,
               unit="%", statistics=("acc",))
    d = a.as_dict()
    assert d == {**d, "number": 1.2, "unit": "%", "metric": "exact match", "model_size": "LSTM", "quote": None,
                 "citation": "Lake & Baroni 2018", "text": a.text}
    json.dumps(d, allow_nan=False)
    assert a.text.startswith("1.2% exact match — LSTM")


def test_claim_keeps_working_without_an_anchor():
    c = Claim(name="x", title="t", source="s", statement="st", statistic="def", side="scale_suffices", rule=len)
    assert c.anchor is None
    assert relation({"verdict": "supported", "statistic": "s"}, None, 1e3)["word"] == NOT_COMPARABLE


# -- the relation rule on synthetic rows ----------------------------------------------------------------------

_SAME = Anchor(citation="S 2024", metric="m", model_size="1M", params=1e6, number=50.0, unit="%", statistics=("s",))
_NO_SIZE = Anchor(citation="S 2024", metric="m", model_size="undisclosed", number=50.0, unit="%", statistics=("s",))


def _row(verdict, statistic="s", firm=True):
    return {"verdict": verdict, "statistic": statistic, "firm": firm, "run_status": "firm" if firm else
            "quick variant: smoke test"}


@pytest.mark.parametrize("row,anchor,params,word", [
    (_row("supported"), _SAME, 2e5, REPRODUCED),                     # same measure, 5x apart
    (_row("not_supported"), _SAME, 2e6, CONTRADICTED),               # same measure, 2x apart (larger here)
    (_row("supported"), _SAME, 1e4, DIFFERENT_SCALE),                # 100x smaller
    (_row("not_supported"), _SAME, 9.6e4, DIFFERENT_SCALE),          # ~10x smaller (0.11M vs 10.6M-like)
    (_row("supported"), _SAME, 1.1e5, REPRODUCED),                   # just under 10x
    (_row("not_supported"), _SAME, 1e8, DIFFERENT_SCALE),            # 100x larger
    (_row("inconclusive"), _SAME, 1e6, NOT_COMPARABLE),              # nothing decided
    (_row("supported", statistic="other"), _SAME, 1e6, NOT_COMPARABLE),  # another measure
    (_row("supported", statistic="other"), _SAME, 1e3, NOT_COMPARABLE),  # another measure beats scale
    (_row("supported"), _NO_SIZE, 1e6, NOT_COMPARABLE),              # the source states no size
    (_row("supported"), _SAME, None, NOT_COMPARABLE),                # the run recorded none
    (_row("supported"), _SAME, float("nan"), NOT_COMPARABLE),
    (_row("supported", firm=False), _SAME, 1e6, NOT_COMPARABLE),     # a smoke test is not counted
])
def test_relation_rule(row, anchor, params, word):
    out = relation(row, anchor, params)
    assert out["word"] == word and out["why"].strip()
    if word in (REPRODUCED, CONTRADICTED, DIFFERENT_SCALE):
        assert "parameters" in out["why"]  # the two sizes are named where they were compared


def test_every_word_is_reachable_and_inconclusive_is_never_reproduced():
    """The whole grid of verdicts × measures × sizes × firmness: each word is reached; an inconclusive or a
    smoke-test verdict never reproduces or contradicts; "different scale" only where the sizes are SCALE_GAP (10x) apart."""
    seen = set()
    for verdict, stat, params, firm, anchor in itertools.product(
            ("supported", "not_supported", "inconclusive", None), ("s", "other", None),
            (None, 1.0, 1e4, 1e5, 1e6, 1e7, 1e8, 1e10), (True, False), (_SAME, _NO_SIZE, None)):
        word = relation(_row(verdict, stat, firm), anchor, params)["word"]
        assert word in WORDS
        seen.add(word)
        if verdict not in ("supported", "not_supported") or not firm:
            assert word == NOT_COMPARABLE
        if word == REPRODUCED:
            assert verdict == "supported"
        if word == CONTRADICTED:
            assert verdict == "not_supported"
        if word == DIFFERENT_SCALE:
            assert max(params, anchor.params) / min(params, anchor.params) >= SCALE_GAP
    assert seen == set(WORDS)


def test_the_rule_is_stated():
    for word in WORDS:
        assert f"'{word}'" in RULE


# -- answer.json: anchor, relation, reason (the finding) and rule (the definition) ---------------------------

def _summary(verdicts, **kw):
    return {"study": "x", "verdicts": verdicts, "n_trials": 10, "n_ok": 10, "n_failed": 0, "n_diverged": 0,
            "quick": False, "n_planned": 10, "n_missing": 0, **kw}


def _verdict(claim, verdict, statistic="s", value=0.5, **details):
    return {"claim": claim, "verdict": verdict, "statistic": statistic, "value": value, "ci_low": value - 0.1,
            "ci_high": value + 0.1, "n_trials": 10, "details": {"seeds_per_cell": 8, **details}}


def test_answer_rows_carry_anchor_relation_reason_and_rule(tmp_path):
    import pandas as pd

    from bindscale.studies.scaling import CLAIMS as SCALING

    import yaml

    from bindscale.core.studyfile import resolve_study

    by_name = {c.name: c for c in SCALING}
    (tmp_path / "scaling").mkdir()
    # the run's study.yaml as `bindscale run scaling` writes it: the built-in study as shipped (a firm run)
    (tmp_path / "scaling" / "study.yaml").write_text(
        yaml.safe_dump(resolve_study("scaling").model_dump(mode="json"), sort_keys=False))
    (tmp_path / "scaling" / "summary.json").write_text(json.dumps(_summary([
        _verdict("scaling", "supported", statistic="heldout_r2_at_largest_scale", value=0.93,
                 reason="held-out R² of width 256 at hold-out 0.25 is 0.930 [0.910, 0.950] (threshold 0.9)"),
        _verdict("hull", "inconclusive", reason="too few seeds"),
        _verdict("binding", "supported", value=2.0),  # no reason from the rule: the number says it
    ])))
    # the run's records: the largest ok model is the size compared with the source's
    pd.DataFrame({"trial_id": ["a", "b", "c"], "status": ["ok", "ok", "failed"],
                  "n_params": [1216, 142096, 9_000_000]}).to_parquet(tmp_path / "scaling" / "results.parquet")
    build_answer(tmp_path)
    answer = json.loads((tmp_path / "answer.json").read_text())
    assert answer["relation_rule"] == RULE
    rows = {c["claim"]: c for c in answer["claims"]}
    for name, row in rows.items():
        claim = by_name[name]
        assert row["anchor"]["text"] == claim.anchor.text
        assert set(row["anchor"]) >= {"number", "unit", "metric", "model_size", "citation", "quote", "text"}
        assert row["relation"]["word"] in WORDS and row["relation"]["why"]
        assert row["rule"] == claim.statistic                  # the definition, for a details element
        assert row["reason"] and row["reason"] != row["rule"]  # the finding, never the definition
        assert row["params"] == 142096.0                       # largest ok model, failed trials left out
    # 142k vs the source's 3.2M: 23x apart, more than SCALE_GAP -> another scale, though supported on its measure
    assert rows["scaling"]["relation"]["word"] == DIFFERENT_SCALE
    assert "23x apart" in rows["scaling"]["relation"]["why"]
    assert rows["hull"]["relation"]["word"] == NOT_COMPARABLE  # inconclusive
    assert rows["binding"]["relation"]["word"] == NOT_COMPARABLE  # another measure than the source's
    assert rows["binding"]["reason"] == "no reason recorded: s 2 [1.9, 2.1]"
    assert answer["studies"]["scaling"]["largest_model_params"] == 142096.0


@pytest.mark.parametrize("study", registry.run_order())
def test_every_builtin_rule_gives_a_finding_not_its_definition(study):
    """Item 2: each built-in rule, on a table it cannot decide from, says what it found (what is missing),
    never its statistic's definition; and the answer row keeps the two apart."""
    import pandas as pd

    from bindscale.core.studyfile import resolve_study
    from bindscale.verdicts.engine import compute_verdicts

    verdicts = compute_verdicts(pd.DataFrame({"trial_id": [], "status": []}), resolve_study(study), n_boot=20)
    assert verdicts
    for v in verdicts:
        reason = (v["details"] or {}).get("reason")
        assert reason and reason.strip() != (v.get("statistic_text") or "").strip(), v["claim"]


def test_distance_names_the_measure_and_the_scale_apart():
    """The relation's parts, shown apart: the source's measure or another (both named), and the two sizes with
    the ratio theirs / ours; unknown sizes say so; no anchor, no measure."""
    from bindscale.verdicts.anchors import distance

    same = distance({"statistic": "s"}, _SAME, 1e4)
    assert same["measure"] == "source" and same["ratio"] == pytest.approx(100.0)
    assert same["text"] == "the source's measure (m); 10k vs 1M parameters, the source's 100x ours"
    other = distance({"statistic": "t"}, _SAME, 4e6)
    assert other["measure"] == "another" and other["ratio"] == pytest.approx(0.25)
    assert other["text"].startswith("another measure (t) than the source's (m)") and "1/4 of ours" in other["text"]
    unknown = distance({"statistic": "s"}, Anchor(citation="X", metric="m", model_size="GPT-4", number=1.0), 1e4)
    assert unknown["ratio"] is None and "not stated (GPT-4)" in unknown["text"]
    assert distance({"statistic": "s"}, _SAME, float("nan"))["text"].endswith("the run recorded no model size")
    assert distance({"statistic": "s"}, None, 1e4)["measure"] is None
