"""`bindscale publish`: a `run all` directory's answer copied into a folder kept in git (issue 34, item 8)."""

import json
import os

import pytest
from typer.testing import CliRunner

from bindscale.core import registry
from bindscale.cli import app
from bindscale.core.errors import ConfigError
from bindscale.report.publish import BEGIN, END, publish, study_wall_seconds, verdicts_csv
from bindscale.store.storage import RunStore

from .test_answer_layout import _run_dir


def _with_extras(root, names=None):
    """The fake run of test_answer_layout plus what a real study folder also holds."""
    for name in names or registry.run_order():
        d = root / name
        (d / "study.yaml").write_text("name: x\n")
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
    prov = json.loads((to / "provenance.json").read_text())
    assert prov["commit"] == "abc123" and prov["machine"]["cores"] == os.cpu_count()
    assert prov["machine"]["cpu"] and prov["studies_not_run"] == []
    assert prov["wall_seconds_total"] == pytest.approx(61.0 * len(registry.run_order()))
    # the copied answer equals one built from the run itself (same claims, same verdicts)
    assert [c["verdict"] for c in result["answer"]["claims"]] == \
        [c["verdict"] for c in json.loads((to / "answer.json").read_text())["claims"]]
    assert "# The answer, published" in (to / "README.md").read_text()


def test_a_study_not_finished_is_listed_and_an_old_copy_removed(tmp_path):
    run = _with_extras(_run_dir(tmp_path / "run"))
    to = tmp_path / "pub"
    publish(run, to, commit="a")
    last = registry.run_order()[-1]
    (run / last / "summary.json").unlink()  # the study was re-started and has not finished
    (to / registry.run_order()[0] / "figures" / "stale.png").write_bytes(b"x")
    prov = publish(run, to, commit="b")["provenance"]
    assert prov["studies_not_run"] == [last] and not (to / last).exists()
    assert not (to / registry.run_order()[0] / "figures" / "stale.png").exists()
    assert json.loads((to / "answer.json").read_text())["missing"]["studies_not_run"] == [last]


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
    assert "published 7 studies" in r.output and (tmp_path / "pub" / "answer.html").exists()
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
    assert "<code>0123456789ab</code>" in page and "min of wall time in all" in page
    assert "bindscale run all --publish docs/answer" in page


@pytest.mark.parametrize("what", ["quick_study", "single_study_dir"])
def test_a_smoke_test_or_one_studys_run_is_refused_before_anything_is_written(tmp_path, what):
    """A quick study in a run-all-shaped folder would replace every committed study's answer (a new user did
    that: `run scaling --quick`, copied into a folder, published without --to)."""
    run = _with_extras(_run_dir(tmp_path / "run"))
    to = tmp_path / "pub"
    publish(run, to, commit="a")
    before = sorted(p.relative_to(to) for p in to.rglob("*"))
    if what == "quick_study":
        first = registry.run_order()[0]
        s = json.loads((run / first / "summary.json").read_text())
        (run / first / "summary.json").write_text(json.dumps({**s, "quick": True}))
        src, words = run, f"{first} ran with --quick"
    else:
        src, words = run / registry.run_order()[0], "one study's run directory"
    with pytest.raises(ConfigError, match=words):
        publish(src, to, commit="b")
    assert sorted(p.relative_to(to) for p in to.rglob("*")) == before
    assert json.loads((to / "provenance.json").read_text())["commit"] == "a"
