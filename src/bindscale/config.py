"""Validated configuration: one trial, and a study (a base trial plus sweep grids).

Every model forbids unknown fields, so a typo in a study file is an error, not
a silently ignored key. :func:`format_validation_error` turns pydantic's report
into the one line the CLI prints.
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import json
import math
import re
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal, Union

import yaml
from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, ValidationError, model_validator

from .errors import ConfigError

Encoding = Literal["identity", "orthogonal", "tokens", "invertible", "interval_shuffle", "fewshot"]
ENCODINGS: tuple[str, ...] = Encoding.__args__  # type: ignore[attr-defined]
#: Largest number of module combinations a task family may enumerate (splits redraw over all of them).
MAX_COMBINATIONS = 5000


class _Strict(BaseModel):
    # strict: no silent coercion (``width: true`` is not 1); inf/NaN are not numbers a config may hold.
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)


class TaskConfig(_Strict):
    """The hyperteacher task family (DESIGN §4; Schug et al. 2024)."""

    family: Literal["hyperteacher"] = "hyperteacher"
    M: int = Field(8, ge=2, le=64, description="number of modules")
    K: int = Field(3, ge=1, le=8, description="largest number of active modules per task")
    encoding: Encoding = "identity"
    split: Literal["random", "disconnected", "non_compositional"] = "random"
    holdout: float = Field(0.25, ge=0.0, lt=1.0, description="fraction of combinations held out")
    withheld_pairs: int = Field(0, ge=0, le=64, description="module pairs never seen together in training (split "
                                "random): their combinations are held out, out-of-hull by construction")
    input_dim: int = Field(16, ge=1, le=1024)
    hidden_dim: int = Field(16, ge=1, le=1024)
    output_dim: int = Field(16, ge=1, le=1024)
    samples_per_task: int = Field(16, ge=2, le=4096, description="inputs per task (R² needs within-task variance: at least 2)")
    n_shots: int = Field(8, ge=1, le=256, description="demonstrations per task (fewshot encoding)")
    teacher: Literal["reference", "per_task_scale"] = Field(
        "reference",
        description="teacher definition (bindscale.tasks.hyperteacher): reference = the code of Redhardt, Schug, "
        "Akram 2025 (weights from {0.5,...,1.0}, mix scaled by 1/sqrt(K), truncated-normal modules, biases "
        "U[0,0.5), no readout bias); per_task_scale = bindscale before issue 13 (weights U[0.5,1], mix scaled by "
        "1/sqrt(k) per task, Gaussian modules and biases, readout bias)",
    )

    @model_validator(mode="after")
    def _k_le_m(self) -> "TaskConfig":
        if self.K > self.M:
            raise ValueError(f"K={self.K} must be at most M={self.M}")
        n = sum(math.comb(self.M, k) for k in range(1, self.K + 1))
        if n > MAX_COMBINATIONS:
            raise ValueError(f"M={self.M}, K={self.K} give {n} module combinations; at most {MAX_COMBINATIONS} "
                             "are supported (lower M or K)")
        return self


class ModelConfig(_Strict):
    """A student network; ``width`` is the MLP hidden width or the hypernet's target hidden width."""

    kind: Literal["mlp", "hypernet"] = "mlp"
    width: int = Field(256, ge=1, le=16384)
    depth: int = Field(3, ge=1, le=32, description="hidden layers (MLP) / target-net hidden layers (hypernet)")
    activation: Literal["relu", "gelu", "tanh"] = "relu"
    n_banks: int | None = Field(None, ge=1, le=1024, description="hypernet weight banks (default: M)")
    init: Literal["auto", "lecun_normal", "torch_uniform"] = Field(
        "auto",
        description="parameter init: lecun_normal = truncated normal, variance 1/fan_in, zero biases (flax Dense "
        "default, as the reference code of Redhardt et al. 2025); torch_uniform = U(±1/sqrt(fan_in)) for weights "
        "and biases (PyTorch nn.Linear default; bindscale before issue 13); auto = lecun_normal for the mlp, "
        "torch_uniform for the hypernet (benchmarks/reference_curve.py)",
    )


class TrainConfig(_Strict):
    """AdamW on online-sampled batches, with an evaluation schedule."""

    steps: int = Field(2000, ge=1, le=10_000_000)
    batch_tasks: int = Field(64, ge=1, le=65536, description="tasks per step (each with samples_per_task rows)")
    lr: float = Field(1e-3, gt=0.0, le=10.0)
    weight_decay: float = Field(3e-3, ge=0.0, le=10.0)
    grad_clip: float | None = Field(1.0, gt=0.0, description="per-trial gradient-norm clip; null = off")
    n_evals: int = Field(5, ge=1, le=1000, description="evaluations over training (the last at the end)")
    eval_tasks: int = Field(256, ge=1, le=100_000, description="tasks per evaluation set")
    probe_tasks: int = Field(256, ge=8, le=100_000, description="tasks for fitting / scoring probes")
    probe_samples: int = Field(4, ge=1, le=4096, description="inputs x per probe task")
    precision: Literal["fp32", "bf16", "tf32", "auto"] = Field(
        "fp32",
        description="training matmul precision: fp32; bf16 autocast; tf32 (CUDA only); auto = bf16 where "
        "benchmarks/training.py shows it pays (MLPs of width >= 64 on a CPU with AMX-BF16 or a bf16 CUDA device), else fp32",
    )
    compile: bool = Field(False, description="torch.compile the training forward pass")


class _Trial(_Strict):
    """Shared behaviour of every family's trial config: hashed id and flat record columns."""

    #: Config sections whose fields become dotted record columns and sweep paths.
    SECTIONS: ClassVar[tuple[str, ...]] = ("task", "model", "train")

    @property
    def trial_id(self) -> str:
        """First 16 hex digits of the SHA-256 of the canonical JSON config."""
        blob = json.dumps(self.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    @property
    def family(self) -> str:
        return getattr(self, "kind", "hyperteacher")

    def flat(self) -> dict[str, Any]:
        """Config columns of a record: the family's short axis names plus every dotted field."""
        out: dict[str, Any] = {}
        d = self.model_dump(mode="json")
        for section in self.SECTIONS:
            for k, v in d[section].items():
                out[f"{section}.{k}"] = v
        out["seed"] = self.seed
        for alias, path in FAMILY_AXES[self.family].items():
            out[alias] = out[path] if path != "seed" else self.seed
        return out


class TrialConfig(_Trial):
    """A hyperteacher trial (the headline study): everything that determines its result.
    Its hash is the trial id."""

    task: TaskConfig = TaskConfig()
    model: ModelConfig = ModelConfig()
    train: TrainConfig = TrainConfig()
    seed: int = Field(0, ge=0, le=2**31 - 1)


# ----------------------------------------------------------------- subgraphs (issue #5)

class SeqTaskConfig(_Strict):
    """Multi-step tasks with computation graphs (Dziri et al. 2023, "Faith and Fate").

    ``multiplication``: operand digit counts are the sizes; in distribution both
    ≤ ``id_max``, out of distribution the cells with a larger operand up to ``ood_max``.
    ``maxsubseq`` (max-sum non-adjacent subsequence, dynamic programming): the
    sequence length is the size; in distribution ≤ ``id_max``, OOD up to ``ood_max``.
    """

    family: Literal["multiplication", "maxsubseq"] = "maxsubseq"
    scratchpad: bool = True
    n_train: int = Field(4000, ge=1, le=10_000_000, description="training examples (a fixed set)")
    id_max: int = Field(5, ge=1, le=20, description="largest in-distribution size (digits / sequence length)")
    ood_max: int = Field(7, ge=1, le=30, description="largest out-of-distribution size")
    n_test: int = Field(32, ge=1, le=100_000, description="test examples per size cell")

    @model_validator(mode="after")
    def _sizes(self) -> "SeqTaskConfig":
        if self.ood_max < self.id_max:
            raise ValueError(f"ood_max={self.ood_max} must be at least id_max={self.id_max}")
        return self


class TransformerConfig(_Strict):
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


class SeqTrainConfig(_Strict):
    """AdamW with warm-up and cosine decay on a fixed training set (bindscale.seqtrain)."""

    steps: int = Field(1500, ge=1, le=10_000_000)
    batch_size: int = Field(64, ge=1, le=65536)
    lr: float = Field(1e-3, gt=0.0, le=10.0)
    weight_decay: float = Field(0.1, ge=0.0, le=10.0)
    warmup_steps: int = Field(100, ge=0, le=1_000_000)
    grad_clip: float | None = Field(1.0, gt=0.0)


class SubgraphsTrial(_Trial):
    """A subgraphs trial: one transformer trained from scratch on one multi-step task."""

    kind: Literal["subgraphs"] = "subgraphs"
    task: SeqTaskConfig = SeqTaskConfig()
    model: TransformerConfig = TransformerConfig()
    train: SeqTrainConfig = SeqTrainConfig()
    seed: int = Field(0, ge=0, le=2**31 - 1)


# ---------------------------------------------------------------- modularity (issue #6)

class CompoundTaskConfig(_Strict):
    """Compound "same shape AND same colour" scenes (bindscale.tasks.compound; Lepori et al. 2023)."""

    family: Literal["compound"] = "compound"
    n_shapes: int = Field(8, ge=2, le=1000, description="shape values (subroutine A: same shape)")
    n_colours: int = Field(8, ge=2, le=1000, description="colour values (subroutine B: same colour)")
    n_train: int = Field(2000, ge=2, le=1_000_000, description="rows of every training set (compound, subroutine, pretraining)")
    n_test: int = Field(1000, ge=2, le=1_000_000, description="rows of every test set")
    base_fraction: float = Field(0.5, gt=0.0, lt=1.0, description="share of the scene space (per kind) the base "
                                 "network's training and pretraining sets draw from")
    mask_fraction: float = Field(0.25, gt=0.0, lt=1.0, description="share the masks' training sets draw from; the "
                                 "rest (1 − base − mask) is the test sets' (bindscale.tasks.compound.partition_scenes)")

    @model_validator(mode="after")
    def _fractions(self) -> "CompoundTaskConfig":
        if self.base_fraction + self.mask_fraction >= 1.0:
            raise ValueError(f"base_fraction + mask_fraction = {self.base_fraction + self.mask_fraction} leaves "
                             "no scenes for the test sets")
        return self


class ModularityModelConfig(_Strict):
    """The base network: a ReLU MLP on the one-hot view or a transformer on the tokens.

    ``width`` is the MLP hidden width or the transformer's ``d_model``; ``depth`` the
    MLP hidden layers or the transformer blocks. ``n_heads`` / ``mlp_ratio`` are used
    by the transformer only.
    """

    architecture: Literal["mlp", "transformer"] = "mlp"
    width: int = Field(64, ge=2, le=8192)
    depth: int = Field(3, ge=1, le=32)
    n_heads: int = Field(4, ge=1, le=128)
    mlp_ratio: int = Field(4, ge=1, le=16)
    activation: Literal["relu", "gelu", "tanh"] = Field("relu", description="MLP only (the transformer uses GELU)")

    @model_validator(mode="after")
    def _heads(self) -> "ModularityModelConfig":
        if self.architecture == "transformer" and (self.width % self.n_heads or (self.width // self.n_heads) % 2):
            raise ValueError(f"width={self.width} must split into n_heads={self.n_heads} heads of even size (RoPE)")
        return self


class PretrainConfig(_Strict):
    """Pretraining before the compound task (then the whole network is trained on the compound task).

    - ``none``: from scratch.
    - ``match_count`` (the generic condition, which decides ``pretraining_reliability``):
      one 3-way head on the last hidden representation learns how many attributes the
      two objects share (0, 1 or 2, i.e. A + B) on the pretraining sets; see
      :func:`bindscale.modularity_trial.pretrain`.
    - ``subroutines`` (a labelled extra, reported beside the verdict): the body learns
      A and B at once, each with its own linear head on the last hidden representation.

    Heads are dropped afterwards. Pretraining uses the ``train`` section's batch size,
    learning rate, weight decay, warm-up and gradient clip.
    """

    kind: Literal["none", "match_count", "subroutines"] = "none"
    steps: int = Field(1000, ge=1, le=10_000_000, description="pretraining steps (unused with kind none)")


class MaskConfig(_Strict):
    """Continuous-sparsification mask search (bindscale.analysis.masks) and its controls.

    ``params`` fixes which weights are masked — it decides the result (see
    bindscale.analysis.modularity): ``hidden`` = every weight matrix that computes a
    hidden representation (MLP: input and hidden-to-hidden matrices; transformer:
    attention qkv/output and MLP fc/proj matrices of every block), never the
    readout, the token embedding, biases or LayerNorm; ``all`` adds the readout (and
    the transformer's embedding). A readout both subroutines need is kept by every
    mask, so its ablation breaks both and AblDiff is 0 whatever the hidden layers do.
    """

    params: Literal["hidden", "all"] = "hidden"
    lambda_l0: float = Field(1.0, gt=0.0, le=1000.0)
    steps: int = Field(1000, ge=1, le=1_000_000)
    lr: float = Field(0.05, gt=0.0, le=100.0)
    beta_end: float = Field(200.0, ge=1.0, le=1e6, description="final temperature (beta starts at 1)")
    batch_size: int = Field(256, ge=1, le=65536, description="rows per step; below n_train so mask seeds differ")
    n_mask_seeds: int = Field(3, ge=1, le=100)
    control_mask_seeds: int = Field(1, ge=0, le=100, description="mask seeds per subroutine on the untrained control network")


class ModularityTrial(_Trial):
    """A modularity trial: one base network trained on the compound task, then its subnetworks searched."""

    SECTIONS: ClassVar[tuple[str, ...]] = ("task", "model", "pretrain", "train", "mask")
    kind: Literal["modularity"] = "modularity"
    task: CompoundTaskConfig = CompoundTaskConfig()
    model: ModularityModelConfig = ModularityModelConfig()
    pretrain: PretrainConfig = PretrainConfig()
    #: Compound training (and pretraining) with :func:`bindscale.seqtrain.fit_minibatches`.
    train: SeqTrainConfig = SeqTrainConfig(steps=1000, batch_size=128, lr=3e-3, weight_decay=0.0, warmup_steps=50)
    mask: MaskConfig = MaskConfig()
    seed: int = Field(0, ge=0, le=2**31 - 1)


#: Sweep axes by their short names (issue #2) → dotted path in :class:`TrialConfig`.
AXES: dict[str, str] = {
    "model": "model.kind",
    "width": "model.width",
    "depth": "model.depth",
    "activation": "model.activation",
    "encoding": "task.encoding",
    "split": "task.split",
    "holdout": "task.holdout",
    "withheld_pairs": "task.withheld_pairs",
    "M": "task.M",
    "K": "task.K",
    "steps": "train.steps",
    "lr": "train.lr",
    "weight_decay": "train.weight_decay",
    "batch_tasks": "train.batch_tasks",
    "seed": "seed",
}


SUBGRAPHS_AXES: dict[str, str] = {
    "task": "task.family",
    "scratchpad": "task.scratchpad",
    "n_train": "task.n_train",
    "layers": "model.n_layers",
    "d_model": "model.d_model",
    "heads": "model.n_heads",
    "steps": "train.steps",
    "lr": "train.lr",
    "seed": "seed",
}

MODULARITY_AXES: dict[str, str] = {
    "architecture": "model.architecture",
    "width": "model.width",
    "depth": "model.depth",
    "heads": "model.n_heads",
    "pretraining": "pretrain.kind",
    "pretrain_steps": "pretrain.steps",
    "n_shapes": "task.n_shapes",
    "n_colours": "task.n_colours",
    "n_train": "task.n_train",
    "steps": "train.steps",
    "lr": "train.lr",
    "mask_params": "mask.params",
    "lambda_l0": "mask.lambda_l0",
    "mask_steps": "mask.steps",
    "mask_seeds": "mask.n_mask_seeds",
    "seed": "seed",
}

#: Trial config class of each family (a study's ``base.kind``; absent means hyperteacher).
FAMILIES: dict[str, type[_Trial]] = {"hyperteacher": TrialConfig, "subgraphs": SubgraphsTrial,
                                     "modularity": ModularityTrial}
FAMILY_AXES: dict[str, dict[str, str]] = {"hyperteacher": AXES, "subgraphs": SUBGRAPHS_AXES,
                                          "modularity": MODULARITY_AXES}


def family_of(base: Any) -> str:
    """Family of a study's base trial (dict or model): its ``kind``, default ``hyperteacher``.

    Raises:
        ConfigError: an unknown kind.
    """
    kind = base.get("kind", "hyperteacher") if isinstance(base, dict) else getattr(base, "family", "hyperteacher")
    if kind not in FAMILIES:
        raise ConfigError(f"base.kind: unknown study family {kind!r}; allowed: {', '.join(FAMILIES)}")
    return kind


def axis_path(name: str, family: str = "hyperteacher") -> str:
    """Dotted path for an axis of ``family`` given by short name or by path.

    Raises:
        ConfigError: not a known axis or trial field.
    """
    axes = FAMILY_AXES[family]
    if name in axes:
        return axes[name]
    if name in _trial_paths(family):
        return name
    raise ConfigError(
        f"unknown sweep axis {name!r}; allowed: {', '.join(axes)} or a dotted trial field such as train.lr"
    )


def _trial_paths(family: str = "hyperteacher") -> set[str]:
    cls = FAMILIES[family]
    d = cls().model_dump()
    paths = {"seed"}
    for section in cls.SECTIONS:
        paths |= {f"{section}.{k}" for k in d[section]}
    return paths


def _base_tag(v: Any) -> str:
    return family_of(v) if isinstance(v, (dict, _Trial)) else "hyperteacher"


class StudyConfig(_Strict):
    """A study: a base trial, grids of axes whose union is the set of trials, and its verdict rules.

    ``grids`` is a list of ``{axis: [values, ...]}``; each grid's cartesian
    product is taken over ``base`` and the union (deduplicated by trial id) is
    the study. ``quick`` is a partial study deep-merged over this one by
    ``--quick``.
    """

    name: str = Field(min_length=1, max_length=100, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$")
    description: str = ""
    base: Annotated[Union[Annotated[TrialConfig, Tag("hyperteacher")], Annotated[SubgraphsTrial, Tag("subgraphs")],
                          Annotated[ModularityTrial, Tag("modularity")]],
                    Discriminator(_base_tag)] = TrialConfig()
    grids: list[dict[str, list[Any]]] = Field(default_factory=lambda: [{}])
    quick: dict[str, Any] | None = None
    is_quick: bool = Field(False, description="set by --quick: this is the study's quick variant")
    verdicts: dict[str, dict[str, float]] = Field(default_factory=dict, description="claim → thresholds (see VERDICT_PARAMS)")
    anchors: dict[str, str] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _legacy_verdicts(cls, data: Any) -> Any:
        """Study files written before the verdicts review (a run directory's study.yaml) still load:
        renamed claims take their new names, retired thresholds are dropped."""
        if isinstance(data, dict) and isinstance(data.get("verdicts"), dict):
            out = {}
            for claim, params in data["verdicts"].items():
                claim = LEGACY_CLAIMS.get(claim, claim)
                params = {k: v for k, v in (params or {}).items() if (claim, k) not in LEGACY_THRESHOLDS}
                out[claim] = params
            data = {**data, "verdicts": out}
        return data

    @model_validator(mode="after")
    def _check_grids(self) -> "StudyConfig":
        for grid in self.grids:
            for axis, values in grid.items():
                axis_path(axis, self.base.family)
                if not values:
                    raise ValueError(f"axis {axis!r} has no values")
        for claim, params in self.verdicts.items():
            if claim not in VERDICT_PARAMS:
                raise ValueError(f"unknown verdict {claim!r}; allowed: {', '.join(VERDICT_PARAMS)}")
            for key, value in (params or {}).items():
                if key not in VERDICT_PARAMS[claim]:
                    raise ValueError(f"verdicts.{claim}: unknown threshold {key!r}; allowed: "
                                     f"{', '.join(VERDICT_PARAMS[claim])}")
                lo, hi = VERDICT_PARAMS[claim][key]
                if not lo <= value <= hi:
                    raise ValueError(f"verdicts.{claim}.{key}={value} is out of range [{lo}, {hi}]")
        return self

    @property
    def family(self) -> str:
        return self.base.family

    def trials(self) -> list[Any]:
        """All trials of the study, in a stable order, without duplicates.

        Raises:
            ConfigError: a grid value is out of range for its field.
        """
        base = self.base.model_dump(mode="json")
        seen: dict[str, TrialConfig] = {}
        for grid in self.grids:
            axes = list(grid)
            for values in itertools.product(*(grid[a] for a in axes)):
                d = copy.deepcopy(base)
                for axis, value in zip(axes, values):
                    _set_path(d, axis_path(axis, self.family), value)
                trial = validate(FAMILIES[self.family], d, where=f"grid value {dict(zip(axes, values))}")
                seen.setdefault(trial.trial_id, trial)
        return list(seen.values())


#: Verdict thresholds a study may set, with their allowed ranges (rules in bindscale.report.verdicts).
VERDICT_PARAMS: dict[str, dict[str, tuple[float, float]]] = {
    "scaling": {"r2_threshold": (0.0, 1.0)},
    "decodability": {"rho_threshold": (-1.0, 1.0)},
    "binding": {"target_r2": (0.0, 1.0)},
    "hull": {"margin": (0.0, 1.0)},
    "scale_does_not_lift_ood": {"margin": (0.0, 1.0), "ood_floor": (0.0, 1.0), "min_id_acc": (0.0, 1.0),
                                "min_ood_drop": (0.0, 1.0)},
    "correct_steps_seen_in_training": {"margin": (0.0, 1.0)},
    "structure_emerges": {"margin": (0.0, 1.0), "min_base_acc": (0.0, 1.0)},
    "structure_grows_with_width": {"margin": (0.0, 1.0), "min_base_acc": (0.0, 1.0)},
    "pretraining_reliability": {"margin": (0.0, 1.0), "min_base_acc": (0.0, 1.0)},
}
VERDICT_CLAIMS = tuple(VERDICT_PARAMS)
#: Claims renamed so that "supported" means the source's claim holds (old name → new name).
LEGACY_CLAIMS = {"ood_scaling": "scale_does_not_lift_ood", "seen_subgraphs": "correct_steps_seen_in_training"}
#: Thresholds of earlier rules, ignored when an older study file is loaded: binding's target is now fixed;
#: structure_emerges is decided on mean SubDiff / AblDiff against a margin, not a share.
LEGACY_THRESHOLDS = {("binding", "tolerance"), ("structure_emerges", "min_fraction")}


def _set_path(d: dict, path: str, value: Any) -> None:
    keys = path.split(".")
    for k in keys[:-1]:
        d = d.setdefault(k, {})
    d[keys[-1]] = value


def format_validation_error(err: ValidationError, where: str = "") -> str:
    """One line naming the first offending field, what was given and what is allowed."""
    e = err.errors()[0]
    parts = list(e["loc"])
    family = "hyperteacher"
    if len(parts) >= 2 and parts[0] == "base" and parts[1] in FAMILIES:  # the union's tag, not a field
        family = str(parts.pop(1))
    loc = ".".join(str(p) for p in parts)  # empty: the whole study (say the file, ``where``, instead)
    msg = e["msg"]
    if msg.startswith(_PYDANTIC_PREFIX):  # a validator's own words, without pydantic's label
        msg = msg[len(_PYDANTIC_PREFIX):]
    if e["type"] == "extra_forbidden":
        parent = tuple(parts[:-1])
        msg = f"unknown field; allowed: {', '.join(_allowed_fields(err.title, parent, family))}"
    given = e.get("input")
    given_s = "" if e["type"] in ("extra_forbidden", "missing") or isinstance(given, dict) else f" (got {given!r})"
    prefix = "".join(f"{part}: " for part in (where, loc) if part)
    return f"{prefix}{msg}{given_s}"


_PYDANTIC_PREFIX = "Value error, "


def _allowed_fields(title: str, parent: tuple, family: str = "hyperteacher") -> list[str]:
    classes = {"StudyConfig": StudyConfig} | {cls.__name__: cls for cls in FAMILIES.values()}
    model: type[BaseModel] = classes.get(title, StudyConfig)
    for p in parent:
        if model is StudyConfig and p == "base":
            model = FAMILIES[family]
            continue
        ann = model.model_fields.get(str(p))
        if ann is None or not (isinstance(ann.annotation, type) and issubclass(ann.annotation, BaseModel)):
            return []
        model = ann.annotation
    return list(model.model_fields)


def validate(model: type[BaseModel], data: Any, where: str = "") -> Any:
    """``model.model_validate(data)`` with errors as :class:`ConfigError` (one line)."""
    try:
        return model.model_validate(data)
    except ValidationError as err:
        raise ConfigError(format_validation_error(err, where)) from None


# --------------------------------------------------------------------------- loading

STUDY_DIR = Path(__file__).parent / "studies"


def builtin_studies() -> dict[str, Path]:
    """Built-in study name → YAML path (shipped inside the package)."""
    return {p.stem: p for p in sorted(STUDY_DIR.glob("*.yaml"))}


def load_study_dict(ref: str) -> tuple[dict, str]:
    """Raw study dict from a built-in name or a YAML path; returns (dict, source).

    Raises:
        ConfigError: unknown study, unreadable file or malformed YAML.
    """
    studies = builtin_studies()
    if not str(ref).strip():  # before Path(), which reads "" as the current directory
        raise ConfigError(f"the study name is empty; give a built-in study ({', '.join(studies)}) or a path to a "
                          "study YAML file")
    path = studies.get(ref)
    if path is None:
        p = Path(ref)
        if p.suffix in (".yaml", ".yml") or p.exists():
            if p.is_dir():
                raise ConfigError(f"study {ref!r} is a directory; give a study YAML file or a built-in name")
            if not p.is_file():
                raise ConfigError(f"study file {ref!r} does not exist")
            path = p
        else:
            raise ConfigError(f"unknown study {ref!r}; built-in studies: {', '.join(studies)} (or a path to a .yaml file)")
    try:
        data = yaml.load(path.read_text(), Loader=StudyLoader)  # noqa: S506 (a SafeLoader)
    except DuplicateKeyError as err:
        raise ConfigError(f"{path}: {err.problem} at line {err.problem_mark.line + 1}"
                          f" (first at line {err.first_line}); give each key once") from None
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        at = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise ConfigError(f"malformed YAML in {path}{at}: {getattr(err, 'problem', err)}") from None
    except OSError as err:
        raise ConfigError(f"cannot read study file {path}: {err.strerror}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"study file {path} is not UTF-8 text") from None
    if not isinstance(data, dict):
        raise ConfigError(f"study file {path} must be a YAML mapping with at least a 'name' field")
    return _numbers(data), str(path)


class DuplicateKeyError(yaml.constructor.ConstructorError):
    """A mapping of a study file gives the same key twice (PyYAML would keep the last one silently)."""

    def __init__(self, key: Any, mark: Any, first: Any):
        super().__init__(None, None, f"duplicate key {key!r}", mark)
        self.first_line = first.line + 1


class StudyLoader(yaml.SafeLoader):
    """``yaml.safe_load`` that refuses a key given twice in one mapping."""

    def construct_mapping(self, node: Any, deep: bool = False) -> dict:
        if isinstance(node, yaml.MappingNode):
            seen: dict[Any, Any] = {}
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":  # `<<: *anchor` may be overridden: that is its use
                    continue
                key = self.construct_object(key_node, deep=True)
                try:
                    first = seen.setdefault(key, key_node.start_mark)
                except TypeError:  # an unhashable key: construct_mapping reports it
                    continue
                if first is not key_node.start_mark:
                    raise DuplicateKeyError(key, key_node.start_mark, first)
        return super().construct_mapping(node, deep)


def deep_merge(a: dict, b: dict) -> dict:
    """``b`` merged into a copy of ``a``; mappings merge, everything else (lists too) replaces."""
    out = copy.deepcopy(a)
    for k, v in b.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = deep_merge(out[k], v)
        else:
            out[k] = copy.deepcopy(v)
    return out


def parse_override(item: str) -> tuple[str, Any]:
    """``"key=value"`` → (key, YAML-parsed value).

    Raises:
        ConfigError: no ``=``, or a value that is not valid YAML.
    """
    if "=" not in item:
        raise ConfigError(f"--set {item!r}: expected key=value, e.g. train.steps=500 or width=[16,64]")
    key, raw = item.split("=", 1)
    try:
        value = yaml.load(raw, Loader=StudyLoader)  # noqa: S506 (a SafeLoader)
    except DuplicateKeyError as err:
        raise ConfigError(f"--set {item!r}: {err.problem}; give each key once") from None
    except yaml.YAMLError:
        raise ConfigError(f"--set {item!r}: value is not valid YAML") from None
    return key.strip(), _numbers(value)


_DECIMAL = re.compile(r"[-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?")
_EXPONENT_INT = re.compile(r"([-+]?[0-9]+)[eE]\+?([0-9]+)")  # 1e3, 2E+4: no dot, exponent >= 0


def _numbers(value: Any) -> Any:
    """Numbers YAML 1.1 reads as text, as numbers: a researcher writing ``3e-4`` or ``1e3`` means the number.

    YAML 1.1 reads an exponent only after a dot and with a sign (``1.0e-3``), so ``3e-4``,
    ``1e3`` and ``1.5e3`` arrive as strings. They become floats, except an integral number
    written in exponent form without a dot (``1e3``, ``2E+4``), which becomes an int so that
    int fields take it (``steps: 1e3``); ``1000.0`` stays a float. Applies to the values of
    mappings and lists, recursively (not to keys).
    """
    if isinstance(value, dict):
        return {k: _numbers(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_numbers(v) for v in value]
    if isinstance(value, str) and any(c in value for c in "eE.") and _DECIMAL.fullmatch(value):
        if (m := _EXPONENT_INT.fullmatch(value)) and int(m[2]) <= 18:  # (beyond int64 it stays a float)
            return int(m[1]) * 10 ** int(m[2])
        return float(value)
    return value


def apply_override(study: dict, key: str, value: Any) -> dict:
    """Apply one ``--set``. A trial field or axis name sets the base and pins that axis in
    every grid (a list value becomes the axis values); other keys set study fields.

    Raises:
        ConfigError: unknown key.
    """
    study = copy.deepcopy(study)
    top = set(StudyConfig.model_fields) - {"base", "grids"}
    if key.split(".")[0] in top:
        _set_path(study, key, value)
        return study
    family = family_of(study.get("base") or {})
    name = key[len("base."):] if key.startswith("base.") else key
    try:
        path = axis_path(name, family)
    except ConfigError:
        raise ConfigError(_unknown_override(key, name, family, top - {"is_quick"})) from None
    values = value if isinstance(value, list) else [value]
    aliases = {a for a, p in FAMILY_AXES[family].items() if p == path} | {path}
    grids = study.get("grids") or [{}]
    new_grids = []
    for grid in grids:
        grid = {k: v for k, v in grid.items() if k not in aliases}
        if isinstance(value, list):
            grid[path] = values
        new_grids.append(grid)
    study["grids"] = new_grids
    if not isinstance(value, list):
        base = study.setdefault("base", {})
        _set_path(base, path, value)
    return study


def _unknown_override(key: str, name: str, family: str, study_fields: set[str]) -> str:
    """The one-line error for a ``--set`` key that names nothing: the fields of its section when
    the section exists (``train.fo`` → train's fields), else every kind of key allowed."""
    section = name.split(".")[0]
    fields = sorted(p for p in _trial_paths(family) if p.startswith(section + "."))
    if fields:
        return f"--set {key}: {section} has no field {name[len(section) + 1:]!r}; allowed: {', '.join(fields)}"
    return (f"--set {key}: unknown key; allowed: a sweep axis ({', '.join(FAMILY_AXES[family])}), "
            f"a dotted trial field such as train.lr, or a study field ({', '.join(sorted(study_fields))})")


def resolve_study(ref: str, quick: bool = False, overrides: list[str] | None = None) -> StudyConfig:
    """Load, merge ``quick``, apply ``--set`` overrides and validate a study.

    Raises:
        ConfigError: on any problem, with a one-line message.
    """
    data, source = load_study_dict(ref)
    parsed = [parse_override(item) for item in overrides or []]

    def merged(apply: bool) -> dict:
        d = data
        # --set quick.… edits the quick variant itself, so it applies before the merge.
        for key, value in parsed if apply else []:
            if key.split(".")[0] == "quick":
                d = apply_override(d, key, value)
        if quick:
            q = d.get("quick")
            if q is not None and not isinstance(q, dict):
                raise ConfigError(f"{source}: 'quick' must be a mapping")
            d = deep_merge(d, q or {}) | {"is_quick": True}
        for key, value in parsed if apply else []:
            if key.split(".")[0] != "quick":
                d = apply_override(d, key, value)
        return d

    data_set = merged(True)
    try:
        study = _validate_study(data_set)
    except (ValidationError, ConfigError) as err:
        # Blame the --set values when the study is valid without them; else the study file.
        where = source
        if parsed:
            try:
                _validate_study(merged(False))
                where = "--set " + " ".join(overrides or [])
            except (ValidationError, ConfigError):
                pass
        raise ConfigError(format_validation_error(err, where) if isinstance(err, ValidationError)
                          else f"{where}: {err}") from None
    try:
        trials = study.trials()
    except ConfigError as err:  # a grid value out of range: in the file, or made so by --set
        where = "--set " + " ".join(overrides or []) if parsed and _trials_ok(merged(False)) else source
        raise ConfigError(f"{where}: {err}") from None
    if not trials:
        raise ConfigError(f"{source}: the study has no trials")
    return study


def _validate_study(data: dict) -> StudyConfig:
    """``StudyConfig.model_validate`` after the shape checks its before-validators rely on.

    Raises:
        ValidationError, ConfigError: without the file's name (the caller adds it).
    """
    verdicts = data.get("verdicts")
    if isinstance(verdicts, dict):
        for claim, params in verdicts.items():
            if params is not None and not isinstance(params, dict):
                raise ConfigError(f"verdicts.{claim}: expected a mapping of thresholds, e.g. {{margin: 0.05}} "
                                  f"(got {params!r})")
    return StudyConfig.model_validate(data)


def _trials_ok(data: dict) -> bool:
    try:
        _validate_study(data).trials()
        return True
    except (ValidationError, ConfigError):
        return False
