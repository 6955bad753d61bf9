"""Cost, memory, stack grouping and stack step timing of the subgraphs study's trials (one transformer per
trial; trials of one shape train as one stacked transformer, :func:`bindscale.studies.subgraphs.trial.run_group`)."""

from __future__ import annotations

#: Training fields that may differ inside a stack (per trial in :func:`bindscale.seqtrain.train_stacked_from_config`).
PER_TRIAL_FIELDS = {"lr", "weight_decay", "warmup_steps", "grad_clip"}


def group_key(trial) -> tuple:
    """Trials with equal keys can share a stack: same task, model and steps / batch size.

    Seed (hence data, data order and initial weights), learning rate, weight decay, warm-up and
    clipping may differ: each trial keeps its own (:data:`PER_TRIAL_FIELDS`).
    """
    return (trial.task.model_dump_json(), trial.model.model_dump_json(),
            trial.train.model_dump_json(exclude=PER_TRIAL_FIELDS))


def job_cost(job: list) -> float:
    """Relative cost of a job: trials × steps × rows × positions × weights (6·N·D up to a constant)."""
    t = job[0]
    m = t.model
    weights = 12 * m.n_layers * m.d_model**2 + 40 * m.d_model
    return len(job) * t.train.steps * t.train.batch_size * _length(t) * weights


def _length(trial) -> int:
    """A rough training sequence length of the trial's task (prompt, scratchpad and answer)."""
    return (30 if trial.task.family == "maxsubseq" else 90) if trial.task.scratchpad else 16


def trial_memory_bytes(trial) -> int:
    """A small transformer, its batch and its evaluation: 512 MiB, a generous upper bound."""
    return 512 << 20


def stack_step_seconds(trials: list, window: float = 0.05, rounds: int = 3) -> float:
    """Seconds of one training step of ``trials`` stacked, here and now, at one torch thread (a worker's).

    Forward, backward, per-trial clipping and AdamW of the stacked transformer on random tokens of
    the task's rough length (:func:`_length`; no data generation or evaluation: those cost the same per
    trial in any stack); the best of ``rounds`` timings of as many steps as fill ``window`` seconds (at
    least one), after one warm-up step. The planner compares stack sizes with it
    (:func:`bindscale.sweep.plan_jobs`); no trial's numbers depend on it.
    """
    import time

    import torch

    from bindscale import seeding
    from bindscale.models.stacked_transformer import StackedTransformer
    from bindscale.seqtrain import PerTrialAdamW, clip_per_trial_, stacked_seq_loss

    from .tasks import charvocab

    t0 = trials[0]
    m, tr, L = t0.model, t0.train, _length(t0)
    with torch.random.fork_rng(devices=[]):
        model = StackedTransformer(charvocab.VOCAB_SIZE, m.n_layers, m.d_model, m.n_heads, m.mlp_ratio,
                                   max_len=L + 1, generators=[seeding.generator(t.seed, "init") for t in trials])
        tokens = torch.randint(1, charvocab.VOCAB_SIZE, (len(trials), tr.batch_size, L + 1))
    mask = torch.ones_like(tokens, dtype=torch.bool)
    mask[:, :, -1] = False
    params = list(model.parameters())
    opt = PerTrialAdamW(params, [t.train.weight_decay for t in trials])
    lrs, active, clips = [1e-6] * len(trials), list(range(len(trials))), [t.train.grad_clip for t in trials]

    def step() -> None:
        opt.zero_grad()
        stacked_seq_loss(model, tokens, mask).sum().backward()
        clip_per_trial_(params, clips)
        opt.step(lrs, active)

    def timed(n: int) -> float:
        start = time.perf_counter()
        for _ in range(n):
            step()
        return time.perf_counter() - start

    first = timed(1)
    steps = max(1, min(50, int(window / max(first, 1e-6))))
    return min(timed(steps) / steps for _ in range(rounds))
