"""Character vocabulary shared by the "subgraphs" tasks (Dziri et al.,
NeurIPS 2023, "Faith and Fate: Limits of Transformers on Compositionality"):
multiplication and max-sum non-adjacent subsequence, trained character-level.

Id 0 is padding; the other ids are the digits, ``*``, the separators ``,`` and
``;``, ``=``, ``-`` and the stop character ``$``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import torch

from .compgraph import ITEM_SEP, STEP_SEP, STOP, Example

PAD = 0
CHARS = "0123456789" + "*" + ITEM_SEP + STEP_SEP + "=" + "-" + STOP
VOCAB: tuple[str, ...] = ("<pad>",) + tuple(CHARS)
VOCAB_SIZE = len(VOCAB)
STOI = {c: i + 1 for i, c in enumerate(CHARS)}
STOP_ID = STOI[STOP]


def encode(text: str) -> list[int]:
    """Token ids of ``text``.

    Raises:
        ValueError: a character outside the vocabulary.
    """
    try:
        return [STOI[c] for c in text]
    except KeyError as e:
        raise ValueError(f"character {e.args[0]!r} is not in the vocabulary {CHARS!r}") from None


def decode(ids: Iterable[int]) -> str:
    """Text of ``ids`` (a list or a 1-D tensor), padding skipped, up to and including the first ``$``.

    Raises:
        ValueError: an id outside ``[0, VOCAB_SIZE)``.
    """
    out = []
    for i in ids:
        i = int(i)
        if not 0 <= i < VOCAB_SIZE:
            raise ValueError(f"token id {i} outside [0, {VOCAB_SIZE})")
        if i == PAD:
            continue
        out.append(VOCAB[i])
        if i == STOP_ID:
            break
    return "".join(out)


def pack(examples: Sequence[Example], max_len: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Teacher-forcing batch: prompt + target per row, right-padded with ``PAD``.

    Args:
        examples: N examples.
        max_len: the padded length L; default the longest ``prompt + target``.

    Returns:
        ``tokens``: ``(N, L)`` int64 ids. ``loss_mask``: ``(N, L)`` bool, True at
        position t exactly when token t+1 is a target character, i.e. where the
        logits at t (which predict token t+1) are scored. So
        ``tokens[:, 1:][loss_mask[:, :-1]]`` are the target characters, in order.

    Raises:
        ValueError: an example longer than ``max_len``, an empty prompt, or a character outside the vocabulary.
    """
    seqs = [encode(ex.prompt + ex.target) for ex in examples]
    L = max((len(s) for s in seqs), default=0) if max_len is None else max_len
    tokens = torch.full((len(seqs), L), PAD, dtype=torch.long)
    mask = torch.zeros((len(seqs), L), dtype=torch.bool)
    for r, (ex, s) in enumerate(zip(examples, seqs)):
        if not ex.prompt:
            raise ValueError(f"example {r} has an empty prompt")  # nothing would predict its first target token
        if len(s) > L:
            raise ValueError(f"example {r} has {len(s)} tokens > max_len {L}")
        tokens[r, : len(s)] = torch.tensor(s, dtype=torch.long)
        p = len(ex.prompt)
        mask[r, p - 1 : len(s) - 1] = True
    return tokens, mask
