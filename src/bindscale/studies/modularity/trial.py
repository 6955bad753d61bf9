"""One trial of the ``modularity`` study: train a network on a compound task, then look for its subroutines.

Claim under test (Lepori, Serre, Pavlick, NeurIPS 2023, "Break It Down:
Evidence for Structural Compositionality in Neural Networks"): a network
trained on a compound task "A and B" implements each subroutine in its own
subnetwork — find it with a learned weight mask, remove it, and only that
subroutine breaks — and pretraining makes this more reliable.

One trial (all randomness on its own stream of :mod:`bindscale.core.seeding`):

1. **Data** ("datasets" stream; :func:`bindscale.studies.modularity.tasks.make_datasets`
   gives every set its own child generator): compound train/test, subroutine
   train/test for A (same shape) and B (same colour), pretraining sets. The
   scene space is partitioned first (``task.base_fraction`` / ``mask_fraction``,
   the rest for testing): every test set is disjoint from every training set,
   and the masks' training sets from the base network's. ``base_acc_test``
   (which the verdicts' ``min_base_acc`` filter reads) is therefore held out.
2. **Base network** ("init"): a ReLU MLP on the one-hot view or a transformer
   on the tokens, one binary logit per scene (:class:`CompoundNet`).
   Optional **pretraining** ("pretrain", :func:`pretrain`): the generic
   ``match_count`` task (how many attributes the objects share, one head) or
   the labelled extra ``subroutines`` (one head per subroutine); heads dropped
   afterwards; then training on the compound task ("train").
3. **Mask search** ("mask", one sub-stream per network × subroutine × mask
   seed): for each subroutine and mask seed, continuous sparsification on that
   subroutine's training set (:func:`bindscale.studies.modularity.analysis.subroutine_modularity`),
   scored by SubDiff / AblDiff with the chance floor on both subroutine test
   sets; structural = SubDiff > 0 and AblDiff < 0.
4. **Controls**: a random mask of the same size per parameter for every found
   mask, and the same mask search on an untrained network of the same
   architecture ("random_init"): a random network can hide a subnetwork that
   solves a subroutine; only the ablation separates the cases.

Which weights are masked is fixed by ``mask.params`` (see
:class:`bindscale.studies.modularity.config.MaskConfig`): ``hidden`` — every weight matrix that
computes a hidden representation, never the readout, the token embedding,
biases or LayerNorm. Masking the readout makes AblDiff 0 (a readout both
subroutines need is kept by every mask, so its ablation breaks both); masking
the token embedding only selects input tokens, not computation.

Mask seeds differ only in the search's minibatch order (the logits start at a
constant, as in continuous sparsification), so ``mask.batch_size`` must be
below ``task.n_train`` for them to be distinct runs.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

import numpy as np
import torch
from torch import nn

from bindscale.studies.modularity.masks import accuracy, apply_mask
from bindscale.models.hooks import run_with_cache
from bindscale.models.mlp import MLPConfig, StackedMLP
from bindscale.models.transformer import Transformer
from bindscale.kit import TrialResult, batch_indices, fit_minibatches, generator, rng

from .analysis import SubroutineResult, subroutine_modularity
from .config import ModularityModelConfig, ModularityTrial
from .tasks import FACTORS, CompoundDataset, CompoundTask, make_datasets

#: Networks a mask is searched on, by their index in the "mask" seed sub-stream key.
NETS = ("trained", "untrained")


class CompoundNet(nn.Module):
    """A base network mapping a batch of scenes to one binary logit each (``(N,)``; > 0 means "A and B").

    Subclasses set ``view`` (the :class:`~bindscale.studies.modularity.tasks.CompoundDataset`
    input view they read) and ``feature_dim``, and implement :meth:`forward`,
    :meth:`features` and :meth:`mask_names`.
    """

    view: str
    feature_dim: int

    def features(self, x: torch.Tensor) -> torch.Tensor:  # pragma: no cover - abstract
        """Last hidden representation ``(N, feature_dim)`` (pretraining heads read it)."""
        raise NotImplementedError

    def mask_names(self, which: str) -> list[str]:  # pragma: no cover - abstract
        """Parameter names masked for ``mask.params`` = ``which`` ("hidden" or "all")."""
        raise NotImplementedError

    def n_params(self) -> int:
        return sum(p.numel() for p in self.parameters())


class MLPNet(CompoundNet):
    """:class:`~bindscale.models.mlp.StackedMLP` with one trial on the one-hot view ``(N, D)``.

    Weight matrices ``net.weights.0`` (input → hidden 0) … ``net.weights.{depth}``
    (the readout). "hidden" masks ``weights.0 .. weights.{depth-1}``; "all" adds the readout.
    """

    view = "onehot"

    def __init__(self, m: ModularityModelConfig, in_dim: int, generator: torch.Generator):
        super().__init__()
        # PyTorch's default nn.Linear initialisation, as in Lepori et al.'s (PyTorch) code; the hyperteacher
        # students' LeCun normal follows a different source (flax). With LeCun normal no width-64 network
        # learned the compound task from scratch in the default study (0 of 8 seeds at held-out acc >= 0.95).
        cfg = MLPConfig(width=m.width, depth=m.depth, activation=m.activation, init="torch_uniform")
        self.net = StackedMLP(cfg, code_dim=in_dim, x_dim=0, out_dim=1, n_modules=1, gens=[generator])
        self.depth, self.feature_dim = m.depth, m.width

    def _inputs(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        # (N, D) → code (1, N, D), no per-row inputs (1, N, 1, 0); the stack outputs (1, N, 1, 1)
        return x[None], x.new_zeros(1, len(x), 1, 0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(*self._inputs(x)).reshape(-1)

    def features(self, x: torch.Tensor) -> torch.Tensor:
        last = f"hook_hidden.{self.depth - 1}"
        _, cache = run_with_cache(self.net, *self._inputs(x), names=[last], detach=False)
        return cache[last].reshape(len(x), -1)

    def mask_names(self, which: str) -> list[str]:
        n = self.depth + (which == "all")
        return [f"net.weights.{i}" for i in range(n)]


class TransformerNet(CompoundNet):
    """:class:`~bindscale.models.transformer.Transformer` on the scene tokens ``(N, 4)``.

    The vocabulary is the scene's plus two answer tokens ("no", "yes"); the
    logit is ``logit[yes] − logit[no]`` at the last position (a two-class
    softmax over the answer tokens, written as one binary logit). "hidden"
    masks every block's attention (``qkv``, ``proj``) and MLP (``fc``, ``proj``)
    weight matrices; "all" adds the token embedding and the unembedding head.
    """

    view = "tokens"

    def __init__(self, m: ModularityModelConfig, vocab_size: int, generator: torch.Generator):
        super().__init__()
        self.net = Transformer(vocab_size + 2, m.depth, m.width, m.n_heads, m.mlp_ratio, max_len=8,
                               generator=generator)
        self.no, self.yes = vocab_size, vocab_size + 1
        self.feature_dim = m.width

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        last = self.net(tokens)[:, -1]  # (N, V)
        return last[:, self.yes] - last[:, self.no]

    def features(self, tokens: torch.Tensor) -> torch.Tensor:
        n = self.net.n_layers
        last = f"blocks.{n - 1}.hook_resid_post"  # the stream after the last block, before ln_f
        # Patterns hooked (not read) so attention runs explicitly, the computation the features were fixed with.
        patterns = [f"blocks.{l}.attn.hook_pattern" for l in range(n)]
        _, cache = run_with_cache(self.net, tokens, names=[last, *patterns], detach=False)
        return self.net.ln_f(cache[last][:, -1])

    def mask_names(self, which: str) -> list[str]:
        names = [f"net.blocks.{i}.{w}.weight" for i in range(self.net.n_layers)
                 for w in ("attn.qkv", "attn.proj", "mlp.fc", "mlp.proj")]
        return names + (["net.embed.weight", "net.head.weight"] if which == "all" else [])


def build_net(trial: ModularityTrial, stream: str = "init") -> CompoundNet:
    """The trial's base network, initialised from ``stream`` ("init"; "random_init" for the untrained control)."""
    task = CompoundTask(trial.task.n_shapes, trial.task.n_colours)
    g = generator(trial.seed, stream)
    if trial.model.architecture == "mlp":
        return MLPNet(trial.model, task.dim, g)
    return TransformerNet(trial.model, task.vocab_size, g)


def make_data(trial: ModularityTrial) -> dict[str, CompoundDataset]:
    """Every dataset of the trial (keys of :data:`bindscale.studies.modularity.tasks.DATASETS`), from the "datasets" stream."""
    t = trial.task
    fractions = (t.base_fraction, t.mask_fraction, 1.0 - t.base_fraction - t.mask_fraction)
    return make_datasets(CompoundTask(t.n_shapes, t.n_colours), rng(trial.seed, "datasets"), t.n_train,
                         t.n_test, fractions)


def _fit(params: list[nn.Parameter], loss_of: Callable[[torch.Tensor], torch.Tensor], n: int, steps: int,
         trial: ModularityTrial, generator: torch.Generator, device, on_step=None) -> dict:
    # ``train.precision`` applies here (pretraining and compound training; the mask search stays fp32); ``auto``
    # is fp32 for these networks: bf16 was not measured for them.
    tr = trial.train
    idx = batch_indices(n, steps, tr.batch_size, generator)
    return fit_minibatches(params, lambda step, rows: loss_of(rows), idx, lr=tr.lr, weight_decay=tr.weight_decay,
                           warmup_steps=min(tr.warmup_steps, steps // 2), grad_clip=tr.grad_clip, device=device,
                           on_step=on_step, precision=tr.precision)


def pretrain(net: CompoundNet, data: dict[str, CompoundDataset], trial: ModularityTrial, device="cpu") -> dict:
    """Train ``net`` (in place) on the pretraining task of ``trial.pretrain.kind``, then drop its head(s).

    Both kinds read the rows of ``pretrain_A`` and ``pretrain_B`` (each balanced over the four
    (A, B) kinds, drawn from the base network's part of the scene space) through linear heads
    on :meth:`CompoundNet.features`; head weights and the minibatch order come from the
    "pretrain" stream.

    - ``match_count`` — the generic condition. One 3-way softmax head predicts how many
      attributes the two objects share, ``A + B`` ∈ {0, 1, 2}. Why this task: Lepori, Serre,
      Pavlick (2023, "Break It Down") compare models pretrained in the ordinary way (ImageNet
      classification, language modelling: a related task on the same kind of input that never
      names the subroutines) with models trained from scratch. The match count is such a
      related task on the same scenes and relations, but it has a single head and is never told
      *which* attribute matched: its label is solved by one "amount of match" direction as well
      as by two separate detectors, so it does not build a per-subroutine split into the last
      layer. (A self-supervised masked-attribute task would be the other candidate; it needs a
      mask token the transformer's vocabulary does not have.)
    - ``subroutines`` — the labelled extra: rows of ``pretrain_A`` are scored by head 0 on A's
      truth value, rows of ``pretrain_B`` by head 1 on B's. Two heads that each need one
      subroutine linearly readable from the last hidden layer nearly build the result in.

    Returns:
        :func:`~bindscale.train.loop.fit_minibatches`' summary plus ``acc`` (head accuracy on the
        whole pretraining data) and, for ``subroutines``, ``acc_A`` / ``acc_B`` per head.

    Raises:
        ValueError: ``trial.pretrain.kind`` is "none".
    """
    kind = trial.pretrain.kind
    if kind == "none":
        raise ValueError("pretrain() needs a pretraining kind, got 'none'")
    g = generator(trial.seed, "pretrain")
    d = net.feature_dim
    n_out = 3 if kind == "match_count" else 2
    bound = 1.0 / math.sqrt(d)
    w = nn.Parameter(((2 * torch.rand(d, n_out, generator=g) - 1) * bound).to(device))
    b = nn.Parameter(torch.zeros(n_out, device=device))
    parts = [data[f"pretrain_{f}"] for f in FACTORS]
    x = torch.cat([p.xy(net.view)[0] for p in parts]).to(device)
    head = torch.cat([torch.full((len(p),), i, dtype=torch.long) for i, p in enumerate(parts)]).to(device)
    if kind == "match_count":
        y = torch.cat([p.a.long() + p.b.long() for p in parts]).to(device)

        def predict(rows: torch.Tensor) -> torch.Tensor:
            return net.features(x[rows]) @ w + b  # (n, 3) class logits

        def loss_of(rows: torch.Tensor) -> torch.Tensor:
            return nn.functional.cross_entropy(predict(rows), y[rows])

        def correct(rows: torch.Tensor) -> torch.Tensor:
            return (predict(rows).argmax(1) == y[rows]).float()
    else:
        y = torch.cat([p.labels for p in parts]).to(device).float()

        def predict(rows: torch.Tensor) -> torch.Tensor:
            return (net.features(x[rows]) @ w + b).gather(1, head[rows, None]).squeeze(1)

        def loss_of(rows: torch.Tensor) -> torch.Tensor:
            return nn.functional.binary_cross_entropy_with_logits(predict(rows), y[rows])

        def correct(rows: torch.Tensor) -> torch.Tensor:
            return ((predict(rows) > 0).float() == y[rows]).float()

    out = _fit(list(net.parameters()) + [w, b], loss_of, len(y), trial.pretrain.steps, trial, g, device)
    with torch.no_grad():
        ok = correct(torch.arange(len(y), device=device))
    out["acc"] = float(ok.mean())
    if kind == "subroutines":
        for i, f in enumerate(FACTORS):
            out[f"acc_{f}"] = float(ok[head == i].mean())
    return out


def train_compound(net: CompoundNet, data: dict[str, CompoundDataset], trial: ModularityTrial, device="cpu",
                   on_step=None) -> dict:
    """Train ``net`` (in place) on the compound training set ("train" stream for the minibatch order)."""
    x, y = (v.to(device) for v in data["compound_train"].xy(net.view))
    y = y.float()

    def loss_of(rows: torch.Tensor) -> torch.Tensor:
        return nn.functional.binary_cross_entropy_with_logits(net(x[rows]), y[rows])

    return _fit(list(net.parameters()), loss_of, len(y), trial.train.steps, trial, generator(trial.seed, "train"),
                device, on_step)


def search_masks(net: CompoundNet, data: dict[str, CompoundDataset], trial: ModularityTrial, which_net: str,
                 n_seeds: int, device="cpu", random_control: bool = True) -> list[dict]:
    """Break It Down's test of both subroutines of ``net``, ``n_seeds`` mask seeds each.

    Args:
        which_net: "trained" or "untrained": the network's index in the "mask" sub-stream key
            ``(net, subroutine, mask seed)``, so the two networks never share a minibatch order.

    Returns:
        One dict per (subroutine, mask seed): ``net``, ``subroutine``, ``mask_seed``, the
        scalars of :class:`~bindscale.studies.modularity.analysis.SubroutineResult`, ``binary_fraction``
        (share of weights whose final soft mask is within 0.01 of the hard one) and
        ``abl_yes_target`` / ``abl_yes_other`` (share of "yes" answers of the ablated model
        on each test set: near 0 or 1 means the ablation left a constant answer).
    """
    mk = trial.mask
    names = net.mask_names(mk.params)
    sets = {f: data[f"sub_{f}_test"].xy(net.view) for f in FACTORS}
    sets = {f: (x.to(device), y.to(device)) for f, (x, y) in sets.items()}
    runs = []
    for i, f in enumerate(FACTORS):
        other = FACTORS[1 - i]
        train = tuple(v.to(device) for v in data[f"sub_{f}_train"].xy(net.view))
        for s in range(n_seeds):
            gen = generator(trial.seed, "mask", key=(NETS.index(which_net), i, s))
            res: SubroutineResult = subroutine_modularity(
                net, names, None, train, sets[f], sets[other], subroutine=f, chance=data[f"sub_{f}_test"].chance,
                mask_generator=gen, random_control=random_control, lambda_l0=mk.lambda_l0, steps=mk.steps,
                lr=mk.lr, beta_end=mk.beta_end, batch_size=mk.batch_size,
            )
            row = {"net": which_net, "mask_seed": s, **res.metrics(), "binary_fraction": res.mask.binary_fraction()}
            # Why an ablation fails: a constant answer puts it at chance on both sets.
            ablated = apply_mask(net, res.mask.masks, complement=True)
            with torch.no_grad():
                for key, g in (("target", f), ("other", other)):
                    row[f"abl_yes_{key}"] = float((ablated(sets[g][0]) > 0).float().mean())
            runs.append(row)
    return runs


def noise_tolerance(n_test: int) -> float:
    """Two standard errors of the difference of two accuracies near chance on ``n_test`` rows each.

    ``2 √(0.25/n + 0.25/n)``: an ablated model at chance on both test sets gives an
    AblDiff of this size in either direction about one time in twenty.
    """
    return 2.0 * math.sqrt(0.5 / n_test)


def summarise(runs: list[dict], tolerance: float = 0.0) -> dict[str, float]:
    """Per-trial scalars from the mask runs (see the module docstring and :func:`run_trial`).

    For the trained network, per subroutine ``f`` and pooled over both (no suffix):
    ``sub_diff_f``, ``abl_diff_f`` (means over mask seeds), ``frac_structural_f``
    (share of mask seeds meeting both criteria, SubDiff > 0 and AblDiff < 0),
    ``frac_robust_f`` (share with SubDiff > ``tolerance`` and AblDiff < −``tolerance``:
    beyond test-set noise), ``density_f``, ``mask_acc_f``, ``abl_yes_f`` (the ablated
    model's "yes" rate over both test sets); the random-mask control ``random_*`` and
    the untrained control ``untrained_*`` of the scores and shares (NaN when not run).
    """
    out: dict[str, float] = {}

    def put(prefix: str, rows: list[dict], src: str = "") -> None:
        for f in (*FACTORS, None):
            sel = [r for r in rows if f is None or r["subroutine"] == f]
            suffix = "" if f is None else f"_{f}"
            vals = {
                "sub_diff": [r[f"{src}sub_diff"] for r in sel],
                "abl_diff": [r[f"{src}abl_diff"] for r in sel],
                "frac_structural": [float(r[f"{src}structural"]) for r in sel],
                "frac_robust": [float(r[f"{src}sub_diff"] > tolerance and r[f"{src}abl_diff"] < -tolerance)
                                for r in sel],
            }
            if not src:
                vals |= {"density": [r["density"] for r in sel], "mask_acc": [r["mask_accuracy"] for r in sel],
                         "abl_yes": [(r["abl_yes_target"] + r["abl_yes_other"]) / 2 for r in sel]}
            for k, v in vals.items():
                out[f"{prefix}{k}{suffix}"] = float(np.mean(v)) if v else math.nan

    trained = [r for r in runs if r["net"] == "trained"]
    put("", trained)
    put("random_", trained, src="random_")
    put("untrained_", [r for r in runs if r["net"] == "untrained"])
    return out


def untrained_model(trial: ModularityTrial) -> CompoundNet:
    """The trial's base network as :func:`run_trial` initialises it ("init" stream), on the CPU."""
    return build_net(trial, "init")


def task_family(trial: ModularityTrial, device: str | torch.device = "cpu") -> dict[str, CompoundDataset]:
    """The trial's data as :func:`run_trial` builds it (:func:`make_data`: dataset name → dataset; each
    dataset's ``.xy(view)`` gives inputs and labels; ``device`` is unused)."""
    return make_data(trial)


def run_trial(trial: ModularityTrial, device: str | torch.device = "cpu",
              progress: Callable[[int], None] | None = None, return_models: bool = False) -> TrialResult:
    """Train, search masks and score one modularity trial; a non-finite loss gives status ``diverged``.

    Metrics: ``n_params``; ``base_acc_train`` / ``base_acc_test`` (compound task),
    ``base_acc_sub_A`` / ``base_acc_sub_B`` (subroutine test sets); ``final_loss``;
    with pretraining ``pretrain_loss``, ``pretrain_acc`` (and ``pretrain_acc_A`` / ``pretrain_acc_B``
    for the subroutine heads);
    ``noise_tolerance`` (:func:`noise_tolerance` of the subroutine test sets) and the
    summary of :func:`summarise`; ``n_masked`` (weights under the mask);
    ``runs`` (every mask run, a list of dicts) and ``timings``.

    ``return_models``: also hand back the trained base network (``TrialResult.model``, a
    :class:`CompoundNet` in eval mode; the mask search leaves its weights alone); the metrics
    are the same either way.
    """
    t0 = time.perf_counter()
    data = make_data(trial)
    net = build_net(trial, "init").to(device)
    kept = {"model": net} if return_models else {}
    metrics: dict = {"n_params": net.n_params(),
                     "n_masked": sum(dict(net.named_parameters())[n].numel() for n in net.mask_names(trial.mask.params))}
    if trial.pretrain.kind != "none":
        pre = pretrain(net, data, trial, device)
        metrics |= {"pretrain_loss": pre["final_loss"], "pretrain_acc": pre["acc"]}
        metrics |= {f"pretrain_acc_{f}": pre[f"acc_{f}"] for f in FACTORS if f"acc_{f}" in pre}
        if pre["status"] != "ok":
            return TrialResult(status=pre["status"], diverged_step=pre["diverged_step"], metrics=metrics,
                               **_eval_mode(kept))
    fit = train_compound(net, data, trial, device, on_step=(lambda step, loss: progress(1)) if progress else None)
    metrics |= {"final_loss": fit["final_loss"], "curve_steps": [st for st, _ in fit["loss_curve"]],
                "curve_loss": [loss for _, loss in fit["loss_curve"]]}
    if fit["status"] != "ok":
        return TrialResult(status=fit["status"], diverged_step=fit["diverged_step"], metrics=metrics,
                           **_eval_mode(kept))
    t_train = time.perf_counter() - t0
    for key, name in (("base_acc_train", "compound_train"), ("base_acc_test", "compound_test"),
                      ("base_acc_sub_A", "sub_A_test"), ("base_acc_sub_B", "sub_B_test")):
        metrics[key] = accuracy(net, None, tuple(v.to(device) for v in data[name].xy(net.view)))
    runs = search_masks(net, data, trial, "trained", trial.mask.n_mask_seeds, device)
    t_mask = time.perf_counter() - t0 - t_train
    if trial.mask.control_mask_seeds:
        control = build_net(trial, "random_init").to(device)
        runs += search_masks(control, data, trial, "untrained", trial.mask.control_mask_seeds, device,
                             random_control=False)
    metrics["noise_tolerance"] = noise_tolerance(trial.task.n_test)
    metrics |= summarise(runs, metrics["noise_tolerance"])
    metrics["runs"] = runs
    metrics["timings"] = {"train_s": t_train, "mask_s": t_mask,
                          "control_s": time.perf_counter() - t0 - t_train - t_mask}
    return TrialResult(status="ok", metrics=metrics, **_eval_mode(kept))


def _eval_mode(kept: dict) -> dict:
    if kept:
        kept["model"].eval()
    return kept


def run_group(trials: list[ModularityTrial], device: str | torch.device = "cpu",
              progress: Callable[[int], None] | None = None, return_models: bool = False) -> list[TrialResult]:
    """Trials one after another (modularity trials are not stacked); ``return_models``: see :func:`run_trial`."""
    return [run_trial(t, device, progress, return_models) for t in trials]
