"""The transformer studies' ``-full`` tiers on a lent GPU, most value per minute first, within a time limit.

Run through ``benchmarks/gpu_full.sh`` (it makes the Python environment first); by hand::

    python benchmarks/gpu_full.py --out OUT [--limit-s 540] [--tiers a,b] [--resume runs.tar.gz] [--pack] [--dry-run]

Order. Each tier's value is the number of its claims (its study file's ``verdicts``) that the published answer
(``docs/answer/answer.json``) leaves open: no published row, a stale one, an inconclusive one or one that is not
firm. Its minutes are the GPU dry run's estimate of the trials it has left (those without a record in its run
directory): the calibrated range's middle (:mod:`bindscale.run.gpucal`), or the derived range's slow end where
the study has no GPU measurement (said in the table; an unmeasured tier is not put first by a guess). Tiers run
by value per minute, the highest first; ties, the shorter first. ``--tiers`` gives an order by hand instead.

Each tier runs as ``python -m bindscale run TIER --device cuda --out OUT/runs/TIER``: a stopped run keeps
every stack it finished (records are written whole, a stack's when it ends) and the same command resumes it.
The limit (``--limit-s``, from the script's start) is kept by interrupting the running tier with SIGINT
(bindscale's Ctrl-C: finished records kept, exit 130) :data:`RESERVE_S` seconds before it, SIGKILL
:data:`GRACE_S` seconds later if it has not stopped; a tier is not started with less than
:data:`MIN_START_S` seconds left. A SIGINT or SIGTERM to this script stops the running tier the same way
and still writes the summary.

Output under OUT: ``summary.json`` (the machine, the limit, per tier: status, trials recorded / planned,
seconds, exit code, the estimates it was ordered by), ``log.txt`` (every tier's output) and, with
``--pack``, ``runs.tar.gz`` holding ``runs/`` (the tree itself removed: a lent machine returns at most 8
files, 2 folders deep). ``--resume FILE`` unpacks such an archive into OUT first, so a second call goes on
where the first stopped. ``--dry-run`` prints the order and the estimates and trains nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))  # this checkout's bindscale, here and in the tiers' processes
#: The transformer studies' -full tiers this script runs (those that exist are run).
TIERS = ("depth-full", "subgraphs-full", "ceiling-full", "length_transfer-full", "geometry-full", "binding_scan-full")
#: Seconds kept back at the end of the limit for stopping the running tier, packing and the summary.
RESERVE_S = 25.0
#: Seconds a tier has after its SIGINT before it is killed.
GRACE_S = 15.0
#: A tier is not started with fewer seconds than this left (its start-up alone takes ~10 s).
MIN_START_S = 45.0


def _clock(seconds: float | None) -> str:
    from bindscale.run.dryrun import _clock as clock

    return "-" if seconds is None else clock(seconds)


def open_claims(tier: str, claims: list[str], answer: Path) -> list[str]:
    """The tier's claims the published answer leaves open (module docstring); all of them without an answer."""
    study = tier.rsplit("-", 1)[0]
    try:
        rows = json.loads(answer.read_text(encoding="utf-8"))["claims"]
    except (OSError, ValueError, KeyError):
        return list(claims)
    published = {r.get("claim"): r for r in rows if r.get("study") == study and not r.get("variant")}
    def is_open(claim: str) -> bool:
        row = published.get(claim)
        return (row is None or row.get("stale") or row.get("verdict") == "inconclusive"
                or row.get("firm") is False)
    return [c for c in claims if is_open(c)]


def plan(tiers: list[str], runs: Path, answer: Path, by_hand: bool) -> list[dict]:
    """Each tier's estimate, open claims and value per minute, in the order they will run."""
    from bindscale.core.studyfile import builtin_studies, resolve_study
    from bindscale.run.dryrun import gpu_estimate

    known = builtin_studies()
    rows = []
    for tier in tiers:
        if tier not in known:
            rows.append({"tier": tier, "missing": True})
            continue
        study = resolve_study(tier)
        est = gpu_estimate(study, out=str(runs / tier) if (runs / tier).exists() else None)
        # The calibrated range's middle; an uncalibrated tier its derived range's slow end (a guess is not
        # allowed to put an unmeasured tier first).
        span = est["calibrated_s"] or (est["derived_s"] and [est["derived_s"][1]] * 2)
        minutes = None if not span else sum(span) / 2 / 60
        claims = open_claims(tier, list(study.verdicts), answer)
        rows.append(est | {"open_claims": claims, "minutes": minutes,
                           "value_per_min": 0.0 if not minutes else len(claims) / minutes})
    if not by_hand:
        rows.sort(key=lambda r: (r.get("missing", False), -r.get("value_per_min", 0.0), r.get("minutes") or 0.0))
    return rows


def table(rows: list[dict]) -> str:
    lines = ["order  tier                   trials (recorded)  GPU estimate: derived      calibrated            "
             "open claims  value/min"]
    for i, r in enumerate(rows, 1):
        if r.get("missing"):
            lines.append(f"{i:>5}  {r['tier']:<22} (no such study file: skipped)")
            continue
        d = r["derived_s"] or [None, None]
        if r["calibrated_s"]:
            c = f"{_clock(r['calibrated_s'][0])} - {_clock(r['calibrated_s'][1])}"
        else:
            c = "nothing left" if r["derived_s"] is None else "uncalibrated"
        lines.append(f"{i:>5}  {r['tier']:<22} {r['trials']:>4} ({r['recorded']:>3})         "
                     f"{_clock(d[0]) + ' - ' + _clock(d[1]):<26} {c:<21} {len(r['open_claims']):>11}  "
                     f"{r['value_per_min']:>9.3f}")
    why = sorted({r["uncalibrated"] for r in rows if r.get("uncalibrated")})
    lines += [f"  uncalibrated: {w}" for w in why]
    lines.append("  (estimates: bindscale run TIER --dry-run --device cuda; open claims: docs/answer/answer.json)")
    return "\n".join(lines)


def cuda_ok() -> bool:
    """Whether this interpreter's torch sees a CUDA device."""
    import torch

    return torch.cuda.is_available()


def machine() -> dict:
    import platform

    import torch

    out = {"host": platform.node(), "python": platform.python_version(), "torch": torch.__version__,
           "cuda": torch.cuda.is_available()}
    if torch.cuda.is_available():
        out["gpu"] = torch.cuda.get_device_name(0)
    return out


def count_records(tier: str, run_dir: Path) -> dict:
    from bindscale.core.studyfile import resolve_study
    from bindscale.store.records import load_records

    ids = {t.trial_id for t in resolve_study(tier).trials()}
    have = load_records(str(run_dir), ids) if run_dir.exists() else {}
    failed = sum(1 for r in have.values() if r.get("status") == "failed")
    return {"trials_planned": len(ids), "trials_recorded": len(have) - failed, "trials_failed": failed}


class Stop:
    """Set by SIGINT or SIGTERM to this script: the running tier is interrupted and no other is started."""

    def __init__(self):
        self.asked, self.child, self.before = False, None, {}

    def install(self) -> "Stop":
        for sig in (signal.SIGINT, signal.SIGTERM):
            self.before[sig] = signal.signal(sig, self._on)
        return self

    def uninstall(self) -> None:
        for sig, handler in self.before.items():
            signal.signal(sig, handler)

    def _on(self, signum, frame):
        self.asked = True
        if self.child is not None and self.child.poll() is None:
            self.child.send_signal(signal.SIGINT)


def _default_sigint() -> None:
    """In a tier's process before it starts: SIGINT back to its default, so Python turns it into Ctrl-C."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def run_tier(tier: str, run_dir: Path, python: str, seconds: float, log, stop: Stop) -> tuple[int, bool]:
    """Run one tier for at most ``seconds`` (then SIGINT, then SIGKILL after :data:`GRACE_S`); (exit code, stopped)."""
    cmd = [python, "-m", "bindscale", "run", tier, "--device", "cuda", "--out", str(run_dir)]
    log.write(f"$ {' '.join(cmd)}\n")
    log.flush()
    path = os.pathsep.join(p for p in (str(ROOT / "src"), os.environ.get("PYTHONPATH")) if p)
    # The child takes SIGINT as Ctrl-C even where this script was started with it ignored (nohup, `cmd &` in a
    # script): an inherited SIG_IGN would leave the tier deaf to it, and it would be killed, not stopped cleanly.
    child = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1,
                             cwd=ROOT, env=os.environ | {"PYTHONPATH": path, "PYTHONUNBUFFERED": "1"},
                             preexec_fn=_default_sigint)
    stop.child = child

    def copy():
        for line in child.stdout:
            sys.stdout.write(line)
            sys.stdout.flush()
            log.write(line)
            log.flush()

    pump = threading.Thread(target=copy, daemon=True)
    pump.start()
    stopped = False
    try:
        child.wait(timeout=max(1.0, seconds))
    except subprocess.TimeoutExpired:
        stopped = True
        child.send_signal(signal.SIGINT)
        try:
            child.wait(timeout=GRACE_S)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
    stopped = stopped or stop.asked
    pump.join(timeout=5)
    stop.child = None
    return child.returncode, stopped


def pack(out: Path) -> Path:
    """``out/runs`` into ``out/runs.tar.gz`` (paths ``runs/...``), the tree then removed."""
    archive = out / "runs.tar.gz"
    tmp = archive.with_suffix(".tmp")
    with tarfile.open(tmp, "w:gz") as tar:
        tar.add(out / "runs", arcname="runs")
    tmp.replace(archive)
    shutil.rmtree(out / "runs")
    return archive


def unpack(archive: Path, out: Path) -> None:
    """A previous call's ``runs.tar.gz`` into ``out`` (its ``runs/`` tree), only regular files and folders."""
    with tarfile.open(archive) as tar:
        if hasattr(tarfile, "data_filter"):
            tar.extractall(out, filter="data")
        else:  # an older Python: refuse anything outside runs/
            names = tar.getnames()
            if any(n.startswith("/") or ".." in Path(n).parts or not n.startswith("runs") for n in names):
                sys.exit(f"gpu_full: {archive}: unexpected paths in the archive")
            tar.extractall(out)


def main(argv: list[str] | None = None) -> int:
    start = time.monotonic()
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True, help="output folder (runs/TIER, summary.json, log.txt)")
    ap.add_argument("--limit-s", type=float, default=540.0, help="seconds in all, from the start (default 540)")
    ap.add_argument("--tiers", help="comma-separated tiers, run in this order (default: all six, by value per minute)")
    ap.add_argument("--resume", type=Path, help="a previous call's runs.tar.gz, unpacked into OUT first")
    ap.add_argument("--pack", action="store_true", help="pack OUT/runs into OUT/runs.tar.gz and remove the tree")
    ap.add_argument("--dry-run", action="store_true", help="print the order and the estimates; train nothing")
    ap.add_argument("--answer", type=Path, default=ROOT / "docs" / "answer" / "answer.json",
                    help="the published answer whose open claims give each tier's value")
    args = ap.parse_args(argv)
    tiers = [t for t in (args.tiers.split(",") if args.tiers else TIERS) if t]
    runs = args.out / "runs"
    if args.resume and not args.dry_run:
        if not args.resume.is_file():
            sys.exit(f"gpu_full: --resume {args.resume}: no such file")
        args.out.mkdir(parents=True, exist_ok=True)
        unpack(args.resume, args.out)
    rows = plan(tiers, runs, args.answer, by_hand=bool(args.tiers))
    print(table(rows), flush=True)
    if args.dry_run:
        print("dry run: nothing was trained or written")
        return 0
    if not cuda_ok():
        sys.exit(f"gpu_full: {sys.executable} sees no CUDA device (a CPU torch in the venv? give "
                 "benchmarks/gpu_full.sh --venv DIR for a fresh one)")
    runs.mkdir(parents=True, exist_ok=True)  # and OUT with it
    deadline = start + args.limit_s - RESERVE_S
    summary = {"machine": machine(), "limit_s": args.limit_s, "order": [r["tier"] for r in rows],
               "tiers": {}}

    def save() -> None:  # after every tier: a call killed from outside still leaves the summary so far
        summary["seconds"] = round(time.monotonic() - start, 1)
        (args.out / "summary.json").write_text(json.dumps(summary, indent=1), encoding="utf-8")

    stop = Stop().install()
    try:
        run_all(rows, runs, deadline, stop, summary, args.out / "log.txt", save)
    finally:
        stop.uninstall()
        save()
    if args.pack and runs.exists():
        print(f"gpu_full: packed {pack(args.out)}", flush=True)
    failed = [t for t, e in summary["tiers"].items() if e.get("status") == "failed"]
    return 1 if failed else 0


def run_all(rows: list[dict], runs: Path, deadline: float, stop: Stop, summary: dict, log_path: Path,
            save=lambda: None) -> None:
    """Run the planned tiers in order until ``deadline`` (a ``time.monotonic()`` reading), each entry into
    ``summary["tiers"]`` as it ends, then ``save()``."""
    with open(log_path, "a", encoding="utf-8") as log:
        for r in rows:
            tier = r["tier"]
            entry = {"estimate": {k: r.get(k) for k in ("derived_s", "calibrated_s", "uncalibrated", "minutes",
                                                        "open_claims", "value_per_min")}}
            left = deadline - time.monotonic()
            if r.get("missing"):
                entry["status"] = "no such study file"
            elif r["recorded"] == r["trials"]:
                entry["status"] = "done before"
            elif stop.asked:
                entry["status"] = "not started (stopped)"
            elif left < MIN_START_S:
                entry["status"] = f"not started ({left:.0f} s left)"
            else:
                t0 = time.monotonic()
                code, stopped = run_tier(tier, runs / tier, sys.executable, left, log, stop)
                entry |= {"seconds": round(time.monotonic() - t0, 1), "exit_code": code,
                          "status": "stopped" if stopped else ("done" if code == 0 else "failed")}
            if not r.get("missing"):
                entry |= count_records(tier, runs / tier)
            summary["tiers"][tier] = entry
            save()
            print(f"gpu_full: {tier}: {entry['status']}"
                  + (f", {entry['trials_recorded']} of {entry['trials_planned']} trials recorded"
                     if "trials_planned" in entry else "")
                  + (f" in {entry['seconds']:.0f} s" if "seconds" in entry else ""), flush=True)


if __name__ == "__main__":
    sys.exit(main())
