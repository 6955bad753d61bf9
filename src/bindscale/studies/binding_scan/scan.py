"""SCAN from its grammar and its splits, as the ``binding_scan`` study uses them.

Source: Lake & Baroni 2018, "Generalization without systematicity: On the compositional skills of
sequence-to-sequence recurrent networks" (ICML), Fig. 6: commands ``C -> S and S | S after S | S``,
``S -> V twice | V thrice | V``, ``V -> D[1] opposite D[2] | D[1] around D[2] | D | U``,
``D -> U left | U right | turn left | turn right``, ``U -> walk | look | run | jump``, with their
interpretation (``x around left -> (I_TURN_LEFT x) x 4``, ``x1 after x2 -> x2 x1``, "turn" contributing no
action of its own). 20,910 distinct commands.

A study imports nothing of another study, so this one carries its own copy of the grammar (the ``depth``
study has the same, with file loaders; ``tests/studies/binding_scan/test_scan.py`` checks that the two
generate the same commands and the same splits, so they cannot drift apart).

Splits (:func:`make_split`): ``simple`` (seeded 80/20), ``length`` (train on outputs of at most 22
actions), ``addprim_jump`` and ``addprim_turn_left`` (test on every command with the primitive but the
primitive alone; the primitive's own line repeated to a tenth of the training lines, as in the official
files), ``around_right`` (Loula, Baroni & Lake 2018, "Rearranging the Familiar": test on every command
containing "around right").
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

#: Distinct commands of the grammar.
N_COMMANDS = 20_910
#: Longest action sequence of the length split's training set.
LENGTH_CUTOFF = 22
#: Share of the primitive's own line in an add-primitive training set (official files: 1,467 of 14,670).
PRIMITIVE_SHARE = 0.1
#: The generated splits, in report order.
SPLITS = ("simple", "length", "addprim_jump", "addprim_turn_left", "around_right")


class Pair(NamedTuple):
    """One example: command tokens and action tokens."""

    src: tuple[str, ...]
    tgt: tuple[str, ...]


_ACTION = {"walk": "I_WALK", "look": "I_LOOK", "run": "I_RUN", "jump": "I_JUMP"}
_TURN = {"left": "I_TURN_LEFT", "right": "I_TURN_RIGHT"}


def _phrases() -> list[tuple[tuple[str, ...], tuple[str, ...]]]:
    """Every ``S`` phrase with its meaning (102 of them), in the grammar's order: D, U, x opposite / around
    d for x a primitive or "turn"; each plain, "twice" and "thrice"."""
    v: list[tuple[tuple[str, ...], tuple[str, ...]]] = []
    for u, act in _ACTION.items():
        for d in ("left", "right"):
            v.append(((u, d), (_TURN[d], act)))
    for d in ("left", "right"):
        v.append((("turn", d), (_TURN[d],)))
    v += [((u,), (act,)) for u, act in _ACTION.items()]
    for x in (*_ACTION, "turn"):
        acts = (_ACTION[x],) if x in _ACTION else ()
        for d in ("left", "right"):
            v.append(((x, "opposite", d), (_TURN[d], _TURN[d], *acts)))
            v.append(((x, "around", d), (_TURN[d], *acts) * 4))
    out = []
    for words, acts in v:
        out += [(words, acts), ((*words, "twice"), acts * 2), ((*words, "thrice"), acts * 3)]
    return out


def generate() -> list[Pair]:
    """Every SCAN command with its action sequence, in a fixed order (:data:`N_COMMANDS` pairs)."""
    s = _phrases()
    out = [Pair(w, a) for w, a in s]
    for w1, a1 in s:
        for w2, a2 in s:
            out.append(Pair((*w1, "and", *w2), a1 + a2))
            out.append(Pair((*w1, "after", *w2), a2 + a1))
    return out


def _contains(src: tuple[str, ...], phrase: tuple[str, ...]) -> bool:
    n = len(phrase)
    return any(src[i:i + n] == phrase for i in range(len(src) - n + 1))


def _add_primitive(pairs: list[Pair], primitive: tuple[str, ...]) -> tuple[list[Pair], list[Pair]]:
    alone = [p for p in pairs if p.src == primitive]
    test = [p for p in pairs if p.src != primitive and _contains(p.src, primitive)]
    rest = [p for p in pairs if not _contains(p.src, primitive)]
    reps = round(PRIMITIVE_SHARE * len(rest) / (1 - PRIMITIVE_SHARE))  # r = share · (len(rest) + r)
    return rest + alone * reps, test


def make_split(name: str, seed: int = 0) -> tuple[list[Pair], list[Pair]]:
    """``(train, test)`` of one split (see the module docstring); ``seed``: the ``simple`` split's permutation.

    Raises:
        ValueError: an unknown split.
    """
    pairs = generate()
    if name == "simple":
        order = np.random.default_rng(seed).permutation(len(pairs))
        n_test = round(0.2 * len(pairs))
        return [pairs[i] for i in order[n_test:]], [pairs[i] for i in order[:n_test]]
    if name == "length":
        return ([p for p in pairs if len(p.tgt) <= LENGTH_CUTOFF], [p for p in pairs if len(p.tgt) > LENGTH_CUTOFF])
    if name == "addprim_jump":
        return _add_primitive(pairs, ("jump",))
    if name == "addprim_turn_left":
        return _add_primitive(pairs, ("turn", "left"))
    if name == "around_right":
        return ([p for p in pairs if not _contains(p.src, ("around", "right"))],
                [p for p in pairs if _contains(p.src, ("around", "right"))])
    raise ValueError(f"unknown SCAN split {name!r}; known: {', '.join(SPLITS)}")
