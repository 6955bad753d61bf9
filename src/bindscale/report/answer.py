"""The answer page: every claim of every study on one page, and a synthesis written by rules.

``build_answer(run_dir)`` reads the ``summary.json`` of each study's run in
``run_dir/<study>/`` (written by ``bindscale run all`` or ``bindscale report``)
and writes ``answer.html`` and ``answer.json``. Nothing on it is typed by hand:
the claim table is the verdicts, each claim's side comes from its study plugin
(:data:`bindscale.core.study.SIDES`), and the synthesis applies :data:`RULES` (shown
on the page) to the tally of verdicts per side.

Tallies count only firm verdicts: a run that is a quick variant or has trials
missing gives smoke-test results, which are listed but never counted.

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
from bindscale.verdicts.anchors import relation
from bindscale.core.studyfile import resolve_study
from bindscale.core.errors import BindscaleError
from bindscale.store.rundir import load_run_study
from bindscale.store.storage import RunStore
from bindscale.core.study import SIDES, gate_lines

QUESTION = ("Can scaling alone — more parameters, more data, more coverage of combinations — produce compositional "
            "generalization, or do networks need explicit binding mechanisms?")

#: The synthesis rules, in the words the page prints; :func:`synthesis` implements them.
RULES = (
    "A claim counts only when its verdict is firm: supported or not supported, from a full run with every "
    "planned trial recorded (quick or unfinished runs are smoke tests and are not counted).",
    "A supported claim is evidence for the side of the question it bears on; a not-supported claim is evidence "
    "against that side; an inconclusive one is evidence for neither.",
    "A side holds when it has evidence for it and none against; it is contested when it has both; it is "
    "rejected when it has only evidence against; it is open when it has neither.",
    "The answer is read off the sides: scale suffices where 'scale suffices' holds and 'where scale stops' does "
    "not hold; binding is needed where 'binding needed' holds; every other combination is stated as it stands.",
)


def _status_of(summary: dict, sub: RunStore, name: str) -> str:
    """"firm" for a finished run of the built-in study exactly as shipped; else why its verdicts are
    smoke tests (quick variant, trials missing, or a configuration that differs from the built-in one:
    other trials, seeds or thresholds — a run with ``--set train.steps=30`` says nothing about the source)."""
    why = []
    if summary.get("quick"):
        why.append("quick variant")
    if summary.get("n_missing"):
        why.append(f"{summary['n_missing']} of {summary.get('n_planned')} trials missing (unfinished run)")
    if not summary.get("quick") and not _as_shipped(sub, name):
        why.append("its configuration differs from the built-in study (other trials, seeds or thresholds)")
    return "firm" if not why else "; ".join(why) + ": smoke test"


def _as_shipped(sub: RunStore, name: str) -> bool:
    """Whether the run's resolved study has the built-in study's trials and verdict thresholds."""
    try:
        run, shipped = load_run_study(sub), resolve_study(name)
    except BindscaleError:
        return False
    same_trials = {t.trial_id for t in run.trials()} == {t.trial_id for t in shipped.trials()}
    return same_trials and _thresholds(run.verdicts) == _thresholds(shipped.verdicts) and not run.is_quick


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


def synthesis(claims: list[dict]) -> dict[str, Any]:
    """Apply :data:`RULES` to the claim rows: per-side tallies and states, and the answer's sentences.

    Input: claim rows with ``claim``, ``side``, ``verdict`` and ``firm`` (bool).
    Output: ``{"sides": {side: {"for", "against", "open", "smoke", "state"}}, "answer": [sentences]}``.
    """
    sides: dict[str, dict[str, Any]] = {}
    for side in SIDES:
        rows = [c for c in claims if c["side"] == side]
        firm = [c for c in rows if c["firm"]]
        tally = {
            "for": [c["claim"] for c in firm if c["verdict"] == "supported"],
            "against": [c["claim"] for c in firm if c["verdict"] == "not_supported"],
            "open": [c["claim"] for c in firm if c["verdict"] == "inconclusive"],
            "smoke": [c["claim"] for c in rows if not c["firm"]],
        }
        tally["state"] = side_state(len(tally["for"]), len(tally["against"]))
        sides[side] = tally

    def names(xs: list[str]) -> str:
        return ", ".join(xs) if xs else "none"

    def said(side: str) -> str:
        t = sides[side]
        return f"supported — {names(t['for'])}; not supported — {names(t['against'])}"

    scale, binding, stops = (sides[s]["state"] for s in ("scale_suffices", "binding_needed", "where_scale_stops"))
    answer = []
    # Rule 4, the reading of the answer: one sentence on scale, read together with where it stops.
    if scale == "holds" and stops in ("rejected", "open"):
        answer.append(f"Scale suffices in what was tested: every firm claim on that side is supported "
                      f"({names(sides['scale_suffices']['for'])}) and no claim that scale stops somewhere holds.")
    elif scale in ("holds", "contested") and stops in ("holds", "contested"):
        against = sides["scale_suffices"]["against"]
        answer.append(f"Scale helps, with limits: supported that scale suffices — "
                      f"{names(sides['scale_suffices']['for'])}"
                      f"{f' (not supported — {names(against)})' if against else ''}; supported that scale stops "
                      f"— {names(sides['where_scale_stops']['for'])}.")
    elif scale == "contested":
        answer.append(f"Whether scale suffices is contested: {said('scale_suffices')}.")
    elif scale == "rejected":
        answer.append(f"The evidence is against scale sufficing: not supported — "
                      f"{names(sides['scale_suffices']['against'])}.")
    else:
        answer.append("No firm evidence yet on whether scale suffices.")
    # Every side is named in every state (issue 31, item 8): where scale stops has its own sentence.
    answer.append({
        "holds": f"Scale stops somewhere in what was tested: supported — {names(sides['where_scale_stops']['for'])}.",
        "contested": f"Whether scale stops somewhere is contested: {said('where_scale_stops')}.",
        "rejected": f"No claim that scale stops somewhere holds: not supported — "
                    f"{names(sides['where_scale_stops']['against'])}.",
        "open": "No firm evidence yet on where scale stops.",
    }[stops])
    answer.append({
        "holds": f"Explicit binding has the advantage its sources claim where tested "
                 f"({names(sides['binding_needed']['for'])}; each claim's statement says which).",
        "contested": f"The evidence on explicit binding is mixed: {said('binding_needed')}.",
        "rejected": f"Explicit binding showed no advantage ({names(sides['binding_needed']['against'])}).",
        "open": "No firm evidence yet on explicit binding.",
    }[binding])
    return {"sides": sides, "answer": answer}


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


def collect(run_dir: "str | Path") -> dict[str, Any]:
    """The answer's data from the study runs in ``run_dir``: one entry per built-in study (run or not),
    one row per claim of each run study (see ``answer.json``).

    Each claim row carries, beside the verdict: ``reason`` (the finding in words, as the rule wrote it),
    ``rule`` (the definition of the deciding statistic, the claim's ``statistic`` text: for a details
    element, never the table cell), ``anchor`` (the source's headline, :meth:`bindscale.core.study.Anchor.as_dict`,
    or None for a claim without one), ``params`` (the largest model the run trained, :func:`run_params`)
    and ``relation`` (``{"word", "why"}``, :func:`bindscale.verdicts.anchors.relation`)."""
    store = RunStore.of(run_dir)
    studies: dict[str, dict] = {}
    claims: list[dict] = []
    names = registry.run_order()  # as `run all` runs them
    for name in names:
        plugin = registry.builtin()[name]
        sub = RunStore.of(store.where(name))
        if not sub.exists("summary.json"):
            studies[name] = {"run": False, "claims": [c.name for c in plugin.claims]}
            continue
        summary = json.loads(sub.read_text("summary.json"))
        status = _status_of(summary, sub, name)
        studies[name] = {"run": True, "status": status, "report": f"{name}/report.html",
                         "n_trials": summary.get("n_trials"), "n_ok": summary.get("n_ok"),
                         "n_failed": summary.get("n_failed"), "n_diverged": summary.get("n_diverged"),
                         "quick": bool(summary.get("quick")), "generated": summary.get("generated")}
        by_name = {c.name: c for c in plugin.claims}
        params = run_params(sub, summary.get("verdicts"))
        studies[name]["largest_model_params"] = params
        for v in summary.get("verdicts", []):
            c = by_name.get(v["claim"])
            details = v.get("details") or {}
            figure = next((f for f in (c.figures if c else ()) if sub.exists(f"figures/{f}.png")), None)
            rule = v.get("statistic_text") or (c.statistic if c else "")
            anchor = c.anchor if c else None
            row = {
                "study": name, "claim": v["claim"], "title": v.get("title") or (c.title if c else v["claim"]),
                "source": v.get("source") or (c.source if c else ""), "statement": v.get("statement"),
                "side": v.get("side") or (c.side if c else ""), "verdict": v["verdict"],
                "statistic": v.get("statistic"), "statistic_text": v.get("statistic_text") or (c.statistic if c else ""),
                "value": v.get("value"), "ci_low": v.get("ci_low"),
                "ci_high": v.get("ci_high"), "n_trials": v.get("n_trials"), "seeds_per_cell": _seeds(details),
                "reason": _finding(v, details), "rule": rule, "caveat": details.get("caveat"),
                "gates": gate_lines(details),
                "firm": status == "firm", "run_status": status,
                "figure": f"{name}/figures/{figure}.png" if figure else None,
                "report": f"{name}/report.html#claim-{v['claim']}",
                "anchor": anchor.as_dict() if anchor is not None else None, "params": params,
            }
            row["relation"] = relation(row, anchor, params)
            claims.append(row)
    order = list(SIDES)
    claims.sort(key=lambda c: order.index(c["side"]) if c["side"] in order else len(order))  # stable: study order
    syn = synthesis(claims)
    missing = {
        "studies_not_run": [n for n, s in studies.items() if not s["run"]],
        "inconclusive": [{"claim": c["claim"], "study": c["study"], "reason": c["reason"]}
                         for c in claims if c["verdict"] == "inconclusive"],
        "smoke_tests": [n for n, s in studies.items() if s["run"] and s["status"] != "firm"],
    }
    return {"question": QUESTION, "generated": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            "rules": list(RULES), "relation_rule": RELATION_RULE, "sides": dict(SIDES), "studies": studies, "claims": claims,
            "synthesis": syn, "missing": missing}


def _beside_the_number(data: dict, store: RunStore) -> None:
    """Give each claim row its verdict's ``unparsable`` share (a generated-answer study's, from its summary:
    :func:`bindscale.report.html.unparsable_share`) where the row has none, so the page shows it beside the
    number (issue 34, item 6)."""
    verdicts: dict[str, dict] = {}
    for c in data["claims"]:
        if "unparsable" in c:
            continue
        if c["study"] not in verdicts:
            try:
                summary = json.loads(RunStore.of(store.where(c["study"])).read_text("summary.json"))
            except (OSError, ValueError):
                summary = {}
            verdicts[c["study"]] = {v.get("claim"): v for v in summary.get("verdicts") or [] if isinstance(v, dict)}
        c["unparsable"] = (verdicts[c["study"]].get(c["claim"]) or {}).get("unparsable")


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
            images[c["claim"]] = base64.b64encode(store.read_bytes(c["figure"])).decode("ascii")
    # A published folder (bindscale publish) carries its provenance: shown on the page, not in answer.json.
    provenance = json.loads(store.read_text("provenance.json")) if store.exists("provenance.json") else None
    html = _environment().get_template("answer.html.j2").render(
        data=data, images=images, provenance=provenance, fmt=fmt, fmt_ci=fmt_ci, sides=SIDES, clip=clip, anchor_text=anchor_text,
        unparsable_text=unparsable_text)
    store.write_text("answer.html", html)
    store.write_text("answer.json", json.dumps(data, indent=2, allow_nan=False) + "\n")
    return data
