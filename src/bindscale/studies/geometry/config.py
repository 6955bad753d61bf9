"""The geometry study's trial config: where the sentences and the activations come from, and how probes are fit.

Sections (each field is a record column, ``data.n_fit`` …; short axis names in :attr:`GeometryTrial.AXES`):

- ``data``: the sentences. ``source: grammar`` draws them from the synthetic grammar
  (:mod:`.grammar`): ``n_lm`` for the language model's corpus, ``n_fit`` / ``n_dev`` / ``n_test`` for
  fitting probes, choosing their layer and scoring them, all disjoint.
- ``model``: where activations come from. ``source: trained`` = a decoder transformer
  (:mod:`bindscale.models.transformer`) trained from scratch on the ``lm`` sentences as a next-word
  language model; its untrained twin (same initial weights) is the random-model control.
- ``train``: the sequence trainer's settings (:mod:`bindscale.train.loop`).
- ``probe``: probe fitting (:class:`.probes.ProbeSettings`) and layer choice.

The ``source`` fields let other front-ends (a pretrained model over a CoNLL-U treebank) share the
probe code and the report; this module only knows the synthetic sources.
"""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import Discriminator, Field, Tag, model_validator

from bindscale.kit import StrictModel, TrialBase, SeqTrainConfig, TransformerConfig
from .lmconfig import PretrainedModelConfig, TreebankDataConfig


class GrammarDataConfig(StrictModel):
    """Sentences from the synthetic grammar (:class:`.grammar.GrammarConfig` holds the meaning of each p_*)."""

    source: Literal["grammar"] = "grammar"
    n_lm: int = Field(4000, ge=1, le=10_000_000, description="language-model training sentences")
    n_fit: int = Field(300, ge=2, le=1_000_000, description="sentences the probes are fit on")
    n_dev: int = Field(100, ge=1, le=1_000_000, description="sentences choosing the layer and stopping the fit")
    n_test: int = Field(200, ge=1, le=1_000_000, description="sentences the probes are scored on")
    max_words: int = Field(30, ge=4, le=200)
    p_adj: float = Field(0.35, ge=0.0, le=0.9)
    p_nmod: float = Field(0.3, ge=0.0, le=1.0)
    p_np_coord: float = Field(0.1, ge=0.0, le=1.0)
    p_obl: float = Field(0.3, ge=0.0, le=1.0)
    p_adv: float = Field(0.25, ge=0.0, le=1.0)
    p_clause_coord: float = Field(0.2, ge=0.0, le=1.0)
    p_say: float = Field(0.15, ge=0.0, le=1.0)
    p_trans: float = Field(0.65, ge=0.0, le=1.0)
    decay: float = Field(0.5, ge=0.0, le=0.95)


class GeometryModelConfig(TransformerConfig):
    """A decoder transformer trained from scratch on the grammar's sentences (word tokens)."""

    source: Literal["trained"] = "trained"


class ProbeConfig(StrictModel):
    """Probe fitting (:class:`.probes.ProbeSettings`) and controls."""

    rank: int = Field(32, ge=1, le=4096, description="rows of the probe map B (capped at the model width)")
    angular_weight: float = Field(1.0, ge=0.0, le=100.0, description="weight of the polar probe's angular term")
    lr: float = Field(1e-2, gt=0.0, le=1.0)
    batch_size: int = Field(32, ge=1, le=4096)
    max_epochs: int = Field(20, ge=1, le=10_000)
    patience: int = Field(2, ge=1, le=100)
    lr_decay: float = Field(0.5, gt=0.0, le=1.0)
    root_weight: float = Field(0.0, ge=0.0, le=100.0, description="weight of the polar probe's root term "
                               "(0: none; the authors' code: 0.01)")
    select_by: Literal["dev_loss", "dev_las"] = Field("dev_loss", description="the epoch kept: best dev loss "
                                                      "(Hewitt & Manning) or best dev LAS (the polar probe's authors)")
    centroids: Literal["unit", "raw"] = Field("unit", description="relation centroids: means of unit or of raw "
                                              "edge vectors (the authors': raw)")
    inputs: Literal["dev", "whiten", "scale"] = Field(
        "dev", description="how activations enter the fit: dev (both fits below, for the trained model and its "
        "untrained twin, each probe's estimator chosen with its layer on dev LAS, ties to the raw fit: "
        ".layers.choose), whiten (PCA-whitened fitting words; the probe stays a linear map of the raw vectors) or "
        "scale (one scalar, as the sources' code fits raw vectors)")
    recipe: Literal["bindscale", "authors"] = Field(
        "bindscale", description="authors: fit as the polar probe's authors' code does (ProbeSettings.authors: "
        "rank 1024, angular weight 0.01, root weight 0.01, lr 1e-3, batches of 200, epoch by dev LAS, raw "
        "centroids); max_epochs, patience and inputs are then taken from here (the authors' code fits raw vectors: add "
        "probe.inputs: scale for their fit alone; the records always say which inputs were used and chosen)")
    untrained_control: bool = Field(True, description="also probe the untrained model (same initial weights)")
    n_picture_edges: int = Field(200, ge=0, le=5000, description="test edges kept for the polar picture")

    @model_validator(mode="after")
    def _one_recipe(self) -> "ProbeConfig":
        # A field changed from its default would be ignored (grids dump every field, so "given" is "changed").
        clash = sorted(f for f in set(_FIT_FIELDS) - {"max_epochs", "patience", "inputs"}
                       if getattr(self, f) != type(self).model_fields[f].default)
        if self.recipe == "authors" and clash:
            raise ValueError(f"recipe 'authors' sets {', '.join(clash)} itself; drop them or use recipe 'bindscale'")
        return self

    def settings(self):
        """The :class:`.probes.ProbeSettings` these fields describe (the authors' preset for ``recipe: authors``), with
        the first of :meth:`estimators` as its inputs (whitened for ``dev``; the trials fit the other beside it)."""
        from .probes import ProbeSettings

        inputs = self.estimators()[0]
        if self.recipe == "authors":
            return ProbeSettings.authors(max_epochs=self.max_epochs, patience=self.patience, inputs=inputs)
        return ProbeSettings(**{f: getattr(self, f) for f in _FIT_FIELDS} | {"inputs": inputs})

    def estimators(self) -> tuple[str, ...]:
        """The estimators fit (:func:`.layers.estimators`): ``("whiten", "scale")`` for ``dev``, else ``inputs``."""
        from .layers import estimators

        return estimators(self.inputs)


#: ProbeConfig fields that are :class:`.probes.ProbeSettings` fields.
_FIT_FIELDS = ("rank", "angular_weight", "lr", "batch_size", "max_epochs", "patience", "lr_decay", "root_weight",
               "select_by", "centroids", "inputs")


def _source(default: str):
    """A section's ``source`` (dict or config), ``default`` when it names none."""
    return lambda v: (v.get("source", default) if isinstance(v, dict) else getattr(v, "source", default))


class GeometryTrial(TrialBase):
    """A geometry trial: one language model (or other activation source), probed at every layer."""

    SECTIONS: ClassVar[tuple[str, ...]] = ("data", "model", "train", "probe")
    AXES: ClassVar[dict[str, str]] = {
        "layers": "model.n_layers",
        "d_model": "model.d_model",
        "heads": "model.n_heads",
        "n_lm": "data.n_lm",
        "steps": "train.steps",
        "lr": "train.lr",
        "rank": "probe.rank",
        "angular_weight": "probe.angular_weight",
        "seed": "seed",
    }
    #: Per-trial tables: probe scores per (model, probe, layer, split); relation confusion of the polar
    #: probe at its best layer; a sample of test edges for the polar picture.
    NESTED_METRICS: ClassVar[dict[str, tuple[tuple[str, ...], tuple[str, ...]]]] = {
        "probe_layers": (("model", "probe", "layer", "split"),
                         ("uuas_hm", "las_hm", "luas_hm", "uuas_pp", "las_pp", "luas_pp", "spearman",
                          "rel_acc", "dir_acc", "uas_hm", "uas_pp", "rel_bacc")),
        "confusion": (("gold", "pred"), ("n",)),
        "polar_edges": (("edge",), ("rel", "angle", "sqdist")),
    }
    kind: Literal["geometry"] = "geometry"
    # source: treebank / pretrained = a pretrained model over a CoNLL-U treebank (.lmconfig, .lmtrial);
    # without a source a section is the synthetic one (grammar / trained), as before sources existed
    data: Annotated[Annotated[GrammarDataConfig, Tag("grammar")] | Annotated[TreebankDataConfig, Tag("treebank")],
                    Discriminator(_source("grammar"))] = GrammarDataConfig()
    model: Annotated[Annotated[GeometryModelConfig, Tag("trained")] | Annotated[PretrainedModelConfig, Tag("pretrained")],
                     Discriminator(_source("trained"))] = GeometryModelConfig(n_layers=2, d_model=64, n_heads=4)
    train: SeqTrainConfig = SeqTrainConfig(steps=1000, batch_size=32, lr=2e-3, weight_decay=0.1, warmup_steps=50)
    probe: ProbeConfig = ProbeConfig()
    seed: int = Field(0, ge=0, le=2**31 - 1)

    def trains(self) -> bool:
        """A pretrained model is probed as it is (``train.steps`` only paces the progress)."""
        return getattr(self.model, "source", "trained") != "pretrained"


#: The name the study plugin finds its trial config by (bindscale.core.study.CONVENTION).
TrialConfig = GeometryTrial
