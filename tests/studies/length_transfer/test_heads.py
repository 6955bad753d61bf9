"""length_transfer head analysis: teacher-forced exact match equals greedy exact match, a hand-built
model's one important head is found by mean ablation, and the map similarities on hand cases."""

import math

import numpy as np
import pytest
import torch
from scipy import stats
from sklearn.metrics import jaccard_score

from bindscale.models.hooks import run_with_cache
from bindscale.models.transformer import Transformer
from bindscale.train.loop import greedy_predictions
from bindscale.studies.length_transfer.heads import (
    answer_scores,
    default_k,
    head_importance,
    head_means,
    map_correlation,
    top_k,
    topk_jaccard,
)

V, D, H = 6, 16, 2  # tokens 1..5 (0 is padding), residual width, heads (d_head 8)


def first_token_model() -> Transformer:
    """One layer, learned positions: head 0 attends to position 0 and writes its token where the
    unembedding reads it; head 1 computes something but its output projection is zero; the MLP writes nothing.
    The model predicts the sequence's first token at every position."""
    torch.manual_seed(0)
    m = Transformer(V, 1, D, H, max_len=12, pos="learned", generator=torch.Generator().manual_seed(1))
    dh = D // H
    with torch.no_grad():
        for p in m.parameters():
            p.zero_()
        for ln in (m.blocks[0].ln1, m.blocks[0].ln2, m.ln_f):
            ln.weight.fill_(1.0)
        m.embed.weight[:, :V] = torch.eye(V)  # token t -> dim t
        m.pos_embed.weight[0, 6] = 1.0  # position 0 marker in dim 6
        attn = m.blocks[0].attn
        attn.qkv.bias[0] = 10.0  # head 0 query: constant along its first feature
        attn.qkv.weight[D + 0, 6] = 10.0  # head 0 key: the position-0 marker
        for j in range(V):
            attn.qkv.weight[2 * D + j, j] = 1.0  # head 0 value: the token one-hot
            attn.proj.weight[8 + j, j] = 10.0  # head 0 writes the token into dims 8..13
            m.head.weight[j, 8 + j] = 1.0  # the unembedding reads dims 8..13
        g = torch.Generator().manual_seed(2)
        attn.qkv.weight[dh:2 * dh] = torch.randn(dh, D, generator=g)  # head 1's query, key, value: random
        attn.qkv.weight[D + dh:D + 2 * dh] = torch.randn(dh, D, generator=g)
        attn.qkv.weight[2 * D + dh:2 * D + 2 * dh] = torch.randn(dh, D, generator=g)
        m.blocks[0].mlp.fc.weight.normal_(generator=g)  # the MLP computes, but its output projection is zero
    return m.eval()


def first_token_batch(n: int, L: int = 6, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    tokens = torch.randint(1, V, (n, L), generator=g)
    tokens[:, -1] = tokens[:, 0]  # the answer: the first token again
    mask = torch.zeros(n, L, dtype=torch.bool)
    mask[:, -2] = True
    return tokens, mask


def test_the_hand_built_model_solves_its_task_with_head_0():
    m = first_token_model()
    tokens, mask = first_token_batch(200)
    ok, loss = answer_scores(m, tokens, mask)
    assert ok.all() and (loss >= 0).all()


def test_mean_ablation_finds_the_one_head_that_matters():
    m = first_token_model()
    tokens, mask = first_token_batch(200, seed=1)
    ref, _ = first_token_batch(100, seed=2)
    imp = head_importance(m, tokens, mask, ref)
    assert imp.shape == (1, H, 2)
    assert imp[0, 0, 1] > 0.5  # exact match collapses toward chance (1/5) without head 0
    assert imp[0, 0, 0] > 1.0  # and the loss rises
    assert imp[0, 1, 0] == pytest.approx(0.0, abs=1e-6) and imp[0, 1, 1] == 0.0  # head 1 writes nothing
    assert top_k(imp[..., 0], 1) == {0}


def test_head_means_average_over_non_padding_positions_only():
    m = first_token_model()
    tokens, _ = first_token_batch(4)
    padded = torch.cat([tokens, torch.zeros(4, 3, dtype=torch.long)], dim=1)
    _, acts = run_with_cache(m, tokens)
    want = acts["blocks.0.attn.hook_z"].mean(dim=(0, 2))  # (H, d_head): every position is a real token
    got = head_means(m, padded)[0]
    assert torch.allclose(got, want, atol=1e-5)


def test_teacher_forced_exact_match_equals_greedy_exact_match():
    torch.manual_seed(0)
    m = Transformer(V, 2, 16, 2, max_len=16, generator=torch.Generator().manual_seed(3)).eval()
    g = torch.Generator().manual_seed(4)
    prompts = torch.randint(1, V, (40, 5), generator=g).tolist()
    stop = 1
    greedy = greedy_predictions(m, prompts, 3, stop)
    seqs, answers = [], []
    for n, (p, gp) in enumerate(zip(prompts, greedy)):
        ans = list(gp)
        if n % 2:  # every other answer perturbed at one position: greedy is then wrong
            k = n % len(ans)
            ans[k] = 2 + (ans[k] - 1) % (V - 2)
        answers.append(ans)
        seqs.append(p + ans)
    L = max(map(len, seqs)) + 1
    tokens = torch.zeros(len(seqs), L, dtype=torch.long)
    mask = torch.zeros(len(seqs), L, dtype=torch.bool)
    for i, (p, s) in enumerate(zip(prompts, seqs)):
        tokens[i, :len(s)] = torch.tensor(s)
        mask[i, len(p) - 1:len(s) - 1] = True
    ok, _ = answer_scores(m, tokens, mask, batch_size=7)
    want = [greedy_predictions(m, [p], len(a), stop)[0][:len(a)] == a for p, a in zip(prompts, answers)]
    assert ok.tolist() == want and any(want) and not all(want)


def test_map_correlation_is_pearson_and_nan_when_undefined():
    a = np.array([[0.1, 0.5], [2.0, -0.3]])
    b = np.array([[0.0, 0.4], [1.0, 0.2]])
    assert map_correlation(a, b) == pytest.approx(stats.pearsonr(a.ravel(), b.ravel())[0])
    # hand case: perfectly linear maps
    assert map_correlation([1, 2, 3], [2, 4, 6]) == pytest.approx(1.0)
    assert map_correlation([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0)
    assert math.isnan(map_correlation([1, 1, 1], [1, 2, 3]))
    assert math.isnan(map_correlation([1, np.nan, 3], [1, 2, 3]))
    with pytest.raises(ValueError, match="differ in shape"):
        map_correlation([1, 2], [1, 2, 3])


def test_topk_jaccard_on_hand_cases_and_against_sklearn():
    a = np.array([0.9, 0.1, 0.8, 0.0, 0.3, 0.2])
    b = np.array([0.7, 0.6, 0.1, 0.0, 0.5, 0.2])
    # top-2: a -> {0, 2}, b -> {0, 1}: one shared of three -> 1/3
    assert topk_jaccard(a, b, 2) == pytest.approx(1 / 3)
    assert topk_jaccard(a, a, 3) == 1.0
    # top-3: a -> {0, 2, 4}, b -> {0, 1, 4}: two shared of four
    assert topk_jaccard(a, b, 3) == pytest.approx(0.5)
    rng = np.random.default_rng(0)
    for _ in range(20):
        x, y = rng.normal(size=12), rng.normal(size=12)
        k = int(rng.integers(1, 12))
        ix, iy = np.zeros(12, int), np.zeros(12, int)
        ix[list(top_k(x, k))] = 1
        iy[list(top_k(y, k))] = 1
        assert topk_jaccard(x, y, k) == pytest.approx(jaccard_score(ix, iy))
    assert math.isnan(topk_jaccard([1, np.inf], [1, 2], 1))
    with pytest.raises(ValueError, match="k must lie"):
        top_k(a, 0)
    assert default_k(8) == 2 and default_k(16) == 4 and default_k(1) == 1


def test_topk_jaccard_is_nan_for_a_constant_map():
    # review item 12: two constant maps scored 1.0 (top k picked by index) while the correlation is NaN
    z = np.zeros((2, 4))
    assert math.isnan(topk_jaccard(z, z, 2)) and math.isnan(map_correlation(z, z))
    assert math.isnan(topk_jaccard(z, np.arange(8.0).reshape(2, 4), 2))
    with pytest.raises(ValueError, match="k must lie"):
        topk_jaccard(z, z, 0)
