"""Publish studies' answers into the repository (``docs/answer/``): one study's run at a time, or a
``run all`` directory.

``publish(run_dir, to)`` merges into ``to``, for every study the run finished, what a reader needs and
nothing per trial beyond one small table: the study's resolved file (``study.yaml``), ``summary.json``, its
verdicts as ``verdicts.csv``, ``report.html``, ``figures/*.png``, ``results.parquet`` (one row per trial) and
the study's own ``provenance.json`` (tier, commit, result version, CPU, date, wall time, seeds). Studies
already in ``to`` and not in this run are kept. A run of a study's real-model variant (a shipped study file named
``<study>-lm``, :func:`bindscale.report.answer.is_variant`) is published in its own folder, ``to/<study>-lm/``,
beside the study's tier and never in its place: publishing either never touches the other's folder. It then rebuilds ``answer.html`` / ``answer.json`` from every
study in ``to`` (:func:`bindscale.report.answer.build_answer`), the top ``provenance.json``, ``README.md`` and
``MANIFEST.json`` (every file publish wrote, with its hash), and, when asked, rewrites the block of a README
between :data:`BEGIN` and :data:`END` with the same synthesis.

Publish never deletes or overwrites a file it did not write: a target holding one (or a file it wrote and
someone edited since) is refused before anything is written; the one exception is a run lock (``.lock``) whose
holder is gone, which is removed. Reading the run directory never writes to it: publishing a live ``run all``
(``run all --publish`` does it after every study) is safe.

A published row is a shipped tier as it ships: a run whose ``study.yaml`` differs from the shipped study file it
names (a ``--set`` smoke test) is refused, except in the fields that only say where data lives
(:func:`bindscale.core.config.data_location_field`). A study published at a higher tier (``depth-full``) is not
replaced by a lower one (``depth``) unless asked (``replace_tier``, ``--replace-tier``).
"""

from __future__ import annotations

import csv
import datetime as _dt
import hashlib
import io
import json
import os
import subprocess
from pathlib import Path
from typing import Any

from bindscale.core import registry
from bindscale.report.answer import VARIANT_ARM, build_answer, is_variant, variant_study, variants_of
from bindscale.core.config import data_location_paths
from bindscale.core.errors import ConfigError
from bindscale.core.fmt import fmt_ci, verdict_words
from bindscale.core.machine import describe as machine
from bindscale.core.studyfile import ABSENT, resolve_study, shipped_differences
from bindscale.store.lock import LOCK_FILE, live_holder
from bindscale.store.rundir import STUDY_FILE, load_run_study
from bindscale.store.published import MANIFEST, published_root
from bindscale.store.storage import RunStore, is_url

#: The README block :func:`publish` rewrites (the markers stay; what lies between them is replaced).
BEGIN = "<!-- answer:begin (written by `bindscale publish`; edits here are overwritten) -->"
END = "<!-- answer:end -->"

#: Per study, the files copied as they are (figures are copied by pattern).
#: The one command that regenerates the published answer (README and provenance.json say it).
REGENERATE = "bindscale run all --publish docs/answer && bindscale publish runs/all --readme README.md"
FILES = (STUDY_FILE, "summary.json", "report.html", "results.parquet", "timing.json")
#: Each published study's own provenance (tier, commit, result version, CPU, date, wall time, seeds).
STUDY_PROVENANCE = "provenance.json"
#: Files publish writes at the top of the published folder.
TOP_FILES = ("provenance.json", "answer.html", "answer.json", "README.md")
#: The list of every file publish wrote into the folder, with its hash: anything else there is foreign.

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


def study_trials_timed(sub: RunStore) -> int | None:
    """How many of a study's trials its wall time (:func:`study_wall_seconds`) covers: ``timing.json``'s
    ``trials_timed`` (the trials its finished sessions trained, :func:`bindscale.run.runner.add_session_timing`),
    or, in a file from before sessions were summed (one session's time), that session's ``trials_run``; None when
    unknown (no file)."""
    try:
        t = json.loads(sub.read_text("timing.json")) if sub.exists("timing.json") else {}
    except (ValueError, TypeError):
        return None
    if "trials_timed" in t:
        return int(t["trials_timed"])
    return int(t["trials_run"]) if "trials_run" in t else None


def study_wall_seconds(sub: RunStore) -> float | None:
    """A study's wall time: ``timing.json`` (which the runner writes, summed over a resumed run's finished sessions;
    older run directories have none) when present, else the seconds between its ``study.yaml`` (written when the
    run starts) and its ``summary.json`` (written last) in a local directory; None when neither is known. A
    session cut off before it wrote ``timing.json`` is in neither: :func:`study_trials_timed` says how many
    trials the time covers."""
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
    """The answer in Markdown: the synthesis sentences, then one line per claim (tier, verdict, number with its
    interval, distance to the source: measure and scale, and the one-word relation where its rule applies), as
    README opens with it. A real-model variant's rows are listed too, named by their arm and variant
    (``<study>, real models (`<study>-lm`)``)."""
    lines = []
    for s in answer["synthesis"]["answer"]:
        lines.append(f"- {s}")
    lines.append("")
    lines.append("| study (tier) | claim | verdict | bindscale (95% CI) | measure and scale beside the source |")
    lines.append("|---|---|---|---|---|")
    for c in answer["claims"]:
        rel = (c.get("relation") or {}).get("word") or ""
        dist = (c.get("distance") or {}).get("text") or ""
        word = f"**{rel}**; " if rel in ("reproduced", "contradicted") else ""
        own = " (own hypothesis)" if c.get("own_hypothesis") else ""
        arm = f", {c.get('arm') or VARIANT_ARM}" if c.get("variant") else ""
        lines.append(f"| {c['study']}{arm} (`{c.get('tier') or c.get('variant') or c['study']}`) | {c['claim']}{own} | "
                     f"{verdict_words(c['verdict'], not c.get('firm'), bool(c.get('stale')))} | "
                     f"{fmt_ci(c.get('value'), c.get('ci_low'), c.get('ci_high'))} | {word}{dist} |")
    not_run = answer["missing"]["studies_not_run"]
    if not_run:
        lines.append("")
        lines.append(f"Not run (yet): {', '.join(not_run)}.")
    stale = answer["missing"].get("stale") or []
    if stale:
        lines.append("")
        lines.append(f"Stale (made by code whose numbers have moved since; not counted): {', '.join(stale)}.")
    if link:
        lines.append("")
        lines.append(f"Every claim with its reason, gates, source headline and figure: [{link}]({link}).")
    return "\n".join(lines) + "\n"


def _copy_study(src: RunStore, dst: RunStore) -> list[str]:
    """Copy one study's published files; returns their paths relative to ``dst``."""
    written = []
    for name in FILES:
        if src.exists(name):
            dst.write_bytes(name, src.read_bytes(name))
            written.append(name)
    for fig in src.list("figures", ".png"):
        dst.write_bytes(f"figures/{fig}", src.read_bytes(f"figures/{fig}"))
        written.append(f"figures/{fig}")
    dst.write_text("verdicts.csv", verdicts_csv(json.loads(src.read_text("summary.json"))))
    written.append("verdicts.csv")
    return written


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


def _remove_stale_locks(root: Path) -> None:
    """Remove the run locks :func:`stale_locks` finds in ``root`` (none is held: it refuses a held one)."""
    for rel in stale_locks(root):
        (root / rel).unlink(missing_ok=True)


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _legacy_owned(rel: str) -> bool:
    """Whether a file of a folder published before the manifest existed has a name publish writes: the top
    files, and per built-in study (or real-model variant) its copied files, ``verdicts.csv``, ``provenance.json``
    and figures."""
    parts = rel.split("/")
    if len(parts) == 1:
        return rel in TOP_FILES
    if parts[0] not in registry.builtin() and not is_variant(parts[0]):
        return False
    if len(parts) == 2:
        return parts[1] in (*FILES, "verdicts.csv", STUDY_PROVENANCE)
    return len(parts) == 3 and parts[1] == "figures" and parts[2].endswith(".png")


def owned_files(to: "str | Path") -> dict[str, str | None]:
    """The files of ``to`` that publish wrote: relative path -> sha256 as written (None for a folder published
    before :data:`MANIFEST` existed, whose files are recognised by their names)."""
    root = Path(to)
    if (root / MANIFEST).is_file():
        try:
            files = json.loads((root / MANIFEST).read_text(encoding="utf-8"))["files"]
        except (ValueError, KeyError, TypeError):
            raise ConfigError(f"--to {to}: {MANIFEST} is not the manifest bindscale publish writes; "
                              "restore it from git or publish into an empty folder") from None
        return {str(k): (str(v) if v else None) for k, v in files.items()}
    if not root.is_dir() or not (root / "provenance.json").is_file():
        return {}  # no manifest and no mark of an earlier publish: nothing here is publish's
    return {rel: None for rel in _files_under(root) if _legacy_owned(rel)}


def _files_under(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file() or p.is_symlink())


def stale_locks(to: "str | Path") -> list[str]:
    """The run-lock files (``.lock``, :mod:`bindscale.store.lock`) at the top of ``to`` and in its study folders,
    relative to ``to``, when no live process holds them: left by a killed process, or by a ``bindscale report``
    of the folder made before such a report was refused. Such a lock guards nothing: publish removes it.

    Raises:
        ConfigError: a live bindscale process holds one (publish would change a folder it is writing), naming it.
    """
    root = Path(to)
    if not root.is_dir():
        return []
    locks = [rel for rel in _files_under(root) if rel.split("/")[-1] == LOCK_FILE and rel.count("/") <= 1]
    for rel in locks:
        holder = live_holder((root / rel).parent)
        if holder:
            raise ConfigError(f"--to {to}: {rel} is held by a live bindscale process ({holder}); publish after it "
                              "ends")
    return locks


def check_foreign(to: "str | Path") -> dict[str, str | None]:
    """Refuse, before anything is written, a target holding a file publish did not write, or a file it wrote
    that has since been edited (publish never deletes or overwrites either); a run lock whose holder is gone
    (:func:`stale_locks`) is not counted, one held by a live process is refused. Returns :func:`owned_files`.

    Raises:
        ConfigError: naming up to five such files, in one line.
    """
    root = Path(to)
    owned = owned_files(to)
    if not root.is_dir():
        return owned
    locks = set(stale_locks(to))
    foreign = [rel for rel in _files_under(root) if rel != MANIFEST and rel not in owned and rel not in locks]
    edited = [rel for rel, sha in owned.items() if sha and (root / rel).is_file() and _sha256(root / rel) != sha]
    if foreign or edited:
        what = [*(f"{r} (not written by publish)" for r in foreign), *(f"{r} (edited since publish wrote it)" for r in edited)]
        more = f" and {len(what) - 5} more" if len(what) > 5 else ""
        raise ConfigError(f"--to {to}: holds files bindscale publish would not touch: {', '.join(what[:5])}{more}; "
                          "move them out, or publish into another folder")
    return owned


def _sources(run_dir: "str | Path") -> tuple[RunStore, dict[str, RunStore]]:
    """The studies a run directory holds, by the folder each is published in: one study's run (its
    ``summary.json`` at the top, named by the study file it ran) or a ``run all`` directory (one subfolder per
    finished study, and a real-model variant's run in a ``<study>-lm`` subfolder). A tier's run goes to its
    study's folder (``scaling-full`` -> ``scaling``), a real-model variant's to its own (``<study>-lm``). Quick
    runs and unknown studies are refused.

    Raises:
        ConfigError: nothing finished to publish, a quick (smoke-test) run, or a study not built in.
    """
    if (pub := published_root(run_dir)) is not None:
        # A published folder (or a study's folder in it) holds copies, not records: publishing it onto itself
        # would delete what it then reads, and into another folder would re-date its copies as new runs.
        raise ConfigError(f"{run_dir}: a folder that `bindscale publish` wrote ({pub}), not a run directory: publish "
                          "the run it was made from (`bindscale publish --rebuild` re-decides published studies)")
    src = RunStore.of(run_dir)
    if src.exists("summary.json"):
        name = json.loads(src.read_text("summary.json")).get("study")
        if not is_variant(name) and name not in registry.builtin() and name in registry.builtin_files():
            # a tier's run names its shipped study file (scaling-full): published as the study that ships it
            name = max((s for s in registry.builtin() if name.startswith(f"{s}-")), key=len, default=name)
        if name not in registry.builtin() and not is_variant(name):
            raise ConfigError(f"{run_dir}: a run of study {name!r}, which is not a built-in study; the published answer "
                              f"covers the built-in ones ({', '.join(registry.run_order())})")
        found = {name: src}
    else:
        found = {}
        for n in registry.run_order():
            if src.exists(f"{n}/summary.json"):
                found[n] = RunStore.of(src.where(n))
            for v in variants_of(n):  # a variant's run beside the study's, in a folder named by it
                if src.exists(f"{v}/summary.json") and json.loads(src.read_text(f"{v}/summary.json")).get("study") == v:
                    found[v] = RunStore.of(src.where(v))
    if not found:
        started = [n for n in registry.run_order() if src.exists(f"{n}/{STUDY_FILE}")]
        raise ConfigError(f"{run_dir}: no finished study to publish (one study's run directory, or a `bindscale run all` "
                          f"directory with at least one study's summary.json){'; started: ' + ', '.join(started) if started else ''}")
    template = [n for n in found if any(str(getattr(c, "source", "")).startswith("TEMPLATE")
                                        for c in registry.builtin()[_study_of(n)].claims)]
    if template:
        raise ConfigError(f"{run_dir}: {', '.join(template)} still carries the new-study template's placeholders "
                          "(a claim whose source reads TEMPLATE): give it its source, anchor and gate before publishing")
    # named by the study file each ran (binding_scan-lake2018), not the folder it would go to (binding_scan)
    quick = [json.loads(sub.read_text("summary.json")).get("study") or n for n, sub in found.items()
             if json.loads(sub.read_text("summary.json")).get("quick")]
    if quick:
        raise ConfigError(f"{run_dir}: {', '.join(quick)} ran with --quick, a smoke test, not an answer to publish; "
                          "publish a default or -full run")
    # A study file that decides no claim (a reproduction of a source's own setting, binding_scan-lake2018) is not
    # a tier of the answer: published, it would take the study's row and show no verdict.
    silent = [n for n, sub in found.items() if not json.loads(sub.read_text("summary.json")).get("verdicts")]
    if silent:
        raise ConfigError(f"{run_dir}: {', '.join(silent)} decided no claim (a study file without verdicts, such as a "
                          "reproduction of a source's setting): nothing for the answer page; its numbers belong in the "
                          "study's README")
    return src, found


def _study_of(folder: str) -> str:
    """The built-in study a published folder belongs to: itself, or the study whose real-model variant it is."""
    return variant_study(folder) or folder


def _short(value: Any, width: int = 40) -> str:
    text = value if value == ABSENT else json.dumps(value, sort_keys=True)
    return text if len(text) <= width else text[: width - 1] + "…"


def _names_tier(folder: str, tier: str) -> bool:
    """Whether ``tier`` is a study file of the published folder ``folder``: the study's default or one of its
    tiers (``scaling``, ``scaling-full``), or the real-model variant that is the folder itself."""
    if is_variant(folder) or is_variant(tier):
        return tier == folder
    return tier == folder or tier.startswith(f"{folder}-")


def shipped_tier(folder: str, sub: RunStore) -> str:
    """The shipped study file (tier) a finished study's run was made from, when the run is that file as it ships.

    Refused: a run without a readable ``study.yaml`` (which tier it ran cannot be told), one naming a study file
    that is not shipped for ``folder``, and one whose resolved study differs from its shipped file
    (:func:`shipped_differences`), such as a smoke test made with ``--set train.steps=10``: its numbers would
    replace the published row although no shipped file makes them. Only the fields that say where data lives
    (``--set data.treebank=PATH``, which ``geometry-lm`` needs) may differ. No flag publishes such a run: a
    published row is a shipped tier.

    Raises:
        ConfigError: naming the run, its tier and up to five differing fields with both values, in one line.
    """
    where = sub.where()
    try:
        run = load_run_study(sub)
    except ConfigError as err:
        raise ConfigError(f"{where}: cannot tell which shipped study file it ran ({err}); a published row is a "
                          "shipped tier") from None
    tier = run.name
    if tier not in registry.builtin_files() or not _names_tier(folder, tier):
        shipped = sorted(f for f in registry.builtin_files() if _names_tier(folder, f))
        raise ConfigError(f"{where}: its {STUDY_FILE} names {tier!r}, which is no shipped study file of {folder} "
                          f"({', '.join(shipped)}); a published row is a shipped tier: run one of those")
    diffs = shipped_differences(run, resolve_study(tier))
    if diffs:
        said = [f"{k} (ran {_short(ours)}, ships {_short(theirs)})" for k, (ours, theirs) in diffs.items()]
        more = f" and {len(said) - 5} more" if len(said) > 5 else ""
        paths = sorted(data_location_paths(type(run.base)))
        free = f" (only where data lives may differ: {', '.join(paths)})" if paths else ""
        raise ConfigError(f"{where}: it ran {tier} with settings the shipped {tier} file does not have: "
                          f"{', '.join(said[:5])}{more} (a run made with --set, or a study file changed since it "
                          f"ran); a published row is a shipped tier as it ships: run `bindscale run {tier}` without "
                          f"--set and publish that{free}")
    return tier


#: A tier's rank by what its study file's name adds to its study's: the default, ``-full``, ``-paper``. Any other
#: tier (``ceiling-ladder``, kept for comparison) ranks with the default.
TIER_RANKS = {"": 0, "-full": 1, "-paper": 2}


def tier_rank(folder: str, tier: str) -> int:
    """How high ``tier`` stands among the study ``folder``'s tiers (:data:`TIER_RANKS`); 0 for a real-model
    variant, which is a folder of its own and never competes with the study's tiers."""
    if is_variant(folder) or not (tier == folder or tier.startswith(f"{folder}-")):
        return 0
    return TIER_RANKS.get(tier[len(folder):], 0)


def published_tier(to: "str | Path", folder: str) -> str | None:
    """The tier the published folder ``to`` holds for a study (``folder``): its ``provenance.json``'s (which
    publish writes), else what the top provenance said of it (a folder published before per-study provenance);
    None when the study is not published there."""
    root = Path(to)
    if (root / folder / STUDY_PROVENANCE).is_file():
        try:
            return json.loads((root / folder / STUDY_PROVENANCE).read_text(encoding="utf-8")).get("tier") or folder
        except (ValueError, AttributeError):
            return folder
    if (root / folder / "summary.json").is_file():
        return _legacy_study_provenance(root, folder).get("tier") or folder
    return None


def check_tiers(tiers: dict[str, str], to: "str | Path", *, replace_tier: bool = False) -> None:
    """Refuse to publish a study's run over a higher tier of it already published in ``to`` (``tiers``: folder ->
    the tier the run made): the default ``depth`` over a published ``depth-full`` would silently drop the
    published row to a smaller experiment. ``replace_tier`` (``--replace-tier``) says the user means it.

    Raises:
        ConfigError: naming each such study with both tiers and the flag, in one line.
    """
    if replace_tier:
        return
    lower = []
    for folder, tier in tiers.items():
        held = published_tier(to, folder)
        if held is not None and tier_rank(folder, held) > tier_rank(folder, tier):
            lower.append(f"{folder} is published at its higher tier {held} and this run is {tier}")
    if lower:
        raise ConfigError(f"--to {to}: {'; '.join(lower)}: publishing would replace the higher tier with the lower "
                          "one; pass --replace-tier to replace it anyway, or publish into another folder")


def _mode(values: list) -> Any:
    vals = [v for v in values if v is not None and v == v]
    return max(set(vals), key=vals.count) if vals else None


def study_provenance(sub: RunStore, name: str, commit: str | None, variant: str | None = None) -> dict[str, Any]:
    """One study's provenance, read from its run: the tier (the study file it ran: ``scaling``,
    ``scaling-full``, a real-model variant's ``<study>-lm``, which ``variant`` names too), the commit and result
    version its records were made at, the CPU, the date, the wall time, trials, seeds per deciding cell and the
    largest model. Records carry no CPU before December 2026: the publishing machine's is given then, and said
    to be so."""
    summary = json.loads(sub.read_text("summary.json"))
    try:
        tier = load_run_study(sub).name
    except ConfigError:
        tier = variant or name
    prov: dict[str, Any] = {}
    if sub.exists("results.parquet"):
        try:
            import pandas as pd

            df = pd.read_parquet(io.BytesIO(sub.read_bytes("results.parquet")))
            for col in ("prov_git_hash", "prov_cpu", "prov_torch_version", "prov_device"):
                if col in df.columns:
                    prov[col[5:]] = _mode(df[col].tolist())
            versions = (pd.to_numeric(df["prov_result_version"], errors="coerce").fillna(1) if "prov_result_version"
                        in df.columns else pd.Series([1] * len(df), dtype=float))
            prov["result_version"] = int(versions.min()) if len(versions) else 1
        except (OSError, ValueError, ImportError):
            pass
    seeds = planned_seeds(sub)
    wall = study_wall_seconds(sub)
    here = machine()
    return {
        "study": name, "tier": tier, **({"variant": variant, "arm": VARIANT_ARM} if variant else {}),
        "commit": prov.get("git_hash") or commit or git_commit(),
        "result_version": prov.get("result_version", 1),
        "cpu": prov.get("cpu") or here.get("cpu"), "cpu_recorded": bool(prov.get("cpu")),
        "device": prov.get("device"), "torch": prov.get("torch_version") or here.get("torch"),
        "date": (summary.get("generated") or "")[:10] or None,
        "wall_seconds": None if wall is None else round(wall, 1), "trials_timed": study_trials_timed(sub),
        "n_trials": summary.get("n_trials"), "n_ok": summary.get("n_ok"),
        "seeds_per_deciding_cell": seeds,
        "report_generated": summary.get("generated"),
    }


def planned_seeds(sub: "RunStore | Path") -> int | None:
    """Seeds the run trained per configuration: distinct ``seed`` values of its results table (every trial, any
    status), which is what each deciding cell was planned with; None without a table or a seed column. (A
    verdict's own ``seeds_per_cell`` is what it used after its filters and gates.)"""
    store = RunStore.of(sub)
    if not store.exists("results.parquet"):
        return None
    try:
        import pandas as pd

        df = pd.read_parquet(io.BytesIO(store.read_bytes("results.parquet")), columns=None)
    except (OSError, ValueError, ImportError):
        return None
    return int(df["seed"].nunique()) if "seed" in df and len(df) else None


def publish(run_dir: "str | Path", to: "str | Path" = "docs/answer", *, commit: str | None = None,
            readme: "str | Path | None" = None, tier_estimates: dict | None = None,
            replace_tier: bool = False) -> dict[str, Any]:
    """Merge one study's run, or every finished study of a ``run all`` directory, into the published folder
    ``to`` and rebuild the answer there from every study it holds.

    Each study published replaces that study's own earlier copy (the files publish wrote for it, listed in
    ``to``'s :data:`MANIFEST`); every other study in ``to`` is kept as it was, with its own provenance
    (``<study>/provenance.json``: tier, commit, result version, CPU, date, wall time, seeds). A run of a study's
    real-model variant (``<study>-lm``, :func:`bindscale.report.answer.is_variant`) is a study of its own here:
    it replaces ``<study>-lm/`` only, and a run of the study's tier never touches ``<study>-lm/``. A file in ``to``
    that publish did not write, or one it wrote that was edited since, is never deleted or overwritten: the
    whole publish is refused before anything is written (a run lock whose holder is gone is removed). Each run
    must be the shipped study file it names, as it ships (:func:`shipped_tier`: no ``--set`` smoke test), and
    must not replace a higher tier of its study already published (:func:`check_tiers`) unless ``replace_tier``.

    Args:
        run_dir: one study's run directory (``bindscale run scaling-full --out DIR``) or a ``run all``
            directory (read only).
        to: the published folder.
        commit: the commit the studies ran at, where their records do not say (default: ``git rev-parse HEAD``).
        readme: a Markdown file holding the :data:`BEGIN` / :data:`END` markers; the block between them
            becomes the synthesis and the claim table, with a link to ``to``'s answer page. Only when given.
        tier_estimates: every shipped study file's dry-run times (:func:`bindscale.run.dryrun.tier_estimates`,
            which the CLI passes), kept in ``provenance.json``: the page's "what would decide it" quotes them.
            None keeps the ones the folder has.
        replace_tier: publish a study's run even where ``to`` holds a higher tier of it (``--replace-tier``).

    Returns: ``{"answer": answer.json's data, "provenance": provenance.json's data, "published": [folders]}``
    (a study's name, or its variant's: ``<study>-lm``).

    Raises:
        ConfigError: ``to`` is a URL or a file, or holds foreign or edited files; nothing finished to publish,
            a quick run, a study not built in, a run that is not its shipped study file as it ships, a lower
            tier over a published higher one; ``readme`` lacks the markers. Nothing is written then.
    """
    check_target(to)
    _, found = _sources(run_dir)
    tiers = {name: shipped_tier(name, sub) for name, sub in found.items()}
    owned = check_foreign(to)
    check_tiers(tiers, to, replace_tier=replace_tier)
    readme_text = None
    if readme is not None:
        try:
            readme_text = Path(readme).read_text(encoding="utf-8")
        except OSError as err:
            raise ConfigError(f"--readme {readme}: {err.strerror or err}") from None
        if BEGIN not in readme_text or END not in readme_text or readme_text.index(BEGIN) > readme_text.index(END):
            raise ConfigError(f"--readme {readme}: no block to rewrite; put the two lines\n{BEGIN}\n{END}\nwhere the "
                              "answer should go")
    root = Path(to)
    _remove_stale_locks(root)
    dst = RunStore.of(to)
    dst.makedirs()
    files = dict(owned)
    for name, sub in found.items():
        # The study's (or the variant's) old copy goes first (a figure its new report no longer draws): one run per study, never a mix.
        for rel in [r for r in files if r.startswith(f"{name}/")]:
            (root / rel).unlink(missing_ok=True)
            del files[rel]
        out = RunStore.of(dst.where(name))
        written = _copy_study(sub, out)
        prov = study_provenance(sub, _study_of(name), commit, variant=name if is_variant(name) else None)
        out.write_text(STUDY_PROVENANCE, json.dumps(prov, indent=2) + "\n")
        for rel in [*written, STUDY_PROVENANCE]:
            files[f"{name}/{rel}"] = None
    return _finish(root, files, readme, tier_estimates, published=list(found),
                   readme_text=readme_text)


def rebuild(to: "str | Path" = "docs/answer", *, readme: "str | Path | None" = None,
            tier_estimates: dict | None = None) -> dict[str, Any]:
    """Decide every published study's claims again from its published results table, with the current rules.

    A published study keeps its trials (``results.parquet``, one row per trial) and its resolved study file:
    its verdicts, report and figures are derived from them, so a change to a verdict rule (not to training)
    reaches the published answer without re-running anything. Real-model variants' folders (``<study>-lm/``) are
    re-decided alike, each from its own table. The per-study provenance keeps the run's tier,
    commit and result version (a stale study stays stale: its numbers are not re-made) and records when and at
    which commit the verdicts were rebuilt.

    Raises:
        ConfigError: ``to`` holds foreign or edited files (as :func:`publish`), or no published study.
    """
    import tempfile

    import pandas as pd

    from bindscale.report.html import build_report
    from bindscale.verdicts.engine import MISSING
    from bindscale.verdicts.results_table import records_table

    check_target(to)
    owned = check_foreign(to)
    root = Path(to)
    names = [f for n in registry.run_order() for f in (n, *variants_of(n))
             if (root / f / "results.parquet").is_file() and (root / f / STUDY_FILE).is_file()]
    if not names:
        raise ConfigError(f"--to {to}: no published study with its results.parquet and {STUDY_FILE} to rebuild")
    _remove_stale_locks(root)
    files = dict(owned)
    commit = git_commit()
    for name in names:
        sub = root / name
        study = load_run_study(sub)
        old = json.loads((sub / "summary.json").read_text(encoding="utf-8"))
        # the run's provenance, read before the rebuilt summary replaces the run's own (its date is the run's)
        prov = (json.loads((sub / STUDY_PROVENANCE).read_text(encoding="utf-8")) if (sub / STUDY_PROVENANCE).is_file()
                else _legacy_study_provenance(root, name))
        df = pd.read_parquet(sub / "results.parquet")
        trials = study.trials()
        have = set(df["trial_id"].astype(str)) if "trial_id" in df else set()
        missing = [{"trial_id": tr.trial_id, "status": MISSING, "config": tr.flat()}
                   for tr in trials if tr.trial_id not in have]
        unrecorded = records_table(missing, type(study.base)) if missing else None
        run_info = {k: old.get(k) for k in ("quick", "n_planned", "n_missing", "steps") if k in old}
        with tempfile.TemporaryDirectory() as tmp:
            build_report(tmp, df, study.model_dump(mode="json"), run_info=run_info or None, unrecorded=unrecorded)
            for rel in [r for r in files if r.startswith(f"{name}/figures/")]:
                (root / rel).unlink(missing_ok=True)
                del files[rel]
            written = []
            for rel in ("report.html", "summary.json"):
                (sub / rel).write_bytes((Path(tmp) / rel).read_bytes())
                written.append(rel)
            (sub / "figures").mkdir(exist_ok=True)
            for fig in sorted((Path(tmp) / "figures").glob("*.png")):
                (sub / "figures" / fig.name).write_bytes(fig.read_bytes())
                written.append(f"figures/{fig.name}")
        (sub / "verdicts.csv").write_text(verdicts_csv(json.loads((sub / "summary.json").read_text())))
        written.append("verdicts.csv")
        prov["verdicts_rebuilt"] = {"date": _dt.date.today().isoformat(), "commit": commit}
        (sub / STUDY_PROVENANCE).write_text(json.dumps(prov, indent=2) + "\n")
        written.append(STUDY_PROVENANCE)
        for rel in written:
            files[f"{name}/{rel}"] = None
    return _finish(root, files, readme, tier_estimates, published=names)


def _finish(root: Path, files: dict[str, str | None], readme: "str | Path | None", tier_estimates: dict | None,
            published: list[str], readme_text: str | None = None) -> dict[str, Any]:
    """The top of the published folder after its studies changed: provenance, answer page, README, manifest,
    and the README block when asked."""
    to = root
    dst = RunStore.of(root)
    if readme is not None and readme_text is None:
        readme_text = Path(readme).read_text(encoding="utf-8")
        if BEGIN not in readme_text or END not in readme_text:
            raise ConfigError(f"--readme {readme}: no block to rewrite; put the two lines\n{BEGIN}\n{END}\nwhere the "
                              "answer should go")
    studies, variants = {}, {}
    for name in registry.run_order():
        if (root / name / STUDY_PROVENANCE).is_file():
            studies[name] = json.loads((root / name / STUDY_PROVENANCE).read_text(encoding="utf-8"))
        elif (root / name / "summary.json").is_file():  # published before per-study provenance
            studies[name] = _legacy_study_provenance(root, name)
        for v in variants_of(name):
            if (root / v / STUDY_PROVENANCE).is_file():
                variants[v] = json.loads((root / v / STUDY_PROVENANCE).read_text(encoding="utf-8"))
    walls = [s["wall_seconds"] for s in (*studies.values(), *variants.values()) if s.get("wall_seconds") is not None]
    if tier_estimates is None and (root / "provenance.json").is_file():
        try:
            tier_estimates = json.loads((root / "provenance.json").read_text(encoding="utf-8")).get("tier_estimates")
        except ValueError:
            tier_estimates = None
    provenance = {
        "published": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "machine": machine(), "studies": studies, "variants": variants,
        "wall_seconds_total": round(sum(walls), 1) if walls else None,
        "studies_not_run": [n for n in registry.run_order() if n not in studies],
        "regenerate": REGENERATE,
        "tier_estimates": tier_estimates,
    }
    dst.write_text("provenance.json", json.dumps(provenance, indent=2) + "\n")
    answer = build_answer(to)  # after provenance: the page shows each study's tier, commit, machine and date
    dst.write_text("README.md", _folder_readme(answer, provenance))
    for rel in TOP_FILES:
        if (root / rel).is_file():
            files[rel] = None
    # The manifest: every file publish wrote, with its hash as written (what check_foreign holds it to).
    manifest = {"written_by": "bindscale publish", "files": {rel: _sha256(root / rel) for rel in sorted(files)
                                                            if (root / rel).is_file()}}
    dst.write_text(MANIFEST, json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    if readme_text is not None:
        rel = os.path.relpath(root.resolve() / "answer.html", Path(readme).resolve().parent)
        head, rest = readme_text.split(BEGIN, 1)
        tail = rest.split(END, 1)[1]
        block = synthesis_markdown(answer, link=rel) + _provenance_line(provenance) + "\n"
        Path(readme).write_text(f"{head}{BEGIN}\n{block}{END}{tail}", encoding="utf-8")
    return {"answer": answer, "provenance": provenance, "published": published}


def _legacy_study_provenance(root: Path, name: str) -> dict[str, Any]:
    """A study published before per-study provenance: what the old top-level provenance.json said of it."""
    old = {}
    try:
        top = json.loads((root / "provenance.json").read_text(encoding="utf-8"))
        old = {**(top.get("studies") or {}).get(name, {}), "commit": top.get("commit"),
               "cpu": (top.get("machine") or {}).get("cpu"), "torch": (top.get("machine") or {}).get("torch")}
    except (OSError, ValueError):
        pass
    summary = json.loads((root / name / "summary.json").read_text(encoding="utf-8"))
    seeds = planned_seeds(root / name)
    return {"study": name, "tier": old.get("tier") or name, "commit": old.get("commit") if "commit" in old
            else old.get("git"), "result_version": 1, "cpu": old.get("cpu"), "cpu_recorded": False,
            "torch": old.get("torch"), "date": (summary.get("generated") or "")[:10] or None,
            "wall_seconds": old.get("wall_seconds"), "n_trials": summary.get("n_trials"), "n_ok": summary.get("n_ok"),
            "seeds_per_deciding_cell": seeds, "report_generated": summary.get("generated")}


def _minutes(seconds: float | None) -> str:
    if seconds is None:
        return "unknown"
    m = seconds / 60
    return f"{m:.0f} min" if m < 90 else f"{int(m // 60)} h {int(round(m % 60)):02d} min"


def wall_said(s: dict) -> str:
    """A study's wall time in words, saying how many of its trials it covers where a cut-off session left some
    untimed (``trials_timed`` below ``n_trials``): "64 min for 18 of 40 trials (...)"."""
    timed, n = s.get("trials_timed"), s.get("n_trials")
    part = (f" for {timed} of {n} trials (the others trained in a session cut off before it timed itself)"
            if isinstance(timed, int) and isinstance(n, int) and timed < n and s.get("wall_seconds") is not None
            else "")
    return _minutes(s.get("wall_seconds")) + part


def study_line(name: str, s: dict) -> str:
    """One study's provenance in words: tier, commit, CPU, date, wall time, seeds per deciding cell."""
    cpu = s.get("cpu") or "unknown CPU"
    if s.get("cpu") and not s.get("cpu_recorded"):
        cpu += " (the publishing machine's; the records carry none)"
    seeds = s.get("seeds_per_deciding_cell")
    return (f"{name}: tier `{s.get('tier') or name}`, commit `{(s.get('commit') or 'unknown')[:12]}`, {cpu}, "
            f"{s.get('date') or 'undated'}, {wall_said(s)}"
            f"{f', {seeds} seeds per deciding cell' if seeds else ''}")


def _provenance_line(p: dict) -> str:
    tiers = sorted({s.get("tier") or n for n, s in p["studies"].items()})
    full = [n for n, s in p["studies"].items() if str(s.get("tier") or "").endswith("-full")]
    variants = p.get("variants") or {}
    beside = (f"; real-model variants beside them: {', '.join(variants)}" if variants else "")
    return (f"\nTiers published: {', '.join(tiers)} ({len(full)} of {len(p['studies'])} studies at their `-full` tier"
            f"{beside}); {_minutes(p['wall_seconds_total'])} of wall time in all; published {p['published'][:10]}. "
            "Per study: " + "; ".join(study_line(n, s) for n, s in {**p["studies"], **variants}.items()) + ".\n")


def _folder_readme(answer: dict, p: dict) -> str:
    rows = "\n".join(f"| {n} | {s.get('tier') or n} | {(s.get('commit') or '?')[:12]} | {s.get('date') or '?'} | "
                     f"{wall_said(s)} | {s.get('n_ok')} of {s.get('n_trials')} | "
                     f"{s.get('seeds_per_deciding_cell') or '?'} |"
                     for n, s in {**p["studies"], **(p.get("variants") or {})}.items())
    return ("# The answer, published\n\n"
            f"{answer['question']}\n\n"
            f"{synthesis_markdown(answer, link='answer.html')}{_provenance_line(p)}\n"
            "| study | tier | commit | date | wall time | trials ok | seeds per deciding cell |\n"
            "|---|---|---|---|---|---|---|\n" + rows + "\n\n"
            "Each study's folder holds its report (`report.html`), verdicts (`verdicts.csv`, `summary.json`), "
            "figures, one row per trial (`results.parquet`) and its own `provenance.json`; a study's real-model "
            "variant (`<study>-lm/`) has a folder of its own beside the study's; `MANIFEST.json` lists "
            "every file `bindscale publish` wrote here (it refuses to touch any other).\n\n"
            f"Publish one study's run into this folder (the others are kept): `bindscale publish RUN_DIR --to docs/answer`; "
            f"every default study at once: `{p['regenerate']}`\n")
