import itertools
import math

import pytest
import torch

from bindscale.models.transformer import Transformer
from bindscale.train.loop import greedy_predictions, lr_at, seq_loss, sequence_lengths, train_seq_model

SEP, STOP = 1, 2  # 0 is padding; digits are 3..6


def reverse_task():
    """Every 3-digit string over 4 symbols, followed by SEP, its reverse and STOP; loss on the answer."""
    seqs = [list(c) + [SEP] + list(reversed(c)) + [STOP] for c in itertools.product(range(3, 7), repeat=3)]
    tokens = torch.tensor(seqs)
    mask = torch.zeros_like(tokens, dtype=torch.bool)
    mask[:, 3:7] = True  # positions SEP..last answer digit predict the answer and STOP
    return seqs, tokens, mask


def tiny(seed=0, n_layers=1):
    return Transformer(7, n_layers, 32, 2, max_len=16, generator=torch.Generator().manual_seed(seed))


def fit(m, tokens, mask, seed=1, **kw):
    args = dict(steps=150, batch_size=32, lr=1e-2, weight_decay=0.0, warmup_steps=10, grad_clip=1.0,
                generator=torch.Generator().manual_seed(seed))
    return train_seq_model(m, tokens, mask, **(args | kw))


def test_a_tiny_model_learns_to_reverse_its_training_strings_exactly():
    seqs, tokens, mask = reverse_task()
    m = tiny()
    res = fit(m, tokens, mask)
    assert res["status"] == "ok" and res["diverged_step"] is None and res["steps_done"] == 150
    assert res["final_loss"] < 0.05
    curve = res["loss_curve"]
    assert len(curve) == 20 and curve[-1][0] == 150 and curve[0][1] > 10 * curve[-1][1]
    assert res["steps_per_s"] > 0 and res["tokens_per_s"] > 0
    preds = greedy_predictions(m, [s[:4] for s in seqs], 6, STOP, batch_size=24)
    assert preds == [s[4:] for s in seqs]  # answer plus the stop token, every example


def test_same_generator_gives_identical_training_and_padding_is_trimmed_away():
    _, tokens, mask = reverse_task()
    a = fit(tiny(), tokens, mask, steps=20)
    b = fit(tiny(), tokens, mask, steps=20)
    assert a["loss_curve"] == b["loss_curve"]
    # Extra right padding never reaches the model: batches are trimmed to their longest sequence.
    padded = torch.cat([tokens, torch.zeros(len(tokens), 5, dtype=torch.long)], 1)
    pmask = torch.cat([mask, torch.zeros(len(tokens), 5, dtype=torch.bool)], 1)
    assert fit(tiny(), padded, pmask, steps=20)["loss_curve"] == a["loss_curve"]
    c = fit(tiny(), tokens, mask, steps=20, seed=2)
    assert c["loss_curve"] != a["loss_curve"]


def test_sequence_lengths_cover_tokens_and_targets():
    tokens = torch.tensor([[5, 6, 0, 0, 0], [5, 6, 7, 8, 0], [5, 0, 0, 0, 0]])
    mask = torch.zeros_like(tokens, dtype=torch.bool)
    mask[2, 2] = True  # predicts a padding token at position 3: it must stay in the batch
    assert sequence_lengths(tokens, mask).tolist() == [2, 4, 4]


def test_positions_outside_the_loss_mask_do_not_affect_the_gradient():
    m = tiny(n_layers=2)
    a = torch.tensor([[3, 4, 5, 1, 5, 4, 3, 2]])
    b = a.clone()
    b[0, -1] = 6  # only ever a target, of position 6
    mask = torch.zeros_like(a, dtype=torch.bool)
    mask[0, 3:6] = True

    def grads(tokens, mask):
        m.zero_grad()
        loss = seq_loss(m, tokens, mask)
        loss.backward()
        return loss.detach(), [p.grad.clone() for p in m.parameters()]

    la, ga = grads(a, mask)
    lb, gb = grads(b, mask)
    assert torch.equal(la, lb) and all(torch.equal(x, y) for x, y in zip(ga, gb))
    mask[0, 6] = True  # now the changed token is a target: the gradient must see it
    _, gc = grads(a, mask)
    _, gd = grads(b, mask)
    assert not all(torch.equal(x, y) for x, y in zip(gc, gd))
    # One masked position: the loss is that position's cross-entropy, by hand.
    one = torch.zeros_like(mask)
    one[0, 4] = True
    with torch.no_grad():
        by_hand = -m(a[:, :-1])[0, 4].log_softmax(-1)[a[0, 5]]
        torch.testing.assert_close(seq_loss(m, a, one), by_hand)
        assert seq_loss(m, a, torch.zeros_like(mask)).item() == 0.0


def test_a_huge_learning_rate_is_reported_as_diverged_not_raised():
    _, tokens, mask = reverse_task()
    res = fit(tiny(), tokens, mask, steps=50, lr=1e6, weight_decay=0.1, warmup_steps=0, grad_clip=None)
    assert res["status"] == "diverged"
    assert not math.isfinite(res["final_loss"]) and res["steps_done"] == res["diverged_step"] < 50


def test_an_injected_nan_stops_training_at_its_step():
    _, tokens, mask = reverse_task()
    m = tiny()
    calls = {"n": 0}
    forward = m.forward

    def poisoned(x, *args, **kw):
        calls["n"] += 1
        out = forward(x, *args, **kw)
        return out * float("nan") if calls["n"] == 7 else out

    m.forward = poisoned
    seen = []
    res = fit(m, tokens, mask, steps=30, on_step=lambda s, v: seen.append(s))
    assert res["status"] == "diverged" and res["diverged_step"] == 7 and calls["n"] == 7
    assert seen == list(range(1, 7))  # the callback sees every finite step
    assert all(math.isfinite(v) for _, v in res["loss_curve"])


def test_learning_rate_warms_up_then_decays_to_a_tenth():
    kw = dict(lr=1.0, warmup_steps=10, steps=110)
    assert lr_at(5, **kw) == 0.5 and lr_at(10, **kw) == 1.0
    assert lr_at(60, **kw) == pytest.approx(0.55)
    assert lr_at(110, **kw) == pytest.approx(0.1)
    assert lr_at(1, lr=1.0, warmup_steps=0, steps=10) < 1.0


def test_bad_inputs_are_refused():
    _, tokens, mask = reverse_task()
    bad = mask.clone()
    bad[:, -1] = True
    with pytest.raises(ValueError, match="last position"):
        fit(tiny(), tokens, bad, steps=1)
    with pytest.raises(ValueError, match="no position"):
        fit(tiny(), tokens, torch.zeros_like(mask), steps=1)
    with pytest.raises(ValueError, match=r"\(N, L\)"):
        fit(tiny(), tokens, mask[:, :-1], steps=1)


def test_train_from_config_is_train_seq_model_with_the_trials_settings_and_train_stream():
    from bindscale.core import seeding
    from bindscale.train.loop import train_from_config
    from bindscale.train.sections import SeqTrainConfig

    _, tokens, mask = reverse_task()
    cfg = SeqTrainConfig(steps=20, batch_size=16, lr=5e-3, weight_decay=0.1, warmup_steps=50, grad_clip=0.5)
    ticks = []
    got = train_from_config(tiny(), tokens, mask, cfg, seed=7, progress=ticks.append)
    # warm-up capped at half the steps (50 -> 10), batch order from the trial's "train" stream
    want = fit(tiny(), tokens, mask, steps=20, batch_size=16, lr=5e-3, weight_decay=0.1, warmup_steps=10,
               grad_clip=0.5, generator=seeding.generator(7, "train"))
    assert got["loss_curve"] == want["loss_curve"] and ticks == [1] * 20
    assert train_from_config(tiny(), tokens, mask, cfg, seed=8)["loss_curve"] != got["loss_curve"]
