"""`bindscale publish`: a `run all` directory's answer copied into a folder kept in git."""

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bindscale.core import registry
from bindscale.cli import app
from bindscale.core.errors import ConfigError
from bindscale.core.studyfile import resolve_study
from bindscale.report.publish import BEGIN, END, publish, study_wall_seconds, verdicts_csv
from bindscale.store.rundir import study_yaml
from bindscale.store.storage import RunStore

from .test_answer_layout import _run_dir


def _shipped_yaml(tier, overrides=None):
    """The study.yaml a run of the shipped study file ``tier`` writes (with ``--set overrides`` when given)."""
    return study_yaml(resolve_study(tier, overrides=overrides))


def _with_extras(root, names=None):
    """The fake run of test_answer_layout plus what a real study folder also holds (its study.yaml is the
    shipped default tier's, as `bindscale run all` writes it)."""
    for name in names or registry.run_order():
        d = root / name
        (d / "study.yaml").write_text(_shipped_yaml(name))
        (d / "report.html").write_text("<html>report</html>")
        (d / "records").mkdir(exist_ok=True)
        (d / "records" / "t1.json").write_text("{}")  # per-trial records: never published
        (d / "timing.json").write_text(json.dumps({"wall_seconds": 61.0}))
        summary = json.loads((d / "summary.json").read_text())  # a default run, not a smoke test
        (d / "summary.json").write_text(json.dumps({**summary, "quick": False}))
    return root


def test_publish_copies_the_answer_and_reports_but_no_records(tmp_path):
    run = _with_extras(_run_dir(tmp_path / "run"))
    to = tmp_path / "docs" / "answer"
    result = publish(run, to, commit="abc123")
    assert (to / "answer.html").exists() and (to / "answer.json").exists()
    for name in registry.run_order():
        assert (to / name / "report.html").read_text() == "<html>report</html>"
        assert (to / name / "verdicts.csv").read_text().startswith("claim,verdict,")
        assert not (to / name / "records").exists()
        assert list((to / name / "figures").glob("*.png"))
        own = json.loads((to / name / "provenance.json").read_text())
        assert own["commit"] == "abc123" and own["tier"] == name and own["result_version"] == 1
        # planned seeds are read from the run's results table, which these fake runs lack
        assert own["seeds_per_deciding_cell"] is None and own["wall_seconds"] == 61.0
    prov = json.loads((to / "provenance.json").read_text())
    assert prov["machine"]["cores"] == os.cpu_count() and prov["machine"]["cpu"] and prov["studies_not_run"] == []
    assert prov["wall_seconds_total"] == pytest.approx(61.0 * len(registry.run_order()))
    # the copied answer equals one built from the run itself (same claims, same verdicts)
    assert [c["verdict"] for c in result["answer"]["claims"]] == \
        [c["verdict"] for c in json.loads((to / "answer.json").read_text())["claims"]]
    assert "# The answer, published" in (to / "README.md").read_text()
    manifest = json.loads((to / "MANIFEST.json").read_text())["files"]
    assert "answer.html" in manifest and f"{registry.run_order()[0]}/report.html" in manifest


def test_one_study_is_merged_and_every_other_study_kept(tmp_path):
    """Publishing one study's run replaces that study's copy (a figure its new report no longer draws goes) and
    keeps every other study exactly as it was, with its own provenance."""
    run = _with_extras(_run_dir(tmp_path / "run"))
    to = tmp_path / "pub"
    publish(run, to, commit="a")
    first, last = registry.run_order()[0], registry.run_order()[-1]
    kept = (to / last / "report.html").read_bytes(), (to / last / "provenance.json").read_bytes()
    figs = sorted(p.name for p in (to / first / "figures").glob("*.png"))
    (run / first / "report.html").write_text("<html>new report</html>")
    for f in (run / first / "figures").glob("*.png"):
        f.unlink()
    (run / first / "figures" / "other.png").write_bytes(b"png")
    out = publish(run / first, to, commit="b")
    assert out["published"] == [first]
    assert (to / first / "report.html").read_text() == "<html>new report</html>"
    assert sorted(p.name for p in (to / first / "figures").glob("*.png")) == ["other.png"] != figs
    assert json.loads((to / first / "provenance.json").read_text())["commit"] == "b"
    assert ((to / last / "report.html").read_bytes(), (to / last / "provenance.json").read_bytes()) == kept
    assert out["provenance"]["studies_not_run"] == [] and set(out["provenance"]["studies"]) == set(registry.run_order())


def test_a_run_all_with_a_study_unfinished_keeps_its_published_copy(tmp_path):
    run = _with_extras(_run_dir(tmp_path / "run"))
    to = tmp_path / "pub"
    publish(run, to, commit="a")
    last = registry.run_order()[-1]
    (run / last / "summary.json").unlink()  # the study was re-started and has not finished
    prov = publish(run, to, commit="b")["provenance"]
    assert prov["studies_not_run"] == [] and (to / last / "summary.json").exists()
    assert prov["studies"][last]["commit"] == "a" and prov["studies"][registry.run_order()[0]]["commit"] == "b"


@pytest.mark.parametrize("where", ["study_folder", "top", "edited"])
def test_foreign_or_edited_files_are_refused_before_anything_is_written(tmp_path, where):
    """A new user's file in a study's folder (which the old publish deleted with exit 0), one at the top, or a
    file publish wrote and someone edited since: refused in one line, nothing touched."""
    run = _with_extras(_run_dir(tmp_path / "run"))
    to = tmp_path / "existing"
    publish(run, to, commit="a")
    first = registry.run_order()[0]
    target = {"study_folder": to / first / "my_notes.txt", "top": to / "README.txt",
              "edited": to / first / "report.html"}[where]
    target.write_text("mine")
    before = {p: p.read_bytes() for p in to.rglob("*") if p.is_file()}
    with pytest.raises(ConfigError, match="would not touch") as err:
        publish(run, to, commit="b")
    assert "\n" not in str(err.value) and target.relative_to(to).as_posix() in str(err.value)
    assert {p: p.read_bytes() for p in to.rglob("*") if p.is_file()} == before
    # the same for a folder that was never published into
    other = tmp_path / "mine"
    (other / first).mkdir(parents=True)
    (other / first / "keep.txt").write_text("keep")
    with pytest.raises(ConfigError, match="keep.txt"):
        publish(run, other)
    assert [p.name for p in other.rglob("*") if p.is_file()] == ["keep.txt"]


def test_a_study_made_at_an_older_result_version_is_stale_everywhere(tmp_path, monkeypatch):
    """A published study whose records were made at an older result version than its code's is marked stale on
    the page, in answer.json, in README's block and in the synthesis (its verdicts are not counted)."""
    import dataclasses

    run = _with_extras(_run_dir(tmp_path / "run"))
    # the fake runs have no shipped study file: count them as shipped, so that only staleness keeps them out
    monkeypatch.setattr("bindscale.report.answer._as_shipped", lambda sub, name: True)
    to = tmp_path / "pub"
    readme = tmp_path / "README.md"
    readme.write_text(f"{BEGIN}\n{END}\n")
    first = registry.run_order()[0]
    plugin = registry.builtin()[first]
    bumped = dataclasses.replace(plugin, result_version=plugin.result_version + 1)
    studies = {**registry.builtin(), first: bumped}
    monkeypatch.setattr(registry, "builtin", lambda: studies)
    data = publish(run, to, commit="a", readme=readme)["answer"]
    # the fake records carry no result version (version 1): every study whose code is past 1 is stale too
    stale = [n for n in registry.run_order() if n == first or registry.builtin()[n].result_version > 1]
    assert data["studies"][first]["stale"] and data["missing"]["stale"] == stale
    rows = [c for c in data["claims"] if c["study"] in stale]
    assert rows and all(c["stale"] and not c["firm"] and c["run_status"].startswith("stale") for c in rows)
    others = [c for c in data["claims"] if c["study"] not in stale]
    assert not any(c["stale"] for c in others) and any(c["firm"] for c in others)
    counted = {x for s in data["synthesis"]["sides"].values() for x in s["for"] + s["against"]}
    assert not counted & {c["claim"] for c in rows}
    assert "stale: " in (to / "answer.html").read_text() and f"Stale (made by code" in readme.read_text()


def test_readme_block_is_rewritten_between_the_markers_only(tmp_path):
    run = _with_extras(_run_dir(tmp_path / "run"))
    readme = tmp_path / "README.md"
    readme.write_text(f"# title\n\n{BEGIN}\nold text\n{END}\n\nrest of the readme\n")
    publish(run, tmp_path / "docs" / "answer", commit="c0ffee", readme=readme)
    text = readme.read_text()
    assert text.startswith("# title\n\n" + BEGIN) and text.endswith(f"{END}\n\nrest of the readme\n")
    assert "old text" not in text and "(docs/answer/answer.html)" in text and "`c0ffee`" in text
    block = text.split(BEGIN)[1].split(END)[0]
    n_claims = sum(len(registry.builtin()[n].claims) for n in registry.run_order())
    assert block.count("\n| ") == n_claims + 1  # header + one row per claim (the separator starts "|---")
    # run twice: the block is replaced, not appended (the same day: the same text)
    publish(run, tmp_path / "docs" / "answer", commit="c0ffee", readme=readme)
    assert readme.read_text() == text


def test_refusals_write_nothing(tmp_path):
    run = _with_extras(_run_dir(tmp_path / "run"))
    with pytest.raises(ConfigError, match="no finished study"):
        publish(tmp_path / "empty", tmp_path / "out")
    readme = tmp_path / "R.md"
    readme.write_text("no markers here\n")
    with pytest.raises(ConfigError, match="no block to rewrite"):
        publish(run, tmp_path / "out2", readme=readme)
    with pytest.raises(ConfigError, match="local folder"):
        publish(run, "memory://somewhere")
    (tmp_path / "afile").write_text("x")
    with pytest.raises(ConfigError, match="a file, not a folder"):
        publish(run, tmp_path / "afile")
    assert not (tmp_path / "out").exists() and not (tmp_path / "out2").exists()


def test_cli_publish_and_its_one_line_errors(tmp_path):
    run = _with_extras(_run_dir(tmp_path / "run"))
    r = CliRunner().invoke(app, ["publish", str(run), "--to", str(tmp_path / "pub"), "--commit", "deadbeef"])
    assert r.exit_code == 0, r.output
    assert f"it holds {len(registry.run_order())} studies" in r.output and (tmp_path / "pub" / "answer.html").exists()
    r = CliRunner().invoke(app, ["publish", str(tmp_path / "nothing")])
    assert r.exit_code == 2 and "no finished study" in r.output
    r = CliRunner().invoke(app, ["run", "scaling", "--publish", str(tmp_path / "x")])
    assert r.exit_code == 2 and "run all" in r.output
    r = CliRunner().invoke(app, ["run", "all", "--quick", "--publish", str(tmp_path / "x")])
    assert r.exit_code == 2 and "smoke test" in r.output


def test_wall_time_from_timing_file_else_file_times(tmp_path):
    (tmp_path / "study.yaml").write_text("x")
    (tmp_path / "summary.json").write_text("{}")
    os.utime(tmp_path / "study.yaml", (1000, 1000))
    os.utime(tmp_path / "summary.json", (1750, 1750))
    assert study_wall_seconds(RunStore.of(tmp_path)) == 750
    (tmp_path / "timing.json").write_text(json.dumps({"wall_seconds": 12.5}))
    assert study_wall_seconds(RunStore.of(tmp_path)) == 12.5
    assert study_wall_seconds(RunStore.of(tmp_path / "none")) is None


def test_verdicts_csv_matches_the_summary_via_pandas():
    import io

    import pandas as pd

    summary = {"verdicts": [{"claim": "a", "verdict": "supported", "statistic": "s", "value": 0.5, "ci_low": 0.4,
                             "ci_high": 0.6, "n_trials": 8, "details": {"reason": "gain 0.5, with a comma"}},
                            {"claim": "b", "verdict": "inconclusive", "statistic": "t", "value": None,
                             "ci_low": None, "ci_high": None, "n_trials": 0, "details": {}}]}
    df = pd.read_csv(io.StringIO(verdicts_csv(summary)))
    assert list(df["claim"]) == ["a", "b"] and df.loc[0, "reason"] == "gain 0.5, with a comma"
    assert df.loc[0, "value"] == 0.5 and pd.isna(df.loc[1, "value"])


def test_the_published_page_names_commit_machine_and_wall_time(tmp_path):
    to = tmp_path / "pub"
    publish(_with_extras(_run_dir(tmp_path / "run")), to, commit="0123456789abcdef")
    page = (to / "answer.html").read_text()
    assert "<code>0123456789ab</code>" in page and "min of wall time in all" in page and "result version 1" in page
    assert "bindscale run all --publish docs/answer" in page


@pytest.mark.parametrize("what", ["quick_study", "quick_single_study", "not_built_in"])
def test_a_smoke_test_or_foreign_study_is_refused_before_anything_is_written(tmp_path, what):
    """A quick run (in a run-all folder or alone) is a smoke test, not an answer; a study that is not built in has
    no place on the page: refused, and the published folder is left as it was."""
    run = _with_extras(_run_dir(tmp_path / "run"))
    to = tmp_path / "pub"
    publish(run, to, commit="a")
    before = {p: p.read_bytes() for p in to.rglob("*") if p.is_file()}
    first = registry.run_order()[0]
    s = json.loads((run / first / "summary.json").read_text())
    if what == "not_built_in":
        (run / first / "summary.json").write_text(json.dumps({**s, "study": "my_plugin"}))
        src, words = run / first, "not a built-in study"
    else:
        (run / first / "summary.json").write_text(json.dumps({**s, "quick": True}))
        src, words = (run if what == "quick_study" else run / first), f"{first} ran with --quick"
    with pytest.raises(ConfigError, match=words):
        publish(src, to, commit="b")
    assert {p: p.read_bytes() for p in to.rglob("*") if p.is_file()} == before


def test_rebuild_re_decides_every_published_study_from_its_table(tmp_path, monkeypatch):
    """`publish --rebuild`: each published study's report, summary, verdicts and figures (a real-model variant's
    too) are derived again from its results.parquet with the current rules (here a stand-in report builder); its
    run provenance is kept, the rebuild is recorded, the manifest follows, and a foreign file still stops it before
    anything is written."""
    import types

    import pandas as pd

    import bindscale.report.html as html
    import bindscale.report.publish as P

    run = _with_extras(_run_dir(tmp_path / "run"))
    for name in registry.run_order():
        pd.DataFrame({"trial_id": ["t1"], "status": ["ok"]}).to_parquet(run / name / "results.parquet")
    to = tmp_path / "pub"
    publish(run, to, commit="a")
    publish(_variant_run(run, tmp_path / "lm"), to, commit="a")
    calls = []

    def fake_build_report(out, df, study, run_info=None, unrecorded=None, n_boot=2000):
        calls.append(len(df))
        (Path(out) / "figures").mkdir(parents=True, exist_ok=True)
        (Path(out) / "figures" / "new.png").write_bytes(b"png")
        (Path(out) / "report.html").write_text("<html>rebuilt</html>")
        summary = {"study": "s", "verdicts": [{"claim": "c", "verdict": "supported", "details": {"seeds_per_cell": 9}}],
                   "quick": False, "n_trials": 1, "n_ok": 1}
        (Path(out) / "summary.json").write_text(json.dumps(summary))
        return summary

    fake_study = types.SimpleNamespace(trials=lambda: [], base=object(), model_dump=lambda mode: {"name": "x"})
    monkeypatch.setattr(html, "build_report", fake_build_report)
    monkeypatch.setattr(P, "load_run_study", lambda sub: fake_study)
    monkeypatch.setattr("bindscale.report.answer._as_shipped", lambda sub, name: True)
    out = P.rebuild(to)
    first = registry.run_order()[0]
    order = [f for n in registry.run_order() for f in ([n, VARIANT] if n == STUDY else [n])]
    assert calls == [2 if f == VARIANT else 1 for f in order] and out["published"] == order
    assert (to / VARIANT / "report.html").read_text() == "<html>rebuilt</html>"
    assert json.loads((to / VARIANT / "provenance.json").read_text())["tier"] == VARIANT
    assert (to / first / "report.html").read_text() == "<html>rebuilt</html>"
    assert sorted(p.name for p in (to / first / "figures").glob("*.png")) == ["new.png"]
    prov = json.loads((to / first / "provenance.json").read_text())
    assert prov["commit"] == "a" and prov["verdicts_rebuilt"]["date"]
    manifest = json.loads((to / "MANIFEST.json").read_text())["files"]
    assert f"{first}/figures/new.png" in manifest and (to / first / "verdicts.csv").read_text().count("supported") == 1
    (to / first / "mine.txt").write_text("x")
    with pytest.raises(ConfigError, match="mine.txt"):
        P.rebuild(to)


def test_a_users_readme_in_a_folder_never_published_into_is_foreign(tmp_path):
    """A folder without a manifest or an earlier publish's provenance.json owns nothing of publish's: even a
    README.md at its top (a name publish writes) is the user's, and the publish is refused."""
    run = _with_extras(_run_dir(tmp_path / "run"))
    to = tmp_path / "mine"
    to.mkdir()
    (to / "README.md").write_text("my notes")
    with pytest.raises(ConfigError, match="README.md"):
        publish(run, to)
    assert (to / "README.md").read_text() == "my notes"


def test_a_study_with_the_templates_placeholders_is_not_published(tmp_path, monkeypatch):
    import dataclasses

    run = _with_extras(_run_dir(tmp_path / "run"))
    first = registry.run_order()[0]
    plugin = registry.builtin()[first]
    claims = tuple(dataclasses.replace(c, source="TEMPLATE: a template claim") if i == 0 else c
                   for i, c in enumerate(plugin.claims))
    studies = {**registry.builtin(), first: dataclasses.replace(plugin, claims=claims)}
    monkeypatch.setattr(registry, "builtin", lambda: studies)
    with pytest.raises(ConfigError, match="template's placeholders"):
        publish(run / first, tmp_path / "pub")
    assert not (tmp_path / "pub").exists()


def test_a_tier_run_is_published_as_its_study(tmp_path):
    """A `-full` run's summary names its study file (scaling-full): it is published as its study, with its tier."""
    run = _with_extras(_run_dir(tmp_path / "run"))
    first = registry.run_order()[0]
    tier = next(f for f in registry.builtin_files() if f.startswith(f"{first}-"))
    s = json.loads((run / first / "summary.json").read_text())
    (run / first / "summary.json").write_text(json.dumps({**s, "study": tier}))
    (run / first / "study.yaml").write_text(_shipped_yaml(tier))
    out = publish(run / first, tmp_path / "pub", commit="a")
    assert out["published"] == [first]
    assert json.loads((tmp_path / "pub" / first / "provenance.json").read_text())["tier"] == tier


#: The real-model variant the tests below publish (the study and its shipped `-lm` file).
STUDY, VARIANT = "geometry", "geometry-lm"


def _variant_run(run, out, variant=VARIANT, *, verdict="supported", params=135e6, result_version=None, quick=False):
    """A real-model variant's run, made from the fake `run all`'s folder of its study: its summary and study.yaml
    name the variant file, its verdicts are that file's claims, its results table holds a small from-scratch model
    and the pretrained one (``params``), two seeds, and the result version its records were made at."""
    import shutil

    import pandas as pd

    from bindscale.core.studyfile import resolve_study

    shutil.copytree(run / variant[: -len("-lm")], out)
    s = json.loads((out / "summary.json").read_text())
    claims = list(resolve_study(variant).verdicts)
    verdicts = [dict(v, verdict=verdict) for v in s["verdicts"] if v["claim"] in claims]
    assert verdicts
    (out / "summary.json").write_text(json.dumps({**s, "study": variant, "verdicts": verdicts, "quick": quick,
                                                  "generated": "2026-12-05T10:00:00+00:00"}))
    (out / "study.yaml").write_text(_shipped_yaml(variant))
    (out / "report.html").write_text("<html>real models</html>")
    table = {"trial_id": ["t1", "t2"], "status": ["ok", "ok"], "seed": [0, 1], "n_params": [5e5, params]}
    if result_version is not None:
        table["prov_result_version"] = [result_version] * 2
    pd.DataFrame(table).to_parquet(out / "results.parquet")
    return out


def _snapshot(folder):
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def test_the_variant_rule_names_the_three_shipped_real_model_files():
    from bindscale.report.answer import is_variant, variant_study, variants_of

    assert sorted(f for f in registry.builtin_files() if is_variant(f)) == ["ceiling-lm", "geometry-lm",
                                                                            "length_transfer-lm"]
    assert variant_study("length_transfer-lm") == "length_transfer" and variants_of("geometry") == ["geometry-lm"]
    assert not any(is_variant(t) for t in ("geometry", "geometry-full", "scaling-full", "nothing-lm", None))
    assert variants_of("scaling") == []


def test_a_variant_run_gets_its_own_folder_and_never_touches_its_studys(tmp_path):
    """geometry-lm published beside geometry (which stays byte for byte as it was, tier and all) in geometry-lm/,
    with its own provenance; then the study's main tier published again leaves geometry-lm/ as it was."""
    run = _with_extras(_run_dir(tmp_path / "run"))
    to = tmp_path / "pub"
    publish(run, to, commit="a")
    main = _snapshot(to / STUDY)
    out = publish(_variant_run(run, tmp_path / "lm"), to, commit="b")
    assert out["published"] == [VARIANT]
    assert _snapshot(to / STUDY) == main
    assert (to / VARIANT / "report.html").read_text() == "<html>real models</html>"
    prov = json.loads((to / VARIANT / "provenance.json").read_text())
    assert {k: prov[k] for k in ("study", "tier", "variant", "commit", "date", "seeds_per_deciding_cell")} == \
        {"study": STUDY, "tier": VARIANT, "variant": VARIANT, "commit": "b", "date": "2026-12-05",
         "seeds_per_deciding_cell": 2}
    assert prov["cpu"] and prov["arm"] == "real models"
    top = json.loads((to / "provenance.json").read_text())
    assert list(top["variants"]) == [VARIANT] and set(top["studies"]) == set(registry.run_order())
    assert top["studies"][STUDY]["commit"] == "a" and top["studies_not_run"] == []
    manifest = json.loads((to / "MANIFEST.json").read_text())["files"]
    assert f"{VARIANT}/report.html" in manifest and f"{VARIANT}/provenance.json" in manifest
    assert f"{VARIANT}: tier `{VARIANT}`" in (to / "README.md").read_text()
    # the main tier again (and a whole run all): the variant's folder is left as it was
    variant = _snapshot(to / VARIANT)
    publish(run / STUDY, to, commit="c")
    publish(run, to, commit="d")
    assert _snapshot(to / VARIANT) == variant
    assert json.loads((to / STUDY / "provenance.json").read_text())["commit"] == "d"


@pytest.mark.parametrize("what", ["quick", "edited", "foreign"])
def test_a_variants_refusals_are_the_studys(tmp_path, what):
    """A quick variant run is refused; an edited or foreign file in the variant's folder stops any publish; the
    folder is left as it was."""
    run = _with_extras(_run_dir(tmp_path / "run"))
    to = tmp_path / "pub"
    publish(run, to, commit="a")
    publish(_variant_run(run, tmp_path / "lm"), to, commit="b")
    again = _variant_run(run, tmp_path / "lm2", quick=what == "quick")
    if what == "edited":
        (to / VARIANT / "report.html").write_text("edited")
    elif what == "foreign":
        (to / VARIANT / "notes.txt").write_text("mine")
    before = _snapshot(to)
    with pytest.raises(ConfigError, match="ran with --quick" if what == "quick" else "would not touch"):
        publish(again, to, commit="c")
    assert _snapshot(to) == before


def test_the_variants_rows_follow_the_studys_own_marked_on_the_page_and_in_the_readme(tmp_path):
    run = _with_extras(_run_dir(tmp_path / "run"))
    to = tmp_path / "pub"
    readme = tmp_path / "README.md"
    readme.write_text(f"{BEGIN}\n{END}\n")
    publish(run, to, commit="a")
    data = publish(_variant_run(run, tmp_path / "lm"), to, commit="b", readme=readme)["answer"]
    rows = [c for c in data["claims"] if c.get("variant") == VARIANT]
    own = [c for c in data["claims"] if c["study"] == STUDY and not c.get("variant")]
    assert rows and own and all(c["study"] == STUDY for c in rows)
    for c in rows:
        assert c["arm"] == "real models" and c["tier"] == VARIANT and c["params"] == 135e6
        assert c["report"] == f"{VARIANT}/report.html#claim-{c['claim']}" and c["row_id"] == f"{VARIANT}-{c['claim']}"
        assert c["distance"]["ours_params"] == 135e6 and c["relation"]["word"]
        # after the study's own rows of its side
        same_side = [i for i, x in enumerate(data["claims"]) if x["study"] == STUDY and x["side"] == c["side"]]
        assert data["claims"].index(c) == max(same_side)
    assert all(c["variant"] is None and c["arm"] is None and c["tier"] != VARIANT for c in own)
    assert data["studies"][VARIANT]["variant_of"] == STUDY and data["studies"][STUDY]["report"] == f"{STUDY}/report.html"
    html = (to / "answer.html").read_text().replace("<wbr>", "")
    for c in rows:
        assert f'id="{c["row_id"]}"' in html and f'href="{c["report"]}"' in html
    assert '<span class="arm">real models</span>: <code>geometry-lm</code>' in html
    block = readme.read_text()
    assert block.count(f"| {STUDY}, real models (`{VARIANT}`) | ") == len(rows)
    assert block.count("\n| ") == len(data["claims"]) + 1


def test_a_stale_variant_is_marked_and_not_counted(tmp_path, monkeypatch):
    """The variant's records made at an older result version than its study's code: stale (as the main tier
    would be), its rows shown and not counted; at the current version the same verdict counts."""
    import pandas as pd

    monkeypatch.setattr("bindscale.report.answer._as_shipped", lambda sub, name: True)
    current = registry.builtin()[STUDY].result_version
    run = _with_extras(_run_dir(tmp_path / "run"))
    s = json.loads((run / STUDY / "summary.json").read_text())
    s["verdicts"] = [dict(v, verdict="inconclusive") for v in s["verdicts"]]  # the main tier decides nothing
    (run / STUDY / "summary.json").write_text(json.dumps(s))
    pd.DataFrame({"trial_id": ["t"], "status": ["ok"], "seed": [0], "n_params": [5e5],
                  "prov_result_version": [current]}).to_parquet(run / STUDY / "results.parquet")
    to = tmp_path / "pub"
    publish(run / STUDY, to, commit="a")

    def counted(data):
        return {x for side in data["synthesis"]["sides"].values() for x in side["for"] + side["against"]}

    data = publish(_variant_run(run, tmp_path / "old", result_version=current - 1), to, commit="b")["answer"]
    rows = [c for c in data["claims"] if c.get("variant") == VARIANT]
    assert rows and all(c["stale"] and not c["firm"] and c["run_status"].startswith("stale") for c in rows)
    assert data["studies"][VARIANT]["stale"] and VARIANT in data["missing"]["stale"]
    assert STUDY not in data["missing"]["stale"]
    assert not counted(data) & {c["claim"] for c in rows}
    assert {c["claim"] for c in rows} <= {x for side in data["synthesis"]["sides"].values() for x in side["open"]}
    data = publish(_variant_run(run, tmp_path / "new", result_version=current), to, commit="c")["answer"]
    assert {c["claim"] for c in data["claims"] if c.get("variant")} <= counted(data)


def test_rebuild_with_a_run_dir_is_refused_instead_of_ignoring_it(tmp_path):
    """A new user ran `publish runs/scaling --rebuild`: the run was ignored and a 9-minute rebuild ran instead."""
    r = CliRunner().invoke(app, ["publish", str(tmp_path / "run"), "--rebuild", "--to", str(tmp_path / "answer")])
    assert r.exit_code != 0 and "takes no RUN_DIR" in r.output
    assert not (tmp_path / "answer").exists()


def _as_tier(run, study, tier):
    """The fake `run all`'s folder of ``study`` made a run of its shipped file ``tier`` (``depth-full``)."""
    s = json.loads((run / study / "summary.json").read_text())
    (run / study / "summary.json").write_text(json.dumps({**s, "study": tier}))
    (run / study / "study.yaml").write_text(_shipped_yaml(tier))
    return run / study


@pytest.mark.parametrize("where", ["study_run", "run_all"])
def test_a_run_made_with_set_overrides_is_refused_naming_the_fields(tmp_path, where):
    """`bindscale run scaling --set train.steps=10` (a smoke test) then `publish`: the run's study.yaml is not the
    shipped `scaling` file, so it would replace the published row with numbers no shipped tier makes. Refused in
    one line naming the differing field with both values, before anything is written."""
    run = _with_extras(_run_dir(tmp_path / "run"))
    to = tmp_path / "pub"
    publish(run, to, commit="a")
    before = _snapshot(to)
    (run / "scaling" / "study.yaml").write_text(_shipped_yaml("scaling", ["train.steps=10"]))
    with pytest.raises(ConfigError, match=r"base\.train\.steps \(ran 10, ships 2000\)") as err:
        publish(run / "scaling" if where == "study_run" else run, to, commit="b")
    assert "\n" not in str(err.value) and "a published row is a shipped tier" in str(err.value)
    assert "bindscale run scaling" in str(err.value) and "--replace" not in str(err.value)
    assert _snapshot(to) == before


def test_a_run_whose_study_file_is_not_shipped_is_refused(tmp_path):
    """A study.yaml naming no shipped study file of the study (a user's own copy renamed), or none at all."""
    run = _with_extras(_run_dir(tmp_path / "run"))
    study = resolve_study("scaling", overrides=["train.steps=10"]).model_copy(update={"name": "my-scaling"})
    (run / "scaling" / "study.yaml").write_text(study_yaml(study))
    with pytest.raises(ConfigError, match="names 'my-scaling', which is no shipped study file of scaling"):
        publish(run / "scaling", tmp_path / "pub")
    (run / "scaling" / "study.yaml").unlink()
    with pytest.raises(ConfigError, match="cannot tell which shipped study file it ran"):
        publish(run / "scaling", tmp_path / "pub")
    assert not (tmp_path / "pub").exists()


def test_only_fields_that_say_where_data_lives_may_differ_from_the_shipped_file(tmp_path):
    """geometry-lm needs `--set data.treebank=PATH` (and may move its cache): published as the shipped tier.
    Any other field set (data.n_fit) is refused. The exemption is declared on the fields, not by study name."""
    from bindscale.core.config import data_location_paths
    from bindscale.core.studyfile import shipped_differences

    assert {"data.treebank", "data.cache_dir"} <= data_location_paths(type(resolve_study(VARIANT).base))
    assert data_location_paths(type(resolve_study("scaling").base)) == frozenset()
    at_home = resolve_study(VARIANT, overrides=["data.treebank=/data/ud-english-ewt", "data.cache_dir=/tmp/acts"])
    assert shipped_differences(at_home, resolve_study(VARIANT)) == {}
    run = _with_extras(_run_dir(tmp_path / "run"))
    to = tmp_path / "pub"
    lm = _variant_run(run, tmp_path / "lm", result_version=registry.builtin()[STUDY].result_version)
    (lm / "study.yaml").write_text(_shipped_yaml(VARIANT, ["data.treebank=/data/ud-english-ewt"]))
    assert publish(lm, to, commit="a")["published"] == [VARIANT]
    # ... and counted on the page as the shipped tier it is, not listed as a smoke test (the page used to compare
    # trial ids, which hold the treebank's path)
    answer = json.loads((to / "answer.json").read_text())
    assert answer["studies"][VARIANT]["status"] == "firm" and VARIANT not in answer["missing"]["smoke_tests"]
    before = _snapshot(to)
    (lm / "study.yaml").write_text(_shipped_yaml(VARIANT, ["data.treebank=/data/ud-english-ewt", "data.n_fit=100"]))
    with pytest.raises(ConfigError, match=r"base\.data\.n_fit \(ran 100, ships 500\)") as err:
        publish(lm, to, commit="b")
    assert "data.treebank" in str(err.value).split("only where data lives may differ")[1]
    assert _snapshot(to) == before


def test_a_lower_tier_over_a_published_higher_one_is_refused_unless_asked(tmp_path):
    """The default `depth` over a published `depth-full` used to replace it silently: refused, naming both tiers,
    until --replace-tier. A higher tier over a lower one is published as before."""
    run = _with_extras(_run_dir(tmp_path / "run"))
    to = tmp_path / "pub"
    publish(run, to, commit="a")  # every default tier
    full_run = _with_extras(_run_dir(tmp_path / "full"), ["depth"])
    publish(_as_tier(full_run, "depth", "depth-full"), to, commit="b")  # up a tier: no question asked
    assert json.loads((to / "depth" / "provenance.json").read_text())["tier"] == "depth-full"
    before = _snapshot(to)
    for src in (run / "depth", run):  # the study's run, and a `run all` holding it
        with pytest.raises(ConfigError, match="--replace-tier") as err:
            publish(src, to, commit="c")
        said = str(err.value)
        assert "depth is published at its higher tier depth-full and this run is depth" in said and "\n" not in said
        assert _snapshot(to) == before
    out = publish(run / "depth", to, commit="c", replace_tier=True)
    assert out["published"] == ["depth"]
    assert json.loads((to / "depth" / "provenance.json").read_text())["tier"] == "depth"


def test_cli_publish_documents_and_takes_replace_tier_and_run_all_checks_it_first(tmp_path, monkeypatch):
    """`publish --help` names --replace-tier; the CLI refuses the lower tier in one line and takes the flag;
    `run all --publish` into a folder holding a higher tier is refused before any study trains."""
    import bindscale.run.runner as runner

    run = _with_extras(_run_dir(tmp_path / "run"))
    to = tmp_path / "pub"
    full_run = _with_extras(_run_dir(tmp_path / "full"), ["depth"])
    publish(_as_tier(full_run, "depth", "depth-full"), to, commit="a")
    r = CliRunner().invoke(app, ["publish", "--help"])
    assert r.exit_code == 0 and "--replace-tier" in r.output
    r = CliRunner().invoke(app, ["publish", str(run / "depth"), "--to", str(to), "--commit", "b"])
    assert r.exit_code == 2 and "higher tier depth-full" in r.output and "--replace-tier" in r.output
    r = CliRunner().invoke(app, ["publish", str(run / "depth"), "--to", str(to), "--commit", "b", "--replace-tier"])
    assert r.exit_code == 0, r.output
    publish(_as_tier(full_run, "depth", "depth-full"), to, commit="a")
    trained = []
    monkeypatch.setattr(runner, "run_all", lambda *a, **k: trained.append(1) or {"answer": {}})
    r = CliRunner().invoke(app, ["run", "all", "--out", str(tmp_path / "all"), "--publish", str(to)])
    assert r.exit_code == 2 and "higher tier depth-full" in r.output and not trained
    # a dry run refuses what the run would refuse (it planned every study and said nothing)
    for extra in (["--dry-run"], ["--dry-run", "--quick"]):
        r = CliRunner().invoke(app, ["run", "all", "--out", str(tmp_path / "all"), "--publish", str(to), *extra])
        assert r.exit_code == 2 and ("higher tier depth-full" in r.output or "--quick" in r.output), r.output


def test_report_of_a_published_folder_is_refused_and_leaves_nothing_behind(tmp_path):
    """`bindscale report docs/answer` (or of a study's folder there) took run locks, left `.lock` files and
    rewrote the answer page, so that the next publish was refused: it is refused before touching anything, and
    publish goes on working."""
    run = _with_extras(_run_dir(tmp_path / "run"))
    to = tmp_path / "pub"
    publish(run, to, commit="a")
    before = _snapshot(to)
    for target in (to, to / "scaling"):
        r = CliRunner().invoke(app, ["report", str(target)])
        assert r.exit_code == 2 and "published folder" in r.output and "publish --rebuild" in r.output
        assert _snapshot(to) == before and not list(to.rglob(".lock"))
    publish(run / "scaling", to, commit="b")


def test_a_stale_run_lock_does_not_block_publish_and_a_live_one_does(tmp_path):
    """Lock files whose holder is gone (what `report` of the folder left, or a killed run's) are removed by
    publish and rebuild instead of refusing them as foreign files; a lock a live process holds refuses publish."""
    from bindscale.report.publish import rebuild
    from bindscale.store.lock import FileLock

    run = _with_extras(_run_dir(tmp_path / "run"))
    to = tmp_path / "pub"
    publish(run, to, commit="a")
    for folder in (to, to / "scaling"):
        with FileLock(folder):  # taken and released: the file stays, empty, as a finished report leaves it
            pass
    (to / "depth" / ".lock").write_text(json.dumps({"pid": 999999, "host": "gone", "since": "2026-01-01"}))
    publish(run / "scaling", to, commit="b")
    assert not list(to.rglob(".lock")) and ".lock" not in json.loads((to / "MANIFEST.json").read_text())["files"]
    with FileLock(to / "scaling"):
        before = _snapshot(to)
        with pytest.raises(ConfigError, match=r"scaling/\.lock is held by a live bindscale process \(pid "):
            publish(run / "scaling", to, commit="c")
        with pytest.raises(ConfigError, match="held by a live bindscale process"):
            rebuild(to)
        assert _snapshot(to) == before


def test_a_run_that_decides_no_claim_is_refused_before_anything_is_written(tmp_path):
    """binding_scan-lake2018 (a reproduction of the source's own setting, no verdicts) ranks with the default tier
    by its name: published, it would replace the study's row with one that decides nothing. Refused in one line."""
    run = _with_extras(_run_dir(tmp_path / "run"))
    to = tmp_path / "pub"
    publish(run, to, commit="a")
    before = _snapshot(to)
    src = _as_tier(run, "binding_scan", "binding_scan-lake2018")
    s = json.loads((src / "summary.json").read_text())
    (src / "summary.json").write_text(json.dumps({**s, "verdicts": []}))
    for where in (src, run):
        with pytest.raises(ConfigError, match="binding_scan decided no claim"):
            publish(where, to, commit="b")
    assert _snapshot(to) == before


@pytest.mark.parametrize("which", ["root", "study"])
def test_a_published_folder_is_not_a_run_to_publish(tmp_path, which):
    """`bindscale publish docs/answer/scaling` (the default --to is docs/answer) deleted the study's published
    files, then crashed reading them; into another folder it re-dated the copies as new runs. Refused in one line,
    before anything is touched."""
    run = _with_extras(_run_dir(tmp_path / "run"))
    to = tmp_path / "pub"
    publish(run, to, commit="a")
    before = _snapshot(to)
    first = registry.run_order()[0]
    src = to if which == "root" else to / first
    for target in (to, tmp_path / "elsewhere"):
        with pytest.raises(ConfigError, match="a folder that `bindscale publish` wrote"):
            publish(src, target, commit="b")
        assert not (tmp_path / "elsewhere").exists()
    assert _snapshot(to) == before


def test_a_resumed_runs_timing_sums_its_finished_sessions_and_says_what_it_leaves_untimed(tmp_path):
    from bindscale.report.publish import study_trials_timed, wall_said
    from bindscale.run.runner import add_session_timing

    store = RunStore.of(tmp_path)
    # A first session cut off before it timed itself: its 22 trials are recorded, its time is not.
    second = add_session_timing(store, 3826.75, trials_run=18, recorded_before=22)
    assert second["wall_seconds"] == 3826.75 and second["trials_timed"] == 18
    (tmp_path / "timing.json").write_text(json.dumps(second))
    third = add_session_timing(store, 600.0, trials_run=0, recorded_before=40)  # a resume with nothing left
    assert third["wall_seconds"] == 4426.75 and third["trials_timed"] == 18 and len(third["sessions"]) == 2
    (tmp_path / "timing.json").write_text(json.dumps(third))
    assert study_wall_seconds(store) == 4426.75 and study_trials_timed(store) == 18
    said = wall_said({"wall_seconds": 4426.75, "trials_timed": 18, "n_trials": 40})
    assert said.startswith("74 min for 18 of 40 trials")
    assert wall_said({"wall_seconds": 4426.75, "trials_timed": 40, "n_trials": 40}) == "74 min"
    # A file from before the sums (one session's time) covers that session's trials; no file: unknown.
    (tmp_path / "timing.json").write_text(json.dumps({"wall_seconds": 61.0, "trials_run": 5,
                                                      "trials_recorded_before": 3}))
    assert study_trials_timed(store) == 5
    assert add_session_timing(store, 9.0, 0, 8)["wall_seconds"] == 70.0
    assert study_trials_timed(RunStore.of(tmp_path / "none")) is None


def test_run_all_publish_refuses_a_target_holding_a_foreign_file_before_its_plan(tmp_path):
    """`run all --publish DIR` (and its dry run) refuses a DIR holding a file publish did not write before any study
    trains, as the first publish would refuse it hours later; nothing in DIR changes."""
    from typer.testing import CliRunner

    from bindscale.cli import app

    to = tmp_path / "pub"
    to.mkdir()
    (to / "notes.txt").write_text("mine")
    # The dry run only: the check stands before the run / dry-run branch, and a regression must not start a real run.
    r = CliRunner().invoke(app, ["run", "all", "--out", str(tmp_path / "runs"), "--publish", str(to), "--dry-run"])
    assert r.exit_code == 2 and "notes.txt" in r.output, r.output
    assert sorted(p.name for p in to.iterdir()) == ["notes.txt"] and not (tmp_path / "runs").exists()
