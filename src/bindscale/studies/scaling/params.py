"""Parameter counts of the scaling study's students from their config alone, without building them.

Torch-free, so that the verdict rules can check a record's ``n_params`` against its config
(:func:`bindscale.kit.param_count_mismatch`): the binding claims compare parameter counts, and a count recorded
wrong would move their ratio. ``E`` is the width of the task input (:func:`encoding_dim`), ``I`` and ``O`` the
teacher's input and output widths, ``w`` the student's ``width``, ``D`` its ``depth``:

- ``mlp`` (:class:`bindscale.models.mlp.StackedMLP`): dense layers ``E + I → w → … → w → O`` (``D`` hidden
  layers), each with a bias: ``Σ (fan_in + 1) · fan_out``.
- ``hypernet`` (:mod:`.hypernet`): the mixing layer ``(E + 1) · L`` (``L`` = ``n_banks``, default ``M``), and per
  target-net layer ``I → w → … → w → O`` a base weight and bias plus ``L`` banks of each:
  ``(1 + L) · (fan_in + 1) · fan_out``.
- ``tpr`` (:mod:`.tpr`): ``(E + 1)·w + (I + 1)·w + D·(w² + w) + (w + 1)·O``.

``tests/studies/scaling/test_students.py`` checks each formula against the built model's ``n_params()``.
"""

from __future__ import annotations

from itertools import pairwise

#: The student kinds counted here (``model.kind``).
KINDS = ("mlp", "hypernet", "tpr")


def encoding_dim(name: str, M: int, K: int, io_dims: tuple[int, int], n_shots: int) -> int:
    """Width of the task input that encoding ``name`` produces (arguments as for
    :class:`bindscale.studies.scaling.tasks.encodings.Encoder`)."""
    return {"tokens": K * M, "fewshot": n_shots * (io_dims[0] + io_dims[1])}.get(name, M)


def _dense(dims: list[int]) -> int:
    """Weights and biases of a chain of dense layers through ``dims``."""
    return sum((a + 1) * b for a, b in pairwise(dims))


def tpr_params(code_dim: int, x_dim: int, out_dim: int, width: int, depth: int) -> int:
    """Trainable parameters of one trial's TPR student (:mod:`.tpr`'s formula)."""
    w = width
    return (code_dim + 1) * w + (x_dim + 1) * w + depth * (w * w + w) + (w + 1) * out_dim


def student_params(kind: str, code_dim: int, x_dim: int, out_dim: int, n_modules: int, width: int, depth: int,
                   n_banks: int | None = None) -> int:
    """Trainable parameters of one trial's student of ``kind`` (the module docstring's formulas; arguments as
    :func:`bindscale.studies.scaling.students.build_model` takes them, with the model config's ``width``,
    ``depth`` and ``n_banks``).

    Raises:
        ValueError: an unknown kind, or a non-positive width or depth.
    """
    if width < 1 or depth < 1:
        raise ValueError(f"width and depth must be positive; got {width}, {depth}")
    if kind == "mlp":
        return _dense([code_dim + x_dim] + [width] * depth + [out_dim])
    if kind == "hypernet":
        banks = n_banks or n_modules
        return (code_dim + 1) * banks + (1 + banks) * _dense([x_dim] + [width] * depth + [out_dim])
    if kind == "tpr":
        return tpr_params(code_dim, x_dim, out_dim, width, depth)
    raise ValueError(f"unknown student kind {kind!r}; known: {', '.join(KINDS)}")
