"""The report is fit to read: readable detail labels, smoke-test badges for quick or
unfinished runs, and nothing wider than the page, checked in headless Chromium.

The Chromium tests skip where no Chromium is installed, and fail instead under
BINDSCALE_REQUIRE_BROWSER=1 (CI sets it, so CI cannot skip them silently).
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pandas as pd
import pytest

import bindscale.report.browser as browser
import bindscale.report.html as report_html
from bindscale.core.studyfile import resolve_study
from bindscale.report import build_report
from bindscale.report.browser import (
    BrowserMissing,
    assert_fits,
    overflow_by_width,
    overflowing_elements,
    require_browser,
)
from bindscale.report.html import _detail_rows
from bindscale.report.text import breakable, detail_label, key_label


def _load(name: str):
    """A study's test module by path under tests/studies (its synthetic tables), e.g. ``"scaling/test_verdicts"``."""
    spec = importlib.util.spec_from_file_location(f"_layout_{name.replace('/', '_')}",
                                                  Path(__file__).parents[1] / "studies" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# ------------------------------------------------------------------ labels --

@pytest.mark.parametrize("path, label", [
    (["heldout_r2_by_width_at_min_holdout", "256"], "held-out R² by width at min holdout › width 256"),
    (["heldout_r2_by_n_train_combos_at_largest_width", "69"],
     "held-out R² by training combinations at largest width › training combinations 69"),
    (["r2_by_width", "16", "outhull_all_arities"], "R² by width › width 16 › out-of-hull all arities"),
    (["ood_gain_over_smallest", "102272"], "out-of-distribution gain over smallest › 102272"),
    (["largest_model_id_minus_ood"], "largest model in-distribution − out-of-distribution"),
    (["min_id_acc"], "min in-distribution accuracy"),
    (["n_trials_heldout_r2_ge_0.95"], "n trials held-out R² ≥ 0.95"),
    (["mean_decod_random_cv"], "mean decodability random CV"),
    (["matched_params", "[0]", "r2_diff_hypernet_minus_mlp"],
     "matched parameters › #1 › R² difference hypernet − MLP"),
    (["r2_inhull_k2"], "R² in-hull, 2 modules"),
    (["n_outhull_k3"], "n out-of-hull, 3 modules"),
    (["mean_sub_diff"], "mean SubDiff"),
    (["control_untrained_abl_diff"], "control untrained AblDiff"),
    (["compounding_eps_median"], "compounding ε median"),
    (["ci_low"], "CI low"),
    # keys that are not plain identifiers stay as they are
    (["seeds_learned_per_cell", "mlp/16/match_count"], "seeds learned per cell › mlp/16/match_count"),
    (["mean_decod_by_layer", "hidden.0"], "mean decodability by layer › hidden.0"),
    (["margin"], "margin"),
])
def test_detail_labels_read_as_words(path, label):
    assert detail_label(path) == label


def test_key_label_leaves_non_identifiers_and_plain_words_alone():
    assert key_label("width 16, holdout 0.25") == "width 16, holdout 0.25"
    assert key_label("caveat") == "caveat"
    assert key_label("mlp") == "MLP" and key_label("pearson") == "Pearson"
    assert key_label("trial_id") == "trial ID"  # not "trial in-distribution"


def test_detail_rows_keep_the_raw_key_beside_the_label():
    rows = _detail_rows({
        "heldout_r2_by_width_at_min_holdout": {16: {"value": 0.1, "ci_low": 0.0, "ci_high": 0.2, "n": 3}},
        "matched_params": [{"mlp": {"width": 16, "n_params": 1216, "mean_r2_heldout": 0.166}}],
        "ood_by_params": {13856: 0.052, 102272: 0.167},
        "caveat": "3 seeds",
    })
    assert rows == [
        ("held-out R² by width at min holdout › width 16", "heldout_r2_by_width_at_min_holdout › 16",
         "0.100 [0, 0.200] (n=3)"),  # three significant figures (bindscale.core.fmt)
        ("matched parameters › #1 › MLP", "matched_params › [0] › mlp",
         "width: 16; n parameters: 1216; mean R² held-out: 0.166"),
        ("out-of-distribution by parameters", "ood_by_params", "parameters 13856: 0.0520; parameters 102272: 0.167"),
        ("caveat", "caveat", "3 seeds"),
    ]


def test_breakable_escapes_and_breaks_long_names_but_not_numbers():
    assert str(breakable("a_b.c/d=0.25 <x>")) == "a_<wbr>b.<wbr>c/<wbr>d=<wbr>0.25 &lt;x&gt;"


# -------------------------------------------------- synthetic study reports --

LONG_ID = "trial-" + "0123456789abcdef" * 10  # an unbroken 166-character trial id
LONG_ERROR = ("Traceback (most recent call last):\n  File \"/home/someone/" + "very_long_directory_name/" * 8
              + "bindscale/train.py\", line 42, in run\nRuntimeError: shapes do not match: "
              + "x" * 250 + " & <friends>")
LONG_DETAILS = {
    "a_very_long_diagnostic_key_by_width_at_the_largest_holdout_and_smallest_number_of_modules": {
        "256": {"value": 0.5, "ci_low": 0.4, "ci_high": 0.6, "n": 8},
        "per_cell": {"mlp/256/identity/random_orthogonal_projection/withheld_pairs_3": 0.5,
                     "hypernet/64/identity/random_orthogonal_projection/withheld_pairs_3": 0.25},
    },
    "dotted.key.path.that.goes.on.and.on.without.spaces.anywhere.in.it.at.all.really": "z" * 180,
}


def _with_problems(df: pd.DataFrame, template: dict) -> pd.DataFrame:
    """Append a failed trial (long id, long traceback) and a diverged one to a results table."""
    failed = {**template, "trial_id": LONG_ID, "status": "failed", "error": LONG_ERROR}
    diverged = {**template, "trial_id": LONG_ID + "-d", "status": "diverged", "diverged_step": 120.0, "error": None}
    return pd.concat([df, pd.DataFrame([failed, diverged])], ignore_index=True)


def _scaling_table() -> pd.DataFrame:
    df = _load("scaling/test_verdicts").make_results(effect=True, n_seeds=3)
    # Encoding, split and withheld pairs vary, so the per-config table shows them too (many columns).
    odd = df.index % 2 == 1
    df.loc[odd, "encoding"] = "random_orthogonal_projection"
    df.loc[odd, "split"] = "withheld_pairs_compositional_and_connected"
    df["withheld_pairs"] = [3 if o else 0 for o in odd]
    df.loc[df["status"] == "failed", ["trial_id", "error"]] = [LONG_ID, LONG_ERROR]
    return df


def _subgraphs_table() -> pd.DataFrame:
    sg = _load("subgraphs/test_verdicts")
    parts = [sg._rows(sg.EIGHT, sg.EIGHT[::-1], sg.SEEN_C, sg.SEEN_W, task=t)
             for t in ("multiplication", "maximum_subsequence_sum_with_a_long_variant_name")]
    df = pd.concat(parts, ignore_index=True)
    df = df.assign(layers=2, d_model=64, compound_eps=0.1, trial_id=[f"sg-{i}" for i in range(len(df))])
    return _with_problems(df, df.iloc[0].to_dict())


def _modularity_table() -> pd.DataFrame:
    df = _load("modularity/test_verdicts")._table()
    df = df.assign(trial_id=[f"mod-{i}" for i in range(len(df))], density=0.2)
    return _with_problems(df, df.iloc[0].to_dict())


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    """One report per study: scaling as a quick run, subgraphs unfinished (trials missing),
    modularity complete; each with long ids, errors and detail keys."""
    real = report_html.compute_verdicts

    def with_long_details(*args, **kwargs):
        out = real(*args, **kwargs)
        for v in out:
            v["details"] = {**v["details"], **LONG_DETAILS}
        return out

    mp = pytest.MonkeyPatch()
    mp.setattr(report_html, "compute_verdicts", with_long_details)
    root = tmp_path_factory.mktemp("layout")
    cases = {"scaling": (_scaling_table(), {"quick": True, "n_planned": 60, "n_missing": 0}),
             "subgraphs": (_subgraphs_table(), {"quick": False, "n_planned": 40, "n_missing": 2}),
             "modularity": (_modularity_table(), {"quick": False, "n_planned": 34, "n_missing": 0})}
    try:
        for name, (df, info) in cases.items():
            build_report(root / name, df, resolve_study(name, quick=info["quick"]), n_boot=200, run_info=info)
    finally:
        mp.undo()
    return {name: root / name / "report.html" for name in cases}


def _badges(html: str) -> list[tuple[str, str]]:
    """(class, text) of every verdict badge."""
    return [(c, re.sub(r"<[^>]+>", "", t)) for c, t in
            re.findall(r'<span class="(verdict [^"]*)">(.*?)</span></span>', html)]


def test_quick_and_unfinished_runs_show_smoke_test_badges(reports):
    quick = reports["scaling"].read_text(encoding="utf-8")
    badges = _badges(quick)
    n_claims = len(resolve_study("scaling", quick=True).verdicts)
    assert len(badges) == 2 * n_claims  # verdict table + each claim's section
    assert all(c.endswith(" smoke") and t.startswith("smoke test: ") for c, t in badges), badges
    assert "smoke-test results" in quick and "the quick variant" in quick
    unfinished = reports["subgraphs"].read_text(encoding="utf-8")
    assert all(" smoke" in c and "smoke test: " in t for c, t in _badges(unfinished))
    assert "unfinished (2 trials missing)" in unfinished
    full = reports["modularity"].read_text(encoding="utf-8")
    assert _badges(full) and not any("smoke" in c or "smoke" in t for c, t in _badges(full))
    assert "smoke-test results" not in full


def test_detail_labels_are_readable_with_the_raw_key_on_hover(reports):
    html = reports["scaling"].read_text(encoding="utf-8")
    assert 'title="heldout_r2_by_width_at_min_holdout › 256"' in html
    assert "held-out R² by width at min holdout › width 256" in html.replace("<wbr>", "")


def test_the_overflow_check_catches_a_page_wider_than_the_viewport(tmp_path):
    require_browser()
    wide = tmp_path / "wide.html"
    wide.write_text('<!DOCTYPE html><html><body><p>fits</p><table class="wide" style="width:3000px">'
                    "<tr><td>cell</td></tr></table></body></html>", encoding="utf-8")
    fine = tmp_path / "fine.html"
    fine.write_text('<!DOCTYPE html><html><body><div style="overflow-x:auto"><table style="width:3000px">'
                    "<tr><td>scrolls in its own box</td></tr></table></div><p>fits</p></body></html>",
                    encoding="utf-8")
    got = overflow_by_width([wide, fine], (1024,))
    assert any(line.startswith("table.wide: right edge 3008px > 1024px") for line in got[(str(wide), 1024)]), got
    assert any(line.startswith("document:") for line in got[(str(wide), 1024)])
    assert got[(str(fine), 1024)] == []
    assert overflowing_elements(fine, width=800) == []


def test_reports_of_every_study_fit_1024_and_800_pixels(reports):
    assert_fits(list(reports.values()), widths=(1024, 800))


def test_without_chromium_the_check_skips_or_under_ci_fails(monkeypatch, tmp_path):
    monkeypatch.setattr(browser, "find_chromium", lambda: None)
    page = tmp_path / "p.html"
    page.write_text("<html><body>x</body></html>", encoding="utf-8")
    with pytest.raises(BrowserMissing, match="apt-get install -y chromium"):
        overflowing_elements(page)
    monkeypatch.delenv("BINDSCALE_REQUIRE_BROWSER", raising=False)
    with pytest.raises(pytest.skip.Exception):
        assert_fits(page)
    with pytest.warns(UserWarning, match="no Chromium"):
        assert_fits(page, skip_if_missing=False)  # the end of a longer test: warn, go on
    monkeypatch.setenv("BINDSCALE_REQUIRE_BROWSER", "1")
    for kwargs in ({}, {"skip_if_missing": False}):
        with pytest.raises(pytest.fail.Exception, match="BINDSCALE_REQUIRE_BROWSER=1"):
            assert_fits(page, **kwargs)
