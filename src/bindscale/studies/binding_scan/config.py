"""The binding_scan study's trial config: one decoder-only model (plain, syntactic attention or
TP-Transformer) of a given depth and non-embedding budget trained on one generated SCAN split, or (the
published recurrent baseline, ``binding_scan-lake2018.yaml``) a recurrent encoder-decoder trained as Lake &
Baroni 2018 trained theirs.

Sections: ``task`` (:class:`BindingTaskConfig`); ``model``, by kind: :class:`BindingModelConfig` (the decoders)
or :class:`RNNModelConfig` (``lstm_seq2seq``); ``train``, by the model: :class:`bindscale.kit.SeqTrainConfig`
(the decoders' AdamW recipe, :mod:`bindscale.train.loop`) or :class:`RNNTrainConfig` (single-example trials
with teacher forcing, :mod:`.rnn_trial`). A recurrent trial's records never decide a claim
(:func:`.verdicts.prepare_rows` leaves them out).
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import Discriminator, Field, Tag, model_validator

from bindscale.kit import (
    ScanTaskConfig,
    SeqTrainConfig,
    StrictModel,
    TrialBase,
    keep_own_kind_fields,
    model_kind,
    scan,
)
from bindscale.models.binding_shapes import shape_for_budget

#: Model kinds of the recurrent encoder-decoder (:class:`RNNModelConfig`; :mod:`bindscale.models.seq2seq_rnn`).
RNN_KINDS = ("lstm_seq2seq",)


class BindingTaskConfig(ScanTaskConfig):
    """The kit's SCAN task section (:class:`bindscale.kit.ScanTaskConfig`, shared with ``depth``) with this
    study's defaults: a generated split only (:data:`bindscale.kit.scan.SPLITS`; add-jump by default) and
    300 test examples scored."""

    split: Literal["simple", "length", "addprim_jump", "addprim_turn_left", "around_right"] = "addprim_jump"
    n_test: int = Field(300, ge=0, le=1_000_000, description="test examples scored (0: all)")


class BindingModelConfig(StrictModel):
    """A decoder-only model given by kind, depth and non-embedding budget; the width follows
    (:func:`bindscale.models.binding_shapes.shape_for_budget`): ``transformer`` is the plain model of the
    depth study's ladder, ``syntactic_attention`` (Russin et al. 2019) and ``tp_transformer`` (Schlag et al.
    2019) the explicit-binding ones (:mod:`bindscale.models.binding`)."""

    kind: Literal["transformer", "syntactic_attention", "tp_transformer"] = "transformer"
    n_layers: int = Field(2, ge=1, le=64)
    budget: int = Field(100_000, ge=100, le=1_000_000_000, description="non-embedding parameters")
    n_heads: int = Field(2, ge=1, le=64)
    pos: Literal["rope", "learned"] = "rope"

    @model_validator(mode="after")
    def _shape(self) -> BindingModelConfig:
        shape_for_budget(self.kind, self.budget, self.n_layers, self.n_heads)  # ValueError: budget too small
        return self


class RNNModelConfig(StrictModel):
    """A recurrent encoder-decoder (:class:`bindscale.models.seq2seq_rnn.Seq2SeqRNN`): LSTM layers of ``hidden``
    units in the encoder and in the decoder, Bahdanau attention when ``attention``, dropout on the embeddings
    and the recurrent layers' outputs. The defaults are Lake & Baroni 2018's best model on the add-primitive
    "jump" split (§4, Experiment 3: LSTM, attention, one layer, 100 hidden units, dropout 0.1)."""

    kind: Literal["lstm_seq2seq"] = "lstm_seq2seq"
    hidden: int = Field(100, ge=1, le=8192, description="units per layer (also the embedding width)")
    n_layers: int = Field(1, ge=1, le=8)
    dropout: float = Field(0.1, ge=0.0, lt=1.0)
    attention: bool = True


class RNNTrainConfig(StrictModel):
    """Lake & Baroni 2018's training (§3): ``steps`` trials, each one training line drawn with replacement
    (``batch_size`` 1), Adam with its default parameters at a constant ``lr``, gradients clipped to norm
    ``grad_clip``, the decoder fed the gold previous output with probability ``teacher_forcing`` per trial and
    its own output otherwise (:mod:`.rnn_trial`)."""

    steps: int = Field(100_000, ge=1, le=100_000_000, description="training trials (single-example updates)")
    batch_size: Literal[1] = Field(1, description="one sequence per update, as the paper's trials")
    lr: float = Field(1e-3, gt=0.0, le=10.0)
    grad_clip: float | None = Field(5.0, gt=0.0)
    teacher_forcing: float = Field(0.5, ge=0.0, le=1.0, description="probability a trial is teacher-forced")


def _model_family(v: Any) -> str:
    return "rnn" if model_kind(v) in RNN_KINDS else "decoder"


def _train_family(v: Any) -> str:
    """The recurrent recipe is the train section with ``teacher_forcing`` (:meth:`BindingTrial._by_kind` adds it
    to a recurrent trial's section that leaves it out)."""
    if isinstance(v, dict):
        return "rnn" if "teacher_forcing" in v else "decoder"
    return "rnn" if isinstance(v, RNNTrainConfig) else "decoder"


def _own_fields(section: dict, own: type[StrictModel], other: type[StrictModel]) -> dict:
    """``section`` without the fields only ``other`` has (a typo, in neither, is still refused)."""
    return {k: v for k, v in section.items() if k in own.model_fields or k not in other.model_fields}


class BindingTrial(TrialBase):
    """A binding_scan trial: one model (kind, depth, budget; or a recurrent one) trained on one SCAN split."""

    SECTIONS: ClassVar[tuple[str, ...]] = ("task", "model", "train")
    AXES: ClassVar[dict[str, str]] = {
        "split": "task.split",
        "n_test": "task.n_test",
        "model": "model.kind",
        "layers": "model.n_layers",
        "budget": "model.budget",
        "heads": "model.n_heads",
        "pos": "model.pos",
        "steps": "train.steps",
        "lr": "train.lr",
        "seed": "seed",
        # the recurrent encoder-decoder's (RNNModelConfig, RNNTrainConfig)
        "hidden": "model.hidden",
        "dropout": "model.dropout",
        "attention": "model.attention",
        "teacher_forcing": "train.teacher_forcing",
    }
    NESTED_METRICS: ClassVar[dict[str, tuple[tuple[str, ...], tuple[str, ...]]]] = {
        "acc_by_length": (("length",), ("n", "acc")),
    }
    #: The recurrent model's fields are dropped from the decoders' trials (:meth:`_by_kind`): on a study without a
    #: recurrent trial a ``--set`` of one is refused with this line.
    OVERRIDE_HINTS: ClassVar[dict[str, str]] = {
        path: ("the recurrent encoder-decoder's fields (model.kind lstm_seq2seq) belong to the binding_scan-lake2018 "
               f"study file: bindscale run binding_scan-lake2018 --set {path}=…")
        for path in ([f"model.{k}" for k in set(RNNModelConfig.model_fields) - set(BindingModelConfig.model_fields)]
                     + [f"train.{k}" for k in set(RNNTrainConfig.model_fields) - set(SeqTrainConfig.model_fields)])}
    kind: Literal["binding_scan"] = "binding_scan"
    task: BindingTaskConfig = BindingTaskConfig()
    model: Annotated[Annotated[BindingModelConfig, Tag("decoder")] | Annotated[RNNModelConfig, Tag("rnn")],
                     Discriminator(_model_family)] = BindingModelConfig()
    train: Annotated[Annotated[SeqTrainConfig, Tag("decoder")] | Annotated[RNNTrainConfig, Tag("rnn")],
                     Discriminator(_train_family)] = SeqTrainConfig(steps=1000, batch_size=32, lr=5e-3,
                                                                    weight_decay=0.1, warmup_steps=50)
    seed: int = Field(0, ge=0, le=2**31 - 1)

    @model_validator(mode="before")
    @classmethod
    def _by_kind(cls, data: Any) -> Any:
        """Sections by the model's kind: the model fields of the other kinds dropped
        (:func:`bindscale.kit.keep_own_kind_fields`), and the train fields only the other recipe has, so that one
        study file may hold decoders and a recurrent model; a recurrent trial's ``train`` is its recipe
        (:class:`RNNTrainConfig`, the paper's defaults where a field is left out)."""
        kinds = {k: BindingModelConfig for k in BindingModelConfig.model_fields["kind"].annotation.__args__}
        data = keep_own_kind_fields(data, {**kinds, **{k: RNNModelConfig for k in RNN_KINDS}})
        if not isinstance(data, dict) or isinstance(data.get("train"), StrictModel):
            return data
        recurrent = model_kind(data.get("model") or {}) in RNN_KINDS
        if recurrent:
            train = _own_fields(dict(data.get("train") or {}), RNNTrainConfig, SeqTrainConfig)
            train.setdefault("teacher_forcing", RNNTrainConfig.model_fields["teacher_forcing"].default)
            return {**data, "train": train}
        if isinstance(data.get("train"), dict):
            return {**data, "train": _own_fields(data["train"], SeqTrainConfig, RNNTrainConfig)}
        return data

    @model_validator(mode="after")
    def _recipe_of_its_model(self) -> BindingTrial:
        if isinstance(self.model, RNNModelConfig) != isinstance(self.train, RNNTrainConfig):
            raise ValueError(f"model.kind {self.model.kind} trains with the "
                             f"{'recurrent' if isinstance(self.model, RNNModelConfig) else 'decoder'} recipe; "
                             f"its train section is the other one")
        return self

    def recurrent(self) -> bool:
        """Whether the model is the recurrent encoder-decoder (:data:`RNN_KINDS`)."""
        return isinstance(self.model, RNNModelConfig)


#: The name the study plugin finds its trial config by (bindscale.core.study.CONVENTION).
TrialConfig = BindingTrial

assert set(scan.SPLITS) == set(BindingTaskConfig.model_fields["split"].annotation.__args__)
