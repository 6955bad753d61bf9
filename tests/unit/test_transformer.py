import pytest
import torch

from bindscale.models.hooks import run_with_cache
from bindscale.models.transformer import Rotary, Transformer

V = 11


def model(n_layers=2, d_model=16, n_heads=4, seed=0, **kw):
    return Transformer(V, n_layers, d_model, n_heads, max_len=64, generator=torch.Generator().manual_seed(seed), **kw)


def tokens(B=3, L=9, seed=1):
    return torch.randint(0, V, (B, L), generator=torch.Generator().manual_seed(seed))


def test_logits_and_every_activation_point_have_the_declared_shapes():
    m, x = model(n_layers=3), tokens()
    out, acts = run_with_cache(m, x)
    assert out.shape == (3, 9, V)
    assert {k: tuple(v.shape) for k, v in acts.items()} == m.activation_shapes(3, 9)
    p = acts["blocks.1.attn.hook_pattern"]
    torch.testing.assert_close(p.sum(-1), torch.ones(3, 4, 9))
    assert bool((p.triu(diagonal=1) == 0).all())  # no weight on future keys


def run(m, x, explicit, **kw):
    """Logits; ``explicit``: with every attention pattern hooked (explicit attention, not the fused kernel)."""
    return run_with_cache(m, x, **kw)[0] if explicit else m(x, **kw)


@pytest.mark.parametrize("with_acts", [False, True])
def test_a_future_token_never_changes_earlier_logits(with_acts):
    m, x = model(), tokens(L=10)
    ref = run(m, x, with_acts)
    for t in (0, 4, 8):
        y = x.clone()
        y[:, t + 1:] = (y[:, t + 1:] + 1) % V
        out = run(m, y, with_acts)
        assert torch.equal(out[:, :t + 1], ref[:, :t + 1])
        assert not torch.allclose(out[:, t + 1:], ref[:, t + 1:])


def test_explicit_attention_equals_the_fused_kernel():
    m, x = model(n_layers=3), tokens()
    torch.testing.assert_close(run(m, x, True), m(x), atol=1e-5, rtol=1e-5)
    abl = {1: [0, 2]}
    torch.testing.assert_close(run(m, x, True, ablate=abl), m(x, ablate=abl), atol=1e-5, rtol=1e-5)


def test_rope_scores_depend_only_on_relative_position():
    rope = Rotary(d_head=8, max_len=64)
    g = torch.Generator().manual_seed(0)
    q, k = torch.randn(8, generator=g), torch.randn(8, generator=g)

    def score(m, n):
        return Rotary.rotate(q[None], *rope.angles(m, 1)) @ Rotary.rotate(k[None], *rope.angles(n, 1)).T

    for m, n in ((5, 2), (3, 3), (1, 7)):
        for shift in (1, 10, 40):
            torch.testing.assert_close(score(m + shift, n + shift), score(m, n), atol=1e-5, rtol=1e-5)
    assert not torch.allclose(score(6, 2), score(5, 2))  # but it does depend on the offset
    # A rotation: norms are kept.
    torch.testing.assert_close(Rotary.rotate(q[None], *rope.angles(13, 1)).norm(), q.norm())


def test_incremental_forward_with_a_kv_cache_equals_the_full_forward():
    m, x = model(n_layers=3), tokens(L=10)
    full = m(x)
    cache = m.new_cache(3, 10)
    # A prefill, a multi-token chunk after cached positions (explicit mask), then single tokens.
    parts = [m(x[:, :4], cache=cache), m(x[:, 4:7], cache=cache)] + [m(x[:, t:t + 1], cache=cache) for t in range(7, 10)]
    torch.testing.assert_close(torch.cat(parts, 1), full, atol=1e-5, rtol=1e-5)
    assert cache.length == 10
    with pytest.raises(ValueError, match="KV cache"):
        m(x[:, :1], cache=cache)


def test_cached_greedy_decoding_equals_recomputing_every_step():
    m = model(n_layers=2, d_model=32, seed=3)
    with torch.no_grad():  # larger weights than at init, so that greedy outputs vary
        for p in m.parameters():
            if p.dim() == 2:
                p.mul_(5)
    prompts = [[1, 2, 3], [4], [5, 6, 7, 8, 9], [3, 2, 1], [7, 7]]
    cached = m.generate(prompts, 12, stop_id=9)
    assert len({tuple(c) for c in cached}) == 5 and sorted(map(len, cached))[0] < 12  # some rows stop early
    assert cached == m.generate(prompts, 12, stop_id=9, use_cache=False)
    # Batching and grouping never change a row: each prompt alone gives the same tokens.
    assert cached == [m.generate([p], 12, stop_id=9)[0] for p in prompts]
    assert cached == m.generate(prompts, 12, stop_id=9, batch_size=1)


def test_generate_stops_per_row_and_keeps_input_order():
    m = model()

    def successor(tokens, *, ablate=None, ablate_with=None, cache=None):
        # A stand-in network that always predicts (last token + 1) mod V.
        if cache is not None:
            cache.length += tokens.shape[1]
        return torch.nn.functional.one_hot((tokens + 1) % V, V).float()

    m.forward = successor  # nn.Module.__call__ dispatches to the instance attribute
    stop = 9
    prompts = [[3], [1, 7], [5, 5, 8], [2], [0, 8]]
    for use_cache in (True, False):
        out = m.generate(prompts, 4, stop_id=stop, use_cache=use_cache)
        # The stop token is included; a row without it ran out of budget.
        assert out == [[4, 5, 6, 7], [8, 9], [9], [3, 4, 5, 6], [9]]
    assert m.generate(prompts, 0, stop_id=stop) == [[]] * 5


def test_generate_restores_training_mode_and_checks_lengths():
    m = model()
    m.train()
    m.generate([[1, 2]], 3, stop_id=0)
    assert m.training
    with pytest.raises(ValueError, match="max_len"):
        m.generate([[1] * 60], 10, stop_id=0)
    with pytest.raises(ValueError, match="empty"):
        m.generate([[]], 3, stop_id=0)


def test_parameter_count_hand_worked():
    d, L, r, V_ = 8, 2, 4, 7
    m = Transformer(V_, L, d, 2, mlp_ratio=r)
    per_block = (2 * d) + (3 * d * d + 3 * d) + (d * d + d) + (2 * d) + (d * r * d + r * d) + (r * d * d + d)
    assert m.n_params() == V_ * d + L * per_block + 2 * d + d * V_  # untied head, no bias


def test_head_ablation_changes_outputs_only_from_its_layer_on():
    m, x = model(n_layers=3), tokens()
    ref_logits, ref = run_with_cache(m, x)
    abl_logits, abl = run_with_cache(m, x, ablate={1: [2]})  # the cache reads hook_z after the ablation
    for k in ("blocks.0.hook_resid_pre", "blocks.0.attn.hook_z", "blocks.1.hook_resid_pre",
              "blocks.1.attn.hook_pattern"):
        assert torch.equal(ref[k], abl[k]), k
    keep = [0, 1, 3]
    assert torch.equal(abl["blocks.1.attn.hook_z"][:, keep], ref["blocks.1.attn.hook_z"][:, keep])
    assert bool((abl["blocks.1.attn.hook_z"][:, 2] == 0).all())
    for k in ("blocks.1.hook_attn_out", "blocks.2.hook_resid_pre", "blocks.2.hook_resid_post"):
        assert not torch.allclose(ref[k], abl[k]), k
    assert not torch.allclose(ref_logits, abl_logits)
    # Mean ablation: the head's output becomes the given vector.
    mean = ref["blocks.1.attn.hook_z"].mean(dim=(0, 2))  # (H, d_head)
    _, mab = run_with_cache(m, x, ablate={1: [2]}, ablate_with={1: mean})
    torch.testing.assert_close(mab["blocks.1.attn.hook_z"][:, 2], mean[2].expand(3, 9, 4))
    with pytest.raises(ValueError, match="layer 5"):
        m(x, ablate={5: [0]})
    with pytest.raises(ValueError, match="heads"):
        m(x, ablate={0: [4]})


def test_same_generator_seed_gives_identical_weights_and_leaves_global_rng_alone():
    state = torch.random.get_rng_state()
    a, b, c = model(seed=4), model(seed=4), model(seed=5)
    assert torch.equal(torch.random.get_rng_state(), state)
    for (name, p), q, r in zip(a.named_parameters(), b.parameters(), c.parameters()):
        assert torch.equal(p, q), name
        if name.endswith("weight") and p.dim() == 2:
            assert not torch.equal(p, r), name
    # GPT-2 init: residual-writing projections are scaled down by √(2·n_layers).
    assert abs(a.blocks[0].mlp.proj.weight.std().item() - 0.02 / 2) < 0.004


def test_bad_shapes_are_refused():
    with pytest.raises(ValueError, match="divisible"):
        Transformer(V, 1, 10, 3)
    with pytest.raises(ValueError, match="even"):
        Transformer(V, 1, 6, 2)
    with pytest.raises(ValueError, match="max_len"):
        model()(torch.zeros(1, 65, dtype=torch.long))


def test_rope_default_draws_the_same_weights_as_before_the_pos_option():
    # Same generator, default pos: identical to an explicit pos="rope" and with no position table.
    a, b = model(seed=0), model(seed=0, pos="rope")
    assert a.pos_embed is None and a.rope is not None
    for (n, p), (_, q) in zip(a.named_parameters(), b.named_parameters()):
        torch.testing.assert_close(p, q, msg=n)


@pytest.mark.parametrize("pos", ["learned", "none"])
def test_non_rotary_positions_run_and_cache_matches_full_forward(pos):
    m = model(seed=1, pos=pos)
    assert m.rope is None and (m.pos_embed is not None) == (pos == "learned")
    tokens = torch.randint(1, V, (2, 9), generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        full = m(tokens)
        cache = m.new_cache(2, 16)
        step = torch.cat([m(tokens[:, :5], cache=cache), m(tokens[:, 5:], cache=cache)], dim=1)
    torch.testing.assert_close(step, full, atol=1e-5, rtol=1e-5)


def test_nope_is_blind_to_position_but_learned_is_not():
    # With no positional signal the first position's output depends on its token alone, and a
    # sequence of one repeated token gives the same logits at every position (causal averaging of
    # identical values); a learned position table breaks that symmetry.
    tokens = torch.full((1, 6), 3)
    with torch.no_grad():
        nope = model(seed=2, pos="none")(tokens)[0]
        learned = model(seed=2, pos="learned")(tokens)[0]
    torch.testing.assert_close(nope, nope[:1].expand_as(nope), atol=1e-5, rtol=1e-5)
    assert (learned - learned[:1]).abs().max() > 1e-3


def test_pos_is_checked_and_learned_table_bounds_the_length():
    with pytest.raises(ValueError, match="pos must be one of"):
        model(seed=0, pos="alibi")
    m = model(seed=0, pos="learned")
    with pytest.raises(ValueError, match="max_len"):
        m(torch.ones(1, 65, dtype=torch.long))
    # Odd head dimension is fine without rotary positions.
    Transformer(V, 1, 12, 4, max_len=8, pos="none")


def test_positional_config_keeps_old_ids_and_checks_heads():
    from bindscale.train.sections import PositionalTransformerConfig, TransformerConfig

    assert "pos" not in TransformerConfig().model_dump()
    assert PositionalTransformerConfig(pos="none", d_model=12, n_heads=4).pos == "none"
    with pytest.raises(ValueError, match="even size"):
        PositionalTransformerConfig(d_model=12, n_heads=4)
