"""Verdict rules on synthetic results tables with a planted effect (or none).

``make_results`` builds a results table of the shape ``results.parquet``
has; ``test_report.py`` reuses it.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from bindscale.studies.scaling.params import tpr_params
from bindscale.verdicts.engine import compute_verdicts

M, K = 8, 3
N_COMBOS = 8 + 28 + 56  # C(8,1) + C(8,2) + C(8,3)
WIDTHS = (16, 64, 256)
HOLDOUTS = (0.25, 0.5, 0.75)
HYPER_WIDTHS = (8, 16, 32)

STUDY = {
    "name": "scaling",
    "description": "synthetic test study",
    "verdicts": {
        "scaling": {"r2_threshold": 0.9},
        "decodability": {"rho_threshold": 0.5},
        "binding": {"target_r2": 0.9},
        "hull": {"margin": 0.05},
    },
    "anchors": {"scaling": "pilot: width 16/64/256 -> 0.21/0.72/0.94", "decodability": "pilot: 0.95"},
}


def mlp_params(width: int, depth: int) -> int:
    """Parameter count of an MLP: (8 + 16) inputs -> depth hidden layers -> 16."""
    return 24 * width + width + (depth - 1) * (width * width + width) + 16 * width + 16


def hypernet_params(width: int, depth: int) -> int:
    """Parameter count of a hypernetwork over M = 8 banks (identity code, 8 features): the mixing layer
    (8 + 1) · 8, and each layer of its target net 16 -> width (depth times) -> 16 as a base plus 8 banks."""
    target = (16 + 1) * width + (depth - 1) * (width + 1) * width + (width + 1) * 16
    return (8 + 1) * 8 + (1 + 8) * target


def student_params(model: str, width: int, depth: int = 2) -> int:
    """The parameter count a record of ``model`` at this width and depth carries (the fixtures' task: M = 8,
    identity code, 16 inputs and outputs)."""
    return mlp_params(width, depth) if model == "mlp" else hypernet_params(width, depth)


def _row(i: int, **kw) -> dict:
    """One trial row with every column of the results table."""
    r2 = kw.pop("r2_heldout")
    h = kw.get("holdout", 0.25)
    n_held = round(h * N_COMBOS)
    row = {
        "trial_id": f"t{i:04d}", "study": "scaling", "status": "ok",
        "model": "mlp", "width": 64, "depth": 2, "encoding": "identity", "split": "random",
        "holdout": h, "M": M, "K": K, "steps": 1000, "seed": 0, "lr": 3e-4, "weight_decay": 3e-3,
        "n_params": 0, "n_train_combos": N_COMBOS - n_held, "n_heldout_combos": n_held,
        "n_inhull": int(0.7 * n_held), "n_outhull": n_held - int(0.7 * n_held),
        # every student fit its training tasks (the competence gate) unless a test says otherwise
        "r2_id": 0.97, "r2_heldout": r2, "r2_inhull": r2, "r2_outhull": r2,
        "decod_best": math.nan, "decod_input": 0.99, "decod_random": math.nan,
        "decod_layers": [],  # rows of (layer, r2), as results.parquet holds them
        "curve_steps": [0, 250, 500, 1000],
        "curve_r2_heldout": [0.0, 0.5 * r2, 0.8 * r2, r2],
        "train_seconds": 1.0, "eval_seconds": 0.1, "probe_seconds": 0.1,
        "diverged_step": math.nan, "error": None,
    }
    row.update(kw)
    # Per-arity hull R² (pairs and triples) and the CV-chosen decodability follow the pooled values
    # unless a test sets them.
    for k in (2, 3):
        for side in ("inhull", "outhull"):
            row.setdefault(f"r2_{side}_k{k}", row[f"r2_{side}"])
            row.setdefault(f"n_{side}_k{k}", 3)
    row.setdefault("decod_cv", row["decod_best"])
    row.setdefault("decod_random_cv", row["decod_random"])
    return row


def make_results(effect: bool = True, n_seeds: int = 8, seed: int = 0,
                 hypernet: bool = True, problems: bool = True) -> pd.DataFrame:
    """Synthetic results table.

    effect=True plants every claim: held-out R² grows with width and coverage
    (0.97 at width 256, holdout 0.25), decodability tracks held-out R²,
    the hypernet reaches R² 0.95 with 7 416 parameters (width 16; the MLP needs
    width 256, 76 304), and in-hull beats out-of-hull by 0.35.
    effect=False: flat R² 0.5, random decodability, a hypernet stuck at 0.3,
    in-hull = out-of-hull. ``problems`` adds one diverged row (with absurd
    metrics that must not leak into statistics) and one failed row.
    """
    rng = np.random.default_rng(seed)
    rows, i = [], 0
    for w in WIDTHS:
        for h in HOLDOUTS:
            for s in range(n_seeds):
                scale = math.log(w / 16) / math.log(16)  # 0 .. 1
                cover = (0.75 - h) / 0.5  # 1 at holdout 0.25, 0 at 0.75
                base = 0.2 + 0.77 * scale * (0.4 + 0.6 * cover) if effect else 0.5
                r2 = base + rng.normal(0, 0.01)
                if effect:
                    decod = 0.3 + 0.65 * r2 + rng.normal(0, 0.003)  # predicts R² within cells too
                    inh, outh = r2 + min(0.05, (1 - r2) / 2), 0.1 + rng.normal(0, 0.01)  # fails outside the hull (R² ≤ 1)
                else:
                    decod = rng.uniform(0.2, 0.9)
                    inh, outh = r2 + rng.normal(0, 0.02), r2 + rng.normal(0, 0.02)
                rows.append(_row(
                    i, model="mlp", width=w, depth=2, holdout=h, seed=s, r2_heldout=r2,
                    n_params=mlp_params(w, 2), decod_best=decod,
                    decod_random=0.3 + rng.normal(0, 0.02),
                    decod_layers=[{"layer": "h0", "r2": 0.9 * decod}, {"layer": "h1", "r2": decod}],
                    r2_inhull=inh, r2_outhull=outh))
                i += 1
    if hypernet:
        for w, planted in zip(HYPER_WIDTHS, (0.6, 0.95, 0.97)):
            for h in HOLDOUTS:
                for s in range(n_seeds):
                    r2 = (planted - (h - 0.25) if effect else 0.3) + rng.normal(0, 0.01)
                    rows.append(_row(i, model="hypernet", width=w, depth=2, holdout=h, seed=s,
                                     r2_heldout=r2, n_params=hypernet_params(w, 2)))
                    i += 1
    if problems:
        rows.append(_row(i, status="diverged", width=256, holdout=0.25, r2_heldout=-50.0,
                         r2_inhull=-50.0, r2_outhull=50.0, decod_best=1.0,
                         n_params=mlp_params(256, 2), diverged_step=120.0))
        rows.append(_row(i + 1, status="failed", width=16, holdout=0.25, r2_heldout=math.nan,
                         error="RuntimeError: <boom> & friends"))
    return pd.DataFrame(rows)


def by_claim(verdicts: list[dict]) -> dict[str, dict]:
    return {v["claim"]: v for v in verdicts}


@pytest.fixture(scope="module")
def planted() -> dict[str, dict]:
    return by_claim(compute_verdicts(make_results(effect=True), STUDY))


@pytest.fixture(scope="module")
def null() -> dict[str, dict]:
    return by_claim(compute_verdicts(make_results(effect=False), STUDY))


KEYS = {"claim", "statement", "verdict", "statistic", "value", "ci_low", "ci_high", "n_trials",
        "details", "reference", "statistic_text", "title", "source", "side", "study_kind"}


def test_verdict_dicts_have_exact_keys(planted):
    assert list(planted) == ["scaling", "decodability", "binding", "hull"]
    for v in planted.values():
        assert set(v) == KEYS
        assert v["verdict"] in {"supported", "not_supported", "inconclusive"}
        assert v["ci_low"] <= v["value"] <= v["ci_high"]
    # the source's headline, the study file's pilot beside it
    assert "Redhardt" in planted["scaling"]["reference"] and "pilot" not in planted["scaling"]["reference"]
    assert planted["scaling"]["details"]["study_file_note"].startswith("pilot")
    assert "Schug" in planted["binding"]["reference"]


@pytest.mark.parametrize("claim", ["scaling", "decodability", "binding", "hull"])
def test_planted_effect_is_supported(planted, claim):
    assert planted[claim]["verdict"] == "supported", planted[claim]["details"]["reason"]


def test_planted_numbers(planted):
    sc = planted["scaling"]
    assert sc["value"] == pytest.approx(0.97, abs=0.02)
    assert sc["n_trials"] == len(WIDTHS) * len(HOLDOUTS) * 8  # ok MLP rows only
    assert sc["details"]["width_gain"]["ci_low"] > 0.5
    assert sc["details"]["coverage_gain"]["value"] == pytest.approx(0.77 * 0.6, abs=0.03)
    assert set(sc["details"]["heldout_r2_by_width_at_min_holdout"]) == {"16", "64", "256"}
    b = planted["binding"]["details"]
    df = make_results(effect=True)
    ok = df[(df["status"] == "ok") & (df["holdout"] == 0.25)]
    means = lambda m: ok[ok["model"] == m].groupby("width")["r2_heldout"].mean()  # noqa: E731
    mm, hm = means("mlp"), means("hypernet")
    t_m, t_h = (0.9 - mm[64]) / (mm[256] - mm[64]), (0.9 - hm[8]) / (hm[16] - hm[8])
    h8, h16 = hypernet_params(8, 2), hypernet_params(16, 2)
    expected = (mlp_params(64, 2) * (mlp_params(256, 2) / mlp_params(64, 2)) ** t_m) / (h8 * (h16 / h8) ** t_h)
    assert planted["binding"]["value"] == pytest.approx(expected)
    assert b["hypernet_reaching"]["width"] == 16 and b["mlp_reaching"]["width"] == 256
    assert planted["hull"]["value"] == pytest.approx(0.0, abs=0.03)
    assert planted["hull"]["details"]["inhull_width_gain"]["value"] > 0.5
    assert planted["decodability"]["details"]["mean_decod_by_layer"].keys() == {"h0", "h1"}


def test_null_effect_is_not_supported_or_inconclusive(null):
    assert null["scaling"]["verdict"] == "not_supported"  # R² 0.5, far below 0.9
    # Neither model reaches the target: the ratio is unknown, not 0.
    assert null["binding"]["verdict"] == "inconclusive" and math.isnan(null["binding"]["value"])
    assert "neither model reaches" in null["binding"]["details"]["reason"]
    # Decodability / hull: the verdict must follow the rule from the CI.
    d = null["decodability"]
    assert d["verdict"] == ("not_supported" if d["ci_high"] < 0.5 else "inconclusive")
    # In-hull equals out-of-hull at every width: the hull limits nothing.
    assert null["hull"]["verdict"] == "not_supported"
    for v in null.values():
        assert v["verdict"] != "supported"


def test_only_ok_rows_enter():
    df = make_results(effect=True, problems=False)
    a = by_claim(compute_verdicts(df, STUDY, n_boot=200))
    b = by_claim(compute_verdicts(make_results(effect=True, problems=True), STUDY, n_boot=200))
    for claim in a:
        assert (a[claim]["value"], a[claim]["ci_low"]) == (b[claim]["value"], b[claim]["ci_low"])


def _cell(rows, model, width, holdout, values, n_params=0, depth=2):
    """One row per value, each its own seed (two records of one configuration and seed are one unit)."""
    for s, v in enumerate(values):
        rows.append(_row(len(rows), model=model, width=width, depth=depth, holdout=holdout,
                         r2_heldout=v, n_params=n_params, seed=s))


def test_scaling_hand_computed():
    rows: list[dict] = []
    _cell(rows, "mlp", 16, 0.25, [0.2, 0.3, 0.4])
    _cell(rows, "mlp", 64, 0.25, [0.9, 0.95, 1.0])
    _cell(rows, "mlp", 64, 0.5, [0.5, 0.6, 0.7])
    v = by_claim(compute_verdicts(pd.DataFrame(rows), {"verdicts": {"scaling": {}}}))["scaling"]
    assert v["value"] == pytest.approx(0.95)
    # Student t interval of {0.9, 0.95, 1.0}: 0.95 ± t(0.975, 2) · 0.05 / √3.
    half = stats.t.ppf(0.975, 2) * 0.05 / math.sqrt(3)
    # the interval is clipped at R²'s bound 1 on the page; the unclipped one is kept in the details
    assert (v["ci_low"], v["ci_high"]) == pytest.approx((0.95 - half, 1.0))
    assert v["details"]["interval_clipped"]["unclipped"] == pytest.approx([0.95, 0.95 - half, 0.95 + half])
    d = v["details"]
    assert d["width_gain"]["value"] == pytest.approx(0.95 - 0.3)
    assert d["coverage_gain"]["value"] == pytest.approx(0.95 - 0.6)
    assert d["r2_threshold"] == 0.9  # default used for the missing key
    assert v["verdict"] == "inconclusive"  # three seeds: the interval reaches below 0.9
    assert v["details"]["caveat"].startswith("3 seeds in a deciding cell, fewer than 8")
    tight = [dict(r, r2_heldout=0.95 + (r["r2_heldout"] - 0.95) / 10) if r["width"] == 64 and r["holdout"] == 0.25
             else r for r in rows]
    v = by_claim(compute_verdicts(pd.DataFrame(tight), {"verdicts": {"scaling": {}}}))["scaling"]
    assert v["verdict"] == "supported"  # ci_low ≥ 0.9 and width gain ci_low > 0


def test_scaling_uses_most_common_depth():
    rows: list[dict] = []
    _cell(rows, "mlp", 16, 0.25, [0.1, 0.2, 0.3], depth=2)
    _cell(rows, "mlp", 64, 0.25, [0.9, 0.95, 1.0], depth=2)
    _cell(rows, "mlp", 256, 0.25, [0.0, 0.0], depth=8)  # would dominate "largest width"
    v = compute_verdicts(pd.DataFrame(rows), {"verdicts": {"scaling": {}}})[0]
    assert v["details"]["depth_used"] == 2 and v["details"]["largest_width"] == 64
    assert "restriction" in v["details"] and v["value"] == pytest.approx(0.95)


def test_a_swept_training_length_is_not_counted_as_seeds():
    rows: list[dict] = []
    _cell(rows, "mlp", 16, 0.25, [0.2, 0.3, 0.4])
    _cell(rows, "mlp", 64, 0.25, [0.9, 0.95, 1.0])
    longer = [r | {"steps": 4000, "trial_id": r["trial_id"] + "L"} for r in rows[:2]]  # two longer runs
    v = compute_verdicts(pd.DataFrame(rows + longer), {"verdicts": {"scaling": {}}})[0]
    assert v["details"]["steps_used"] == 1000 and v["details"]["steps_present"] == [1000, 4000]
    assert v["value"] == pytest.approx(0.95) and v["details"]["width_gain"]["n"] == 6


def test_extra_encodings_do_not_leak_into_width_cells():
    """As in scaling.yaml: a few other encodings run at one width only."""
    df = make_results(effect=True, problems=False)
    extra = df[(df["model"] == "mlp") & (df["width"] == 256) & (df["holdout"] == 0.25)]
    mixed = pd.concat([df, extra.assign(encoding="tokens", r2_heldout=0.0, r2_inhull=0.0, trial_id=extra["trial_id"] + "x")])
    a = by_claim(compute_verdicts(df, STUDY, n_boot=200))
    b = by_claim(compute_verdicts(mixed, STUDY, n_boot=200))
    for claim in ("scaling", "binding", "hull"):
        assert b[claim]["value"] == a[claim]["value"]
        assert b[claim]["details"]["encoding_used"] == "identity"
    assert b["decodability"]["n_trials"] == a["decodability"]["n_trials"] + len(extra)


def test_single_seed_is_inconclusive():
    rows: list[dict] = []
    _cell(rows, "mlp", 16, 0.25, [0.2])
    _cell(rows, "mlp", 64, 0.25, [0.99])
    v = compute_verdicts(pd.DataFrame(rows), {"verdicts": {"scaling": {}}})[0]
    # One seed: a mean but no interval (nothing to estimate a spread from), and no verdict.
    assert v["verdict"] == "inconclusive" and v["value"] == pytest.approx(0.99) and math.isnan(v["ci_low"])


def test_binding_hand_computed():
    rows: list[dict] = []
    for w, r2 in ((16, 0.5), (64, 0.8), (256, 0.92)):
        _cell(rows, "mlp", w, 0.25, [r2 - 1e-3, r2, r2 + 1e-3], n_params=mlp_params(w, 2))  # the mean is r2
    for w, r2 in ((8, 0.7), (16, 0.95)):
        _cell(rows, "hypernet", w, 0.25, [r2 - 1e-3, r2, r2 + 1e-3], n_params=hypernet_params(w, 2))
    df = pd.DataFrame(rows)
    m16, m64, m256 = (mlp_params(w, 2) for w in (16, 64, 256))  # 944, 6800, 76304
    h8, h16 = hypernet_params(8, 2), hypernet_params(16, 2)  # 3240, 7416
    # Fixed target 0.9, interpolated in log-parameters: the MLP crosses between width 64 (0.8) and 256 (0.92)
    # at t = 0.1 / 0.12, the hypernet between width 8 (0.7) and 16 (0.95) at t = 0.2 / 0.25.
    mlp = m64 * (m256 / m64) ** (0.1 / 0.12)
    hyp = h8 * (h16 / h8) ** (0.2 / 0.25)
    v = compute_verdicts(df, {"verdicts": {"binding": {}}})[0]
    assert v["value"] == pytest.approx(mlp / hyp) and v["ci_low"] < v["value"] < v["ci_high"]
    assert v["details"]["mlp_params_to_target"] == pytest.approx(mlp) and v["verdict"] == "supported"
    assert v["n_trials"] == 15 and v["details"]["seeds_per_cell"] == 3
    # The target is the study's, not the best MLP's mean minus a tolerance (which rose with noise).
    v = compute_verdicts(df, {"verdicts": {"binding": {"target_r2": 0.6}}})[0]
    assert v["value"] == pytest.approx(m16 * (m64 / m16) ** (1 / 3) / h8)
    assert v["details"]["hypernet_params_to_target_kind"] == "at_most" and "upper bound" in v["details"]["reason"]
    # Matched parameters: the width-8 hypernet (3240) vs the MLP nearest in log params (width 64, 6800).
    m = v["details"]["matched_params"][0]
    assert m["hypernet"]["n_params"] == h8 and m["mlp"]["n_params"] == m64
    assert m["r2_diff_hypernet_minus_mlp"]["value"] == pytest.approx(0.7 - 0.8)
    # The hypernet as large as the MLP needs (widths 32 and 64, up to 56664 parameters) and still short of the
    # target: not supported.
    df2 = df.copy()
    hyper = df2["model"] == "hypernet"
    df2.loc[hyper, "r2_heldout"] -= 0.45
    df2.loc[hyper, "width"] = df2.loc[hyper, "width"] * 4
    df2.loc[hyper, "n_params"] = [hypernet_params(int(w), 2) for w in df2.loc[hyper, "width"]]
    assert hypernet_params(64, 2) >= mlp
    v = compute_verdicts(df2, {"verdicts": {"binding": {}}})[0]
    assert v["verdict"] == "not_supported" and v["details"]["ratio_upper_bound"] <= 1


def test_binding_interval_comes_from_seed_noise_not_the_grid():
    rng = np.random.default_rng(0)
    rows: list[dict] = []
    for w, r2 in ((16, 0.5), (64, 0.8), (256, 0.95)):
        _cell(rows, "mlp", w, 0.25, list(r2 + rng.normal(0, 0.02, 8)), n_params=mlp_params(w, 2))
    for w, r2 in ((8, 0.7), (16, 0.95)):
        _cell(rows, "hypernet", w, 0.25, list(r2 + rng.normal(0, 0.02, 8)), n_params=hypernet_params(w, 2))
    v = compute_verdicts(pd.DataFrame(rows), {"verdicts": {"binding": {}}})[0]
    assert v["ci_low"] < v["value"] < v["ci_high"] and v["ci_low"] > 1 and v["verdict"] == "supported"


def test_binding_without_hypernet_is_inconclusive():
    v = compute_verdicts(make_results(hypernet=False), {"verdicts": {"binding": {}}})[0]
    assert v["verdict"] == "inconclusive" and v["n_trials"] == 0 and math.isnan(v["value"])


def _hull_rows(cells: dict) -> pd.DataFrame:
    """width -> (in-hull R², out-of-hull R²) per seed (the i-th value of a width is seed i), the same at both
    numbers of active modules."""
    rows: list[dict] = []
    for w, (ins, outs) in cells.items():
        for s, (a, b) in enumerate(zip(ins, outs)):
            rows.append(_row(len(rows), width=w, seed=s, r2_heldout=0.5, r2_inhull=a, r2_outhull=b))
    return pd.DataFrame(rows)


def test_hull_hand_computed_and_empty():
    # in-hull: 0.5 → 0.8 with width; out-of-hull flat (supported), then rising (not supported)
    df = _hull_rows({16: ((0.5, 0.51, 0.49), (0.30, 0.32, 0.31)), 64: ((0.8, 0.79, 0.81), (0.31, 0.31, 0.32))})
    v = compute_verdicts(df, {"verdicts": {"hull": {}}})[0]
    assert v["statistic"] == "outhull_r2_width_gain"
    assert v["value"] == pytest.approx((0.31 + 0.31 + 0.32) / 3 - 0.31) and v["verdict"] == "supported"
    assert v["details"]["inhull_width_gain"]["value"] == pytest.approx(0.3)
    assert v["details"]["inhull_minus_outhull_at_largest_width"]["value"] == pytest.approx(0.8 - 0.94 / 3)
    wiggle = np.tile([-0.01, 0.0, 0.01], 2)
    rising = df.assign(r2_outhull_k2=np.where(df.width == 64, 0.7, 0.3) + wiggle,
                       r2_outhull_k3=np.where(df.width == 64, 0.7, 0.3) + wiggle)
    v = compute_verdicts(rising, {"verdicts": {"hull": {}}})[0]
    assert v["value"] == pytest.approx(0.4) and v["verdict"] == "not_supported"
    v = compute_verdicts(df.assign(n_outhull=0, n_outhull_k2=0, n_outhull_k3=0), {"verdicts": {"hull": {}}})[0]
    assert v["verdict"] == "inconclusive" and v["n_trials"] == 0
    assert v["details"]["trials_without_outhull_combinations"] == 6  # visible in the report


def test_hull_is_not_supported_when_out_of_hull_does_as_well_as_in_hull():
    """The reviewer's table: out-of-hull R² 0.93 at every width, equal to in-hull (which still grows a little)."""
    rng = np.random.default_rng(1)
    cells = {16: (0.90 + rng.normal(0, 0.005, 8), 0.93 + rng.normal(0, 0.005, 8)),
             256: (0.93 + rng.normal(0, 0.005, 8), 0.93 + rng.normal(0, 0.005, 8))}
    v = compute_verdicts(_hull_rows(cells), {"verdicts": {"hull": {}}})[0]
    assert v["verdict"] == "not_supported", v["details"]["reason"]
    assert "outside the hull does as well as inside, within the margin" in v["details"]["reason"]
    assert "in-hull exceeds out-of-hull by 0.0" in v["details"]["reason"] and "the margin is 0.05" in v["details"]["reason"]


def test_hull_compares_at_equal_numbers_of_active_modules():
    """Out-of-hull combinations are mostly triples: pooled, their lower R² looks like a hull effect."""
    rng = np.random.default_rng(2)
    df = _hull_rows({16: (0.5 + rng.normal(0, 0.01, 8), 0.45 + rng.normal(0, 0.01, 8)),
                     256: (0.9 + rng.normal(0, 0.01, 8), 0.6 + rng.normal(0, 0.01, 8))})
    # Per arity, in and out are equal (pairs 0.95, triples 0.85 at the largest width); pooled they differ
    # only because the out-of-hull set is mostly triples.
    for k, r2 in ((2, 0.95), (3, 0.85)):
        big = df.width == 256
        df[f"r2_inhull_k{k}"] = np.where(big, r2, r2 - 0.4) + rng.normal(0, 0.01, len(df))
        df[f"r2_outhull_k{k}"] = np.where(big, r2, r2 - 0.4) + rng.normal(0, 0.01, len(df))
    v = compute_verdicts(df, {"verdicts": {"hull": {}}})[0]
    assert v["verdict"] == "not_supported", v["details"]["reason"]
    assert v["details"]["arities_used"] == {"2,3": 16}


@pytest.mark.parametrize("broken", ["nan", "missing", "zero"])
def test_hull_without_usable_data_is_inconclusive(broken):
    df = _hull_rows({16: ((0.5,) * 8, (0.3,) * 8), 64: ((0.8,) * 8, (0.3,) * 8)})
    if broken == "nan":
        df[[c for c in df if c.startswith("r2_outhull")]] = math.nan
    elif broken == "missing":
        df = df.drop(columns=[c for c in df if "_k" in c])
    else:  # all zero: no width helps anywhere
        df[[c for c in df if c.startswith("r2_")]] = 0.0
    v = compute_verdicts(df, {"verdicts": {"hull": {}}})[0]
    assert v["verdict"] != "supported"
    if broken != "zero":
        assert v["verdict"] == "inconclusive"


def test_decodability_matches_scipy_and_needs_four_trials():
    df = make_results(effect=True, problems=False)
    v = compute_verdicts(df, {"verdicts": {"decodability": {}}})[0]
    mlp = df[df["model"] == "mlp"]
    assert v["value"] == pytest.approx(stats.spearmanr(mlp["decod_best"], mlp["r2_heldout"])[0])
    assert v["details"]["pearson"]["value"] == pytest.approx(
        stats.pearsonr(mlp["decod_best"], mlp["r2_heldout"])[0])
    v = compute_verdicts(mlp.head(3), {"verdicts": {"decodability": {}}})[0]
    assert v["verdict"] == "inconclusive" and v["n_trials"] == 3


def test_missing_claims_are_skipped():
    df = make_results(problems=False)
    assert compute_verdicts(df, {"name": "x"}) == []
    assert [v["claim"] for v in compute_verdicts(df, {"verdicts": {"hull": None, "modularity": {}}})] == ["hull"]


def test_decodability_carried_by_width_alone_is_inconclusive_and_says_why():
    # Decodability and held-out R² both rise with width, but within a width they are unrelated.
    df = make_results(effect=True, problems=False)
    rng = np.random.default_rng(3)
    mlp = df["model"] == "mlp"
    level = df.loc[mlp, "width"].map({16: 0.0, 64: 0.5, 256: 1.0}).to_numpy()
    df.loc[mlp, "decod_cv"] = 0.4 + 0.5 * level + rng.normal(0, 0.01, mlp.sum())
    df.loc[mlp, "r2_heldout"] = 0.2 + 0.7 * level + rng.normal(0, 0.01, mlp.sum())
    v = compute_verdicts(df, {"verdicts": {"decodability": {"rho_threshold": 0.5}}})[0]
    assert v["ci_low"] > 0.5 and v["verdict"] == "inconclusive"
    assert "within-cell partial Spearman's interval reaches 0" in v["details"]["reason"], v["details"]["reason"]


def test_a_claim_about_the_largest_scale_is_inconclusive_when_its_widest_model_lost_every_trial():
    df = make_results(effect=True, problems=False)
    by = {v["claim"]: v for v in compute_verdicts(df, STUDY)}
    assert [by[c]["verdict"] for c in ("scaling", "binding")] == ["supported", "supported"]
    assert all("lost_largest_width" not in v["details"] for v in by.values())

    widest = (df["model"] == "mlp") & (df["width"] == max(WIDTHS))
    df.loc[widest, "status"] = "diverged"
    df.loc[widest & (df["seed"] == 0), "status"] = "failed"
    by = {v["claim"]: v for v in compute_verdicts(df, STUDY)}
    n_div = int((widest & (df["seed"] != 0)).sum())
    for claim in ("scaling", "hull", "binding"):
        v = by[claim]
        assert v["verdict"] == "inconclusive", claim
        lost = v["details"]["lost_largest_width"]["mlp"]
        assert lost["planned_largest_width"] == max(WIDTHS) and lost["largest_ok_width"] == 64
        assert lost["statuses"] == {"diverged": n_div, "failed": int(widest.sum()) - n_div}
        assert v["details"]["reason"].startswith(f"no ok trial at the largest planned mlp width {max(WIDTHS)} (")
    reason = by["scaling"]["details"]["reason"]
    assert reason.startswith(f"no ok trial at the largest planned mlp width {max(WIDTHS)} (")
    assert "(its own result there: not supported, held-out R² of width 64 at hold-out 0.25 is 0.5" in reason
    assert "below the threshold with its whole interval" in reason  # at width 64 R² is below 0.9
    # No number under a "largest scale" name that was computed at width 64: it is kept in details only.
    assert math.isnan(by["scaling"]["value"]) and math.isnan(by["scaling"]["ci_low"])
    assert by["scaling"]["details"]["value_without_the_lost_width"]["value"] < 0.9
    assert by["decodability"]["verdict"] == "supported"  # pools all widths on purpose: not a largest-scale claim

    # One ok trial left at the widest width: the rule decides there itself (too few seeds -> inconclusive).
    df.loc[widest & (df["seed"] == 1), "status"] = "ok"
    v = {v["claim"]: v for v in compute_verdicts(df, STUDY)}["scaling"]
    assert "lost_largest_width" not in v["details"] and v["details"]["largest_width"] == max(WIDTHS)


def test_the_widest_hypernet_matters_to_binding_only_when_no_hypernet_reached_the_target():
    def widest(df):
        hyper = df["model"] == "hypernet"
        return hyper & (df["width"] == df.loc[hyper, "width"].max())

    # A narrower hypernet reaches the target: the ratio does not involve the widest one.
    df = make_results(effect=True, problems=False)
    df.loc[widest(df), "status"] = "diverged"
    v = {v["claim"]: v for v in compute_verdicts(df, STUDY)}["binding"]
    assert v["details"]["hypernet_reaching"]["width"] < max(HYPER_WIDTHS)
    assert v["verdict"] == "supported" and "lost_largest_width" not in v["details"]
    # No hypernet reaches it: the verdict rests on the largest hypernet, which was lost.
    # (hypernets 8 times as wide, 57k to 668k parameters: the largest has what the MLP needs, about 49k)
    df = make_results(effect=True, problems=False)
    hyper = df["model"] == "hypernet"
    df.loc[hyper, "r2_heldout"] -= 0.6
    df.loc[hyper, "width"] = df.loc[hyper, "width"] * 8
    df.loc[hyper, "n_params"] = [hypernet_params(int(w), 2) for w in df.loc[hyper, "width"]]
    before = {v["claim"]: v for v in compute_verdicts(df, STUDY)}["binding"]
    assert before["details"]["hypernet_reaching"] is None and before["verdict"] == "not_supported"
    df.loc[widest(df), "status"] = "diverged"
    v = {v["claim"]: v for v in compute_verdicts(df, STUDY)}["binding"]
    assert v["verdict"] == "inconclusive" and set(v["details"]["lost_largest_width"]) == {"hypernet"}


@pytest.mark.parametrize("control", ["nan", "missing"])
def test_decodability_with_a_missing_or_nan_random_init_control_is_inconclusive(control):
    df = make_results(effect=True, problems=False)
    assert by_claim(compute_verdicts(df, STUDY))["decodability"]["verdict"] == "supported"
    if control == "nan":
        df.loc[df.index[:5], "decod_random_cv"] = math.nan
    else:
        df = df.drop(columns=["decod_random_cv"])
    v = by_claim(compute_verdicts(df, STUDY))["decodability"]
    assert v["verdict"] == "inconclusive" and "random-init control is missing or not finite" in v["details"]["reason"]


def test_decodability_reads_the_layer_chosen_on_fit_data_not_the_best_held_out_layer():
    df = make_results(effect=True, problems=False)
    rng = np.random.default_rng(4)
    # The best-on-held-out layer tracks R² (chosen by the score it reports); the CV-chosen one does not.
    df["decod_cv"] = rng.uniform(0.2, 0.9, len(df))
    v = by_claim(compute_verdicts(df, STUDY))["decodability"]
    assert v["verdict"] != "supported" and v["value"] < 0.5
    df = df.drop(columns=["decod_cv"])
    v = by_claim(compute_verdicts(df, STUDY))["decodability"]
    assert v["verdict"] == "inconclusive" and "decod_cv" in v["details"]["reason"]


def test_decodability_carried_by_the_encoding_axis_is_not_supported():
    """Encoding drives both variables, within an encoding they are unrelated: controlling width is not enough."""
    df = make_results(effect=True, problems=False)
    df = df[(df["model"] == "mlp") & (df["width"] == 64) & (df["holdout"] == 0.25)]
    rng = np.random.default_rng(5)
    parts = []
    for i, enc in enumerate(["identity", "orthogonal", "tokens", "invertible"]):
        part = df.assign(encoding=enc, trial_id=df["trial_id"] + enc)
        part["decod_cv"] = 0.3 + 0.15 * i + rng.normal(0, 0.01, len(part))
        part["r2_heldout"] = 0.2 + 0.2 * i + rng.normal(0, 0.01, len(part))
        parts.append(part)
    v = compute_verdicts(pd.concat(parts), {"verdicts": {"decodability": {}}})[0]
    assert v["ci_low"] > 0.5  # the pooled correlation is strong …
    assert v["verdict"] != "supported" and v["details"]["cells_over"] == ["encoding"]  # … and carried by encoding


def test_binding_bounds_and_degenerate_cells_do_not_decide():
    """From the hostile review: one-sided bounds, a never-reaching MLP, one seed, constant seeds."""
    rng = np.random.default_rng(7)

    def table(mlp, hyp, seeds=8, sd=0.01):
        """Cells (width, mean held-out R²) of each model, each record with its model's parameter count."""
        rows: list[dict] = []
        for model, cells in (("mlp", mlp), ("hypernet", hyp)):
            for w, r2 in cells:
                _cell(rows, model, w, 0.25, list(r2 + rng.normal(0, sd, seeds)), n_params=student_params(model, w))
        return pd.DataFrame(rows)

    def verdict(df):
        return compute_verdicts(df, {"verdicts": {"binding": {}}})[0]

    # The MLP never reaches 0.9 on its grid (widths 16 / 64 / 256: 944 / 6800 / 76304 parameters) and the
    # hypernet needs over 13x the largest MLP (widths 144 / 320 / 480: 0.23M / 1.02M / 2.22M): not "supported".
    v = verdict(table([(16, 0.5), (64, 0.7), (256, 0.85)], [(144, 0.6), (320, 0.8), (480, 0.95)]))
    assert v["verdict"] != "supported" and v["details"]["ratio_lower_bound"] < 1
    # The smallest MLP already reaches it: the ratio is only an upper bound, so it cannot support.
    v = verdict(table([(16, 0.95), (64, 0.97), (256, 0.98)], [(1, 0.5), (2, 0.95), (4, 0.97)]))
    assert v["verdict"] == "inconclusive" and v["details"]["ratio_is"] == "an upper bound"
    # The smallest hypernet already reaches it (width 2: 864 parameters; the MLP needs about 450): a lower bound
    # below 1 cannot refute.
    v = verdict(table([(2, 0.5), (5, 0.85), (14, 0.95), (56, 0.97)], [(2, 0.95), (4, 0.96)]))
    assert v["verdict"] == "inconclusive" and v["details"]["ratio_is"] == "a lower bound"
    # One seed per cell, or identical seeds: no verdict.
    v = verdict(table([(16, 0.5), (64, 0.95), (256, 0.97)], [(4, 0.6), (24, 0.85), (96, 0.89)], seeds=1))
    assert v["verdict"] == "inconclusive"
    v = verdict(table([(16, 0.5), (64, 0.8), (256, 0.95)], [(2, 0.5), (4, 0.95)], sd=0.0))
    # (identical seeds: every measured value repeats under another seed number: copies, no verdict)
    assert v["verdict"] == "inconclusive" and "copies filed as new seeds" in v["details"]["reason"]


def test_review_cases_for_decodability_and_hull_are_inconclusive():
    df = make_results(effect=True, problems=False)
    # A constant random-init control was not measured.
    v = by_claim(compute_verdicts(df.assign(decod_random_cv=0.0), STUDY))["decodability"]
    assert v["verdict"] == "inconclusive"
    # Four perfectly monotone trials: too few for a correlation verdict.
    few = df[df["model"] == "mlp"].head(4)
    assert compute_verdicts(few, {"verdicts": {"decodability": {}}})[0]["verdict"] == "inconclusive"
    # Out-of-hull R² missing at the largest width: the rule must not decide at a smaller width.
    cut = df.copy()
    for k in (2, 3):
        cut.loc[cut["width"] == max(WIDTHS), f"r2_outhull_k{k}"] = math.nan
    v = by_claim(compute_verdicts(cut, STUDY))["hull"]
    assert v["verdict"] == "inconclusive" and "below the largest planned MLP width" in v["details"]["reason"]
    # Absent config columns do not crash.
    for col in ("holdout", "width"):
        v = by_claim(compute_verdicts(df.drop(columns=[col]), STUDY))["hull"]
        assert v["verdict"] == "inconclusive"
    # All-zero R²: no verdict anywhere.
    zero = df.assign(**{c: 0.0 for c in df if c.startswith("r2_")})
    assert all(v["verdict"] == "inconclusive" for v in compute_verdicts(zero, STUDY))


def test_planned_trials_without_a_record_reach_the_guards_as_missing_rows():
    """A widest width whose trials wrote no record at all (rows absent, not failed): the table alone cannot
    tell it from a width never planned; the plan's rows (status missing, config only) can."""
    df = make_results(effect=True, problems=False)
    widest = (df["model"] == "mlp") & (df["width"] == max(WIDTHS))
    alone = {v["claim"]: v for v in compute_verdicts(df[~widest], STUDY)}
    assert "lost_largest_width" not in alone["scaling"]["details"]
    plan = df.loc[widest, ["trial_id", "model", "width", "seed"]].assign(status="missing")
    by = {v["claim"]: v for v in compute_verdicts(df[~widest], STUDY, unrecorded=plan)}
    v = by["scaling"]
    assert v["verdict"] == "inconclusive"
    assert v["details"]["lost_largest_width"]["mlp"]["statuses"] == {"missing": int(widest.sum())}

def test_degenerate_cells_for_continuous_and_for_share_data():
    from bindscale.verdicts.engine import degenerate

    assert degenerate([np.array([0.1, 0.2]), np.array([0.3, 0.3])]) is not None  # R²: identical seeds
    # Shares of a few runs: one cell of zeros is data; every cell flat, or one value everywhere, is not.
    assert degenerate([np.array([0.0, 0.0, 0.0]), np.array([0.0, 1 / 3, 2 / 3])], discrete=True) is None
    assert degenerate([np.array([0.0, 0.0]), np.array([1.0, 1.0])], discrete=True) is not None
    assert degenerate([np.array([0.0, 0.0]), np.array([0.0])], discrete=True) is not None


def test_a_rule_that_raises_costs_its_own_claim_only(monkeypatch):
    """A bug in one claim's rule makes that claim inconclusive, with the error named, and leaves the
    others decided (a report with every other verdict beats a traceback)."""
    import bindscale.core.study as study_mod
    from bindscale.core import registry

    broken = registry.claim("binding")[1].rule
    real = study_mod.resolve

    def boom(*_args):
        raise ZeroDivisionError("planted")

    monkeypatch.setattr(study_mod, "resolve", lambda ref: boom if ref == broken else real(ref))
    with pytest.warns(RuntimeWarning, match="binding.*ZeroDivisionError: planted"):
        out = by_claim(compute_verdicts(make_results(effect=True), STUDY))
    assert out["binding"]["verdict"] == "inconclusive" and out["binding"]["statistic"] == "rule_error"
    assert "ZeroDivisionError: planted" in out["binding"]["details"]["reason"]
    assert math.isnan(out["binding"]["value"])
    assert out["scaling"]["verdict"] == "supported" and out["hull"]["verdict"] == "supported"


# ---------------------------------------------------------------- gates, margins, seeds, reasons


def _scaling_rows(top=0.95, small=0.5, sparse=0.6, sd=0.005, n=8, r2_id=0.97, small_id=None) -> pd.DataFrame:
    """Cells (width 256, hold-out 0.25), (16, 0.25), (256, 0.75) with n seeds around the given means."""
    rng = np.random.default_rng(0)
    rows: list[dict] = []
    for w, h, mean in ((256, 0.25, top), (16, 0.25, small), (256, 0.75, sparse)):
        for s in range(n):
            rows.append(_row(len(rows), width=w, holdout=h, seed=s, r2_heldout=mean + rng.normal(0, sd),
                             r2_id=(small_id if (w == 16 and small_id is not None) else r2_id)))
    return pd.DataFrame(rows)


def test_a_negligible_width_gain_is_not_supported():
    """Review finding: scaling was supported on a width gain of 0.003."""
    v = compute_verdicts(_scaling_rows(small=0.947, sd=0.001), {"verdicts": {"scaling": {}}})[0]
    assert v["verdict"] == "not_supported", v["details"]["reason"]
    assert v["details"]["min_gain"] == 0.05 and v["details"]["width_gain"]["ci_low"] > 0  # a real but tiny gain
    assert v["details"]["reason"].startswith("width 256 gains 0.00") and "below the margin 0.05" in \
        v["details"]["reason"]
    # the margin is a threshold the study file sets
    v = compute_verdicts(_scaling_rows(small=0.947, sd=0.001), {"verdicts": {"scaling": {"min_gain": 0.001}}})[0]
    assert v["verdict"] == "supported"


def test_a_narrow_baseline_at_the_ceiling_leaves_no_room_for_the_margin():
    v = compute_verdicts(_scaling_rows(top=0.995, small=0.99, sd=0.001), {"verdicts": {"scaling": {}}})[0]
    assert v["verdict"] == "inconclusive" and "no model could exceed it by the margin" in v["details"]["reason"]


def test_scaling_reasons_state_the_finding_with_numbers():
    v = compute_verdicts(_scaling_rows(), {"verdicts": {"scaling": {}}})[0]
    assert v["verdict"] == "supported"
    reason = v["details"]["reason"]
    assert reason.startswith("held-out R² of width 256 at hold-out 0.25 is 0.95")
    assert "width 256 gains 0.4" in reason and "over width 16 at hold-out 0.25" in reason
    assert "hold-out 0.25 gains 0.3" in reason and "above the margin 0.05" in reason


@pytest.mark.parametrize("claim", ["scaling", "decodability", "binding", "hull"])
def test_a_table_without_a_seed_column_decides_nothing_and_says_so(claim):
    """Review finding: without a seed column scaling and binding were supported while hull blamed NaN."""
    df = make_results(effect=True, problems=False)
    assert compute_verdicts(df, {"verdicts": {claim: {}}}, n_boot=200)[0]["verdict"] == "supported"
    v = compute_verdicts(df.drop(columns=["seed"]), {"verdicts": {claim: {}}}, n_boot=200)[0]
    assert v["verdict"] == "inconclusive" and v["details"]["reason"].startswith("the table has no seed column")
    assert v["details"]["missing_axis"] == "seed"
    part = df.copy()
    part["seed"] = part["seed"].astype(float)
    part.loc[part.index[:5], "seed"] = math.nan
    v = compute_verdicts(part, {"verdicts": {claim: {}}}, n_boot=200)[0]
    assert v["verdict"] == "inconclusive" and "have no seed" in v["details"]["reason"], claim


def test_the_widest_students_must_fit_their_training_tasks():
    """The competence gate. The narrow baseline is not gated (failing to fit is what
    widening is claimed to fix); the widest cells are."""
    v = compute_verdicts(_scaling_rows(small_id=0.3), {"verdicts": {"scaling": {}}})[0]
    assert v["verdict"] == "supported"
    (gate,) = v["details"]["gates"]
    assert gate["metric"] == "r2_id" and gate["level"] == 0.9 and "width 16" not in " ".join(gate["cells"])
    v = compute_verdicts(_scaling_rows(r2_id=0.85), {"verdicts": {"scaling": {}}})[0]
    assert v["verdict"] == "inconclusive"
    # Gates per model: each widest student misses, so the cell is named with its lost seeds; what the rule said
    # with every model is kept beside the verdict, and the narrow baseline left alone is still not gated.
    assert ("width 256, hold-out 0.25: no seed passed (8 missed it; in-distribution R² (fresh tasks of the training "
            "combinations) 0.85 < 0.9 over them)") in v["details"]["reason"]
    assert "8 missed a competence gate" in v["details"]["reason"]
    assert v["details"]["value_with_every_model"]["value"] > 0.9
    assert "width 16" not in " ".join(v["details"]["gates"][0]["missed"])


def test_gates_of_hull_binding_and_decodability_read_their_deciding_students():
    df = make_results(effect=True, problems=False)
    mlp = df["model"] == "mlp"
    # Narrow MLPs below the level, each fitting its training tasks a little better than held-out ones (as a small
    # student does): not held to the level anywhere.
    fits = np.minimum(df["r2_heldout"] + 0.02, 0.85)
    narrow = df.assign(r2_id=np.where(mlp & (df["width"] < 256), fits, df["r2_id"]))
    for v in compute_verdicts(narrow, STUDY, n_boot=200):  # only narrow MLPs missed: nothing gated there
        assert v["verdict"] == "supported", (v["claim"], v["details"]["reason"])
    # Narrow MLPs at R² 0.3 in distribution, below their held-out R² at width 64 (0.59): students that did not learn
    # their training tasks; scaling's baseline and hull's are not gated, binding's ladder below the target is.
    unlearned = df.assign(r2_id=np.where(mlp & (df["width"] < 256), 0.3, df["r2_id"]))
    for v in compute_verdicts(unlearned, STUDY, n_boot=200):
        assert v["verdict"] == ("inconclusive" if v["claim"] == "binding" else "supported"), v["claim"]
    wide = df.assign(r2_id=np.where(mlp & (df["width"] == 256), 0.5, df["r2_id"]))
    for v in compute_verdicts(wide, STUDY, n_boot=200):
        assert v["verdict"] == "inconclusive", v["claim"]
        assert "did not learn their training task" in v["details"]["reason"] and "width 256" in v["details"]["reason"]
    # binding: the hypernetwork cell that reaches the target is gated at the level, the one below it only against
    # its own held-out R²
    hyp = df["model"] == "hypernet"
    below = df.assign(r2_id=np.where(hyp & (df["width"] == 8), np.minimum(df["r2_heldout"] + 0.02, 0.85),
                                     df["r2_id"]))
    assert by_claim(compute_verdicts(below, STUDY, n_boot=200))["binding"]["verdict"] == "supported"
    reach = df.assign(r2_id=np.where(hyp & (df["width"] == 16), 0.3, df["r2_id"]))
    v = by_claim(compute_verdicts(reach, STUDY, n_boot=200))["binding"]
    assert v["verdict"] == "inconclusive" and "model hypernet" in v["details"]["reason"]


def test_decodability_without_a_spread_of_heldout_r2_is_inconclusive():
    """Review finding: held-out R² without spread gave not_supported; there is nothing to correlate."""
    df = make_results(effect=False, problems=False)
    cells = ["model", "width", "holdout", "encoding"]
    flat = df.assign(r2_heldout=df.groupby(cells)["r2_heldout"].transform("mean"))
    v = compute_verdicts(flat, {"verdicts": {"decodability": {}}}, n_boot=200)[0]
    assert v["verdict"] == "inconclusive", v["details"]["reason"]
    assert "no spread to correlate" in v["details"]["reason"] and "each cell" in v["details"]["reason"]
    v = compute_verdicts(df.assign(r2_heldout=0.5), {"verdicts": {"decodability": {}}}, n_boot=200)[0]
    assert v["verdict"] == "inconclusive" and "held-out R² is the same in every trial" in v["details"]["reason"]


def test_hull_names_the_first_failing_half_of_the_claim_first_with_numbers():
    # in-hull R² does not grow with width and out-of-hull does: the claim fails at its first half
    rng = np.random.default_rng(2)
    cells = {16: (0.8 + rng.normal(0, 0.005, 8), 0.2 + rng.normal(0, 0.005, 8)),
             256: (0.7 + rng.normal(0, 0.005, 8), 0.6 + rng.normal(0, 0.005, 8))}
    v = compute_verdicts(_hull_rows(cells), {"verdicts": {"hull": {}}})[0]
    assert v["verdict"] == "not_supported"
    reason = v["details"]["reason"]
    assert reason.startswith("scale does not help inside the hull: in-hull R² gains -0.1")
    assert "out-of-hull R² gains 0.399 [" in reason and "at width 256 in-hull exceeds out-of-hull by 0.1" in reason
    # thin cells are named before anything is read from their values
    thin = _hull_rows({16: ((0.5, 0.52), (0.3, 0.31)), 64: ((0.8, 0.81), (0.3, 0.32))})
    v = compute_verdicts(thin, {"verdicts": {"hull": {}}})[0]
    assert v["verdict"] == "inconclusive" and v["details"]["reason"].startswith("fewer than 3 seeds")


# ----------------------------------------------------------- competence gates per model, not per cell mean --

WIDEST = "model mlp, width 256, hold-out 0.25"


def _widest_fits(per_seed):
    df = _scaling_rows()
    m = (df["width"] == 256) & (df["holdout"] == 0.25)
    df.loc[m, "r2_id"] = [per_seed[s] for s in df.loc[m, "seed"]]
    return df


def test_half_the_widest_students_below_the_gate_decide_nothing_though_their_mean_passes():
    """4 of 8 widest students fit their training tasks to R² 0.86, 4 to 0.96: the mean 0.91 passed the old gate of
    the cell's mean (0.9); per student, four did not fit, 4 of 8 remain where 6 are needed."""
    df = _widest_fits([0.86] * 4 + [0.96] * 4)
    v = compute_verdicts(df, {"verdicts": {"scaling": {}}})[0]
    assert v["verdict"] == "inconclusive" and math.isnan(v["value"])
    assert f"4 of 8 seeds of the deciding cell ({WIDEST})" in v["details"]["reason"]
    assert "4 missed a competence gate" in v["details"]["reason"] and "4 remain" in v["details"]["reason"]
    assert v["details"]["lost_to_gates_by_cell"][WIDEST] == {"lost": 4, "planned_ok": 8, "by_gate": {"r2_id": 4}}


def test_one_widest_student_below_the_gate_is_left_out_and_the_claim_still_decided():
    df = _widest_fits([0.5] + [0.97] * 7)
    v = compute_verdicts(df, {"verdicts": {"scaling": {}}})[0]
    assert v["verdict"] == "supported", v["details"]["reason"]
    assert v["details"]["lost_seeds_by_cell"][WIDEST]["statuses"] == {"missed a competence gate": 1}
    assert v["details"]["n_seeds_top_cell"] == 7


# ------------------------------------------------- binding_tpr: binding's rule with the TPR student --

MLP_LADDER = ((16, 0.5), (64, 0.8), (256, 0.92))


def _binding_table(second: tuple, kind: str = "tpr", mlp: tuple = MLP_LADDER, sd: float = 0.0,
                   n: int = 8) -> list[dict]:
    """MLP cells and ``kind`` cells (width, mean held-out R²) at depth 2, each record with its model's parameter
    count, ``n`` seeds each spread ±1e-3 around the mean (or normal with ``sd``)."""
    rng = np.random.default_rng(3)
    rows: list[dict] = []
    for model, cells in (("mlp", mlp), (kind, second)):
        for w, r2 in cells:
            vals = (r2 + rng.normal(0, sd, n)) if sd else r2 + np.linspace(-1e-3, 1e-3, n)
            p = tpr_params(8, 16, 16, w, 2) if model == "tpr" else student_params(model, w)
            _cell(rows, model, w, 0.25, list(vals), n_params=p)
    return rows


def _tpr_verdict(df: pd.DataFrame, **thresholds) -> dict:
    return compute_verdicts(df, {"verdicts": {"binding_tpr": thresholds}}, n_boot=400)[0]


def test_binding_tpr_is_supported_when_the_tpr_student_needs_fewer_parameters():
    df = pd.DataFrame(_binding_table(((8, 0.7), (16, 0.95))))
    v = _tpr_verdict(df)
    m64, m256, t8, t16 = mlp_params(64, 2), mlp_params(256, 2), tpr_params(8, 16, 16, 8, 2), tpr_params(8, 16, 16, 16, 2)
    mlp, tpr = m64 * (m256 / m64) ** (0.1 / 0.12), t8 * (t16 / t8) ** (0.2 / 0.25)  # as binding's hand-computed case
    assert v["claim"] == "binding_tpr" and v["statistic"] == "param_ratio_mlp_over_tpr"
    assert v["verdict"] == "supported", v["details"]["reason"]
    assert v["value"] == pytest.approx(mlp / tpr) and 1 < v["ci_low"] < v["value"] < v["ci_high"]
    d = v["details"]
    assert d["tpr_params_to_target"] == pytest.approx(tpr) and d["tpr_reaching"]["width"] == 16
    assert f"the TPR student {tpr:.0f};" in d["reason"] and "r2_diff_tpr_minus_mlp" in d["matched_params"][0]
    # the deciding cells are gated per model: the TPR cell that reaches the target is named with its model
    assert {c["cell"]["model"] for c in d["deciding_cells"]} == {"mlp", "tpr"}
    assert v["source"].startswith("bindscale's hypothesis")


def test_binding_tpr_is_not_supported_when_the_tpr_student_needs_as_many_parameters_as_the_mlp():
    # The TPR curve is the MLP's at about twice the parameters (widths 32 / 96 / 256: 3472 / 22672 / 142352
    # against the MLP's 944 / 6800 / 76304): ratio about 0.49, its whole interval below 1.
    df = pd.DataFrame(_binding_table(((32, 0.5), (96, 0.8), (256, 0.92)), sd=0.005))
    v = _tpr_verdict(df)
    assert v["verdict"] == "not_supported", v["details"]["reason"]
    m64, m256, t96, t256 = mlp_params(64, 2), mlp_params(256, 2), tpr_params(8, 16, 16, 96, 2), tpr_params(8, 16, 16, 256, 2)
    t = 0.1 / 0.12
    assert v["value"] == pytest.approx(m64 * (m256 / m64) ** t / (t96 * (t256 / t96) ** t), rel=0.05)
    assert v["value"] < 0.55 and v["ci_high"] <= 1
    # The TPR student never reaches the target, and its largest (width 256, 142352) already has the parameters the
    # MLP needs.
    df = pd.DataFrame(_binding_table(((64, 0.6), (256, 0.8))))
    v = _tpr_verdict(df)
    assert v["verdict"] == "not_supported" and v["details"]["ratio_upper_bound"] <= 1
    assert v["details"]["reason"].startswith("no TPR config reaches held-out R² 0.9")
    # Equal curves (TPR widths 14 / 48 / 184: 1024 / 6736 / 75824 parameters): a ratio of 1 decides nothing.
    df = pd.DataFrame(_binding_table(((14, 0.5), (48, 0.8), (184, 0.92)), sd=0.01))
    assert _tpr_verdict(df)["verdict"] == "inconclusive"


@pytest.mark.parametrize("damage", ["no_tpr", "tpr_nan", "no_mlp", "mlp_nan"])
def test_binding_tpr_with_a_missing_or_nan_arm_is_inconclusive(damage):
    df = pd.DataFrame(_binding_table(((8, 0.7), (16, 0.95))))
    model = "tpr" if "tpr" in damage else "mlp"
    if damage.startswith("no_"):
        df = df[df["model"] != model]
    else:
        df.loc[df["model"] == model, "r2_heldout"] = math.nan
    v = _tpr_verdict(df)
    assert v["verdict"] == "inconclusive" and math.isnan(v["value"])
    # (a NaN arm is also a widest planned model without a result: the guard says so first)
    assert v["details"]["reason"].endswith(f"no ok {'TPR' if model == 'tpr' else 'MLP'} trials" + (
        ")" if damage.endswith("nan") else ""))


def test_binding_tpr_on_all_zero_results_is_inconclusive():
    df = pd.DataFrame(_binding_table(((8, 0.0), (16, 0.0)), mlp=((16, 0.0), (64, 0.0))))
    df["r2_heldout"] = 0.0
    v = _tpr_verdict(df)
    assert v["verdict"] == "inconclusive" and math.isnan(v["value"]), v["details"]["reason"]
    # all zero on the TPR side only, the MLP reaching the target: the ratio is unknown, never "not supported"
    df = pd.DataFrame(_binding_table(((8, 0.0), (16, 0.0))))
    df.loc[df["model"] == "tpr", "r2_heldout"] = 0.0
    v = _tpr_verdict(df)
    assert v["verdict"] == "inconclusive", v["details"]["reason"]


def test_binding_tpr_gates_its_deciding_tpr_cell_and_its_widest_lost_student_decides_nothing():
    df = pd.DataFrame(_binding_table(((8, 0.7), (16, 0.95))))
    # below the target, the interpolation's start: not held to the level, only to its own held-out R² (0.7)
    tpr8 = (df["model"] == "tpr") & (df["width"] == 8)
    assert _tpr_verdict(df.assign(r2_id=np.where(tpr8, 0.75, df["r2_id"])))["verdict"] == "supported"
    v = _tpr_verdict(df.assign(r2_id=np.where(tpr8, 0.3, df["r2_id"])))
    assert v["verdict"] == "inconclusive" and "model tpr, hold-out 0.25, width 8" in v["details"]["reason"]
    reach = df.assign(r2_id=np.where((df["model"] == "tpr") & (df["width"] == 16), 0.3, df["r2_id"]))
    v = _tpr_verdict(reach)
    assert v["verdict"] == "inconclusive" and "model tpr" in v["details"]["reason"]
    # No TPR student reaches the target: the verdict rests on the widest (width 192, 82192 parameters: what the
    # MLP needs), which was lost.
    short = pd.DataFrame(_binding_table(((96, 0.5), (192, 0.8))))
    assert _tpr_verdict(short)["verdict"] == "not_supported"
    short.loc[(short["model"] == "tpr") & (short["width"] == 192), "status"] = "diverged"
    v = _tpr_verdict(short)
    assert v["verdict"] == "inconclusive" and set(v["details"]["lost_largest_width"]) == {"tpr"}


def test_binding_reads_only_its_own_binding_student():
    """The hypernet's claim is the same with or without TPR rows in the table, and the other way round."""
    hyp = ((8, 0.7), (16, 0.95))
    only_hyp = pd.DataFrame(_binding_table(hyp, kind="hypernet", sd=0.01))
    tpr_rows = [r for r in _binding_table(((128, 0.3), (192, 0.5)), sd=0.01) if r["model"] == "tpr"]
    both = pd.concat([only_hyp, pd.DataFrame(tpr_rows)], ignore_index=True)
    both["trial_id"] = [f"t{i:04d}" for i in range(len(both))]
    a = compute_verdicts(only_hyp, {"verdicts": {"binding": {}}}, n_boot=400)[0]
    b = compute_verdicts(both, {"verdicts": {"binding": {}, "binding_tpr": {}}}, n_boot=400)
    assert (a["verdict"], a["value"], a["ci_low"], a["ci_high"]) == (b[0]["verdict"], b[0]["value"], b[0]["ci_low"],
                                                                     b[0]["ci_high"])
    assert a["details"]["reason"] == b[0]["details"]["reason"] and a["verdict"] == "supported"
    assert b[1]["claim"] == "binding_tpr" and b[1]["verdict"] == "not_supported"
    assert "hypernet" not in b[1]["details"]["reason"] and "TPR" in b[1]["details"]["reason"]


def test_a_table_in_percent_units_decides_no_claim():
    """Range check (review): R² entered in percent (95 for 0.95) is refused before any rule runs, every claim
    inconclusive with the column named; the same table in its own units decides."""
    df = make_results(effect=True)
    decided = by_claim(compute_verdicts(df, STUDY, n_boot=200))
    assert decided["scaling"]["verdict"] == "supported"
    pct = df.copy()
    for c in ("r2_id", "r2_heldout", "r2_inhull", "r2_outhull"):
        if c in pct:
            pct[c] = pct[c] * 100
    out = by_claim(compute_verdicts(pct, STUDY, n_boot=200))
    assert all(v["verdict"] == "inconclusive" for v in out.values())
    assert all("outside [-inf, 1]" in v["details"]["reason"] for v in out.values())


#: A binding student's ladder at about twice the MLP's parameters (the TPR's widths 32 / 96 / 256, the hypernet's
#: 5 / 25 / 114), the same held-out R² at each step: each binding claim's ratio is about 0.5, not supported.
TWICE_THE_MLP = {"tpr": ((32, 0.5), (96, 0.8), (256, 0.92)), "hypernet": ((5, 0.5), (25, 0.8), (114, 0.92))}


@pytest.mark.parametrize("kind", ["tpr", "hypernet"])
def test_a_binding_student_recorded_at_a_third_of_its_size_decides_nothing(kind):
    """Review: ``n_params`` was trusted as recorded. A binding student whose records say a third of its size
    flips the ratio (about 0.5, not supported, becomes about 1.5); each deciding record's count is recomputed from
    its config (model, width, depth, task widths), and a record that differs makes the claim inconclusive, named."""
    claim = {"tpr": "binding_tpr", "hypernet": "binding"}[kind]
    df = pd.DataFrame(_binding_table(TWICE_THE_MLP[kind], kind=kind, sd=0.005))
    honest = compute_verdicts(df, {"verdicts": {claim: {}}}, n_boot=400)[0]
    assert honest["verdict"] == "not_supported" and honest["value"] < 0.6, honest["details"]["reason"]
    assert "param_count_mismatch" not in honest["details"]
    shrunk = df.copy()
    students = shrunk["model"] == kind
    shrunk.loc[students, "n_params"] = shrunk.loc[students, "n_params"] // 3
    v = compute_verdicts(shrunk, {"verdicts": {claim: {}}}, n_boot=400)[0]
    assert v["verdict"] == "inconclusive" and math.isnan(v["value"]), v["details"]["reason"]
    wrong = v["details"]["param_count_mismatch"]
    assert {e["trial_id"] for e in wrong} == set(shrunk.loc[students, "trial_id"])
    first = shrunk[students].iloc[0]
    assert {"recorded": int(first["n_params"]), "expected": int(df.loc[first.name, "n_params"])}.items() <= \
        next(e for e in wrong if e["trial_id"] == first["trial_id"]).items()
    reason = v["details"]["reason"]
    assert reason.startswith(f"{students.sum()} of {len(df)} deciding records carry a recorded n_params that is not the count")
    assert (f"{first['trial_id']} (model {kind}, width {first['width']}, depth 2) recorded {int(first['n_params'])}, "
            f"its config gives {int(df.loc[first.name, 'n_params'])}") in reason


def test_one_miscounted_mlp_record_is_named_and_the_counter_reads_the_records_config():
    """One MLP record off by one parameter is enough (exact match); the count follows the record's own config
    columns (a wider task input, another number of banks), not the fixtures' defaults."""
    df = pd.DataFrame(_binding_table(((8, 0.7), (16, 0.95)), kind="hypernet"))
    assert compute_verdicts(df, {"verdicts": {"binding": {}}}, n_boot=200)[0]["verdict"] == "supported"
    off = df.copy()
    off.loc[0, "n_params"] += 1
    v = compute_verdicts(off, {"verdicts": {"binding": {}}}, n_boot=200)[0]
    assert v["verdict"] == "inconclusive" and [e["trial_id"] for e in v["details"]["param_count_mismatch"]] == \
        [df.loc[0, "trial_id"]]
    # Records of another task (24 inputs: the MLP reads 8 + 24) and 4 banks: their counts are those of that config.
    other = df.assign(**{"task.input_dim": 24, "model.n_banks": 4})
    other["n_params"] = [(8 + 24 + 1) * w + (w + 1) * w + (w + 1) * 16 if m == "mlp" else
                         (8 + 1) * 4 + (1 + 4) * ((24 + 1) * w + (w + 1) * w + (w + 1) * 16)
                         for m, w in zip(other["model"], other["width"])]
    v = compute_verdicts(other, {"verdicts": {"binding": {}}}, n_boot=200)[0]
    assert "param_count_mismatch" not in v["details"] and v["verdict"] != "inconclusive", v["details"]["reason"]
