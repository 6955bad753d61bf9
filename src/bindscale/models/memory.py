"""Device memory of training one transformer trial, in bytes, from its shapes (no torch: the planner reads it).

What one trial holds at the peak of a training step of :mod:`bindscale.train.loop` (alone,
:func:`~bindscale.train.loop.train_seq_model`, or as one member of a stack,
:func:`~bindscale.train.loop.train_stacked_seq_model`; a stack of ``T`` trials holds ``T`` times this):

- **state**: 16 bytes per parameter, fp32 weights, gradients and AdamW's two moments (``torch.optim.AdamW`` alone,
  :class:`~bindscale.train.stacked_adamw.StackedAdamW` in a stack; the alone loop frees the gradients with
  ``zero_grad(set_to_none=True)`` only after the next forward pass, so all four are held at the peak). bf16
  training (``train.precision`` bf16, or auto where it resolves to bf16) keeps the same four in fp32 (master
  weights) and adds autocast's cache of bf16 weight copies during the forward pass, 2 bytes per parameter;
  its activations are counted as fp32 (an upper bound: some are saved in bf16; not measured).
- **activations**, per position per layer, the fp32 tensors autograd saves for the backward pass
  (:data:`SAVED_PER_LAYER`): for :class:`~bindscale.models.transformer.Transformer`'s pre-LayerNorm block,
  ``11·d_model + 2·d_ff`` floats (block input, LN output, the fused QKV output, rotated queries and keys,
  attention output and its contiguous copy for the projection, the residual after attention, LN output, the
  MLP's hidden layer before and after GELU); the stacked block adds ``2·d_model`` (its LayerNorm is a plain
  normalisation plus an ``addcmul`` that saves the normalised copy): ``13·d_model + 2·d_ff``. Counted with
  ``torch.autograd.graph.saved_tensors_hooks`` on the CPU (the unique storages saved per position and layer, net
  of the weights: 19.6 floats / d_model alone, 21.8 stacked, at d_ff = 4·d_model, 2-4 layers, widths 64-128).
  Plus the embedding output and the final LayerNorm (:data:`SAVED_OUTSIDE_LAYERS` per position).
  Attention is PyTorch's fused ``scaled_dot_product_attention`` (``is_causal``: the memory-efficient kernel in
  fp32 on CUDA, flash in bf16), which keeps one log-sum-exp per query and head, not the ``L × L`` scores;
  a model that computes its attention weights explicitly keeps ``batch × L²`` floats per map
  (``explicit_attention_maps``: heads × layers of it).
- **logits**: ``batch × positions × vocab`` floats three times (the log-softmax output the loss saves, its
  gradient and the logits' gradient).
- **data**: the training set, moved to the device for the whole run (int64 tokens and a bool loss mask, 9
  bytes per token), and the batch order (``steps × batch`` int64 indices).

Checked against the peaks measured on an NVIDIA H200 (``benchmarks/results/gpu_paper_h200_2026-12-04.json``,
``torch.cuda.max_memory_allocated`` while ``benchmarks/gpu_paper.py`` trained one ``-paper`` trial alone in fp32,
20 warm-up steps and up to 300 timed ones, no evaluation; each trial's batch length, set size and vocabulary
resolved from its study file and trial id): with :data:`ACTIVATION_FACTOR` 1 (the count itself, nothing fitted)
the alone estimate is within -3% to +7% of all five measured trials (GiB measured / estimated: depth-paper
4.24 / 4.55, subgraphs-paper 72.5 / 75.9, length_transfer-paper 4.74 / 4.80, ceiling-paper 0.634 / 0.619,
geometry-paper 1.55 / 1.50; the measured peak less state, logits and data is 0.92-1.05 times the counted
activations, geometric mean 0.99). The stacked form, which the planner uses, is 3-17% above those alone peaks.
``tests/unit/test_memory_estimate.py`` holds the alone estimate to :data:`MEASURED_TOLERANCE`. Not measured on a
GPU: stacks (the stacked form's extra ``2·d_model`` per layer is counted on the CPU only), bf16 training, and
evaluation after training (greedy decoding with a KV cache, one member at a time, after the optimizer state is
freed; by the same count smaller than a training step at these shapes).
"""

from __future__ import annotations

from typing import NamedTuple

from bindscale.models.shapes import nonembedding_params

#: Bytes of fp32 state per parameter: weights, gradients, AdamW's first and second moments.
STATE_BYTES_PER_PARAM = 16
#: Extra bytes per parameter under bf16 autocast: its cache of bf16 weight copies during the forward pass.
BF16_CACHE_BYTES_PER_PARAM = 2
#: fp32 floats autograd saves per position and layer, as ``(per d_model, per d_ff)``, alone and stacked
#: (module docstring: counted, not fitted).
SAVED_PER_LAYER = {False: (11, 2), True: (13, 2)}
#: fp32 floats per position saved outside the blocks, in units of d_model: the embedding output and the
#: final LayerNorm's input and output (one more in a stack: its LayerNorm's normalised copy).
SAVED_OUTSIDE_LAYERS = {False: 3, True: 4}
#: Copies of the logits at the peak: the log-softmax output the loss saves, its gradient, the logits' gradient.
LOGIT_COPIES = 3
#: Bytes per token of a training set on the device: an int64 token and a bool loss-mask entry.
DATA_BYTES_PER_TOKEN = 9
#: Multiplier of the counted activations and logits. 1: the count itself; the five measured peaks (module
#: docstring) put the measured activations at 0.92-1.05 times the count, so nothing was fitted.
ACTIVATION_FACTOR = 1.0
#: Largest relative error of the alone estimate against the measured peaks that the tests allow (the five
#: measured trials are within -3% to +7%).
MEASURED_TOLERANCE = 0.15


class TrainingMemory(NamedTuple):
    """One trial's training memory by part, in bytes (module docstring); ``total`` is their sum."""

    state: int
    activations: int
    logits: int
    data: int

    @property
    def total(self) -> int:
        return self.state + self.activations + self.logits + self.data


def transformer_training_memory(*, n_layers: int, d_model: int, d_ff: int, vocab_size: int, batch_size: int,
                                positions: int, n_examples: int = 0, example_len: int = 0, steps: int = 0,
                                position_table: int = 0, stacked: bool = True, precision: str = "fp32",
                                explicit_attention_maps: int = 0, n_params: int | None = None) -> TrainingMemory:
    """Memory of one trial's training step at its peak, by part (module docstring), in bytes.

    Args:
        n_layers, d_model, d_ff: the transformer's shape (:func:`bindscale.models.shapes.nonembedding_params`).
        vocab_size: the embedding's and the untied head's rows (and the logits' width).
        batch_size: sequences per step.
        positions: positions of a training batch (its longest sequence: batches are trimmed to it).
        n_examples, example_len: the training set kept on the device (sequences × padded length; 0: not counted).
        steps: optimizer steps (the batch order kept on the device; 0: not counted).
        position_table: rows of a learned position embedding (0: rotary or none).
        stacked: the trial trains in a stack (:class:`~bindscale.models.stacked_transformer.StackedTransformer`,
            whose LayerNorms save one more copy) rather than alone.
        precision: the trial's ``train.precision``; ``bf16`` adds autocast's weight cache (``auto`` is counted
            as ``bf16``, the larger).
        explicit_attention_maps: ``batch × positions²`` maps of attention weights the forward pass keeps (a model
            that computes them explicitly: heads × layers; 0 for the fused kernel).
        n_params: trainable parameters, for a model other than the plain transformer (default: the plain one's,
            blocks, token embedding, untied head and ``position_table``).
    """
    if n_params is None:
        n_params = nonembedding_params(n_layers, d_model, d_ff) + (2 * vocab_size + position_table) * d_model
    params = n_params
    per_param = STATE_BYTES_PER_PARAM + (BF16_CACHE_BYTES_PER_PARAM if precision in ("bf16", "auto") else 0)
    per_d, per_ff = SAVED_PER_LAYER[stacked]
    floats = batch_size * positions * (n_layers * (per_d * d_model + per_ff * d_ff)
                                       + SAVED_OUTSIDE_LAYERS[stacked] * d_model)
    floats += explicit_attention_maps * batch_size * positions * positions
    return TrainingMemory(
        state=per_param * params,
        activations=round(4 * ACTIVATION_FACTOR * floats),
        logits=round(4 * ACTIVATION_FACTOR * LOGIT_COPIES * batch_size * positions * vocab_size),
        data=DATA_BYTES_PER_TOKEN * n_examples * example_len + 8 * steps * batch_size,
    )


def transformer_memory_bytes(**shape) -> int:
    """:func:`transformer_training_memory`'s total, in bytes (keyword arguments as it takes them)."""
    return transformer_training_memory(**shape).total
