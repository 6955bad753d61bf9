"""Checks shared by the transformer studies' stacking tests: a trial's record is the same, up to float
rounding, trained alone, in a stack of one and in a stack of four (bindscale.train.stack)."""

from __future__ import annotations

import math

from bindscale.train import stack as seqstack

#: Loss curves: relative difference allowed (float32 reductions in another order).
CURVE_RTOL = 1e-5
#: Other floats (scores of a model whose weights differ from the reference by float rounding):
#: ``|a - b| <= RTOL * max(|a|, |b|) + ATOL``.
RTOL, ATOL = 1e-4, 1e-5
#: What legitimately differs between a trial alone and in a stack: wall-clock timings and rates.
TIMING_KEYS = ("timings", "steps_per_s")


def close(a, b, path: str = "", atol: float = ATOL) -> list[str]:
    """Paths where ``a`` and ``b`` differ: floats beyond RTOL/``atol`` (NaN equals NaN), anything else unequal."""
    if isinstance(a, float) or isinstance(b, float):
        if not isinstance(a, (int, float)) or not isinstance(b, (int, float)):
            return [f"{path}: {a!r} != {b!r}"]
        if math.isnan(a) and math.isnan(b):
            return []
        return [] if abs(a - b) <= RTOL * max(abs(a), abs(b)) + atol else [f"{path}: {a!r} != {b!r}"]
    if isinstance(a, dict) and isinstance(b, dict):
        if a.keys() != b.keys():
            return [f"{path}: keys {sorted(set(a) ^ set(b))}"]
        return [d for k in a for d in close(a[k], b[k], f"{path}.{k}", atol)]
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        if len(a) != len(b):
            return [f"{path}: lengths {len(a)} != {len(b)}"]
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in close(x, y, f"{path}[{i}]", atol)]
    if hasattr(a, "shape") and hasattr(b, "shape"):  # numpy arrays
        return close(a.tolist(), b.tolist(), path, atol)
    return [] if a == b else [f"{path}: {a!r} != {b!r}"]


def same_record(ref, got, loose: dict[str, float] | None = None) -> None:
    """Assert that two TrialResults are the same record up to float rounding (timings aside).

    ``loose``: metric -> absolute tolerance, for statistics that amplify rounding (e.g. a correlation of
    loss rises of 1e-4 whose float32 rounding is 1e-7: 1e-3 of the statistic); the caller says why.
    """
    assert ref.status == got.status and ref.diverged_step == got.diverged_step
    a, b = dict(ref.metrics), dict(got.metrics)
    for m in (a, b):
        for k in TIMING_KEYS:
            m.pop(k, None)
    ca, cb = a.pop("curve_loss"), b.pop("curve_loss")
    assert len(ca) == len(cb) and max(abs(x - y) / abs(x) for x, y in zip(ca, cb)) < CURVE_RTOL
    assert abs(a.pop("final_loss") - b.pop("final_loss")) < CURVE_RTOL * abs(ref.metrics["final_loss"])
    loose = loose or {}
    diffs = [d for k in a.keys() | b.keys() for d in close(a.get(k), b.get(k), k, loose.get(k, ATOL))]
    assert not diffs, diffs[:10]


def check_stack_of_one_and_four(module, trials: list, loose: dict[str, float] | None = None) -> list:
    """Train ``trials`` (four of one stack key) through the study's trainer ``module.run_group`` (one stack of
    four) and each as a stack of one (``module._prepare`` / ``module._result``), the first also alone
    (``module.run_trial``); assert the records agree (``loose``: see :func:`same_record`). Returns the stack of four's records."""
    assert len(trials) == 4 and len({module_key(module, t) for t in trials}) == 1
    four = module.run_group(trials, "cpu", None)
    # One stack: every member advances at the stack's rate.
    assert len({r.metrics["steps_per_s"] for r in four}) == 1
    for t, res in zip(trials, four):
        assert res.status == "ok"
        one = seqstack.run_stack([t], "cpu", None, False, prepare=module._prepare, finish=module._result)[0]
        same_record(one, res, loose)
    same_record(module.run_trial(trials[0]), four[0], loose)
    return four


def module_key(module, trial) -> tuple:
    """The study's stack key of ``trial`` (its ``plan.group_key``)."""
    import importlib

    return importlib.import_module(module.__name__.rsplit(".", 1)[0] + ".plan").group_key(trial)
