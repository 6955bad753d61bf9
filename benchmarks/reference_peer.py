"""Drive the headline paper's own reference code as a speed peer; run by ``jax_peer.py``.

The reference implementation of Redhardt, Schug, Akram et al. (2025), "Scale leads to compositional
generalization" (arXiv 2507.07207; github.com/smonsays/scale-compositionality: JAX, flax, optax) is not
vendored and
nothing is downloaded: the user points ``jax_peer.py --reference-dir DIR --reference-python PATH`` at a
checkout and at a Python that has its dependencies (README, "Against JAX"). This file runs under that
Python, imports the checkout's ``compscale`` package and ``run.py``, and never imports torch or bindscale.

Per-model throughput (``serve``): the experiment is built by the reference's own
``run.setup_experiment`` from its own ``configs/teacher.py`` (hyperteacher task, MLP policy, its
optimizer chain), with the fields the benchmark matches to bindscale's trial replaced (MLP width and
depth, batch, learning rate, weight decay, clipping, hold-out fraction); the timed loop is the body of
the reference's ``Experiment.run``: ``train_step`` (its jitted step) on each batch of its own train
loader (its jitted sampler), without the logging and evaluation that ``run`` does every
``log_every`` steps. After ``warm_steps`` steps (the first compiles) the loop runs in chunks, blocking
on the parameters after each, until ``window_s`` wall seconds have passed; the figures are steps per
wall second and per CPU second of this process (``time.process_time``: all its threads).

A whole trial as the reference's users run it is ``python run.py --config configs/teacher.py
--config.… `` in a fresh process; ``jax_peer.py`` builds that command itself (:func:`run_py_command`
there) and does not come through here.

Protocol: one JSON request per line on stdin, one JSON answer per line on stdout (logging goes to
stderr). Requests: ``{"op": "throughput", "width", "depth", "batch_tasks", "lr", "weight_decay",
"grad_clip", "holdout", "warm_steps", "warm_s", "window_s", "seed"}``.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import json
import os
import sys
from pathlib import Path

from windows import warm_and_time  # this script's folder is on sys.path


def load_reference(ref: Path):
    """Import the checkout's ``run.py`` (its ``setup_experiment``) and ``configs/teacher.py``.

    Raises:
        FileNotFoundError: ``ref`` lacks ``run.py``, ``configs/teacher.py`` or ``compscale/``.
    """
    for need in ("run.py", "configs/teacher.py", "compscale/experiment.py"):
        if not (ref / need).is_file():
            raise FileNotFoundError(f"{ref / need} not found: --reference-dir must be a checkout of "
                                    "smonsays/scale-compositionality")
    sys.path.insert(0, str(ref))
    mods = []
    for name, path in (("reference_run", ref / "run.py"), ("reference_teacher_config", ref / "configs/teacher.py")):
        spec = importlib.util.spec_from_file_location(name, path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        mods.append(mod)
    return mods


def matched_config(teacher_cfg, req: dict, steps: int):
    """The reference's own hyperteacher config with the fields matched to bindscale's trial replaced.

    Left as the reference has them (and said so in README): task distribution ``discrete``, identity
    latent encoding, teacher 16 → 16 → 16 with bias, 16 samples per task, constant learning rate,
    weight decay masked off biases, flax's default init.
    """
    cfg = teacher_cfg.get_config()
    B = int(req["batch_tasks"])
    cfg = dataclasses.replace(
        cfg, batch_size=B, seed=int(req.get("seed", 0)), logger_types=(), log_every=10**9,
        model=dataclasses.replace(cfg.model, d_mlp=int(req["width"]), num_hidden_layers=int(req["depth"])),
        optimizer=dataclasses.replace(cfg.optimizer, learning_rate=float(req["lr"]),
                                      weight_decay=float(req["weight_decay"]),
                                      clip_by_global_norm=req.get("grad_clip")),
        dataset=dataclasses.replace(cfg.dataset, num_train=B * steps, frac_ood=float(req.get("holdout", 0.25))),
        callbacks=dataclasses.replace(cfg.callbacks, mlp_probing=False))  # no callback runs in the timed loop
    return cfg


_BUILT: dict = {}


def throughput(ref_run, teacher_cfg, req: dict) -> dict:
    """One wall-clock window of the reference's train loop (see the module docstring).

    Returns steps, ``wall_s``, ``cpu_s`` (this process, all threads), ``steps_per_s``,
    ``steps_per_cpu_s``, ``cpu_share`` (CPU-s per wall-s: the cores it kept busy), ``warm_steps`` and
    ``warm_s`` (compilation included on the first request of a shape).
    """
    import jax

    key = (req["width"], req["depth"], req["batch_tasks"], req.get("grad_clip"), req.get("holdout", 0.25))
    if key not in _BUILT:
        exp = ref_run.setup_experiment(matched_config(teacher_cfg, req, 10**7), (), ())
        state = exp.reset(jax.random.key(int(req.get("seed", 0))))
        _BUILT[key] = [exp, state, iter(exp.train_loader)]
    entry = _BUILT[key]
    exp, it = entry[0], entry[2]

    def run(n: int) -> None:
        state = entry[1]
        for _ in range(n):
            state, _metrics = exp.train_step(state, next(it))
        jax.block_until_ready(state.params)
        entry[1] = state

    return warm_and_time(run, req["warm_steps"], req["warm_s"], req["window_s"])


def serve(ref: Path) -> None:
    import jax

    ref_run, teacher_cfg = load_reference(ref)
    print(json.dumps({"ready": True, "jax": jax.__version__, "devices": str(jax.devices()),
                      "affinity": sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
                      "python": sys.version.split()[0]}), flush=True)
    for line in sys.stdin:
        req = json.loads(line)
        if req["op"] != "throughput":
            raise ValueError(f"unknown op {req['op']!r}")
        print(json.dumps(throughput(ref_run, teacher_cfg, req)), flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reference-dir", type=Path, required=True)
    ap.add_argument("op", choices=["serve"])
    args = ap.parse_args()
    # run.py's absl flags are defined at import; nothing here parses them. Keep wandb offline whatever
    # the config says (the matched config asks for no logger at all).
    os.environ.setdefault("WANDB_MODE", "disabled")
    sys.argv = sys.argv[:1]
    serve(args.reference_dir.resolve())


if __name__ == "__main__":
    main()
