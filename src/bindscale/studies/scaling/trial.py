"""Stacked trainer: a group of same-shape trials trained as one model.

Each trial keeps its own teacher, split, encoding, initialisation and data
streams; the group shares only the tensors' leading dimension. The loss is the
*sum* of per-trial mean squared errors, so each trial's gradient is exactly its
own; AdamW, gradient clipping and the divergence guard
act per trial.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing

import numpy as np
import torch

from bindscale.kit import generator, TrialResult
from bindscale.kit import helper_thread_settings, measured_threads, training_precision, training_settings
from bindscale.models import StackedModel

from .config import ModelConfig, TrialConfig
from .metrics import r2_task_mean, r2_within_task
from .plan import group_key
from .steps import clip_and_mask, make_optimizer, stack_step_timer
from .students import build_model
from .tasks import Batch, HyperTeacher
from .tasks.encodings import encoding_dim

#: Elements (tasks × samples × features) of pre-sampled training data per trial and chunk.
CHUNK_ELEMENTS = 2_000_000


#: A trial whose training loss exceeds this multiple of its first step's loss has diverged,
#: like one whose loss is NaN or inf: AdamW at a far too large learning rate blows the loss
#: up by orders of magnitude while it stays finite (lr 10 on the quick study: final losses
#: up to 3.5e11 from ~1 at step 1, all recorded "ok" before this guard). Trained or
#: untrained, a healthy trial stays within a few times its initial loss.
DIVERGENCE_FACTOR = 1e4


#: Training steps between two calls of run_group's ``progress`` (and after the last step). A benchmark
#: that times steps through it may set 1 (benchmarks/jax_peer.py): one Python call a step.
PROGRESS_STEPS = 25

#: Narrowest MLP for which bf16 autocast beats fp32 (benchmarks/training.py, precision table:
#: 1.5× at width 64 on this project's AMX machine, no gain at 32, slower at 16). Hypernetworks
#: stay fp32: their per-task generated weights made bf16 slower at widths 16 and 64. TPR students stay
#: fp32 too (``auto``): bf16 was not measured for them.
BF16_MIN_WIDTH = 64


def resolve_precision(precision: str, device: torch.device, model: ModelConfig) -> str:
    """The precision a trial trains in: ``auto`` → ``bf16`` where it is measured to pay
    (MLPs of width ≥ :data:`BF16_MIN_WIDTH` on bf16 matrix units), else ``fp32``.

    Raises:
        ValueError: ``tf32`` asked for off CUDA.
    """
    return training_precision(precision, device, bf16_pays=model.kind == "mlp" and model.width >= BF16_MIN_WIDTH)


BATCH_FIELDS = ("code", "z", "x", "y", "combo")


def _stack(batches: list[Batch], out: Batch | None = None) -> Batch:
    """Stack per-trial batches into ``(T, …)`` tensors, into ``out``'s storage when its shapes match.

    Reusing one buffer for every chunk of training data matters on the CPU: a
    stack's chunk is above glibc's mmap threshold (32 MiB) for large stacks, and
    a fresh one would be mapped, faulted in page by page and unmapped again each
    chunk (bindscale.train.speed).
    """
    fields = [[getattr(b, f) for b in batches] for f in BATCH_FIELDS]
    if out is None or any(getattr(out, f).shape[1:] != v[0].shape for f, v in zip(BATCH_FIELDS, fields)):
        return Batch(*(torch.stack(v) for v in fields))
    for f, v in zip(BATCH_FIELDS, fields):
        torch.stack(v, out=getattr(out, f))
    return out


def _eval_steps(steps: int, n_evals: int) -> list[int]:
    return sorted({max(1, round(steps * (i + 1) / n_evals)) for i in range(n_evals)})


def run_group(
    trials: list[TrialConfig],
    device: str | torch.device = "cpu",
    progress: Callable[[int], None] | None = None,
    return_models: bool = False,
) -> list[TrialResult]:
    """Train and analyse ``trials`` (all with one :func:`group_key`) as one stacked model.

    Args:
        trials: the group; order is kept in the results.
        device: torch device for models and data.
        progress: called with the number of *trial-steps* done since the last call.
        return_models: also hand back each trial's trained model (``TrialResult.model``: its
            member of the stack as a plain :class:`~bindscale.models.MLP`,
            :class:`~bindscale.studies.scaling.hypernet.Hypernet` or :class:`~bindscale.studies.scaling.tpr.TPR`,
            in eval mode); metrics are the same either way.

    Returns:
        One :class:`TrialResult` per trial. Metrics: ``r2_id``, ``r2_heldout``,
        ``r2_inhull``, ``r2_outhull`` (pooled within-task R², :func:`r2_within_task`) and
        the same with ``_taskmean`` (the reference code's per-task mean R²,
        :func:`r2_task_mean`); ``r2_inhull_k{k}`` / ``r2_outhull_k{k}`` and
        ``n_inhull_k{k}`` / ``n_outhull_k{k}`` for k = 1..K active modules; ``final_loss``;
        probe decodabilities (``decod_cv`` at the layer ``decod_cv_layer`` chosen by
        cross-validation on fit data, ``decod_random_cv`` likewise for the random-init
        control, and the older ``decod_best`` / ``decod_random`` maxima over layers of the
        held-out score; per layer ``decod_layers`` held-out and ``decod_layers_cv`` CV
        scores); the held-out R² curves (pooled and task mean), parameter
        count, split sizes and timings.

    Raises:
        ValueError: the trials do not share a group key.
    """
    if len({group_key(t) for t in trials}) != 1:
        raise ValueError("run_group needs trials with one group_key")
    device = torch.device(device)
    tr = trials[0].train
    # The speed settings (bindscale.train.speed): the caller's torch threads where they are measured to pay
    # for this stack (sweeps' workers, the inline executor and the Python API train with one), the precision.
    with training_settings(device, thread_choice=lambda threads: intra_op_threads(trials, threads),
                           precision=resolve_precision(tr.precision, device, trials[0].model),
                           compile=tr.compile) as settings:
        return _run_group(trials, settings, progress, return_models)


def intra_op_threads(trials: list[TrialConfig], threads: int,
                     timer: Callable[[int, int], float] | None = None) -> int:
    """Torch threads to train ``trials`` stacked with when the caller allows ``threads``: ``threads`` or 1.

    Measured once per stack shape (model, data shapes, batch, stack size; not the number of steps) and
    process (:func:`bindscale.train.speed.measured_threads`) with ``timer`` (default: :func:`stack_step_timer`
    on the trials' shapes, an fp32 step whatever the trials' precision). A trial's numbers do not depend on
    the choice beyond float rounding (more threads may sum some products in another order).
    """
    t = trials[0]
    # What the timed step depends on (not the steps, evaluation or probe settings).
    key = (t.model.model_dump_json(), encoding_dim(t.task.encoding, t.task.M, t.task.K, (t.task.input_dim,
           t.task.output_dim), t.task.n_shots), t.task.M, t.task.input_dim, t.task.output_dim,
           t.task.samples_per_task, t.train.batch_tasks, t.train.grad_clip is None, len(trials))
    return measured_threads(key, threads, lambda: timer or stack_step_timer(trials))


def untrained_model(trial: TrialConfig) -> torch.nn.Module:
    """The trial's student as :func:`run_group` initialises it (its "init" stream), as a plain
    single-trial module (:meth:`~bindscale.models.StackedModel.member`), on the CPU."""
    t = trial.task
    code_dim = encoding_dim(t.encoding, t.M, t.K, (t.input_dim, t.output_dim), t.n_shots)
    stack = build_model(trial.model, code_dim, t.input_dim, t.output_dim, t.M, [generator(trial.seed, "init")])
    return stack.member(0)


def task_family(trial: TrialConfig, device: str | torch.device = "cpu") -> HyperTeacher:
    """The trial's task family as :func:`run_group` builds it: its :class:`~bindscale.studies.scaling.tasks.HyperTeacher`
    (teacher, split and encoding of the trial's seed); ``.sample(n, generator)`` draws batches."""
    return HyperTeacher(trial.task, trial.seed, device)


def _chunks(sample: Callable[[int, Batch | None], Batch], sizes: list[int],
            background: bool | Callable[[], bool]) -> Iterator[Batch]:
    """The chunks of training data, ``sample(n, out)`` for each ``n`` in ``sizes``, in order.

    ``background`` (or, where it is a callable, whenever it returns True before a chunk is handed out): each
    next chunk is sampled in one background thread while the current one trains,
    into the other of two buffers (the chunk being trained on is never written; the price is a second
    buffer of up to :data:`CHUNK_ELEMENTS` floats a trial). For a step that runs on one intra-op thread
    where the caller allowed more (:func:`run_group`): at small widths the caller's second core is
    otherwise idle, and sampling (mostly the serial mt19937 ``uniform_`` of torch's CPU generator) is a
    measurable share of the step at MLP 64 × 2, batch 128 tasks × 16: ~0.34 of ~2.3 ms on a quiet
    machine, 0.45-0.65 of 2.5-3.8 ms on the shared 2-core Xeon at load 2.4-2.9. Measured there: the
    loop's wait for data fell from ~0.5 to ~0.015 ms a step, but steps/s moved within the noise
    (2-thread / 1-thread, geometric mean of 10 alternating 400-step pairs: 0.97 and 1.17 in two
    processes; 0.98 both times before this change): at that load the second core is rarely idle. Near
    quiet (load ~1.5, benchmarks/jax_peer.py --quick): 494 and 427 steps/s against 467 and 368 with one
    thread, in two runs.
    ``background`` may turn on mid-training (:class:`~bindscale.train.threads.ThreadWatch` fell back to one
    thread): from then on the next chunk is sampled beside the step.
    The same calls with the same sizes in the same order, one thread at a time, use each generator
    exactly as the serial path does: the same bits. An error in the thread is raised here; the thread
    is shut down when the generator is closed, finished or not.
    """
    on = background if callable(background) else (lambda: background)
    pool: ThreadPoolExecutor | None = None
    future = None
    bufs: list[Batch | None] = [None, None]  # inline sampling reuses one; background alternates two

    def submit(k: int, out: Batch | None):
        nonlocal pool
        if pool is None:
            pool = ThreadPoolExecutor(1, thread_name_prefix="bindscale-sampler", initializer=helper_thread_settings)
        return pool.submit(sample, sizes[k], out)

    try:
        for k, n in enumerate(sizes):
            free = bufs[(k - 1) % 2] if k else None  # the chunk just trained on
            if future is None and on():  # every chunk on the sampler thread once it is on: one setting
                future = submit(k, free)
            if future is not None:
                data, future = future.result(), None
            else:
                data = sample(n, free)
            bufs[k % 2] = data
            if k + 1 < len(sizes) and on():
                spare = bufs[(k + 1) % 2]  # (inline sampling left both slots on one buffer: this one)
                future = submit(k + 1, spare if spare is not data else None)
            yield data
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)


def _run_group(trials: list[TrialConfig], settings, progress, return_models: bool = False) -> list[TrialResult]:
    """:func:`run_group`'s training and evaluation, inside its speed settings (``settings``:
    :class:`bindscale.train.speed.TrainingSettings`)."""
    T, cfg, device = len(trials), trials[0], settings.device
    tasks = [HyperTeacher(t.task, t.seed, device) for t in trials]
    model = build_model(
        cfg.model, tasks[0].code_dim, cfg.task.input_dim, cfg.task.output_dim, cfg.task.M,
        [generator(t.seed, "init") for t in trials],
    ).to(device)
    tr = cfg.train
    per_trial = lambda f: torch.tensor([f(t.train) for t in trials], dtype=torch.float32, device=device)  # noqa: E731
    opt = make_optimizer(model, [t.train for t in trials])
    clip = per_trial(lambda c: math.inf if c.grad_clip is None else c.grad_clip)
    if all(t.train.grad_clip is None for t in trials):
        clip = None  # no trial clips: skip the per-step norm computation
    forward = settings.compiled(model)
    train_gens = [generator(t.seed, "train", device) for t in trials]

    # Fixed evaluation sets on their own streams: fresh in-distribution tasks and held-out combinations.
    id_set = _stack([task.sample(tr.eval_tasks, generator(t.seed, "test", device)) for t, task in zip(trials, tasks)])
    has_held = all(task.n_combos("heldout") > 0 for task in tasks)
    held_set = (
        _stack([task.sample(tr.eval_tasks, generator(t.seed, "heldout", device), "heldout", cycle=True)
                for t, task in zip(trials, tasks)])
        if has_held else None
    )

    # Divergence guard on the device: no host sync in the inner loop.
    alive = torch.ones(T, dtype=torch.bool, device=device)
    diverged_at = torch.full((T,), -1, dtype=torch.long, device=device)
    curve_steps, curve_r2, curve_r2_tm, curve_loss = [], [], [], []
    eval_at = set(_eval_steps(tr.steps, tr.n_evals))
    B, S = tr.batch_tasks, cfg.task.samples_per_task
    chunk = max(1, min(tr.steps, CHUNK_ELEMENTS // max(1, B * S * (tasks[0].code_dim + cfg.task.input_dim + cfg.task.output_dim))))
    sizes = [min(chunk, tr.steps - s) for s in range(0, tr.steps, chunk)]  # steps per chunk

    def sample(n: int, out: Batch | None) -> Batch:  # the next n steps' data of every trial
        return _stack([task.sample(B * n, g) for task, g in zip(tasks, train_gens)], out=out)

    lazy_guard = settings.sync_every == 1  # a flag read is free (CPU); elsewhere the loop never syncs to read one
    all_alive = lazy_guard
    t_train = time.perf_counter()
    t_eval = 0.0
    last_loss = torch.full((T,), float("nan"))
    # Where the step runs on one thread and the caller allowed more (chosen so, or fallen back to when the
    # machine turned busy), the caller's other core samples the next chunk.
    with closing(_chunks(sample, sizes, settings.spare_core)) as chunks:
        for step in range(1, tr.steps + 1):
            i = (step - 1) % chunk
            if i == 0:
                data = next(chunks)
            sl = slice(i * B, (i + 1) * B)
            with settings.autocast():
                pred = forward(data.code[:, sl], data.x[:, sl])
            loss_t = (pred.float() - data.y[:, sl]).pow(2).mean(dim=(1, 2, 3))  # (T,)
            if step == 1:
                # Finite where the first loss is (so inf never passes), NaN where it is not (nothing passes).
                first = loss_t.detach()
                limit = torch.where(torch.isfinite(first), (DIVERGENCE_FACTOR * first).clamp(max=torch.finfo(first.dtype).max),
                                    torch.full_like(first, math.nan))
            # One comparison: NaN and inf fail it against a finite limit, as does a finite blow-up.
            sane = loss_t.detach() <= limit
            if lazy_guard and all_alive and bool(sane.all()):
                # CPU, every trial healthy (a flag read costs nothing there): the masks below would
                # change no value and no gradient, so their few small ops per step are skipped.
                loss = loss_t.sum()
            else:
                diverged_at = torch.where(alive & ~sane, step, diverged_at)
                alive = alive & sane
                all_alive = lazy_guard and bool(alive.all())
                # Sum, never average: each trial's gradient is its own loss's gradient.
                loss = torch.where(alive, loss_t, torch.zeros_like(loss_t)).sum()
            opt.zero_grad()
            loss.backward()
            clip_and_mask(model, alive, clip)
            opt.step()
            last_loss = loss_t.detach()
            settings.step_done(step)
            if progress is not None and (step % PROGRESS_STEPS == 0 or step == tr.steps):
                progress(T * (PROGRESS_STEPS if step % PROGRESS_STEPS == 0 else step % PROGRESS_STEPS))
            if step in eval_at:
                with settings.untimed():
                    t0 = time.perf_counter()
                    curve_steps.append(step)
                    curve_loss.append(last_loss.tolist())
                    if held_set is not None:
                        pred = _predict(model, held_set)
                        curve_r2.append(r2_within_task(held_set.y, pred).tolist())
                        curve_r2_tm.append(r2_task_mean(held_set.y, pred).tolist())
                    else:
                        curve_r2.append([math.nan] * T)
                        curve_r2_tm.append([math.nan] * T)
                    t_eval += time.perf_counter() - t0
    train_seconds = time.perf_counter() - t_train - t_eval

    t0 = time.perf_counter()
    final = _final_metrics(model, tasks, id_set, held_set)
    t_eval += time.perf_counter() - t0
    t0 = time.perf_counter()
    probes = _probe_metrics(model, trials, tasks, device)
    probe_seconds = time.perf_counter() - t0

    results = []
    for t in range(T):
        m = {k: v[t] for k, v in final.items()} | {k: v[t] for k, v in probes.items()}
        m |= {
            "final_loss": float(last_loss[t]),
            "n_params": model.n_params(),
            "n_train_combos": len(tasks[t].split.train),
            "n_heldout_combos": len(tasks[t].split.heldout),
            "n_inhull": tasks[t].split.n_inhull,
            "n_outhull": tasks[t].split.n_outhull,
            **_arity_counts(tasks[t]),
            "curve_steps": curve_steps,
            "curve_r2_heldout": [c[t] for c in curve_r2],
            "curve_r2_heldout_taskmean": [c[t] for c in curve_r2_tm],
            "curve_loss": [c[t] for c in curve_loss],
            # Group wall time shared equally: what one trial cost inside its stack.
            "train_seconds": train_seconds / T,
            "eval_seconds": t_eval / T,
            "probe_seconds": probe_seconds / T,
            "stack_size": T,
            "precision_used": settings.precision,
            # Intra-op threads of the step (run_group's thread choice) and whether sampling ran beside it
            # (after threads_fallback_step only, where the watch fell back).
            "threads_used": settings.threads,
            # The step from which it ran on one thread instead (ThreadWatch: the machine turned busy), or None.
            "threads_fallback_step": settings.fell_back_at,
            "background_sampling": settings.spare_core(),
        }
        step_t = int(diverged_at[t])
        div = step_t >= 0 or not math.isfinite(m["r2_id"])
        results.append(TrialResult(status="diverged" if div else "ok", diverged_step=step_t if step_t >= 0 else None,
                                   metrics=m, model=model.member(t).eval() if return_models else None))
    return results


@torch.no_grad()
def _predict(model: StackedModel, batch: Batch, max_rows: int = 1 << 15) -> torch.Tensor:
    """Predictions ``(T, B, S, O)``, in slices of tasks so activations stay small."""
    B, S = batch.x.shape[1], batch.x.shape[2]
    step = max(1, max_rows // S)
    return torch.cat([model(batch.code[:, i:i + step], batch.x[:, i:i + step]) for i in range(0, B, step)], dim=1)


def _arity_counts(task: HyperTeacher) -> dict[str, int]:
    """``n_inhull_k{k}`` / ``n_outhull_k{k}``: held-out combinations with k active modules, per hull label."""
    split, out = task.split, {}
    for k in range(1, task.cfg.K + 1):
        labels = [inh for c, inh in zip(split.heldout, split.inhull) if len(c) == k]
        out[f"n_inhull_k{k}"] = sum(labels)
        out[f"n_outhull_k{k}"] = len(labels) - sum(labels)
    return out


def _final_metrics(model, tasks, id_set: Batch, held_set: Batch | None) -> dict[str, list[float]]:
    """R² on the in-distribution and held-out sets, pooled (``r2_*``) and task mean (``r2_*_taskmean``);
    in-hull / out-of-hull, overall and per number of active modules k (``r2_inhull_k{k}``, pooled;
    NaN where the held-out set has no such combination)."""
    T, K = len(tasks), tasks[0].cfg.K
    pred_id = _predict(model, id_set)
    out = {"r2_id": r2_within_task(id_set.y, pred_id).tolist(),
           "r2_id_taskmean": r2_task_mean(id_set.y, pred_id).tolist()}
    names = [f"r2_{side}{suffix}" for side in ("heldout", "inhull", "outhull") for suffix in ("", "_taskmean")]
    names += [f"r2_{side}_k{k}" for side in ("inhull", "outhull") for k in range(1, K + 1)]
    if held_set is None:
        return out | {n: [math.nan] * T for n in names}
    pred = _predict(model, held_set)
    out["r2_heldout"] = r2_within_task(held_set.y, pred).tolist()
    out["r2_heldout_taskmean"] = r2_task_mean(held_set.y, pred).tolist()
    cols: dict[str, list[float]] = {n: [] for n in names if n not in out}
    for t, task in enumerate(tasks):
        y, p = held_set.y[t], pred[t]
        lab = task.inhull_mask(held_set.combo[t])
        k_active = (held_set.z[t] > 0).sum(-1)
        masks = {"inhull": lab, "outhull": ~lab}
        for side, m in masks.items():
            any_ = bool(m.any())
            cols[f"r2_{side}"].append(float(r2_within_task(y, p, m)) if any_ else math.nan)
            cols[f"r2_{side}_taskmean"].append(float(r2_task_mean(y, p, m)) if any_ else math.nan)
            for k in range(1, K + 1):
                mk = m & (k_active == k)
                cols[f"r2_{side}_k{k}"].append(float(r2_within_task(y, p, mk)) if bool(mk.any()) else math.nan)
    return out | cols


def _probe_rows(acts: dict[str, torch.Tensor], z: torch.Tensor, S: int) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Per-(task, input) rows for every activation point of ONE trial: name → (B·S, D); targets (B·S, M)."""
    rows = {}
    for name, a in acts.items():
        if a.dim() == 2:  # task-level point (B, D): repeat over the task's inputs
            a = a.unsqueeze(1).expand(a.shape[0], S, a.shape[1])
        rows[name] = a.reshape(-1, a.shape[-1]).double().cpu().numpy()
    zz = z.unsqueeze(1).expand(z.shape[0], S, z.shape[1]).reshape(-1, z.shape[1]).double().cpu().numpy()
    return rows, zz


def _probed_points(net: StackedModel, batch: Batch) -> dict[str, torch.Tensor]:
    """The probed activations of ``net`` on ``batch``, keyed ``input``, ``mixing``, ``hidden.i`` (the
    record's layer names: the hook names without ``hook_``), each ``(T, B, S, D)`` or ``(T, B, D)``.

    The readout, the hypernet's generated weights and the TPR student's filler, role and bound vectors are
    not probed.
    """
    from bindscale.models.hooks import hook_names, run_with_cache  # absolute: this module may move

    names = [n for n in hook_names(net) if n.startswith(("hook_input", "hook_mixing", "hook_hidden."))]
    _, cache = run_with_cache(net, batch.code, batch.x, names=names)
    return {n.removeprefix("hook_"): a for n, a in cache.items()}


@torch.no_grad()
def _probe_metrics(model: StackedModel, trials, tasks, device) -> dict[str, list]:
    """Decodability of the constituents per layer (trained model, input baseline, random-init control).

    Fit and score sets come from their own streams (``probe``, ``probe_score``): the score
    inputs are not the fit inputs (they were, 7 936 of 8 192, when both used ``probe``).
    The reported layer is chosen by cross-validation on the fit set (:func:`probe_layers`),
    for the trained model and for the random-init control separately.
    """
    from .probes import probe_layers  # NumPy only (no scikit-learn: bindscale.studies.scaling.probes)

    T, tr = len(trials), trials[0].train
    S = tr.probe_samples
    fit = _stack([task.sample(tr.probe_tasks, generator(t.seed, "probe", device), samples=S)
                  for t, task in zip(trials, tasks)])
    has_held = tasks[0].n_combos("heldout") > 0
    score = (
        _stack([task.sample(tr.probe_tasks, generator(t.seed, "probe_score", device), "heldout", samples=S,
                            cycle=True)
                for t, task in zip(trials, tasks)])
        if has_held else None
    )
    cfg = trials[0]
    control = build_model(
        cfg.model, tasks[0].code_dim, cfg.task.input_dim, cfg.task.output_dim, cfg.task.M,
        [generator(t.seed, "random_init") for t in trials],
    ).to(device)
    keys = ("decod_best", "decod_input", "decod_random", "decod_cv", "decod_cv_layer", "decod_random_cv",
            "decod_random_cv_layer", "decod_layers", "decod_layers_cv")
    out: dict[str, list] = {k: [] for k in keys}
    if score is None:
        nan = [math.nan] * T
        return out | {k: nan for k in keys if k not in ("decod_layers", "decod_layers_cv")} | {
            "decod_cv_layer": [None] * T, "decod_random_cv_layer": [None] * T,
            "decod_layers": [{}] * T, "decod_layers_cv": [{}] * T}
    acts = {}
    for net, key in ((model, "trained"), (control, "random")):
        a_fit, a_score = _probed_points(net, fit), _probed_points(net, score)
        acts[key] = (a_fit, a_score)
    groups = np.repeat(np.arange(tr.probe_tasks), S)  # task of each probe row (rows are task-major)
    for t in range(T):
        res = {}
        for key in ("trained", "random"):
            a_fit, a_score = acts[key]
            f_rows, zf = _probe_rows({k: v[t] for k, v in a_fit.items() if k != "output"}, fit.z[t], S)
            s_rows, zs = _probe_rows({k: v[t] for k, v in a_score.items() if k != "output"}, score.z[t], S)
            hidden = [n for n in f_rows if n != "input"]
            res[key] = probe_layers({n: f_rows[n] for n in hidden}, zf, groups, {n: s_rows[n] for n in hidden}, zs)
            if key == "trained":
                res["input"] = probe_layers({"input": f_rows["input"]}, zf, groups, {"input": s_rows["input"]}, zs)
        trained, rand = res["trained"], res["random"]
        layers = {"input": res["input"]["heldout"]["input"]} | trained["heldout"]
        layers |= {f"random.{n}": v for n, v in rand["heldout"].items()}
        layers_cv = {"input": res["input"]["cv"]["input"]} | trained["cv"]
        layers_cv |= {f"random.{n}": v for n, v in rand["cv"].items()}
        h_vals = [v for v in trained["heldout"].values() if np.isfinite(v)]
        r_vals = [v for v in rand["heldout"].values() if np.isfinite(v)]
        out["decod_best"].append(max(h_vals) if h_vals else math.nan)
        out["decod_input"].append(layers["input"])
        out["decod_random"].append(max(r_vals) if r_vals else math.nan)
        out["decod_cv"].append(trained["cv_heldout"])
        out["decod_cv_layer"].append(trained["cv_layer"])
        out["decod_random_cv"].append(rand["cv_heldout"])
        out["decod_random_cv_layer"].append(rand["cv_layer"])
        out["decod_layers"].append(layers)
        out["decod_layers_cv"].append(layers_cv)
    return out
