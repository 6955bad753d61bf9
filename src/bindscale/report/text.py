"""Readable text for the report page: labels for verdict-detail keys, and break points in long names.

``detail_label(["heldout_r2_by_width_at_min_holdout", "256"])`` gives
``"held-out R² by width at min holdout › width 256"``: underscores become spaces,
common abbreviations are spelled out (``ABBREVIATIONS``, ``PHRASES``), a numeric
key under a ``…_by_X…`` key reads ``"X value"``, an arity suffix ``k2`` reads
``"2 modules"``, and ``›`` separates the levels. Keys that are not plain
identifiers (``mlp/16/none``, ``hidden.0``, ``width 16, holdout 0.25``) are kept
as they are. The page keeps the raw key as the label's ``title`` (hover), so
nothing is lost.

``breakable(text)`` escapes ``text`` and lets the browser break a long name
after ``_``, ``.``, ``/`` and ``=`` (``<wbr>``), so dotted keys, trial ids and
column names wrap instead of widening the page.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from markupsafe import Markup, escape

__all__ = ["ABBREVIATIONS", "PHRASES", "SEP", "breakable", "child_label", "clip", "detail_label", "key_label"]

SEP = " › "

#: Whole underscore-joined phrases, matched first (longest first) within a key.
PHRASES = {
    "n_train_combos": "training combinations",
    "trial_id": "trial ID",
    "trial_ids": "trial IDs",
    "sub_diff": "SubDiff",
    "abl_diff": "AblDiff",
    "random_init": "random init",
}

#: One token (between underscores) → its reading.
ABBREVIATIONS = {
    "r2": "R²",
    "ci": "CI",
    "n": "n",
    "id": "in-distribution",
    "ood": "out-of-distribution",
    "acc": "accuracy",
    "heldout": "held-out",
    "inhull": "in-hull",
    "outhull": "out-of-hull",
    "decod": "decodability",
    "cv": "CV",
    "mlp": "MLP",
    "spearman": "Spearman",
    "pearson": "Pearson",
    "abl": "ablation",
    "diff": "difference",
    "eps": "ε",
    "frac": "fraction",
    "lr": "learning rate",
    "params": "parameters",
    "taskmean": "task-mean",
    "sg": "subgraph",
    "ge": "≥",
    "le": "≤",
    "gt": ">",
    "lt": "<",
    "minus": "−",
}

_IDENT = re.compile(r"[A-Za-z0-9_.]*[A-Za-z][A-Za-z0-9_.]*")
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:e[-+]?\d+)?")
_ARITY = re.compile(r"k(\d+)")
_INDEX = re.compile(r"\[(\d+)\]")
# Words that end the "X" of "…_by_X_at_…".
_BY_END = {"at", "for", "in", "when", "over", "with", "of", "per"}


def key_label(key: str) -> str:
    """One key's reading: ``"heldout_r2_taskmean_at_largest_scale"`` → ``"held-out R² task-mean at
    largest scale"``, ``"r2_inhull_k2"`` → ``"R² in-hull, 2 modules"``. Non-identifiers come back as they are."""
    key = str(key)
    if not _IDENT.fullmatch(key) or "_" not in key and key.lower() not in ABBREVIATIONS:
        return key
    tokens = key.split("_")
    words: list[str] = []
    i = 0
    phrases = sorted(((p.split("_"), v) for p, v in PHRASES.items()), key=lambda pv: -len(pv[0]))
    while i < len(tokens):
        for ptoks, reading in phrases:
            if [t.lower() for t in tokens[i:i + len(ptoks)]] == ptoks:
                words.append(reading)
                i += len(ptoks)
                break
        else:
            tok = tokens[i]
            arity = _ARITY.fullmatch(tok.lower())
            if arity and i == len(tokens) - 1 and i > 0:
                n = int(arity.group(1))
                words[-1] += ","
                words.append(f"{n} module" + ("" if n == 1 else "s"))
            elif tok:
                words.append(ABBREVIATIONS.get(tok.lower(), tok))
            i += 1
    return " ".join(words)


def _by_axis(parent: str) -> str | None:
    """``"heldout_r2_by_width_at_min_holdout"`` → ``"width"``: what the numeric keys beneath it are."""
    tokens = str(parent).split("_")
    if "by" not in tokens:
        return None
    rest = tokens[tokens.index("by") + 1:]
    axis = []
    for t in rest:
        if t in _BY_END:
            break
        axis.append(t)
    return key_label("_".join(axis)) if axis else None


def child_label(parent: str | None, key: str) -> str:
    """A key's reading beneath ``parent``: a number under ``…_by_X…`` reads ``"X number"``,
    a list index ``[0]`` reads ``"#1"``, anything else as ``key_label``."""
    key = str(key)
    index = _INDEX.fullmatch(key)
    if index:
        return f"#{int(index.group(1)) + 1}"
    if parent is not None and _NUMBER.fullmatch(key):
        axis = _by_axis(parent)
        if axis:
            return f"{axis} {key}"
    return key_label(key)


def detail_label(path: Sequence[str]) -> str:
    """The readable label of a nested details key given as its path of raw keys (joined by ``›``)."""
    path = [str(p) for p in path]
    return SEP.join(child_label(path[i - 1] if i else None, k) for i, k in enumerate(path))


_BREAK_AFTER = re.compile(r"[_/=](?=\S)|\.(?=[A-Za-z])")


def breakable(text: object) -> Markup:
    """``text`` escaped, with a ``<wbr>`` (break opportunity) after each ``_ / =`` inside a word and
    each ``.`` before a letter (``hidden.0``, not ``0.25``)."""
    return Markup(_BREAK_AFTER.sub(lambda m: m.group(0) + "<wbr>", str(escape(str(text)))))


def clip(text: object, limit: int = 160) -> str:
    """``text`` cut to at most ``limit`` characters at a word boundary, with ``…`` where it was cut (the
    page keeps the whole text one click away)."""
    text = " ".join(str(text or "").split())
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    if " " in cut[limit // 2:]:
        cut = cut[: cut.rindex(" ")]
    return cut.rstrip(" ,;:") + "…"
