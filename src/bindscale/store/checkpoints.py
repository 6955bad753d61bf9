"""Trained models of a sweep: ``models/<trial_id>.pt`` beside the records (study field ``save_models: true``).

One file per trial, written by :func:`bindscale.run.jobs.run_job` *before* the trial's
record (a trial with a record then has its model file too, whatever kills the
worker), atomically through the run's :class:`~bindscale.store.storage.RunStore` like
a record. The file is :func:`torch.save` of a plain dict (safetensors is not a
dependency of bindscale, so it is not used)::

    format         1
    trial_id       the trial's id
    study          the study plugin that trained it (registry name)
    trial_config   the trial config as a JSON-able dict (its record's ``trial_config``)
    model_kwargs   what the study's model builder needs beyond the config (e.g. a transformer's ``max_len``)
    state_dict     the trained model's ``state_dict()``, on the CPU

:func:`bindscale.api.load_model` rebuilds the model from ``trial_config`` and
``model_kwargs`` with the study's ``models`` hook and loads ``state_dict``; the
file loads with ``torch.load(..., weights_only=True)``.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from bindscale.store.storage import RunStore

MODEL_DIR = "models"
FORMAT = 1


def model_name(trial_id: str) -> str:
    """Name of a trial's model file inside the run directory."""
    return f"{MODEL_DIR}/{trial_id}.pt"


def save_model(run_dir: "str | Path | RunStore", trial: Any, study: str, model: Any,
               model_kwargs: dict | None = None) -> str:
    """Atomically write ``model``'s weights and ``trial``'s config to ``models/<trial_id>.pt``; returns its path.

    Raises:
        StorageError: the file cannot be written (nothing half-written stays).
    """
    import torch

    payload = {
        "format": FORMAT,
        "trial_id": trial.trial_id,
        "study": study,
        "trial_config": trial.model_dump(mode="json"),
        "model_kwargs": dict(model_kwargs or {}),
        "state_dict": {k: v.detach().cpu() for k, v in model.state_dict().items()},
    }
    buf = io.BytesIO()
    torch.save(payload, buf)
    store = RunStore.of(run_dir)
    store.write_bytes(model_name(trial.trial_id), buf.getvalue())
    return store.where(model_name(trial.trial_id))


def read_model_file(run_dir: "str | Path | RunStore", trial_id: str) -> dict:
    """The saved payload of a trial's model (tensors on the CPU).

    Raises:
        FileNotFoundError: the run has no model file for that trial.
        ValueError: the file is not a bindscale model file.
    """
    import torch

    store = RunStore.of(run_dir)
    name = model_name(trial_id)
    if not store.exists(name):
        saved = store.list(MODEL_DIR, ".pt")
        hint = (f"{len(saved)} model file(s) there" if saved else
                "the run saved no models: set save_models: true in the study (or --set save_models=true) and run it")
        raise FileNotFoundError(f"no model file {store.where(name)} ({hint})")
    try:
        payload = torch.load(io.BytesIO(store.read_bytes(name)), map_location="cpu", weights_only=True)
    except Exception as err:  # noqa: BLE001 - an unpickling error of any kind
        raise ValueError(f"{store.where(name)} cannot be read as a bindscale model file: {type(err).__name__}: "
                         f"{str(err)[:200]}") from None
    if not isinstance(payload, dict) or payload.get("format") != FORMAT or "state_dict" not in payload:
        raise ValueError(f"{store.where(name)} is not a bindscale model file (format {FORMAT})")
    return payload
