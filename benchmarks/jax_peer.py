"""bindscale against two JAX peers, side by side in one run.

Peers:

* **the reference code** (``--reference-dir DIR --reference-python PATH``): the headline paper's own
  implementation (Redhardt, Schug, Akram et al. 2025, "Scale leads to compositional generalization",
  github.com/smonsays/scale-compositionality; JAX, flax, optax), driven by ``reference_peer.py`` in the
  reference's own environment: per model its own jitted ``train_step`` on its own loader's batches,
  and in the sweep ``python run.py --config configs/teacher.py --config.…`` once per trial, as its users
  run it. Nothing is downloaded: the user supplies the checkout and the Python (README, "Against JAX");
  without them these figures are left out and said to be;
* **the hand-written JAX peer**: the hyperteacher MLP in plain JAX + optax, with the batch sampled
  inside one jitted step (faster than the reference's loop), on the task bindscale builds.

Sections, each alternating the sides and repeated (median with each pass's range):

1. per-model throughput: each side in its own process, pinned with ``taskset`` to the same cores (one
   core for one thread, two for two), warmed up for :data:`WARM_STEPS` steps (or :data:`WARM_S` seconds
   where a step is long) and then timed over a wall-clock window of ``--window`` seconds; reported as
   steps per wall second and per CPU second of the process, with the process's CPU share (CPU-s per
   wall-s: below its thread count on a loaded machine). bindscale: a trial alone and a stack of
   :data:`STACK` (per trial), at 1 and 2 torch threads, with the threads its step actually ran on.
2. fp32 matmul peak (torch, 2048², in bindscale's pinned process): measured before and after every timed
   window; the peak a fraction is taken of is the best of all those samples and of every training rate
   any side reached at that thread count (so every fraction is <= 1; ``peak_raised_by_training`` says
   when a training rate raised it).
3. a sweep of 12 trials (widths 128/256, depth 2, 3 seeds x 2 hold-outs) at 1000 steps per trial (the
   figure a user meets; ``--sweep-steps 100`` gives the start-up-dominated figure, labelled so): the
   reference's ``run.py`` and the hand-written peer as a JAX user runs them (a fresh process per trial,
   two chains at once, each pinned to one core) against ``bindscale run`` (workers pinned to their share
   of the cores by bindscale itself).
4. learning curves of bindscale and the hand-written peer at one shared configuration.

XLA's threads: one thread is ``XLA_FLAGS=--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1``
(https://github.com/jax-ml/jax/issues/743 and /1539) plus ``taskset`` to one core; two threads is ``taskset`` to two cores
(XLA sizes its pool from the process's affinity).

    python benchmarks/jax_peer.py --quick --reference-dir ../scale-compositionality \\
        --reference-python ../refenv/bin/python --json out.json
    python benchmarks/jax_peer.py --smoke       # checks that every figure is produced

Needs the ``bench`` extra (``pip install -c constraints.txt -e '.[bench]'``) for the hand-written peer.
JAX code runs only in child processes, which never import torch.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve()
sys.path.insert(0, str(HERE.parent))
from windows import warm_and_time  # noqa: E402 (shared with reference_peer.py)

#: XLA flags of a one-thread JAX process (https://github.com/jax-ml/jax/issues/743 and /1539).
XLA_ONE_THREAD = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
#: The shared configuration of the learning curves and of the per-model shapes.
REF_TASK = {"M": 16, "K": 3, "holdout": 0.25}
REF_TRAIN = {"batch_tasks": 128, "lr": 3e-4, "weight_decay": 3e-3}
STACK = 4
#: Warm-up before a timed window, every side: this many steps, or fewer where they take more than
#: WARM_S seconds (at 1024 x 2 a step is ~0.1 s; the first steps compile or allocate, later ones do not).
WARM_STEPS = 200
WARM_S = 3.0
#: Widths whose training speed is compared with the fp32 matmul peak.
PEAK_WIDTH = 1024
#: Seconds of each matmul-peak sample (one before and one after every timed window).
PEAK_SAMPLE_S = 0.4


# ============================================================================ JAX side (child processes)

def _jax():
    import jax
    import jax.numpy as jnp
    import optax

    return jax, jnp, optax


class JaxTrial:
    """One hyperteacher MLP trial in JAX + optax, on a task exported by :func:`export_task`."""

    def __init__(self, task: dict, width: int, depth: int, batch_tasks: int, lr: float, weight_decay: float,
                 grad_clip: float | None, seed: int):
        jax, jnp, optax = _jax()
        self.jax, self.jnp = jax, jnp
        W, b, R, r = (jnp.asarray(task[k]) for k in ("W", "b", "R", "r"))
        mask, levels = jnp.asarray(task["train_mask"]), jnp.asarray(task["levels"])
        K, S = float(task["K"]), int(task["samples_per_task"])
        M, H, I = W.shape
        B = batch_tasks
        dims = [M + I] + [width] * depth + [R.shape[0]]
        init = jax.nn.initializers.lecun_normal()  # truncated normal, variance 1/fan_in: flax Dense's default
        keys = jax.random.split(jax.random.key(seed), len(dims))
        self.params = [(init(k, (i, o), jnp.float32), jnp.zeros((o,), jnp.float32))
                       for k, i, o in zip(keys[1:], dims[:-1], dims[1:])]
        self.key = keys[0]
        tx = optax.adamw(lr, b1=0.9, b2=0.999, eps=1e-8, weight_decay=weight_decay)
        if grad_clip is not None:
            tx = optax.chain(optax.clip_by_global_norm(grad_clip), tx)
        self.opt_state = tx.init(self.params)

        def forward(params, code, x):
            h = jnp.concatenate([jnp.broadcast_to(code[:, None, :], x.shape[:2] + code.shape[-1:]), x], axis=-1)
            for w, bias in params[:-1]:
                h = jax.nn.relu(h @ w + bias)
            w, bias = params[-1]
            return h @ w + bias

        def sample(key):
            k1, k2, k3 = jax.random.split(key, 3)
            combo = jax.random.randint(k1, (B,), 0, mask.shape[0])
            z = mask[combo] * levels[jax.random.randint(k2, (B, M), 0, levels.shape[0])]
            x = jax.random.uniform(k3, (B, S, I), minval=-1.0, maxval=1.0)
            scale = z / jnp.sqrt(K)  # the reference teacher: weights linear in z
            hid = jax.nn.relu(jnp.einsum("bsi,bhi->bsh", x, jnp.einsum("bm,mhi->bhi", scale, W))
                              + (scale @ b)[:, None, :])
            return z, x, hid @ R.T + r

        def loss_fn(params, code, x, y):
            return jnp.mean((forward(params, code, x) - y) ** 2)

        def step(params, opt_state, key):
            key, sub = jax.random.split(key)
            code, x, y = sample(sub)
            loss, grads = jax.value_and_grad(loss_fn)(params, code, x, y)
            updates, opt_state = tx.update(grads, opt_state, params)
            return optax.apply_updates(params, updates), opt_state, key, loss

        self.step = jax.jit(step, donate_argnums=(0, 1))
        self.predict = jax.jit(forward)

    def run(self, steps: int) -> float:
        loss = None
        for _ in range(steps):
            self.params, self.opt_state, self.key, loss = self.step(self.params, self.opt_state, self.key)
        return float(loss.block_until_ready()) if loss is not None else float("nan")

    def r2(self, code, x, y) -> float:
        """Pooled within-task R² (``bindscale.studies.scaling.metrics.r2_within_task``), in float64 numpy."""
        pred = np.asarray(self.predict(self.params, self.jnp.asarray(code), self.jnp.asarray(x)), dtype=np.float64)
        y = np.asarray(y, dtype=np.float64)
        sst = ((y - y.mean(axis=-2, keepdims=True)) ** 2).sum()
        return float(1 - ((y - pred) ** 2).sum() / sst) if sst > 0 else float("nan")


_COMPILED: dict = {}


_COMPILED: dict = {}


def jax_throughput(req: dict) -> dict:
    """One wall-clock window of a hand-written JAX trial (the compiled trial is kept between requests):
    warm-up, then ``window_s`` seconds in chunks of ~0.1 s with a block after each. Same fields as
    ``reference_peer.throughput``."""
    key = (req["task"], req["width"], req["depth"], req["batch_tasks"], req.get("grad_clip"))
    if key not in _COMPILED:
        task = dict(np.load(req["task"]))
        _COMPILED[key] = JaxTrial(task, req["width"], req["depth"], req["batch_tasks"], req["lr"],
                                  req["weight_decay"], req.get("grad_clip"), seed=0)
    trial = _COMPILED[key]
    return warm_and_time(trial.run, req["warm_steps"], req["warm_s"], req["window_s"])

def jax_full_trial(req: dict) -> dict:
    """A whole trial as a sweep runs it: train, held-out R² at the evaluation steps, final in-distribution R²."""
    task = dict(np.load(req["task"]))
    trial = JaxTrial(task, req["width"], req["depth"], req["batch_tasks"], req["lr"], req["weight_decay"],
                     req.get("grad_clip"), req["seed"])
    done, steps, curve = 0, [], []
    t0 = time.perf_counter()
    for at in req["eval_steps"]:
        loss = trial.run(at - done)
        done = at
        steps.append(at)
        curve.append(trial.r2(task["held_code"], task["held_x"], task["held_y"]))
    return {"curve_steps": steps, "curve_r2_heldout": curve, "final_loss": loss,
            "r2_id": trial.r2(task["id_code"], task["id_x"], task["id_y"]), "train_eval_s": time.perf_counter() - t0}



def jax_serve() -> None:
    """Answer JSON requests, one per line on stdin (``op``: throughput or trial), one JSON line each."""
    import jax

    print(json.dumps({"ready": True, "jax": jax.__version__, "devices": str(jax.devices()),
                      "affinity": sorted(os.sched_getaffinity(0))}), flush=True)
    for line in sys.stdin:
        req = json.loads(line)
        out = jax_throughput(req) if req["op"] == "throughput" else jax_full_trial(req)
        print(json.dumps(out), flush=True)


# ============================================================================ bindscale side (child process)

#: (width, depth, stack, threads) → trial-steps/s last measured: sizes the next window's step count.
_BS_RATE: dict = {}


def bs_throughput(req: dict) -> dict:
    """One wall-clock window of bindscale's training (``run_group``, sampling included), in this process.

    ``run_group`` runs a fixed number of steps, so the window is sized from this shape's last measured
    rate (a 20-step calibration run the first time): ``warm`` steps (:data:`WARM_STEPS` or
    :data:`WARM_S` seconds' worth, at least 10) then ``window_s`` seconds' worth; the clock is
    ``run_group``'s progress call, made every step here, with this process's CPU time beside it. A
    stack's figure is trial-steps/s (its cost per trial). At 2 threads ``run_group`` first times this
    stack shape at 1 and 2 threads (once per shape and process, before step 1, not in the window).

    Raises:
        RuntimeError: ``run_group``'s progress calls no longer come once per step.
    """
    import torch

    import bindscale.studies.scaling.trial as bs_train
    from bindscale.studies.scaling.trial import run_group

    w, d, stack, threads = req["width"], req["depth"], req["stack"], req["threads"]
    torch.set_num_threads(threads)
    key = (w, d, stack, threads)

    def timed(steps: int):
        clock: list[tuple[int, float, float]] = []  # (trial-steps done, wall, CPU) at each progress call

        def progress(n: int) -> None:
            clock.append(((clock[-1][0] if clock else 0) + n, time.perf_counter(), time.process_time()))

        every, bs_train.PROGRESS_STEPS = bs_train.PROGRESS_STEPS, 1
        try:
            res = run_group([trial_config(w, d, steps, seed=s) for s in range(stack)], progress=progress)
        finally:
            bs_train.PROGRESS_STEPS = every
        if len(clock) != steps or clock[-1][0] != steps * stack:
            raise RuntimeError("run_group's progress calls changed: update bs_throughput's clock")
        return res[0].metrics, clock

    if key not in _BS_RATE:
        _, clock = timed(20)
        _BS_RATE[key] = 10 * stack / (clock[-1][1] - clock[9][1])
    rate = _BS_RATE[key] / stack  # steps/s of the stack
    warm = int(max(10, min(WARM_STEPS, rate * WARM_S)))
    window = int(max(5, rate * req["window_s"]))
    m, clock = timed(warm + window)
    start, end = clock[warm - 1], clock[-1]
    wall, cpu = end[1] - start[1], end[2] - start[2]
    _BS_RATE[key] = stack * window / wall
    fell = m.get("threads_fallback_step")
    used = f"{m['threads_used']}{'+s' if m['background_sampling'] else ''}{f'->1@{fell}' if fell is not None else ''}"
    return {"steps": window * stack, "wall_s": wall, "cpu_s": cpu, "steps_per_s": stack * window / wall,
            "steps_per_cpu_s": stack * window / cpu if cpu > 0 else None, "cpu_share": cpu / wall,
            "warm_steps": warm, "warm_s": start[1] - (clock[0][1] - (clock[1][1] - clock[0][1])),
            "threads_used": used}


def bs_serve() -> None:
    """bindscale's per-model side and the matmul peak, in a process pinned like the JAX peers."""
    import warnings

    import torch

    from common import matmul_peak

    warnings.filterwarnings("ignore", module="sklearn")
    print(json.dumps({"ready": True, "torch": torch.__version__, "affinity": sorted(os.sched_getaffinity(0))}),
          flush=True)
    for line in sys.stdin:
        req = json.loads(line)
        if req["op"] == "peak":
            out = {"gflops": matmul_peak(req["threads"], seconds=req["seconds"])}
        else:
            out = bs_throughput(req)
        print(json.dumps(out), flush=True)


# ============================================================================ driver
def cpu_description() -> dict:
    """CPU model, the SIMD / matrix-unit flags that decide the BLAS path, cores usable by this process."""
    model, flags = "unknown", set()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name") and model == "unknown":
                model = line.split(":", 1)[1].strip()
            elif line.startswith("flags") and not flags:
                flags = set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return {"model": model, "cores": len(os.sched_getaffinity(0)),
            **{f: f in flags for f in ("avx2", "avx512f", "avx512_bf16", "amx_tile", "amx_bf16", "amx_fp16")}}


def versions() -> dict:
    import importlib.metadata as md

    import torch

    out = {"torch": torch.__version__, "python": sys.version.split()[0]}
    for pkg in ("jax", "jaxlib", "optax"):
        try:
            out[pkg] = md.version(pkg)
        except md.PackageNotFoundError:
            out[pkg] = None
    return out


def load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def taskset(cpus: list[int]) -> list[str]:
    return ["taskset", "-c", ",".join(map(str, cpus))] if shutil.which("taskset") else []


def jax_env(threads: int) -> dict:
    env = dict(os.environ)
    if threads == 1:
        env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "") + " " + XLA_ONE_THREAD).strip()
    env["JAX_PLATFORMS"] = "cpu"
    return env


def cpus_for(threads: int, first: int = 0) -> list[int]:
    cores = sorted(os.sched_getaffinity(0))
    return [cores[(first + i) % len(cores)] for i in range(threads)]



def reference_env(threads: int) -> dict:
    """The reference's processes: JAX's thread settings, and wandb kept offline whatever its config says."""
    return jax_env(threads) | {"WANDB_MODE": "disabled", "WANDB_SILENT": "true"}


class Server:
    """A long-lived child process answering JSON lines, pinned with ``taskset`` to ``cpus``; idle (blocked
    on its stdin) while another side is timed. Its stderr goes to ``log`` (the reference logs there)."""

    def __init__(self, name: str, cmd: list[str], env: dict, cpus: list[int], log: Path):
        self.name, self.cpus, self.log = name, cpus, log
        self._err = open(log, "w")
        self.proc = subprocess.Popen(taskset(cpus) + cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self._err, text=True, env=env)
        self.hello = self._read()

    def _read(self) -> dict:
        line = self.proc.stdout.readline()
        if not line:
            tail = self.log.read_text()[-2000:] if self.log.exists() else ""
            raise RuntimeError(f"the {self.name} process died (exit {self.proc.wait()}):\n{tail}")
        return json.loads(line)

    def ask(self, req: dict) -> dict:
        self.proc.stdin.write(json.dumps(req) + "\n")
        self.proc.stdin.flush()
        return self._read()

    def close(self) -> None:
        try:
            self.proc.stdin.close()
            self.proc.wait(timeout=30)
        finally:
            self._err.close()


def start_servers(threads: list[int], ref: dict | None, tmp: Path) -> dict:
    """Per thread count: bindscale's process, the hand-written JAX peer and (with ``ref``) the reference,
    all pinned to the same cores (:func:`cpus_for`)."""
    servers = {}
    for t in threads:
        cpus = cpus_for(t)
        servers[("bs", t)] = Server(f"bindscale ({t} thread)", [sys.executable, str(HERE), "--bs-serve"],
                                    dict(os.environ), cpus, tmp / f"bs_t{t}.log")
        servers[("jax", t)] = Server(f"hand-written JAX ({t} thread)", [sys.executable, str(HERE), "--jax-serve"],
                                     jax_env(t), cpus, tmp / f"jax_t{t}.log")
        if ref:
            servers[("ref", t)] = Server(f"reference ({t} thread)",
                                         [ref["python"], str(HERE.parent / "reference_peer.py"),
                                          "--reference-dir", ref["dir"], "serve"],
                                         reference_env(t), cpus, tmp / f"ref_t{t}.log")
    return servers


SIDES = {"ref": "reference code", "jax": "hand-written JAX", "bs": "bindscale alone", f"bs_stack{STACK}": f"bindscale stack of {STACK}"}


def _summary(results: list[dict]) -> dict:
    """Median and per-pass range of a side's windows (steps per wall second, per CPU second, CPU share)."""
    rate = [r["steps_per_s"] for r in results]
    cpu = [r["steps_per_cpu_s"] for r in results if r["steps_per_cpu_s"]]
    share = [r["cpu_share"] for r in results]
    return {"steps_per_s": statistics.median(rate), "range": [min(rate), max(rate)],
            "steps_per_cpu_s": statistics.median(cpu) if cpu else None, "cpu_share": statistics.median(share),
            "cpu_share_range": [min(share), max(share)], "window_s": statistics.median(r["wall_s"] for r in results),
            "warm_steps": statistics.median(r["warm_steps"] for r in results), "passes": results}


def bench_per_model(shapes, repeat: int, window_s: float, tmp: Path, ref: dict | None, threads: list[int],
                    on_row=lambda rows, peaks: None) -> tuple[list[dict], dict]:
    """Per-model throughput of every side, every shape and thread count, in wall-clock windows.

    Each pass runs every case once, in reversed order on odd passes; around every window bindscale's
    pinned process of that thread count measures the fp32 matmul peak (``peak_before``, ``peak_after``
    in each pass's result). ``on_row`` gets the rows and peaks so far after each shape. Returns the
    rows and every peak sample per thread count.
    """
    task = export_task(trial_config(64, 2, 1), tmp / "per_model_task.npz")
    servers = start_servers(threads, ref, tmp)
    peaks: dict[int, list[float]] = {t: [] for t in threads}
    rows = []
    try:
        for w, d in shapes:
            base = {"op": "throughput", "width": w, "depth": d, "grad_clip": 1.0, "holdout": REF_TASK["holdout"],
                    "warm_steps": WARM_STEPS, "warm_s": WARM_S, "window_s": window_s, "seed": 0, **REF_TRAIN}
            cases = {}
            for t in threads:
                if ref:
                    cases[f"ref_t{t}"] = (("ref", t), base)
                cases[f"jax_t{t}"] = (("jax", t), base | {"task": task})
                cases[f"bs_t{t}"] = (("bs", t), base | {"stack": 1, "threads": t})
                cases[f"bs_stack{STACK}_t{t}"] = (("bs", t), base | {"stack": STACK, "threads": t})
            got = {k: [] for k in cases}
            for r in range(repeat):
                for name in (list(cases) if r % 2 == 0 else list(cases)[::-1]):
                    (side, t), req = cases[name]
                    peak = {"op": "peak", "threads": t, "seconds": PEAK_SAMPLE_S}
                    before = servers[("bs", t)].ask(peak)["gflops"]
                    res = servers[(side, t)].ask(req)
                    after = servers[("bs", t)].ask(peak)["gflops"]
                    peaks[t] += [before, after]
                    got[name].append(res | {"peak_before": before, "peak_after": after, "load": load()[0]})
            row = {"width": w, "depth": d, "load": load()[0]} | {k: _summary(v) for k, v in got.items()}
            for t in threads:
                row[f"bs_t{t}"]["threads_used"] = [p["threads_used"] for p in got[f"bs_t{t}"]]
                row[f"bs_stack{STACK}_t{t}"]["threads_used"] = [p["threads_used"] for p in got[f"bs_stack{STACK}_t{t}"]]
                for peer in ("ref", "jax") if ref else ("jax",):
                    # Each pass's ratio: the two sides timed within one pass over the cases.
                    each = [b["steps_per_s"] / p["steps_per_s"] for b, p in zip(got[f"bs_t{t}"], got[f"{peer}_t{t}"])]
                    row[f"ratio_{peer}_t{t}"] = {"median": statistics.median(each), "range": [min(each), max(each)],
                                                 "per_cpu_s": row[f"bs_t{t}"]["steps_per_cpu_s"]
                                                 / row[f"{peer}_t{t}"]["steps_per_cpu_s"]}
            rows.append(row)
            on_row(rows, peaks)
            print(f"  {w:>5} x {d} (load {row['load']}): " + "; ".join(
                f"{k} {row[k]['steps_per_s']:.3g} [{row[k]['range'][0]:.3g}-{row[k]['range'][1]:.3g}] "
                f"cpu {row[k]['cpu_share']:.2f}" for k in cases), flush=True)
    finally:
        for s in servers.values():
            s.close()
    return rows, peaks


def bound_fractions(rows: list[dict], peaks: dict[int, list[float]]) -> dict:
    """Training GFLOP/s of every side as a fraction of a peak that is at least every rate seen.

    The peak of ``t`` threads is the best of the matmul samples (before and after every window) and of
    every training window's GFLOP/s at ``t`` threads, any side: a fraction is <= 1 by construction, and
    ``peak_raised_by_training_t{t}`` says when a training window beat every matmul sample (then the
    matmul samples came from slower moments than that window). Sets ``peak_fraction`` in each side's
    summary; returns the peaks used.

    Raises:
        AssertionError: a fraction above 1 (it cannot be, by the construction above).
    """
    out = {}
    for t, samples in peaks.items():
        trained = [p["steps_per_s"] * step_flops(r["width"], r["depth"]) / 1e9
                   for r in rows for k, v in r.items() if k.endswith(f"_t{t}") and isinstance(v, dict) and "passes" in v
                   for p in v["passes"]]
        best_matmul = max(samples) if samples else 0.0
        used = max([best_matmul] + trained)
        out[f"fp32_peak_gflops_t{t}"] = used
        out[f"fp32_matmul_best_gflops_t{t}"] = best_matmul
        out[f"fp32_matmul_samples_t{t}"] = [min(samples), statistics.median(samples), max(samples)] if samples else None
        out[f"peak_raised_by_training_t{t}"] = used > best_matmul
        for r in rows:
            for k, v in r.items():
                if k.endswith(f"_t{t}") and isinstance(v, dict) and "passes" in v:
                    v["peak_fraction"] = v["steps_per_s"] * step_flops(r["width"], r["depth"]) / 1e9 / used
                    v["peak_fraction_range"] = [p["steps_per_s"] * step_flops(r["width"], r["depth"]) / 1e9 / used
                                                for p in (min(v["passes"], key=lambda p: p["steps_per_s"]),
                                                          max(v["passes"], key=lambda p: p["steps_per_s"]))]
                    assert v["peak_fraction_range"][1] <= 1.0 + 1e-9, (k, v["peak_fraction_range"], used)
    return out
def trial_config(width: int, depth: int, steps: int, seed: int = 0, holdout: float = 0.25, grad_clip=1.0,
                 n_evals: int = 1, eval_tasks: int = 8, probe_tasks: int = 8):
    from bindscale.studies.scaling.config import ModelConfig, TaskConfig, TrainConfig, TrialConfig

    return TrialConfig(task=TaskConfig(**(REF_TASK | {"holdout": holdout})),
                       model=ModelConfig(kind="mlp", width=width, depth=depth),
                       train=TrainConfig(steps=steps, grad_clip=grad_clip, n_evals=n_evals, eval_tasks=eval_tasks,
                                         probe_tasks=probe_tasks, probe_samples=2, precision="fp32", **REF_TRAIN),
                       seed=seed)


def export_task(trial, path: Path) -> str:
    """The trial's task as bindscale builds it (teacher, training combinations, evaluation sets) → ``.npz``."""
    from bindscale.core import seeding
    from bindscale.studies.scaling.trial import task_family

    if trial.task.teacher != "reference" or trial.task.encoding != "identity":
        raise ValueError("the JAX peer implements the reference teacher with the identity encoding")
    ht = task_family(trial)
    n = trial.train.eval_tasks
    held = ht.sample(n, seeding.generator(trial.seed, "heldout"), "heldout", cycle=True)
    test = ht.sample(n, seeding.generator(trial.seed, "test"))
    np.savez(path, W=ht.W.numpy(), b=ht.b.numpy(), R=ht.R.numpy(), r=ht.r.numpy(),
             train_mask=ht._masks["train"].numpy(), levels=ht.levels.numpy(), K=trial.task.K,
             samples_per_task=trial.task.samples_per_task,
             held_code=held.code.numpy(), held_x=held.x.numpy(), held_y=held.y.numpy(),
             id_code=test.code.numpy(), id_x=test.x.numpy(), id_y=test.y.numpy())
    return str(path)

def n_params(width: int, depth: int) -> int:
    dims = [REF_TASK["M"] + 16] + [width] * depth + [16]
    return sum(i * o + o for i, o in zip(dims[:-1], dims[1:]))


def step_flops(width: int, depth: int) -> float:
    return 6.0 * REF_TRAIN["batch_tasks"] * 16 * n_params(width, depth)


def _fmt(v) -> str:
    """A figure (or a list of them) to 3 significant digits; anything else as it prints."""
    if isinstance(v, float):
        return f"{v:.3g}"
    if isinstance(v, list) and v and all(isinstance(x, float) for x in v):
        return "[" + ", ".join(f"{x:.3g}" for x in v) + "]"
    return str(v)

def sweep_trials(steps: int, seeds: int, probe_tasks: int = 256):
    """The sweep's 12 trials. ``probe_tasks`` 256 (the scaling study's own setting) by default: the
    reference's ``run.py`` fits its probes too (its sweep files set ``mlp_probing``); the hand-written peer
    fits none, so against it bindscale does more work; 8 is the fewest a trial allows."""
    return [trial_config(w, 2, steps, seed=s, holdout=h, n_evals=5, eval_tasks=256, probe_tasks=probe_tasks)
            for w in (128, 256) for h in (0.25, 0.5) for s in range(seeds)]


def run_py_command(ref: dict, trial, steps: int) -> list[str]:
    """The reference's ``run.py`` command line for one of :func:`sweep_trials`, as its sweep files run it
    (``sweeps/scaling-model_hyperteacher.yaml``: ``configs/teacher.py``, ``mlp_probing`` on, ``log_every``
    1000) with the fields matched to bindscale's trial set: MLP width and depth, hold-out fraction,
    seed, steps (``num_train`` = batch × steps), gradient clip 1.0 (the reference's default is none) and
    the standard logger instead of wandb (no network)."""
    B = trial.train.batch_tasks
    flags = {"model.d_mlp": trial.model.width, "model.num_hidden_layers": trial.model.depth,
             "dataset.frac_ood": trial.task.holdout, "dataset.num_train": B * steps, "batch_size": B,
             "seed": trial.seed, "optimizer.learning_rate": trial.train.lr,
             "optimizer.weight_decay": trial.train.weight_decay,
             "optimizer.clip_by_global_norm": trial.train.grad_clip, "log_every": 1000,
             "callbacks.mlp_probing": True, "logger_types": "('standard',)"}
    return [ref["python"], str(Path(ref["dir"]) / "run.py"), "--config", str(Path(ref["dir"]) / "configs" / "teacher.py")] + [
        f"--config.{k}={v}" for k, v in flags.items()]


def _tree_cpu(root: int, seen: dict[int, float]) -> None:
    """Record in ``seen`` the CPU seconds (user + system, own threads) of ``root`` and its descendants now.

    Why sampled: ``bindscale run``'s pool workers are children of its fork server, which is killed when the
    driver exits rather than waiting for them, so ``wait4``'s usage of the driver leaves them out.
    """
    tick = os.sysconf("SC_CLK_TCK")
    stats = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            stats[int(entry)] = (int(fields[1]), (int(fields[11]) + int(fields[12])) / tick)
    tree, grew = {root}, True
    while grew:
        new = {pid for pid, (ppid, _) in stats.items() if ppid in tree and pid not in tree}
        tree |= new
        grew = bool(new)
    for pid in tree & stats.keys():
        seen[pid] = max(seen.get(pid, 0.0), stats[pid][1])


def _run_timed(cmd: list[str], env: dict, cwd: Path, log: Path, tree: bool = False,
               seen: dict[int, float] | None = None) -> tuple[float, float]:
    """Run ``cmd`` to the end; its wall seconds and CPU seconds (user + system, all its threads; with
    ``tree``, also its descendants', sampled every 0.2 s by :func:`_tree_cpu`: the last 0.2 s of a worker
    may be missed; ``seen``, where given, gets each process's CPU seconds by pid).

    Raises:
        subprocess.CalledProcessError: it exited non-zero (its output is in ``log``).
    """
    t0 = time.perf_counter()
    seen = {} if seen is None else seen
    with open(log, "w") as f:
        proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=f, stderr=subprocess.STDOUT)
        seen[proc.pid] = 0.0  # the first entry: the command's own process
        if tree:
            while proc.poll() is None:
                _tree_cpu(proc.pid, seen)
                time.sleep(0.2)
            proc.wait()
            own = None
        else:
            _, status, usage = os.wait4(proc.pid, 0)
            proc.returncode = os.waitstatus_to_exitcode(status)
            own = usage.ru_utime + usage.ru_stime
    if proc.returncode:
        raise subprocess.CalledProcessError(proc.returncode, cmd, output=log.read_text()[-2000:])
    return time.perf_counter() - t0, own if own is not None else sum(seen.values())


def chain(jobs: list[tuple[list[str], dict, Path, Path]], core: int | None, log: list) -> None:
    """Trials one after another, one fresh process each (start-up and compilation paid every time),
    pinned to ``core``; appends (wall s, CPU s, output file) per trial to ``log``."""
    for cmd, env, cwd, out in jobs:
        wall, cpu = _run_timed((taskset([core]) if core is not None else []) + cmd, env, cwd, out)
        log.append((wall, cpu, out))


def process_sweep(jobs: list, processes: int) -> tuple[float, list]:
    """``processes`` chains at once (each pinned to its own core); wall seconds and each trial's log."""
    chains = [jobs[i::processes] for i in range(processes)]
    cores = cpus_for(processes) if processes > 1 else [None]
    per_trial: list = []
    t0 = time.perf_counter()
    threads = [threading.Thread(target=chain, args=(c, core, per_trial)) for c, core in zip(chains, cores)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    if len(per_trial) != len(jobs):
        raise RuntimeError(f"{len(jobs) - len(per_trial)} sweep trial(s) failed; see the logs in {jobs[0][2]}")
    return time.perf_counter() - t0, per_trial


_OOD_R2 = re.compile(r"\bood_r2: (-?[0-9.]+(?:e-?[0-9]+)?)")


def reference_final_r2(log: Path) -> float | None:
    """The last ``ood_r2`` the reference's standard logger printed (its held-out R² at the end)."""
    found = _OOD_R2.findall(log.read_text())
    return float(found[-1]) if found else None
def bindscale_sweep(trials, tmp: Path, tag: str) -> tuple[float, dict]:
    """Wall seconds of ``bindscale run FILE`` (its own process: start-up, workers, records, report), its
    CPU seconds with its workers', and
    where they went: the workers' seconds of training, evaluation and probes summed from the records
    (``train_seconds`` etc.), the number of stacked jobs, and the wall seconds left for everything else
    (driver start-up and planning, worker start-up, the report, idle workers) with the workers' share
    taken out, assuming they ran in parallel on ``min(cores, jobs)`` workers."""
    from bindscale.core.config import StudyConfig
    from bindscale.store.rundir import study_yaml

    axes = {"width": sorted({t.model.width for t in trials}), "holdout": sorted({t.task.holdout for t in trials}),
            "seed": sorted({t.seed for t in trials})}
    study = StudyConfig(name="jax_peer_sweep", base=trials[0], grids=[axes])
    path = tmp / f"sweep_{tag}.yaml"
    path.write_text(study_yaml(study))
    out = tmp / f"run_{tag}"
    cmd = [sys.executable, "-m", "bindscale", "run", str(path), "--out", str(out)]
    per_pid: dict[int, float] = {}
    wall, cpu = _run_timed(cmd, dict(os.environ), tmp, tmp / f"run_{tag}.log", tree=True, seen=per_pid)
    driver_cpu = per_pid[next(iter(per_pid))]  # the driver (start-up, planning, progress, report)
    metrics = [json.loads(f.read_text())["metrics"] for f in sorted((out / "records").glob("*.json"))]
    sums = {k: sum(m.get(f"{k}_seconds", 0.0) for m in metrics) for k in ("train", "eval", "probe")}
    jobs = round(sum(1 / m.get("stack_size", 1) for m in metrics))
    workers = max(1, min(len(os.sched_getaffinity(0)), jobs))
    return wall, {"wall_s": wall, "cpu_s": cpu, "driver_cpu_s": driver_cpu, "other_processes_cpu_s": cpu - driver_cpu,
                  "jobs": jobs, "r2_heldout": [m.get("r2_heldout") for m in metrics],
                  "r2_heldout_taskmean": [m.get("r2_heldout_taskmean") for m in metrics], "workers": workers, **{f"{k}_worker_s": v for k, v in sums.items()},
                  "other_wall_s": wall - sum(sums.values()) / workers}


def bench_sweep(steps: int, seeds: int, repeat: int, tmp: Path, ref: dict | None, probe_tasks: int = 256) -> dict:
    """The 12-trial sweep of ``steps`` steps per trial: the reference's ``run.py`` (with ``ref``) and the
    hand-written peer, each a fresh process per trial in two chains pinned one per core, against
    ``bindscale run``; the sides alternate, ``repeat`` passes, medians and each pass's figures."""
    from bindscale.studies.scaling.trial import _eval_steps

    trials = sweep_trials(steps, seeds, probe_tasks)
    work = tmp / f"sweep_{steps}"
    work.mkdir()
    jobs: dict[str, list] = {"jax2": [], "ref2": []}
    for i, t in enumerate(trials):
        spec = {"task": export_task(t, work / f"task_{i}.npz"), "width": t.model.width, "depth": t.model.depth,
                "seed": t.seed, "grad_clip": t.train.grad_clip, "eval_steps": _eval_steps(steps, t.train.n_evals),
                "batch_tasks": t.train.batch_tasks, "lr": t.train.lr, "weight_decay": t.train.weight_decay}
        p = work / f"spec_{i}.json"
        p.write_text(json.dumps(spec))
        jobs["jax2"].append(([sys.executable, str(HERE), "--jax-trial", str(p)], jax_env(1), work, work / f"jax_{i}.log"))
        if ref:
            jobs["ref2"].append((run_py_command(ref, t, steps), reference_env(1), work, work / f"ref_{i}.log"))
    sides = (["ref2"] if ref else []) + ["jax2", "bs"]
    out = {"steps": steps, "trials": len(trials), "probe_tasks": probe_tasks,
           "start_up_dominated": steps < 1000, **{f"{s}_s": [] for s in sides}, **{f"{s}_cpu_s": [] for s in sides},
           "bindscale_breakdown": [], "load": []}
    for r in range(repeat):
        for side in (sides if r % 2 == 0 else sides[::-1]):
            if side == "bs":
                wall, parts = bindscale_sweep(trials, work, f"{r}")
                out["bs_s"].append(wall)
                out["bs_cpu_s"].append(parts["cpu_s"])
                out["bindscale_breakdown"].append(parts)
                out["bs_final_r2_heldout"] = parts["r2_heldout"]
                out["bs_final_r2_heldout_taskmean"] = parts["r2_heldout_taskmean"]
                extra = (f"{parts['jobs']} jobs on {parts['workers']} workers; worker-s train {parts['train_worker_s']:.1f}, "
                         f"eval {parts['eval_worker_s']:.1f}, probes {parts['probe_worker_s']:.1f}; driver "
                         f"{parts['driver_cpu_s']:.1f} CPU-s")
            else:
                wall, per = process_sweep(jobs[side], 2)
                out[f"{side}_s"].append(wall)
                out[f"{side}_cpu_s"].append(sum(c for _, c, _ in per))
                out[f"{side}_trial_s"] = statistics.median(w for w, _, _ in per)
                if side == "ref2":
                    r2 = [reference_final_r2(f) for _, _, f in per]
                    out["ref2_final_ood_r2"] = [x for x in r2 if x is not None]
                extra = f"median trial process {out[f'{side}_trial_s']:.1f} s"
            out["load"].append(load()[0])
            print(f"  sweep {steps} steps, {side}: {out[f'{side}_s'][-1]:.1f} s wall, {out[f'{side}_cpu_s'][-1]:.1f} CPU-s "
                  f"({extra}; load {out['load'][-1]})", flush=True)
    return out | sweep_ratios(out, ("ref2", "jax2") if ref else ("jax2",))


def sweep_ratios(out: dict, peers) -> dict:
    """bindscale's speed-up over each peer in a sweep's figures (``{side}_s`` and ``{side}_cpu_s``: each pass's
    wall and CPU seconds; ``bs`` is bindscale): ``ratio_{peer}`` the peer's median wall seconds over bindscale's,
    ``ratio_{peer}_cpu`` the same per CPU-second (the load taken out of the wall figures), and ``_each`` the
    ratio of each pass."""
    med = lambda k: statistics.median(out[k])  # noqa: E731
    ratios = {}
    for peer in peers:
        for unit in ("", "_cpu"):
            mine, theirs = out[f"bs{unit}_s"], out[f"{peer}{unit}_s"]
            ratios[f"ratio_{peer}{unit}"] = med(f"{peer}{unit}_s") / med(f"bs{unit}_s")
            ratios[f"ratio_{peer}{unit}_each"] = [a / b for a, b in zip(theirs, mine)]
    return ratios
def bench_curves(steps: int, n_evals: int, tmp: Path) -> dict:
    """Held-out R² curves of both sides at the shared configuration (1 thread each, no clipping)."""
    from bindscale.studies.scaling.trial import _eval_steps, run_group

    import torch

    trial = trial_config(256, 2, steps, grad_clip=None, n_evals=n_evals, eval_tasks=256, probe_tasks=8)
    task = export_task(trial, tmp / "curve_task.npz")
    server = Server("hand-written JAX (1 thread)", [sys.executable, str(HERE), "--jax-serve"], jax_env(1), cpus_for(1),
                    tmp / "curves_jax.log")
    try:
        jx = server.ask({"op": "trial", "task": task, "width": 256, "depth": 2, "seed": 0, "grad_clip": None,
                         "eval_steps": _eval_steps(steps, n_evals), **REF_TRAIN})
    finally:
        server.close()
    torch.set_num_threads(1)
    m = run_group([trial])[0].metrics
    return {"curve_config": "M=16 K=3 holdout 0.25, MLP 256x2, batch 128x16, lr 3e-4, wd 3e-3, no clip, fp32, seed 0",
            "curve_steps": m["curve_steps"], "curve_r2_heldout_bindscale": m["curve_r2_heldout"],
            "curve_r2_heldout_jax": jx["curve_r2_heldout"], "r2_id_bindscale": m["r2_id"], "r2_id_jax": jx["r2_id"]}


def table(title: str, header: list[str], rows: list[list]) -> None:
    from common import print_table  # imports torch: driver only

    print_table(title, header, rows)


def _positive(text: str) -> int:
    """argparse type: an integer >= 1."""
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"{n} is below 1")
    return n


def _shapes(text: str) -> list[tuple[int, int]]:
    """argparse type: ``WxD,WxD`` -> [(W, D), ...], each at least 1 (``64x2,256x4``)."""
    out = []
    for item in text.split(","):
        w, sep, d = item.strip().lower().partition("x")
        if not (sep and w.isdigit() and d.isdigit() and int(w) >= 1 and int(d) >= 1):
            raise argparse.ArgumentTypeError(f"{item!r} is not WIDTHxDEPTH (e.g. 64x2)")
        out.append((int(w), int(d)))
    return out


SECTIONS = ("per_model", "sweep", "curves")


def _sections(text: str) -> set[str]:
    """argparse type: comma-separated names from :data:`SECTIONS`."""
    names = set(filter(None, (s.strip() for s in text.split(","))))
    if unknown := names - set(SECTIONS):
        raise argparse.ArgumentTypeError(f"unknown section(s) {sorted(unknown)}; choose from {', '.join(SECTIONS)}")
    return names




def _step_list(text: str) -> list[int]:
    """argparse type: comma-separated step counts, each >= 1 (``100,1000``)."""
    return [_positive(x) for x in text.split(",") if x.strip()]


def _seconds(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not v > 0:
        raise argparse.ArgumentTypeError(f"{v} is not above 0")
    return v


def reference_setup(ap, args) -> dict | None:
    """``--reference-dir`` / ``--reference-python`` checked now (not after minutes of measuring): the
    checkout has ``run.py`` and ``configs/teacher.py``, and the Python imports jax, flax and optax."""
    if not (args.reference_dir or args.reference_python):
        return None
    if not (args.reference_dir and args.reference_python):
        ap.error("--reference-dir and --reference-python go together")
    d = args.reference_dir.resolve()
    for need in ("run.py", "configs/teacher.py", "compscale/experiment.py"):
        if not (d / need).is_file():
            ap.error(f"--reference-dir {d}: no {need} (a checkout of smonsays/scale-compositionality is needed)")
    probe = subprocess.run([str(args.reference_python), "-c", "import jax, jaxlib, flax, optax, ml_collections, absl, "
                            "wandb, einops, chex, jaxtyping; print(jax.__version__, jaxlib.__version__, flax.__version__, "
                            "optax.__version__)"], capture_output=True, text=True, env=reference_env(1))
    if probe.returncode:
        ap.error(f"--reference-python {args.reference_python}: cannot import the reference's dependencies:\n"
                 f"{probe.stderr.strip().splitlines()[-1] if probe.stderr.strip() else probe.returncode}")
    jax_v, jaxlib_v, flax_v, optax_v = probe.stdout.split()
    commit = subprocess.run(["git", "-C", str(d), "rev-parse", "HEAD"], capture_output=True, text=True)
    return {"dir": str(d), "python": str(args.reference_python), "jax": jax_v, "jaxlib": jaxlib_v, "flax": flax_v,
            "optax": optax_v, "commit": commit.stdout.strip() if commit.returncode == 0 else args.reference_commit}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="3 shapes, 2 passes, 3 s windows, one sweep pass")
    ap.add_argument("--smoke", action="store_true", help="tiny sizes: only checks that every figure is produced")
    ap.add_argument("--json", type=Path, help="write the figures to this JSON file")
    ap.add_argument("--reference-dir", type=Path, help="a checkout of smonsays/scale-compositionality (the "
                    "headline paper's code): run it as a peer")
    ap.add_argument("--reference-python", type=Path, help="a Python with the reference's dependencies (README)")
    ap.add_argument("--reference-commit", help="the checkout's commit, where it is no git work tree")
    ap.add_argument("--repeat", type=_positive, help="passes over the per-model cases (default 2 quick, 3 full)")
    ap.add_argument("--window", type=_seconds, help="seconds of each timed per-model window (default 3 quick, 5 full)")
    ap.add_argument("--shapes", type=_shapes, help="per-model shapes as WxD,WxD (default: the --quick or full grid)")
    ap.add_argument("--threads", type=_step_list, help="thread counts of the per-model section (default 1,2)")
    ap.add_argument("--sweep-steps", type=_step_list, help="steps per sweep trial, comma-separated (default 1000, "
                    "the figure a user meets; 100 is start-up dominated and labelled so)")
    ap.add_argument("--sweep-seeds", type=_positive, help="seeds per width and hold-out in the sweep (default 3: "
                    "12 trials; fewer for a short run on a busy machine)")
    ap.add_argument("--sweep-repeat", type=_positive, help="passes of the sweep (default 1 quick, 2 full)")
    ap.add_argument("--sweep-probe-tasks", type=_positive, default=256,
                    help="probe tasks of bindscale's sweep trials (default 256, the scaling study's own; the reference "
                    "fits its probes too, the hand-written peer none)")
    ap.add_argument("--skip", type=_sections, default=set(), help="comma-separated sections to skip: " + ", ".join(SECTIONS))
    ap.add_argument("--jax-serve", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--bs-serve", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--jax-trial", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.jax_serve:
        return jax_serve()
    if args.bs_serve:
        return bs_serve()
    if args.jax_trial:
        return print(json.dumps(jax_full_trial(json.loads(args.jax_trial.read_text()))))
    if args.json:  # refused now, not after minutes of measuring
        try:
            args.json.parent.mkdir(parents=True, exist_ok=True)
            args.json.touch()
        except OSError as e:
            where = next((p for p in args.json.parents if p.exists()), None)
            why = f"{where} is not a folder" if where is not None and not where.is_dir() else (e.strerror or str(e))
            ap.error(f"--json {args.json}: cannot write there ({why})")
    ref = reference_setup(ap, args)

    import importlib.util

    if missing := [m for m in ("jax", "optax") if importlib.util.find_spec(m) is None]:
        sys.exit(f"jax_peer: {' and '.join(missing)} not installed; install the bench extra first: "
                 "pip install -c constraints.txt -e '.[bench]'")
    import warnings

    import bindscale  # noqa: F401
    import torch

    torch.set_num_threads(1)  # the driver only exports tasks and waits
    warnings.filterwarnings("ignore", module="sklearn")

    t_start, c_start = time.perf_counter(), time.process_time()
    cores = len(os.sched_getaffinity(0))
    out: dict = {"cpu": cpu_description(), **versions(), "reference": ref, "quick": args.quick, "load_before": load(),
                 "uptime_before": _uptime(),
                 "jax_threads": f"1 thread: XLA_FLAGS='{XLA_ONE_THREAD}' + taskset to one core; "
                                "2 threads: taskset to two cores (XLA sizes its pool from the affinity)",
                 "bindscale_threads": "torch.set_num_threads(1 or 2) in a process pinned like the JAX peers (at 2, "
                                      "run_group uses 2 only where timed >10% faster per step; threads_used says "
                                      "what each window ran on); sweep: bindscale run's pinned one-thread workers",
                 "warm_steps": WARM_STEPS, "warm_s": WARM_S}
    print("machine:", json.dumps(out["cpu"]), "versions:", {k: out[k] for k in ("torch", "jax", "jaxlib", "optax")},
          "reference:", json.dumps(ref), "load:", out["load_before"], flush=True)
    if ref is None:
        print("no --reference-dir / --reference-python: the reference code's figures are left out", flush=True)
    if args.smoke:
        shapes, repeat, window, sweep_steps, seeds, curve_steps, sweep_repeat = [(64, 2), (PEAK_WIDTH, 2)], 1, 0.3, [20], 1, 20, 1
    elif args.quick:
        shapes, repeat, window, sweep_steps, seeds, curve_steps, sweep_repeat = (
            [(64, 2), (256, 4), (1024, 2)], 2, 3.0, [1000], 3, 200, 1)
    else:
        shapes = [(w, d) for w in (64, 128, 256, 512, 1024, 2048) for d in (2, 3, 4)]
        repeat, window, sweep_steps, seeds, curve_steps, sweep_repeat = 3, 5.0, [1000], 3, 1000, 2
    repeat, window = args.repeat or repeat, args.window or window
    sweep_steps, sweep_repeat = args.sweep_steps or sweep_steps, args.sweep_repeat or sweep_repeat
    seeds = args.sweep_seeds or seeds
    shapes = args.shapes or shapes
    threads = [t for t in (args.threads or [1, 2]) if t <= cores]
    out |= {"window_s": window, "repeat": repeat, "threads": threads}
    skip = args.skip

    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        rows: list[dict] = []
        if "per_model" not in skip:
            print(f"per-model throughput ({window:g} s windows, {repeat} passes)", flush=True)
            rows, peaks = bench_per_model(shapes, repeat, window, tmp, ref, threads, on_row=lambda rows, peaks: _save_partial(
                args.json, out | {"per_model": rows} | bound_fractions(rows, peaks)))
            out["per_model"] = rows
            out |= bound_fractions(rows, peaks)
            _save_partial(args.json, out)
        if "sweep" not in skip:
            out["sweeps"] = []
            for steps in sweep_steps:
                print(f"sweep, {steps} steps per trial", flush=True)
                out["sweeps"].append(bench_sweep(steps, seeds, sweep_repeat, tmp, ref, args.sweep_probe_tasks))
                _save_partial(args.json, out)
        if "curves" not in skip:
            print("learning curves", flush=True)
            out |= bench_curves(curve_steps, 2 if args.smoke else 5, tmp)

    peer = "ref" if ref else "jax"
    targets = {}
    if rows:
        for t in threads:
            out[f"ratio_{peer}_min_t{t}"] = min(r[f"ratio_{peer}_t{t}"]["median"] for r in rows)
            targets[f"per_model_vs_{peer}_t{t}"] = out[f"ratio_{peer}_min_t{t}"] >= 1.0
        wide = [r for r in rows if r["width"] >= PEAK_WIDTH]
        if wide and 1 in threads:
            out["peak_fraction_w1024"] = min(r["bs_t1"]["peak_fraction"] for r in wide)
            out["peak_fraction_w1024_peak_gflops"] = out["fp32_peak_gflops_t1"]
            targets["peak_75pct_w1024"] = out["peak_fraction_w1024"] >= 0.75
    for s in out.get("sweeps", []):
        if s["steps"] >= 1000 and f"ratio_{peer}2" in s:
            out[f"ratio_sweep_{peer}_{s['steps']}"] = s[f"ratio_{peer}2"]
            out[f"ratio_sweep_cpu_{peer}_{s['steps']}"] = s[f"ratio_{peer}2_cpu"]
            targets[f"sweep_3x_vs_{peer}_{s['steps']}_steps"] = s[f"ratio_{peer}2"] >= 3.0
            targets[f"sweep_3x_per_cpu_s_vs_{peer}_{s['steps']}_steps"] = s[f"ratio_{peer}2_cpu"] >= 3.0
    # One figure each for CI's check (.ci/run) and a quick look: the main peer (the reference where given).
    if rows:
        out["ratio_per_model_min"] = min(out[f"ratio_{peer}_min_t{t}"] for t in threads)
    if out.get("sweeps"):
        last = max(out["sweeps"], key=lambda s: s["steps"])
        out["ratio_sweep"] = last[f"ratio_{peer}2"]
        out["ratio_sweep_cpu"] = last[f"ratio_{peer}2_cpu"]
    out["ratio_peer"] = SIDES[peer]
    out["targets_met"] = targets
    out["load_after"] = load()
    out["uptime_after"] = _uptime()
    out["wall_seconds"] = time.perf_counter() - t_start
    out["driver_cpu_seconds"] = time.process_time() - c_start

    report(out)
    if args.json:  # its folder was made (and the path tried) at the start
        args.json.write_text(json.dumps(out, indent=1, default=str))


def _save_partial(path: Path | None, out: dict) -> None:
    """The figures so far, so that a run stopped in a later section keeps them (``"partial": true``)."""
    if path:
        path.write_text(json.dumps(out | {"partial": True, "load_now": load()}, indent=1, default=str))


def _uptime() -> str:
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    except OSError:
        return ""


def report(out: dict) -> None:
    """The run's tables on stdout."""
    rows = out.get("per_model", [])
    for t in out["threads"] if rows else []:
        sides = [k for k in ("ref", "jax", "bs", f"bs_stack{STACK}") if f"{k}_t{t}" in rows[0]]
        header = ["w x d"] + [f"{SIDES[k]} steps/s [range] cpu" for k in sides] + [
            f"bs/{p} [range] (per CPU-s)" for p in ("ref", "jax") if f"ratio_{p}_t{t}" in rows[0]] + ["peak frac bs"]
        body = []
        for r in rows:
            cells = [f"{r['width']}x{r['depth']}"]
            for k in sides:
                v = r[f"{k}_t{t}"]
                used = f" {'/'.join(sorted(set(v['threads_used'])))}" if "threads_used" in v and t > 1 else ""
                cells.append(f"{v['steps_per_s']:.3g} [{v['range'][0]:.3g}-{v['range'][1]:.3g}] {v['cpu_share']:.2f}{used}")
            for p in ("ref", "jax"):
                if f"ratio_{p}_t{t}" in r:
                    x = r[f"ratio_{p}_t{t}"]
                    cells.append(f"{x['median']:.2f} [{x['range'][0]:.2f}-{x['range'][1]:.2f}] ({x['per_cpu_s']:.2f})")
            cells.append(f"{r[f'bs_t{t}']['peak_fraction']:.2f}")
            body.append(cells)
        table(f"per-model steps/s per trial, {t} thread(s), batch 128 tasks x 16, fp32 - {out['cpu']['model']}, "
              f"load {out['load_before']} -> {out['load_after']}; peak {out[f'fp32_peak_gflops_t{t}']:.0f} GFLOP/s"
              f"{' (raised by a training window)' if out[f'peak_raised_by_training_t{t}'] else ''}", header, body)
    for s in out.get("sweeps", []):
        sides = [k for k in ("ref2", "jax2", "bs") if f"{k}_s" in s]
        table(f"sweep of {s['trials']} trials x {s['steps']} steps{' (start-up dominated)' if s['start_up_dominated'] else ''}"
              f" (wall s / CPU s, median)", [{"ref2": "reference run.py x2", "jax2": "hand-written JAX x2",
                                               "bs": "bindscale run"}[k] for k in sides]
              + [f"ratio vs {p} wall (per CPU-s)" for p in ("ref2", "jax2") if f"ratio_{p}" in s],
              [[f"{statistics.median(s[f'{k}_s']):.1f} / {statistics.median(s[f'{k}_cpu_s']):.0f}" for k in sides]
               + [f"{s[f'ratio_{p}']:.2f} {_fmt(s[f'ratio_{p}_each'])} ({s[f'ratio_{p}_cpu']:.2f} "
                  f"{_fmt(s[f'ratio_{p}_cpu_each'])})" for p in ("ref2", "jax2") if f"ratio_{p}" in s]])
    if "curve_steps" in out:
        table("held-out R² at the shared configuration", ["step", "bindscale", "hand-written JAX"],
              [[s, a, b] for s, a, b in zip(out["curve_steps"], out["curve_r2_heldout_bindscale"],
                                            out["curve_r2_heldout_jax"])])
    summary = {k: v for k, v in out.items() if k.startswith(("ratio_", "peak_fraction", "fp32_peak"))}
    print("\nsummary:", json.dumps(summary), "targets:", json.dumps(out["targets_met"]), f"({out['wall_seconds']:.0f} s)")


if __name__ == "__main__":
    main()
