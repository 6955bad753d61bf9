"""One statistic naming style across studies.

Every verdict rule returns a short snake_case identifier as its statistic; what the number is, in
words, lives in its claim's ``statistic`` field (:class:`bindscale.core.study.Claim`).
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

from bindscale.core import registry
from bindscale.verdicts.engine import compute_verdicts

SNAKE = re.compile(r"^[a-z][a-z0-9_]*$")


def _fixtures(name: str):
    """A study's test module under tests/studies (its synthetic tables), e.g. ``"scaling/test_verdicts"``, by path."""
    spec = importlib.util.spec_from_file_location(f"_names_{name.replace('/', '_')}",
                                                  Path(__file__).parents[1] / "studies" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _tables() -> dict[str, list]:
    """Per study, synthetic tables that reach the rules' different exits (decided, the second part deciding,
    several tasks, inconclusive for lack of data)."""
    sc, sg, mo = _fixtures("scaling/test_verdicts"), _fixtures("subgraphs/test_verdicts"), _fixtures("modularity/test_verdicts")
    geo = _fixtures("geometry/test_verdicts")
    lt = _fixtures("length_transfer/test_verdicts")
    flat_high = sg._rows(sg._plus(sg.EIGHT, 0.6), sg._plus(sg.EIGHT[::-1], 0.6), sg.SEEN_C, sg.SEEN_W)
    unseen = sg._rows(sg.EIGHT, sg.EIGHT, [0.08 + j / 4 for j in sg.JIT], [0.01] * 8,
                      gap=[0.07 + 0.002 * i for i in range(8)])
    two_tasks = sg.pd.concat([sg._rows(sg.EIGHT, sg._plus(sg.EIGHT, 0.5), sg.SEEN_C, sg.SEEN_W, task="multiplication"),
                              sg._rows(sg.EIGHT, sg.EIGHT, sg.SEEN_C, sg.SEEN_W, task="maxsubseq")])
    tables = {
        "scaling": [sc.make_results(effect=True, n_seeds=3), sc.make_results(effect=False, hypernet=False, n_seeds=2)],
        "subgraphs": [sg._rows(sg.EIGHT, sg.EIGHT, sg.SEEN_C, sg.SEEN_W), flat_high, unseen, two_tasks],
        "modularity": [mo._table(), mo._table(acc=0.5), mo._table(pre=("none",))],
        "geometry": [geo.table([.2, .3, .4, .5], [.1] * 4), geo.table([.5, .4, .3, .2], [.6] * 4)],
        "length_transfer": [lt.table(), lt.table(related=(0.0, 0.0))],
    }
    dp = _fixtures("depth/test_verdicts")
    tables["depth"] = [dp._rows(dp._families(0.3, 0.2)), dp._sweep(0.15, 0.02)]
    ce = _fixtures("ceiling/test_fits")
    tables["ceiling"] = [ce._table(lambda x: ce.saturating(x, 0.58, 0.3, 0.9), seeds=3)]
    for ts in tables.values():
        ts.append(ts[0].iloc[:0])  # no trial at all
    return tables


@pytest.fixture(scope="module")
def statistics() -> dict[str, set[str]]:
    """Claim name -> every statistic its rule returned on the synthetic tables."""
    seen: dict[str, set[str]] = {}
    for study, tables in _tables().items():
        claims = registry.get(study).claims
        for df in tables:
            for v in compute_verdicts(df, {"verdicts": {c.name: {} for c in claims}}, n_boot=100):
                seen.setdefault(v["claim"], set()).add(v["statistic"])
    return seen


def test_every_rule_returns_a_snake_case_statistic(statistics):
    # Every claim of every study this test has tables for was exercised (a study added later checks
    # its own statistic in its own tests: the new-study template does).
    claims = {c.name for name in _tables() for c in registry.get(name).claims}
    assert set(statistics) == claims
    bad = {claim: stat for claim, stats in statistics.items() for stat in stats if not SNAKE.match(stat)}
    assert not bad, bad


def test_a_rule_with_two_deciding_parts_names_each_and_its_claim_says_both_in_words(statistics):
    assert statistics["scale_does_not_lift_ood"] == {"ood_acc_gain_best_size_vs_smallest",
                                                     "id_minus_ood_acc_largest_model"}
    assert statistics["correct_steps_seen_in_training"] == {"seen_share_gap_correct_vs_wrong", "seen_share_correct"}
    claims = {c.name: c for s in registry.studies().values() for c in s.claims}
    assert "id_minus_ood_acc_largest_model" in claims["scale_does_not_lift_ood"].statistic
    assert "seen_share_correct" in claims["correct_steps_seen_in_training"].statistic
    assert statistics["pretraining_reliability"] == {"share_structural_gain_pretrained_vs_scratch"}
    assert statistics["structure_grows_with_width"] == {"share_structural_gain_widest_vs_narrowest"}
    assert statistics["structure_emerges"] == {"weakest_structure_effect_net_of_controls"}


def test_every_claim_says_its_statistic_in_words():
    for study in registry.studies().values():
        for claim in study.claims:
            words = claim.statistic.strip()
            assert words and not SNAKE.match(words) and len(words.split()) >= 6, (claim.name, words)
