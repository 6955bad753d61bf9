"""The hyperteacher task family (Schug et al. ICLR 2024, "Discovering
modular solutions that generalize compositionally"; as used by Redhardt, Schug,
Akram 2025, "Scaling can lead to compositional generalization").

``M`` teacher modules ``(W_m, b_m)`` map ``input_dim → hidden_dim``; a task
activates ``k ≤ K`` of them with weights ``z_m`` and uses their weighted sum,
scaled by ``c``, followed by a readout shared by all tasks::

    W_task = c Σ_m z_m W_m,   b_task = c Σ_m z_m b_m
    y = R · ReLU(W_task x + b_task) + r,      x ~ U[-1, 1]^input_dim

``z`` (the weighted k-hot code, shape ``(M,)``) holds the task's constituents:
what probes decode. Every task is seen through ``samples_per_task`` inputs.
Two definitions (``TaskConfig.teacher``):

``reference`` (default): the reference code of Redhardt et al. 2025
    (``compscale/data/teacher.py``, task distribution "discrete"): weights drawn
    uniformly from {0.5, 0.6, 0.7, 0.8, 0.9, 1.0}; ``c = 1/√K``, one constant for
    every task, so the teacher's weights are *linear* in ``z``; ``W_m`` and ``R``
    truncated-normal with variance √3/fan_in (flax ``variance_scaling(√3,
    "fan_in", "truncated_normal")``), ``b_m ~ U[0, 0.5)``, no readout bias (``r = 0``).
``per_task_scale``: bindscale's original teacher: weights U[0.5, 1]; ``c = 1/√k``
    with ``k`` the task's own number of active modules (not linear in ``z``);
    ``W_m ~ N(0, 3/input_dim)``, ``b_m ~ N(0, 0.25)``, ``R ~ N(0, 2/hidden_dim)``,
    ``r ~ N(0, 0.01)``.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from bindscale.kit import generator, rng
from bindscale.models.base import truncated_normal

from ..config import TaskConfig
from .encodings import W_HIGH, W_LOW, WEIGHT_LEVELS, Encoder
from .splits import Split, make_split

POOLS = ("train", "heldout")


@dataclass
class Batch:
    """A batch of tasks.

    Attributes:
        code: ``(B, E)`` encoded task input (what the student sees about the task).
        z: ``(B, M)`` weighted k-hot constituents (probe targets).
        x: ``(B, S, input_dim)`` inputs.
        y: ``(B, S, output_dim)`` teacher outputs.
        combo: ``(B,)`` index of each task's combination in its pool.
    """

    code: torch.Tensor
    z: torch.Tensor
    x: torch.Tensor
    y: torch.Tensor
    combo: torch.Tensor


class HyperTeacher:
    """One seeded instance of the family: teacher, split and encoding of one trial.

    Args:
        cfg: task configuration.
        seed: the trial's root seed; the teacher, split and encoding use their own streams.
        device: where sampled tensors live.

    Raises:
        SplitError: the split cannot be made (see :func:`make_split`).
    """

    def __init__(self, cfg: TaskConfig, seed: int, device: str | torch.device = "cpu"):
        self.cfg, self.device = cfg, torch.device(device)
        self.split: Split = make_split(cfg.M, cfg.K, cfg.split, cfg.holdout, rng(seed, "split"),
                                       withheld_pairs=cfg.withheld_pairs)
        g = generator(seed, "teacher")
        M, H, I, O = cfg.M, cfg.hidden_dim, cfg.input_dim, cfg.output_dim
        if cfg.teacher == "reference":
            s = 3.0 ** 0.5  # the reference's variance scale
            W = truncated_normal((M, H, I), s / I, g)
            b = 0.5 * torch.rand(M, H, generator=g)
            R = truncated_normal((O, H), s / H, g)
            r = torch.zeros(O)
        else:
            # Scales keep pre-activations near unit variance for x ~ U[-1,1] (variance 1/3).
            W = torch.randn(M, H, I, generator=g) * (3.0 / I) ** 0.5
            b = torch.randn(M, H, generator=g) * 0.5
            R = torch.randn(O, H, generator=g) * (2.0 / H) ** 0.5
            r = torch.randn(O, generator=g) * 0.1
        self.W, self.b, self.R, self.r = (t.to(self.device) for t in (W, b, R, r))
        self.levels = torch.tensor(WEIGHT_LEVELS, device=self.device)
        self.encoder = Encoder(cfg.encoding, M, cfg.K, generator(seed, "encoding"), (I, O), cfg.n_shots).to(
            self.device
        )
        self._masks = {pool: self._mask(getattr(self.split, pool)) for pool in POOLS}

    def _mask(self, combos: list[tuple[int, ...]]) -> torch.Tensor:
        """``(len(combos), M)``: 1 at each combination's modules, else 0 (one indexed write for all)."""
        m = torch.zeros(max(len(combos), 1), self.cfg.M)
        rows = [i for i, c in enumerate(combos) for _ in c]
        m[rows, [j for c in combos for j in c]] = 1.0
        return m[: len(combos)].to(self.device)

    @property
    def code_dim(self) -> int:
        """Width of the encoded task input."""
        return self.encoder.dim

    def n_combos(self, pool: str) -> int:
        return self._masks[pool].shape[0]

    def teacher(self, z: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """Teacher outputs for codes ``z`` ``(B, M)`` and inputs ``x`` ``(B, S, I)`` → ``(B, S, O)``."""
        if self.cfg.teacher == "reference":
            scale = z / self.cfg.K ** 0.5
        else:
            k = (z > 0).sum(-1, keepdim=True).clamp(min=1).to(z.dtype)
            scale = z / k.sqrt()
        # Mixed weights laid out (B, I, H) so the batched matmul needs no transpose,
        # and the readout as one matmul over all rows (sampling runs every chunk of
        # training steps: its cost is part of training's). Biases are written out
        # row by row and accumulated into in place: the same arithmetic as
        # baddbmm/addmm with a broadcast bias, without their slow broadcast copies
        # (~1 ms each per 3072 tasks of 16 inputs, a third of the sampling time).
        B, S = x.shape[:2]
        W_t = (scale @ self.W.transpose(1, 2).reshape(self.cfg.M, -1)).view(-1, *self.W.shape[2:0:-1])
        h = (scale @ self.b).repeat_interleave(S, dim=0).view(B, S, -1).baddbmm_(x, W_t).relu_()
        # A fresh buffer, never self.r.expand(...).contiguous(): for B·S = 1 that view counts as
        # contiguous, is returned as is, and addmm_ would write into the readout bias.
        out = h.new_empty(B * S, self.R.shape[0]).copy_(self.r.expand(B * S, -1))
        return out.addmm_(h.flatten(0, 1), self.R.T).view(B, S, -1)

    def sample(
        self,
        n_tasks: int,
        gen: torch.Generator,
        pool: str = "train",
        samples: int | None = None,
        cycle: bool = False,
    ) -> Batch:
        """Draw ``n_tasks`` tasks from ``pool`` ("train" or "heldout") with ``gen``.

        Args:
            samples: inputs per task (default ``samples_per_task``).
            cycle: take combinations in order, cycling (equal coverage: evaluation sets);
                otherwise uniformly at random (training).

        Raises:
            ValueError: the pool is empty or unknown.
        """
        if pool not in POOLS:
            raise ValueError(f"unknown pool {pool!r}; allowed: {POOLS}")
        mask = self._masks[pool]
        C = mask.shape[0]
        if C == 0:
            raise ValueError(f"pool {pool!r} has no combinations")
        dev, S = self.device, samples or self.cfg.samples_per_task
        if cycle:
            combo = torch.arange(n_tasks, device=dev) % C
        else:
            combo = torch.randint(C, (n_tasks,), generator=gen, device=dev)
        w = self.weights(n_tasks, gen)
        z = mask[combo] * w
        x = torch.empty(n_tasks, S, self.cfg.input_dim, device=dev).uniform_(-1, 1, generator=gen)
        y = self.teacher(z, x)
        demos = None
        if self.cfg.encoding == "fewshot":
            xd = 2 * torch.rand(n_tasks, self.cfg.n_shots, self.cfg.input_dim, generator=gen, device=dev) - 1
            demos = (xd, self.teacher(z, xd))
        return Batch(code=self.encoder(z, demos), z=z, x=x, y=y, combo=combo)

    def weights(self, n_tasks: int, gen: torch.Generator) -> torch.Tensor:
        """Module weights ``(n_tasks, M)`` for every module (masked to the active ones by the caller):
        uniform over :data:`WEIGHT_LEVELS` (``reference``) or U[W_LOW, W_HIGH] (``per_task_scale``)."""
        shape = (n_tasks, self.cfg.M)
        if self.cfg.teacher == "reference":
            return self.levels[torch.randint(len(WEIGHT_LEVELS), shape, generator=gen, device=self.device)]
        return W_LOW + (W_HIGH - W_LOW) * torch.rand(shape, generator=gen, device=self.device)

    def inhull_mask(self, combo: torch.Tensor) -> torch.Tensor:
        """For held-out combination indices ``(B,)``: True where the combination is in-hull."""
        lab = torch.tensor(self.split.inhull, dtype=torch.bool, device=combo.device)
        return lab[combo]
