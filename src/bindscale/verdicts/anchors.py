"""How a claim's verdict relates to its source's headline: one word, decided by a stated rule.

Each claim carries its source's headline result (:class:`bindscale.core.study.Anchor`); the answer page
shows it beside bindscale's deciding number with one of four words, which :func:`relation` decides
from plain data (the claim's verdict row, its anchor, and the largest model the run trained):

1. **not comparable** — the verdict is inconclusive (nothing was decided, so nothing is reproduced or
   contradicted), or it is a smoke test (a quick or unfinished run, or a configuration other than the
   shipped one: its verdict is not counted, so it neither reproduces nor contradicts), or bindscale
   decides the claim on another measure than the source's headline (the statistic is not one the anchor
   lists as measuring the source's metric), or a model size is unknown (the source states none, or the
   run recorded none), so scale cannot be compared.
2. **different scale** — otherwise, when bindscale's largest model and the source's model differ by at
   least :data:`SCALE_GAP` (a factor of 10: one order of magnitude) in parameter count, either way. A
   verdict at a tenth of the source's scale or less tests the claim at another scale; it neither
   reproduces nor contradicts the source. (The factor was 100 until 4 December; it called 0.11M against
   the source's 10.6M "comparable", which a question about scale cannot.)
3. **reproduced** — otherwise, when the verdict is supported (the source's claim holds here).
4. **contradicted** — otherwise, when the verdict is not supported.

The tests are applied in that order, so an inconclusive verdict is never "reproduced" or "contradicted",
and a claim decided on another measure is never "different scale" (its scale is not the question).
Each word comes with ``why``: the test that decided it, in words, with the two sizes where they were
compared.

Layer: beside :mod:`bindscale.report.answer`, which calls it once per claim row; imports only :mod:`bindscale.core.study`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from bindscale.core.study import NOT_SUPPORTED, SUPPORTED, Anchor

#: The four words, in the order the rule tests them.
REPRODUCED, CONTRADICTED, DIFFERENT_SCALE, NOT_COMPARABLE = (
    "reproduced", "contradicted", "different scale", "not comparable")
WORDS = (NOT_COMPARABLE, DIFFERENT_SCALE, REPRODUCED, CONTRADICTED)
#: Parameter-count ratio (either way) from which two models are at a different scale: one order of magnitude.
SCALE_GAP = 10.0

#: The rule in words, as a page or ``answer.json`` states it.
RULE = (
    "Relation to the source: 'not comparable' when the verdict is inconclusive or a smoke test, when bindscale "
    "decides the claim on another measure than the source's headline, or when either model size is unknown; "
    f"else 'different scale' when bindscale's largest model and the source's differ by a factor of {SCALE_GAP:g} "
    "or more in parameters; else 'reproduced' when supported and 'contradicted' when not supported."
)


def _count(n: float) -> str:
    """A parameter count in words: 35,456 -> "35.5k", 7e9 -> "7B"."""
    for div, suffix in ((1e9, "B"), (1e6, "M"), (1e3, "k")):
        if n >= div:
            return f"{n / div:.3g}{suffix}"
    return f"{n:.3g}"


def distance(row: Mapping[str, Any], anchor: Anchor | None, params: float | None) -> dict[str, Any]:
    """What the one-word relation folds together, shown apart: the measure (``"source"`` when bindscale decides
    on a statistic the anchor lists as the source's metric, ``"another"`` otherwise, ``None`` without an anchor),
    both measures named, and the scale (bindscale's deciding model's parameters, the source's, and the ratio
    theirs / ours; None where a size is unknown).

    Returns: ``{"measure", "ours_measure", "source_measure", "ours_params", "source_params", "ratio", "text"}``
    where ``text`` says it in one line ("another measure (held-out R²) than the source's (…); 0.11M vs 10.6M
    parameters, the source's 96x ours").
    """
    ours_params = None if params is None or not math.isfinite(float(params)) or float(params) <= 0 else float(params)
    if anchor is None:
        return {"measure": None, "ours_measure": row.get("statistic"), "source_measure": None,
                "ours_params": ours_params, "source_params": None, "ratio": None,
                "text": "no source headline to measure against"}
    same = row.get("statistic") in tuple(anchor.statistics)
    theirs = anchor.params
    ratio = theirs / ours_params if theirs and ours_params else None
    measure = (f"the source's measure ({anchor.metric})" if same else
               f"another measure ({row.get('statistic') or 'none'}) than the source's ({anchor.metric})")
    if ratio is None:
        scale = (f"the source's model size is not stated ({anchor.model_size})" if not theirs
                 else "the run recorded no model size")
    else:
        scale = (f"{_count(ours_params)} vs {_count(theirs)} parameters, the source's "
                 + (f"{ratio:,.0f}x ours" if ratio >= 1 else f"1/{1 / ratio:,.0f} of ours"))
    return {"measure": "source" if same else "another", "ours_measure": row.get("statistic"),
            "source_measure": anchor.metric, "ours_params": ours_params, "source_params": theirs, "ratio": ratio,
            "text": f"{measure}; {scale}"}


def relation(row: Mapping[str, Any], anchor: Anchor | None, params: float | None) -> dict[str, str]:
    """The one-word relation of a claim's verdict to its source's headline, and why (see the module).

    Args:
        row: the claim's row: ``verdict`` (supported / not_supported / inconclusive), ``statistic``
            (the deciding statistic's identifier), ``firm`` (False for a smoke test; missing counts as firm)
            and ``run_status`` (why not firm, in words; optional).
        anchor: the claim's anchor (None: a claim without one, "not comparable").
        params: parameter count of the largest model the run trained (None: not recorded).

    Returns:
        ``{"word": one of WORDS, "why": one sentence}``.
    """
    verdict = row.get("verdict")
    if anchor is None:
        return {"word": NOT_COMPARABLE, "why": "the claim carries no source headline to compare with"}
    if verdict not in (SUPPORTED, NOT_SUPPORTED):
        return {"word": NOT_COMPARABLE, "why": "inconclusive here: nothing was decided to set beside the source"}
    if row.get("firm") is False:
        status = row.get("run_status") or "smoke test"
        return {"word": NOT_COMPARABLE,
                "why": f"{status}: a verdict that is not counted neither reproduces nor contradicts the source"}
    if row.get("statistic") not in tuple(anchor.statistics):
        return {"word": NOT_COMPARABLE,
                "why": f"decided on another measure ({row.get('statistic') or 'no statistic'}) than the source's "
                       f"headline ({anchor.metric})"}
    theirs = anchor.params
    ours = None if params is None or not math.isfinite(float(params)) or float(params) <= 0 else float(params)
    if theirs is None:
        return {"word": NOT_COMPARABLE, "why": f"the source does not state its model size ({anchor.model_size})"}
    if ours is None:
        return {"word": NOT_COMPARABLE, "why": "the run recorded no model size to compare with the source's"}
    ratio = max(theirs, ours) / min(theirs, ours)
    sizes = f"bindscale's largest model {_count(ours)} parameters, the source's {_count(theirs)}"
    if ratio >= SCALE_GAP:
        return {"word": DIFFERENT_SCALE,
                "why": f"{sizes}: {ratio:,.0f}x apart (a factor of {SCALE_GAP:g} or more is another scale)"}
    said = "supported" if verdict == SUPPORTED else "not supported"
    return {"word": REPRODUCED if verdict == SUPPORTED else CONTRADICTED,
            "why": f"{said} on the source's measure at a comparable scale ({sizes})"}
