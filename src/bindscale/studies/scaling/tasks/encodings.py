"""Task-code encodings: how a task's constituents reach the student.

A task is a weighted set of active modules, written as the *weighted k-hot*
code ``z`` (shape ``(..., M)``: weight in [0.5, 1] for active modules — one of
:data:`WEIGHT_LEVELS` under the reference teacher — 0 otherwise). An encoding
maps ``z`` to the student's task input. The set follows
Redhardt, Schug, Akram 2025, "Scaling can lead to compositional generalization":

=================  ==========================================================
identity           ``z`` itself
orthogonal         ``Q z`` with a fixed random rotation ``Q``
tokens             K slots, each the one-hot of an active module (ascending
                   module index) times its weight; empty slots are zero
invertible         ``A2 · leaky_relu(A1 z + c)``: a fixed random invertible
                   nonlinear map (orthogonal ``A1``, ``A2``; leaky ReLU is a bijection)
interval_shuffle   each active weight's interval of [0.5, 1] is cut in
                   ``n_intervals`` pieces that are permuted (a bijective,
                   non-monotonic piecewise-linear map per module)
fewshot            no code: ``n_shots`` demonstrations ``(x, y)`` of the task
=================  ==========================================================

All encodings but ``fewshot`` are deterministic functions of ``z``; all random
choices come from the trial's ``encoding`` stream.
"""

from __future__ import annotations

import torch

from ..params import encoding_dim  # torch-free, beside the students' parameter counts

N_INTERVALS = 5
W_LOW, W_HIGH = 0.5, 1.0
#: Module weights of the reference hyperteacher (Redhardt, Schug, Akram 2025, task distribution "discrete").
WEIGHT_LEVELS = (0.5, 0.6, 0.7, 0.8, 0.9, 1.0)


class Encoder:
    """A fixed encoding of task codes. Build once per trial; call on batches.

    Args:
        name: one of :data:`bindscale.studies.scaling.config.ENCODINGS`.
        M, K: modules and largest number active.
        gen: the trial's ``encoding`` generator.
        io_dims: ``(input_dim, output_dim)`` of the teacher (for ``fewshot``).
        n_shots: demonstrations per task (``fewshot``).
    """

    def __init__(self, name: str, M: int, K: int, gen: torch.Generator, io_dims: tuple[int, int], n_shots: int):
        self.name, self.M, self.K, self.n_shots = name, M, K, n_shots
        dev = gen.device
        if name == "orthogonal":
            self.Q = _orthogonal(M, gen)
        elif name == "invertible":
            self.A1, self.A2 = _orthogonal(M, gen), _orthogonal(M, gen)
            self.c = 0.5 * torch.randn(M, generator=gen, device=dev)
        elif name == "interval_shuffle":
            self.perm = torch.stack([torch.randperm(N_INTERVALS, generator=gen, device=dev) for _ in range(M)])
        self.dim = encoding_dim(name, M, K, io_dims, n_shots)

    def to(self, device) -> "Encoder":
        for k, v in list(vars(self).items()):
            if isinstance(v, torch.Tensor):
                setattr(self, k, v.to(device))
        return self

    def __call__(self, z: torch.Tensor, demos: tuple[torch.Tensor, torch.Tensor] | None = None) -> torch.Tensor:
        """Encode codes ``z`` of shape ``(B, M)`` → ``(B, dim)``.

        ``demos`` = (x, y) of shapes ``(B, n_shots, in)``, ``(B, n_shots, out)`` is
        required by ``fewshot`` and ignored otherwise.
        """
        if self.name == "identity":
            return z
        if self.name == "orthogonal":
            return z @ self.Q.T
        if self.name == "invertible":
            return torch.nn.functional.leaky_relu(z @ self.A1.T + self.c, 0.2) @ self.A2.T
        if self.name == "tokens":
            return _tokens(z, self.K).flatten(1)
        if self.name == "interval_shuffle":
            return _interval_shuffle(z, self.perm)
        if self.name == "fewshot":
            if demos is None:
                raise ValueError("the fewshot encoding needs demonstrations")
            return torch.cat([demos[0], demos[1]], dim=-1).flatten(1)
        raise ValueError(f"unknown encoding {self.name!r}")


def _orthogonal(n: int, gen: torch.Generator) -> torch.Tensor:
    # QR of a Gaussian matrix with the sign fix gives a Haar-distributed rotation.
    q, r = torch.linalg.qr(torch.randn(n, n, generator=gen, device=gen.device))
    return q * torch.sign(torch.diagonal(r)).unsqueeze(0)


def _tokens(z: torch.Tensor, K: int) -> torch.Tensor:
    """``(B, M)`` → ``(B, K, M)``: slot j holds the j-th active module (ascending index)."""
    B, M = z.shape
    active = z > 0
    # Rank of each active module among the active ones: its slot.
    slot = torch.cumsum(active.long(), dim=1) - 1
    out = torch.zeros(B, K, M, dtype=z.dtype, device=z.device)
    b, m = active.nonzero(as_tuple=True)
    out[b, slot[b, m], m] = z[b, m]
    return out


def _interval_shuffle(z: torch.Tensor, perm: torch.Tensor) -> torch.Tensor:
    """Permute the ``N_INTERVALS`` pieces of [W_LOW, W_HIGH] per module; zeros stay zero.

    A weight on a piece boundary (every one of :data:`WEIGHT_LEVELS` is) counts as the
    start of its piece, up to float rounding, and ``W_HIGH`` itself stays ``W_HIGH``, as in
    the reference code (Redhardt, Schug, Akram 2025, "interval_shuffle": values equal to 1.0
    are not reshuffled). Otherwise 0.7 − ε would land at the end of piece 1 and could map
    onto the image of another level: the map would not be injective on the levels.
    """
    width = (W_HIGH - W_LOW) / N_INTERVALS
    u = (z - W_LOW) / width
    piece = (u + 1e-4).floor().clamp(0, N_INTERVALS - 1)
    frac = (u - piece).clamp(0, 1)
    new_piece = torch.gather(perm.unsqueeze(0).expand(z.shape[0], -1, -1), 2, piece.long().unsqueeze(-1)).squeeze(-1)
    out = W_LOW + (new_piece.to(z.dtype) + frac) * width
    out = torch.where(z >= W_HIGH - 1e-6, torch.full_like(z, W_HIGH), out)
    return torch.where(z > 0, out, torch.zeros_like(z))
