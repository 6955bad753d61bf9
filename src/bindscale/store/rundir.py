"""A run directory's study file: the name a run writes its resolved study under, writing it (with the note when
the directory held another study), and reading it back.

Layer: records/storage, beside :mod:`bindscale.store.records`. The runner writes the file; ``bindscale
report``, the answer page (:mod:`bindscale.report.answer`) and the dry run read it, so it lives below all
of them (none of them imports the runner for it). Imports nothing heavy: no torch, no pandas.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from bindscale.core.config import StudyConfig, validate
from bindscale.core.errors import ConfigError
from bindscale.store.checkpoints import MODEL_DIR
from bindscale.store.records import RECORD_DIR
from bindscale.store.storage import RunStore, remove_temporaries

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


def study_yaml(study: StudyConfig) -> str:
    """The resolved study as YAML, as a run writes it to ``study.yaml`` (it loads back as the same study).
    Non-ASCII text stays as written (``Diego-Simón``, not ``Diego-Sim\\xF3n``)."""
    return yaml.safe_dump(study.model_dump(mode="json"), sort_keys=False, allow_unicode=True)


def replaced_study_note(held: str | None, study: StudyConfig, where: object, dry_run: bool = False) -> str | None:
    """What a run (or its ``--dry-run``) says when its directory ``where`` holds another study (``held``:
    that directory's study.yaml text, None when there is none); None when it holds none or this one.

    Compared as data, not text: a run written before non-ASCII was kept as written is the same study.
    Records are keyed by trial id, so nothing is mixed up; but the directory changes study."""
    if held is None or yaml.safe_load(held) == yaml.safe_load(study_yaml(study)):
        return None
    what = "holds a different study configuration; a run would replace it" if dry_run else \
        "held a different study configuration; it is replaced"
    return f"note: {where} {what}, records of trials not in this study stay on disk and are not reported"


def prepare_run_dir(store: RunStore, study: StudyConfig) -> tuple[str | None, int]:
    """Make ``store`` the run directory of ``study`` before its trials run: write its study file and delete
    what an interrupted run left half written. Call only under the run lock with no worker running.

    Returns ``(note, n)``: the note of :func:`replaced_study_note` (None when the directory held no study or
    this one) and how many unfinished record writes were removed (a worker killed mid-write leaves a
    temporary file, never a half record).
    """
    note = replaced_study_note(store.read_text(STUDY_FILE) if store.exists(STUDY_FILE) else None, study, store)
    store.write_text(STUDY_FILE, study_yaml(study))
    n = remove_temporaries(store, RECORD_DIR)
    remove_temporaries(store, MODEL_DIR)
    return note, n
