"""Task generators of the ``length_transfer`` study, with exact answers.

After Cai et al. 2025, "Extrapolation by Association: Length Generalization Transfer in
Transformers" (arXiv 2506.09251): each task has a *length* ``n`` (digits per operand, letters
per string, key–value pairs), and a sequence is

    <task> prompt = answer <stop>

over one character vocabulary (:data:`VOCAB`); the first token names the task, so a model
co-trained on several tasks is told which one a sequence is. The loss and exact match read
the answer and its stop token only.

Tasks (``n`` is the length; numbers are written least-significant digit first, "reversed",
as in Cai et al. and Lee et al. 2023, "Teaching Arithmetic to Small Transformers"; every
digit of an operand is uniform, so operands may have leading zeros):

- ``add``: ``a + b`` for two n-digit operands; answer n+1 digits.
- ``sub``: ``a − b`` with ``a ≥ b`` (operands swapped when needed); answer n digits.
- ``add_nocarry``: digit-wise ``(a_i + b_i) mod 10``; answer n digits.
- ``add_carry``: carry-only addition: the carry out of each position of ``a + b``
  (0 or 1); answer n digits.
- ``copy``: n lowercase letters; answer the same letters.
- ``mqar``: multi-query associative recall (Arora et al. 2023, "Zoology"): n key–value
  pairs (n distinct keys from 52 letters, values digits), then ``n // 2`` (at least one)
  distinct queried keys; answer their values in query order.
- ``caprev``: n lowercase letters; answer reversed and capitalised.
- ``cap``: capitalised, same order; ``rev``: reversed, lowercase.

Where bindscale differs from the source: Cai et al. write tasks in their own text format and
their carry-only task may mark carries differently; the structure (which answer token depends
on which prompt tokens) is the same here.
"""

from __future__ import annotations

import string
from typing import NamedTuple

import numpy as np

#: Padding, stop, answer separator, operators, query marker, task tokens, digits, letters.
TASKS = ("add", "sub", "add_nocarry", "add_carry", "copy", "mqar", "caprev", "cap", "rev")
SPECIAL = ("<pad>", "<stop>", "=", "+", "-", "?")
VOCAB: tuple[str, ...] = (SPECIAL + tuple(f"<{t}>" for t in TASKS) + tuple(string.digits)
                          + tuple(string.ascii_lowercase) + tuple(string.ascii_uppercase))
IDS = {tok: i for i, tok in enumerate(VOCAB)}
PAD_ID, STOP_ID = IDS["<pad>"], IDS["<stop>"]
VOCAB_SIZE = len(VOCAB)
#: Keys of ``mqar`` are distinct letters: at most this many pairs.
MAX_MQAR = 52
#: Tasks co-trained with a main task that Cai et al. call related (the rest are unrelated controls).
RELATED: dict[str, tuple[frozenset[str], ...]] = {
    "add": (frozenset({"sub"}), frozenset({"add_nocarry", "add_carry"})),
    "copy": (frozenset({"mqar"}),),
    "caprev": (frozenset({"cap", "rev"}),),
}


class Example(NamedTuple):
    """One sequence: ``prompt`` (task token … ``=``) and ``answer`` (ending in ``<stop>``), as token strings."""

    task: str
    length: int
    prompt: tuple[str, ...]
    answer: tuple[str, ...]


def _digits(rng: np.random.Generator, n: int) -> np.ndarray:
    return rng.integers(0, 10, size=n)


def _value(d: np.ndarray) -> int:
    """Integer of reversed digits ``d`` (least significant first)."""
    return int(sum(int(x) * 10**i for i, x in enumerate(d)))


def _rev_digits(v: int, width: int) -> list[str]:
    """``v`` written with ``width`` digits, least significant first."""
    return list(str(v).zfill(width)[::-1])


def arithmetic(task: str, a: list[int], b: list[int]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Prompt and answer of an arithmetic task on reversed-digit operands ``a``, ``b`` (equal length).

    Raises:
        ValueError: unequal or empty operands, a digit outside 0–9, or a non-arithmetic task.
    """
    if len(a) != len(b) or not a:
        raise ValueError(f"operands must be non-empty and of equal length; got {len(a)} and {len(b)} digits")
    if any(not 0 <= x <= 9 for x in (*a, *b)):
        raise ValueError("operand digits must lie in 0..9")
    n = len(a)
    op = "-" if task == "sub" else "+"
    if task == "sub" and _value(np.array(a)) < _value(np.array(b)):
        a, b = b, a
    prompt = (f"<{task}>", *map(str, a), op, *map(str, b), "=")
    if task == "add":
        ans = _rev_digits(_value(np.array(a)) + _value(np.array(b)), n + 1)
    elif task == "sub":
        ans = _rev_digits(_value(np.array(a)) - _value(np.array(b)), n)
    elif task == "add_nocarry":
        ans = [str((x + y) % 10) for x, y in zip(a, b)]
    elif task == "add_carry":
        ans, carry = [], 0
        for x, y in zip(a, b):
            carry = int(x + y + carry >= 10)
            ans.append(str(carry))
    else:
        raise ValueError(f"{task!r} is not an arithmetic task")
    return prompt, (*ans, "<stop>")


def strings(task: str, letters: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Prompt and answer of ``copy``, ``caprev``, ``cap`` or ``rev`` on lowercase ``letters``.

    Raises:
        ValueError: empty or non-lowercase input, or a task that is not a string task.
    """
    if not letters or not all(c in string.ascii_lowercase for c in letters):
        raise ValueError(f"string tasks take non-empty lowercase letters; got {letters!r}")
    out = {"copy": letters, "caprev": letters[::-1].upper(), "cap": letters.upper(), "rev": letters[::-1]}
    if task not in out:
        raise ValueError(f"{task!r} is not a string task")
    return (f"<{task}>", *letters, "="), (*out[task], "<stop>")


def recall(keys: str, values: str, queries: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Prompt and answer of ``mqar``: pairs ``keys[i] values[i]``, then ``?`` and the queried keys.

    Raises:
        ValueError: repeated keys, a query that is no key, or keys and values of different lengths.
    """
    if len(keys) != len(values) or len(set(keys)) != len(keys) or not keys:
        raise ValueError("mqar needs distinct keys, one value per key")
    table = dict(zip(keys, values))
    if not queries or any(q not in table for q in queries):
        raise ValueError(f"mqar queries {queries!r} must be non-empty and among the keys {keys!r}")
    pairs = [t for k, v in zip(keys, values) for t in (k, v)]
    return ("<mqar>", *pairs, "?", *queries, "="), (*(table[q] for q in queries), "<stop>")


def n_queries(n: int) -> int:
    """Queries of an ``mqar`` sequence with ``n`` pairs."""
    return max(1, n // 2)


def sample(task: str, n: int, rng: np.random.Generator) -> Example:
    """One example of ``task`` at length ``n`` (see the module docstring).

    Raises:
        ValueError: unknown task, ``n < 1``, or ``mqar`` with more than :data:`MAX_MQAR` pairs.
    """
    if task not in TASKS:
        raise ValueError(f"unknown task {task!r}; known: {', '.join(TASKS)}")
    if n < 1:
        raise ValueError(f"length must be at least 1, got {n}")
    if task in ("add", "sub", "add_nocarry", "add_carry"):
        prompt, answer = arithmetic(task, _digits(rng, n).tolist(), _digits(rng, n).tolist())
    elif task == "mqar":
        if n > MAX_MQAR:
            raise ValueError(f"mqar has at most {MAX_MQAR} pairs (distinct letter keys); got {n}")
        letters = string.ascii_letters
        keys = "".join(letters[i] for i in rng.choice(len(letters), size=n, replace=False))
        values = "".join(map(str, _digits(rng, n)))
        queries = "".join(keys[i] for i in rng.choice(n, size=n_queries(n), replace=False))
        prompt, answer = recall(keys, values, queries)
    else:
        letters = "".join(string.ascii_lowercase[i] for i in rng.integers(0, 26, size=n))
        prompt, answer = strings(task, letters)
    return Example(task, n, prompt, answer)


def sample_set(tasks: list[str], max_len: int, count: int, rng: np.random.Generator,
               min_len: int = 1) -> list[Example]:
    """``count`` examples, tasks in turn (round robin), lengths uniform on ``min_len..max_len``.

    Every example's length is at most ``max_len`` by construction: a training set drawn here never
    holds a longer one (tests check it).
    """
    if min_len > max_len:
        raise ValueError(f"min_len={min_len} exceeds max_len={max_len}")
    lengths = rng.integers(min_len, max_len + 1, size=count)
    return [sample(tasks[i % len(tasks)], int(n), rng) for i, n in enumerate(lengths)]


def sample_unseen(task: str, n: int, count: int, rng: np.random.Generator, seen: set, tries: int = 20) -> list[Example]:
    """Up to ``count`` distinct examples of ``task`` at length ``n`` whose prompts are not in ``seen``.

    Draws up to ``tries`` rounds; a length with few possible prompts (e.g. one-digit addition) may give fewer.
    """
    got: dict[tuple, Example] = {}
    for _ in range(tries):
        for _ in range(count):
            ex = sample(task, n, rng)
            if ex.prompt not in seen:
                got.setdefault(ex.prompt, ex)
        if len(got) >= count:
            break
    return list(got.values())[:count]


def encode(tokens: tuple[str, ...]) -> list[int]:
    """Token strings → ids.

    Raises:
        KeyError: a token outside :data:`VOCAB`.
    """
    return [IDS[t] for t in tokens]


def pack(examples: list[Example]) -> tuple:
    """Token ids ``(N, Lmax)`` right-padded with :data:`PAD_ID`, and the loss mask ``(N, Lmax)``.

    ``mask[n, t]`` is True where the logits at ``t`` predict an answer token (the answer and its stop
    token), so ``mask[n, t]`` marks token ``t + 1`` as a target (the convention of
    :func:`bindscale.train.loop.train_seq_model`).

    Raises:
        ValueError: no examples.
    """
    import torch  # here, not at import: resolving a study file must not import torch

    if not examples:
        raise ValueError("pack needs at least one example")
    seqs = [encode(ex.prompt + ex.answer) for ex in examples]
    L = max(map(len, seqs)) + 1  # one spare column: the last column is never a target position
    tokens = torch.full((len(seqs), L), PAD_ID, dtype=torch.long)
    mask = torch.zeros((len(seqs), L), dtype=torch.bool)
    for i, (ex, s) in enumerate(zip(examples, seqs)):
        tokens[i, :len(s)] = torch.tensor(s)
        mask[i, len(ex.prompt) - 1:len(s) - 1] = True
    return tokens, mask


def sequence_length(task: str, n: int) -> int:
    """Tokens in a sequence of ``task`` at length ``n`` (prompt plus answer and stop)."""
    ex = sample(task, n, np.random.default_rng(0))
    return len(ex.prompt) + len(ex.answer)


def relation(main: str, aux: tuple[str, ...]) -> str:
    """``"alone"`` (no auxiliary), ``"related"`` (exactly a related set of :data:`RELATED`), ``"partial"``
    (shares a task with a related set but is not one: part of a set, e.g. ``add`` + ``add_nocarry``, or a
    related set mixed with other tasks, e.g. ``copy`` + ``mqar`` + ``sub``) or ``"unrelated"`` (no task of
    any related set). Partial trials are neither treatment nor control and no verdict uses them."""
    if not aux:
        return "alone"
    sets = RELATED.get(main, ())
    if frozenset(aux) in sets:
        return "related"
    return "partial" if any(frozenset(aux) & s for s in sets) else "unrelated"

