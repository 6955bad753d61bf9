"""The answer page: every claim of every study on one page, and a synthesis written by rules.

``build_answer(run_dir)`` reads the ``summary.json`` of each study's run in
``run_dir/<study>/`` (written by ``bindscale run all`` or ``bindscale report``)
and writes ``answer.html`` and ``answer.json``. Nothing on it is typed by hand:
the claim table is the verdicts, each claim's side comes from its study plugin
(:data:`bindscale.core.study.SIDES`), and the synthesis applies :data:`RULES` (shown
on the page) to the tally of verdicts per side.

Tallies count only firm verdicts: a run that is a quick variant or has trials
missing gives smoke-test results, which are listed but never counted.

A study that ships a real-model variant (a study file named ``<study>-lm``: pretrained or large language
models beside the trained ones, :func:`is_variant`) is read from its own folder ``run_dir/<study>-lm/`` too:
its claim rows follow the study's own, each marked with its ``variant`` and ``arm``, and the synthesis
counts each claim once over its rows (:func:`counted_rows`).

Layer: beside the report, under the runner and the CLI, which call :func:`build_answer` once the
studies are run or re-reported; it reads only what the runs stored (summaries, study files,
figures) and imports nothing that runs a study.
"""

from __future__ import annotations

import base64
import datetime as _dt
import json
from pathlib import Path
from typing import Any

from bindscale.core import registry
from bindscale.verdicts.anchors import RULE as RELATION_RULE
from bindscale.verdicts.anchors import distance, relation
from bindscale.core.studyfile import resolve_study, shipped_differences
from bindscale.core.errors import BindscaleError
from bindscale.store.rundir import load_run_study
from bindscale.store.storage import RunStore
from bindscale.core.study import SIDES, gate_lines

QUESTION = ("Can scaling alone — more parameters, more data, more coverage of combinations — produce compositional "
            "generalization, or do networks need explicit binding mechanisms?")

#: The synthesis rules, in the words the page prints; :func:`synthesis` implements them.
RULES = (
    "A claim counts only when its verdict is firm: supported or not supported, from a finished run of one of its "
    "study's shipped files (the default or a tier) with every planned trial recorded, made by the study's current "
    "code (a stale study, whose code has moved its numbers since, is not counted; quick or unfinished runs are smoke "
    "tests and are not counted either).",
    "A claim counts once, however many runs decide it (its study's tier and, where the study ships one, its "
    "real-model variant <study>-lm: pretrained or large language models): among its firm rows, a decided verdict "
    "(supported or not supported) at the larger model decides, and an inconclusive row never overrides a decided "
    "one; when two firm decided rows disagree, the claim counts on neither side and the synthesis names it as split "
    "between scales, each verdict at its model size.",
    "Only published claims carry a side: the project's own hypotheses (marked 'own hypothesis') are reported beside "
    "their side, never counted for or against it.",
    "A supported claim is evidence for the side of the question it bears on; a not-supported claim is evidence "
    "against that side only when its finding points the other way (e.g. accuracy still rising with scale); a claim "
    "not supported only because a level or band it names was missed (e.g. a plateau found above the claimed band) "
    "is named beside its side and not counted; an inconclusive one is evidence for neither.",
    "A side holds when it has evidence for it and none against; it is contested when it has both; it is "
    "rejected when it has only evidence against; it is open when it has neither. Each side names the largest model "
    "behind each claim it counts, and says when it rests on a single claim.",
    "The answer is read off the sides: scale suffices where 'scale suffices' holds and 'where scale stops' does "
    "not hold; binding is needed where 'binding needed' holds; every other combination is stated as it stands.",
)


#: The end of a shipped study file's name that makes it a study's real-model variant (``<study>-lm``): its run
#: is published in a folder of its own, ``<study>-lm/``, beside the study's tier, never in its place.
VARIANT_SUFFIX = "-lm"
#: What a variant's claim rows are, beside the study's own (their ``arm`` in answer.json and on the page).
VARIANT_ARM = "real models"


def variant_study(tier: Any) -> str | None:
    """The built-in study whose real-model variant ``tier`` is (``<study>-lm`` -> ``<study>``), or None.

    The rule, in this one place: ``tier`` is a real-model variant when it is a shipped study file
    (:func:`bindscale.core.registry.builtin_files`) named ``<study>`` + :data:`VARIANT_SUFFIX` for a built-in
    ``<study>``. Its runs are published and read in the folder named ``tier``."""
    if not isinstance(tier, str) or not tier.endswith(VARIANT_SUFFIX):
        return None
    study = tier[: -len(VARIANT_SUFFIX)]
    return study if study in registry.builtin() and tier in registry.builtin_files() else None


def is_variant(tier: Any) -> bool:
    """Whether ``tier`` (a study file's name) is a built-in study's real-model variant (:func:`variant_study`)."""
    return variant_study(tier) is not None


def variants_of(study: str) -> list[str]:
    """The real-model variants a built-in study ships (``[f"{study}-lm"]`` or none): their folder names."""
    name = f"{study}{VARIANT_SUFFIX}"
    return [name] if variant_study(name) == study else []


def _status_of(summary: dict, sub: RunStore, name: str, stale: str | None = None) -> str:
    """"firm" for a finished run of one of the study's shipped files (its default or a tier: ``scaling``,
    ``scaling-full``) exactly as shipped, at the study's current result version; else why its verdicts are not
    counted: stale (made by code whose numbers have moved since), quick variant, trials missing, or a
    configuration that differs from every shipped file (other trials, seeds or thresholds — a run with
    ``--set train.steps=30`` says nothing about the source)."""
    why = []
    if stale:
        return stale
    if summary.get("quick"):
        why.append("quick variant")
    if summary.get("n_missing"):
        why.append(f"{summary['n_missing']} of {summary.get('n_planned')} trials missing (unfinished run)")
    if not summary.get("quick") and not _as_shipped(sub, name):
        why.append("its configuration differs from the built-in study's files (other trials, seeds or thresholds)")
    return "firm" if not why else "; ".join(why) + ": smoke test"


def run_tier(sub: RunStore, name: str) -> str:
    """The study file a run was made from (``scaling``, ``scaling-full``, …), as its ``study.yaml`` names it."""
    try:
        return load_run_study(sub).name or name
    except BindscaleError:
        return name


def _as_shipped(sub: RunStore, name: str) -> bool:
    """Whether the run's resolved study is the shipped file it names (the study's default or one of its tiers):
    no field differs (:func:`bindscale.core.studyfile.shipped_differences`, the rule ``publish`` admits a run by)
    but those that only say where data lives (a real-model variant run with ``--set data.treebank=PATH`` is its
    shipped file), and its verdict thresholds are the shipped ones as they take effect (a default written out is
    the same study)."""
    try:
        run = load_run_study(sub)
        ref = run.name if run.name and (run.name == name or run.name.startswith(f"{name}-")) else name
        shipped = resolve_study(ref)
    except BindscaleError:
        return False
    other = [k for k in shipped_differences(run, shipped) if not k.startswith("verdicts.")]
    return not run.is_quick and not other and _thresholds(run.verdicts) == _thresholds(shipped.verdicts)


def recorded_result_version(sub: RunStore) -> int:
    """The oldest result version among a run's records (``prov_result_version`` of its ``results.parquet``; a
    record made before versions were recorded counts as 1), or its published ``provenance.json``'s."""
    if sub.exists("provenance.json"):
        try:
            v = json.loads(sub.read_text("provenance.json")).get("result_version")
            if isinstance(v, int):
                return v
        except (OSError, ValueError):
            pass
    if sub.exists("results.parquet"):
        try:
            import io

            import pandas as pd

            df = pd.read_parquet(io.BytesIO(sub.read_bytes("results.parquet")), columns=None)
            if "prov_result_version" not in df.columns:
                return 1
            v = pd.to_numeric(df["prov_result_version"], errors="coerce").fillna(1)
            return int(v.min()) if len(v) else 1
        except (OSError, ValueError, ImportError):
            pass
    return 1


def stale_reason(plugin: Any, recorded: int) -> str | None:
    """Why a study's results are stale (made at an older result version than its code's), or None."""
    current = int(getattr(plugin, "result_version", 1) or 1)
    if recorded < current:
        return (f"stale: made at result version {recorded}, the code is at {current} (its numbers have moved "
                "since); not counted until re-run")
    return None


def _thresholds(verdicts: dict) -> dict:
    """Each claim's thresholds as they take effect: the claim's defaults, then what the study file sets (a
    default written out is the same study as one left implicit)."""
    out = {}
    for name, given in (verdicts or {}).items():
        try:
            defaults = dict(registry.claim(name)[1].defaults)
        except KeyError:
            defaults = {}
        out[name] = {**defaults, **{k: v for k, v in dict(given or {}).items() if v is not None}}
    return out


def side_state(n_for: int, n_against: int) -> str:
    """Rule 3: holds / contested / rejected / open from the firm evidence for and against a side."""
    if n_for and not n_against:
        return "holds"
    if n_for and n_against:
        return "contested"
    if n_against:
        return "rejected"
    return "open"


def _size(params: Any) -> str:
    if not isinstance(params, (int, float)) or params != params or params <= 0:
        return "size not recorded"
    for div, suffix in ((1e9, "B"), (1e6, "M"), (1e3, "k")):
        if params >= div:
            return f"{params / div:.3g}{suffix} parameters"
    return f"{params:.3g} parameters"


DECIDED = ("supported", "not_supported")


def _model_size(row: dict) -> float:
    p = row.get("params")
    return float(p) if isinstance(p, (int, float)) and p == p and p > 0 else -1.0


def _at_scale(row: dict) -> str:
    """``not supported at 135M parameters (real models: <study>-lm)``: a row's verdict at its model size."""
    arm = f" ({row.get('arm') or VARIANT_ARM}: {row['variant']})" if row.get("variant") else ""
    return f"{str(row['verdict']).replace('_', ' ')} at {_size(row.get('params'))}{arm}"


def counted_rows(claims: list[dict]) -> tuple[list[dict], list[dict]]:
    """Each claim once (the second of :data:`RULES`), over its rows (its study's tier, its real-model variant):

    * among the claim's firm rows, a decided verdict (supported / not supported) decides, the one at the larger
      model (``params``; an unrecorded size counts as the smallest) speaking for the claim;
    * an inconclusive firm row never overrides a decided one: it speaks for the claim only when no firm row is
      decided (the claim is then open);
    * when two firm decided rows disagree, the claim counts on neither side: it is returned as split, with
      ``text`` ``supported at 500k parameters, not supported at 135M parameters (real models: <study>-lm)``,
      smaller model first;
    * a claim without a firm row is represented by its first row (a smoke test or stale: never counted).

    Rows are grouped by ``(study, claim)``; a variant's rows carry their study's name. Returns ``(rows, split)``:
    one row per claim that is not split, in the order first seen, and ``[{"claim", "study", "side", "text",
    "rows"}]`` for the split ones."""
    groups: dict[tuple, list[dict]] = {}
    for c in claims:
        groups.setdefault((c.get("study"), c["claim"]), []).append(c)
    once, split = [], []
    for (study, claim), rows in groups.items():
        firm = [c for c in rows if c["firm"]]
        decided = [c for c in firm if c["verdict"] in DECIDED]
        if len({c["verdict"] for c in decided}) > 1:
            ordered = sorted(decided, key=_model_size)
            split.append({"claim": claim, "study": study, "side": rows[0]["side"], "rows": ordered,
                          "text": ", ".join(_at_scale(c) for c in ordered)})
            continue
        pool = decided or firm or rows[:1]
        once.append(max(pool, key=_model_size))  # the first of equal sizes
    return once, split


def synthesis(claims: list[dict]) -> dict[str, Any]:
    """Apply :data:`RULES` to the claim rows: per-side tallies and states, and the answer's sentences.

    Input: claim rows with ``claim``, ``side``, ``verdict``, ``firm`` (bool; False for a smoke test or a stale
    study), optionally ``study``, ``variant`` (a real-model variant's row), ``own_hypothesis`` (bool) and
    ``params`` (the largest model of the claim's run).

    Each claim counts once (:func:`counted_rows`): among its firm rows, a firm decided verdict at the larger model
    decides; an inconclusive row never overrides a decided one; a claim whose firm decided rows disagree (supported
    from scratch at 500k parameters, not supported at 135M pretrained) counts on neither side and is named in its
    side's sentence as "split between scales: supported at 500k parameters, not supported at 135M parameters …".

    Output: ``{"sides": {side: {"for", "against", "missed_level", "open", "open_published", "smoke", "own_for",
    "own_against", "largest", "single", "split", "state"}}, "answer": [sentences]}``; ``open_published`` holds the
    firm published claims that are inconclusive, named in their side's sentence as tested and undecided; ``against`` holds the not-supported claims
    whose finding points the other way (``not_supported_means`` "opposite"), ``missed_level`` those that only
    missed a level or band; ``largest`` maps each claim to the largest model of the row that decided it,
    ``single`` is true when the side's state rests on one claim, and ``split`` maps each claim split between
    scales to its verdicts at their sizes.
    """
    once, split = counted_rows(claims)
    sides: dict[str, dict[str, Any]] = {}
    for side in SIDES:
        rows = [c for c in once if c["side"] == side]
        firm = [c for c in rows if c["firm"]]
        published = [c for c in firm if not c.get("own_hypothesis")]
        own = [c for c in firm if c.get("own_hypothesis")]
        tally = {
            "for": [c["claim"] for c in published if c["verdict"] == "supported"],
            "against": [c["claim"] for c in published if c["verdict"] == "not_supported"
                        and c.get("not_supported_means", "opposite") == "opposite"],
            "missed_level": [c["claim"] for c in published if c["verdict"] == "not_supported"
                             and c.get("not_supported_means", "opposite") != "opposite"],
            "open": [c["claim"] for c in firm if c["verdict"] == "inconclusive"],
            "open_published": [c["claim"] for c in published if c["verdict"] == "inconclusive"],
            "smoke": [c["claim"] for c in rows if not c["firm"]],
            "own_for": [c["claim"] for c in own if c["verdict"] == "supported"],
            "own_against": [c["claim"] for c in own if c["verdict"] == "not_supported"],
            "largest": {c["claim"]: c.get("params") for c in published if c["verdict"] in ("supported", "not_supported")},
        }
        tally["split"] = {x["claim"]: x["text"] for x in split if x["side"] == side}
        tally["state"] = side_state(len(tally["for"]), len(tally["against"]))
        tally["single"] = len(tally["for"]) + len(tally["against"]) == 1
        sides[side] = tally

    def names(xs: list[str], side: str | None = None) -> str:
        if not xs:
            return "none"
        if side is None:
            return ", ".join(xs)
        return ", ".join(f"{x} ({_size(sides[side]['largest'].get(x))})" for x in xs)

    def said(side: str) -> str:
        t = sides[side]
        return f"supported — {names(t['for'], side)}; not supported — {names(t['against'], side)}"

    def weight(side: str) -> str:
        t = sides[side]
        out = " It rests on a single published claim." if t["single"] else ""
        for claim, text in t["split"].items():
            out += f" {claim} is counted on neither side, split between scales: {text}."
        if t["missed_level"]:
            out += (f" Not supported only as a missed level or band (not evidence for the other side, not counted): "
                    f"{names(t['missed_level'], side)}.")
        if t["own_for"] or t["own_against"]:
            out += (f" Own hypotheses beside it, not counted: supported — {names(t['own_for'])}; "
                    f"not supported — {names(t['own_against'])}.")
        if t["open_published"]:
            # An undecided published claim is part of what the side's sentence rests on: say it was tested.
            out += (f" Tested and undecided (inconclusive, evidence for neither side; each claim's row says what "
                    f"would decide it): {names(t['open_published'])}.")
        return out

    SCALE = "scale_suffices"
    scale, binding, stops = (sides[s]["state"] for s in (SCALE, "binding_needed", "where_scale_stops"))
    answer = []
    # The reading of the answer: one sentence on scale, read together with where it stops.
    if scale == "holds" and stops in ("rejected", "open"):
        answer.append(f"Scale suffices in what was tested: every firm published claim on that side is supported "
                      f"({names(sides['scale_suffices']['for'], 'scale_suffices')}) and no published claim that "
                      f"scale stops somewhere holds.{weight('scale_suffices')}")
    elif scale in ("holds", "contested") and stops in ("holds", "contested"):
        against = sides["scale_suffices"]["against"]
        answer.append(f"Scale helps, with limits: supported that scale suffices — "
                      f"{names(sides['scale_suffices']['for'], 'scale_suffices')}"
                      f"{f' (not supported — {names(against, SCALE)})' if against else ''}; "
                      f"supported that scale stops — {names(sides['where_scale_stops']['for'], 'where_scale_stops')}."
                      f"{weight('scale_suffices')}")
    elif scale == "contested":
        answer.append(f"Whether scale suffices is contested: {said('scale_suffices')}.{weight('scale_suffices')}")
    elif scale == "rejected":
        answer.append(f"The evidence is against scale sufficing: not supported — "
                      f"{names(sides['scale_suffices']['against'], 'scale_suffices')}.{weight('scale_suffices')}")
    else:
        answer.append(f"No firm evidence yet on whether scale suffices.{weight('scale_suffices')}")
    # Every side is named in every state: where scale stops has its own sentence.
    answer.append({
        "holds": f"Scale stops somewhere in what was tested: supported — "
                 f"{names(sides['where_scale_stops']['for'], 'where_scale_stops')}.",
        "contested": f"Whether scale stops somewhere is contested: {said('where_scale_stops')}.",
        "rejected": f"No published claim that scale stops somewhere holds: not supported — "
                    f"{names(sides['where_scale_stops']['against'], 'where_scale_stops')}.",
        "open": "No firm evidence yet on where scale stops.",
    }[stops] + weight("where_scale_stops"))
    answer.append({
        "holds": f"Explicit binding has the advantage its sources claim where tested "
                 f"({names(sides['binding_needed']['for'], 'binding_needed')}; each claim's statement says which).",
        "contested": f"The evidence on explicit binding is mixed: {said('binding_needed')}.",
        "rejected": f"Explicit binding showed no advantage "
                    f"({names(sides['binding_needed']['against'], 'binding_needed')}).",
        "open": "No firm evidence yet on explicit binding.",
    }[binding] + weight("binding_needed"))
    return {"sides": sides, "answer": answer}


def _clock(seconds: Any) -> str:
    if not isinstance(seconds, (int, float)):
        return "?"
    m = round(seconds / 60)
    return f"{seconds:.0f} s" if seconds < 90 else f"{m} min" if m < 90 else f"{m / 60:.1f} h"


def next_tier(study: str, tier: str, files: Any) -> str | None:
    """The shipped study file one step up from ``tier``: the default's ``-full``, ``-full``'s ``-paper``; none for a
    real-model variant (:func:`is_variant`), whose next step is a larger model, not a tier."""
    if is_variant(tier):
        return None
    for step in ((f"{study}-full", f"{study}-paper") if not tier.endswith(("-full", "-paper")) else
                 (f"{study}-paper",) if tier.endswith("-full") else ()):
        if step in files:
            return step
    return None


def what_would_decide(row: dict, details: dict, estimates: dict | None) -> dict[str, Any] | None:
    """For an inconclusive claim, what would decide it: the competence gate it missed (which cells, their values)
    or the interval too wide for its margin, and the tier one step up with its dry-run time on 2 CPU cores and on
    one GPU (``estimates``: :func:`bindscale.run.dryrun.tier_estimates`, carried by a published folder's
    provenance). None for a decided claim.

    Returns: ``{"why", "missed", "tier", "cpu_wall_s", "gpu_wall_s", "text"}``.
    """
    if row.get("verdict") != "inconclusive":
        return None
    missed = []
    for g in details.get("gates") or []:
        for label in g.get("missed") or ():
            # the mean over every model of the cell (the engine keeps it where its gates left out models)
            fit = (g.get("cells_every_seed") or {}).get(label, (g.get("cells") or {}).get(label))
            missed.append(f"{label}: {g.get('metric')} {'not recorded' if fit is None else f'{fit:.3g}'} "
                          f"{'<' if g.get('higher', True) else '>'} {g.get('level')}")
    lo, hi, value = row.get("ci_low"), row.get("ci_high"), row.get("value")
    finite = all(isinstance(x, (int, float)) and x == x for x in (lo, hi, value))
    seeds = row.get("seeds_per_cell")
    # Cells whose mean passes every gate may still have lost most of their models to the gates, one by one.
    lost = [f"{cell}: {v['lost']} of {v.get('planned_ok', '?')} lost ("
            + ", ".join(f"{metric} {n}" for metric, n in (v.get("by_gate") or {}).items()) + ")"
            for cell, v in (details.get("lost_to_gates_by_cell") or {}).items() if v.get("lost")]
    if missed:
        why = (f"a competence gate missed in {len(missed)} deciding cell{'s' if len(missed) > 1 else ''} "
               f"({'; '.join(missed[:3])}{'; …' if len(missed) > 3 else ''}): models that learn their training task")
    elif lost and not finite:
        why = (f"more models that pass the competence gates, each on its own ({'; '.join(lost[:3])}"
               f"{'; …' if len(lost) > 3 else ''})")
    elif finite:
        why = (f"a narrower interval than [{lo:.3g}, {hi:.3g}]: its width shrinks as 1/√seeds, so halving it takes "
               f"4× the seeds{f' (now {seeds} per deciding cell)' if seeds else ''}")
    else:
        why = "a deciding value: too few finite seeds or no deciding cell (the reason says which)"
    files = registry.builtin_files()
    tier = next_tier(row["study"], str(row.get("tier") or row["study"]), files)
    est = (estimates or {}).get(tier) if tier else None
    cpu, gpu = (est or {}).get("cpu_wall_s"), (est or {}).get("gpu_wall_s")
    if tier is None and is_variant(row.get("tier")):
        where = f"no larger shipped tier of `{row.get('tier')}`: larger real models (its file takes a list of models)"
    elif tier is None:
        where = "no larger shipped tier: a new recipe or a larger machine"
    elif est:
        gpu_text = f"{_clock(gpu[0])}–{_clock(gpu[1])} on one GPU" if gpu else "no GPU estimate"
        where = f"`{tier}` (dry run: ~{_clock(cpu)} on 2 CPU cores, {gpu_text})"
    else:
        where = f"`{tier}` (`bindscale run {tier} --dry-run` estimates its time)"
    return {"why": why, "missed": missed, "tier": tier, "cpu_wall_s": cpu, "gpu_wall_s": gpu,
            "text": f"Would be decided by {why}; the tier to run: {where}."}


def _seeds(details: dict) -> Any:
    spc = details.get("seeds_per_cell")
    return spc if isinstance(spc, int) else None


#: Columns of a results table that hold a trial's parameter count, first found first used.
PARAM_COLUMNS = ("n_params",)
#: Keys of a verdict's details that hold the largest model's parameter count (where the table has none).
PARAM_DETAILS = ("largest_model_params",)


def run_params(sub: RunStore, verdicts: list[dict] | None = None) -> float | None:
    """Parameter count of the largest model the run trained: the largest ``n_params`` among the ok rows of
    its ``results.parquet``; else the largest :data:`PARAM_DETAILS` value a verdict's details carry; else None.
    """
    if sub.exists("results.parquet"):
        try:
            import io

            import pandas as pd

            df = pd.read_parquet(io.BytesIO(sub.read_bytes("results.parquet")))
            if "status" in df.columns:
                df = df[df["status"].astype(str) == "ok"]
            for col in PARAM_COLUMNS:
                if col in df.columns:
                    vals = pd.to_numeric(df[col], errors="coerce").dropna()
                    vals = vals[vals > 0]
                    if len(vals):
                        return float(vals.max())
        except (OSError, ValueError, ImportError):
            pass
    found = [float(d[k]) for v in verdicts or () for d in [v.get("details") or {}] for k in PARAM_DETAILS
             if isinstance(d.get(k), (int, float)) and d[k] > 0]
    return max(found) if found else None


def _finding(v: dict, details: dict) -> str:
    """The verdict's reason (its finding in words); where a rule gave none, the number it decided on."""
    reason = details.get("reason")
    if reason:
        return str(reason)
    value = v.get("value")
    if isinstance(value, (int, float)) and value == value:
        lo, hi = v.get("ci_low"), v.get("ci_high")
        ci = f" [{lo:.3g}, {hi:.3g}]" if all(isinstance(x, (int, float)) and x == x for x in (lo, hi)) else ""
        return f"no reason recorded: {v.get('statistic')} {value:.3g}{ci}"
    return f"no reason recorded and no number: {v.get('verdict')}"


def _study_rows(store: RunStore, name: str, folder: str, estimates: dict | None) -> tuple[dict, list[dict]]:
    """One run folder's entry (for answer.json's ``studies``) and its claim rows: the study ``name``'s own
    (``folder == name``) or its real-model variant's (``folder`` is the variant, ``<study>-lm``), each judged
    by the study's code alike (stale when the study's result version is ahead of what the folder's records carry)."""
    plugin = registry.builtin()[name]
    variant = folder if folder != name else None
    sub = RunStore.of(store.where(folder))
    summary = json.loads(sub.read_text("summary.json"))
    recorded = recorded_result_version(sub)
    stale = stale_reason(plugin, recorded)
    status = _status_of(summary, sub, name, stale)
    prov = json.loads(sub.read_text("provenance.json")) if sub.exists("provenance.json") else {}
    entry = {"run": True, "status": status, "report": f"{folder}/report.html",
             "tier": prov.get("tier") or run_tier(sub, folder), "stale": stale is not None,
             "result_version": recorded,
             "code_result_version": int(getattr(plugin, "result_version", 1) or 1),
             "provenance": prov or None,
             "n_trials": summary.get("n_trials"), "n_ok": summary.get("n_ok"),
             "n_failed": summary.get("n_failed"), "n_diverged": summary.get("n_diverged"),
             "quick": bool(summary.get("quick")), "generated": summary.get("generated")}
    if variant:
        entry.update(variant_of=name, arm=VARIANT_ARM)
    by_name = {c.name: c for c in plugin.claims}
    params = run_params(sub, summary.get("verdicts"))
    entry["largest_model_params"] = params
    rows = []
    for v in summary.get("verdicts", []):
        c = by_name.get(v["claim"])
        details = v.get("details") or {}
        figure = next((f for f in (c.figures if c else ()) if sub.exists(f"figures/{f}.png")), None)
        rule = v.get("statistic_text") or (c.statistic if c else "")
        anchor = c.anchor if c else None
        row = {
            "study": name, "claim": v["claim"], "title": v.get("title") or (c.title if c else v["claim"]),
            "variant": variant, "arm": VARIANT_ARM if variant else None,
            "row_id": f"{variant}-{v['claim']}" if variant else v["claim"],
            "source": v.get("source") or (c.source if c else ""), "statement": v.get("statement"),
            "side": v.get("side") or (c.side if c else ""), "verdict": v["verdict"],
            "statistic": v.get("statistic"), "statistic_text": v.get("statistic_text") or (c.statistic if c else ""),
            "value": v.get("value"), "ci_low": v.get("ci_low"),
            "ci_high": v.get("ci_high"), "n_trials": v.get("n_trials"), "seeds_per_cell": _seeds(details),
            "reason": _finding(v, details), "rule": rule, "caveat": details.get("caveat"),
            "gates": gate_lines(details),
            "firm": status == "firm", "run_status": status, "stale": stale is not None,
            "tier": entry["tier"],
            "figure": f"{folder}/figures/{figure}.png" if figure else None,
            "report": f"{folder}/report.html#claim-{v['claim']}",
            "anchor": anchor.as_dict() if anchor is not None else None, "params": params,
            "own_hypothesis": bool(getattr(c, "own_hypothesis", False)) if c else False,
            "not_supported_means": (details.get("not_supported_means")
                                    or (getattr(c, "not_supported_means", "opposite") if c else "opposite")),
        }
        row["decide"] = what_would_decide(row, details, estimates)
        row["relation"] = relation(row, anchor, params)
        row["distance"] = distance(row, anchor, params)
        rows.append(row)
    return entry, rows


def collect(run_dir: "str | Path") -> dict[str, Any]:
    """The answer's data from the study runs in ``run_dir``: one entry per built-in study (run or not),
    one row per claim of each run study (see ``answer.json``).

    Each claim row carries, beside the verdict: ``reason`` (the finding in words, as the rule wrote it),
    ``rule`` (the definition of the deciding statistic, the claim's ``statistic`` text: for a details
    element, never the table cell), ``anchor`` (the source's headline, :meth:`bindscale.core.study.Anchor.as_dict`,
    or None for a claim without one), ``params`` (the largest model the run trained, :func:`run_params`)
    and ``relation`` (``{"word", "why"}``, :func:`bindscale.verdicts.anchors.relation`).

    A study's real-model variant run (``run_dir/<study>-lm/``, :func:`variants_of`) adds an entry of its own to
    ``studies`` (keyed by the variant, right after its study, with ``variant_of``) and its claim rows right after
    the study's own, each with ``variant`` (``<study>-lm``; None on the study's own rows), ``arm`` ("real models"),
    its own tier, params, relation, distance, stale mark and report link (``<study>-lm/report.html#claim-…``).
    ``row_id`` is each row's anchor on the page (the claim's name; ``<variant>-<claim>`` for a variant's row)."""
    store = RunStore.of(run_dir)
    studies: dict[str, dict] = {}
    claims: list[dict] = []
    try:  # a published folder carries the shipped tiers' dry-run times (bindscale publish computes them)
        estimates = json.loads(store.read_text("provenance.json")).get("tier_estimates") \
            if store.exists("provenance.json") else None
    except (OSError, ValueError):
        estimates = None
    names = registry.run_order()  # as `run all` runs them
    for name in names:
        plugin = registry.builtin()[name]
        if store.exists(f"{name}/summary.json"):
            studies[name], rows = _study_rows(store, name, name, estimates)
            claims.extend(rows)
        else:
            studies[name] = {"run": False, "claims": [c.name for c in plugin.claims]}
        for variant in variants_of(name):
            if store.exists(f"{variant}/summary.json"):
                studies[variant], rows = _study_rows(store, name, variant, estimates)
                claims.extend(rows)
    order = list(SIDES)
    claims.sort(key=lambda c: order.index(c["side"]) if c["side"] in order else len(order))  # stable: study order
    syn = synthesis(claims)
    missing = {
        "studies_not_run": [n for n, s in studies.items() if not s["run"]],
        "inconclusive": [{"claim": c["claim"], "study": c["study"], "variant": c["variant"], "row_id": c["row_id"],
                          "reason": c["reason"], "decide": (c.get("decide") or {}).get("text")}
                         for c in claims if c["verdict"] == "inconclusive"],
        "smoke_tests": [n for n, s in studies.items() if s["run"] and s["status"] != "firm" and not s["stale"]],
        "stale": [n for n, s in studies.items() if s["run"] and s["stale"]],
    }
    return {"question": QUESTION, "generated": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            "rules": list(RULES), "relation_rule": RELATION_RULE, "sides": dict(SIDES), "studies": studies, "claims": claims,
            "synthesis": syn, "missing": missing}


def _beside_the_number(data: dict, store: RunStore) -> None:
    """Give each claim row its verdict's ``unparsable`` share (a generated-answer study's, from its summary:
    :func:`bindscale.report.html.unparsable_share`) where the row has none, so the page shows it beside the
    number (a low score that is mostly unparsable output must say so)."""
    verdicts: dict[str, dict] = {}
    for c in data["claims"]:
        if "unparsable" in c:
            continue
        folder = c.get("variant") or c["study"]  # a variant's row: its own run's summary
        if folder not in verdicts:
            try:
                summary = json.loads(RunStore.of(store.where(folder)).read_text("summary.json"))
            except (OSError, ValueError):
                summary = {}
            verdicts[folder] = {v.get("claim"): v for v in summary.get("verdicts") or [] if isinstance(v, dict)}
        c["unparsable"] = (verdicts[folder].get(c["claim"]) or {}).get("unparsable")


def build_answer(run_dir: "str | Path") -> dict[str, Any]:
    """Write ``answer.html`` and ``answer.json`` in ``run_dir`` from its studies' summaries; returns the data.

    The HTML is self-contained: each deciding figure is embedded as a data URI (and the link
    goes to the study's own report beside it).
    """
    # The report package imports pandas and matplotlib: only when a page is written, not on import.
    from bindscale.core.fmt import anchor_text
    from bindscale.report.html import _environment, fmt, fmt_ci, to_jsonable, unparsable_text
    from bindscale.report.text import clip

    store = RunStore.of(run_dir)
    data = to_jsonable(collect(run_dir))
    _beside_the_number(data, store)
    images = {}
    for c in data["claims"]:
        if c["figure"]:
            images[c.get("row_id") or c["claim"]] = base64.b64encode(store.read_bytes(c["figure"])).decode("ascii")
    # A published folder (bindscale publish) carries its provenance: shown on the page, not in answer.json.
    provenance = json.loads(store.read_text("provenance.json")) if store.exists("provenance.json") else None
    html = _environment().get_template("answer.html.j2").render(
        data=data, images=images, provenance=provenance, fmt=fmt, fmt_ci=fmt_ci, sides=SIDES, clip=clip, anchor_text=anchor_text,
        unparsable_text=unparsable_text)
    store.write_text("answer.html", html)
    store.write_text("answer.json", json.dumps(data, indent=2, allow_nan=False) + "\n")
    return data
