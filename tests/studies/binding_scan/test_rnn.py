"""The recurrent encoder-decoder (bindscale.models.seq2seq_rnn) and its trial (binding_scan's rnn_trial):
shapes, parameter counts against the formula and a hand count, the attention on a hand-worked input, the whole
decoder recomputed from its equations with torch.nn.LSTMCell, the teacher-forced (no future-token leak) and self-fed
paths, greedy decoding (without dropout), the recipe's optimizer, its draws, teacher forcing and clipping (recorded),
a tiny trial's record, seeding (the CUDA generators untouched by a CPU trial), the study file of the reproduction
(Lake & Baroni 2018, Experiment 3) and its planned cost."""

import math

import pytest
import torch

from bindscale.core.studyfile import resolve_study
from bindscale.kit import fit_minibatches
from bindscale.models.seq2seq_rnn import Seq2SeqRNN, lstm_params, seq2seq_params
from bindscale.studies.binding_scan import plan, rnn_trial
from bindscale.studies.binding_scan.config import (
    BindingTrial,
    RNNModelConfig,
    RNNTrainConfig,
)
from bindscale.studies.binding_scan.trial import make_data, run_group, untrained_model

SOS, EOS = 0, 1


def _net(hidden=8, layers=1, attention=True, dropout=0.0, n_src=6, n_tgt=5, seed=0):
    return Seq2SeqRNN(n_src, n_tgt, hidden, layers, dropout, attention, sos_id=SOS, eos_id=EOS,
                      generator=torch.Generator().manual_seed(seed))


# ----------------------------------------------------------------------------------------------- the model --

@pytest.mark.parametrize("attention", [True, False])
@pytest.mark.parametrize("layers", [1, 2])
def test_forward_shapes(attention, layers):
    net = _net(hidden=8, layers=layers, attention=attention)
    src, tgt = torch.randint(0, 6, (3, 4)), torch.randint(0, 5, (3, 7))
    logits, alpha = net(src, tgt, teacher_forcing=True, return_attention=True)
    assert logits.shape == (3, 7, 5)
    assert (alpha.shape == (3, 7, 4)) if attention else alpha is None
    memory, state = net.encode(src)
    assert len(state) == layers and all(h.shape == c.shape == (3, 8) for h, c in state)
    if attention:
        assert memory[0].shape == memory[1].shape == (3, 4, 8)
    assert net(src, tgt, teacher_forcing=torch.tensor([True, False, True])).shape == (3, 7, 5)


@pytest.mark.parametrize("attention", [True, False])
@pytest.mark.parametrize("layers", [1, 2])
def test_parameter_counts_match_the_formula(attention, layers):
    net = _net(hidden=12, layers=layers, attention=attention, n_src=9, n_tgt=7)
    counts = seq2seq_params(9, 7, 12, layers, attention)
    assert net.n_params() == sum(p.numel() for p in net.parameters()) == counts["total"]
    assert net.n_params_nonembedding() == counts["total"] - counts["embeddings"] - counts["output"]
    assert net.d_model == 12 and net.d_ff is None


def test_the_papers_add_jump_model_has_225508_parameters_by_hand():
    """Lake & Baroni's best add-jump model on SCAN's vocabularies (13 words + the end symbol; 6 actions + start and
    end), H = 100, counted by hand: embeddings 14·100 + 8·100; encoder LSTM 4H(H + H) + 8H (two biases, as
    PyTorch's); decoder LSTM reading [embedding; context] 4H(2H + H) + 8H; attention W_a, U_a (H × H) and v_a (H);
    output 2H·8 + 8."""
    H = 100
    by_hand = (14 * H + 8 * H) + (4 * H * 2 * H + 8 * H) + (4 * H * 3 * H + 8 * H) + (2 * H * H + H) + (2 * H * 8 + 8)
    assert by_hand == 225_508
    net = Seq2SeqRNN(14, 8, H, 1, 0.1, True, sos_id=0, eos_id=1)
    assert net.n_params() == sum(p.numel() for p in net.parameters()) == by_hand
    assert net.n_params_nonembedding() == by_hand - 22 * H - (2 * H * 8 + 8) == 221_700
    assert lstm_params(H, H) == sum(p.numel() for p in torch.nn.LSTM(H, H).parameters())
    # the overall-best (2 layers of 200, no attention)
    assert Seq2SeqRNN(14, 8, 200, 2, 0.5, False, sos_id=0, eos_id=1).n_params() == 1_292_408


def test_attention_weights_sum_to_one_and_the_context_is_their_weighted_sum_by_hand():
    torch.manual_seed(0)
    net = _net(hidden=3)
    g = torch.tensor([[0.5, -1.0, 0.25]])                                         # g_{i-1}, (B=1, H=3)
    h = torch.tensor([[[1.0, 0.0, 0.0], [0.0, 2.0, 0.0], [0.5, 0.5, -1.0]]])      # h_1..h_3, (1, S=3, H=3)
    with torch.no_grad():
        ctx, alpha = net.attend(g, h, net.U_a(h))
        W, U, v = net.W_a.weight, net.U_a.weight, net.v_a.weight[0]
        e = [float(v @ torch.tanh(W @ g[0] + U @ h[0, t])) for t in range(3)]      # e_it = v^T tanh(W g + U h_t)
        a = [math.exp(x) / sum(math.exp(y) for y in e) for x in e]
        c = sum(a[t] * h[0, t] for t in range(3))
    assert alpha.shape == (1, 3) and float(alpha.sum()) == pytest.approx(1.0, abs=1e-6)
    assert alpha[0].tolist() == pytest.approx(a, abs=1e-6)
    assert ctx[0].tolist() == pytest.approx(c.tolist(), abs=1e-6)


def test_teacher_forcing_feeds_the_gold_outputs_and_self_feeding_the_models_own():
    net = _net(hidden=8).eval()
    src = torch.tensor([[2, 3, 4, 0]])
    a, b = torch.tensor([[2, 3, 4, 1]]), torch.tensor([[4, 2, 3, 1]])
    # Teacher-forced: step i reads tgt[i-1], so the first step agrees and the later ones follow the gold prefix.
    fa, fb = net(src, a, True), net(src, b, True)
    assert torch.allclose(fa[:, 0], fb[:, 0]) and not torch.allclose(fa[:, 1:], fb[:, 1:])
    # Self-fed: the gold outputs are never read, and the model's steps are its greedy decoding's.
    sa, sb = net(src, a, False), net(src, b, False)
    assert torch.equal(sa, sb)
    greedy = sa[0].argmax(-1).tolist()
    want = greedy[:greedy.index(EOS) + 1] if EOS in greedy else greedy
    assert net.generate([[2, 3, 4, 0]], 4) == [want]
    # Per row: a (B,) mask forces only its rows.
    mixed = net(torch.cat([src, src]), torch.cat([a, a]), torch.tensor([True, False]))
    assert torch.allclose(mixed[0], fa[0]) and torch.allclose(mixed[1], sa[0])


def test_greedy_decoding_stops_at_the_end_symbol_per_row_and_keeps_the_input_order():
    net = _net(hidden=8)
    with torch.no_grad():
        net.out.bias.zero_()
        net.out.weight.zero_()
        net.out.bias[EOS] = 10.0  # the end symbol wins every step: one output each, the end symbol
    assert net.generate([[2, 0], [3, 4, 0]], 6) == [[EOS], [EOS]]
    with torch.no_grad():
        net.out.bias[EOS], net.out.bias[3] = -10.0, 10.0  # never ends: max_new_tokens outputs
    assert net.generate([[2, 0]], 5) == [[3] * 5]
    net = _net(hidden=8, seed=4)
    srcs = [[2, 3, 0], [4, 0], [5, 2, 3, 0], [1, 0]]
    together = net.generate(srcs, 7)
    assert together == [net.generate([s], 7)[0] for s in srcs] == net.generate(srcs, 7, batch_size=1)
    assert all(len(p) <= 7 and (EOS not in p or p.index(EOS) == len(p) - 1) for p in together)
    assert net.training  # the training flag is restored


def _lstm_cell(n_in, H, weight_ih, weight_hh, bias_ih, bias_hh):
    """A fresh torch.nn.LSTMCell carrying the given weights (the model's code is not used to run them)."""
    cell = torch.nn.LSTMCell(n_in, H)
    cell.load_state_dict({"weight_ih": weight_ih, "weight_hh": weight_hh, "bias_ih": bias_ih, "bias_hh": bias_hh})
    return cell


@pytest.mark.parametrize("forced", [True, False])
def test_the_attention_decoder_by_hand_from_its_equations(forced):
    """The whole forward pass recomputed with torch.nn.LSTMCell and the model's weights, from the module's
    equations: h_t from the encoder (g_0 = h_T, its cell state too); at step i, e_it = v·tanh(W g_{i-1} + U h_t)
    with g_{i-1} the decoder's hidden state (not its cell state), α = softmax_t, c_i = Σ α h_t, the LSTM reading
    [emb(a_{i-1}); c_i] and the logits W_o [g_i; c_i] + b_o; a_{i-1} is <SOS>, then the gold tgt[i-1] under teacher
    forcing (never a later one), else the previous step's argmax. Dropout 0.3, off in eval mode."""
    H, S, T = 5, 4, 6
    net = _net(hidden=H, dropout=0.3, seed=7).eval()
    src, tgt = torch.tensor([[2, 5, 3, 0]]), torch.tensor([[2, 4, 3, 3, 2, 1]])
    with torch.no_grad():
        logits, alphas = net(src, tgt, forced, return_attention=True)
        e_ = net.encoder
        enc = _lstm_cell(H, H, e_.weight_ih_l0, e_.weight_hh_l0, e_.bias_ih_l0, e_.bias_hh_l0)
        d_ = net.cells[0]
        dec = _lstm_cell(2 * H, H, d_.weight_ih, d_.weight_hh, d_.bias_ih, d_.bias_hh)
        W, U, v = net.W_a.weight, net.U_a.weight, net.v_a.weight[0]
        W_o, b_o = net.out.weight, net.out.bias
        h, c = torch.zeros(1, H), torch.zeros(1, H)
        hs = []
        for w in src[0]:
            h, c = enc(net.src_embed.weight[w][None], (h, c))
            hs.append(h[0])
        g, cell = h, c  # g_0 = h_T
        assert not torch.allclose(g, cell)  # so that a query read from the cell state would differ
        prev, want_logits, want_alphas = SOS, [], []
        for i in range(T):
            e = torch.stack([v @ torch.tanh(W @ g[0] + U @ hs[t]) for t in range(S)])
            alpha = torch.exp(e) / torch.exp(e).sum()
            ctx = sum(alpha[t] * hs[t] for t in range(S))
            g, cell = dec(torch.cat([net.tgt_embed.weight[prev], ctx])[None], (g, cell))
            out = W_o @ torch.cat([g[0], ctx]) + b_o
            want_logits.append(out)
            want_alphas.append(alpha)
            prev = int(tgt[0, i]) if forced else int(out.argmax())
    assert logits.shape == (1, T, 5) and alphas.shape == (1, T, S)
    assert torch.allclose(alphas[0], torch.stack(want_alphas), atol=1e-6)
    assert torch.allclose(logits[0], torch.stack(want_logits), atol=1e-5)


def test_teacher_forced_logits_at_a_position_never_read_its_gold_token_or_a_later_one():
    """Changing gold token k leaves the teacher-forced logits of positions 0..k as they were (no future-token
    leak) and changes those of position k + 1 (which reads it)."""
    net = _net(hidden=8).eval()
    src, tgt = torch.tensor([[2, 3, 4, 0]]), torch.tensor([[2, 3, 4, 2, 3, 1]])
    T = tgt.shape[1]
    with torch.no_grad():
        base = net(src, tgt, True)
        for k in range(T):
            changed = tgt.clone()
            changed[0, k] = 4 if int(tgt[0, k]) != 4 else 2
            out = net(src, changed, True)
            assert torch.equal(out[:, :k + 1], base[:, :k + 1]), k
            if k + 1 < T:
                assert not torch.allclose(out[:, k + 1], base[:, k + 1]), k


def test_greedy_decoding_runs_without_dropout_and_restores_the_training_flag():
    """A model with dropout 0.5 left in training mode decodes as in eval mode (the same outputs every call, those
    of .eval()), and is left in training mode; its training-mode forward pass does draw dropout masks."""
    srcs = [[2, 3, 0], [4, 5, 2, 0], [3, 0], [5, 4, 3, 2, 0], [2, 2, 5, 0], [4, 0]]
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        net = _net(hidden=16, dropout=0.5, seed=3)
        assert net.training
        first, second = net.generate(srcs, 8), net.generate(srcs, 8)
        assert net.training
        with torch.no_grad():
            src, tgt = torch.tensor([[2, 3, 4, 0]]), torch.tensor([[2, 3, 4, 1]])
            assert not torch.equal(net(src, tgt), net(src, tgt))  # dropout is on in training mode
            evaluated = net.eval().generate(srcs, 8)
    assert first == second == evaluated
    assert not net.training


def test_initialisation_is_seeded_and_follows_pytorchs_default_distributions():
    a, b, c = _net(hidden=50, seed=1), _net(hidden=50, seed=1), _net(hidden=50, seed=2)
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))
    assert not all(torch.equal(p, q) for p, q in zip(a.parameters(), c.parameters()))
    bound = 1 / math.sqrt(50)
    assert all(float(p.detach().abs().max()) <= bound for n, p in a.named_parameters()
               if n.startswith(("encoder", "cells")))
    assert 0.8 < float(a.src_embed.weight.detach().std()) < 1.2  # N(0, 1)
    assert float(a.out.weight.detach().abs().max()) <= 1 / math.sqrt(100)  # fan_in 2H
    state = torch.random.get_rng_state()
    _net(hidden=50, seed=1)
    assert torch.equal(torch.random.get_rng_state(), state)  # built from its generator alone


def test_the_recipes_optimizer_is_adam_at_a_constant_rate():
    """fit_minibatches with the recurrent recipe's settings: a constant gradient moves a parameter by lr every
    step (Adam's bias-corrected step), where the default schedule warms up and decays."""
    def run(**kw):
        p = torch.nn.Parameter(torch.zeros(1))
        fit_minibatches([p], lambda step, rows: 3.0 * p.sum(), torch.zeros(10, 1, dtype=torch.long), lr=0.01,
                        weight_decay=0.0, warmup_steps=0, grad_clip=None, **kw)
        return float(p.detach())
    assert run(betas=rnn_trial.ADAM_BETAS, schedule="constant") == pytest.approx(-0.1, rel=1e-4)
    assert run() > -0.1 + 1e-3  # cosine decay to 10%
    with pytest.raises(ValueError, match="schedule"):
        run(schedule="linear")


# -------------------------------------------------------------------------------------------- the trial --

def _trial(**train):
    return BindingTrial(task={"split": "addprim_jump", "n_test": 30, "n_id": 0},
                        model={"kind": "lstm_seq2seq", "hidden": 16}, train={"steps": 8, **train})


def _small(trial):
    """The trial's data with 100 training lines (its scoring of the distinct training commands stays quick)."""
    data = make_data(trial)
    return data._replace(train=data.train[::147])


def test_a_tiny_trial_runs_end_to_end_and_records_finite_numbers():
    trial = _trial()
    data = _small(trial)
    result = rnn_trial.run_alone(trial, data)
    m = result.metrics
    assert result.status == "ok"
    for k in ("acc_test", "tok_acc_test", "acc_train", "tok_acc_train", "final_loss", "steps_per_s"):
        assert math.isfinite(m[k]), k
    assert 0 <= m["acc_test"] <= 1 and 0 <= m["acc_train"] <= 1 and m["n_test"] == 30
    assert m["n_params"] == seq2seq_params(14, 8, 16, 1, True)["total"] and m["d_model"] == 16
    assert m["n_train_distinct"] == len(set(data.train)) > 50 and math.isnan(m["acc_id"]) and m["n_id"] == 0
    assert len(m["curve_loss"]) == 8 and set(m["acc_by_length"]) and m["examples"]


def test_a_seed_reproduces_its_run_and_leaves_the_global_generator_alone():
    trial = _trial(teacher_forcing=0.5)
    data = _small(trial)
    state = torch.random.get_rng_state()
    runs = []
    for t in (trial, trial, trial.model_copy(update={"seed": 1})):
        model = rnn_trial.build_model(t, data)
        fit = rnn_trial.fit(model.net, rnn_trial.examples(data, model.ids), t)
        runs.append((fit["loss_curve"], [p.detach().clone() for p in model.parameters()]))
    assert runs[0][0] == runs[1][0] and all(torch.equal(p, q) for p, q in zip(runs[0][1], runs[1][1]))
    assert runs[0][0] != runs[2][0]
    assert torch.equal(torch.random.get_rng_state(), state)


def _recorded_fit(monkeypatch, net, train, trial):
    """rnn_trial.fit with its per-trial loss and torch's gradient clipping recorded: ``(draws, clips)``, the
    ``(row, forced)`` of every trial_loss call and the ``(parameters, max_norm, norm after)`` of every
    clip_grad_norm_ call. The loss is a cheap stand-in with a gradient of 100 on every weight (the real clipping
    runs on it); ``train`` rows carry their index as the source id."""
    draws, clips = [], []
    real_clip = torch.nn.utils.clip_grad_norm_

    def loss(net_, src, tgt, forced, mean=False):
        assert net_ is net and mean is False
        draws.append((int(src[0, 0]), forced))
        return 100.0 * sum(p.sum() for p in net.parameters())

    def clip(params, max_norm, *args, **kwargs):
        params = list(params)
        norm = real_clip(params, max_norm, *args, **kwargs)
        after = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(p.grad) for p in params]))
        clips.append((params, max_norm, float(after)))
        return norm

    monkeypatch.setattr(rnn_trial, "trial_loss", loss)
    monkeypatch.setattr(torch.nn.utils, "clip_grad_norm_", clip)
    rnn_trial.fit(net, train, trial)
    return draws, clips


def test_the_recipe_draws_lines_with_replacement_forces_half_the_trials_and_clips_the_global_norm(monkeypatch):
    """§3 and footnote 5 on the add-jump split: 400 trials, each on one training line drawn uniformly with
    replacement (rows repeat, spread over the whole file; the lone "jump" line, 1,467 of 14,670 and last in the file,
    about 10% of the presentations), teacher forcing one Python bool per trial, on in about half (none at 0, all at
    1), and one clip_grad_norm_ per trial at 5.0 over every parameter of both networks (the global norm)."""
    trial = _trial(steps=400)
    lines = make_data(trial).train
    jump = {n for n, p in enumerate(lines) if p.src == ("jump",)}
    index = list(torch.arange(len(lines)).view(-1, 1, 1))  # (1, 1) source and target: the row's index
    train = list(zip(index, index))
    net = _net(hidden=4)
    draws, clips = _recorded_fit(monkeypatch, net, train, trial)
    rows, forced = [r for r, _ in draws], [f for _, f in draws]
    assert len(draws) == 400 and all(type(f) is bool for f in forced)
    assert 0.4 <= sum(forced) / 400 <= 0.6
    assert len(set(rows)) < 400  # with replacement: lines come back
    assert max(rows) >= len(lines) // 2 and rows != sorted(rows)  # not the file's first lines in turn
    assert 0.05 <= sum(r in jump for r in rows) / 400 <= 0.15
    everything = {id(p) for p in net.parameters()}
    assert len(clips) == 400
    for params, max_norm, after in clips:
        assert max_norm == 5.0 and len(params) == len(everything) and {id(p) for p in params} == everything
        assert after == pytest.approx(5.0, rel=1e-4)  # each gradient's norm was 100·√n_params before
    for p, want in ((0.0, False), (1.0, True)):
        draws, _ = _recorded_fit(monkeypatch, _net(hidden=4), train[:50], _trial(steps=40, teacher_forcing=p))
        assert [f for _, f in draws] == [want] * 40


def test_a_cpu_trial_never_seeds_the_cuda_generators(monkeypatch):
    """The dropout stream is seeded on the CPU generator only: the CUDA ones (seeded lazily by torch.manual_seed
    where CUDA is not yet initialised) are left alone, and the CPU one is restored."""
    seeded = []
    monkeypatch.setattr(torch.cuda, "manual_seed_all", lambda seed: seeded.append(("all", seed)))
    monkeypatch.setattr(torch.cuda, "manual_seed", lambda seed: seeded.append(("current", seed)))
    state = torch.random.get_rng_state()
    net = _net(hidden=4, dropout=0.1)
    train = [(torch.tensor([[2, 3, 0]]), torch.tensor([[2, 3, EOS]]))]
    fit = rnn_trial.fit(net, train, _trial(steps=2))
    assert fit["status"] == "ok" and seeded == []
    assert torch.equal(torch.random.get_rng_state(), state)


def test_a_self_fed_trial_counts_its_loss_up_to_the_end_symbol_it_emits():
    net = _net(hidden=8)
    with torch.no_grad():
        net.out.weight.zero_()
        net.out.bias.zero_()
        net.out.bias[EOS] = 5.0  # the model ends at once
    src, tgt = torch.tensor([[2, 3, 0]]), torch.tensor([[2, 3, 4, 1]])
    with torch.no_grad():
        nll = torch.nn.functional.cross_entropy(net(src, tgt, True)[0], tgt[0], reduction="none")
        assert float(rnn_trial.trial_loss(net, src, tgt, True)) == pytest.approx(float(nll.sum()))
        assert float(rnn_trial.trial_loss(net, src, tgt, False)) == pytest.approx(float(nll[0]))


def test_the_shared_vocabulary_round_trip():
    trial = _trial()
    data = make_data(trial)
    model = untrained_model(trial, len(data.vocab), data.max_len)
    ids = model.ids
    assert len(ids.src) == 14 and len(ids.tgt) == 8  # 13 words + <sep>; 6 actions + <sep>, <eos>
    p = data.test[0]
    assert [ids.src[i] for i in ids.source(data.vocab.prompt(p))] == data.vocab.prompt(p)
    assert [ids.tgt[i] for i in ids.target(data.vocab.target(p))] == data.vocab.target(p)
    eos = data.vocab.target(p)[-1]
    out = model.generate([data.vocab.prompt(p)], 5, eos)
    assert len(out[0]) <= 5 and set(out[0]) <= set(ids.tgt)
    with pytest.raises(ValueError, match="stop_id"):
        model.generate([data.vocab.prompt(p)], 5, eos + 1)


def test_config_defaults_are_the_papers_setting_and_each_model_keeps_its_recipe():
    t = BindingTrial(model={"kind": "lstm_seq2seq"})
    assert t.recurrent() and t.model == RNNModelConfig(hidden=100, n_layers=1, dropout=0.1, attention=True)
    assert t.train == RNNTrainConfig(steps=100_000, batch_size=1, lr=1e-3, grad_clip=5.0, teacher_forcing=0.5)
    # A recurrent grid over a decoder base: the decoders' model and train fields are dropped, its own kept.
    t = BindingTrial(model={"kind": "lstm_seq2seq", "budget": 100_000, "n_heads": 2, "n_layers": 2},
                     train={"steps": 50, "batch_size": 1, "warmup_steps": 5, "weight_decay": 0.1})
    assert t.model.n_layers == 2 and t.train.steps == 50 and t.train.teacher_forcing == 0.5
    assert not BindingTrial().recurrent()
    with pytest.raises(ValueError):
        BindingTrial(model={"kind": "lstm_seq2seq"}, train={"batch_size": 32})  # one sequence per trial
    with pytest.raises(ValueError):
        BindingTrial(model={"kind": "lstm_seq2seq", "hidden_size": 100})  # a typo is refused, not dropped


def test_recurrent_trials_train_alone_in_a_job_beside_decoders(monkeypatch):
    rec = _trial()
    dec = BindingTrial(task={"n_test": 10, "n_id": 5}, model={"budget": 4000, "n_layers": 1},
                       train={"steps": 2, "batch_size": 4, "warmup_steps": 1})
    assert plan.group_key(rec) != plan.group_key(rec.model_copy(update={"seed": 1}))
    seen = []
    monkeypatch.setattr(rnn_trial, "run_alone", lambda t, data, *a: seen.append(t) or "recurrent")
    out = run_group([dec, rec], "cpu")
    assert out[1] == "recurrent" and seen == [rec] and out[0].status == "ok"


# ------------------------------------------------------------------------------- the reproduction's file --

def test_the_study_file_is_the_papers_setting_on_the_whole_test_set():
    study = resolve_study("binding_scan-lake2018")
    trials = study.trials()
    assert len(trials) == 3 and [t.seed for t in trials] == [0, 1, 2] and not study.verdicts
    for t in trials:
        assert (t.task.split, t.task.n_test, t.task.n_id) == ("addprim_jump", 0, 0)
        assert t.model == RNNModelConfig(kind="lstm_seq2seq", hidden=100, n_layers=1, dropout=0.1, attention=True)
        assert t.train == RNNTrainConfig(steps=100_000, batch_size=1, lr=0.001, grad_clip=5.0, teacher_forcing=0.5)
    text = " ".join(study.description.split())
    assert all(s in text for s in ("1.2%", "0.08%", "100,000", "7,706", "1,467", "14,670"))
    data = make_data(trials[0])
    assert len(data.train) == 14_670 and len(data.test) == 7_706 and not data.id_check
    assert sum(p.src == ("jump",) for p in data.train) == 1_467  # as the official training file
    quick = resolve_study("binding_scan-lake2018", quick=True).trials()
    assert len(quick) == 1 and quick[0].train.steps < 1000 and quick[0].task.n_test > 0


def test_the_planned_cost_is_the_measured_step_and_scoring():
    t = resolve_study("binding_scan-lake2018").trials()[0]
    seconds = plan.recurrent_seconds(t)
    # 100,000 trials at the measured 12.2 ms, and about 7 s of scoring (7,706 test + 13,204 training commands).
    assert 100_000 * 0.0121 < seconds < 100_000 * 0.0123 + 10
    assert plan.trial_cost(t) * plan.SECONDS_PER_COST == pytest.approx(seconds)
    best = t.model_copy(update={"model": RNNModelConfig(hidden=200, n_layers=2, dropout=0.5, attention=False)})
    assert plan.recurrent_seconds(best) / seconds == pytest.approx(27.9 / 12.2, rel=0.02)
    assert plan.trial_memory_bytes(t) >= plan.MEMORY_FLOOR


def quick_reproduction_through_the_cli(study, kind, tmp_path):
    """``bindscale run STUDY --quick`` on one worker: exit 0, no verdicts, one record of model ``kind`` with its test
    and training exact match, and the kind in the report. Returns the results table."""
    import json

    import pandas as pd
    from integration.conftest import bindscale

    r = bindscale("run", study, "--quick", "--out", tmp_path / "q", "--workers", "1")
    assert r.returncode == 0, r.stderr
    assert json.loads((tmp_path / "q" / "summary.json").read_text())["verdicts"] == []
    df = pd.read_parquet(tmp_path / "q" / "results.parquet")
    assert list(df["model"]) == [kind] and df["acc_test"].notna().all() and df["acc_train"].notna().all()
    assert kind in (tmp_path / "q" / "report.html").read_text()
    return df


@pytest.mark.slow
def test_the_quick_reproduction_runs_through_the_cli(tmp_path):
    quick_reproduction_through_the_cli("binding_scan-lake2018", "lstm_seq2seq", tmp_path)
