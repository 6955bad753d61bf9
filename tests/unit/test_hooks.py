"""Hook points (bindscale.models.hooks) on every model kind: run_with_cache returns the documented
shapes and the values an independent computation gives; run_with_hooks patches as expected; hooks
never outlive their call; unknown names raise with the list of points."""

import pytest
import torch

from bindscale.studies.scaling.students import build_model
from bindscale.models.hooks import (
    ActivationCache,
    HookPoint,
    UnknownHookPoint,
    hook_names,
    hooks,
    run_with_cache,
    run_with_hooks,
)
from bindscale.models.transformer import Transformer
from bindscale.studies.scaling.config import ModelConfig

T, B, S, E, I, O = 3, 5, 4, 6, 7, 2


def gens(n=T):
    return [torch.Generator().manual_seed(10 + i) for i in range(n)]


def stacked(kind, **kw):
    return build_model(ModelConfig(kind=kind, width=8, depth=2, **kw), E, I, O, 4, gens())


def inputs(seed=0, T_=T):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(T_, B, E, generator=g), torch.randn(T_, B, S, I, generator=g)


def no_hooks_left(model):
    return not any(isinstance(m, HookPoint) and m.has_hooks for m in model.modules())


def zeros(x, _hook):
    return torch.zeros_like(x)


# --------------------------------------------------------------------------- MLP

def test_stacked_mlp_cache_has_the_documented_shapes_and_hand_computed_values():
    m = stacked("mlp")
    code, x = inputs()
    out, cache = run_with_cache(m, code, x)
    assert isinstance(cache, ActivationCache)
    assert list(cache) == hook_names(m) == ["hook_input", "hook_hidden.0", "hook_hidden.1", "hook_output"]
    assert {k: tuple(v.shape) for k, v in cache.items()} == m.activation_shapes(B, S)
    assert cache["hook_input"].shape == (T, B, S, E + I)
    # The first hidden layer by hand: relu(concat(code, x) @ W0 + b0), per trial.
    h_in = torch.cat([code[:, :, None].expand(T, B, S, E), x], dim=-1)
    for t in range(T):
        want = torch.relu(h_in[t] @ m.weights[0][t] + m.biases[0][t])
        torch.testing.assert_close(cache["hook_hidden.0"][t], want)
    assert torch.equal(cache["hook_output"], out)
    assert not cache["hook_hidden.0"].requires_grad  # detached by default
    assert no_hooks_left(m)


def test_patching_the_last_hidden_layer_with_zeros_leaves_the_readout_bias():
    m = stacked("mlp")
    code, x = inputs()
    out = run_with_hooks(m, code, x, hooks={"hook_hidden.1": zeros})
    torch.testing.assert_close(out, m.biases[-1][:, None].expand(T, B, S, O))
    assert not torch.allclose(m(code, x), out)  # and the hook is gone afterwards


def test_a_member_mlp_has_the_stacks_points_without_the_trial_dimension():
    m = stacked("mlp")
    code, x = inputs()
    _, stack = run_with_cache(m, code, x)
    one = m.member(1)
    out, cache = run_with_cache(one, code[1], x[1])
    assert list(cache) == list(stack)
    for name in stack:
        assert torch.equal(cache[name], stack[name][1]), name
    # Hand check on the plain model: the first hidden layer is act(x @ W + b).
    h_in = torch.cat([code[1][:, None].expand(B, S, E), x[1]], dim=-1)
    torch.testing.assert_close(cache["hook_hidden.0"], torch.relu(h_in @ one.hidden[0].weight + one.hidden[0].bias))
    out0 = run_with_hooks(one, code[1], x[1], hooks={"hook_hidden.1": zeros})
    torch.testing.assert_close(out0, one.output.bias.expand(B, S, O))


def test_cache_keeps_only_requested_names_and_can_keep_the_graph():
    m = stacked("mlp")
    code, x = inputs()
    _, cache = run_with_cache(m, code, x, names=["hook_hidden.1"])
    assert list(cache) == ["hook_hidden.1"]
    _, live = run_with_cache(m, code, x, names=["hook_hidden.0"], detach=False)
    live["hook_hidden.0"].sum().backward()
    assert m.weights[0].grad is not None and m.weights[1].grad is None


# --------------------------------------------------------------------------- hypernetwork

def test_hypernet_cache_matches_the_mixing_and_generated_weights_by_hand():
    m = stacked("hypernet")
    code, x = inputs()
    out, cache = run_with_cache(m, code, x)
    assert {k: tuple(v.shape) for k, v in cache.items()} == m.activation_shapes(B, S)
    assert torch.equal(cache["hook_input"], code)
    alpha = code @ m.mix_W + m.mix_b  # (T, B, L)
    torch.testing.assert_close(cache["hook_mixing"], alpha)
    W0 = torch.einsum("tbl,tlk->tbk", alpha, m.bank_W[0]).view(T, B, I, 8) + m.base_W[0][:, None]
    b0 = alpha @ m.bank_b[0] + m.base_b[0]
    torch.testing.assert_close(cache["hook_weights.0"], W0)
    torch.testing.assert_close(cache["hook_biases.0"], b0)
    torch.testing.assert_close(cache["hook_hidden.0"], torch.relu(x @ W0 + b0[:, :, None]))
    assert torch.equal(cache["hook_output"], out)
    # The member's points are the stack's without T.
    _, one = run_with_cache(m.member(2), code[2], x[2])
    assert list(one) == list(cache)
    for name in cache:
        torch.testing.assert_close(one[name], cache[name][2], atol=1e-6, rtol=1e-5)


def test_zero_mixing_runs_the_base_target_network():
    m = stacked("hypernet")
    code, x = inputs()
    out = run_with_hooks(m, code, x, hooks={"hook_mixing": zeros})
    h = x
    for j in range(3):
        h = h @ m.base_W[j][:, None] + m.base_b[j][:, None]
        h = torch.relu(h) if j < 2 else h
    torch.testing.assert_close(out, h)


# --------------------------------------------------------------------------- transformer

def transformer(n_layers=2, pos="rope"):
    m = Transformer(11, n_layers, 16, 4, max_len=32, pos=pos, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():  # larger weights than at init, so patches move the output visibly
        for p in m.parameters():
            if p.dim() == 2:
                p.mul_(4)
    return m.eval()


def tokens(seed=1, Bt=3, L=9):
    return torch.randint(0, 11, (Bt, L), generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("pos", ["rope", "learned"])
def test_transformer_cache_shapes_names_and_residual_identities(pos):
    m, x = transformer(pos=pos), tokens()
    out, c = run_with_cache(m, x)
    assert list(c) == hook_names(m)  # registered in forward order
    assert {k: tuple(v.shape) for k, v in c.items()} == m.activation_shapes(3, 9)
    assert torch.equal(c["hook_embed"], m.embed.weight[x])
    for i in range(2):
        p = f"blocks.{i}."
        torch.testing.assert_close(c[p + "hook_resid_mid"], c[p + "hook_resid_pre"] + c[p + "hook_attn_out"])
        torch.testing.assert_close(c[p + "hook_resid_post"], c[p + "hook_resid_mid"] + c[p + "hook_mlp_out"])
        pat = c[p + "attn.hook_pattern"]
        torch.testing.assert_close(pat.sum(-1), torch.ones(3, 4, 9))
        assert bool((pat.triu(diagonal=1) == 0).all())
        blk = m.blocks[i]
        z = c[p + "attn.hook_z"]  # (B, H, L, d_head) → the output projection gives attn_out
        torch.testing.assert_close(blk.attn.proj(z.transpose(1, 2).reshape(3, 9, 16)), c[p + "hook_attn_out"])
        torch.testing.assert_close(blk.mlp.proj(c[p + "mlp.hook_post"]), c[p + "hook_mlp_out"])
    torch.testing.assert_close(c["hook_ln_final"], m.ln_f(c["blocks.1.hook_resid_post"]))
    torch.testing.assert_close(m.head(c["hook_ln_final"]), out)
    assert ("hook_pos_embed" in c) == (pos == "learned")


def test_a_hook_that_zeros_one_head_equals_the_models_head_ablation():
    m, x = transformer(), tokens()

    def zero_head_2(z, _hook):
        z = z.clone()
        z[:, 2] = 0
        return z

    hooked = run_with_hooks(m, x, hooks={"blocks.1.attn.hook_z": zero_head_2})
    assert torch.equal(hooked, m(x, ablate={1: [2]}))
    assert torch.equal(hooked, run_with_hooks(m, x, hooks=m.ablation_hooks({1: [2]})))
    assert not torch.allclose(hooked, m(x))
    # By hand: layer 1's attention output is the projection of the heads with head 2 zeroed.
    _, c = run_with_cache(m, x, hooks={"blocks.1.attn.hook_z": zero_head_2})
    z = c["blocks.1.attn.hook_z"]
    assert bool((z[:, 2] == 0).all())
    torch.testing.assert_close(m.blocks[1].attn.proj(z.transpose(1, 2).reshape(3, 9, 16)), c["blocks.1.hook_attn_out"])


def test_patching_the_whole_residual_stream_from_a_second_input_gives_its_output():
    m = transformer()
    a, b = tokens(seed=1), tokens(seed=2)
    out_b, cache_b = run_with_cache(m, b)
    for name in ("blocks.0.hook_resid_pre", "blocks.1.hook_resid_mid", "blocks.1.hook_resid_post"):
        patched = run_with_hooks(m, a, hooks={name: lambda x, hook: cache_b[hook.name]})
        torch.testing.assert_close(patched, out_b, atol=1e-6, rtol=1e-6)
    assert not torch.allclose(m(a), out_b)
    # Patching one position only changes that position and later ones.
    def pos4(x, hook):
        x = x.clone()
        x[:, 4] = cache_b[hook.name][:, 4]
        return x
    part = run_with_hooks(m, a, hooks={"blocks.1.hook_resid_pre": pos4})
    assert torch.equal(part[:, :4], m(a)[:, :4]) and not torch.allclose(part[:, 4], m(a)[:, 4])


def test_hooks_see_the_new_positions_when_decoding_with_a_kv_cache():
    m, x = transformer(), tokens(L=6)
    seen = []
    with hooks(m, {"blocks.0.attn.hook_pattern": lambda p, h: seen.append(tuple(p.shape))}):
        kv = m.new_cache(3, 6)
        m(x[:, :4], cache=kv)
        m(x[:, 4:5], cache=kv)
    assert seen == [(3, 4, 4, 4), (3, 4, 1, 5)]
    assert no_hooks_left(m)


# --------------------------------------------------------------------------- the mechanism

def test_hooks_are_removed_after_an_exception():
    m, x = transformer(), tokens()
    ref = m(x)

    def boom(_x, _hook):
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        run_with_hooks(m, x, hooks={"blocks.0.hook_resid_pre": zeros, "blocks.1.attn.hook_z": boom})
    assert no_hooks_left(m)
    with pytest.raises(RuntimeError, match="boom"):
        run_with_cache(m, x, hooks={"hook_embed": boom})
    assert no_hooks_left(m)
    with pytest.raises(ValueError, match="inside"):
        with hooks(m, {"hook_embed": zeros}):
            assert not no_hooks_left(m)
            raise ValueError("inside")
    assert no_hooks_left(m) and torch.equal(m(x), ref)


@pytest.mark.parametrize("run", [run_with_cache, run_with_hooks])
def test_an_unknown_name_raises_with_the_list_of_hook_points(run):
    m, x = transformer(), tokens()
    bad = "blocks.7.hook_resid_pre"
    kw = {"names": [bad]} if run is run_with_cache else {"hooks": {bad: zeros}}
    with pytest.raises(KeyError, match=r"'blocks.7.hook_resid_pre'.*hook_embed, blocks.0.hook_resid_pre"):
        run(m, x, **kw)
    with pytest.raises(UnknownHookPoint):
        run(m, x, **kw)
    assert no_hooks_left(m)
    _, cache = run_with_cache(m, x, names=["hook_embed"])
    with pytest.raises(KeyError, match="holds: hook_embed"):
        cache["hook_ln_final"]


def test_hooks_run_in_order_and_prepend_goes_first():
    m = stacked("mlp")
    code, x = inputs()
    order = []
    first = lambda h, hook: order.append("first")  # noqa: E731 - reading hooks return None: no change
    second = lambda h, hook: order.append("second")  # noqa: E731
    with hooks(m, {"hook_hidden.0": first}), hooks(m, {"hook_hidden.0": second}, prepend=True) as pts:
        assert pts["hook_hidden.0"].name == "hook_hidden.0"
        assert torch.equal(m(code, x), run_with_hooks(m, code, x))
    assert order == ["second", "first"] * 2
    assert no_hooks_left(m)


def test_a_hook_point_without_hooks_returns_its_input_itself():
    hp, t = HookPoint(), torch.randn(3)
    assert hp(t) is t and not hp.has_hooks


@pytest.mark.parametrize("kind", ["mlp", "hypernet", "tpr"])
def test_a_deep_copy_runs_its_own_hook_points(kind):
    """The stacked models keep plain references to their points for speed; a copy must use its own."""
    import copy

    m = stacked(kind)
    c = copy.deepcopy(m)
    code, x = inputs()
    out = run_with_hooks(c, code, x, hooks={"hook_hidden.1": zeros})
    assert torch.equal(out, run_with_hooks(m, code, x, hooks={"hook_hidden.1": zeros}))
    assert not torch.equal(out, c(code, x))
