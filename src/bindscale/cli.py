"""Command line: ``bindscale run | report | list``.

Every user error is one line on stderr and exit code 2, with nothing written.
"""

from __future__ import annotations

import signal
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from bindscale.core.errors import BindscaleError
from bindscale.run.progress import console
from bindscale.store.storage import RunStore

app = typer.Typer(add_completion=False, help="Studies of scale vs binding in compositional generalization.")


def _version(value: bool) -> None:
    if value:
        from bindscale import __version__

        print(f"bindscale {__version__}")
        raise typer.Exit(0)


@app.callback(invoke_without_command=True)
def _root(
    ctx: typer.Context,
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True, help="print the version")] = False,
) -> None:
    if ctx.invoked_subcommand is None:
        print(ctx.get_help())
        raise typer.Exit(0)
# Wide when piped (rich assumes 80 columns off a terminal and would wrap paths and names).
err_console = console(stderr=True)


def _fail(msg: str) -> None:
    err_console.print(f"[red]error:[/] {escape(msg)}", highlight=False, soft_wrap=True)
    raise typer.Exit(2)


@app.command()
def run(
    study: Annotated[Optional[str], typer.Argument(help="built-in study name, a path to a study YAML, or `all` "
                                                   "(default: the headline study)")] = None,
    quick: Annotated[bool, typer.Option("--quick", help="the study's reduced version (minutes)")] = False,
    out: Annotated[Optional[str], typer.Option("--out", help="run directory: a path or an fsspec URL (default runs/STUDY[-quick])")] = None,
    set_: Annotated[Optional[list[str]], typer.Option("--set", help="override: key=value (e.g. train.steps=500, width=[16,64])")] = None,
    device: Annotated[str, typer.Option("--device", help="auto | cpu | cuda")] = "auto",
    workers: Annotated[Optional[int], typer.Option("--workers", help="worker processes (default: one per core)")] = None,
    executor: Annotated[Optional[str], typer.Option("--executor", help="inline | process | ray (default: process with >1 worker)")] = None,
    address: Annotated[Optional[str], typer.Option("--address", help="Ray cluster address (default: start a local Ray)")] = None,
    retries: Annotated[int, typer.Option("--retries", help="re-runs of a job whose worker died, then its trials are failed")] = 2,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="print the trials per grid, the stacked jobs and an estimated time; run and write nothing")] = False,
    print_config: Annotated[bool, typer.Option("--print-config", help="print the resolved study YAML (after --quick and --set); run nothing")] = False,
    publish_to: Annotated[Optional[str], typer.Option("--publish", help="with `all`: publish the answer into this folder after every study (as `bindscale publish`)")] = None,
) -> None:
    """Run (or resume) a study and write records, results.parquet, report.html and summary.json."""
    # Only torch-free modules until the study is known to be valid: a one-line error answers at once
    # (runner, sweep and executors import torch, and the report modules scikit-learn).
    from bindscale.core.studyfile import resolve_study

    if device not in ("auto", "cpu", "cuda"):
        _fail(f"--device {device!r}: allowed: auto, cpu, cuda")
    if study == "all":
        return _run_all(quick, out, set_, device, workers, executor, address, retries, dry_run, print_config,
                        publish_to)
    if publish_to is not None:
        _fail("--publish publishes the answer of `bindscale run all`; a single study has no answer page")
    try:
        if study is None:
            from bindscale.core.registry import headline

            study = headline().name
        cfg = resolve_study(study, quick=quick, overrides=set_ or [])
    except BindscaleError as err:
        _fail(str(err))
    from bindscale.core.studyfile import study_notes

    for note in study_notes(cfg):  # valid, but probably not what was meant: said, not refused
        err_console.print(f"note: {escape(note)}", highlight=False, soft_wrap=True)
    if print_config:
        from bindscale.store.rundir import study_yaml

        print(study_yaml(cfg), end="", flush=True)
    if print_config or dry_run:
        if dry_run:
            from bindscale.run.dryrun import describe_plan
            from bindscale.run.runner import default_out

            try:
                text = describe_plan(cfg, workers=workers, device=device, executor=executor, retries=retries, address=address,
                                     out=out if out is not None else str(default_out(cfg, quick)))
            except BindscaleError as err:
                _fail(str(err))
            print(text, flush=True)
            _say_if_held(out if out is not None else str(default_out(cfg, quick)))
        return
    from bindscale.run.runner import default_out, run_study

    try:
        out_dir = out if out is not None else str(default_out(cfg, quick))  # --out '' is an error, not the default
        summary = run_study(cfg, out_dir, device=device, workers=workers, console=err_console,
                            executor=executor, retries=retries, address=address)
    except BindscaleError as err:
        _fail(str(err))
    _print_summary(summary, out_dir)


def _run_all(quick, out, set_, device, workers, executor, address, retries, dry_run=False,
             print_config=False, publish_to=None) -> None:
    from bindscale.core import registry
    from bindscale.core.studyfile import resolve_study

    if set_:
        _fail("--set applies to one study; `run all` runs every built-in study as its file says (run a study "
              "by name to change it)")
    out_dir = out if out is not None else ("runs/all-quick" if quick else "runs/all")
    # The publish target's checks come first, so that a dry run refuses what the run would refuse.
    if publish_to is not None and quick:
        _fail("--publish with --quick: a quick run is a smoke test, not an answer to publish")
    if publish_to is not None:
        from bindscale.report.publish import check_foreign, check_target, check_tiers

        try:
            check_target(publish_to)
            check_foreign(publish_to)  # a file publish did not write (or one edited since): refused now, not hours in
            # before any study trains: `run all` makes every study's default tier, which must not replace a
            # higher tier already published there (found only after the first study's hours otherwise)
            check_tiers({name: name for name in registry.run_order()}, publish_to)
        except BindscaleError as err:
            _fail(str(err))
    if dry_run or print_config:  # each study's plan / resolved file, in the order `run all` runs them
        from bindscale.run.dryrun import _clock, describe_plan
        from bindscale.store.rundir import study_yaml

        walls: list[float] = []
        try:
            for name in registry.run_order():
                cfg = resolve_study(name, quick=quick)
                if print_config:
                    print(f"# {name}\n{study_yaml(cfg)}", end="", flush=True)
                if dry_run:
                    print(describe_plan(cfg, workers=workers, device=device, executor=executor, retries=retries,
                                        address=address, out=RunStore(out_dir).where(name), walls=walls), flush=True)
        except BindscaleError as err:
            _fail(str(err))
        if dry_run:
            if len(walls) == len(registry.run_order()):  # every study had a CPU estimate: one after another
                print(f"run all: ~{_clock(sum(walls))} wall in all (the studies run one after another)", flush=True)
            _say_if_held(out_dir)
        return
    from bindscale.run.runner import run_all


    def study_done(name: str, summary: dict) -> None:  # each study's verdicts as soon as it finishes
        _print_summary(summary, RunStore(out_dir).where(name))
        if publish_to is not None:  # the answer so far, so that a long run survives interruption
            from bindscale.report.publish import publish

            publish(out_dir, publish_to)
            err_console.print(f"published the answer so far in {publish_to}", highlight=False)

    try:
        result = run_all(out_dir, quick=quick, console=err_console, on_study_done=study_done, device=device,
                         workers=workers, executor=executor, retries=retries, address=address)
    except BindscaleError as err:
        _fail(str(err))
    _print_answer(result["answer"], out_dir)


def _anchor_lines(row: dict) -> list[str]:
    """A claim's source headline and its relation to bindscale's number, as the answer page shows them
    (``row``: an answer.json claim row or a summary's verdict, with ``anchor`` / ``relation`` when known)."""
    from bindscale.core.fmt import anchor_text

    out = []
    anchor, relation = row.get("anchor"), row.get("relation")
    if isinstance(anchor, dict) and anchor:
        out.append(f"source's headline: {anchor_text(anchor)}")
    distance = row.get("distance")
    if isinstance(distance, dict) and distance.get("text"):
        out.append(f"measure and scale: {distance['text']}")
    if isinstance(relation, dict) and relation.get("word") and (
            not isinstance(distance, dict) or relation["word"] in ("reproduced", "contradicted")):
        out.append(f"relation: {relation['word']}" + (f" ({relation['why']})" if relation.get("why") else ""))
    decide = row.get("decide")
    if isinstance(decide, dict) and decide.get("text"):
        out.append(decide["text"])
    return out


def _print_answer(answer: dict, out_dir: str) -> None:
    from bindscale.core.fmt import fmt_ci, verdict_words

    con = console()
    con.print(f"[bold]The answer so far[/] ({answer['question']})", highlight=False)
    for line in answer["synthesis"]["answer"]:
        con.print(f"  - {line}", highlight=False)
    if any(c.get("anchor") or c.get("relation") for c in answer.get("claims", [])):
        con.print("every claim, bindscale's number beside its source's:", highlight=False)
        for c in answer["claims"]:
            con.print(f"  {c.get('variant') or c['study']} › {c['claim']}: {verdict_words(c['verdict'], not c.get('firm'), bool(c.get('stale')))}, "
                      f"{fmt_ci(c.get('value'), c.get('ci_low'), c.get('ci_high'))}", highlight=False)
            for line in _anchor_lines(c):
                con.print(f"    {line}", highlight=False)
    if answer["missing"]["smoke_tests"]:
        con.print(f"  smoke tests only (not counted): {', '.join(answer['missing']['smoke_tests'])}", highlight=False)
    if answer["missing"].get("stale"):
        con.print(f"  stale, made by code whose numbers have moved since (not counted): "
                  f"{', '.join(answer['missing']['stale'])}", highlight=False)
    for label, name in (("answer page", "answer.html"), ("answer data", "answer.json")):
        con.print(f"{label}: {RunStore(out_dir).where(name)}", soft_wrap=True, highlight=False)


@app.command()
def report(run_dir: Annotated[str, typer.Argument(help="a run directory (path or URL) written by `bindscale run`")]) -> None:
    """Rebuild results.parquet, report.html and summary.json from a run's records."""
    from bindscale.store.lock import RunLock, RunLocked
    from bindscale.run.runner import build_outputs, load_run_study

    from bindscale.run.runner import is_multi_run, rebuild_all

    _refuse_published(run_dir)
    try:
        multi = is_multi_run(run_dir)
    except BindscaleError as err:  # e.g. an empty path or an unreadable URL
        _fail(str(err))
    if multi:
        try:
            result = rebuild_all(run_dir)
        except RunLocked as err:
            _fail(f"run directory {err.where} is being written by a live bindscale run ({err.holder}); run "
                  "`bindscale report` after it finishes")
        except BindscaleError as err:
            _fail(str(err))
        for name, summary in result["studies"].items():
            _print_summary(summary, RunStore(run_dir).where(name))
        for name in result.get("unrecorded", []):
            err_console.print(f"{name}: nothing recorded yet (no trial of it finished), so its report was not "
                              f"rebuilt; {_resume_how(RunStore(run_dir).where(name))}")
        _print_answer(result["answer"], run_dir)
        return
    try:
        study = load_run_study(run_dir)
        # Under the run's lock: a live run writes these files itself when it ends.
        with RunLock(run_dir):
            _check_recorded(run_dir)
            summary = build_outputs(run_dir, study, study.trials())
    except RunLocked as err:
        _fail(f"run directory {err.where} is being written by a live bindscale run ({err.holder}); it writes "
              "its report when it finishes: run `bindscale report` after that")
    except BindscaleError as err:
        _fail(str(err))
    _print_summary(summary, run_dir)


def _refuse_published(run_dir: str) -> None:
    """Refuse `bindscale report` of a folder `bindscale publish` wrote (or a study's folder in it), before any lock
    is taken or file written: it keeps no per-trial records to rebuild from, and a report there would leave run
    locks and rewrite answer files that publish owns, so that the next publish is refused."""
    from bindscale.report.publish import MANIFEST, published_root

    root = published_root(run_dir)
    if root is not None:
        _fail(f"{run_dir} is a published folder ({root / MANIFEST} is bindscale publish's), not a run directory: it "
              f"keeps no records to rebuild a report from; re-decide its studies with `bindscale publish --rebuild "
              f"--to {root}`, or report the run directory it was published from")


def _say_if_held(out: str) -> None:
    """A dry run's warning that the real run would be refused now: a live run holds ``out``."""
    from bindscale.store.lock import live_holder

    try:
        holder = live_holder(out)
    except (BindscaleError, OSError):  # an unreachable URL: the real run will say so itself
        return
    if holder:
        err_console.print(f"note: {escape(out)} is being written by a live bindscale run ({escape(holder)}): "
                          "this run would be refused until that one finishes", highlight=False, soft_wrap=True)


def _check_recorded(run_dir: str) -> None:
    """Refuse a run directory without a single record (a run stopped before its first trial finished):
    its report would be all gaps, explained as if part of the run were missing."""
    from bindscale.store.records import RECORD_DIR

    store = RunStore.of(run_dir)
    if store.list(RECORD_DIR, ".json"):
        return
    _fail(f"{run_dir}: nothing has been recorded yet (no trial of its study has finished), so there is nothing "
          f"to report; {_resume_how(run_dir)}")


def _resume_how(run_dir: str) -> str:
    """How to finish the run in ``run_dir``: the exact ``bindscale run`` command where its study file is local."""
    import shlex

    from bindscale.run.runner import STUDY_FILE

    store = RunStore.of(run_dir)
    if store.local is None:
        return "re-run the `bindscale run` command that made it"
    return f"run it with `bindscale run {shlex.quote(store.where(STUDY_FILE))} --out {shlex.quote(run_dir)}`"


@app.command("publish")
def publish_cmd(
    run_dir: Annotated[Optional[str], typer.Argument(help="one study's run directory or a `bindscale run all` directory (default: runs/all)")] = None,
    to: Annotated[str, typer.Option("--to", help="the published folder (kept in the repository)")] = "docs/answer",
    readme: Annotated[Optional[str], typer.Option("--readme", help="a Markdown file whose answer block (between its answer markers) is rewritten")] = None,
    commit: Annotated[Optional[str], typer.Option("--commit", help="the commit the studies ran at, where their records do not say (default: git HEAD here)")] = None,
    rebuild: Annotated[bool, typer.Option("--rebuild", help="decide every published study again from its published results table with the current rules (no RUN_DIR)")] = False,
    replace_tier: Annotated[bool, typer.Option("--replace-tier", help="publish a study's run even where the folder holds a higher tier of it (the default `depth` over a published `depth-full`), which is refused without it")] = False,
) -> None:
    """Merge a study's run (or a `run all` directory) into the published answer: its report, verdicts, figures
    and provenance beside every other published study; or, with --rebuild, re-decide the published studies.

    A published row is a shipped tier as it ships: a run made with --set (other than where data lives, such as
    data.treebank) is refused. A lower tier over a published higher one (`depth` over `depth-full`) is refused
    unless --replace-tier is given."""
    from bindscale.report.publish import check_target, publish
    from bindscale.report.publish import rebuild as rebuild_published
    from bindscale.run.dryrun import tier_estimates

    if rebuild and run_dir is not None:  # it would be ignored: --rebuild reads the published folder only
        _fail(f"--rebuild re-decides the studies published in {to} from their own tables; it takes no RUN_DIR "
              f"({run_dir}): publish the run first (bindscale publish {run_dir}), then --rebuild")
    run_dir = run_dir if run_dir is not None else "runs/all"
    try:
        check_target(to)
        if rebuild:
            result = rebuild_published(to, readme=readme, tier_estimates=tier_estimates())
        else:
            result = publish(run_dir, to, commit=commit, readme=readme, tier_estimates=tier_estimates(),
                             replace_tier=replace_tier)
    except BindscaleError as err:
        _fail(str(err))
    p = result["provenance"]
    what = "re-decided" if rebuild else "published"
    print(f"{what} {', '.join(result['published'])}{'' if rebuild else f' of {run_dir}'} in {to}; it holds "
          f"{len(p['studies'])} studies"
          + (f" and {len(p['variants'])} real-model variant{'s' if len(p['variants']) != 1 else ''} "
             f"({', '.join(p['variants'])})" if p.get("variants") else "")
          + " (answer.html, answer.json, provenance.json)"
          + (f"; not run: {', '.join(p['studies_not_run'])}" if p["studies_not_run"] else ""), flush=True)
    _print_answer(result["answer"], to)


@app.command("list")
def list_() -> None:
    """Show the registered studies (built-in and plugins) and their claims."""
    from bindscale.core import registry

    con = Console()
    try:
        studies = registry.studies()
    except BindscaleError as err:  # a plugin that cannot be loaded, or two studies of one name: one line
        _fail(str(err))
    width = max(map(len, studies), default=0)

    def line(text: str) -> None:
        # One line per study, cut to the width of a terminal; in a pipe (where rich assumes 80 columns)
        # nothing is cut or wrapped, so grep and a pager see whole lines.
        if con.is_terminal and len(text) > con.width:
            text = text[: con.width - 1].rstrip() + "…"
        con.print(escape(text), highlight=False, soft_wrap=True)

    con.print("studies:", highlight=False)
    for name, s in studies.items():
        line(f"  {name:<{width}}  ({s.kind}) {first_sentence(s.description)}")
    variants = [(v, name, path) for name, s in studies.items() for v, path in s.study_files().items() if v != name]
    if variants:  # a study's other study files: `bindscale run VARIANT` takes them too
        con.print("variants (other study files of a study):", highlight=False)
        for v, name, path in variants:
            line(f"  {v:<{width}}  (of {name}) {first_sentence(_file_description(path))}")
    con.print("claims:", highlight=False)
    for name, s in studies.items():
        line(f"  {name:<{width}}  {', '.join(c.name for c in s.claims)}")
    con.print("run one: bindscale run NAME [--quick]; all built-in ones and their answer page: bindscale run all",
              highlight=False, soft_wrap=True)


@app.command("new-study")
def new_study(
    name: Annotated[str, typer.Argument(help="the new study's name (a lowercase Python identifier)")],
    dir_: Annotated[Path, typer.Option("--dir", help="where to write the study folder and its test")] = Path("."),
) -> None:
    """Make a new study folder from the template (a small complete study wired by convention)."""
    from bindscale.core.scaffold import how_to_register, new_study as make

    try:
        package, test_file = make(name, dir_)
    except BindscaleError as err:
        _fail(str(err))
    print(how_to_register(package, test_file))


def _file_description(path) -> str:
    """The ``description`` of a study YAML file ("" when it has none or cannot be read)."""
    import yaml

    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return ""
    return str(data.get("description", "")) if isinstance(data, dict) else ""


def first_sentence(text: str) -> str:
    """The first sentence of ``text`` on one line: up to the first ``.``, ``?`` or ``!`` outside
    parentheses and quotes that ends the text or is followed by a space and a capital letter
    (so "Schug et al. 2024" and "(e.g. …)" do not end it)."""
    text = " ".join(text.split())
    depth, quoted = 0, False
    for i, c in enumerate(text):
        if c in "([":
            depth += 1
        elif c in ")]":
            depth = max(0, depth - 1)
        elif c == '"':
            quoted = not quoted
        elif c in ".?!" and depth == 0 and not quoted:
            rest = text[i + 1:]
            if not rest or (rest[0] == " " and rest[1:2].isupper()):
                return text[: i + 1]
    return text


def _first_error(out_dir: str) -> str | None:
    """The first line (``Type: message``) of the error of the first failed trial in ``out_dir`` (by trial
    id), so a failure's cause shows in the terminal, not only in the report; None when there is none."""
    from bindscale.store.records import load_records

    try:
        records = load_records(out_dir)
    except Exception:  # noqa: BLE001 - a summary line must not fail the command
        return None
    for _, rec in sorted(records.items()):
        if rec.get("status") == "failed" and rec.get("error"):
            line = str(rec["error"]).strip().splitlines()[0]
            return line if len(line) <= 300 else line[:299] + "…"
    return None


def _print_summary(summary: dict, out_dir: str) -> None:
    con = console()
    table = Table(title=f"{summary.get('study')}{' (quick)' if summary.get('quick') else ''}: verdicts")
    for col in ("claim", "verdict", "statistic", "value [95% CI]", "n"):
        table.add_column(col, overflow="fold")
    # The page's words and numbers (bindscale.core.fmt): "smoke test: not supported", "0.0294 [0.0220, 0.140]".
    from bindscale.core.fmt import fmt_ci, unparsable_text, verdict_words

    smoke = bool(summary.get("quick") or summary.get("n_missing"))
    for v in summary.get("verdicts", []):
        table.add_row(v["claim"], verdict_words(v["verdict"], smoke), v["statistic"],
                      fmt_ci(v["value"], v["ci_low"], v["ci_high"]), str(v["n_trials"]))
    if summary.get("n_missing"):  # first, so no one reads the verdicts below as a finished run's
        con.print(f"[yellow]unfinished run:[/] {summary['n_missing']} of {summary['n_planned']} planned trials have "
                  "no record yet; what follows reads only the recorded ones", highlight=False)
    if summary.get("verdicts"):
        con.print(table)
        con.print("supported = the cited source's claim holds:", highlight=False)
        for v in summary["verdicts"]:
            details = v.get("details") or {}
            if v.get("statement"):
                con.print(f"  {v['claim']}: {v['statement']}", highlight=False)
            if v.get("statistic_text"):
                con.print(f"    deciding number ({v['statistic']}): {v['statistic_text']}", highlight=False)
            if details.get("reason"):
                con.print(f"    why {verdict_words(v['verdict'], smoke)}: {details['reason']}", highlight=False)
            if v.get("unparsable"):
                con.print(f"    {unparsable_text(v['unparsable'])}", highlight=False)
            for line in _anchor_lines(v):
                con.print(f"    {line}", highlight=False)
            from bindscale.core.study import gate_lines

            for gate in gate_lines(details):
                con.print(f"    learned first: {gate}", highlight=False)
            if details.get("caveat"):
                con.print(f"    caveat: {details['caveat']}", highlight=False)
    else:
        con.print(f"{summary.get('study')}: no verdicts (the study configures none); the report has the figures "
                  "and tables", highlight=False)
    for v in summary.get("verdicts", []):
        # (an inconclusive verdict already says why, e.g. too few seeds)
        if v["verdict"] != "inconclusive" and isinstance(v["ci_low"], (int, float)) and v["ci_low"] == v["ci_high"]:
            con.print(f"note: {v['claim']}'s interval has zero width: every resample gave the same value (the "
                      "statistic takes a few grid values, such as the swept widths' parameter counts, or every "
                      "seed gave the same number): read it as no spread, not as certainty", highlight=False)
    if summary.get("n_failed"):
        first = _first_error(out_dir)
        con.print(f"[red]{summary['n_failed']} of {summary['n_trials']} trials failed[/] (errors: the report's "
                  "'Diverged and failed trials'); re-run the same command to retry them", highlight=False)
        if first:
            con.print(f"  first error: {escape(first)}", highlight=False)
    if summary.get("n_diverged"):
        con.print(f"{summary['n_diverged']} of {summary['n_trials']} trials diverged (loss NaN, inf or blown up; kept, "
                  "listed in the report)", highlight=False)
    if summary.get("n_missing"):
        con.print(f"{summary['n_missing']} of {summary['n_planned']} trials have no record yet; to finish them, "
                  f"{_resume_how(out_dir)}", highlight=False, soft_wrap=True)
    for label, name in (("report", "report.html"), ("summary", "summary.json"), ("table", "results.parquet")):
        con.print(f"{label}: {RunStore(out_dir).where(name)}", soft_wrap=True, highlight=False)


_terminated = False  # set by the SIGTERM handler


def _on_sigterm(signum, frame) -> None:
    # A scheduler's stop (SLURM pre-emption, `kill`): unwind exactly as Ctrl-C does, so the
    # workers are stopped and finished records kept, then say so and exit 128 + SIGTERM.
    global _terminated
    _terminated = True
    raise KeyboardInterrupt


def _interrupted() -> None:
    what = "terminated (SIGTERM)" if _terminated else "interrupted"
    err_console.print(f"{what}: finished trials are kept; re-run the same command to resume", highlight=False)
    sys.exit(128 + signal.SIGTERM if _terminated else 130)


def main() -> None:
    if hasattr(signal, "SIGTERM"):
        signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        # Without standalone mode click returns typer.Exit's code instead of exiting.
        rc = app(standalone_mode=False)
        if rc == 130:  # typer turns Ctrl-C into Exit(130) and, out of standalone mode, returns its code
            _interrupted()
        sys.exit(rc if isinstance(rc, int) else 0)
    except typer.Exit as e:
        sys.exit(e.exit_code)
    except (typer.Abort, KeyboardInterrupt):
        _interrupted()
    except Exception as e:  # usage errors (unknown option, bad int) → one line, exit 2
        # typer ships its own click; match its exceptions by their interface.
        if hasattr(e, "format_message") and getattr(e, "exit_code", None) is not None:
            err_console.print(f"[red]error:[/] {e.format_message()}", highlight=False, soft_wrap=True)
            sys.exit(2)
        raise


def entry() -> None:
    """The ``bindscale`` command (and ``python -m bindscale``): :func:`main`, then a quick exit.

    Python's own teardown after a command (freeing every module, the C++ libraries' static
    destructors) took 0.5 s with torch imported and 0.8-1.0 s with torch and the report's
    matplotlib and SciPy, after every run, report and refused command, measured on the 2-core Xeon.
    Nothing is left to it by then: output is flushed, the atexit handlers run (multiprocessing's,
    coverage's), records and reports are on disk. Where a non-daemon thread still runs, or an
    exception escapes, the exit is Python's own.
    """
    import atexit
    import os
    import threading

    try:
        main()
        code = 0
    except SystemExit as e:
        code = e.code
    if any(t is not threading.main_thread() and t.is_alive() and not t.daemon for t in threading.enumerate()):
        sys.exit(code)
    if code is None:
        code = 0
    elif not isinstance(code, int):  # sys.exit("message"): printed, status 1
        print(code, file=sys.stderr)
        code = 1
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # closed, or a broken pipe (`bindscale list | head`)
            pass
    os._exit(code)


if __name__ == "__main__":
    entry()
