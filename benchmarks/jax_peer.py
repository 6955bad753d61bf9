"""bindscale against a plain JAX + optax peer, side by side in one run (issue 19).

The JAX side is the hyperteacher MLP written the way a JAX user would write it: a
jitted step that samples its batch on the device, LeCun-normal init, MSE loss,
``optax.clip_by_global_norm`` + ``optax.adamw`` with bindscale's settings. Both sides
train on the same task (teacher weights, train/held-out split and evaluation sets are
built once by bindscale and handed to the JAX process), so curves are comparable.

Sections, each alternating the two sides and repeated (medians reported):

1. per-model throughput (steps/s per trial, both sides timed after compilation and 2
   warm-up steps; bindscale's figure with its warm-up included is reported beside):
   JAX with 1 and 2 threads against bindscale alone and in a stack of 4, each with 1
   and 2 torch threads, for MLP widths × depths;
2. the fp32 matmul peak of this machine (one and two threads) and each side's training
   GFLOP/s (6 × rows × parameters per step) as a fraction of the run's best peak; at
   widths ≥ 1024 the one-thread peak is also measured right after each one-thread
   measurement of a trial alone, and ``peak_fraction_w1024`` is that trial's fraction of it
   (median over passes); the fraction of the run's best is ``peak_fraction_w1024_vs_run_best``;
3. a sweep of 12 trials (widths 128/256, depth 2, 3 seeds × 2 hold-outs) run as a JAX
   user would (one process per trial, each paying its start-up and compilation; two
   such chains at once, one per core, and in the full run also one chain alone)
   against ``bindscale run`` on the same grid, with where bindscale's time went (its
   workers' training, evaluation and probe seconds from the records; the rest is
   start-up, planning, the workers' start, the report and idle time). 1000 steps per
   trial in the full run (the issue's figure), 100 in ``--quick``: there a JAX trial's
   process is mostly start-up and compilation (9.5 CPU-s measured for a width-256 trial
   at load ~5, 8.8 with 1 step), so the quick ratio is higher than at 1000 steps;
   ``--sweep-steps 1000`` measures the issue's figure beside the quick sections.
   The JAX trials fit no probes, so bindscale's sweep trials fit theirs on the fewest tasks
   a trial allows (8: same work on both sides); ``--sweep-probe-tasks 256`` gives the
   scaling study's own setting (12.5 worker-s of probes in the quick sweep, 2.76× measured);
4. learning curves of both sides at one shared configuration (verdicts issue, item 14:
   M=16, K=3, MLP 256 × 2, batch 128 tasks × 16, lr 3e-4, wd 3e-3, no clipping, hold-out 0.25);
5. where a target is missed, a torch.profiler table of bindscale's step at that shape.

JAX threads: XLA has no documented thread-count setting. Each JAX process gets
``XLA_FLAGS=--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1`` for one
thread (jax-ml/jax issues 743, 1539) and is pinned with ``taskset`` to one core (one
thread's worth) or two; XLA sizes its thread pool from the process's CPU affinity.

    python benchmarks/jax_peer.py --quick --json out.json   # < 5 min on 2 cores
    python benchmarks/jax_peer.py                            # widths 64-2048 × depths 2-4, 3 repeats

Needs the ``bench`` extra (``pip install -c constraints.txt -e '.[bench]'``).
The JAX code runs only in child processes, which never import torch.
"""

from __future__ import annotations

import argparse
import json
import os
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


def matmul_peak(threads: int, seconds: float) -> float:
    from common import matmul_peak as peak  # imports torch: driver only

    return peak(threads, seconds=seconds)
#: XLA flags of a one-thread JAX process (jax-ml/jax issues 743 and 1539).
XLA_ONE_THREAD = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
#: The shared configuration of the learning curves and of the per-model shapes (verdicts issue, item 14).
REF_TASK = {"M": 16, "K": 3, "holdout": 0.25}
REF_TRAIN = {"batch_tasks": 128, "lr": 3e-4, "weight_decay": 3e-3}
STACK = 4
#: Steps each side runs before its per-model timing starts: JAX's first compiles; bindscale's first samples
#: the first chunk of data and makes the step's first allocations (12-20 ms at 64 x 2 against ~1.6 ms a
#: step later). bindscale's clock is train_group's progress call, made every step here (PROGRESS_STEPS).
WARM_STEPS = 2
#: Repetitions of shapes whose step is under 1 GFLOP, as a multiple of ``--repeat``.
CHEAP_REPEATS = 2
#: Widths whose training speed is compared with the fp32 matmul peak (the issue's target: >= 75% of it).
PEAK_WIDTH = 1024


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


def jax_throughput(req: dict) -> dict:
    """Steps/s of one JAX trial, timed after compilation and :data:`WARM_STEPS` steps (a repeat reuses the
    compiled trial); ``compile_s`` includes those steps."""
    key = (req["task"], req["width"], req["depth"], req["batch_tasks"], req.get("grad_clip"))
    t0 = time.perf_counter()
    if key not in _COMPILED:
        task = dict(np.load(req["task"]))
        _COMPILED[key] = JaxTrial(task, req["width"], req["depth"], req["batch_tasks"], req["lr"],
                                  req["weight_decay"], req.get("grad_clip"), seed=0)
    trial = _COMPILED[key]
    trial.run(WARM_STEPS)  # compile (first time), then warm steps with the compiled code, as bindscale's side
    compile_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    trial.run(req["steps"])
    return {"steps_per_s": req["steps"] / (time.perf_counter() - t0), "compile_s": compile_s}


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

    print(json.dumps({"ready": True, "jax": jax.__version__, "devices": str(jax.devices())}), flush=True)
    for line in sys.stdin:
        req = json.loads(line)
        out = jax_throughput(req) if req["op"] == "throughput" else jax_full_trial(req)
        print(json.dumps(out), flush=True)


# ============================================================================ driver (torch side)

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


class JaxServer:
    """A long-lived JAX child process with ``threads`` threads (flags + pinning); idle while bindscale runs."""

    def __init__(self, threads: int):
        cmd = taskset(cpus_for(threads)) + [sys.executable, str(HERE), "--jax-serve"]
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                     env=jax_env(threads))
        self.hello = json.loads(self.proc.stdout.readline())

    def ask(self, req: dict) -> dict:
        self.proc.stdin.write(json.dumps(req) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the JAX process died (exit {self.proc.wait()})")
        return json.loads(line)

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


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
    from bindscale import seeding
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


def bs_throughput(width: int, depth: int, steps: int, stack: int, threads: int) -> float:
    """bindscale's training steps/s per trial (a stack's trial-steps/s: its cost per trial) over ``steps``
    steps after :data:`WARM_STEPS` (as JAX's side is timed), sampling included, read from ``train_group``'s
    progress calls; the figure over all its training seconds, warm-up included, goes to :data:`WITH_WARMUP`.

    At ``threads`` 2, ``train_group`` first times this stack shape at 1 and 2 threads (once per shape and
    process, ~1.5 s, not in the training seconds) and trains on 2 only where they are >10% faster.
    """
    import torch

    import bindscale.studies.scaling.trial as bs_train
    from bindscale.studies.scaling.trial import train_group

    clock: list[tuple[int, float]] = []  # (trial-steps done, time) at each progress call

    def progress(n: int) -> None:
        clock.append(((clock[-1][0] if clock else 0) + n, time.perf_counter()))

    torch.set_num_threads(threads)
    every, bs_train.PROGRESS_STEPS = bs_train.PROGRESS_STEPS, 1  # a progress call (the clock) after every step
    try:
        res = train_group([trial_config(width, depth, steps + WARM_STEPS, seed=s) for s in range(stack)],
                          progress=progress)
    finally:
        bs_train.PROGRESS_STEPS = every
    m = res[0].metrics
    start = clock[WARM_STEPS - 1]  # after the last warm-up step
    if start[0] != WARM_STEPS * stack or clock[-1][0] != (steps + WARM_STEPS) * stack:
        raise RuntimeError(f"train_group's progress calls changed ({start[0]} trial-steps after step {WARM_STEPS}): "
                           "update bs_throughput's clock")
    key = (width, depth, stack, threads)
    fell = m.get("threads_fallback_step")
    THREADS_USED.setdefault(key, []).append(f"{m['threads_used']}{'+s' if m['background_sampling'] else ''}"
                                            f"{f'->1@{fell}' if fell is not None else ''}")
    WITH_WARMUP.setdefault(key, []).append((steps + WARM_STEPS) / m["train_seconds"])
    return stack * steps / (clock[-1][1] - start[1])  # trial-steps/s: a stack's cost per trial


#: (width, depth, stack, threads asked) → what each repetition's step ran on: intra-op threads, "+s" where
#: the next chunk of data was sampled on the idle core (train_group's choices, per process and shape),
#: "->1@N" where it fell back to one thread from step N (bindscale.threadwatch: the machine turned busy).
THREADS_USED: dict[tuple, list[str]] = {}
#: The same key → each repetition's steps/s over all of train_group's training seconds (warm-up included).
WITH_WARMUP: dict[tuple, list[float]] = {}


def n_params(width: int, depth: int) -> int:
    dims = [REF_TASK["M"] + 16] + [width] * depth + [16]
    return sum(i * o + o for i, o in zip(dims[:-1], dims[1:]))


def step_flops(width: int, depth: int) -> float:
    return 6.0 * REF_TRAIN["batch_tasks"] * 16 * n_params(width, depth)


def planned_stack(width: int, depth: int, n: int = STACK) -> int:
    """The stack size bindscale's planner picks on this machine for ``n`` trials of this shape."""
    from bindscale.sweep import MAX_STACK, measured_stack_cap

    return measured_stack_cap([trial_config(width, depth, 100, seed=s) for s in range(n)], min(n, MAX_STACK))


def _fmt(v) -> str:
    """A figure (or a list of them) to 3 significant digits; anything else as it prints."""
    if isinstance(v, float):
        return f"{v:.3g}"
    if isinstance(v, list) and v and all(isinstance(x, float) for x in v):
        return "[" + ", ".join(f"{x:.3g}" for x in v) + "]"
    return str(v)


def bench_per_model(shapes, repeat: int, seconds: float, peak1: float, tmp: Path) -> list[dict]:
    """Per-model steps/s of both sides, every shape, alternating sides and reversing the order each repeat.

    bindscale: one trial alone, a fixed stack of :data:`STACK`, and the stack its planner picks for
    STACK such trials here (timed now; 1 where no stack pays). Peak of the one-thread matmul is
    re-measured after each shape (the run's best is the reference: load only ever lowers it).
    """
    task = export_task(trial_config(64, 2, 1), tmp / "per_model_task.npz")
    servers = {1: JaxServer(1), 2: JaxServer(2)}
    rows = []
    try:
        for w, d in shapes:
            # Enough steps for ~`seconds` at half the one-thread peak (at least 30, 10 for > 10 GFLOP steps:
            # warm-up amortised; at most 400).
            low = 10 if step_flops(w, d) > 1e10 else 30
            steps = int(max(low, min(400, seconds * 0.5 * peak1 * 1e9 / step_flops(w, d))))
            req = {"op": "throughput", "task": task, "width": w, "depth": d, "steps": steps, "grad_clip": 1.0,
                   **REF_TRAIN}
            planned = planned_stack(w, d)
            cases = {f"jax_t{t}": (lambda t=t: servers[t].ask(req)["steps_per_s"]) for t in (1, 2)}
            for t in (1, 2):
                cases[f"bs_t{t}"] = lambda t=t: bs_throughput(w, d, steps, 1, t)
                cases[f"bs_stack{STACK}_t{t}"] = lambda t=t: bs_throughput(w, d, max(3, steps // STACK), STACK, t)
                if planned not in (1, STACK):
                    cases[f"bs_planned_t{t}"] = lambda t=t: bs_throughput(w, d, max(3, steps // planned), planned, t)
            adjacent: list[tuple[float, float]] = []  # (bindscale 1 thread, the peak measured right after it)
            if w >= PEAK_WIDTH:
                def alone_then_peak(run=cases["bs_t1"]):
                    adjacent.append((run(), matmul_peak(1, seconds=0.5)))
                    return adjacent[-1][0]

                cases["bs_t1"] = alone_then_peak
            got = {k: [] for k in cases}
            # Small shapes: each measurement is short and this machine's speed wanders by up to ~1.8x over
            # seconds, so they get CHEAP_REPEATS times the repetitions (at little cost).
            reps = repeat * (CHEAP_REPEATS if step_flops(w, d) < 1e9 else 1)
            for r in range(reps):
                for name in (list(cases) if r % 2 == 0 else list(cases)[::-1]):
                    got[name].append(cases[name]())
            row = {"width": w, "depth": d, "steps": steps, "repeats": reps, "load": load()[0], "planned_stack": planned,
                   "bs_threads_used": {f"stack{n}_t{t}": THREADS_USED.get((w, d, n, t)) for n in (1, STACK)
                                       for t in (1, 2)},
                   "bs_incl_warmup": {f"stack{n}_t{t}": statistics.median(WITH_WARMUP[(w, d, n, t)])
                                      for n in (1, STACK) for t in (1, 2)}}
            row |= {k: statistics.median(v) for k, v in got.items()}
            for t in (1, 2):
                if planned in (1, STACK):
                    row[f"bs_planned_t{t}"] = row[f"bs_t{t}"] if planned == 1 else row[f"bs_stack{STACK}_t{t}"]
                row[f"ratio_t{t}"] = row[f"bs_t{t}"] / row[f"jax_t{t}"]
                # Each repetition's ratio (the two sides measured within one pass over the cases): the spread.
                row[f"ratio_t{t}_each"] = [b / j for b, j in zip(got[f"bs_t{t}"], got[f"jax_t{t}"])]
                row[f"ratio_stack_t{t}"] = row[f"bs_stack{STACK}_t{t}"] / row[f"jax_t{t}"]
                row[f"stack_vs_alone_t{t}"] = row[f"bs_stack{STACK}_t{t}"] / row[f"bs_t{t}"]
                row[f"planned_vs_alone_t{t}"] = row[f"bs_planned_t{t}"] / row[f"bs_t{t}"]
            if adjacent:
                # A trial alone at one thread against the one-thread peak measured right after it, per pass.
                row["peak_fraction_pass_t1"] = [bs * step_flops(w, d) / 1e9 / p for bs, p in adjacent]
                row["peak_fraction_paired_t1"] = statistics.median(row["peak_fraction_pass_t1"])
            row["peak_gflops_t1_after"] = matmul_peak(1, seconds=1.0)
            rows.append(row)
            print(f"  {w:>5} x {d}: " + ", ".join(f"{k} {_fmt(v)}" for k, v in row.items() if k not in ("width", "depth")),
                  flush=True)
    finally:
        for s in servers.values():
            s.close()
    return rows


def sweep_trials(steps: int, seeds: int, probe_tasks: int = 8):
    """The sweep's 12 trials. ``probe_tasks`` 8 (the smallest a trial allows) by default: the JAX trials fit
    no probes, so the ratio compares the same work; 256 is the scaling study's own setting."""
    return [trial_config(w, 2, steps, seed=s, holdout=h, n_evals=5, eval_tasks=256, probe_tasks=probe_tasks)
            for w in (128, 256) for h in (0.25, 0.5) for s in range(seeds)]


def jax_chain(specs: list[Path], core: int | None, log: list) -> None:
    """Trials one after another, one fresh JAX process each (start-up and compilation paid every time)."""
    for spec in specs:
        cmd = (taskset([core]) if core is not None else []) + [sys.executable, str(HERE), "--jax-trial", str(spec)]
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, env=jax_env(1), stdout=subprocess.DEVNULL)
        log.append(time.perf_counter() - t0)


def jax_sweep(specs: list[Path], processes: int) -> tuple[float, list[float]]:
    chains = [specs[i::processes] for i in range(processes)]
    cores = cpus_for(processes) if processes > 1 else [None]
    per_trial: list[float] = []
    t0 = time.perf_counter()
    threads = [threading.Thread(target=jax_chain, args=(c, core, per_trial)) for c, core in zip(chains, cores)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    return time.perf_counter() - t0, per_trial


def bindscale_sweep(trials, tmp: Path, tag: str) -> tuple[float, dict]:
    """Wall seconds of ``bindscale run FILE`` (its own process: start-up, workers, records, report), and
    where they went: the workers' seconds of training, evaluation and probes summed from the records
    (``train_seconds`` etc.), the number of stacked jobs, and the wall seconds left for everything else
    (driver start-up and planning, worker start-up, the report, idle workers) with the workers' share
    taken out, assuming they ran in parallel on ``min(cores, jobs)`` workers."""
    from bindscale.config import StudyConfig
    from bindscale.plan import study_yaml

    axes = {"width": sorted({t.model.width for t in trials}), "holdout": sorted({t.task.holdout for t in trials}),
            "seed": sorted({t.seed for t in trials})}
    study = StudyConfig(name="jax_peer_sweep", base=trials[0], grids=[axes])
    path = tmp / f"sweep_{tag}.yaml"
    path.write_text(study_yaml(study))
    out = tmp / f"run_{tag}"
    cmd = [sys.executable, "-m", "bindscale", "run", str(path), "--out", str(out)]
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    metrics = [json.loads(f.read_text())["metrics"] for f in sorted((out / "records").glob("*.json"))]
    sums = {k: sum(m.get(f"{k}_seconds", 0.0) for m in metrics) for k in ("train", "eval", "probe")}
    jobs = round(sum(1 / m.get("stack_size", 1) for m in metrics))
    workers = max(1, min(len(os.sched_getaffinity(0)), jobs))
    return wall, {"wall_s": wall, "jobs": jobs, "workers": workers, **{f"{k}_worker_s": v for k, v in sums.items()},
                  "other_wall_s": wall - sum(sums.values()) / workers}


def bench_sweep(steps: int, seeds: int, repeat: int, alone: bool, tmp: Path, probe_tasks: int = 8) -> dict:
    trials = sweep_trials(steps, seeds, probe_tasks)
    from bindscale.studies.scaling.trial import _eval_steps

    specs = []
    for i, t in enumerate(trials):
        spec = {"task": export_task(t, tmp / f"sweep_task_{i}.npz"), "width": t.model.width, "depth": t.model.depth,
                "seed": t.seed, "grad_clip": t.train.grad_clip, "eval_steps": _eval_steps(steps, t.train.n_evals),
                "batch_tasks": t.train.batch_tasks, "lr": t.train.lr, "weight_decay": t.train.weight_decay}
        p = tmp / f"sweep_spec_{i}.json"
        p.write_text(json.dumps(spec))
        specs.append(p)
    out = {"sweep_trials": len(trials), "sweep_steps": steps, "sweep_probe_tasks": probe_tasks, "jax_two_process_s": [], "bindscale_s": [],
           "jax_one_process_s": [], "jax_trial_process_s": [], "bindscale_breakdown": []}
    for r in range(repeat):
        order = ["jax2", "bs"] if r % 2 == 0 else ["bs", "jax2"]
        if alone:
            order.append("jax1")
        for side in order:
            if side == "bs":
                wall, parts = bindscale_sweep(trials, tmp, f"{r}")
                out["bindscale_s"].append(wall)
                out["bindscale_breakdown"].append(parts)
                print(f"  sweep bs: {parts['jobs']} jobs on {parts['workers']} workers; worker-s train "
                      f"{parts['train_worker_s']:.1f}, eval {parts['eval_worker_s']:.1f}, probes "
                      f"{parts['probe_worker_s']:.1f}; else (start-up, planning, workers' start, report, idle) "
                      f"~{parts['other_wall_s']:.1f} s wall", flush=True)
            else:
                wall, per = jax_sweep(specs, 2 if side == "jax2" else 1)
                out["jax_two_process_s" if side == "jax2" else "jax_one_process_s"].append(wall)
                out["jax_trial_process_s"] += per
            print(f"  sweep {side}: {out[{'bs': 'bindscale_s', 'jax2': 'jax_two_process_s', 'jax1': 'jax_one_process_s'}[side]][-1]:.1f} s"
                  f" (load {load()[0]})", flush=True)
    med = lambda k: statistics.median(out[k]) if out[k] else None  # noqa: E731
    out["ratio_sweep"] = med("jax_two_process_s") / med("bindscale_s")
    if alone:
        out["ratio_sweep_vs_one_process"] = med("jax_one_process_s") / med("bindscale_s")
    out["jax_trial_process_median_s"] = med("jax_trial_process_s")
    return out


def bench_curves(steps: int, n_evals: int, tmp: Path) -> dict:
    """Held-out R² curves of both sides at the shared configuration (1 thread each, no clipping)."""
    from bindscale.studies.scaling.trial import _eval_steps, train_group

    import torch

    trial = trial_config(256, 2, steps, grad_clip=None, n_evals=n_evals, eval_tasks=256, probe_tasks=8)
    task = export_task(trial, tmp / "curve_task.npz")
    server = JaxServer(1)
    try:
        jx = server.ask({"op": "trial", "task": task, "width": 256, "depth": 2, "seed": 0, "grad_clip": None,
                         "eval_steps": _eval_steps(steps, n_evals), **REF_TRAIN})
    finally:
        server.close()
    torch.set_num_threads(1)
    m = train_group([trial])[0].metrics
    return {"curve_config": "M=16 K=3 holdout 0.25, MLP 256x2, batch 128x16, lr 3e-4, wd 3e-3, no clip, fp32, seed 0",
            "curve_steps": m["curve_steps"], "curve_r2_heldout_bindscale": m["curve_r2_heldout"],
            "curve_r2_heldout_jax": jx["curve_r2_heldout"], "r2_id_bindscale": m["r2_id"], "r2_id_jax": jx["r2_id"]}


def profile_step(width: int, depth: int, threads: int, stack: int = 1, steps: int | None = None, top: int = 10) -> list[dict]:
    """Where bindscale's training step spends its time at this shape: torch.profiler's top ops by self CPU time."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    from bindscale.studies.scaling.trial import train_group

    torch.set_num_threads(threads)
    steps = steps or max(20, min(300, int(3e10 / step_flops(width, depth))))  # training, not evaluation, dominates
    trials = [trial_config(width, depth, steps, seed=s) for s in range(stack)]
    train_group(trials)  # warm
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        train_group(trials)
    ev = sorted(prof.key_averages(), key=lambda e: e.self_cpu_time_total, reverse=True)
    total = sum(e.self_cpu_time_total for e in ev) or 1
    return [{"op": e.key, "self_ms": round(e.self_cpu_time_total / 1e3, 2), "share": round(e.self_cpu_time_total / total, 3),
             "calls": e.count} for e in ev[:top]]


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


SECTIONS = ("sweep", "curves")


def _sections(text: str) -> set[str]:
    """argparse type: comma-separated names from :data:`SECTIONS`."""
    names = set(filter(None, (s.strip() for s in text.split(","))))
    if unknown := names - set(SECTIONS):
        raise argparse.ArgumentTypeError(f"unknown section(s) {sorted(unknown)}; choose from {', '.join(SECTIONS)}")
    return names


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="reduced sizes (< 5 min on 2 cores)")
    ap.add_argument("--smoke", action="store_true", help="tiny sizes: only checks that every figure is produced")
    ap.add_argument("--json", type=Path, help="write the figures to this JSON file")
    ap.add_argument("--repeat", type=_positive, help="repetitions of each per-model measurement (default 2 quick, "
                    f"3 full; shapes under 1 GFLOP a step get {CHEAP_REPEATS}x)")
    ap.add_argument("--shapes", type=_shapes, help="per-model shapes as WxD,WxD (default: the --quick or full grid)")
    ap.add_argument("--sweep-steps", type=_positive, help="steps per sweep trial (default 100 quick, 1000 full, 20 smoke; "
                    "the issue's sweep figure is for 1000: `--quick --sweep-steps 1000` measures it; that adds "
                    "12 x 900 trial-steps per side, ~1-4 min on 2 quiet cores)")
    ap.add_argument("--sweep-probe-tasks", type=_positive, default=8,
                    help="probe tasks of bindscale's sweep trials (default 8, the smallest: the JAX trials fit no "
                    "probes, so the ratio compares the same work; 256 adds the scaling study's own probe fitting)")
    ap.add_argument("--skip", type=_sections, default=set(), help="comma-separated sections to skip: sweep, curves")
    ap.add_argument("--no-profile", action="store_true", help="skip the profile of missed targets")
    ap.add_argument("--jax-serve", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--jax-trial", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.json:  # refused now, not after minutes of measuring
        try:
            args.json.parent.mkdir(parents=True, exist_ok=True)
            args.json.touch()
        except OSError as e:
            where = next((p for p in args.json.parents if p.exists()), None)
            why = f"{where} is not a folder" if where is not None and not where.is_dir() else (e.strerror or str(e))
            ap.error(f"--json {args.json}: cannot write there ({why})")
    if args.jax_serve:
        return jax_serve()
    if args.jax_trial:
        return print(json.dumps(jax_full_trial(json.loads(args.jax_trial.read_text()))))

    import importlib.util

    if missing := [m for m in ("jax", "optax") if importlib.util.find_spec(m) is None]:
        sys.exit(f"jax_peer: {' and '.join(missing)} not installed; install the bench extra first: "
                 "pip install -c constraints.txt -e '.[bench]'")
    import warnings

    import bindscale  # noqa: F401
    import torch  # noqa: F401

    warnings.filterwarnings("ignore", module="sklearn")  # probes on the tiny evaluation sets

    t_start = time.perf_counter()
    out: dict = {"cpu": cpu_description(), **versions(), "quick": args.quick, "load_before": load(),
                 "jax_threads": f"1 thread: XLA_FLAGS='{XLA_ONE_THREAD}' + taskset to one core; "
                                "2 threads: taskset to two cores (XLA sizes its pool from the affinity)",
                 "bindscale_threads": ("torch.set_num_threads(1 or 2) in one process (at 2, train_group uses 2 only "
                                       "where timed >10% faster per step, per stack shape); sweep: bindscale run defaults"),
                 "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY")}
    print("machine:", json.dumps(out["cpu"]), "versions:", {k: out[k] for k in ("torch", "jax", "jaxlib", "optax")},
          "load:", out["load_before"], flush=True)
    if args.smoke:
        shapes, repeat, secs, sweep_steps, seeds, curve_steps, sweep_repeat = [(64, 2), (PEAK_WIDTH, 2)], 1, 0.2, 20, 1, 20, 1
    elif args.quick:
        shapes, repeat, secs, sweep_steps, seeds, curve_steps, sweep_repeat = (
            [(64, 2), (256, 4), (1024, 2)], 2, 0.5, 100, 3, 200, 1)
    else:
        shapes = [(w, d) for w in (64, 128, 256, 512, 1024, 2048) for d in (2, 3, 4)]
        repeat, secs, sweep_steps, seeds, curve_steps, sweep_repeat = 3, 2.0, 1000, 3, 1000, 2
    repeat = args.repeat or repeat
    sweep_steps = args.sweep_steps or sweep_steps
    shapes = args.shapes or shapes
    skip = args.skip

    peak_s = 0.5 if args.smoke else 1.5
    out["fp32_peak_gflops_t1"] = matmul_peak(1, seconds=peak_s)
    out["fp32_peak_gflops_t2"] = matmul_peak(2, seconds=peak_s) if out["cpu"]["cores"] >= 2 else None
    print(f"fp32 matmul peak: {out['fp32_peak_gflops_t1']:.0f} GFLOP/s (1 thread), "
          f"{out['fp32_peak_gflops_t2'] or float('nan'):.0f} (2 threads)", flush=True)

    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        print("per-model throughput (steps/s per trial)", flush=True)
        rows = bench_per_model(shapes, repeat, secs, out["fp32_peak_gflops_t1"], tmp)
        out["per_model"] = rows
        if "sweep" not in skip:
            print("sweep", flush=True)
            out |= bench_sweep(sweep_steps, seeds, sweep_repeat, alone=not (args.quick or args.smoke), tmp=tmp,
                               probe_tasks=args.sweep_probe_tasks)
        if "curves" not in skip:
            print("learning curves", flush=True)
            out |= bench_curves(curve_steps, 2 if args.smoke else 5, tmp)

    # The best one-thread peak seen in the run (start and after each shape): load only lowers it.
    out["fp32_peak_gflops_t1_samples"] = [out["fp32_peak_gflops_t1"]] + [r["peak_gflops_t1_after"] for r in rows]
    out["fp32_peak_gflops_t1"] = max(out["fp32_peak_gflops_t1_samples"])
    if out["fp32_peak_gflops_t2"]:
        out["fp32_peak_gflops_t2"] = max(out["fp32_peak_gflops_t2"], matmul_peak(2, seconds=peak_s))
    for t in (1, 2):
        out[f"ratio_per_model_min_t{t}"] = min(r[f"ratio_t{t}"] for r in rows)
        out[f"stack_vs_alone_min_t{t}"] = min(r[f"stack_vs_alone_t{t}"] for r in rows)
        out[f"planned_vs_alone_min_t{t}"] = min(r[f"planned_vs_alone_t{t}"] for r in rows)
    out["ratio_per_model_min"] = min(out["ratio_per_model_min_t1"], out["ratio_per_model_min_t2"])
    for r in rows:  # training GFLOP/s as a fraction of the same run's matmul peak
        for t in (1, 2):
            peak = out[f"fp32_peak_gflops_t{t}"] or float("nan")
            best = max(r[f"bs_t{t}"], r[f"bs_stack{STACK}_t{t}"])
            r[f"peak_fraction_bs_t{t}"] = best * step_flops(r["width"], r["depth"]) / 1e9 / peak
            r[f"peak_fraction_jax_t{t}"] = r[f"jax_t{t}"] * step_flops(r["width"], r["depth"]) / 1e9 / peak
    wide = [r for r in rows if r["width"] >= PEAK_WIDTH]
    # The target's figure: training GFLOP/s over the matmul peak measured right after it (median over
    # passes). Beside it, over the run's best peak, which mixes a fast moment's peak with training timed
    # at another (this machine's speed wanders by up to ~1.8x over seconds).
    out["peak_fraction_w1024"] = min(r["peak_fraction_paired_t1"] for r in wide) if wide else None
    out["peak_fraction_w1024_vs_run_best"] = min(r["peak_fraction_bs_t1"] for r in wide) if wide else None

    targets = {"per_model_t1": out["ratio_per_model_min_t1"] >= 1.0, "per_model_t2": out["ratio_per_model_min_t2"] >= 1.0,
               # The planner's stacks (what a run trains), within 5% (the planner's own margin) of a trial alone.
               "planned_stack_never_slower": min(out["planned_vs_alone_min_t1"], out["planned_vs_alone_min_t2"]) >= 0.95}
    if "ratio_sweep" in out:
        targets["sweep_3x"] = out["ratio_sweep"] >= 3.0
    if wide:
        targets["peak_75pct_w1024"] = out["peak_fraction_w1024"] >= 0.75
    out["targets_met"] = targets
    if not args.no_profile and not args.smoke and not all(targets.values()):
        worst = min(rows, key=lambda r: min(r["ratio_t1"], r["ratio_t2"]))
        t = 1 if worst["ratio_t1"] <= worst["ratio_t2"] else 2
        out["profile"] = {"width": worst["width"], "depth": worst["depth"], "threads": t,
                          "top_ops": profile_step(worst["width"], worst["depth"], t)}
    out["load_after"] = load()
    out["wall_seconds"] = time.perf_counter() - t_start

    table(f"per-model steps/s per trial, batch 128 tasks x 16, fp32 — {out['cpu']['model']}, load {out['load_before']}"
          f" -> {out['load_after']}",
          ["w x d", "JAX 1t", "bs 1t", f"bs x{STACK} 1t", "planned", "bs plan 1t", "ratio 1t", "JAX 2t", "bs 2t",
           f"bs x{STACK} 2t", "bs plan 2t", "ratio 2t", "peak frac bs 1t", "peak frac JAX 1t"],
          [[f"{r['width']}x{r['depth']}", r["jax_t1"], r["bs_t1"], r[f"bs_stack{STACK}_t1"], r["planned_stack"],
            r["bs_planned_t1"], r["ratio_t1"], r["jax_t2"], r["bs_t2"], r[f"bs_stack{STACK}_t2"], r["bs_planned_t2"],
            r["ratio_t2"], r["peak_fraction_bs_t1"], r["peak_fraction_jax_t1"]] for r in rows])
    if "ratio_sweep" in out:
        table(f"sweep of {out['sweep_trials']} trials x {out['sweep_steps']} steps (wall s, median)",
              ["JAX 2 processes", "JAX 1 process", "bindscale run", "ratio (vs 2 proc)", "JAX s/trial process"],
              [[statistics.median(out["jax_two_process_s"]),
                statistics.median(out["jax_one_process_s"]) if out["jax_one_process_s"] else "-",
                statistics.median(out["bindscale_s"]), out["ratio_sweep"], out["jax_trial_process_median_s"]]])
    if "curve_steps" in out:
        table("held-out R² at the shared configuration", ["step", "bindscale", "JAX"],
              [[s, a, b] for s, a, b in zip(out["curve_steps"], out["curve_r2_heldout_bindscale"],
                                            out["curve_r2_heldout_jax"])])
    if "profile" in out:
        p = out["profile"]
        table(f"profile: bindscale {p['width']}x{p['depth']}, {p['threads']} thread(s), top ops by self CPU time",
              ["op", "self ms", "share", "calls"], [[o["op"], o["self_ms"], o["share"], o["calls"]] for o in p["top_ops"]])
    summary = {k: out.get(k) for k in ("ratio_per_model_min", "ratio_sweep", "peak_fraction_w1024",
                                       "peak_fraction_w1024_vs_run_best")}
    print("\nsummary:", json.dumps(summary), "targets:", json.dumps(targets), f"({out['wall_seconds']:.0f} s)")
    if args.json:  # its folder was made (and the path tried) at the start
        args.json.write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
