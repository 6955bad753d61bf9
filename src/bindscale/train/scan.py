"""SCAN (Lake & Baroni 2018) generated from its grammar, its splits, loaders for SCAN- and COGS-format
files, and the SCAN task config section: one module shared by the SCAN studies (``depth``,
``binding_scan``), which reach it through the kit (``from bindscale.kit import scan``).

Source: Lake & Baroni 2018, "Generalization without systematicity: On the compositional skills of
sequence-to-sequence recurrent networks" (ICML), Fig. 6 (phrase-structure grammar and interpretation
functions). Commands ``C``::

    C -> S and S | S after S | S
    S -> V twice | V thrice | V
    V -> D[1] opposite D[2] | D[1] around D[2] | D | U
    D -> U left | U right | turn left | turn right
    U -> walk | look | run | jump

(``D[1] opposite D[2]`` with ``D[2]`` the direction: "walk opposite left", "turn opposite right").
Interpretation: ``walk -> I_WALK`` (likewise LOOK, RUN, JUMP), ``turn left -> I_TURN_LEFT``,
``u left -> I_TURN_LEFT u``, ``x opposite left -> I_TURN_LEFT I_TURN_LEFT x``,
``x around left -> (I_TURN_LEFT x) x 4``, ``x twice -> x x``, ``x thrice -> x x x``,
``x1 and x2 -> x1 x2``, ``x1 after x2 -> x2 x1`` (with "turn" as ``x`` contributing no action).
The grammar yields 20,910 distinct commands (:data:`N_COMMANDS`).

Splits (:func:`make_split`), each a (train, test) pair of :class:`Pair` lists:

- ``simple``: a random 80/20 split of all commands (seeded).
- ``length``: train on commands whose action sequence has at most 22 actions, test on the rest
  (24 to 48 actions; no command has 23).
- ``addprim_jump`` / ``addprim_turn_left``: test on every command that contains the primitive
  ("jump" / "turn left") except the primitive alone; train on every other command plus the
  primitive alone, repeated so that it makes up :data:`PRIMITIVE_SHARE` of the training lines, as
  in the official files (``tasks_train_addprim_jump.txt`` holds "jump" 1,467 times among 14,670
  lines).
- ``around_right``: the template split of Loula, Baroni & Lake 2018, "Rearranging the Familiar:
  Testing Compositional Generalization in Recurrent Networks" (BlackboxNLP): test on every command
  containing "around right", train on the rest (every other "around" and "right" phrase is seen).

Loaders: :func:`load_pairs` reads SCAN's ``IN: <command> OUT: <actions>`` lines (plain or gzipped)
and COGS-style TSV (Kim & Linzen 2020, "COGS: A Compositional Generalization Challenge Based on
Semantic Interpretation": ``sentence <TAB> logical form <TAB> generalization type``). Tokens are
whitespace-separated. A malformed line raises :class:`bindscale.core.errors.ConfigError` naming the file
and the line number.

Config: :class:`ScanTaskConfig`, the ``task`` section of a SCAN trial (which split, how much of it is
scored); the sequence-task helpers a SCAN trial trains and scores with (vocabulary, packing, exact match,
accuracy by length, the train / in-distribution check / test sets of a split) are
:mod:`bindscale.train.seqdata`'s.
"""

from __future__ import annotations

import gzip
import itertools
from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple

import numpy as np
from pydantic import Field

from bindscale.core.config import StrictModel
from bindscale.core.errors import ConfigError

#: Distinct commands of the grammar (Lake & Baroni 2018, §2).
N_COMMANDS = 20_910
#: Longest action sequence in the length split's training set.
LENGTH_CUTOFF = 22
#: Share of the primitive's own line in an add-primitive training set (official files: 1467 / 14670).
PRIMITIVE_SHARE = 0.1
#: The generated splits (in report order).
SPLITS = ("simple", "length", "addprim_jump", "addprim_turn_left", "around_right")
#: Fraction of all commands the ``simple`` split tests on.
SIMPLE_TEST_FRACTION = 0.2

_PRIMS = {"walk": "I_WALK", "look": "I_LOOK", "run": "I_RUN", "jump": "I_JUMP"}
_TURN = {"left": "I_TURN_LEFT", "right": "I_TURN_RIGHT"}


class Pair(NamedTuple):
    """One example: the input tokens (command / sentence) and the output tokens (actions / logical form)."""

    src: tuple[str, ...]
    tgt: tuple[str, ...]

    def line(self) -> str:
        """The example in SCAN's file format (``IN: ... OUT: ...``)."""
        return f"IN: {' '.join(self.src)} OUT: {' '.join(self.tgt)}"


def _u_phrases() -> list[tuple[str, list[str]]]:
    return [(u, [a]) for u, a in _PRIMS.items()]


def _d_phrases() -> list[tuple[str, list[str]]]:
    """``D``: "u left/right" and "turn left/right", with meanings."""
    out = [(f"{u} {d}", [_TURN[d], a]) for u, a in _PRIMS.items() for d in ("left", "right")]
    out += [(f"turn {d}", [_TURN[d]]) for d in ("left", "right")]
    return out


def _v_phrases() -> list[tuple[str, list[str]]]:
    """``V`` (34 phrases): D, U, and "x opposite d", "x around d" for x a primitive or "turn"."""
    out = _d_phrases() + _u_phrases()
    for x, acts in list(_PRIMS.items()) + [("turn", None)]:
        base = [acts] if acts else []
        for d in ("left", "right"):
            out.append((f"{x} opposite {d}", [_TURN[d], _TURN[d]] + base))
            out.append((f"{x} around {d}", ([_TURN[d]] + base) * 4))
    return out


def _s_phrases() -> list[tuple[str, list[str]]]:
    """``S`` (102 phrases): V, "V twice", "V thrice"."""
    out = []
    for v, acts in _v_phrases():
        out += [(v, acts), (f"{v} twice", acts * 2), (f"{v} thrice", acts * 3)]
    return out


def generate() -> list[Pair]:
    """Every SCAN command with its action sequence, in a fixed order (:data:`N_COMMANDS` pairs)."""
    s = _s_phrases()
    out = [Pair(tuple(c.split()), tuple(a)) for c, a in s]
    for (c1, a1), (c2, a2) in itertools.product(s, s):
        out.append(Pair(tuple(f"{c1} and {c2}".split()), tuple(a1 + a2)))
        out.append(Pair(tuple(f"{c1} after {c2}".split()), tuple(a2 + a1)))
    return out


def interpret(command: str) -> tuple[str, ...]:
    """The action sequence of one command (a lookup in :func:`generate`).

    Raises:
        ValueError: the command is not in SCAN's grammar.
    """
    table = _table()
    try:
        return table[tuple(command.split())]
    except KeyError:
        raise ValueError(f"{command!r} is not a SCAN command") from None


_TABLE: dict[tuple[str, ...], tuple[str, ...]] = {}


def _table() -> dict[tuple[str, ...], tuple[str, ...]]:
    if not _TABLE:
        _TABLE.update({p.src: p.tgt for p in generate()})
    return _TABLE


def _contains(src: tuple[str, ...], phrase: tuple[str, ...]) -> bool:
    n = len(phrase)
    return any(src[i:i + n] == phrase for i in range(len(src) - n + 1))


def _add_primitive(pairs: list[Pair], primitive: tuple[str, ...]) -> tuple[list[Pair], list[Pair]]:
    alone = [p for p in pairs if p.src == primitive]
    test = [p for p in pairs if _contains(p.src, primitive) and p.src != primitive]
    rest = [p for p in pairs if not _contains(p.src, primitive)]
    # Repeat the primitive until it is PRIMITIVE_SHARE of the lines: r = share * (len(rest) + r).
    reps = round(PRIMITIVE_SHARE * len(rest) / (1 - PRIMITIVE_SHARE))
    return rest + alone * reps, test


def make_split(name: str, seed: int = 0) -> tuple[list[Pair], list[Pair]]:
    """``(train, test)`` of one generated split (see the module docstring).

    Args:
        name: one of :data:`SPLITS`.
        seed: the ``simple`` split's random permutation (the others are deterministic).

    Raises:
        ValueError: an unknown split name.
    """
    pairs = generate()
    if name == "simple":
        order = np.random.default_rng(seed).permutation(len(pairs))
        n_test = round(SIMPLE_TEST_FRACTION * len(pairs))
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


# ------------------------------------------------------------------- config --

class ScanTaskConfig(StrictModel):
    """The ``task`` section of a SCAN trial: which split (:data:`SPLITS`) and how much of it is scored.

    ``split`` names a generated split; a study that also reads data files (``depth``) may let it be only
    the label the report and the verdicts use (any ``[a-z0-9_]`` label; ``simple`` marks in-distribution
    data), one that does not (``binding_scan``) narrows it to :data:`SPLITS` with a default of its own.
    ``eval_seed`` fixes, for every trial alike, the scored subsample of the test set (``n_test`` examples,
    0: all) and the in-distribution check set (``n_id`` training commands withheld from training;
    :func:`bindscale.train.seqdata.scan_data`).
    """

    split: str = Field("length", min_length=1, max_length=40)
    split_seed: int = Field(0, ge=0, le=2**31 - 1, description="the simple split's random 80/20 permutation")
    eval_seed: int = Field(0, ge=0, le=2**31 - 1, description="test subsample and in-distribution check set")
    n_test: int = Field(500, ge=0, le=1_000_000, description="test examples scored (0: all)")
    n_id: int = Field(200, ge=0, le=100_000, description="training commands withheld to check in-distribution accuracy")


# ------------------------------------------------------------------ loaders --

def _read_lines(path: Path) -> list[str]:
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rt", encoding="utf-8") as f:
            return f.read().splitlines()
    except FileNotFoundError:
        raise ConfigError(f"data file {path}: not found") from None
    except (OSError, UnicodeDecodeError, EOFError) as err:
        raise ConfigError(f"data file {path}: cannot be read ({type(err).__name__}: {err})") from None


def file_format(path: Path, lines: Iterable[str]) -> str:
    """``"scan"`` when the first non-blank line starts with ``IN:``, ``"cogs"`` when it has a tab.

    Raises:
        ConfigError: empty file, or a first line in neither format.
    """
    for line in lines:
        if line.strip():
            if line.startswith("IN:"):
                return "scan"
            if "\t" in line:
                return "cogs"
            raise ConfigError(f"data file {path}: line 1 is neither SCAN ('IN: ... OUT: ...') nor a COGS "
                              f"tab-separated line: {line[:60]!r}")
    raise ConfigError(f"data file {path}: no examples (empty file)")


def load_pairs(path: str | Path, fmt: str = "auto") -> list[Pair]:
    """Examples of one file, in file order (blank lines skipped).

    Args:
        path: a SCAN file (``IN: <tokens> OUT: <tokens>`` per line) or a COGS TSV
            (``<sentence>\\t<logical form>[\\t<generalization type>]``); ``.gz`` is read compressed.
        fmt: ``"scan"``, ``"cogs"`` or ``"auto"`` (:func:`file_format`).

    Raises:
        ConfigError: unreadable or empty file, unknown format, or a malformed line (one line naming
            the file and the line number).
    """
    path = Path(path)
    lines = _read_lines(path)
    if fmt == "auto":
        fmt = file_format(path, lines)
    if fmt not in ("scan", "cogs"):
        raise ConfigError(f"data format {fmt!r} is not one of auto, scan, cogs")
    out = []
    for no, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        if fmt == "scan":
            head, sep, actions = line.partition(" OUT:")
            ok = sep and head.startswith("IN:") and head[3:].split() and actions.split()
            if not ok:
                raise ConfigError(f"data file {path}, line {no}: expected 'IN: <command> OUT: <actions>', "
                                  f"got {line[:60]!r}")
            out.append(Pair(tuple(head[3:].split()), tuple(actions.split())))
        else:
            cols = line.split("\t")
            if len(cols) not in (2, 3) or not cols[0].split() or not cols[1].split():
                raise ConfigError(f"data file {path}, line {no}: expected 'sentence<TAB>logical form"
                                  f"[<TAB>generalization type]', got {len(cols)} tab-separated fields")
            out.append(Pair(tuple(cols[0].split()), tuple(cols[1].split())))
    return out
