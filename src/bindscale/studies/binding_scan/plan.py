"""Cost, memory, checks, stack grouping and stack step timing of the binding_scan study's trials.

Plain transformers of one split and shape train as one stacked transformer (as the depth study's do); a
binding model (syntactic attention, TP-Transformer) has no stacked form, so each of its trials is a group
of its own and trains alone, as does a recurrent encoder-decoder (``lstm_seq2seq``, ``syntactic_attention_rnn``,
:mod:`.rnn_trial`), whose cost is its own measured model (:func:`recurrent_seconds`).
"""

from __future__ import annotations

from bindscale.kit import stack_key

#: Positions of a training batch (command, separator, actions, end) by split: the length split's outputs
#: stop at 22 actions, the others' reach 48.
POSITIONS = {"length": 33}
POSITIONS_OTHER = 58
#: Relative cost of a training step of each kind at equal budget and depth, against the plain transformer
#: (measured, one thread, the project's 2-core Xeon at load 7-8, add-jump, 100k, depth 2, batch 32, 80 steps
#: each: plain 0.023 CPU-s per step alone, syntactic attention 0.027, TP-Transformer 0.025). A binding model
#: trains alone and shares nothing of a stack's step, hence a little more than the measured ratio.
KIND_FACTOR = {"transformer": 1.0, "syntactic_attention": 1.25, "tp_transformer": 1.25}
#: Greedy evaluation without a KV cache (the binding models): CPU-seconds per scored example at 100k, scaled by
#: the square root of the budget, on top of the study's per-trial seconds (measured as above: 0.0068-0.0085;
#: the plain transformer decodes with a KV cache, 0.0012, inside the per-trial seconds).
EVAL_SECONDS_PER_EXAMPLE = {"transformer": 0.0, "syntactic_attention": 0.009, "tp_transformer": 0.009}
#: CPU-seconds per unit of :func:`trial_cost` (the depth study's measured factor: the same trainer and
#: plain transformer on the same data).
SECONDS_PER_COST = 3.2e-6
#: Vocabulary of a SCAN split for the step timer (3 specials, 13 command words, 6 actions).
TIMER_VOCAB = 22


#: CPU-seconds of one training trial of the recurrent encoder-decoder: ``RNN_STEP_S[0] + RNN_STEP_S[1] × its
#: parameters``, on an add-jump line of the mean target length (:data:`RNN_MEAN_TARGET`). Measured (``time.
#: process_time``, one thread, the project's 2-core Xeon at load 4.8, 500 trials after 20, teacher forcing 0.5 and
#: 1.0 alike): Lake & Baroni's best add-jump model (1 layer of 100, attention, 225,508 parameters) 12.2 ms; their
#: overall-best (2 layers of 200, no attention, 1,292,408) 27.9 ms. A line through both: a rough guide elsewhere
#: (the step is mostly Python per decoder position at these sizes).
RNN_STEP_S = (8.9e-3, 14.7e-9)
#: Mean target positions (actions and ``<eos>``) of a training line by split: a trial's cost is about linear in it.
RNN_MEAN_TARGET = {"simple": 15.3, "length": 11.8, "addprim_jump": 13.7, "addprim_turn_left": 14.3,
                   "around_right": 12.8}
#: Greedy evaluation of the recurrent model, CPU-seconds per scored command at the paper's add-jump shape (the
#: whole test set, 7,706, and the 13,204 distinct training commands: 2.6 + 4.4 s measured as above, untrained, so
#: at the longest outputs), scaled as the training step.
RNN_EVAL_S = 3.4e-4
#: Test commands and distinct training commands of each generated split (bindscale.kit.scan.make_split): what a
#: recurrent trial scores with ``n_test: 0`` and as its training accuracy.
SPLIT_TEST = {"simple": 4182, "length": 3920, "addprim_jump": 7706, "addprim_turn_left": 1208, "around_right": 5685}
SPLIT_TRAIN_DISTINCT = {"simple": 16728, "length": 16990, "addprim_jump": 13204, "addprim_turn_left": 19702,
                        "around_right": 15225}
#: Source and target vocabularies of the recurrent model on SCAN (13 words and the end symbol; 6 actions, start
#: and end symbols).
SCAN_SRC_VOCAB, SCAN_TGT_VOCAB = 14, 8
#: CPU-seconds of one update of Russin et al.'s Syntactic Attention (``syntactic_attention_rnn``): ``SA_STEP_S[0] +
#: SA_STEP_S[1] × its parameters`` on an add-jump line of the mean target length, at the reference of
#: :data:`RNN_STEP_S` (Lake & Baroni's add-jump model at 12.2 ms). Measured (``time.process_time``, one thread, the
#: project's 2-core Xeon at load 5 to 7.5, 300 updates after 20, each run beside a run of Lake & Baroni's model):
#: their shape (semantic 120, syntax 200, 2,253,068 parameters) 30.6, 31.6 and 37.0 ms against Lake & Baroni's
#: 16.4, 17.3 and 23.4 ms (1.76 times, mean of the three ratios: 21.5 ms at the reference); semantic 60, syntax 100
#: (566,538) 20.3 ms against 23.4 (10.6 ms at the reference). A line through both: a rough guide elsewhere.
SA_STEP_S = (6.9e-3, 6.5e-9)
#: Greedy scoring of Syntactic Attention, CPU-seconds per command at their shape and the reference: 35.3 s for the
#: 7,706 test, 2,641 withheld and 10,563 distinct training commands measured beside the step above (1.69 ms a
#: command), divided by the same 1.76 × 16.4 / 12.2 load factor as the step (1.0 ms). Scaled as the step.
SA_EVAL_S = 1.0e-3


def recurrent_params(t) -> int:
    """Parameters of a recurrent trial's network on SCAN's vocabularies (by formula, nothing built)."""
    m = t.model
    if m.kind == "syntactic_attention_rnn":
        from bindscale.models.syntactic_attention_rnn import (
            syntactic_attention_rnn_params,
        )

        return syntactic_attention_rnn_params(SCAN_SRC_VOCAB, SCAN_TGT_VOCAB, m.semantic, m.syntax)["total"]
    from bindscale.models.seq2seq_rnn import seq2seq_params

    return seq2seq_params(SCAN_SRC_VOCAB, SCAN_TGT_VOCAB, m.hidden, m.n_layers, m.attention)["total"]


def recurrent_seconds(t) -> float:
    """CPU-seconds of one recurrent trial: ``steps`` updates at its kind's measured step (:data:`RNN_STEP_S`,
    :data:`SA_STEP_S`) scaled by the split's mean target length, and its greedy scoring (test set, in-distribution
    check set, distinct training commands) at :data:`RNN_EVAL_S` / :data:`SA_EVAL_S` scaled as a step."""
    split, n = t.task.split, recurrent_params(t)
    if t.model.kind == "syntactic_attention_rnn":
        fit, per_command, paper_n = SA_STEP_S, SA_EVAL_S, 2_253_068
    else:
        fit, per_command, paper_n = RNN_STEP_S, RNN_EVAL_S, 225_508
    step = (fit[0] + fit[1] * n) * RNN_MEAN_TARGET[split] / RNN_MEAN_TARGET["addprim_jump"]
    paper_step = fit[0] + fit[1] * paper_n
    n_eval = min(t.task.n_test or SPLIT_TEST[split], SPLIT_TEST[split]) + t.task.n_id + SPLIT_TRAIN_DISTINCT[split]
    return t.train.steps * step + per_command * n_eval * step / paper_step


def group_key(trial) -> tuple:
    """Plain transformers with equal keys share a stack (same split, model and steps / batch size; seed and
    the per-trial training fields may differ: :func:`bindscale.kit.stack_key`); every binding or recurrent
    trial is a group of its own (its trial id is in the key)."""
    key = stack_key(trial, ("task", "model"))
    return key if trial.model.kind == "transformer" else (*key, trial.trial_id)


def stack_step_seconds(trials: list, window: float = 0.05, rounds: int = 3) -> float:
    """Seconds of one training step of ``trials`` (plain transformers of one stack key) stacked, here and now
    (:func:`bindscale.kit.stack_step_seconds`). The planner times only groups of two or more trials, which
    binding trials never form (:func:`group_key`)."""
    from bindscale.kit import hook_model
    from bindscale.kit import stack_step_seconds as timed

    t = trials[0]
    return timed(trials, hook_model(vocab_size=TIMER_VOCAB), POSITIONS.get(t.task.split, POSITIONS_OTHER),
                 window, rounds)


def trial_cost(t) -> float:
    """Relative cost of one trial: steps × batch × positions × (layers + 4 + budget / 50,000) × the kind's
    step factor, plus its cache-free evaluation (:data:`EVAL_SECONDS_PER_EXAMPLE`, in cost units). The
    first part is the depth study's cost model of the same trainer. A recurrent trial: :func:`recurrent_seconds`
    in cost units."""
    if t.recurrent():
        return recurrent_seconds(t) / SECONDS_PER_COST
    m = t.model
    positions = POSITIONS.get(t.task.split, POSITIONS_OTHER)
    train = t.train.steps * t.train.batch_size * positions * (m.n_layers + 4 + m.budget / 50_000) * KIND_FACTOR[m.kind]
    n_eval = (t.task.n_test or 1000) + t.task.n_id
    return train + EVAL_SECONDS_PER_EXAMPLE[m.kind] * n_eval * (m.budget / 100_000) ** 0.5 / SECONDS_PER_COST


def job_cost(job: list) -> float:
    """Relative cost of a job: the sum of its trials' :func:`trial_cost`."""
    return float(sum(trial_cost(t) for t in job))


#: Training pairs of a split, at most, for the memory estimate (add-primitive turn left's 21,890, the largest of
#: SCAN's five splits; bindscale.kit.scan.make_split).
TRAIN_PAIRS_MAX = 22_000
#: Least memory a trial is planned with, in bytes: what the estimate leaves out at small sizes (evaluation,
#: the allocator's rounding), the flat 512 MiB the study planned every trial with before the estimate.
MEMORY_FLOOR = 512 << 20


def trial_memory_bytes(trial) -> int:
    """One trial's training memory, in bytes: :func:`bindscale.models.transformer_memory_bytes` at its shape
    (:func:`bindscale.models.binding_shapes.shape_for_budget`), batch, the split's batch positions (:data:`POSITIONS`),
    a SCAN-sized vocabulary and at most :data:`TRAIN_PAIRS_MAX` pairs on the device, in the stacked form (as the
    depth study's: the same model and trainer); at least :data:`MEMORY_FLOOR`. A binding
    model (never stacked) is counted as the plain model of its shape with its own parameter count (a third
    embedding table for syntactic attention) and, for syntactic attention, its one explicit ``L × L`` attention
    map: an approximation, not measured (the stacked form's two extra saved widths per layer stand in for the
    TP-Transformer's role and bound tensors)."""
    if trial.recurrent():
        return _recurrent_memory(trial)
    from bindscale.models import transformer_memory_bytes
    from bindscale.models.binding_shapes import shape_for_budget

    m, positions = trial.model, POSITIONS.get(trial.task.split, POSITIONS_OTHER)
    s = shape_for_budget(m.kind, m.budget, m.n_layers, m.n_heads)
    tables = (3 if m.kind == "syntactic_attention" else 2) * TIMER_VOCAB
    tables += POSITIONS_OTHER + 1 if m.pos == "learned" else 0
    need = transformer_memory_bytes(
        n_layers=s.n_layers, d_model=s.d_model, d_ff=s.d_ff, vocab_size=TIMER_VOCAB, batch_size=trial.train.batch_size,
        positions=positions, n_examples=TRAIN_PAIRS_MAX, example_len=positions + 1, steps=trial.train.steps,
        precision=trial.train.precision, n_params=s.n_params + tables * s.d_model,
        explicit_attention_maps=1 if m.kind == "syntactic_attention" else 0)
    return max(MEMORY_FLOOR, need)


def _recurrent_memory(trial) -> int:
    """A recurrent trial's memory: :data:`MEMORY_FLOOR` (its parameters, Adam state and one sequence's activations
    are a few MiB at the paper's sizes; evaluation decodes a length group of the test set at once), and 64 bytes a
    parameter above it (weights, gradients, Adam's two moments, with room)."""
    return MEMORY_FLOOR + 64 * recurrent_params(trial)


def check_trials(trials: list) -> None:
    """Nothing to read before a run: the study generates its data."""
