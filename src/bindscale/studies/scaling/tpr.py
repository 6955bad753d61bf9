"""Tensor-product binding student: the second explicit-binding mechanism beside the hypernetwork.

The hyperteacher's task is a weighted set of modules and its input ``x``; the teacher's hidden layer is
``ReLU(Σ_m c_m W_m x + b)``, a sum over the active modules of each module applied to ``x``. A tensor-product
representation (Smolensky 1990, "Tensor product variable binding and the representation of symbolic
structures in connectionist systems") binds *fillers* to *roles* by the outer product and superposes the
bindings by addition. Here the fillers are learned module embeddings ``f_m`` superposed by the task code
(``f = Σ_m z_m f_m + f_0``: one row of ``F`` per code feature, so for the identity code exactly one
embedding per module), and the role is a learned linear map of the input, ``r = W_r x + r_0``; the task is
bound to the input as ``f ⊗ r = Σ_m z_m (f_m ⊗ r) + f_0 ⊗ r``, each active module's embedding bound to the
input's role, superposed. As in the TP-Transformer (Schlag, Smolensky, Fernandez, Jojic, Schmidhuber & Gao
2019, "Enhancing the Transformer with Explicit Relational Encoding for Math Problem Solving") the tensor
product is compressed to its diagonal, the Hadamard product ``u = f ⊙ r``, and an MLP reads the bound
vector out.

Why this mechanism and why compressed. The full product ``f ⊗ r`` with a linear role ``r`` read by a
linear layer is a bilinear map of (code, x), ``Σ_a f_a U_a x``: exactly the linear hypernetwork's
generated layer (:mod:`.hypernet`: ``W(code) = base + Σ_l α_l bank_l`` with ``α`` affine in the code), so
it would test the same model twice. The compressed product binds in *activation* space (each of the
``width`` units multiplies one filler and one role coordinate: a rank-one bilinear form per unit, which
the next layer sums), not in weight space as the hypernetwork does, with no module bank and no per-task
weights. It can still represent the reference teacher exactly under the identity code (``width = M·d``, ``d``
the teacher's hidden width: a block of ``d`` units per module, ``f`` equal to ``z_m`` on module ``m``'s block,
``r`` holding ``W_m x + b_m`` there, ``U_1`` summing the blocks scaled by the teacher's ``1/√K``).
The project's SCAN study tests the same Hadamard binding inside attention (``bindscale.models.binding``),
so the mechanism is tested on both task families. (An attention-based module selector was the other
candidate: it would again generate weights from a module bank, the hypernetwork's own structure, with only
the mixing changed.)

Equations (one trial; ``E`` code features, ``I`` inputs, ``O`` outputs, ``w`` = ``width``, ``D`` = ``depth``)::

    f   = code F + f_0                  F (E, w), f_0 (w)         filler: the task's module embeddings
    r   = x W_r + r_0                   W_r (I, w), r_0 (w)        role of each input
    u   = f ⊙ r                         the compressed tensor product (binding)
    h_1 = act(u U_1 + c_1)              U_1 (w, w), c_1 (w)
    h_i = act(h_{i-1} U_i + c_i)        i = 2..D
    y   = h_D R + c_R                   R (w, O), c_R (O)

Parameters: ``(E + 1)·w + (I + 1)·w + D·(w² + w) + (w + 1)·O`` (``n_params``; E=8, I=O=16, D=1:
``w² + 43 w + 16``). ``depth`` counts the hidden layers after the binding, as the hypernetwork's counts its
target net's. ``n_banks`` is not used (the filler table has one row per code feature).

Initialisation (``init: auto``): the plain MLP's, LeCun normal weights and zero biases (the reference code's
flax default), so that a difference from the MLP is the binding's. Measured (2000 steps, the default study's
recipe, hold-out 0.25, seeds 0 and 1, held-out R² at widths 32 / 48): LeCun 0.831, 0.834 / 0.953, 0.950;
PyTorch's uniform 0.838, 0.831 / 0.953, 0.944; a filler bias starting at 1 (as the SCAN study's TP-attention
role bias, a student that starts as a plain network of ``x``) was slower under both, 0.78-0.79 / 0.89-0.91.

Hook points (:mod:`bindscale.models.hooks`; B tasks × S inputs, T trials)::

    hook_input      (T, B, E)          task code
    hook_filler     (T, B, w)          f
    hook_role       (T, B, S, w)       r
    hook_bound      (T, B, S, w)       u = f ⊙ r
    hook_hidden.i   (T, B, S, w)       hidden layer i after the binding (post-activation), i = 0..D-1
    hook_output     (T, B, S, O)       readout (the model's output)

:meth:`StackedTPR.member` gives one trial as a plain :class:`TPR` (``code`` ``(B, E)``, ``x`` ``(B, S, I)``)
with the same hook points without ``T``.
"""

from __future__ import annotations

import torch
from torch import nn

from bindscale.models.base import (
    ACTIVATIONS,
    Dense,
    StackedModel,
    resolve_init,
    stacked_init,
)
from bindscale.models.hooks import HookPoint

from .config import ModelConfig
from .params import tpr_params  # noqa: F401 - the formula, torch-free (the verdicts check records with it)


class StackedTPR(StackedModel):
    """``len(gens)`` TPR students stacked over trials: ``forward(code (T, B, E), x (T, B, S, I)) -> (T, B, S, O)``."""

    def __init__(self, cfg: ModelConfig, code_dim: int, x_dim: int, out_dim: int, n_modules: int, gens):
        super().__init__()
        self.n_trials, self.act = len(gens), ACTIVATIONS[cfg.activation]
        self.activation = cfg.activation
        init = resolve_init(cfg)
        w = cfg.width
        self.code_dim, self.width, self.out_dim = code_dim, w, out_dim
        self.filler_W = stacked_init(init, (code_dim, w), code_dim, gens)
        self.filler_b = stacked_init(init, (1, w), code_dim, gens, bias=True)
        self.role_W = stacked_init(init, (x_dim, w), x_dim, gens)
        self.role_b = stacked_init(init, (1, w), x_dim, gens, bias=True)
        self.dims = [w] * (cfg.depth + 1) + [out_dim]
        self.weights, self.biases = nn.ParameterList(), nn.ParameterList()
        for fan_in, fan_out in zip(self.dims[:-1], self.dims[1:]):
            self.weights.append(stacked_init(init, (fan_in, fan_out), fan_in, gens))
            self.biases.append(stacked_init(init, (1, fan_out), fan_in, gens, bias=True))
        _add_hook_points(self, cfg.depth)

    def activation_shapes(self, B: int, S: int) -> dict[str, tuple[int, ...]]:
        T, w = self.n_trials, self.width
        shapes = {"hook_input": (T, B, self.code_dim), "hook_filler": (T, B, w), "hook_role": (T, B, S, w),
                  "hook_bound": (T, B, S, w)}
        shapes |= {f"hook_hidden.{i}": (T, B, S, d) for i, d in enumerate(self.dims[1:-1])}
        shapes["hook_output"] = (T, B, S, self.out_dim)
        return shapes

    def forward(self, code: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        T, B, S, _ = x.shape
        hp_input, hp_filler, hp_role, hp_bound, hp_hidden, hp_output = self._points
        code = hp_input(code)
        f = hp_filler(torch.baddbmm(self.filler_b, code, self.filler_W))  # (T, B, w)
        r = hp_role(torch.baddbmm(self.role_b, x.reshape(T, B * S, -1), self.role_W).view(T, B, S, -1))
        h = hp_bound(r * f.unsqueeze(2)).reshape(T, B * S, -1)  # the compressed tensor product
        h = self._tower(h, (T, B, S), hp_hidden)
        return hp_output(h.view(T, B, S, -1))

    def member(self, i: int) -> TPR:
        """Trial ``i`` as a plain :class:`TPR` (a copy of its weights)."""
        layers = self._member_layers(i)
        return TPR(Dense(self.filler_W[i], self.filler_b[i]), Dense(self.role_W[i], self.role_b[i]),
                   layers[:-1], layers[-1])


class TPR(nn.Module):
    """One trial's TPR student (:meth:`StackedTPR.member`): ``forward(code (B, E), x (B, S, I)) -> (B, S, O)``.

    Submodules, each named after the activation point it outputs::

        input      nn.Identity  (B, E)          task code
        filler     Dense        (B, w)          f = code F + f_0
        role       Dense        (B, S, w)       r = x W_r + r_0
        hidden.i   Dense        (B, S, w)       hidden layer i after the binding (post-activation)
        output     Dense        (B, S, O)       readout

    Hook points, as :class:`StackedTPR`'s without ``T``.
    """

    def __init__(self, filler: Dense, role: Dense, hidden: list[Dense], output: Dense):
        super().__init__()
        self.input = nn.Identity()
        self.filler, self.role = filler, role
        self.hidden = nn.ModuleList(hidden)
        self.output = output
        _add_hook_points(self, len(hidden))

    def n_params(self) -> int:
        return sum(p.numel() for p in self.parameters())

    def forward(self, code: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        code = self.hook_input(self.input(code))
        f = self.hook_filler(self.filler(code))  # (B, w)
        r = self.hook_role(self.role(x))  # (B, S, w)
        h = self.hook_bound(r * f.unsqueeze(1))
        for layer, hp in zip(self.hidden, self.hook_hidden):
            h = hp(layer(h))
        return self.hook_output(self.output(h))


def _add_hook_points(model: nn.Module, depth: int) -> None:
    """The hook points of a TPR student with ``depth`` hidden layers after the binding (stacked or one trial)."""
    model.hook_input, model.hook_filler, model.hook_role, model.hook_bound = (HookPoint() for _ in range(4))
    model.hook_hidden = nn.ModuleList(HookPoint() for _ in range(depth))
    model.hook_output = HookPoint()
    # Plain (unregistered) references for the training step (as the hypernetwork's: attribute lookups of
    # registered submodules cost more than the idle points).
    model._points = (model.hook_input, model.hook_filler, model.hook_role, model.hook_bound,
                     tuple(model.hook_hidden), model.hook_output)
