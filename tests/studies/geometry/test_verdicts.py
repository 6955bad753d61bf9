"""Verdict rules of the geometry study on synthetic results tables: true, false, missing, NaN, all-zero,
and the reviewer's regression tables (the untrained model in place of the trained one, a best layer at
the input embeddings, a failed largest size, seed-paired sizes)."""

import math
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from bindscale.verdicts.engine import compute_verdicts
from bindscale.kit import ok_rows

from bindscale.studies.geometry.layers import METRICS
from bindscale.studies.geometry.verdicts import (
    geometry_grows_with_scale,
    planned_params,
    polar_beats_structural,
    transformer_params,
)

#: (layers, d_model) of four small sizes (the default study's before its ladder reached 2.7M), and their
#: parameter counts (8304 … 365664).
SHAPES = ((1, 16), (2, 32), (2, 64), (3, 96))
SIZES = tuple(transformer_params(L, d) for L, d in SHAPES)
WIDTHS = tuple(d for _, d in SHAPES)
LAYERS = tuple(L for L, _ in SHAPES)
KINDS = ("structural", "polar", "identity")


def rel_of(las: float, uuas: float) -> float:
    """The fixtures' gold-edge relation accuracy when a test gives none: half the label accuracy LAS / UUAS (LAS ≈
    UUAS × label accuracy), in [0, 1]; so a table's LAS lead is a relation lead too unless a test says otherwise."""
    return float(np.clip(0.5 * las / uuas, 0.0, 1.0)) if uuas > 0 else 0.0


def _layer_rows(model: str, scores: dict) -> list[dict]:
    """``probe_layers`` rows (the Parquet form) of one model: ``scores[kind][layer] = (las, uuas)`` or ``(las, uuas,
    rel)`` (the gold-edge relation accuracies ``rel_acc`` and ``rel_bacc``; by default :func:`rel_of`), dev = test."""
    out = []
    for kind, by_layer in scores.items():
        for layer, sc in by_layer.items():
            las, uuas = sc[:2]
            rel = sc[2] if len(sc) > 2 else rel_of(las, uuas)
            vals = dict.fromkeys(METRICS, 0.3) | {"las_pp": las, "las_hm": las - 0.01, "uuas_pp": uuas,
                                                  "uuas_hm": uuas - 0.01, "rel_acc": rel, "rel_bacc": rel}
            out += [{"model": model, "probe": kind, "layer": layer, "split": split, **vals} for split in ("dev", "test")]
    return out


def table(polar_by_size, structural_by_size, seeds=8, noise=0.02, seed=0, untrained=(0.05, 0.05),
          embed=(0.1, 0.1), uuas=0.6, chain=0.45, seed_effect=0.0, substitute_untrained=False, excess=0.01,
          untrained_uuas=0.5, rel=None, untrained_rel=None, wordpair=0.2):
    """One row per (size, seed), with the per-layer table every trial records.

    Trained model: layer 1 holds the given polar / structural LAS (layer 2 a little lower), layer 0 (input
    embeddings) ``embed``; untrained model: ``untrained`` at layers 1 and 2, ``embed`` at 0. UUAS at layer 1:
    ``uuas`` (trained), ``untrained_uuas`` (the twin). Gold-edge relation accuracy at layer 1: ``rel`` (trained,
    (polar, structural), one pair or one per size) and ``untrained_rel`` (the twin's), by default :func:`rel_of`
    of LAS and UUAS; ``wordpair``: the word-pair labeller's (one value or one per size; None: no column), each
    seed's with the noise. ``seed_effect``: the spread of a per-seed offset shared by every size (seeds pair the
    sizes). ``substitute_untrained``: the trained model's numbers replaced by the untrained model's (the
    reviewer's check). ``excess``: every LM's next-token loss above the grammar's (the competence gate's fit; a
    list: one per size).
    """
    def per_size(v):
        return v if isinstance(v, list) else [v] * len(SIZES)

    excess_by_size = per_size(excess)
    rng = np.random.default_rng(seed)
    untrained_by_size = per_size(untrained)
    rel_by_size, urel_by_size, wp_by_size = per_size(rel), per_size(untrained_rel), per_size(wordpair)
    offsets = seed_effect * rng.normal(size=seeds)
    rows = []
    for size, layers_, width, pm, sm, untrained, exc, rl, url, wp in zip(
            SIZES, LAYERS, WIDTHS, polar_by_size, structural_by_size, untrained_by_size, excess_by_size, rel_by_size,
            urel_by_size, wp_by_size):
        for s in range(seeds):
            p, q = pm + offsets[s] + noise * rng.normal(), sm + noise * rng.normal()
            up, uq = untrained[0] + noise * rng.normal(), untrained[1] + noise * rng.normal()
            rels = {"trained": rl, "untrained": url}
            for model, r in rels.items():
                if r is not None:
                    rels[model] = (r[0] + noise * rng.normal(), r[1] + noise * rng.normal())
            ctx = {"trained": (p, q, uuas, rels["trained"]), "untrained": (up, uq, untrained_uuas, rels["untrained"])}
            if substitute_untrained:
                ctx["trained"] = ctx["untrained"]
            layers, flat = [], {}
            for model, (a, b, u, r) in ctx.items():
                ra, rb = r if r is not None else (rel_of(a, u), rel_of(b, u))
                scores = {"polar": {"0": (embed[0], 0.3), "1": (a, u, ra), "2": (a - 0.05, u - 0.05)},
                          "structural": {"0": (embed[1], 0.3), "1": (b, u, rb), "2": (b - 0.05, u - 0.05)},
                          "identity": {"0": (0.05, 0.2), "1": (0.06, 0.2), "2": (0.05, 0.2)}}
                layers += _layer_rows(model, scores)
                prefix = "" if model == "trained" else "untrained_"
                for kind, by_layer in scores.items():  # the trial's own scalar columns: best over all layers
                    best = max(by_layer, key=lambda l: by_layer[l][0])
                    flat[f"{prefix}{kind}_las_pp"], flat[f"{prefix}{kind}_uuas_pp"] = by_layer[best][:2]
                    flat[f"{prefix}best_layer_{kind}"] = int(best)
                    if model == "trained":
                        flat[f"embed_{kind}_las_pp"] = by_layer["0"][0]
            if wp is not None:
                flat["wordpair_rel_bacc"] = wp + noise * rng.normal()
            rows.append({"status": "ok", "trial_id": f"{size}-{s}", "n_params": size, "seed": s, "steps": 800,
                         "layers": layers_, "d_model": width, "model.mlp_ratio": 4, "rank": 32, **flat,
                         "polar_minus_structural_las_pp": flat["polar_las_pp"] - flat["structural_las_pp"],
                         "polar_minus_structural_las_hm": flat["polar_las_pp"] - flat["structural_las_pp"] - 0.01,
                         "chain_uuas_pp": chain, "chain_uuas_hm": chain - 0.02, "probe_layers": layers,
                         "lm_excess_loss": exc, "model.source": "trained"})
    return pd.DataFrame(rows)


def run(rule, df):
    """As the verdict engine calls a rule: on the ok rows (the study's prepare_rows)."""
    return rule(ok_rows(df), {}, 200, 0)


def test_polar_beats_structural_supported_and_not():
    result = run(polar_beats_structural, table([.3, .4, .5, .6], [.2, .25, .3, .35]))
    stat, verdict, (v, lo, hi), n, d = result.statistic, result.outcome, result.interval, result.n_trials, result.details
    assert verdict == "supported" and lo > 0 and n == 8 and d["largest_model_params"] == SIZES[-1]
    assert set(d["by_size"]) == {str(s) for s in SIZES} and d["seeds_per_cell"] == 8
    result = run(polar_beats_structural, table([.3, .4, .5, .5], [.3, .45, .5, .6]))
    verdict, (v, lo, hi) = result.outcome, result.interval
    assert verdict == "not_supported" and hi < 0
    verdict = run(polar_beats_structural, table([.3, .4, .5, .6], [.3, .4, .5, .6], noise=0.05)).outcome
    assert verdict in ("inconclusive", "not_supported", "supported")  # equal means: decided by chance at most 5%


def test_polar_beats_structural_untrained_model_in_place_of_the_trained_one_is_not_supported():
    """Review item 1: the untrained model's numbers substituted for the trained ones (the same polar lead over
    structural) must not read as learned syntax."""
    df = table([.3] * 4, [.25] * 4, untrained=(.3, .25), substitute_untrained=True, noise=0.005)
    assert (df["polar_minus_structural_las_pp"] > 0.02).all()  # the old statistic: a clear polar lead
    result = run(polar_beats_structural, df)
    stat, verdict, triple, d = result.statistic, result.outcome, result.interval, result.details
    assert verdict != "supported", d["reason"]
    # the same lead in an untrained model with its own noise: net of it, nothing is left
    result = run(polar_beats_structural, table([.3] * 4, [.25] * 4, untrained=(.3, .25)))
    verdict, (v, lo, hi), d = result.outcome, result.interval, result.details
    assert verdict != "supported" and abs(v) < 0.03 and d["las_untrained_gap_by_size"][str(SIZES[-1])]["value"] > 0.02


def test_polar_beats_structural_ignores_the_input_embeddings():
    """Review item 1: a polar lead only at layer 0 (word-type vectors) decides nothing; layers ≥ 1 decide."""
    df = table([.3] * 4, [.3] * 4, embed=(.6, .4), noise=0.002)
    assert (df["best_layer_polar"] == 0).all() and (df["polar_minus_structural_las_pp"] > 0.15).all()
    result = run(polar_beats_structural, df)
    verdict, (v, lo, hi), d = result.outcome, result.interval, result.details
    assert verdict != "supported" and abs(v) < 0.01
    assert d["best_layers_largest_model"]["polar"] == {"1": 8}
    assert d["best_layers_all_layers_largest_model"]["polar"] == {"0": 8}
    assert d["share_of_trials_whose_polar_probe_wins_at_the_input_embeddings"] == 1.0


def test_polar_beats_structural_needs_the_polar_probe_above_the_chain_baseline():
    """A lead (or a deficit) between two probes that recover fewer edges than
    the linear chain is no evidence about syntax coded by angle: inconclusive either way, by the claim's chain
    gate, with the numbers (a model that reads no tree does not decide the claim)."""
    study = {"verdicts": {"polar_beats_structural": {}}}
    good = table([.3, .4, .5, .6], [.2, .25, .3, .35])
    assert compute_verdicts(good, study, n_boot=200)[0]["verdict"] == "supported"
    for polar, structural, own in (([.3, .4, .5, .6], [.2, .25, .3, .35], "supported"),
                                   ([.3] * 4, [.4] * 4, "not_supported")):
        below = table(polar, structural, uuas=0.4, chain=0.46)
        assert run(polar_beats_structural, below).outcome == own  # the rule's own result, before the gate
        (v,) = compute_verdicts(below, study, n_boot=200)
        d = v["details"]
        assert v["verdict"] == "inconclusive", d["reason"]
        assert "polar probe's UUAS minus the linear chain's" in d["reason"] and "-0.06 < 0.01" in d["reason"]
        assert f"its own result there: {own.replace('_', ' ')}" in d["reason"]
        assert d["polar_uuas_pp_minus_chain_largest_model"]["ci_high"] < 0


def test_growth_supported_and_not():
    result = run(geometry_grows_with_scale, table([.2, .3, .4, .5], [.1] * 4))
    verdict, (v, lo, hi), n, d = result.outcome, result.interval, result.n_trials, result.details
    assert verdict == "supported" and lo > 0.02 and "untrained_model_gain" in d
    result = run(geometry_grows_with_scale, table([.5, .45, .4, .3], [.1] * 4))
    verdict, (v, lo, hi) = result.outcome, result.interval
    assert verdict == "not_supported" and hi < 0.02


def test_growth_the_untrained_model_shows_as_well_is_not_learned():
    """Review item 2: polar LAS rising with size in the trained and the untrained model alike is no growth of
    learned syntax; the decision is on trained − untrained."""
    df = table([.2, .3, .4, .5], [.1] * 4, untrained=[(.1, .1), (.2, .1), (.3, .1), (.4, .1)])
    result = run(geometry_grows_with_scale, df)
    stat, verdict, (v, lo, hi), d = result.statistic, result.outcome, result.interval, result.details
    assert stat == "polar_las_pp_net_of_untrained_gain_largest_vs_smallest"
    assert verdict != "supported" and abs(v) < 0.03, d["reason"]
    assert d["trained_model_gain"]["value"] > 0.25 and d["untrained_model_gain"]["value"] > 0.25
    shrinking = table([.3] * 4, [.1] * 4, untrained=[(.05, .05), (.1, .05), (.15, .05), (.25, .05)])
    assert run(geometry_grows_with_scale, shrinking).outcome == "not_supported"


def test_growth_ignores_the_input_embeddings_and_states_the_probe_rank():
    """Review item 2: a gain only at layer 0 is not decided on; the rank min(rank, d_model) per size is stated."""
    df = table([.2] * 4, [.1] * 4, untrained=[(.1, .1)] * 4, noise=0.005)
    df["probe_layers"] = [[{**r, "las_pp": r["las_pp"] + 0.1 * SIZES.index(n)} if r["layer"] == "0" else r
                           for r in cell] for cell, n in zip(df["probe_layers"], df["n_params"])]
    df["polar_las_pp"] = df["polar_las_pp"] + 0.1 * df["n_params"].map(SIZES.index)  # the old, all-layers column
    result = run(geometry_grows_with_scale, df)
    verdict, (v, lo, hi), d = result.outcome, result.interval, result.details
    assert verdict == "not_supported" and abs(v) < 0.01
    assert d["probe_rank_by_size"] == {str(n): [16 if n == SIZES[0] else 32] for n in SIZES}
    assert "probe capacity" in d["probe_rank_note"] and "probe capacity" in d["reason"]


def test_growth_is_paired_by_seed():
    """Review item 5: a seed draws the same sentences at every size, so the sizes are paired: a seed effect
    shared by the sizes must not widen the interval (the unpaired Welch interval is given for reference)."""
    df = table([.2, .22, .25, .28], [.1] * 4, seed_effect=0.1, noise=0.005)
    result = run(geometry_grows_with_scale, df)
    stat, verdict, (v, lo, hi), n, d = result.statistic, result.outcome, result.interval, result.n_trials, result.details
    assert verdict == "supported" and n == 8 and d["seeds_paired"] == 8 and lo > 0.02, d["reason"]
    welch = d["welch_interval_unpaired_for_reference"]
    assert welch["ci_low"] < 0.02 < welch["ci_high"] and "paired by seed" in d["reason"]
    # 4 seeds at each end but none at both: nothing to pair
    apart = df[~((df["n_params"] == SIZES[0]) & (df["seed"] >= 4)) & ~((df["n_params"] == SIZES[-1]) & (df["seed"] < 4))]
    result = run(geometry_grows_with_scale, apart)
    verdict, triple, n, d = result.outcome, result.interval, result.n_trials, result.details
    assert verdict == "inconclusive" and n == 0 and "present at both" in d["reason"]


def test_parameter_count_of_a_shape_matches_the_model():
    from bindscale.studies.geometry.config import GeometryTrial
    from bindscale.studies.geometry.trial import build_model

    # the small fixture sizes, the default ladder (0.12M … 2.7M) and geometry-ladder's 10M
    for L, d in SHAPES + ((4, 128), (6, 192), (8, 320)):
        trial = GeometryTrial(model={"n_layers": L, "d_model": d, "n_heads": 4})
        assert build_model(trial).n_params() == transformer_params(L, d)
    df = table([.3] * 4, [.2] * 4)
    assert (planned_params(df.assign(n_params=np.nan)) == df["n_params"]).all()


def _fail(df: pd.DataFrame, size: int, keep_params: bool) -> pd.DataFrame:
    """The trials of one size failed (a crash records no metrics: no n_params unless ``keep_params``)."""
    out = df.copy()
    hit = out["n_params"] == size
    out.loc[hit, "status"] = "failed"
    out["probe_layers"] = [None if h else c for h, c in zip(hit, out["probe_layers"])]
    if not keep_params:
        out.loc[hit, "n_params"] = np.nan
    return out


def test_a_failed_planned_size_makes_the_claims_inconclusive():
    """Review item 3: the largest size failing must not leave the claim decided on the next size (nor, for the
    growth claim, the smallest failing on the next one up)."""
    study = {"verdicts": {"polar_beats_structural": {}, "geometry_grows_with_scale": {}}}
    df = table([.2, .3, .4, .5], [.1] * 4)
    assert [v["verdict"] for v in compute_verdicts(df, study, n_boot=100)] == ["supported", "supported"]
    for keep in (True, False):
        for v in compute_verdicts(_fail(df, SIZES[-1], keep), study, n_boot=100):
            assert v["verdict"] == "inconclusive" and "largest planned model" in v["details"]["reason"], v["claim"]
            assert v["details"]["value_at_other_sizes"]["value"] > 0 and math.isnan(v["value"])
        growth = compute_verdicts(_fail(df, SIZES[0], keep), study, n_boot=100)[1]
        assert growth["verdict"] == "inconclusive" and "smallest planned model" in growth["details"]["reason"]
    diverged = df.assign(status=np.where(df["n_params"] == SIZES[-1], "diverged", "ok"))
    assert {v["verdict"] for v in compute_verdicts(diverged, study, n_boot=100)} == {"inconclusive"}
    shorter = pd.concat([df, _fail(df, SIZES[-1], False)[lambda x: x["status"] == "failed"].assign(
        steps=200, trial_id=lambda x: x["trial_id"] + "-short")], ignore_index=True)
    # a failed trial at other settings than the deciding ones is not a planned deciding cell
    assert [v["verdict"] for v in compute_verdicts(shorter, study, n_boot=100)] == ["supported", "supported"]


def test_default_study_plans_eight_seeds_per_deciding_cell_and_details_report_them():
    """Review item 4 (MIN_REPLICATES = 3 stays the project convention): the default YAML has 8 seeds in every
    deciding cell, and both rules report ``seeds_per_cell`` (a run with fewer carries the engine's caveat)."""
    import yaml

    from bindscale.studies.geometry import STUDY

    spec = yaml.safe_load((STUDY.directory / "geometry.yaml").read_text())
    deciding = [g for g in spec["grids"] if "steps" not in g]  # the verdicts use the base steps
    assert len(deciding) == 3 and all(len(g["seed"]) == 8 for g in deciding)  # 0.12M, 0.37M, 0.83M
    study = {"verdicts": {"polar_beats_structural": {}, "geometry_grows_with_scale": {}}}
    for v in compute_verdicts(table([.2, .3, .4, .5], [.1] * 4), study, n_boot=100):
        assert v["details"]["seeds_per_cell"] == 8 and "caveat" not in v["details"]
    for v in compute_verdicts(table([.2, .3, .4, .5], [.1] * 4, seeds=5), study, n_boot=100):
        assert v["details"]["seeds_per_cell"] == 5 and "caveat" in v["details"]


def test_growth_claim_is_cited_as_the_seeds_hypothesis_not_the_papers():
    """Review item 6: supported must mean the cited source's claim holds; the paper does not assert growth with
    size, so the growth claim names bindscale's working hypothesis as its source."""
    from bindscale.studies.geometry import CLAIMS

    claims = {c.name: c for c in CLAIMS}
    growth = claims["geometry_grows_with_scale"]
    assert growth.source.startswith("bindscale's working hypothesis") and "do not claim" in growth.source
    assert "PolarProbe" not in growth.title and "working hypothesis" in growth.statement
    assert claims["polar_beats_structural"].source.startswith("Diego-Simón")


@pytest.mark.parametrize("rule", [polar_beats_structural, geometry_grows_with_scale])
def test_details_state_the_punctuation_convention_and_hewitt_mannings(rule):
    """Review item 7: punctuation is UPOS PUNCT here, PTB xpos in Hewitt & Manning's code: the report says so."""
    from bindscale.studies.geometry.scores import HM_PUNCT_XPOS

    note = run(rule, table([.2, .3, .4, .5], [.1] * 4)).details["punctuation_convention"]
    assert "UPOS" in note and "xpos" in note and all(tag in note for tag in HM_PUNCT_XPOS)


def _broken(good: pd.DataFrame):
    """Tables every rule must answer inconclusive: missing, NaN, all-zero inputs, too few seeds, no trial."""
    nan_layers = good.assign(probe_layers=[[{**r, "las_pp": np.nan} for r in cell] for cell in good["probe_layers"]])
    # every score zero, the gold-edge relation accuracies (the relation rule's) and the word-pair labeller's included
    zero_layers = good.assign(probe_layers=[[{**r, "las_pp": 0.0, "uuas_pp": 0.0, "rel_acc": 0.0, "rel_bacc": 0.0}
                                             for r in cell] for cell in good["probe_layers"]], chain_uuas_pp=0.0,
                              wordpair_rel_bacc=0.0)
    no_untrained = good.assign(probe_layers=[[r for r in cell if r["model"] == "trained"]
                                             for cell in good["probe_layers"]])
    only_layer0 = good.assign(probe_layers=[[r for r in cell if r["layer"] == "0"] for cell in good["probe_layers"]])
    return (good.drop(columns=["probe_layers"]), good.assign(probe_layers=None), nan_layers, zero_layers,
            no_untrained, only_layer0, good[good["seed"] < 2], good.iloc[0:0], good.assign(status="failed"))


@pytest.mark.parametrize("rule", [polar_beats_structural, geometry_grows_with_scale])
def test_missing_nan_zero_and_too_few_seeds_are_inconclusive(rule):
    good = table([.2, .3, .4, .5], [.1, .1, .1, .1])
    for i, broken in enumerate(_broken(good)):
        result = run(rule, broken)
        stat, verdict, triple, n, d = result.statistic, result.outcome, result.interval, result.n_trials, result.details
        assert verdict == "inconclusive" and all(math.isnan(x) for x in triple), (i, d.get("reason"))
        assert d["reason"]
    one = good.copy()
    one.at[one.index[3], "probe_layers"] = [{**r, "las_pp": np.inf} if r["layer"] == "1" and r["split"] == "test"
                                            else r for r in one.at[one.index[3], "probe_layers"]]
    assert run(rule, one).outcome == "inconclusive"


def test_growth_needs_two_sizes_and_other_settings_are_fixed():
    df = table([.2, .3, .4, .5], [.1] * 4)
    one = df[df["n_params"] == SIZES[-1]]
    assert run(geometry_grows_with_scale, one).outcome == "inconclusive"
    assert run(polar_beats_structural, one).outcome == "supported"  # decided at the largest model alone
    bad = table([.2] * 4, [.7] * 4)
    extra = bad[bad["n_params"] == SIZES[-1]].assign(steps=200, trial_id=lambda x: x["trial_id"] + "-short")
    result = run(polar_beats_structural, pd.concat([df, extra], ignore_index=True))
    verdict, d = result.outcome, result.details
    assert verdict == "supported" and d["steps_used"] == 800  # the steps axis is fixed at its most common value


def test_figures_render_on_a_table_and_skip_missing_data():
    from bindscale.studies.geometry.figures import figures

    df = table([.2, .3, .4, .5], [.1] * 4).drop(columns=["probe_layers"])
    figs = figures({})
    assert figs["geo_best_layer"][0](df)  # a base64 PNG
    assert figs["geo_by_layer"][0](df) is None and figs["geo_confusion"][0](df) is None  # no per-trial tables
    assert all(fn(df.iloc[0:0]) is None for fn, _ in figs.values())


#: The default run's results table (the reviewer's regression table), when this machine has it.
DEFAULT_RUN = Path(os.environ.get("BINDSCALE_GEOMETRY_TABLE", "/tmp/geometry-default/results.parquet"))


@pytest.mark.skipif(not DEFAULT_RUN.exists(), reason="the default geometry run's results table is not on this machine")
def test_the_default_run_is_no_longer_supported_on_input_embeddings_or_untrained_numbers():
    df = pd.read_parquet(DEFAULT_RUN)
    result = run(polar_beats_structural, df)
    verdict, (v, lo, hi), d = result.outcome, result.interval, result.details
    assert verdict != "supported" and lo < 0 < hi
    sub = df.copy()  # the reviewer's table: the untrained model's numbers in place of the trained ones
    sub["probe_layers"] = [[{**r, "model": "trained"} for r in cell if r["model"] == "untrained"]
                           + [r for r in cell if r["model"] == "untrained"] for cell in df["probe_layers"]]
    for c in ("polar_las_pp", "structural_las_pp"):
        sub[c] = sub["untrained_" + c]
    sub["polar_minus_structural_las_pp"] = sub["polar_las_pp"] - sub["structural_las_pp"]
    assert run(polar_beats_structural, sub).outcome != "supported"
