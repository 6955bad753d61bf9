"""Cost, memory, stack grouping and stack step timing of the subgraphs study's trials (one transformer per
trial; trials of one shape train as one stacked transformer, :func:`bindscale.studies.subgraphs.trial.run_group`)."""

from __future__ import annotations

from functools import cache

from bindscale.kit import stack_key


def group_key(trial) -> tuple:
    """Trials with equal keys can share a stack: same task, model and steps / batch size
    (:func:`bindscale.train.stack.stack_key`). Seed (hence data, data order and initial weights), learning rate,
    weight decay, warm-up and clipping may differ: each trial keeps its own."""
    return stack_key(trial, ("task", "model"))


#: CPU time of a packed training step (``train.pack``, :func:`bindscale.train.loop.packed_batch`) over a padded one:
#: 1 / 1.41, ``benchmarks/packing.py`` at subgraphs-full's largest multiplication trial (4 x 160, batch 64; the
#: project's 2-core Xeon, one torch thread; benchmarks/results/packing_intel-xeon-processor_2026-12-07.json,
#: "subgraphs"): 0.59 real tokens padded, 0.89 packed. Max-sum subsequence packs a little better (packed positions
#: 0.63 of the padded with the scratchpad, 0.60 without, multiplication 0.67) and is costed with it; smaller models,
#: whose steps hold more fixed work, were not timed.
PACKED_STEP_SHARE = 1 / 1.41


def job_cost(job: list) -> float:
    """Relative cost of a job: trials × steps × rows × positions × weights (6·N·D up to a constant), times
    :data:`PACKED_STEP_SHARE` where its trials pack (``train.pack``: a stack's trials share it)."""
    t = job[0]
    m = t.model
    weights = 12 * m.n_layers * m.d_model**2 + 40 * m.d_model
    share = PACKED_STEP_SHARE if getattr(t.train, "pack", False) else 1.0
    return len(job) * t.train.steps * t.train.batch_size * _length(t) * weights * share


def _length(trial) -> int:
    """A rough training sequence length of the trial's task (prompt, scratchpad and answer)."""
    return (30 if trial.task.family == "maxsubseq" else 90) if trial.task.scratchpad else 16


#: Largest absolute value of a max-sum subsequence element (the task draws them from -5..5).
_MAXSUBSEQ_HIGH = 5
#: Least memory a trial is planned with, in bytes: what the estimate leaves out at small sizes (evaluation,
#: the allocator's rounding), the flat 512 MiB the study planned every trial with before the estimate.
MEMORY_FLOOR = 512 << 20


def longest_train_sequence(trial) -> int:
    """Tokens of the trial's longest training sequence (prompt, scratchpad when on, answer, stop), without building
    its data.

    Multiplication: the example of the largest in-distribution operands, ``10**id_max - 1`` squared (every partial
    product and running sum at its most digits), written by the task itself; equal to the longest of 3,000 sampled
    pairs at every ``id_max`` from 1 to 5, with and without the scratchpad (160 tokens at 4 digits with it).
    Max-sum subsequence: an upper bound, three characters per element (``-5,``), then the answer (with the
    scratchpad each of the ``id_max`` DP values too) at the most digits a sum of every other element can have,
    each with its separator (33 at length 5 with the scratchpad, against 29 the longest of 3,000 sampled).
    """
    t = trial.task
    return _longest(t.family, t.id_max, t.scratchpad, t.reverse)


@cache
def _longest(family: str, n: int, scratchpad: bool, reverse: bool) -> int:
    if family == "multiplication":
        from .tasks.multiplication import make_example

        ex = make_example(10**n - 1, 10**n - 1, scratchpad, reverse)
        return len(ex.prompt) + len(ex.target)
    digits = len(str(_MAXSUBSEQ_HIGH * -(-n // 2)))
    return 3 * n + ((n + 1) if scratchpad else 1) * (digits + 1)


def trial_memory_bytes(trial) -> int:
    """One trial's training memory in a stack, in bytes: :func:`bindscale.models.transformer_memory_bytes` at its
    shape, batch and longest training sequence (:func:`longest_train_sequence`, ``n_train`` of them on the device);
    at least :data:`MEMORY_FLOOR`. subgraphs-paper's largest trial (24 × 1024, 302M parameters, batch 256 of 160
    tokens) measured 72.5 GiB alone on an H200 (benchmarks/results/gpu_paper_h200_2026-12-04.json); this gives
    84.0 GiB (stacked form), so it is planned alone on an 80 or a 141 GB GPU. A packed trial (``train.pack``) is
    planned at this padded figure, an upper bound: its steps hold fewer rows of the same width."""
    from bindscale.models import transformer_memory_bytes

    from .tasks.charvocab import VOCAB_SIZE

    m, length = trial.model, longest_train_sequence(trial)
    need = transformer_memory_bytes(
        n_layers=m.n_layers, d_model=m.d_model, d_ff=m.mlp_ratio * m.d_model, vocab_size=VOCAB_SIZE,
        batch_size=trial.train.batch_size, positions=length, n_examples=trial.task.n_train, example_len=length,
        steps=trial.train.steps, precision=trial.train.precision)
    return max(MEMORY_FLOOR, need)


def stack_step_seconds(trials: list, window: float = 0.05, rounds: int = 3) -> float:
    """Seconds of one training step of ``trials`` stacked, here and now (:func:`bindscale.train.stack.stack_step_seconds`
    at the task's rough sequence length, :func:`_length`)."""
    from bindscale.kit import hook_model, stack_step_seconds as timed

    return timed(trials, hook_model(), _length(trials[0]), window, rounds)
