"""Cost, memory, pre-run checks, stack grouping and stack step timing of the depth study's trials (one small
transformer per trial; trials of one split and shape train as one stacked transformer,
:func:`bindscale.studies.depth.trial.run_group`)."""

from __future__ import annotations

from bindscale.kit import ConfigError, stack_key

#: Positions of a training batch (trimmed to its longest sequence: command, separator, actions, end) by
#: split: the length split's outputs stop at 22 actions, the others' reach 48 (data files: as the others).
POSITIONS = {"length": 33}
POSITIONS_OTHER = 58
#: CPU-seconds per unit of :func:`trial_cost`: 24 trials of the default study (length split, 700 x 32;
#: depth 1 and 8 at 100k, depth 2 at 200k) took 584 CPU-s on the project's 2-core machine under load
#: (45% of a core), 1.33 times what a first fit to seven shorter pilot trials (2.4e-6) predicted.
SECONDS_PER_COST = 3.2e-6


#: Vocabulary of a SCAN split for the step timer: 3 specials, 13 command words, 6 actions (a split's own
#: vocabulary is read from its data, which the planner does not load; a few tokens more or less change a
#: step's time by well under the timer's noise).
TIMER_VOCAB = 22


def group_key(trial) -> tuple:
    """Trials with equal keys can share a stack: same split and data files (hence the same sequences,
    vocabulary and lengths: the depth study's data does not depend on the trial's seed), same model
    and steps / batch size (:func:`bindscale.train.stack.stack_key`). Seed (initial weights, batch order)
    and the per-trial training fields may differ."""
    return stack_key(trial, ("task", "data", "model"))


def stack_step_seconds(trials: list, window: float = 0.05, rounds: int = 3) -> float:
    """Seconds of one training step of ``trials`` stacked, here and now (:func:`bindscale.train.stack.stack_step_seconds`
    at the split's batch length, :data:`POSITIONS`, and a SCAN-sized vocabulary, :data:`TIMER_VOCAB`)."""
    from bindscale.kit import hook_model, stack_step_seconds as timed

    t = trials[0]
    positions = POSITIONS.get(t.task.split, POSITIONS_OTHER) if t.data.train is None else POSITIONS_OTHER
    return timed(trials, hook_model(vocab_size=TIMER_VOCAB), positions, window, rounds)


def _positions(t) -> int:
    """Positions of the trial's training batches (:data:`POSITIONS` by split; data files: :data:`POSITIONS_OTHER`)."""
    return POSITIONS.get(t.task.split, POSITIONS_OTHER) if t.data.train is None else POSITIONS_OTHER


#: CPU time of a packed training step (``train.pack``, :func:`bindscale.train.loop.packed_batch`) over a padded one,
#: by split (others and data files: :data:`PACKED_STEP_SHARE_OTHER`), measured on the project's 2-core Xeon, one
#: torch thread, as training steps per CPU-second. The length split: 1 / 1.28, ``benchmarks/packing.py`` at its
#: deciding shape (200k, 2 x 92; benchmarks/results/packing_intel-xeon-processor_2026-12-07.json, "depth"): its
#: batches are 0.61 real tokens padded, 0.84 packed (its outputs stop at 22 actions, so most commands are near the
#: longest and few share a row).
PACKED_STEP_SHARE = {"length": 1 / 1.28}
#: The other splits (add-primitive jump, around-right: up to 48 actions, 0.45-0.47 real padded, 0.92-0.93 packed)
#: and data files: 1 / 1.71, the training CPU-seconds of whole depth-full add-jump trials, padded over packed, mean
#: of the six per-seed ratios (1.59-1.87) of two deciding cells, 200k depth 2 (mean 1.80) and 100k depth 8 (1.61),
#: seeds 0-2, 5,000 steps (``benchmarks/pack_gate.py``;
#: benchmarks/results/pack_gate_depth-full_intel-xeon-processor_2026-12-07.json). Around-right packs as add-jump
#: does (0.51 of the padded positions, add-jump 0.48, length 0.73) and is costed with it.
PACKED_STEP_SHARE_OTHER = 1 / 1.71


def packed_step_share(t) -> float:
    """A training step's cost packed over padded (:data:`PACKED_STEP_SHARE`) where the trial packs
    (``train.pack``), else 1."""
    if not getattr(t.train, "pack", False):
        return 1.0
    return PACKED_STEP_SHARE.get(t.task.split, PACKED_STEP_SHARE_OTHER) if t.data.train is None \
        else PACKED_STEP_SHARE_OTHER


def trial_cost(t) -> float:
    """Relative cost of one trial: steps × batch × positions × (layers + 4 + budget / 50,000), times the measured
    share of a packed step where the trial packs (:func:`packed_step_share`).

    At these widths (12 to 120) a step's time is mostly per-position work that grows with depth, plus
    a fixed part (embedding, head, optimizer, data) and a part that grows with the weights (measured at
    300 steps: depth 1 → 8 costs 2.7x at 25k parameters; 25k → 100k costs 1.1-1.8x at equal depth).
    """
    return (t.train.steps * t.train.batch_size * _positions(t) * (t.model.n_layers + 4 + t.model.budget / 50_000)
            * packed_step_share(t))


def job_cost(job: list) -> float:
    """Relative cost of a job: the sum of its trials' :func:`trial_cost`."""
    return float(sum(trial_cost(t) for t in job))


#: Training pairs of a split, at most, for the memory estimate: add-primitive turn left's 21,890, the largest
#: of SCAN's five splits (simple 16,728, length 16,990, add-primitive jump 14,670, around-right 15,225;
#: bindscale.kit.scan.make_split); a data file's own size is not read at planning time.
TRAIN_PAIRS_MAX = 22_000
#: Least memory a trial is planned with, in bytes: what the estimate leaves out at small sizes (evaluation,
#: the allocator's rounding), the flat 512 MiB the study planned every trial with before the estimate.
MEMORY_FLOOR = 512 << 20


def trial_memory_bytes(trial) -> int:
    """One trial's training memory in a stack, in bytes: :func:`bindscale.models.transformer_memory_bytes` at
    its shape (:func:`bindscale.models.shape_for_budget`), batch, the split's batch positions (:data:`POSITIONS`),
    a SCAN-sized vocabulary (:data:`TIMER_VOCAB`) and at most :data:`TRAIN_PAIRS_MAX` training pairs on the
    device; at least :data:`MEMORY_FLOOR`. depth-paper's largest trial (16 × 464, batch 128) measured 4.24 GiB
    alone on an H200 (benchmarks/results/gpu_paper_h200_2026-12-04.json); this gives 4.98 GiB (stacked form).
    A packed trial (``train.pack``) is planned at this padded figure, an upper bound: its step holds fewer rows of
    the same width (0.49-0.73 of the batch at depth-full's splits), beside which its boolean block mask (rows ×
    width² bytes) is small."""
    from bindscale.models import shape_for_budget, transformer_memory_bytes

    m, positions = trial.model, _positions(trial)
    s = shape_for_budget(m.budget, m.n_layers, m.n_heads)
    need = transformer_memory_bytes(
        n_layers=s.n_layers, d_model=s.d_model, d_ff=s.d_ff, vocab_size=TIMER_VOCAB, batch_size=trial.train.batch_size,
        positions=positions, n_examples=TRAIN_PAIRS_MAX, example_len=positions + 1, steps=trial.train.steps,
        position_table=POSITIONS_OTHER + 1 if m.pos == "learned" else 0, precision=trial.train.precision)
    return max(MEMORY_FLOOR, need)


def check_trials(trials: list) -> None:
    """Read every data file the trials name, before anything is written.

    Raises:
        ConfigError: a file is missing, unreadable, empty or has a malformed line (one line naming
            the file and the line).
    """
    from bindscale.kit import scan

    seen = set()
    for t in trials:
        for path in (t.data.train, t.data.test):
            if path is not None and (path, t.data.format) not in seen:
                seen.add((path, t.data.format))
                pairs = scan.load_pairs(path, t.data.format)
                if not pairs:
                    raise ConfigError(f"data file {path}: no examples")
