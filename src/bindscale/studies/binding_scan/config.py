"""The binding_scan study's trial config: one decoder-only model (plain, syntactic attention or
TP-Transformer) of a given depth and non-embedding budget trained on one generated SCAN split, or a published
recurrent encoder-decoder trained as its paper trained it: Lake & Baroni 2018's (``binding_scan-lake2018.yaml``)
or Russin et al. 2019's Syntactic Attention (``binding_scan-russin2019.yaml``).

Sections: ``task`` (:class:`BindingTaskConfig`); ``model``, by kind: :class:`BindingModelConfig` (the decoders),
:class:`RNNModelConfig` (``lstm_seq2seq``) or :class:`SyntacticAttentionRNNConfig` (``syntactic_attention_rnn``);
``train``, by the model: :class:`bindscale.kit.SeqTrainConfig` (the decoders' AdamW recipe,
:mod:`bindscale.train.loop`) or :class:`RNNTrainConfig` (single-example updates, :mod:`.rnn_trial`), whose
defaults where a field is left out are the paper's of the model's kind (:data:`RECURRENT_RECIPES`). A recurrent
trial's records never decide a claim (:func:`.verdicts.prepare_rows` leaves them out).
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import Discriminator, Field, Tag, model_validator

from bindscale.kit import (
    ScanTaskConfig,
    SeqTrainConfig,
    StrictModel,
    TrialBase,
    id_neutral_field,
    keep_own_kind_fields,
    model_kind,
    scan,
)
from bindscale.models.binding_shapes import shape_for_budget

#: Model kinds of the recurrent encoder-decoders, published baselines reproduced in their own settings, whose
#: records decide no claim: Lake & Baroni 2018's (:class:`RNNModelConfig`, :mod:`bindscale.models.seq2seq_rnn`) and
#: Russin et al. 2019's (:class:`SyntacticAttentionRNNConfig`, :mod:`bindscale.models.syntactic_attention_rnn`).
RNN_KINDS = ("lstm_seq2seq", "syntactic_attention_rnn")


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


class SyntacticAttentionRNNConfig(StrictModel):
    """Russin et al. 2019's Syntactic Attention encoder-decoder
    (:class:`bindscale.models.syntactic_attention_rnn.SyntacticAttentionRNN`): context-free semantic embeddings
    ``semantic`` wide, a two-layer bidirectional LSTM syntax stream (``syntax / 2`` then ``syntax`` units a
    direction) that only sets the attention, a decoder LSTM of ``2 · syntax`` units, dropout on both embeddings.
    The defaults are their training script's (``m_hidden_dim`` 120, ``x_hidden_dim`` 200, ``dropout_p`` 0.5)."""

    kind: Literal["syntactic_attention_rnn"] = "syntactic_attention_rnn"
    semantic: int = Field(120, ge=1, le=8192, description="width of the semantic (context-free) embeddings")
    syntax: int = Field(200, ge=2, le=8192, multiple_of=2,
                        description="syntax stream width X (embeddings X/2, layers X/2 and X a direction)")
    dropout: float = Field(0.5, ge=0.0, lt=1.0)


class RNNTrainConfig(StrictModel):
    """A recurrent model's training: ``steps`` updates on one training line each (``batch_size`` 1), Adam with its
    default parameters at a constant ``lr``, gradients clipped to norm ``grad_clip`` (None: not clipped), the
    decoder fed the gold previous output with probability ``teacher_forcing`` per update and its own output
    otherwise (None for a decoder that reads no output), the loss summed or averaged over a line's target
    positions, the lines drawn with replacement or in shuffled epochs (:mod:`.rnn_trial`). The field defaults are
    Lake & Baroni 2018's (§3); a trial that leaves a field out gets its kind's paper's (:data:`RECURRENT_RECIPES`)."""

    steps: int = Field(100_000, ge=1, le=100_000_000, description="training trials (single-example updates)")
    batch_size: Literal[1] = Field(1, description="one sequence per update, as the paper's trials")
    lr: float = Field(1e-3, gt=0.0, le=10.0)
    grad_clip: float | None = Field(5.0, gt=0.0)
    teacher_forcing: float | None = Field(0.5, ge=0.0, le=1.0,
                                          description="probability an update is teacher-forced (None: no feedback)")
    # Added with Russin et al.'s recipe; id-neutral at Lake & Baroni's values, so their trials keep their ids.
    loss: Literal["sum", "mean"] = id_neutral_field(
        "sum", description="a line's loss: summed (nats per sequence) or averaged over its target positions")
    order: Literal["replacement", "epochs"] = id_neutral_field(
        "replacement", description="lines drawn uniformly with replacement, or in shuffled passes over the set")


#: Each recurrent kind's paper's recipe where a trial's ``train`` section leaves a field out (else
#: :class:`RNNTrainConfig`'s defaults, Lake & Baroni's). Russin et al.'s is read from their ``train_test.py``
#: (:mod:`.rnn_trial`): 200,000 updates, no clipping in effect, no output fed back, the NLL averaged over a line's
#: positions, shuffled epochs.
RECURRENT_RECIPES: dict[str, dict[str, Any]] = {
    "lstm_seq2seq": {"teacher_forcing": RNNTrainConfig.model_fields["teacher_forcing"].default},
    "syntactic_attention_rnn": {"steps": 200_000, "grad_clip": None, "teacher_forcing": None, "loss": "mean",
                                "order": "epochs"},
}


def _model_family(v: Any) -> str:
    kind = model_kind(v)
    return "sarnn" if kind == "syntactic_attention_rnn" else "rnn" if kind in RNN_KINDS else "decoder"


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
        # Russin et al.'s (SyntacticAttentionRNNConfig)
        "semantic": "model.semantic",
        "syntax": "model.syntax",
    }
    NESTED_METRICS: ClassVar[dict[str, tuple[tuple[str, ...], tuple[str, ...]]]] = {
        "acc_by_length": (("length",), ("n", "acc")),
    }
    #: The recurrent models' fields are dropped from the decoders' trials (:meth:`_by_kind`): on a study without a
    #: recurrent trial a ``--set`` of one is refused with this line.
    OVERRIDE_HINTS: ClassVar[dict[str, str]] = {
        path: ("the recurrent encoder-decoders' fields (model.kind lstm_seq2seq, syntactic_attention_rnn) belong to "
               "the binding_scan-lake2018 and binding_scan-russin2019 study files: bindscale run "
               f"binding_scan-lake2018 --set {path}=…")
        for path in ([f"model.{k}" for k in (set(RNNModelConfig.model_fields) | set(SyntacticAttentionRNNConfig.model_fields))
                      - set(BindingModelConfig.model_fields)]
                     + [f"train.{k}" for k in set(RNNTrainConfig.model_fields) - set(SeqTrainConfig.model_fields)])}
    kind: Literal["binding_scan"] = "binding_scan"
    task: BindingTaskConfig = BindingTaskConfig()
    model: Annotated[Annotated[BindingModelConfig, Tag("decoder")] | Annotated[RNNModelConfig, Tag("rnn")]
                     | Annotated[SyntacticAttentionRNNConfig, Tag("sarnn")],
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
        (:class:`RNNTrainConfig`, its kind's paper's where a field is left out: :data:`RECURRENT_RECIPES`)."""
        kinds = {k: BindingModelConfig for k in BindingModelConfig.model_fields["kind"].annotation.__args__}
        data = keep_own_kind_fields(data, {**kinds, "lstm_seq2seq": RNNModelConfig,
                                           "syntactic_attention_rnn": SyntacticAttentionRNNConfig})
        if not isinstance(data, dict) or isinstance(data.get("train"), StrictModel):
            return data
        kind = model_kind(data.get("model") or {})
        if kind in RNN_KINDS:
            train = _own_fields(dict(data.get("train") or {}), RNNTrainConfig, SeqTrainConfig)
            return {**data, "train": {**RECURRENT_RECIPES[kind], **train}}
        if isinstance(data.get("train"), dict):
            return {**data, "train": _own_fields(data["train"], SeqTrainConfig, RNNTrainConfig)}
        return data

    @model_validator(mode="after")
    def _recipe_of_its_model(self) -> BindingTrial:
        if self.recurrent() != isinstance(self.train, RNNTrainConfig):
            raise ValueError(f"model.kind {self.model.kind} trains with the "
                             f"{'recurrent' if self.recurrent() else 'decoder'} recipe; "
                             f"its train section is the other one")
        if self.recurrent() and (self.train.teacher_forcing is None) != (self.model.kind == "syntactic_attention_rnn"):
            raise ValueError(f"train.teacher_forcing: model.kind {self.model.kind} "
                             + ("reads no previous output (leave teacher_forcing out)"
                                if self.model.kind == "syntactic_attention_rnn" else "needs a probability"))
        return self

    def recurrent(self) -> bool:
        """Whether the model is a recurrent encoder-decoder (:data:`RNN_KINDS`)."""
        return isinstance(self.model, (RNNModelConfig, SyntacticAttentionRNNConfig))


#: The name the study plugin finds its trial config by (bindscale.core.study.CONVENTION).
TrialConfig = BindingTrial

assert set(scan.SPLITS) == set(BindingTaskConfig.model_fields["split"].annotation.__args__)
