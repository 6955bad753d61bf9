"""Scoring answers under teacher forcing, per-head mean-ablation importance, and head-map similarity.

Head reuse after Cai et al. 2025, "Extrapolation by Association: Length Generalization Transfer
in Transformers" (arXiv 2506.09251): a head matters for a task when replacing its output by its
mean over a reference batch hurts the task (mean ablation: Wang et al. 2022, "Interpretability in
the Wild", §3; it keeps the head's average contribution and removes only what depends on the input).
Two tasks reuse heads when their importance maps agree: Pearson correlation of the maps, and the
Jaccard index (Jaccard 1912, "The distribution of the flora in the alpine zone") of their top-k heads.
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F
from scipy import stats as sps

from bindscale.models.hooks import HookFn, run_with_cache, run_with_hooks
from bindscale.models.transformer import Transformer

from .tasks import PAD_ID


@torch.inference_mode()
def answer_scores(model: Transformer, tokens: torch.Tensor, mask: torch.Tensor, *, batch_size: int = 256,
                  hooks: dict[str, HookFn] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Exact match and loss of each sequence's answer under teacher forcing.

    Exact match here equals exact match of greedy decoding: greedy decoding reproduces the answer
    iff every teacher-forced next-token argmax on the answer is right (tests check it against
    :func:`bindscale.train.loop.greedy_predictions`), and it takes one forward pass.

    Args:
        model: the transformer (eval mode is set and restored).
        tokens: ``(N, L)`` ids, right-padded with :data:`PAD_ID`.
        mask: ``(N, L)`` bool; ``[n, t]`` True makes token ``t + 1`` an answer token.
        hooks: hook name → hook attached to every forward pass (:func:`run_with_hooks`), e.g. a
            head ablation from :meth:`Transformer.ablation_hooks`.

    Returns:
        ``correct`` ``(N,)`` bool and ``loss`` ``(N,)`` mean cross-entropy per answer token (nats).

    Raises:
        ValueError: shapes differ, or a sequence has no answer token.
        KeyError: a hook name that is not a hook point of the model.
    """
    if tokens.shape != mask.shape or tokens.dim() != 2:
        raise ValueError(f"tokens and mask must both be (N, L); got {tuple(tokens.shape)} and {tuple(mask.shape)}")
    if not bool(mask[:, :-1].any(dim=1).all()):
        raise ValueError("every sequence needs at least one answer token in mask[:, :-1]")
    was = model.training
    model.eval()
    device = next(model.parameters()).device
    correct, loss = [], []
    try:
        for s in range(0, tokens.shape[0], batch_size):
            tok, m = tokens[s:s + batch_size].to(device), mask[s:s + batch_size, :-1].to(device)
            L = int(torch.where(m.any(dim=0))[0].max()) + 2  # up to the last target
            tok, m = tok[:, :L], m[:, :L - 1]
            logits = run_with_hooks(model, tok[:, :-1], hooks=hooks)  # (B, L-1, V)
            target = tok[:, 1:]
            ce = F.cross_entropy(logits.transpose(1, 2), target, reduction="none")  # (B, L-1)
            right = (logits.argmax(-1) == target) | ~m
            correct.append(right.all(dim=1).cpu())
            loss.append(((ce * m).sum(1) / m.sum(1)).cpu())
    finally:
        model.train(was)
    return torch.cat(correct).numpy(), torch.cat(loss).double().numpy()


@torch.inference_mode()
def head_means(model: Transformer, tokens: torch.Tensor) -> dict[int, torch.Tensor]:
    """Each head's mean output over a reference batch: layer → ``(H, d_head)``.

    The mean of hook point ``blocks.{i}.attn.hook_z`` over every sequence and every
    non-padding position of ``tokens`` ``(N, L)`` (pad positions are excluded).

    Raises:
        ValueError: ``tokens`` holds no non-padding position.
    """
    valid = tokens != PAD_ID  # (N, L)
    if not bool(valid.any()):
        raise ValueError("the reference batch has no token")
    was = model.training
    model.eval()
    device = next(model.parameters()).device
    n = model.n_layers
    # The patterns are hooked too (not read): attention then runs explicitly in every layer, the
    # computation these means were fixed with (the fused kernel differs in float rounding).
    names = [f"blocks.{i}.attn.hook_{p}" for i in range(n) for p in ("pattern", "z")]
    try:
        _, cache = run_with_cache(model, tokens.to(device), names=names)
    finally:
        model.train(was)
    w = valid.to(device)[:, None, :, None].float()  # (N, 1, L, 1)
    return {i: (cache[f"blocks.{i}.attn.hook_z"] * w).sum(dim=(0, 2)) / w.sum(dim=(0, 2))  # (H, d_head)
            for i in range(n)}


def head_importance(model: Transformer, tokens: torch.Tensor, mask: torch.Tensor,
                    reference: torch.Tensor) -> np.ndarray:
    """Mean-ablation importance of every head for one task.

    For each (layer, head), its output is replaced by its mean over ``reference``
    (:func:`head_means`) while the other heads run normally, and the task's examples
    ``tokens``/``mask`` are scored (:func:`answer_scores`).

    Returns:
        ``(n_layers, n_heads, 2)`` float array: ``[..., 0]`` the rise in mean answer loss
        (nats per token), ``[..., 1]`` the drop in exact match (share of sequences).
    """
    means = head_means(model, reference)
    base_ok, base_loss = answer_scores(model, tokens, mask)
    out = np.zeros((model.n_layers, model.n_heads, 2))
    for layer in range(model.n_layers):
        for h in range(model.n_heads):
            ablation = model.ablation_hooks({layer: [h]}, {layer: means[layer]})  # head h → its mean
            ok, loss = answer_scores(model, tokens, mask, hooks=ablation)
            out[layer, h] = (loss.mean() - base_loss.mean(), base_ok.mean() - ok.mean())
    return out


def map_correlation(a: np.ndarray, b: np.ndarray) -> float:
    """Pearson correlation (Pearson 1895) of two head-importance maps of equal shape, flattened.

    NaN when a map is constant or holds a non-finite value (the correlation is undefined).

    Raises:
        ValueError: the shapes differ.
    """
    a, b = np.asarray(a, float).ravel(), np.asarray(b, float).ravel()
    if a.shape != b.shape:
        raise ValueError(f"head maps differ in shape: {a.shape} vs {b.shape}")
    if a.size < 2 or not (np.isfinite(a).all() and np.isfinite(b).all()) or np.ptp(a) == 0 or np.ptp(b) == 0:
        return math.nan
    return float(sps.pearsonr(a, b)[0])


def top_k(a: np.ndarray, k: int) -> set[int]:
    """Flat indices of the ``k`` largest entries (ties broken by the lower index).

    Raises:
        ValueError: ``k`` outside 1..size.
    """
    a = np.asarray(a, float).ravel()
    if not 1 <= k <= a.size:
        raise ValueError(f"k must lie in 1..{a.size}; got {k}")
    order = np.lexsort((np.arange(a.size), -a))
    return set(order[:k].tolist())


def topk_jaccard(a: np.ndarray, b: np.ndarray, k: int) -> float:
    """Jaccard index ``|A ∩ B| / |A ∪ B|`` of the top-``k`` heads of two maps (Jaccard 1912).

    NaN when either map holds a non-finite value or is constant (no head matters more than another:
    its top k would be picked by index alone, so two constant maps would score 1.0 with nothing
    reused; :func:`map_correlation` is NaN there too).

    Raises:
        ValueError: shapes differ or ``k`` is out of range.
    """
    a, b = np.asarray(a, float).ravel(), np.asarray(b, float).ravel()
    if a.shape != b.shape:
        raise ValueError(f"head maps differ in shape: {a.shape} vs {b.shape}")
    if not (np.isfinite(a).all() and np.isfinite(b).all()):
        return math.nan
    if a.size and (np.ptp(a) == 0 or np.ptp(b) == 0):
        top_k(a, k)  # still reject a bad k
        return math.nan
    A, B = top_k(a, k), top_k(b, k)
    return len(A & B) / len(A | B)


def default_k(n_heads_total: int) -> int:
    """Top-k size: a quarter of all heads, at least 2 (1 for a single-head model)."""
    return max(min(2, n_heads_total), n_heads_total // 4)


def head_record(main_map: np.ndarray, aux_map: np.ndarray | None) -> dict:
    """The head-map record of a trained model, from-scratch or fine-tuned alike: each map (``(layers, heads, 2)``:
    loss rise, exact-match drop) as nested lists and, with an auxiliary, the two maps' Pearson correlation (on
    each measure) and top-k Jaccard (:func:`default_k` heads)."""
    from .data import _map_dict

    m: dict = {"heads_main": _map_dict(main_map)}
    if aux_map is not None:
        k = default_k(main_map[..., 0].size)
        m |= {"heads_aux": _map_dict(aux_map),
              "head_corr": map_correlation(main_map[..., 0], aux_map[..., 0]),
              "head_corr_em": map_correlation(main_map[..., 1], aux_map[..., 1]),
              "head_jaccard": topk_jaccard(main_map[..., 0], aux_map[..., 0], k), "head_topk": k}
    return m
