"""Each study's quick-run numbers against committed reference numbers, tied to its result version.

A change that moves a study's numbers must bump the study's ``result_version`` (the published answer then marks
the study stale until it is re-run). This module reads the numbers of a ``run all --quick`` directory, compares
them with ``tests/reference/quick/<study>.json`` and says, per study, whether they moved and whether the
version was bumped. The slow test ``tests/integration/test_run_all.py`` runs it on its own quick run; after a
deliberate change, bump the version and regenerate the references::

    bindscale run all --quick --out runs/q && python -m tests.integration.reference runs/q

What counts as "moved": quick runs train for a few hundred steps on one torch thread, so on another CPU a number
differs by float rounding only (different summation orders in the matrix kernels). A study's numbers moved when
more than :data:`MOVED_SHARE` of its compared values differ by more than :data:`RTOL` (relative, with
:data:`ATOL` absolute for values near zero), or any value differs by more than :data:`GROSS` (absolute for
values up to 1 such as accuracies, relative above: a count of 243 nodes that reads 242 is not gross).

Measured (7 December 2026, 2-core Intel Xeon): two quick runs of the same code differ only where stacks were
cut differently (the run times its stacks under the machine's load): a trial trained in another stack differs
by ~1e-8 in its loss, which geometry's embedding-layer probes amplify to up to 4% relative (24 of 678 values
beyond RTOL) and 2,000 steps of subgraphs' training to 1e-3 in one loss (3 of 90 values); with 2 workers instead of 1
(other stacks) length_transfer moved 30 of 233 values (final losses by up to 0.7%, head correlations far more, one
becoming undefined). Hence a share of 25%: a recipe change moves nearly every value of a study. A recipe change
(steps, learning rate, data, a metric's definition) moves nearly every value of the study.
"""

from __future__ import annotations

import json
import math
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
REFERENCE_DIR = ROOT / "tests" / "reference" / "quick"
#: Metrics that measure the machine, not the model (timings, threads, stack sizes, memory).
MACHINE = re.compile(r"seconds|_s$|per_s|steps_per|thread|stack_size|time|memory|rss|peak|precision|background")
RTOL, ATOL = 1e-3, 1e-6
MOVED_SHARE = 0.25
#: Metrics whose quick-run values swing with float rounding (correlations and top-k overlaps over a handful of heads:
#: length_transfer's head_corr moved 0.147 -> 0.038 between stackings): never a gross difference alone.
CHAOTIC = re.compile(r"corr|spearman|rho|jaccard|head_")
GROSS = 0.1


def numbers(study_dir: Path) -> dict[str, dict[str, float]]:
    """Trial id -> {metric: value} for every finite scalar metric of every ok record (machine metrics left out)."""
    out: dict[str, dict[str, float]] = {}
    for path in sorted((study_dir / "records").glob("*.json")):
        rec = json.loads(path.read_text())
        if rec.get("status") != "ok":
            continue
        vals = {}
        for k, v in (rec.get("metrics") or {}).items():
            if isinstance(v, bool) or not isinstance(v, (int, float)) or MACHINE.search(k):
                continue
            if math.isfinite(float(v)):
                vals[k] = float(v)
        out[rec["trial_id"]] = vals
    return out


def differences(ref: dict[str, dict[str, float]], got: dict[str, dict[str, float]]) -> tuple[int, list[str]]:
    """(values compared, descriptions of the values that differ beyond RTOL/ATOL, trials or metrics missing)."""
    n, diffs = 0, []
    for tid in sorted(set(ref) | set(got)):
        if tid not in got or tid not in ref:
            diffs.append(f"trial {tid}: {'missing from the run' if tid not in got else 'not in the reference'}")
            continue
        for k in sorted(set(ref[tid]) | set(got[tid])):
            a, b = ref[tid].get(k), got[tid].get(k)
            n += 1
            if a is None or b is None:
                diffs.append(f"{tid} {k}: {a} -> {b}")
            elif abs(a - b) > ATOL + RTOL * abs(a):
                diffs.append(f"{tid} {k}: {a:.6g} -> {b:.6g}")
    return n, diffs


def moved(ref: dict, got: dict) -> tuple[bool, list[str]]:
    """Whether a study's numbers moved (see the module), with the differing values."""
    n, diffs = differences(ref, got)
    gross = [d for d in diffs if _gross(d)]
    return (bool(gross) or len(diffs) > MOVED_SHARE * max(n, 1)), diffs


def _gross(desc: str) -> bool:
    m = re.search(r": (\S+) -> (\S+)$", desc)
    if not m:
        return True  # a missing trial
    if "None" in (m.group(1), m.group(2)):
        return False  # one value became undefined (a correlation of a constant): counted in the share, not gross
    if CHAOTIC.search(desc.split(":")[0]):
        return False  # a correlation over a few heads or seeds: counted in the share, never gross alone
    try:
        a, b = float(m.group(1)), float(m.group(2))
        return abs(a - b) > GROSS * max(1.0, abs(a))
    except ValueError:
        return True


def check(study: str, run_dir: Path, current_version: int) -> str | None:
    """None when the study's quick numbers agree with its reference at its current result version; else why not."""
    path = REFERENCE_DIR / f"{study}.json"
    if not path.exists():
        return f"{study}: no reference numbers ({path.name} in tests/reference/quick); {_regen()}"
    ref = json.loads(path.read_text())
    did_move, diffs = moved(ref["trials"], numbers(run_dir / study))
    if ref["result_version"] != current_version:
        return (f"{study}: its result version is {current_version}, the reference was made at "
                f"{ref['result_version']}; {_regen()}")
    if did_move:
        return (f"{study}: its quick numbers moved ({len(diffs)} values, e.g. {'; '.join(diffs[:3])}) but its "
                f"result_version is still {current_version}: bump it in the study's StudyPlugin, then {_regen()}")
    return None


def _regen() -> str:
    return "regenerate: bindscale run all --quick --out runs/q && python -m tests.integration.reference runs/q"


def write(run_dir: Path) -> list[str]:
    """Write the reference of every built-in study in a ``run all --quick`` directory, or of the one study of a
    single quick run's directory, at its current result version."""
    from bindscale.core import registry

    REFERENCE_DIR.mkdir(parents=True, exist_ok=True)
    done = []
    single = None
    if (run_dir / "summary.json").is_file():  # one study's quick run (`bindscale run NAME --quick --out DIR`)
        single = json.loads((run_dir / "summary.json").read_text()).get("study")
    for name, plugin in registry.builtin().items():
        study_dir = run_dir if name == single else run_dir / name
        if not (study_dir / "records").is_dir():
            continue
        summary = json.loads((study_dir / "summary.json").read_text())
        if not summary.get("quick"):
            raise SystemExit(f"{study_dir}: not a quick run")
        data = {"study": name, "result_version": int(getattr(plugin, "result_version", 1)),
                "trials": numbers(study_dir)}
        (REFERENCE_DIR / f"{name}.json").write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
        done.append(name)
    return done


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit("usage: python -m tests.integration.reference QUICK_RUN_DIR (run all --quick, or one study's)")
    print("wrote", ", ".join(write(Path(sys.argv[1]))))
