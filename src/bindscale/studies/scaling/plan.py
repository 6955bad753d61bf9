"""Cost, memory, feasibility, stack grouping and stack step timing of the scaling study's trials
(hyperteacher tasks, stacked MLPs, hypernetworks and TPR students): used to plan stacks, weigh the ETA and fail early
on impossible splits. Light to import (no torch at module level: planning and ``--dry-run`` read it);
what needs the tasks or a model is imported where it is used."""

from __future__ import annotations

from bindscale.kit import BindscaleError, ConfigError
from bindscale.studies.scaling.config import TrialConfig

#: Training fields that may differ inside a stack (they are per-trial tensors).
PER_TRIAL_FIELDS = {"lr", "weight_decay", "grad_clip"}

#: A hyperteacher trial-step's cost that does not grow with the model (Python and kernel
#: launches, data sampling, optimizer bookkeeping), in weights: measured per-trial-step times
#: of the headline study (two workers, this project's CPU machine) fit 0.36 ms + 1.2e-5 ms per
#: weight, i.e. ~30 000 weights of overhead; widths 16 and 512 and the hypernets are within 5%
#: of the fit, widths 64-256 up to 30% above it.
STEP_OVERHEAD_WEIGHTS = 30_000


def job_cost(job: list[TrialConfig]) -> float:
    """Relative cost of a job: trials × steps × rows × weights (the 6·N·D training FLOPs, up to a constant).

    Hyperteacher jobs add :data:`STEP_OVERHEAD_WEIGHTS` per trial-step, so that a
    width-16 stack is not costed at 1/400 of a width-512 one (measured: 1/18).
    Used to order and cut jobs (:func:`plan_jobs`) and for the ETA of a run.
    """
    t = job[0]
    w, d = t.model.width, t.model.depth
    if t.model.kind == "tpr":  # role, binding and readout per row, then `depth` square layers after the binding
        weights = w * w * d + w * (t.task.M * t.task.K + t.task.input_dim + t.task.output_dim)
    else:
        weights = w * w * max(d - 1, 0) + w * (t.task.M * t.task.K + t.task.input_dim + t.task.output_dim)
    if t.model.kind == "hypernet":
        weights *= 2  # generated weights are applied per task, plus the mixing
    return len(job) * t.train.steps * t.train.batch_tasks * t.task.samples_per_task * (weights + STEP_OVERHEAD_WEIGHTS)


def trial_memory_bytes(trial: TrialConfig) -> int:
    """Upper estimate of one trial's memory inside a stack, in bytes.

    Parameters with their gradient and two AdamW moments; activations of a
    training step kept for backward (×3 for gradients and autocast copies); the
    pre-sampled data chunk; evaluation sets; probe activations in float64.
    """
    t, m, tr = trial.task, trial.model, trial.train
    code = t.M * t.K + t.n_shots * (t.input_dim + t.output_dim)  # wider than any encoding
    widths = m.width * m.depth + code + t.input_dim + t.output_dim
    params = (code + t.input_dim) * m.width + m.width * m.width * max(m.depth - 1, 0) + m.width * t.output_dim
    if m.kind == "tpr":  # filler and role tables, `depth` square layers after the binding; role and bound per row
        params = ((code + t.input_dim + 2) * m.width + m.depth * (m.width * m.width + m.width)
                  + (m.width + 1) * t.output_dim)
        widths += 2 * m.width
    if m.kind == "hypernet":
        params *= 1 + (m.n_banks or t.M)
    rows = tr.batch_tasks * t.samples_per_task
    activations = 3 * rows * widths
    if m.kind == "hypernet":  # generated weights per task
        activations += 3 * tr.batch_tasks * params // (1 + (m.n_banks or t.M))
    data = 2_000_000 + 2 * tr.eval_tasks * t.samples_per_task * (code + t.input_dim + t.output_dim)
    probes = 2 * 2 * tr.probe_tasks * tr.probe_samples * widths * 2  # float32 acts + float64 rows, fit + score
    return 4 * (4 * params + activations + data + probes)


def check_trials(trials: list[TrialConfig]) -> None:
    """Build every trial's split before anything is written, so an impossible split fails early.

    Raises:
        ConfigError: naming the trial's M, K, split and holdout; also when a split
            holds out no combination (``holdout=0``): every claim of the family is
            measured on held-out combinations, so such a trial could measure nothing.
    """
    from bindscale.kit import rng

    from .tasks.splits import make_split

    seen = set()
    for t in trials:
        key = (t.task.M, t.task.K, t.task.split, t.task.holdout, t.seed)
        if key in seen:
            continue
        seen.add(key)
        try:
            split = make_split(t.task.M, t.task.K, t.task.split, t.task.holdout, rng(t.seed, "split"),
                               withheld_pairs=t.task.withheld_pairs)
        except BindscaleError as err:
            raise ConfigError(f"split cannot be made (seed {t.seed}): {err}") from None
        if not split.heldout:
            raise ConfigError(
                f"split {t.task.split!r} with holdout {t.task.holdout} holds out no combination of M={t.task.M}, "
                f"K={t.task.K}: held-out R², hull and decodability are all measured on held-out combinations; "
                "use holdout > 0")


def group_key(trial: TrialConfig) -> tuple:
    """Trials with equal keys have identical model shapes and schedules and can share a stack
    (:func:`bindscale.studies.scaling.trial.run_group` trains them as one stacked model).

    Seed, split, hold-out fraction, learning rate, weight decay, clipping and the
    encoding may differ; encodings of one width (identity, orthogonal, invertible,
    interval_shuffle: M) share a stack because each trial encodes its own codes.
    """
    from .tasks.encodings import encoding_dim

    t, m, tr = trial.task, trial.model, trial.train
    code_dim = encoding_dim(t.encoding, t.M, t.K, (t.input_dim, t.output_dim), t.n_shots)
    return (
        m.model_dump_json(),
        t.M, t.K, code_dim, t.input_dim, t.hidden_dim, t.output_dim, t.samples_per_task, t.n_shots,
        t.holdout > 0 or t.split != "random",  # whether a held-out pool exists
        tr.model_dump_json(exclude=PER_TRIAL_FIELDS),
    )


def stack_step_seconds(trials: list[TrialConfig], window: float = 0.05, rounds: int = 3) -> float:
    """Seconds of one training step of ``trials`` stacked, here and now, at one torch thread (a worker's).

    Forward, backward, clipping and AdamW on random data of the trials' shapes (no sampling,
    evaluation or probes: those cost the same per trial in any stack:
    :func:`bindscale.studies.scaling.steps.stack_step_timer`); the best of ``rounds``
    timings of as many steps as fill ``window`` seconds (at least one), after one warm-up step:
    the best of several windows, because other work on the machine only ever adds time. The
    planner compares stack sizes with it (:func:`bindscale.run.planner.plan_jobs`); no trial's numbers
    depend on it.
    """
    from .steps import stack_step_timer

    timer = stack_step_timer(trials)
    first = timer(1, 1)
    steps = max(1, min(50, int(window / max(first, 1e-6))))
    return min(timer(1, steps) / steps for _ in range(rounds))
