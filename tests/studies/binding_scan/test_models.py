"""The binding models (bindscale.models.binding): shapes, parameter counts against the plain ladder, the
mechanisms on hand-worked inputs, greedy decoding, and a short training run that learns."""

import math

import pytest
import torch

from bindscale.models.binding import (
    SyntacticAttentionTransformer,
    TPAttention,
    TPTransformer,
)
from bindscale.models.binding_shapes import (
    BINDING_KINDS,
    KINDS,
    nonembedding_params,
    shape_for_budget,
)
from bindscale.models.hooks import run_with_cache, run_with_hooks
from bindscale.models.shapes import shape_for_budget as plain_shape
from bindscale.models.transformer import Transformer

CLASSES = {"syntactic_attention": SyntacticAttentionTransformer, "tp_transformer": TPTransformer}
#: The plain ladders of the depth study's tiers (non-embedding budgets, heads) and the quick variants' sizes.
LADDER = [(20_000, 2), (25_000, 2), (40_000, 2), (100_000, 2), (200_000, 2),
          (2_500_000, 8), (10_000_000, 8), (41_000_000, 8)]


def _model(kind, budget=20_000, layers=2, heads=2, vocab=22, max_len=64, pos="rope", seed=0):
    s = shape_for_budget(kind, budget, layers, heads)
    g = torch.Generator().manual_seed(seed)
    if kind == "transformer":
        return Transformer(vocab, layers, s.d_model, heads, max_len=max_len, pos=pos, d_ff=s.d_ff, generator=g)
    return CLASSES[kind](vocab, layers, s.d_model, heads, s.d_ff, max_len=max_len, pos=pos, generator=g)


@pytest.mark.parametrize("kind", BINDING_KINDS)
@pytest.mark.parametrize("pos", ["rope", "learned"])
def test_forward_shapes_and_parameter_counts(kind, pos):
    m = _model(kind, 20_000, 2, pos=pos, vocab=30, max_len=40)
    x = torch.randint(0, 30, (3, 11))
    assert m(x).shape == (3, 11, 30)
    s = shape_for_budget(kind, 20_000, 2, 2)
    assert m.n_params_nonembedding() == s.n_params == nonembedding_params(kind, 2, s.d_model, s.d_ff)
    d = s.d_model
    lookup = 30 * d + (40 * d if pos == "learned" else 0)  # token (and position) embeddings
    if kind == "syntactic_attention":
        lookup += 30 * d + 30 * d + 30  # semantic embeddings, head with bias
    else:
        lookup += 30 * d  # untied head, no bias
    assert m.n_params() - m.n_params_nonembedding() == lookup
    assert m.d_model == d and m.d_ff == s.d_ff and m.max_len == 40


@pytest.mark.parametrize("budget, heads", LADDER)
@pytest.mark.parametrize("kind", BINDING_KINDS)
def test_every_binding_shape_lands_within_5_percent_of_the_plain_ladder(kind, budget, heads):
    """The width helper: a binding model's non-embedding count within ±5% (here within 1%) of the plain
    transformer of the depth study's ladder at the same budget, with a usual MLP ratio."""
    plain = plain_shape(budget, 2, heads)
    s = shape_for_budget(kind, budget, 2, heads)
    assert abs(s.n_params / plain.n_params - 1) < 0.05
    assert abs(s.n_params / budget - 1) < 0.01
    assert s.d_model % (2 * heads) == 0 and 3 <= s.d_ff / s.d_model <= 5


def test_the_counting_formulas_match_the_modules():
    for kind in KINDS:
        for layers in (1, 3):
            m = _model(kind, 30_000, layers)
            s = shape_for_budget(kind, 30_000, layers, 2)
            assert m.n_params_nonembedding() == nonembedding_params(kind, layers, s.d_model, s.d_ff)
    with pytest.raises(ValueError, match="too small"):
        shape_for_budget("tp_transformer", 300, 4, 2)
    with pytest.raises(ValueError, match="unknown model kind"):
        shape_for_budget("lstm", 30_000, 2, 2)


def test_syntactic_attention_weights_come_from_the_syntax_stream_only():
    torch.manual_seed(0)
    m = _model("syntactic_attention", vocab=12).eval()
    x = torch.randint(0, 12, (2, 9))
    names = ["hook_pattern", "hook_semantic", "hook_context"]
    out, cache = run_with_cache(m, x, names=names)
    alpha = cache["hook_pattern"]
    assert alpha.shape == (2, 9, 9)
    assert torch.allclose(alpha.sum(-1), torch.ones(2, 9)) and torch.all(alpha.triu(1) == 0)  # causal rows
    # The context is the attention-weighted sum of context-free semantic embeddings, and the logits read it alone.
    sem = m.semantic.weight[x]
    assert torch.allclose(cache["hook_semantic"], sem)
    assert torch.allclose(cache["hook_context"], alpha @ sem, atol=1e-6)
    assert torch.allclose(out, m.head(alpha @ sem), atol=1e-5)
    # Changing the semantic embeddings changes the output but not the attention weights.
    with torch.no_grad():
        m.semantic.weight.mul_(-3.0).add_(1.0)
    out2, cache2 = run_with_cache(m, x, names=names)
    assert torch.equal(cache2["hook_pattern"], alpha) and not torch.allclose(out2, out)
    # Changing the syntax stream with the weights held fixed leaves the output unchanged: syntax reaches the
    # output only through the weights.
    with torch.no_grad():
        for p in m.blocks.parameters():
            p.add_(0.5)
    held = run_with_hooks(m, x, hooks={"hook_pattern": lambda a, hook: cache2["hook_pattern"]})
    assert torch.allclose(held, out2, atol=1e-5)


def test_syntactic_attention_on_a_hand_worked_input():
    """Query and key projections zeroed: every position attends uniformly to its prefix, so the logits at
    position i are W_out · mean(semantic[x_0..x_i]) + b, computed here by hand."""
    m = _model("syntactic_attention", vocab=5)
    d = m.d_model
    with torch.no_grad():
        for lin in (m.query, m.key):
            lin.weight.zero_()
            lin.bias.zero_()
        m.semantic.weight.zero_()
        for t in range(5):
            m.semantic.weight[t, t] = 1.0  # token t means the unit vector e_t
        m.head.weight.zero_()
        m.head.weight[:, :5] = torch.eye(5) * 10.0
        m.head.bias.zero_()
    x = torch.tensor([[3, 1, 1, 4]])
    logits = m(x)[0]
    want = torch.tensor([[0, 0, 0, 10.0, 0], [0, 5, 0, 5, 0], [0, 20 / 3, 0, 10 / 3, 0], [0, 5, 0, 2.5, 2.5]])
    assert d > 5 and torch.allclose(logits, want, atol=1e-5)


def test_tp_attention_binds_each_heads_filler_to_its_role_on_a_hand_set_case():
    """Hand-set weights (d = 4, two heads of 2): queries and keys zero (uniform causal attention), values the
    input, roles 2·x + 1, output projection the identity. Head output at position i = mean(x_0..x_i) ⊙ (2 x_i + 1)."""
    att = TPAttention(0, 4, 2)
    with torch.no_grad():
        att.qkv.weight.zero_()
        att.qkv.bias.zero_()
        att.qkv.weight[8:12] = torch.eye(4)  # v = x
        att.role.weight.copy_(2 * torch.eye(4))
        att.role.bias.fill_(1.0)
        att.proj.weight.copy_(torch.eye(4))
        att.proj.bias.zero_()
    x = torch.tensor([[[1.0, 2.0, 0.0, -1.0], [3.0, 0.0, 1.0, 1.0], [0.0, -2.0, 2.0, 0.0]]])
    out = att(x, None, None)
    mean = torch.cumsum(x, dim=1) / torch.arange(1, 4).view(1, 3, 1)
    want = mean * (2 * x + 1)
    assert torch.allclose(out, want, atol=1e-6)
    assert torch.allclose(out[0, 1], torch.tensor([2.0 * 7, 1.0 * 1, 0.5 * 3, 0.0 * 3]))  # by hand, position 1


def test_tp_transformer_head_output_is_filler_times_role_in_every_layer():
    m = _model("tp_transformer", vocab=15)
    x = torch.randint(0, 15, (2, 7))
    names = [f"blocks.{i}.attn.{h}" for i in range(2) for h in ("hook_z", "hook_role", "hook_bound")]
    _, cache = run_with_cache(m, x, names=names)
    for i in range(2):
        z, r, b = (cache[f"blocks.{i}.attn.{h}"] for h in ("hook_z", "hook_role", "hook_bound"))
        assert z.shape == r.shape == (2, 2, 7, m.d_model // 2)
        assert torch.allclose(b, z * r)
    # Roles start at 1 (bias) plus a small projection: at initialisation TP-attention is near ordinary attention.
    assert all(torch.all(blk.attn.role.bias == 1) for blk in m.blocks)


@pytest.mark.parametrize("kind", BINDING_KINDS)
def test_greedy_decoding_matches_an_argmax_loop_and_initialisation_is_seeded(kind):
    m = _model(kind, vocab=10)
    prompts = [[1, 2, 3], [4, 5], [6, 7, 8]]
    got = m.generate(prompts, 5, stop_id=2)
    for p, g in zip(prompts, got):
        seq, want = list(p), []
        for _ in range(5):
            nxt = int(m(torch.tensor([seq]))[0, -1].argmax())
            want.append(nxt)
            if nxt == 2:
                break
            seq.append(nxt)
        assert g == want
    a, b = _model(kind, seed=3), _model(kind, seed=3)
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))
    with pytest.raises(ValueError, match="max_len"):
        m.generate([[1] * 60], 10, stop_id=2)


@pytest.mark.parametrize("kind", KINDS)
def test_a_few_dozen_steps_on_a_tiny_scan_subset_learn_something(kind):
    """Tens of steps of the study's trainer on 64 add-jump training commands: the training loss falls well
    below its start and below the uniform guess."""
    from bindscale.studies.binding_scan.config import BindingTrial
    from bindscale.kit import pack_pairs as pack
    from bindscale.studies.binding_scan.trial import build_model, make_data
    from bindscale.train.loop import train_seq_model

    torch.set_num_threads(1)
    trial = BindingTrial(task={"split": "addprim_jump", "n_test": 10, "n_id": 10},
                         model={"kind": kind, "budget": 20_000})
    data = make_data(trial)
    tokens, mask = pack(data.train[::200][:64], data.vocab)
    model = build_model(trial, len(data.vocab), data.max_len)
    fit = train_seq_model(model, tokens, mask, steps=60, batch_size=16, lr=5e-3, weight_decay=0.0, warmup_steps=5,
                          grad_clip=1.0, generator=torch.Generator().manual_seed(0))
    first, last = fit["loss_curve"][0][1], fit["final_loss"]
    assert fit["status"] == "ok" and last < 0.5 * first and last < math.log(len(data.vocab)) / 2
