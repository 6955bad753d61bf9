"""Dependency treebanks in CoNLL-U (Universal Dependencies' file format), read and written.

Format: de Marneffe, Manning, Nivre, Zeman 2021, "Universal Dependencies" (Computational
Linguistics 47(2)); https://universaldependencies.org/format.html. One word per line with ten
tab-separated columns (ID FORM LEMMA UPOS XPOS FEATS HEAD DEPREL DEPS MISC), sentences separated
by a blank line, comments start with ``#`` (``# sent_id = ...`` names a sentence).

:func:`read_conllu` keeps what the probes need (:class:`Sentence`): word forms, heads, universal
relations with their subtype stripped (``nmod:poss`` → ``nmod``) and parts of speech. Multiword
token lines (ID ``1-2``) and empty nodes (ID ``1.1``) are skipped. Every sentence is validated: ten
columns per line, consecutive word ids, heads in range, exactly one root, no cycle — so the heads
form a tree. Non-projective trees (crossing arcs) are accepted. Any violation raises
:class:`TreebankError` whose message is one line ``PATH: sentence SENT_ID (line N): what is wrong``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Sentence", "TreebankError", "read_conllu", "write_conllu", "validate_heads"]


@dataclass(frozen=True)
class Sentence:
    """One dependency-annotated sentence (words 1-based in ``heads``; 0 = the root).

    Attributes:
        sent_id: the sentence's id (``# sent_id``; else ``"<file stem>-<ordinal>"``).
        words: word forms, ``(n,)``.
        heads: per word the 1-based index of its head, 0 for the root word, ``(n,)``.
        deprels: per word its universal relation, subtype stripped (``"nmod:poss"`` → ``"nmod"``).
        upos: per word its UD part of speech; ``"PUNCT"`` marks punctuation.
    """

    sent_id: str
    words: tuple[str, ...]
    heads: tuple[int, ...]
    deprels: tuple[str, ...]
    upos: tuple[str, ...]

    def __len__(self) -> int:
        return len(self.words)


class TreebankError(ValueError):
    """A malformed treebank; the message is one line ``PATH: sentence SENT_ID (line N): what is wrong``."""


def validate_heads(heads: Iterable[int]) -> str | None:
    """Why ``heads`` (1-based, 0 = root) do not form a dependency tree, or None.

    A tree: every head in ``0..n``, no word its own head, exactly one word headed by 0, and every
    word reaches the root (no cycle).
    """
    heads = list(heads)
    n = len(heads)
    if n == 0:
        return "no words"
    for i, h in enumerate(heads, start=1):
        if not 0 <= h <= n:
            return f"word {i} has head {h}, outside 0..{n}"
        if h == i:
            return f"word {i} is its own head"
    for i in range(1, n + 1):
        seen, j = set(), i
        while j != 0:
            if j in seen:
                return f"the heads form a cycle through word {j}"
            seen.add(j)
            j = heads[j - 1]
    roots = [i for i, h in enumerate(heads, start=1) if h == 0]
    if len(roots) != 1:
        return f"{len(roots)} root words (head 0), need exactly one: words {roots}"
    return None


def _finish(path: Path, ordinal: int, sid: str | None, start: int, rows: list[tuple[int, list[str]]]) -> Sentence:
    name = sid if sid is not None else f"{path.stem}-{ordinal}"

    def fail(line: int, what: str) -> TreebankError:
        return TreebankError(f"{path}: sentence {name} (line {line}): {what}")

    words, heads, rels, upos = [], [], [], []
    for k, (line, cols) in enumerate(rows, start=1):
        if cols[0] != str(k):
            raise fail(line, f"word id {cols[0]!r} where {k} was expected (ids must run 1, 2, ...)")
        if cols[6] in ("_", ""):
            raise fail(line, f"word {k} ({cols[1]!r}) has no head (column 7 is {cols[6]!r})")
        try:
            h = int(cols[6])
        except ValueError:
            raise fail(line, f"word {k} has head {cols[6]!r}, not an integer") from None
        words.append(cols[1])
        heads.append(h)
        rels.append(cols[7].split(":")[0])
        upos.append(cols[3])
    why = validate_heads(heads)
    if why:
        raise fail(start, why)
    return Sentence(name, tuple(words), tuple(heads), tuple(rels), tuple(upos))


def read_conllu(path: str | Path) -> list[Sentence]:
    """Every sentence of a CoNLL-U file, validated (see the module docstring).

    Raises:
        FileNotFoundError: no such file.
        TreebankError: a malformed line or sentence (one line naming the file, sentence and line).
    """
    path = Path(path)
    out: list[Sentence] = []
    rows: list[tuple[int, list[str]]] = []
    sid: str | None = None
    start = 1
    with path.open(encoding="utf-8") as fh:
        for lineno, raw in enumerate(fh, start=1):
            line = raw.rstrip("\n").rstrip("\r")
            if not line.strip():
                if rows:
                    out.append(_finish(path, len(out) + 1, sid, start, rows))
                rows, sid = [], None
                continue
            if line.startswith("#"):
                if not rows:
                    key, _, value = line[1:].partition("=")
                    if key.strip() == "sent_id":
                        sid = value.strip()
                continue
            if not rows:
                start = lineno
            cols = line.split("\t")
            if len(cols) != 10:
                name = sid if sid is not None else f"{path.stem}-{len(out) + 1}"
                raise TreebankError(f"{path}: sentence {name} (line {lineno}): {len(cols)} tab-separated "
                                    "columns, CoNLL-U needs 10")
            if "-" in cols[0] or "." in cols[0]:  # multiword token range or empty node
                continue
            rows.append((lineno, cols))
    if rows:
        out.append(_finish(path, len(out) + 1, sid, start, rows))
    return out


def write_conllu(sentences: Iterable[Sentence], path: str | Path) -> None:
    """Write sentences as CoNLL-U (LEMMA, XPOS, FEATS, DEPS, MISC left ``_``); :func:`read_conllu` reads them back.

    Raises:
        ValueError: a sentence whose heads are not a tree, or whose columns differ in length.
    """
    lines: list[str] = []
    for s in sentences:
        n = len(s.words)
        if not len(s.heads) == len(s.deprels) == len(s.upos) == n:
            raise ValueError(f"sentence {s.sent_id}: words, heads, deprels and upos differ in length")
        why = validate_heads(s.heads)
        if why:
            raise ValueError(f"sentence {s.sent_id}: {why}")
        lines.append(f"# sent_id = {s.sent_id}")
        lines.append("# text = " + " ".join(s.words))
        for i in range(n):
            lines.append("\t".join([str(i + 1), s.words[i], "_", s.upos[i], "_", "_", str(s.heads[i]),
                                    s.deprels[i], "_", "_"]))
        lines.append("")
    Path(path).write_text("\n".join(lines) + ("\n" if lines else ""), encoding="utf-8")
