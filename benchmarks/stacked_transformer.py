"""Per-trial training steps/s of the stacked transformer against the per-trial loop, at the subgraphs shapes.

Both sides train on the subgraphs study's own data (max-sum non-adjacent subsequence with the DP-table
scratchpad, 4000 training examples per seed, batch 64, AdamW with clipping, one torch thread) through
bindscale's own trainers:

- ``plain``: :func:`bindscale.train.loop.train_seq_model` on one :class:`~bindscale.models.transformer.Transformer`
  (what every transformer study ran per trial before stacking);
- ``stack T``: :func:`bindscale.train.loop.train_stacked_seq_model` on a
  :class:`~bindscale.models.stacked_transformer.StackedTransformer` of ``T`` trials (seeds 0..T-1, each its
  own data and batch order); per-trial steps/s = T × stack steps/s.

A measurement times the steps after ``--warmup`` steps of one call (so set-up and the first, slower steps
are left out). The sides alternate within each round (order rotated per round), so a change in the
machine's load falls on all of them; the median and best over rounds are reported, with the load average
before and after each measurement and the CPU model (lscpu).

    python benchmarks/stacked_transformer.py                     # 3x128 and 2x32, T = 1, 4, 8
    python benchmarks/stacked_transformer.py --shapes 3x128 --stacks 1,4 --steps 10 --rounds 2
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import torch

from bindscale.core import seeding
from bindscale.models.stacked_transformer import StackedTransformer
from bindscale.models.transformer import Transformer
from bindscale.train.loop import train_seq_model, train_stacked_seq_model
from bindscale.studies.subgraphs import trial as sg
from bindscale.studies.subgraphs.config import SubgraphsTrial
from bindscale.studies.subgraphs.tasks import charvocab

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import load, lscpu  # noqa: E402  (the benchmarks folder, run as a script or imported)


def trial_of(shape: str, seed: int) -> SubgraphsTrial:
    layers, d = (int(x) for x in shape.split("x"))
    return SubgraphsTrial.model_validate({"model": {"n_layers": layers, "d_model": d, "n_heads": 4}, "seed": seed})


def timed(call, warmup: int, steps: int) -> float:
    """Seconds per step of ``call(on_step)`` over the steps after ``warmup``."""
    stamps: dict[int, float] = {}

    def on_step(*args):
        step = args[-2]
        if step not in stamps:
            stamps[step] = time.perf_counter()

    call(on_step)
    return (stamps[warmup + steps] - stamps[warmup]) / steps


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shapes", default="3x128,2x32", help="n_layers x d_model (4 heads), comma-separated; "
                    "3x128 is the subgraphs base model, 2x32 its smallest deciding size")
    ap.add_argument("--stacks", default="1,4,8")
    ap.add_argument("--steps", type=int, default=20, help="timed steps per measurement")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", default="stacked_transformer.json", help="where the JSON goes")
    args = ap.parse_args()
    torch.set_num_threads(1)
    stacks = [int(x) for x in args.stacks.split(",")]
    n_steps = args.warmup + args.steps
    result = {"machine": lscpu(), "torch": torch.__version__, "threads": 1, "load_start": load(),
              "steps": args.steps, "warmup": args.warmup, "rounds": args.rounds, "shapes": {}}
    print(json.dumps(result["machine"]), "load", result["load_start"], flush=True)
    for shape in args.shapes.split(","):
        trials = [trial_of(shape, s) for s in range(max(stacks))]
        data = []
        for t in trials:
            train, test, _ = sg.make_data(t)
            data.append((charvocab.pack(train), sg.model_max_len(train, test)))
        tr = trials[0].train
        kw = dict(steps=n_steps, batch_size=tr.batch_size, lr=tr.lr, weight_decay=tr.weight_decay,
                  warmup_steps=tr.warmup_steps, grad_clip=tr.grad_clip)

        def model(t):
            return sg.build_model(trials[t], max(m for _, m in data))

        def plain(on_step):
            return train_seq_model(model(0), *data[0][0], generator=seeding.generator(0, "train"),
                                   on_step=on_step, **kw)

        def stack(T):
            def run(on_step):
                st = StackedTransformer.from_members([model(t) for t in range(T)])
                return train_stacked_seq_model(st, [d for d, _ in data[:T]],
                                               generators=[seeding.generator(t, "train") for t in range(T)],
                                               on_step=lambda t, s, v: on_step(s, v) if t == 0 else None, **kw)
            return run

        sides = {"plain": (plain, 1)} | {f"stack{T}": (stack(T), T) for T in stacks}
        runs: dict[str, list[dict]] = {k: [] for k in sides}
        names = list(sides)
        for r in range(args.rounds):
            for name in names[r % len(names):] + names[:r % len(names)]:
                fn, T = sides[name]
                before = load()
                sec = timed(fn, args.warmup, args.steps)
                runs[name].append({"per_trial_steps_per_s": T / sec, "step_seconds": sec, "load": [before, load()]})
                print(f"{shape} round {r} {name:7s} per-trial steps/s {T / sec:7.2f}  (step {1e3 * sec:.1f} ms, "
                      f"load {before[0]})", flush=True)
        summary = {}
        base = statistics.median(x["per_trial_steps_per_s"] for x in runs["plain"])
        for name, xs in runs.items():
            rates = [x["per_trial_steps_per_s"] for x in xs]
            summary[name] = {"median": statistics.median(rates), "best": max(rates),
                             "vs_plain_median": statistics.median(rates) / base}
        n_params = Transformer(charvocab.VOCAB_SIZE, trials[0].model.n_layers, trials[0].model.d_model, 4).n_params()
        result["shapes"][shape] = {"n_params": n_params, "batch_size": tr.batch_size,
                                   "seq_len": int(data[0][0][0].shape[1]), "summary": summary, "runs": runs}
        print(json.dumps({shape: summary}, indent=1), flush=True)
    result["load_end"] = load()
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=1))
    print("wrote", args.out)


if __name__ == "__main__":
    main()
