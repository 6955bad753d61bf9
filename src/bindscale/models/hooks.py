"""Hook points: named activations that can be read (cached) or replaced (patched).

Every model of :mod:`bindscale.models` routes each named activation through a
:class:`HookPoint`, an identity submodule. Its name is its path in
``model.named_modules()`` (``hook_hidden.0``, ``blocks.1.attn.hook_z`` …); each
model's docstring lists its points with their shapes. One mechanism serves both
uses: a hook is a function ``fn(tensor, hook) -> tensor | None`` attached to a
point for the duration of a ``with`` block; returning a tensor replaces the
activation downstream (patching, ablation), returning ``None`` leaves it as is
(reading). :func:`run_with_cache` is :func:`run_with_hooks` with hooks that
store what they see.

    out, cache = run_with_cache(model, tokens, names=["blocks.0.hook_resid_pre"])
    cache["blocks.0.hook_resid_pre"]            # (B, L, d_model), detached

    def zero_head_2(z, hook):                    # z: (B, H, L, d_head)
        z = z.clone(); z[:, 2] = 0; return z
    out = run_with_hooks(model, tokens, hooks={"blocks.1.attn.hook_z": zero_head_2})

A point with no hook attached costs one attribute test per call (its ``__call__``
returns the input untouched, without ``nn.Module``'s call machinery), so the
training step pays nothing for the points.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import torch
from torch import nn

#: A hook: called with the activation and the :class:`HookPoint`; a returned tensor replaces the activation.
HookFn = Callable[[torch.Tensor, "HookPoint"], "torch.Tensor | None"]


class UnknownHookPoint(KeyError):
    """A hook name the model does not have; the message lists the ones it has."""

    def __str__(self) -> str:  # KeyError would quote the whole message
        return str(self.args[0]) if self.args else ""


class HookPoint(nn.Module):
    """An identity module marking one named activation; applies the hooks attached to it, in order.

    ``name`` is set to the point's path in the model when hooks are attached through
    :func:`hooks`, :func:`run_with_hooks` or :func:`run_with_cache` (empty before).
    """

    def __init__(self) -> None:
        super().__init__()
        self.name = ""
        self._fns: list[HookFn] = []

    @property
    def has_hooks(self) -> bool:
        """Whether any hook is attached (a model may skip work that only a hook would read)."""
        return bool(self._fns)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for fn in tuple(self._fns):
            out = fn(x, self)
            if out is not None:
                x = out
        return x

    # Bypass nn.Module.__call__ (its global-hook checks cost more than the identity itself).
    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return self.forward(x) if self._fns else x

    def extra_repr(self) -> str:
        return f"name={self.name!r}" if self.name else ""


def hook_points(model: nn.Module) -> dict[str, HookPoint]:
    """Name → :class:`HookPoint` of every point of ``model``, in registration order."""
    return {n: m for n, m in model.named_modules() if isinstance(m, HookPoint)}


def hook_names(model: nn.Module) -> list[str]:
    """The names of every hook point of ``model``, in registration order (the forward order for the MLPs and
    the transformer; the hypernetwork registers its weight, bias and hidden points list by list)."""
    return list(hook_points(model))


def _resolve(model: nn.Module, names: Sequence[str]) -> dict[str, HookPoint]:
    points = hook_points(model)
    missing = [n for n in names if n not in points]
    if missing:
        raise UnknownHookPoint(f"no hook point named {', '.join(map(repr, missing))} in {type(model).__name__}; "
                               f"its hook points: {', '.join(points) or 'none'}")
    for n in names:
        points[n].name = n
    return {n: points[n] for n in names}


@contextmanager
def hooks(model: nn.Module, fns: Mapping[str, HookFn | Sequence[HookFn]], *, prepend: bool = False
          ) -> Iterator[dict[str, HookPoint]]:
    """Attach ``fns`` (name → hook or list of hooks) for the duration of the ``with`` block.

    Hooks on one point run in attachment order; ``prepend=True`` puts these before the ones
    already attached (a model's own ablation runs before a caller's cache reads it). They are
    removed on exit, also when the block raises.

    Yields:
        Name → the :class:`HookPoint` each name resolved to.

    Raises:
        UnknownHookPoint (a ``KeyError``): a name that is not a hook point of ``model``; the
            message lists those it has. Nothing is attached then.
    """
    points = _resolve(model, list(fns))
    attached: list[tuple[HookPoint, HookFn]] = []
    try:
        for name, f in fns.items():
            for fn in ([f] if callable(f) else list(f)):
                hp = points[name]
                if prepend:
                    hp._fns.insert(len([a for a in attached if a[0] is hp]), fn)
                else:
                    hp._fns.append(fn)
                attached.append((hp, fn))
        yield points
    finally:
        for hp, fn in attached:
            for j, g in enumerate(hp._fns):
                if g is fn:  # identity, not ==: the same function may sit on several points
                    del hp._fns[j]
                    break


def run_with_hooks(model: nn.Module, *inputs: Any, hooks: Mapping[str, HookFn | Sequence[HookFn]] | None = None,
                   **kwargs: Any) -> Any:
    """``model(*inputs, **kwargs)`` with ``hooks`` (name → ``fn(tensor, hook) -> tensor | None``) attached.

    A hook that returns a tensor replaces the activation for the rest of the forward pass
    (patching, ablation; it must keep the shape the model expects); ``None`` keeps it.
    Gradients flow as the model's own (wrap in ``torch.no_grad()`` to skip them).

    Raises:
        UnknownHookPoint (a ``KeyError``): an unknown name (the message lists the model's points).
    """
    with _hooks_cm(model, hooks or {}):
        return model(*inputs, **kwargs)


_hooks_cm = hooks  # run_with_hooks's ``hooks`` argument shadows the context manager's name


class ActivationCache(Mapping):
    """Hook name → the activation tensor seen there in one forward pass (a read-only mapping),
    in the order the pass reached the points.

    Shapes are those documented by the model (``activation_shapes`` of bindscale's models);
    stacked models carry their leading trial dimension ``T``. A point reached more than once
    in the pass keeps its last value.
    """

    def __init__(self, store: dict[str, torch.Tensor]):
        self._store = store

    def __getitem__(self, name: str) -> torch.Tensor:
        try:
            return self._store[name]
        except KeyError:
            raise UnknownHookPoint(f"no activation {name!r} in this cache; it holds: "
                                   f"{', '.join(self._store) or 'nothing'}") from None

    def __iter__(self) -> Iterator[str]:
        return iter(self._store)

    def __len__(self) -> int:
        return len(self._store)

    def __repr__(self) -> str:
        return "ActivationCache(" + ", ".join(f"{k}: {tuple(v.shape)}" for k, v in self._store.items()) + ")"


def run_with_cache(model: nn.Module, *inputs: Any, names: Sequence[str] | None = None,
                   hooks: Mapping[str, HookFn | Sequence[HookFn]] | None = None, detach: bool = True,
                   **kwargs: Any) -> tuple[Any, ActivationCache]:
    """Run ``model(*inputs, **kwargs)`` and keep the activations at the hook points ``names``.

    The cache is a hook that stores (attached after ``hooks``, so it sees patched values).

    Args:
        names: the points to keep (``None``: every point of the model). Only these are stored.
        hooks: patching hooks applied in the same pass, as in :func:`run_with_hooks`.
        detach: store detached tensors (default); ``False`` keeps them in the autograd graph.

    Returns:
        ``(output, cache)``; ``cache[name]`` has the shape the model documents for the point.
        A point the pass never reached (e.g. a layer skipped) has no entry.

    Raises:
        UnknownHookPoint (a ``KeyError``): an unknown name in ``names`` or ``hooks``.
    """
    wanted = hook_names(model) if names is None else list(dict.fromkeys(names))
    store: dict[str, torch.Tensor] = {}

    def keep(name: str) -> HookFn:
        def fn(x: torch.Tensor, _hook: HookPoint) -> None:
            store[name] = x.detach() if detach else x
        return fn

    fns: dict[str, list[HookFn]] = {}
    for name, f in (hooks or {}).items():
        fns.setdefault(name, []).extend([f] if callable(f) else list(f))
    for name in wanted:
        fns.setdefault(name, []).append(keep(name))
    with _hooks_cm(model, fns):
        out = model(*inputs, **kwargs)
    return out, ActivationCache(store)  # in the order the pass reached the points


__all__ = ["HookPoint", "HookFn", "ActivationCache", "UnknownHookPoint", "hook_points", "hook_names", "hooks",
           "run_with_hooks", "run_with_cache"]
