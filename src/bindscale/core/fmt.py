"""How numbers and verdicts read, on the report pages and in the terminal alike.

One function per thing, shared by :mod:`bindscale.report.html`, the answer page and the CLI, so a
number reads the same everywhere: three significant figures (``0.0294 [0.0220, 0.140]``), exact
counts as integers (``102272``), ``—`` for a missing value. A verdict of a quick or unfinished run
reads ``smoke test: not supported`` in both places.

Imports nothing heavy (no NumPy, no pandas): NumPy scalars are read through the ``numbers`` ABCs.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

__all__ = ["SIG", "anchor_text", "fmt", "fmt_against", "fmt_ci", "unparsable_text", "verdict_words"]

#: Significant figures of every reported number.
SIG = 3


def fmt(v: Any) -> str:
    """A number with three significant figures: ``0.0294``, ``0.140``, ``12.3``, ``1230``, ``2.94e-05``;
    integers and integer-valued floats from 1000 up (counts: parameters, steps) exactly; ``0`` for zero;
    ``—`` for None or NaN; ``∞`` / ``−∞``; anything else as ``str``."""
    if v is None:
        return "—"
    if isinstance(v, bool) or type(v).__name__ == "bool_":
        return str(bool(v))
    if isinstance(v, numbers.Integral):
        return str(int(v))
    if isinstance(v, numbers.Real):
        f = float(v)
        if math.isnan(f):
            return "—"
        if math.isinf(f):
            return "∞" if f > 0 else "−∞"
        if f == 0:
            return "0"
        if f.is_integer() and abs(f) >= 1000:
            return str(int(f))
        if 1e3 <= abs(f) < 1e6:  # 1234.5 -> 1230, not 1.23e+03
            return str(int(round(f, SIG - 1 - int(math.floor(math.log10(abs(f)))))))
        text = f"{f:#.{SIG}g}"
        if "e" not in text:
            text = text.rstrip(".")
        return text
    return str(v)


def fmt_against(value: float, level: float) -> str:
    """``value`` in three significant figures without trailing zeros (``0.33``, as a gate's reason has
    always read), with more (up to 6) where three would print it equal to the ``level`` it is compared
    with: ``0.9497 < 0.95``, never ``0.95 < 0.95``. NaN and infinities read as :func:`fmt` gives them."""
    f, lv = float(value), float(level)
    if not math.isfinite(f):
        return fmt(value)
    text = f"{f:.{SIG}g}"
    if f == lv:
        return text
    for digits in range(SIG + 1, 7):
        if float(text) != lv:
            break
        text = f"{f:.{digits}g}"
    return text


def fmt_ci(value: Any, low: Any, high: Any, n: Any = None) -> str:
    """``0.0294 [0.0220, 0.140]``; with `` (n=5)`` when ``n`` is given."""
    text = f"{fmt(value)} [{fmt(low)}, {fmt(high)}]"
    return text + (f" (n={n})" if n is not None else "")


def verdict_words(verdict: str, smoke: bool = False, stale: bool = False) -> str:
    """``not supported``; ``smoke test: not supported`` for a quick or unfinished run's verdict; ``stale: not
    supported`` for a verdict made by code whose numbers have moved since (neither is counted)."""
    words = str(verdict).replace("_", " ")
    if stale:
        return f"stale: {words}"
    return f"smoke test: {words}" if smoke else words


def anchor_text(anchor: dict, citation: bool = True) -> str:
    """One line for a source's headline result (an answer row's ``anchor``): the anchor's own one-line
    ``text`` where it has one (:attr:`bindscale.core.study.Anchor.text`: result, model size, citation); else its
    number with unit, metric and model size (``57.5%, constraint satisfaction, GPT-4``), then the citation;
    where the source gives no number, ``no number: “its own sentence”`` (``quote``)."""
    if anchor.get("text"):
        return str(anchor["text"])
    number = anchor.get("number")
    if number is not None and number != "":
        unit = anchor.get("unit") or ""
        value = number if isinstance(number, str) else fmt(number)
        head = f"{value}{unit}" if unit == "%" else " ".join(x for x in (value, str(unit)) if x)
        text = ", ".join([head] + [str(anchor[k]) for k in ("metric", "model_size") if anchor.get(k)])
    else:
        said = anchor.get("quote") or ""
        text = f"no number: “{said}”" if said else "no number"
    return text + (f" ({anchor['citation']})" if citation and anchor.get("citation") else "")


def unparsable_text(u: "dict | None") -> str:
    """A generated-answer study's unparsable share (``{"mean", "min", "max"}`` over trials), as the pages and
    the terminal print it: ``unparsable answers: 0.870 of the test answers (0.700–1.00 by trial)``; ``""``
    without one."""
    if not u:
        return ""
    spread = f" ({fmt(u.get('min'))}–{fmt(u.get('max'))} by trial)" if u.get("min") != u.get("max") else ""
    return f"unparsable answers: {fmt(u.get('mean'))} of the test answers{spread}"
