"""Config sections shared by studies: the decoder-only transformer (:mod:`bindscale.models.transformer`)
and the sequence trainer's settings (:mod:`bindscale.train.loop`).

Studies build on these (a study's own trial config lives in its package); their
field defaults are part of every trial id, so changing one re-runs every study using it. A field added
later is id-neutral at its default (:func:`bindscale.core.config.id_neutral_field`: ``train.precision``,
``train.pack``),
so the trials that keep it have the ids they had before it existed.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from bindscale.core.config import StrictModel, id_neutral_field

class TransformerConfig(StrictModel):
    """A character-level decoder-only transformer (bindscale.models.transformer)."""

    kind: Literal["transformer"] = "transformer"
    n_layers: int = Field(2, ge=1, le=64)
    d_model: int = Field(64, ge=8, le=8192)
    n_heads: int = Field(4, ge=1, le=128)
    mlp_ratio: int = Field(4, ge=1, le=16)

    @model_validator(mode="after")
    def _heads(self) -> "TransformerConfig":
        if self.d_model % self.n_heads or (self.d_model // self.n_heads) % 2:
            raise ValueError(f"d_model={self.d_model} must split into n_heads={self.n_heads} heads of even size (RoPE)")
        return self


class PositionalTransformerConfig(TransformerConfig):
    """:class:`TransformerConfig` with a choice of positions (``rope`` / ``learned`` / ``none``).

    A separate class so the configs, and hence trial ids, of studies written before the option
    existed are unchanged (the field would enter every dumped config).
    """

    pos: Literal["rope", "learned", "none"] = "rope"

    @model_validator(mode="after")
    def _heads(self) -> "PositionalTransformerConfig":
        if self.d_model % self.n_heads or (self.pos == "rope" and (self.d_model // self.n_heads) % 2):
            raise ValueError(f"d_model={self.d_model} must split into n_heads={self.n_heads} heads"
                             + (" of even size (RoPE)" if self.pos == "rope" else ""))
        return self


class SeqTrainConfig(StrictModel):
    """AdamW with warm-up and cosine decay on a fixed training set (bindscale.train.loop)."""

    steps: int = Field(1500, ge=1, le=10_000_000)
    batch_size: int = Field(64, ge=1, le=65536)
    lr: float = Field(1e-3, gt=0.0, le=10.0)
    weight_decay: float = Field(0.1, ge=0.0, le=10.0)
    warmup_steps: int = Field(100, ge=0, le=1_000_000)
    grad_clip: float | None = Field(1.0, gt=0.0)
    precision: Literal["fp32", "bf16", "tf32", "auto"] = id_neutral_field(
        "fp32",
        description="training matmul precision (bindscale.train.loop): fp32; bf16 = the forward pass under bf16 "
        "autocast, with fp32 master weights, gradients and AdamW state and the loss reduced in fp32; tf32 = fp32 "
        "with TF32 tensor-core matmuls (CUDA only; fp32 on CUDA never uses TF32 unless asked); auto = bf16 where "
        "the device has bf16 matrix units (a CPU with AMX-BF16 or a bf16 CUDA GPU) and bf16 is measured to pay "
        "for the model (the loop's Transformer: d_model >= bindscale.train.loop.BF16_MIN_D_MODEL), else fp32. "
        "Evaluation (greedy decoding) stays fp32. Left out of the trial id at its default, fp32",
    )
    pack: bool = id_neutral_field(
        False,
        description="pack each step's mini-batch (bindscale.train.loop): the same examples, laid side by side into "
        "as few rows as first-fit-decreasing finds, each row no longer than the batch's longest example, with "
        "positions restarting per example and block-diagonal causal attention; the same losses and gradients up to "
        "float rounding, fewer padded positions computed. Needs a model that takes packed rows (the Transformer and "
        "its stacked form). Left out of the trial id at its default, off",
    )
