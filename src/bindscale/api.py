"""bindscale's Python API, for notebooks and scripts (also importable from :mod:`bindscale` itself).

Studies and runs::

    resolve_study(name_or_path, quick=False, overrides=None) -> StudyConfig
    run_study(study_or_name, out, quick=False, overrides=None, workers=None, device="auto") -> dict
    load_results(run_dir) -> pandas.DataFrame
    load_model(run_dir, trial_id, device="cpu") -> torch.nn.Module

One trial in this process::

    run_trial(config, device="cpu") -> (record: dict, model: torch.nn.Module)
    build_tasks(config, device="cpu") -> the trial's task family / data   (alias: task_family)
    build_model(config, **model_kwargs) -> torch.nn.Module                 (untrained)
    collect_activations(model, inputs, names=None) -> dict[str, Tensor]

``config`` is a trial config (``study.trials()[i]``) or a plain dict of one (a record's
``trial_config``; ``kind`` picks the study, absent = the study whose plugin sets ``implicit_kind``).
What a study returns (its model, its task family or data) is its own: its plugin's ``models`` and
``tasks`` hooks, documented in the study's ``trial`` module (``bindscale.studies.<name>.trial``).

Importing this module (or :mod:`bindscale`) does not import torch: every function
imports what it needs when called.
"""

from __future__ import annotations

import contextlib
import io
import json
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bindscale.core import registry
from bindscale.core.config import StudyConfig, TrialBase
from bindscale.core.studyfile import resolve_study as _resolve_study
from bindscale.core.errors import ConfigError

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd
    import torch

__all__ = [
    "resolve_study", "run_study", "run_trial", "load_results", "load_model", "build_tasks", "task_family",
    "build_model", "collect_activations",
]


# --------------------------------------------------------------------------- studies and runs

def resolve_study(name_or_path: str | Path, quick: bool = False,
                  overrides: Sequence[str] | Mapping[str, Any] | None = None) -> StudyConfig:
    """A validated study: a registered study's name (`bindscale list`; e.g. the headline study's) or a YAML path.

    Args:
        quick: merge the study's ``quick`` variant (``bindscale run --quick``).
        overrides: ``--set`` overrides, as ``["train.steps=50", "width=[8,16]"]`` or as a mapping
            ``{"train.steps": 50, "width": [8, 16]}`` (a list value sweeps that axis).

    Returns:
        The :class:`~bindscale.core.config.StudyConfig`; ``.trials()`` lists its trial configs.

    Raises:
        ConfigError: unknown study or field, bad value (one line, as the CLI prints it).
    """
    return _resolve_study(str(name_or_path), quick=quick, overrides=_overrides(overrides))


def _overrides(overrides: Sequence[str] | Mapping[str, Any] | None) -> list[str]:
    if overrides is None:
        return []
    if isinstance(overrides, Mapping):
        # JSON is YAML: a value comes back as itself from parse_override.
        return [f"{k}={json.dumps(v)}" for k, v in overrides.items()]
    if isinstance(overrides, str):
        return [overrides]
    return list(overrides)


def run_study(study_or_name: StudyConfig | str | Path, out: str | Path, quick: bool = False,
              overrides: Sequence[str] | Mapping[str, Any] | None = None, workers: int | None = None,
              device: str = "auto", executor: str | None = None) -> dict:
    """Run (or resume) a study into ``out`` and write its records, ``results.parquet`` and report,
    as ``bindscale run`` does; returns the summary (``summary.json``'s content).

    Args:
        study_or_name: a :class:`~bindscale.core.config.StudyConfig` (from :func:`resolve_study`) or
            what :func:`resolve_study` takes (then ``quick`` and ``overrides`` apply).
        out: the run directory (a path or an fsspec URL).
        workers: worker processes (default: one per core). From a script (not a notebook),
            more than one needs the script's code under ``if __name__ == "__main__":``
            (workers, forked from a fork server on Linux and spawned elsewhere, import the main module); ``workers=1``
            trains in this process.
        device: ``auto``, ``cpu`` or ``cuda``.
        executor: ``inline``, ``process`` or ``ray`` (default: ``process`` with more than one worker).

    Raises:
        ConfigError: a bad study, device or run directory (before anything is written);
            ``quick``/``overrides`` given with a resolved study.
    """
    from bindscale.run.runner import run_study as _run

    if isinstance(study_or_name, StudyConfig):
        if quick or overrides:
            raise ConfigError("run_study: quick and overrides apply to a study name or path; "
                              "give them to resolve_study instead")
        study = study_or_name
    else:
        study = resolve_study(study_or_name, quick=quick, overrides=overrides)
    return _run(study, out, device=device, workers=workers, executor=executor)


def load_results(run_dir: str | Path) -> "pd.DataFrame":
    """The records of a run, one row per trial (the columns of ``results.parquet``).

    Read from ``results.parquet`` when it is current (it holds the same trials with the same
    statuses as the record files), else built from the records themselves (a run still in
    progress, or stopped before its table was written). Only the trials of the run's study
    (its ``study.yaml``) are included, in the study's order; a directory of records without
    ``study.yaml`` gives all its records.

    Raises:
        ConfigError: ``run_dir`` holds neither ``study.yaml`` nor records.
    """
    import pandas as pd

    from bindscale.store.records import RECORD_DIR, load_records
    from bindscale.verdicts.results_table import records_table
    from bindscale.store.rundir import STUDY_FILE, load_run_study
    from bindscale.store.storage import RunStore

    store = RunStore.of(run_dir)
    if store.exists(STUDY_FILE):
        ids = [t.trial_id for t in load_run_study(store).trials()]
        recs = load_records(store, set(ids))
        records = [recs[i] for i in ids if i in recs]
    elif store.list(RECORD_DIR, ".json"):
        records = list(load_records(store).values())
    else:
        raise ConfigError(f"{run_dir} is not a bindscale run directory (no {STUDY_FILE}, no {RECORD_DIR}/)")
    if store.exists("results.parquet"):
        try:
            df = pd.read_parquet(io.BytesIO(store.read_bytes("results.parquet")))
        except (OSError, ValueError):
            df = None
        if (df is not None and {"trial_id", "status"} <= set(df.columns)
                and list(zip(df["trial_id"], df["status"])) == [(r["trial_id"], r["status"]) for r in records]):
            return df
    return records_table(records)


def load_model(run_dir: str | Path, trial_id: str, device: str = "cpu") -> "torch.nn.Module":
    """A trained model saved by a sweep with ``save_models: true`` (``models/<trial_id>.pt``).

    The model is rebuilt from the saved trial config with its study's model builder (as
    :func:`build_model`), its weights loaded, and put in eval mode on ``device``. Only trials
    trained while ``save_models`` was on have a file (a resumed run does not re-train trials it
    has records of).

    Raises:
        FileNotFoundError: no model file for that trial.
        ValueError: the file is not a bindscale model file.
    """
    from bindscale.store.checkpoints import read_model_file

    payload = read_model_file(run_dir, trial_id)
    model = build_model(payload["trial_config"], **payload.get("model_kwargs", {}))
    model.load_state_dict(payload["state_dict"])
    return model.to(device).eval()


# --------------------------------------------------------------------------- one trial

def _trial(config: TrialBase | Mapping[str, Any]) -> TrialBase:
    """A trial config from a config or a plain dict (its ``kind`` picks the study)."""
    if isinstance(config, TrialBase):
        return config
    if isinstance(config, Mapping):
        from bindscale.core.config import validate

        return validate(registry.for_trial(dict(config)).trial_class, dict(config), where="trial config")
    raise TypeError(f"expected a trial config or a dict of one, got {type(config).__name__}")


@contextlib.contextmanager
def _sweep_threads() -> Iterator[None]:
    """Torch threads as a sweep's worker has them (one: the same bits as the sweep), restored afterwards."""
    from bindscale.train.speed import worker_threads

    with worker_threads():
        yield


def run_trial(config: TrialBase | Mapping[str, Any], device: str = "cpu") -> tuple[dict, "torch.nn.Module"]:
    """Train and analyse one trial in this process, as a sweep would.

    Args:
        config: a trial config or a dict of one (``kind`` picks the study; absent = the ``implicit_kind`` study).
        device: ``cpu``, ``cuda`` or ``auto``.

    Returns:
        ``(record, model)``: the record a sweep writes for this trial (:func:`bindscale.run.jobs.make_record`,
        as read back from its JSON file: NaN is ``None``; ``study`` is the study plugin's name,
        ``provenance.executor`` is ``"api"``), and the trained model in eval mode (see the module
        docstring). Training uses one torch thread, as a sweep's workers do, so the metrics are
        those a sweep records for the same config (timings aside).

    Raises:
        ConfigError: an invalid config or device.
        NotImplementedError: the study's trainer cannot hand back its model.
    """
    from bindscale.store.records import json_safe
    from bindscale.run.jobs import make_record, run_group
    from bindscale.run.planner import resolve_device

    trial = _trial(config)
    try:
        dev = resolve_device(device)
    except ValueError as err:
        raise ConfigError(str(err)) from None
    registry.for_trial(trial).check_trials([trial])
    with _sweep_threads():
        result = run_group([trial], dev, None, return_models=True)[0]
    record = make_record(trial, registry.for_trial(trial).name, result, dev, "api")
    record = json.loads(json.dumps(json_safe(record), allow_nan=False))  # as a record file reads back
    return record, result.model.eval()


def build_tasks(config: TrialBase | Mapping[str, Any], device: str = "cpu") -> Any:
    """What the trial's trainer builds its data from, seeded like the trial (see the module docstring):
    its study's ``tasks`` hook (e.g. a task family to sample from, or fixed example sets).

    Raises:
        NotImplementedError: the trial's study does not expose its tasks.
    """
    trial = _trial(config)
    return registry.for_trial(trial).build_tasks(trial, device)


#: The same function under a second name (a task family is what it builds).
task_family = build_tasks


def build_model(config: TrialBase | Mapping[str, Any], **model_kwargs: Any) -> "torch.nn.Module":
    """The trial's model before training (the trial's own initialisation, on the CPU, train mode):
    what :func:`run_trial` trains and hands back.

    ``model_kwargs``: what the study's builder takes beyond the config (e.g. a transformer's ``max_len``,
    its longest sequence, else computed from the trial's data; :func:`load_model` passes
    the saved ones).

    Raises:
        NotImplementedError: the trial's study builds no models outside its trainer.
    """
    trial = _trial(config)
    return registry.for_trial(trial).build_model(trial, **model_kwargs)


# --------------------------------------------------------------------------- activations

def collect_activations(model: "torch.nn.Module", inputs: Any, names: Sequence[str] | None = None
                        ) -> "dict[str, torch.Tensor]":
    """Run ``model`` once on ``inputs`` and return its named activations (in the spirit of
    TransformerLens's ``run_with_cache``), without gradients.

    Two kinds of names:

    - **module outputs**: the output of every submodule named as in ``model.named_modules()``,
      read by a forward hook;
    - **hook points** (:class:`~bindscale.models.hooks.HookPoint` submodules, on every model of
      :mod:`bindscale.models` and of the studies), read by :func:`~bindscale.models.hooks.run_with_cache`'s
      mechanism. Their names and shapes are in each model's docstring (``activation_shapes``); to
      patch them, use :func:`~bindscale.models.hooks.run_with_hooks`.

    Names by model (``B`` tasks or sequences, ``S`` inputs per task, ``L`` tokens; a study's own
    models, such as the stacked students of ``studies/scaling``, document theirs in their module)::

        MLP (bindscale.models.mlp)           hook_input (B, S, E+I) code ‖ x; hook_hidden.{i} (B, S, width)
                                             post-activation; hook_output (B, S, O); modules input,
                                             hidden.{i}, output (the same tensors)
        Transformer (models.transformer)     modules: embed, blocks.{i}, blocks.{i}.ln1, .attn,
                                             .attn.qkv, .attn.proj, .ln2, .mlp, .mlp.fc (pre-GELU),
                                             .mlp.proj, ln_f, head (logits);
                                             hook points: hook_embed, blocks.{i}.hook_resid_pre,
                                             .attn.hook_pattern (B, H, L, L), .attn.hook_z,
                                             .hook_attn_out, .hook_resid_mid, .mlp.hook_post,
                                             .hook_mlp_out, .hook_resid_post, hook_ln_final
        CompoundNet (a study's)              MLP: net.hook_input, net.hook_hidden.{i}, net.hook_output,
                                             each (1, N, 1, ·) (a stack of one trial; module "net" on
                                             request); transformer: net.hook_embed, net.blocks.{i}.… …

    Args:
        model: any ``torch.nn.Module``.
        inputs: the forward's arguments: a tuple or list (positional), a dict (keywords), a
            batch with ``code`` and ``x`` attributes (passed as those two), or one tensor.
        names: what to return; ``None``: every leaf module that ran, and every hook point reached.

    Returns:
        Name → tensor (detached). A module run more than once keeps its last output; a module
        that did not run has no entry. Asking for a transformer's ``attn.hook_pattern`` makes that
        layer compute attention explicitly (the same result to float rounding).

    Raises:
        KeyError: a name in ``names`` that the model does not produce (the message lists those it does).
    """
    import torch

    from bindscale.models.hooks import HookPoint, hooks

    modules = dict(model.named_modules())
    wanted = None if names is None else list(dict.fromkeys(names))
    points = {n for n, m in modules.items() if isinstance(m, HookPoint)}
    leaves = {n for n, m in modules.items() if n and not any(True for _ in m.children())}
    selected = leaves if wanted is None else {n for n in wanted if n in modules}
    # HookPoints skip nn.Module's call machinery (no forward hooks): they are read by a hook of their own.
    hook_modules, hook_points = selected - points, selected & points

    found: dict[str, Any] = {}
    handles = []

    def keep(name: str):
        def hook(_mod, _args, out):
            found[name] = out.detach() if isinstance(out, torch.Tensor) else out
        return hook

    def store(name: str):
        def fn(x, _hook):
            found[name] = x.detach()
        return fn

    if hasattr(inputs, "code") and hasattr(inputs, "x") and not isinstance(inputs, torch.Tensor):
        inputs = (inputs.code, inputs.x)
    try:
        for n in hook_modules:
            handles.append(modules[n].register_forward_hook(keep(n)))
        with torch.no_grad(), hooks(model, {n: store(n) for n in hook_points}):
            if isinstance(inputs, Mapping):
                model(**inputs)
            elif isinstance(inputs, (tuple, list)):
                model(*inputs)
            else:
                model(inputs)
    finally:
        for h in handles:
            h.remove()
    if wanted is None:
        return found
    missing = [n for n in wanted if n not in found]
    if missing:
        available = sorted(collect_activations(model, inputs))
        raise KeyError(f"no activation named {', '.join(map(repr, missing))}; this model and input give: "
                       f"{', '.join(available) or 'nothing'} (and any module of model.named_modules() that runs)")
    return {n: found[n] for n in wanted}
