"""The per-trial training loop a researcher would write by hand: the baseline of benchmarks/training.py.

One trial at a time, ``nn.Linear`` layers, ``torch.optim.AdamW``, a fresh batch
sampled every step, ``clip_grad_norm_``, evaluation of held-out R² at the same
schedule as bindscale. It uses bindscale's task family so both sides train on
the same data distribution; it does not run probes (bindscale's side does, so
the comparison is conservative).
"""

from __future__ import annotations

import torch
from torch import nn

from bindscale.core import seeding
from bindscale.studies.scaling.config import TrialConfig
from bindscale.studies.scaling.metrics import r2_within_task
from bindscale.studies.scaling.tasks import HyperTeacher


class LoopMLP(nn.Module):
    def __init__(self, in_dim: int, width: int, depth: int, out_dim: int):
        super().__init__()
        layers, d = [], in_dim
        for _ in range(depth):
            layers += [nn.Linear(d, width), nn.ReLU()]
            d = width
        self.net = nn.Sequential(*layers, nn.Linear(d, out_dim))

    def forward(self, code, x):
        code = code.unsqueeze(1).expand(-1, x.shape[1], -1)
        return self.net(torch.cat([code, x], dim=-1))


class LoopHypernet(nn.Module):
    """Linear mixing of weight banks into a one-hidden-layer target net, written plainly."""

    def __init__(self, code_dim: int, x_dim: int, width: int, out_dim: int, n_banks: int):
        super().__init__()
        self.mix = nn.Linear(code_dim, n_banks)
        self.w1 = nn.Linear(n_banks, x_dim * width)
        self.b1 = nn.Linear(n_banks, width)
        self.w2 = nn.Linear(n_banks, width * out_dim)
        self.b2 = nn.Linear(n_banks, out_dim)
        self.dims = (x_dim, width, out_dim)

    def forward(self, code, x):
        i, h, o = self.dims
        a = self.mix(code)
        W1 = self.w1(a).view(-1, i, h)
        W2 = self.w2(a).view(-1, h, o)
        hid = torch.relu(torch.bmm(x, W1) + self.b1(a).unsqueeze(1))
        return torch.bmm(hid, W2) + self.b2(a).unsqueeze(1)


def train_loop(trial: TrialConfig) -> float:
    """Train one trial the plain way; returns its final held-out R²."""
    torch.manual_seed(trial.seed)
    task = HyperTeacher(trial.task, trial.seed)
    m, tr, t = trial.model, trial.train, trial.task
    if m.kind == "mlp":
        model = LoopMLP(task.code_dim + t.input_dim, m.width, m.depth, t.output_dim)
    else:
        model = LoopHypernet(task.code_dim, t.input_dim, m.width, t.output_dim, m.n_banks or t.M)
    opt = torch.optim.AdamW(model.parameters(), lr=tr.lr, weight_decay=tr.weight_decay)
    gen = seeding.generator(trial.seed, "train")
    held = task.sample(tr.eval_tasks, seeding.generator(trial.seed, "heldout"), "heldout", cycle=True)
    every = max(1, tr.steps // tr.n_evals)
    r2 = float("nan")
    for step in range(1, tr.steps + 1):
        batch = task.sample(tr.batch_tasks, gen)
        loss = nn.functional.mse_loss(model(batch.code, batch.x), batch.y)
        opt.zero_grad()
        loss.backward()
        if tr.grad_clip:
            nn.utils.clip_grad_norm_(model.parameters(), tr.grad_clip)
        opt.step()
        if step % every == 0 or step == tr.steps:
            with torch.no_grad():
                r2 = float(r2_within_task(held.y, model(held.code, held.x)))
    return r2
