"""Publish a ``run all`` directory's answer into the repository (``docs/answer/``), issue 34 item 8.

``publish(run_dir, to)`` copies, for every study the run finished, what a reader needs and nothing
per trial beyond one small table: the study's resolved file (``study.yaml``), ``summary.json``, its
verdicts as ``verdicts.csv``, ``report.html``, ``figures/*.png`` and ``results.parquet`` (one row
per trial). It then builds ``answer.html`` / ``answer.json`` from those copies
(:func:`bindscale.report.answer.build_answer`), writes ``provenance.json`` (the commit the studies ran at,
the machine, its CPU, each study's wall time) and ``README.md`` (the synthesis, the claims, how to
regenerate), and, when asked, rewrites the block of a README between :data:`BEGIN` and :data:`END`
with the same synthesis, so the repository's README opens with the answer.

Reading the run directory never writes to it: publishing a live ``run all`` (``run all --publish``
does it after every study) is safe, and the studies not finished yet are listed as not run.

Layer: beside the answer page; it imports the runner's storage and the answer builder, never a trainer.
"""

from __future__ import annotations

import csv
import datetime as _dt
import io
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

from bindscale.core import registry
from bindscale.report.answer import build_answer
from bindscale.core.errors import ConfigError
from bindscale.core.fmt import fmt_ci, verdict_words
from bindscale.core.machine import describe as machine
from bindscale.store.rundir import STUDY_FILE
from bindscale.store.storage import RunStore, is_url

#: The README block :func:`publish` rewrites (the markers stay; what lies between them is replaced).
BEGIN = "<!-- answer:begin (written by `bindscale publish`; edits here are overwritten) -->"
END = "<!-- answer:end -->"

#: Per study, the files copied as they are (figures are copied by pattern).
#: The one command that regenerates the published answer (README and provenance.json say it).
REGENERATE = "bindscale run all --publish docs/answer && bindscale publish runs/all --readme README.md"
FILES = (STUDY_FILE, "summary.json", "report.html", "results.parquet", "timing.json")

VERDICT_COLUMNS = ("claim", "verdict", "statistic", "value", "ci_low", "ci_high", "n_trials", "reason")


def git_commit(where: "str | Path" = ".") -> str | None:
    """``git rev-parse HEAD`` in ``where`` (with ``+dirty`` when tracked files differ); None outside git."""
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=where, capture_output=True, text=True,
                              timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=where,
                               capture_output=True, text=True, timeout=10, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return head + ("+dirty" if dirty else "")


def study_wall_seconds(sub: RunStore) -> float | None:
    """A study's wall time: ``timing.json`` (written by the runner since issue 34) when present, else the
    seconds between its ``study.yaml`` (written when the run starts) and its ``summary.json`` (written
    last) in a local directory; None when neither is known. A resumed study's span covers its pauses."""
    if sub.exists("timing.json"):
        try:
            return float(json.loads(sub.read_text("timing.json"))["wall_seconds"])
        except (ValueError, KeyError, TypeError):
            pass
    root = Path(str(sub))
    try:
        return (root / "summary.json").stat().st_mtime - (root / STUDY_FILE).stat().st_mtime
    except OSError:
        return None


def verdicts_csv(summary: dict) -> str:
    """The study's verdicts as a CSV table, one row per claim (columns :data:`VERDICT_COLUMNS`)."""
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=VERDICT_COLUMNS, extrasaction="ignore", lineterminator="\n")
    w.writeheader()
    for v in summary.get("verdicts") or []:
        reason = (v.get("details") or {}).get("reason", "")
        w.writerow({**{k: v.get(k) for k in VERDICT_COLUMNS}, "reason": reason})
    return buf.getvalue()


def synthesis_markdown(answer: dict, link: str | None = None) -> str:
    """The answer in Markdown: the synthesis sentences, then one line per claim (verdict, number with its
    interval, the source's headline), as README opens with it."""
    lines = []
    for s in answer["synthesis"]["answer"]:
        lines.append(f"- {s}")
    lines.append("")
    lines.append("| study | claim | verdict | bindscale (95% CI) | relation to the source |")
    lines.append("|---|---|---|---|---|")
    for c in answer["claims"]:
        rel = (c.get("relation") or {}).get("word") or ""
        lines.append(f"| {c['study']} | {c['claim']} | {verdict_words(c['verdict'], not c.get('firm'))} | "
                     f"{fmt_ci(c.get('value'), c.get('ci_low'), c.get('ci_high'))} | {rel} |")
    not_run = answer["missing"]["studies_not_run"]
    if not_run:
        lines.append("")
        lines.append(f"Not run (yet): {', '.join(not_run)}.")
    if link:
        lines.append("")
        lines.append(f"Every claim with its reason, gates, source headline and figure: [{link}]({link}).")
    return "\n".join(lines) + "\n"


def _copy_study(src: RunStore, dst: RunStore) -> None:
    for name in FILES:
        if src.exists(name):
            dst.write_bytes(name, src.read_bytes(name))
    for fig in src.list("figures", ".png"):
        dst.write_bytes(f"figures/{fig}", src.read_bytes(f"figures/{fig}"))
    dst.write_text("verdicts.csv", verdicts_csv(json.loads(src.read_text("summary.json"))))


def check_target(to: "str | Path") -> None:
    """Refuse a target that cannot be the published folder: a URL, or an existing file.

    Raises:
        ConfigError: with the reason, in one line.
    """
    if str(to).strip() == "":
        raise ConfigError("--to: empty path; give the folder to publish into (docs/answer)")
    if is_url(to):
        raise ConfigError(f"--to {to}: the published answer is a local folder (it is kept in the repository)")
    if Path(to).exists() and not Path(to).is_dir():
        raise ConfigError(f"--to {to}: a file, not a folder")


def publish(run_dir: "str | Path", to: "str | Path" = "docs/answer", *, commit: str | None = None,
            readme: "str | Path | None" = None) -> dict[str, Any]:
    """Copy a ``run all`` directory's finished studies into ``to`` and build the answer there.

    Args:
        run_dir: a directory written by ``bindscale run all`` (read only).
        to: the published folder; each study's old copy is replaced, nothing else in it is touched.
        commit: the commit the studies ran at (default: ``git rev-parse HEAD`` of the working directory).
        readme: a Markdown file holding the :data:`BEGIN` / :data:`END` markers; the block between them
            becomes the synthesis and the claim table, with a link to ``to``'s answer page.

    Returns: ``{"answer": answer.json's data, "provenance": provenance.json's data}``.

    Raises:
        ConfigError: ``to`` is a URL (the published folder is a local one, kept in git);
            ``run_dir`` is not a ``run all`` directory or none of its studies has finished;
            ``readme`` lacks the markers. Nothing is written then.
    """
    check_target(to)
    src = RunStore.of(run_dir)
    if src.exists("summary.json"):
        raise ConfigError(f"{run_dir}: one study's run directory; publish takes a `bindscale run all` directory "
                          "(runs/all), whose answer covers every study")
    names = [n for n in registry.run_order() if src.exists(f"{n}/summary.json")]
    quick = [n for n in names if json.loads(src.read_text(f"{n}/summary.json")).get("quick")]
    if quick:
        # A smoke test published over docs/answer would replace every study's committed answer (the folder
        # holds one run): refused before anything is written.
        raise ConfigError(f"{run_dir}: {', '.join(quick)} ran with --quick, a smoke test, not an answer to publish; "
                          "publish a default `bindscale run all`")
    if not names:
        started = [n for n in registry.run_order() if src.exists(f"{n}/{STUDY_FILE}")]
        raise ConfigError(f"{run_dir}: no finished study to publish (a `bindscale run all` directory with at least "
                          f"one study's summary.json){'; started: ' + ', '.join(started) if started else ''}")
    readme_text = None
    if readme is not None:
        try:
            readme_text = Path(readme).read_text(encoding="utf-8")
        except OSError as err:
            raise ConfigError(f"--readme {readme}: {err.strerror or err}") from None
        if BEGIN not in readme_text or END not in readme_text or readme_text.index(BEGIN) > readme_text.index(END):
            raise ConfigError(f"--readme {readme}: no block to rewrite; put the two lines\n{BEGIN}\n{END}\nwhere the "
                              "answer should go")
    dst = RunStore.of(to)
    dst.makedirs()
    studies = {}
    for name in registry.run_order():
        # A study's old copy goes first (a figure the new report no longer draws, a study this run has not
        # finished): the folder holds one run, never a mix of two.
        shutil.rmtree(Path(to) / name, ignore_errors=True)
        if name not in names:
            continue
        out = RunStore.of(dst.where(name))
        sub = RunStore.of(src.where(name))
        _copy_study(sub, out)
        summary = json.loads(sub.read_text("summary.json"))
        wall = study_wall_seconds(sub)
        studies[name] = {"wall_seconds": None if wall is None else round(wall, 1),
                         "n_trials": summary.get("n_trials"), "n_ok": summary.get("n_ok"),
                         "quick": bool(summary.get("quick")), "report_generated": summary.get("generated")}
    walls = [s["wall_seconds"] for s in studies.values() if s["wall_seconds"] is not None]
    provenance = {
        "run_dir": Path(str(run_dir)).name,  # the folder's name only: a local path means nothing in a clone
        "commit": commit or git_commit(), "machine": machine(),
        "published": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "studies": studies, "wall_seconds_total": round(sum(walls), 1) if walls else None,
        "studies_not_run": [n for n in registry.run_order() if n not in names],
        "regenerate": REGENERATE,
    }
    dst.write_text("provenance.json", json.dumps(provenance, indent=2) + "\n")
    answer = build_answer(to)  # after provenance.json: the page shows the commit, machine and wall time
    dst.write_text("README.md", _folder_readme(answer, provenance))
    if readme_text is not None:
        rel = os.path.relpath(Path(to).resolve() / "answer.html", Path(readme).resolve().parent)
        head, rest = readme_text.split(BEGIN, 1)
        tail = rest.split(END, 1)[1]
        block = synthesis_markdown(answer, link=rel) + _provenance_line(provenance) + "\n"
        Path(readme).write_text(f"{head}{BEGIN}\n{block}{END}{tail}", encoding="utf-8")
    return {"answer": answer, "provenance": provenance}


def _minutes(seconds: float | None) -> str:
    if seconds is None:
        return "unknown"
    m = seconds / 60
    return f"{m:.0f} min" if m < 90 else f"{int(m // 60)} h {int(round(m % 60)):02d} min"


def _provenance_line(p: dict) -> str:
    m = p["machine"]
    return (f"\nRun at commit `{(p['commit'] or 'unknown')[:12]}` on {m.get('cores')} cores of {m.get('cpu')} "
            f"(torch {m.get('torch', '?')}), {_minutes(p['wall_seconds_total'])} of wall time in all; "
            f"published {p['published'][:10]}.\n")


def _folder_readme(answer: dict, p: dict) -> str:
    rows = "\n".join(f"| {n} | {_minutes(s['wall_seconds'])} | {s['n_ok']} of {s['n_trials']} |"
                     for n, s in p["studies"].items())
    return ("# The answer, published\n\n"
            f"{answer['question']}\n\n"
            f"{synthesis_markdown(answer, link='answer.html')}{_provenance_line(p)}\n"
            "| study | wall time | trials ok |\n|---|---|---|\n" + rows + "\n\n"
            "Each study's folder holds its report (`report.html`), verdicts (`verdicts.csv`, `summary.json`), "
            "figures and one row per trial (`results.parquet`); `provenance.json` has the machine and timings.\n\n"
            f"Regenerate (about as long as the wall time above): `{p['regenerate']}`\n")
