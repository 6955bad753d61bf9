"""Training steps/s of the sequence trainer (bindscale.train.loop) in fp32 and in bf16 autocast.

A 2-layer :class:`~bindscale.models.transformer.Transformer` (2 heads, as the depth study's models) of each
``--d-models`` width, trained at the depth study's batch (32 sequences, ``depth-full.yaml``) on random
sequences of 33 positions (the length split's training length, ``bindscale.studies.depth.plan.POSITIONS``)
over a SCAN-sized vocabulary (22 tokens), with the trainer a study runs: one trial alone
(:func:`bindscale.train.loop.train_seq_model`) and a stack of ``--stack`` trials
(:func:`bindscale.train.loop.train_stacked_seq_model`; its per-trial rate is ``T`` times the stack's steps/s),
each with ``precision`` fp32 and bf16.

Timing: each side runs ``--warmup`` seconds untimed, then counts the steps finished in a ``--seconds``
wall-clock window (:class:`common.StepWindow`), with this process's CPU share over it (CPU-s / wall-s:
below 1.0 when another process took the core). The sides alternate within each round, their order
rotated per round, so a change of load falls on all of them; per side the median over rounds and the
range are printed, with the CPU model (lscpu), its AVX/AMX flags and the load averages. Nothing is
asserted: the figures depend on the machine and its load. Run it with one thread::

    OMP_NUM_THREADS=1 python benchmarks/seq_precision.py                 # d_model 128 and 256: ~2 min
    OMP_NUM_THREADS=1 python benchmarks/seq_precision.py --d-models 64 128 256 --rounds 5
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parent))
from common import StepWindow, WindowDone, load, lscpu, print_table

from bindscale.models.stacked_transformer import StackedTransformer
from bindscale.models.transformer import Transformer
from bindscale.train.loop import train_seq_model, train_stacked_seq_model

VOCAB, POSITIONS, BATCH, N_LAYERS, N_HEADS = 22, 33, 32, 2, 2


def data(seed: int, n: int = 512) -> tuple[torch.Tensor, torch.Tensor]:
    """Random sequences of ``POSITIONS + 1`` tokens, every next token scored."""
    g = torch.Generator().manual_seed(seed)
    tokens = torch.randint(1, VOCAB, (n, POSITIONS + 1), generator=g)
    mask = torch.ones_like(tokens, dtype=torch.bool)
    mask[:, -1] = False
    return tokens, mask


def model(d_model: int, seed: int) -> Transformer:
    return Transformer(VOCAB, N_LAYERS, d_model, N_HEADS, max_len=POSITIONS + 1,
                       generator=torch.Generator().manual_seed(seed))


def measure(d_model: int, T: int, precision: str, seconds: float, warmup: float, steps: int) -> tuple[float, float]:
    """(per-trial steps/s, CPU share) of one side; ``steps`` must outlast the window."""
    window = StepWindow(seconds, warmup)
    args = dict(steps=steps, batch_size=BATCH, lr=1e-3, weight_decay=0.1, warmup_steps=100, grad_clip=1.0,
                precision=precision)
    try:
        if T == 1:
            train_seq_model(model(d_model, 0), *data(0), generator=torch.Generator().manual_seed(0),
                            on_step=window, **args)
        else:
            stack = StackedTransformer.from_members([model(d_model, s) for s in range(T)])
            train_stacked_seq_model(stack, [data(s) for s in range(T)],
                                    generators=[torch.Generator().manual_seed(s) for s in range(T)],
                                    on_step=lambda t, *a: window() if t == 0 else None, **args)
    except WindowDone:
        pass
    return T * window.rate(), window.cpu / window.wall


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--d-models", type=int, nargs="+", default=[128, 256])
    ap.add_argument("--stack", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=4.0)
    ap.add_argument("--warmup", type=float, default=1.0)
    ap.add_argument("--steps", type=int, default=3000, help="steps a side is given (more than its window reaches)")
    ap.add_argument("--json", type=Path, help="also write the figures here")
    args = ap.parse_args()
    torch.set_num_threads(1)
    cpu = lscpu()
    print(f"CPU: {cpu.get('Model name', '?')} ({cpu.get('CPU(s)', '?')} CPUs; flags {cpu.get('Flags', '')})")
    print(f"torch {torch.__version__}, 1 thread; load before: {load()}")
    sides = [(T, p) for T in (1, args.stack) for p in ("fp32", "bf16")]
    out: dict = {"cpu": cpu, "torch": torch.__version__, "load_before": load(), "figures": {}}
    rows = []
    for d in args.d_models:
        got: dict = {s: [] for s in sides}
        share: dict = {s: [] for s in sides}
        for r in range(args.rounds):
            for T, p in sides[r % len(sides):] + sides[:r % len(sides)]:
                rate, frac = measure(d, T, p, args.seconds, args.warmup, args.steps)
                got[T, p].append(rate)
                share[T, p].append(frac)
        for T in (1, args.stack):
            f, b = (statistics.median(got[T, p]) for p in ("fp32", "bf16"))
            spread = {p: f"{min(got[T, p]):.3g}-{max(got[T, p]):.3g}" for p in ("fp32", "bf16")}
            rows.append([d, "alone" if T == 1 else f"stack of {T}", f, spread["fp32"], b, spread["bf16"], b / f,
                         min(share[T, "fp32"] + share[T, "bf16"])])
            out["figures"][f"d{d}_T{T}"] = {p: got[T, p] for p in ("fp32", "bf16")} | {
                "cpu_share": {p: share[T, p] for p in ("fp32", "bf16")}}
    print_table(f"per-trial training steps/s, {N_LAYERS} layers x {N_HEADS} heads, batch {BATCH} x {POSITIONS} "
                f"positions, median of {args.rounds} rounds",
                ["d_model", "trainer", "fp32", "fp32 range", "bf16", "bf16 range", "bf16/fp32", "min CPU share"], rows)
    out["load_after"] = load()
    print(f"load after: {out['load_after']}")
    if args.json:
        args.json.write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
