"""Packed mini-batches of the sequence trainer (``train.pack``, :mod:`bindscale.train.loop`).

A packed step lays the batch's examples side by side into fewer rows (first fit decreasing), with positions
restarting per example and block-diagonal causal attention. It must compute the padded step's loss and
gradients up to float rounding (fp32, one torch thread: conftest), never let attention cross examples, and,
with the option off, change nothing at all.
"""

from __future__ import annotations

import pytest
import torch

from bindscale.core.studyfile import resolve_study
from bindscale.models.stacked_transformer import StackedTransformer
from bindscale.models.transformer import Transformer, packed_attention_mask
from bindscale.train import loop
from bindscale.train.loop import (
    PAD_ID,
    batch_indices,
    first_fit_decreasing,
    fit_minibatches,
    fit_stacked_minibatches,
    pack_plan,
    packed_batch,
    packed_seq_loss,
    seq_loss,
    sequence_lengths,
    stacked_packed_seq_loss,
    stacked_seq_loss,
    train_from_config,
    train_seq_model,
    train_stacked_from_config,
    train_stacked_seq_model,
)
from bindscale.train.sections import SeqTrainConfig

V = 12  # 0 pads; 1..11 are symbols
MAX_LEN = 24
POSITIONS = ("rope", "learned", "none")


def model(pos: str, seed: int = 1, d_model: int = 32) -> Transformer:
    return Transformer(V, 2, d_model, 4, max_len=MAX_LEN, pos=pos, generator=torch.Generator().manual_seed(seed))


def stack(pos: str, seeds=(1, 2), d_model: int = 16) -> StackedTransformer:
    return StackedTransformer(V, 2, d_model, 2, max_len=MAX_LEN, pos=pos,
                              generators=[torch.Generator().manual_seed(s) for s in seeds])


def data(seed: int, N: int = 24, L: int = 18):
    """Random sequences of lengths 3..L, right-padded, the loss on each one's tail (from position 2)."""
    g = torch.Generator().manual_seed(100 + seed)
    tok = torch.randint(1, V, (N, L), generator=g)
    lens = torch.randint(3, L + 1, (N,), generator=g)
    mask = torch.zeros(N, L, dtype=torch.bool)
    for n, k in enumerate(lens.tolist()):
        tok[n, k:] = PAD_ID
        mask[n, 1:k - 1] = True
    return tok, mask


def packed_step_of(tok, mask, b):
    """Packed inputs of the batch ``b`` (one trial), as the trainer builds them: ``(R, W)`` each, and R."""
    sizes = sequence_lengths(tok, mask) - 1
    W = int(sizes[b].max())
    row, col, R = pack_plan(sizes[b].tolist(), W)
    i, t, p = packed_batch(tok[None], mask[None], b[None], sizes[b][None], torch.tensor([row]), torch.tensor([col]),
                           R, W)
    return i[0], t[0], p[0], R


def grads(loss, m):
    return torch.autograd.grad(loss, [p for p in m.parameters()])


def rel(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a - b).norm() / b.norm().clamp(min=1e-30))


# --------------------------------------------------------------------------------------------------
# Bin packing and layout
# --------------------------------------------------------------------------------------------------

def test_first_fit_decreasing_on_a_hand_worked_case():
    # longest first: 5 opens bin 0, 4 bin 1, the first 3 bin 2, the second 3 joins bin 2, 2 joins bin 1, 1 bin 0
    assert first_fit_decreasing([3, 5, 1, 3, 4, 2], 6) == [[1, 2], [4, 5], [0, 3]]
    assert first_fit_decreasing([6, 6], 6) == [[0], [1]]
    assert first_fit_decreasing([], 6) == []
    with pytest.raises(ValueError, match="sizes in 1..6"):
        first_fit_decreasing([7, 1], 6)
    with pytest.raises(ValueError):
        first_fit_decreasing([0], 6)


def test_first_fit_decreasing_places_every_item_once_and_overfills_no_bin():
    g = torch.Generator().manual_seed(0)
    for _ in range(300):
        cap = int(torch.randint(1, 40, (1,), generator=g))
        n = int(torch.randint(0, 70, (1,), generator=g))
        sizes = torch.randint(1, cap + 1, (n,), generator=g).tolist()
        bins = first_fit_decreasing(sizes, cap)
        assert sorted(i for b in bins for i in b) == list(range(n))
        assert all(sum(sizes[i] for i in b) <= cap for b in bins)
        assert all(b for b in bins)
        # any fit: no two bins are both at most half full, so fewer than 2·sum/capacity + 1 bins
        assert len(bins) <= 2 * sum(sizes) / cap + 1
        # first fit: no item could have gone into an earlier bin when it was placed
        for j, b in enumerate(bins):
            for i in b:
                assert all(sum(sizes[x] for x in bins[k] if sizes[x] > sizes[i] or
                               (sizes[x] == sizes[i] and x < i)) + sizes[i] > cap for k in range(j))


def test_packed_batch_lays_examples_side_by_side_on_a_hand_worked_case():
    # three examples of 4, 2 and 3 input positions (5, 3, 4 tokens); the loss on each one's last two targets
    tok = torch.tensor([[1, 2, 3, 4, 5, 0], [6, 7, 8, 0, 0, 0], [9, 10, 11, 1, 0, 0]])
    mask = torch.tensor([[0, 0, 1, 1, 0, 0], [1, 1, 0, 0, 0, 0], [0, 1, 1, 0, 0, 0]], dtype=torch.bool)
    b = torch.tensor([0, 1, 2])
    inputs, targets, positions, R = packed_step_of(tok, mask, b)
    # width 4 (the longest): example 0 fills row 0; 3 and then 2 do not fit together (5 > 4): rows 1 and 2
    assert R == 3
    assert inputs.tolist() == [[1, 2, 3, 4], [9, 10, 11, 0], [6, 7, 0, 0]]
    assert targets.tolist() == [[-100, -100, 4, 5], [-100, 11, 1, -100], [7, 8, -100, -100]]
    assert positions.tolist() == [[0, 1, 2, 3], [0, 1, 2, 0], [0, 1, 0, 0]]
    # two short ones share a row
    tok2 = torch.tensor([[1, 2, 3, 0], [4, 5, 0, 0], [6, 7, 8, 9]])
    mask2 = torch.tensor([[0, 1, 0, 0], [1, 0, 0, 0], [1, 1, 1, 0]], dtype=torch.bool)
    inputs, targets, positions, R = packed_step_of(tok2, mask2, torch.tensor([0, 1, 2]))
    assert R == 2
    assert inputs.tolist() == [[6, 7, 8], [1, 2, 4]]
    assert targets.tolist() == [[7, 8, 9], [-100, 3, 5]]
    assert positions.tolist() == [[0, 1, 2], [0, 1, 0]]


def test_packed_attention_mask_is_block_diagonal_causal():
    m = packed_attention_mask(torch.tensor([[0, 1, 2, 0, 1, 0]]))
    want = torch.tensor([[1, 0, 0, 0, 0, 0],
                         [1, 1, 0, 0, 0, 0],
                         [1, 1, 1, 0, 0, 0],
                         [0, 0, 0, 1, 0, 0],
                         [0, 0, 0, 1, 1, 0],
                         [0, 0, 0, 0, 0, 1]], dtype=torch.bool)
    assert m.shape == (1, 1, 6, 6) and torch.equal(m[0, 0], want)


def test_every_scored_target_is_packed_once_and_no_row_is_longer_than_the_padded_batch():
    tok, mask = data(0, N=64)
    idx = batch_indices(64, 20, 16, torch.Generator().manual_seed(0))
    for b in idx:
        L = int(sequence_lengths(tok, mask)[b].max())
        inputs, targets, positions, R = packed_step_of(tok, mask, b)
        assert inputs.shape == (R, L - 1) and R <= len(b)
        assert int((targets != -100).sum()) == int(mask[b, :L - 1].sum())
        assert sorted(targets[targets != -100].tolist()) == sorted(tok[b, 1:L][mask[b, :L - 1]].tolist())
        assert int((positions == 0).sum() - (inputs == PAD_ID).sum()) == len(b)  # one start per example


# --------------------------------------------------------------------------------------------------
# Same loss, same gradients
# --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("pos", POSITIONS)
def test_the_packed_loss_and_every_gradient_equal_the_padded_ones(pos):
    tok, mask = data(1)
    m = model(pos)
    for b in (torch.arange(24), torch.tensor([3, 7, 1, 19, 20, 5, 11, 2])):
        L = int(sequence_lengths(tok, mask)[b].max())
        padded = seq_loss(m, tok[b, :L], mask[b, :L])
        inputs, targets, positions, R = packed_step_of(tok, mask, b)
        assert R < len(b)  # packing saved rows
        packed = packed_seq_loss(m, inputs, targets, positions)
        assert packed.item() == pytest.approx(padded.item(), rel=1e-6)
        for (name, _), gp, gq in zip(m.named_parameters(), grads(padded, m), grads(packed, m)):
            assert rel(gq, gp) <= 1e-5, name


@pytest.mark.parametrize("pos", POSITIONS)
def test_the_stacked_packed_losses_and_every_gradient_equal_the_padded_ones(pos):
    T, B = 2, 10
    ds = [data(2), data(3)]
    st = stack(pos)
    tokens, mask = torch.stack([d[0] for d in ds]), torch.stack([d[1] for d in ds])  # (T, N, L)
    rows = torch.stack([batch_indices(24, 1, B, torch.Generator().manual_seed(s))[0] for s in (5, 6)])  # (T, B)
    trial = torch.arange(T)[:, None]
    sizes = sequence_lengths(tokens.flatten(0, 1), mask.flatten(0, 1)).view(T, -1) - 1
    L = int(sizes[trial, rows].max()) + 1  # the stack's length: the longest any trial drew
    padded = stacked_seq_loss(st, tokens[trial, rows, :L], mask[trial, rows, :L])
    plans = [pack_plan(sizes[t, rows[t]].tolist(), L - 1) for t in range(T)]
    R = max(p[2] for p in plans)
    inputs, targets, positions = packed_batch(tokens, mask, rows, sizes[trial, rows],
                                              torch.tensor([p[0] for p in plans]), torch.tensor([p[1] for p in plans]),
                                              R, L - 1)
    assert R < B
    packed = stacked_packed_seq_loss(st, inputs, targets, positions)
    assert packed.shape == (T,)
    torch.testing.assert_close(packed, padded, rtol=1e-6, atol=0)
    for (name, _), gp, gq in zip(st.named_parameters(), grads(padded.sum(), st), grads(packed.sum(), st)):
        for t in range(T):
            assert rel(gq[t], gp[t]) <= 1e-5, (name, t)


# --------------------------------------------------------------------------------------------------
# No attention across examples
# --------------------------------------------------------------------------------------------------

def _row_a_b():
    """One packed row: example A (3 tokens) then example B (4 tokens) then one unused slot."""
    a, b = [3, 4, 5], [6, 7, 8, 9]
    return torch.tensor([a + b + [PAD_ID]]), torch.tensor([[0, 1, 2, 0, 1, 2, 3, 0]])


@pytest.mark.parametrize("pos", POSITIONS)
def test_perturbing_one_example_leaves_the_other_examples_logits_unchanged(pos):
    m = model(pos)
    x, p = _row_a_b()
    with torch.no_grad():
        base = m(x, positions=p)
        y = x.clone()
        y[0, :3] = torch.tensor([10, 1, 11])  # another example A
        other = m(y, positions=p)
        alone = m(x[:, 3:7])  # example B in a row of its own, positions 0..3
        z = x.clone()
        z[0, 3:7] = torch.tensor([1, 1, 2, 2])  # another example B
        other_b = m(z, positions=p)
    assert not torch.equal(base[0, :3], other[0, :3])  # A's own logits moved
    assert torch.equal(base[0, 3:7], other[0, 3:7])  # B's did not, bit for bit
    assert torch.equal(base[0, :3], other_b[0, :3])  # nor A's when B changes
    torch.testing.assert_close(base[0, 3:7], alone[0], rtol=1e-5, atol=1e-6)  # B as it is alone
    # The explicit path (a hook reading the attention pattern) keeps examples apart too.
    patterns = []
    from bindscale.models.hooks import hooks
    with torch.no_grad(), hooks(m, {"blocks.0.attn.hook_pattern": lambda t, h: patterns.append(t) or t}):
        hooked = m(x, positions=p)
    torch.testing.assert_close(hooked, base, rtol=1e-5, atol=1e-6)
    assert float(patterns[0][0, :, 3:7, :3].abs().max()) == 0.0 and float(patterns[0][0, :, :3, 3:].abs().max()) == 0.0


@pytest.mark.parametrize("pos", ("rope", "learned"))
def test_a_stacked_packed_row_never_lets_attention_cross_examples(pos):
    st = stack(pos)
    x, p = _row_a_b()
    x, p = x.expand(2, 1, -1).clone(), p.expand(2, 1, -1).clone()
    with torch.no_grad():
        base = st(x, positions=p)
        y = x.clone()
        y[1, 0, :3] = torch.tensor([10, 1, 11])
        other = st(y, positions=p)
        alone = st(x[:, :, 3:7])
    assert torch.equal(base[0], other[0])  # trial 0 untouched
    assert torch.equal(base[1, 0, 3:7], other[1, 0, 3:7]) and not torch.equal(base[1, 0, :3], other[1, 0, :3])
    torch.testing.assert_close(base[:, 0, 3:7], alone[:, 0], rtol=1e-5, atol=1e-6)


def test_positions_with_a_cache_or_of_another_shape_are_refused():
    m = model("rope")
    x, p = _row_a_b()
    with pytest.raises(ValueError, match="positions"):
        m(x, positions=p[:, :4])
    with pytest.raises(ValueError, match="positions"):
        m(x, positions=p, cache=m.new_cache(1, 16))
    with pytest.raises(ValueError, match="positions"):
        stack("rope")(x.expand(2, 1, -1), positions=p)


# --------------------------------------------------------------------------------------------------
# Through the trainer
# --------------------------------------------------------------------------------------------------

ARGS = dict(steps=30, batch_size=8, lr=3e-3, weight_decay=0.1, warmup_steps=5, grad_clip=1.0)


def _padded_reference(m, tok, mask, *, steps, batch_size, lr, weight_decay, warmup_steps, grad_clip, generator):
    """The per-step losses of train_seq_model as it was before packing existed (its body, verbatim)."""
    idx = batch_indices(tok.shape[0], steps, batch_size, generator)
    lengths = sequence_lengths(tok, mask)[idx].amax(dim=1).tolist()
    losses: list[float] = []
    m.train()
    fit_minibatches(list(m.parameters()), lambda step, b: seq_loss(m, tok[b, :lengths[step]], mask[b, :lengths[step]]),
                    idx, lr=lr, weight_decay=weight_decay, warmup_steps=warmup_steps, grad_clip=grad_clip,
                    on_step=lambda s, v: losses.append(v))
    return losses


@pytest.mark.parametrize("pos", ("rope", "learned"))
def test_with_pack_off_training_is_bit_for_bit_the_path_before_packing_existed(pos):
    tok, mask = data(4)
    want = _padded_reference(model(pos), tok, mask, generator=torch.Generator().manual_seed(9), **ARGS)
    for kw in ({}, {"pack": False}):
        got: list[float] = []
        train_seq_model(model(pos), tok, mask, generator=torch.Generator().manual_seed(9),
                        on_step=lambda s, v: got.append(v), **ARGS, **kw)
        assert got == want
    # train_from_config with a section that has pack at its default, and with one that has no pack at all
    tr = SeqTrainConfig(steps=30, batch_size=8, lr=3e-3, warmup_steps=5)
    assert tr.pack is False

    class Old:  # a training section from before the field existed
        steps, batch_size, lr, weight_decay, warmup_steps, grad_clip = 30, 8, 3e-3, 0.1, 5, 1.0

    a = train_from_config(model(pos), tok, mask, tr, seed=3)
    b = train_from_config(model(pos), tok, mask, Old(), seed=3)
    assert a["loss_curve"] == b["loss_curve"] and a["final_loss"] == b["final_loss"]


def test_with_pack_off_stacked_training_is_bit_for_bit_the_path_before_packing_existed():
    ds = [data(5), data(6)]
    gens = lambda: [torch.Generator().manual_seed(s) for s in (1, 2)]
    T, B, steps = 2, 8, 20
    st = stack("rope")
    idx = torch.stack([batch_indices(24, steps, B, g) for g in gens()])
    tokens, mask = torch.stack([d[0] for d in ds]), torch.stack([d[1] for d in ds])
    lengths = torch.stack([sequence_lengths(tokens[t], mask[t])[idx[t]].amax(dim=1) for t in range(T)]).amax(0).tolist()
    trial = torch.arange(T)[:, None]
    want: list = []
    st.train()
    fit_stacked_minibatches(list(st.parameters()),
                            lambda s, rows: stacked_seq_loss(st, tokens[trial, rows, :lengths[s]],
                                                             mask[trial, rows, :lengths[s]]),
                            idx, lr=3e-3, weight_decay=0.1, warmup_steps=5, grad_clip=1.0,
                            on_step=lambda t, s, v: want.append((t, s, v)))
    for kw in ({}, {"pack": False}):
        got: list = []
        train_stacked_seq_model(stack("rope"), ds, steps=steps, batch_size=B, lr=3e-3, weight_decay=0.1, warmup_steps=5,
                                grad_clip=1.0, generators=gens(), on_step=lambda t, s, v: got.append((t, s, v)), **kw)
        assert got == want


@pytest.mark.parametrize("pos", ("rope", "learned"))
def test_packed_training_follows_the_padded_loss_curve_to_float_rounding(pos):
    tok, mask = data(7, N=40)
    runs = {}
    for pack in (False, True):
        losses: list[float] = []
        out = train_seq_model(model(pos), tok, mask, generator=torch.Generator().manual_seed(2), pack=pack,
                              on_step=lambda s, v: losses.append(v), **ARGS)
        runs[pack] = (losses, out)
    (lp, _), (lq, oq) = runs[False], runs[True]
    assert len(lp) == len(lq) == 30 and oq["status"] == "ok"
    assert max(abs(a - b) / abs(a) for a, b in zip(lp, lq)) < 1e-5
    assert oq["tokens_per_s"] > 0


def test_packed_stacked_training_follows_each_trial_alone_packed_and_padded():
    ds = [data(8), data(9)]
    gens = lambda: [torch.Generator().manual_seed(s) for s in (3, 4)]
    curves = {}
    for pack in (False, True):
        got: dict[int, list[float]] = {0: [], 1: []}
        train_stacked_seq_model(stack("learned"), ds, steps=20, batch_size=8, lr=3e-3, weight_decay=0.1,
                                warmup_steps=5, grad_clip=1.0, generators=gens(), pack=pack,
                                on_step=lambda t, s, v: got[t].append(v))
        curves[pack] = got
    for t in (0, 1):
        assert max(abs(a - b) / abs(a) for a, b in zip(curves[False][t], curves[True][t])) < 1e-5


def test_train_from_config_passes_pack_and_a_stack_shares_it(monkeypatch):
    tok, mask = data(10)
    tr = SeqTrainConfig(steps=12, batch_size=8, lr=3e-3, warmup_steps=2)
    on = tr.model_copy(update={"pack": True})
    a = train_from_config(model("rope"), tok, mask, tr, seed=1)
    calls = []
    monkeypatch.setattr(loop, "packed_seq_loss", lambda *args: calls.append(1) or packed_seq_loss(*args))
    b = train_from_config(model("rope"), tok, mask, on, seed=1)
    assert len(calls) == 12  # the packed path, every step ...
    assert all(abs(x[1] - y[1]) < 1e-5 * x[1] for x, y in zip(a["loss_curve"], b["loss_curve"]))  # ... same losses
    fits = train_stacked_from_config(stack("rope"), [data(10), data(11)], [on, on], seeds=[1, 2])
    assert all(f["status"] == "ok" for f in fits)
    with pytest.raises(ValueError, match="pack"):
        train_stacked_from_config(stack("rope"), [data(10), data(11)], [tr, on], seeds=[1, 2])


def test_pack_is_refused_for_a_model_that_takes_no_positions():
    class Plain(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = torch.nn.Embedding(V, V)

        def forward(self, x):
            return self.emb(x)

    tok, mask = data(12)
    with pytest.raises(ValueError, match="train.pack needs a model"):
        train_seq_model(Plain(), tok, mask, generator=torch.Generator().manual_seed(0), pack=True, **ARGS)
    train_seq_model(Plain(), tok, mask, generator=torch.Generator().manual_seed(0), **(ARGS | {"steps": 2}))


# --------------------------------------------------------------------------------------------------
# Trial ids
# --------------------------------------------------------------------------------------------------

#: The first sequence-trained trial of each built-in study's default file and its id, taken before
#: ``train.pack`` existed (binding_scan left out: its trial config was being changed by other work then).
IDS_BEFORE_PACK = {"ceiling": "8d5e0f42a1ce512e", "depth": "2e2c95dbdc5c4553", "geometry": "3094a5acc70e3464",
                   "length_transfer": "12938d8717741065", "modularity": "d2faa57127608e4c",
                   "subgraphs": "6782d4af9724b856"}


def test_adding_the_pack_field_changes_no_trial_id_and_turning_it_on_gives_a_new_one():
    for study, want in IDS_BEFORE_PACK.items():
        t = next(t for t in resolve_study(study).trials() if isinstance(getattr(t, "train", None), SeqTrainConfig))
        assert t.train.pack is False and "pack" not in t.id_dump()["train"] and "pack" in t.model_dump()["train"]
        assert t.trial_id == want, study
        d = t.model_dump()
        if study != "modularity":  # modularity refuses it (test_modularity_refuses_packing_it_would_ignore)
            on = type(t).model_validate({**d, "train": {**d["train"], "pack": True}})
            assert on.trial_id != want
        assert type(t).model_validate({**d, "train": {**d["train"], "pack": False}}).trial_id == want
    # A record written before the field existed reads as pack off.
    depth = resolve_study("depth").trials()[0]
    old = {k: v for k, v in depth.flat().items() if k != "train.pack"}
    assert type(depth).config_columns(old)["train.pack"] is False


def test_modularity_refuses_packing_it_would_ignore():
    """modularity trains through fit_minibatches on fixed-width scenes: a pack it would silently ignore is refused."""
    import pydantic

    from bindscale.studies.modularity.config import ModularityTrial

    assert ModularityTrial().train.pack is False
    with pytest.raises(pydantic.ValidationError, match="train.pack"):
        ModularityTrial.model_validate({"train": {"pack": True}})
