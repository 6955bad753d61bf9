"""Structural compositionality scores (Lepori, Serre, Pavlick,
NeurIPS 2023, "Break It Down: Evidence for Structural Compositionality in
Neural Networks").

For a base model trained on a compound task "A and B" and one target
subroutine (say A):

1. a mask is searched (:func:`~bindscale.studies.modularity.masks.find_mask`,
   continuous sparsification) under which the frozen model solves A — on the
   subroutine-A training set, where B is held true so the compound label is
   A's truth value;
2. the **subnetwork** (base weights × hard mask) is scored on the
   subroutine-A test set (*target*) and the subroutine-B test set (*other*);
3. the **ablated model** (base weights × (1 − hard mask): the subnetwork's
   weights zeroed, everything else kept) is scored on the same two sets.

With chance floor ``c`` (accuracy of a constant guess; 0.5 here)::

    SubDiff = max(acc_sub(target), c) − max(acc_sub(other), c)
    AblDiff = max(acc_abl(target), c) − max(acc_abl(other), c)

The floor makes below-chance accuracies count as chance: being worse than
chance is not evidence of anything extra. **Structural compositionality** for
that subroutine is ``SubDiff > 0 and AblDiff < 0``: the subnetwork does the
target better than the other subroutine, and removing it hurts the target
more than the other subroutine.

Worked example (c = 0.5). The subnetwork for A scores 0.95 on A and 0.45 on
B: SubDiff = max(0.95, 0.5) − max(0.45, 0.5) = 0.95 − 0.50 = +0.45. The
ablated model scores 0.52 on A and 0.90 on B: AblDiff = 0.52 − 0.90 = −0.38.
Both criteria hold → structural. Had the mask kept a copy of the *whole*
compound computation, the subnetwork would also solve B (on the B set, A is
true, so the compound output is B's value): SubDiff ≈ 0.95 − 0.95 = 0 → not
structural. Had the subroutine been spread through weights both subroutines
need, the ablation would break both: AblDiff ≈ 0.5 − 0.5 = 0 → not structural.
A randomly initialised network may hide a subnetwork that solves A (SubDiff >
0), but ablating it leaves nothing that solves B, so AblDiff = 0: only the
ablation separates the cases (the controls).

Two choices change the verdict and belong in a study's config:

- *Which parameters are masked.* Weights both subroutines need (typically the
  readout) are kept by every mask, so ablating them breaks both subroutines.
  In a pilot (3-hidden-layer ReLU MLP, width 64, trained to 100% on the
  compound task, ``lambda_l0 = 1``) masking all four weight matrices gave
  AblDiff = 0 (the ablated model at chance on both sets); masking the three
  hidden weight matrices only gave AblDiff between −0.05 and −0.3.
- *How the output combines the subroutines.* The mask is trained with the
  other subroutine held true; if the output needs positive evidence from both
  subroutines (an AND of two detectors), the subnetwork for A must keep B's
  evidence too and the test reads "not structural", even though the two
  detectors live in disjoint weights (tests/studies/modularity/test_scores.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field

import numpy as np
import torch
from torch import nn

from bindscale.studies.modularity.masks import (
    Data,
    ForwardFn,
    MaskResult,
    accuracy,
    apply_mask,
    find_mask,
    random_mask_like,
)


def sub_diff(acc_sub_target: float, acc_sub_other: float, chance: float) -> float:
    """SubDiff = ``max(acc_target, c) − max(acc_other, c)`` for the subnetwork (> 0 wanted)."""
    return max(acc_sub_target, chance) - max(acc_sub_other, chance)


def abl_diff(acc_abl_target: float, acc_abl_other: float, chance: float) -> float:
    """AblDiff = ``max(acc_target, c) − max(acc_other, c)`` for the ablated model (< 0 wanted)."""
    return max(acc_abl_target, chance) - max(acc_abl_other, chance)


def structural(sub_diff: float, abl_diff: float) -> bool:
    """Structural compositionality: ``SubDiff > 0 and AblDiff < 0`` (NaN → False)."""
    return bool(sub_diff > 0 and abl_diff < 0)


def chance_level(labels: torch.Tensor) -> float:
    """Majority-class rate of integer labels ``(N,)``: the accuracy of a constant guess.

    Raises:
        ValueError: no labels.
    """
    if len(labels) == 0:
        raise ValueError("no labels: chance level is undefined")
    counts = torch.bincount(labels.long().flatten())
    return float(counts.max()) / len(labels)


@dataclass
class SubroutineResult:
    """Scores of one (base model, subroutine, mask seed).

    Attributes:
        subroutine: name of the target subroutine.
        chance: the floor ``c``.
        acc_sub_target, acc_sub_other: subnetwork accuracy on the target / other subroutine test set.
        acc_abl_target, acc_abl_other: ablated-model accuracy on the same sets.
        sub_diff, abl_diff, structural: the scores (module docstring).
        density: kept fraction of the masked weights.
        mask_accuracy: accuracy of the subnetwork on the mask's training data.
        random_*: the same accuracies and scores for a random mask of equal size per
            parameter (NaN when the control was not run).
        mask: the full mask search result (not part of :meth:`metrics`).
    """

    subroutine: str
    chance: float
    acc_sub_target: float
    acc_sub_other: float
    acc_abl_target: float
    acc_abl_other: float
    sub_diff: float
    abl_diff: float
    structural: bool
    density: float
    mask_accuracy: float
    random_acc_sub_target: float = float("nan")
    random_acc_sub_other: float = float("nan")
    random_acc_abl_target: float = float("nan")
    random_acc_abl_other: float = float("nan")
    random_sub_diff: float = float("nan")
    random_abl_diff: float = float("nan")
    random_structural: bool = False
    mask: MaskResult | None = field(default=None, repr=False)

    def metrics(self) -> dict[str, float | bool | str]:
        """Plain scalars for a record (everything but the mask)."""
        d = asdict(self)
        d.pop("mask")
        return d


def subroutine_modularity(
    model: nn.Module,
    param_names: list[str],
    forward_fn: ForwardFn | None,
    train: Data,
    test_target: Data,
    test_other: Data,
    *,
    subroutine: str = "A",
    chance: float | None = None,
    mask_generator: torch.Generator | None = None,
    random_control: bool = True,
    **mask_kwargs,
) -> SubroutineResult:
    """Break It Down's test of one subroutine on one trained base model.

    Args:
        model: the trained (or, for the control, untrained) base model; never modified.
        param_names: parameters to mask (see :func:`find_mask` and the module docstring on
            the readout).
        forward_fn: ``forward_fn(f, inputs) -> logits`` (see :mod:`bindscale.studies.modularity.masks`).
        train: ``(inputs, labels)`` the mask is trained on: the target subroutine's
            training set (other subroutine held true, label = target's truth value).
        test_target: the target subroutine's test set.
        test_other: the other subroutine's test set (target held true, label = other's truth).
        subroutine: the target's name, stored in the result.
        chance: floor ``c``; default the majority-class rate of the test labels.
        mask_generator: seeds the mask search's minibatches and the random-mask control
            (the mask seed of a base seed × mask seed grid); None = a generator seeded 0.
        random_control: also score a random mask of the same size per parameter.
        **mask_kwargs: passed to :func:`find_mask` (``lambda_l0``, ``steps``, ``lr``, …).

    Returns:
        A :class:`SubroutineResult`.

    Raises:
        ValueError: ``chance`` is None and the two test sets have different chance levels.
    """
    if chance is None:
        c_t, c_o = chance_level(test_target[1]), chance_level(test_other[1])
        if abs(c_t - c_o) > 1e-12:
            raise ValueError(f"test sets have different chance levels ({c_t:.4f} vs {c_o:.4f}); pass chance=")
        chance = c_t
    gen = mask_generator if mask_generator is not None else torch.Generator().manual_seed(0)
    res = find_mask(model, param_names, forward_fn, train, generator=gen, **mask_kwargs)
    accs = _score(model, res.masks, forward_fn, test_target, test_other)
    out = SubroutineResult(
        subroutine=subroutine,
        chance=float(chance),
        **accs,
        sub_diff=sub_diff(accs["acc_sub_target"], accs["acc_sub_other"], chance),
        abl_diff=abl_diff(accs["acc_abl_target"], accs["acc_abl_other"], chance),
        structural=False,
        density=res.density,
        mask_accuracy=res.accuracy,
        mask=res,
    )
    out.structural = structural(out.sub_diff, out.abl_diff)
    if random_control:
        r = _score(model, random_mask_like(res.masks, gen), forward_fn, test_target, test_other)
        out.random_acc_sub_target, out.random_acc_sub_other = r["acc_sub_target"], r["acc_sub_other"]
        out.random_acc_abl_target, out.random_acc_abl_other = r["acc_abl_target"], r["acc_abl_other"]
        out.random_sub_diff = sub_diff(r["acc_sub_target"], r["acc_sub_other"], chance)
        out.random_abl_diff = abl_diff(r["acc_abl_target"], r["acc_abl_other"], chance)
        out.random_structural = structural(out.random_sub_diff, out.random_abl_diff)
    return out


def fraction_structural(results: Iterable[SubroutineResult | Mapping[str, float]]) -> float:
    """Fraction of results (e.g. every base seed × mask seed) with SubDiff > 0 and AblDiff < 0.

    Args:
        results: :class:`SubroutineResult` objects or mappings with ``sub_diff`` and
            ``abl_diff`` (e.g. record rows). The criteria are recomputed from the two scores.

    Returns:
        The fraction in [0, 1]; NaN for no results.
    """
    flags = []
    for r in results:
        s, a = (r["sub_diff"], r["abl_diff"]) if isinstance(r, Mapping) else (r.sub_diff, r.abl_diff)
        flags.append(structural(s, a))
    return float(np.mean(flags)) if flags else float("nan")


def _score(model, masks, forward_fn, test_target: Data, test_other: Data) -> dict[str, float]:
    sub, abl = apply_mask(model, masks), apply_mask(model, masks, complement=True)
    return {
        "acc_sub_target": accuracy(sub, forward_fn, test_target),
        "acc_sub_other": accuracy(sub, forward_fn, test_other),
        "acc_abl_target": accuracy(abl, forward_fn, test_target),
        "acc_abl_other": accuracy(abl, forward_fn, test_other),
    }


__all__ = [
    "sub_diff", "abl_diff", "structural", "chance_level", "SubroutineResult",
    "subroutine_modularity", "fraction_structural",
]
