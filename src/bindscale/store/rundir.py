"""A run directory's study file: the name a run writes its resolved study under, and reading it back.

Layer: records/storage, beside :mod:`bindscale.store.records`. The runner writes the file; ``bindscale
report``, the answer page (:mod:`bindscale.report.answer`) and the dry run read it, so it lives below all
of them (none of them imports the runner for it). Imports nothing heavy: no torch, no pandas.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from bindscale.core.config import StudyConfig, validate
from bindscale.core.errors import ConfigError
from bindscale.store.storage import RunStore

STUDY_FILE = "study.yaml"


def load_run_study(run_dir: "str | Path | RunStore") -> StudyConfig:
    """The resolved study a run directory was made with.

    Raises:
        ConfigError: not a run directory.
    """
    store = RunStore.of(run_dir)
    path = store.where(STUDY_FILE)
    if not store.exists(STUDY_FILE):
        if store.local is not None and not store.local.exists():
            raise ConfigError(f"{run_dir} does not exist")
        raise ConfigError(f"{run_dir} is not a bindscale run directory (no {STUDY_FILE})")
    try:
        data = yaml.safe_load(store.read_text(STUDY_FILE))
    except (yaml.YAMLError, UnicodeDecodeError, OSError) as err:
        raise ConfigError(f"{path} cannot be read as YAML ({type(err).__name__}); it was written by bindscale run, "
                          "re-run that command to rewrite it") from None
    return validate(StudyConfig, data, where=str(path))
