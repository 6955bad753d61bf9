import errno
import os

import pytest

from bindscale.core.studyfile import resolve_study
from bindscale.run.runner import run_study
from bindscale.store.storage import StorageError

from .conftest import TINY


def test_disk_full_mid_sweep_stops_with_one_error_and_keeps_finished_records(tmp_path, monkeypatch):
    study = resolve_study(str(TINY), overrides=["train.steps=5", "width=[8]", "model=mlp", "seed=[0,1]"])
    out = tmp_path / "run"
    real_fsync, calls = os.fsync, {"n": 0}

    def fsync_then_full(fd):
        calls["n"] += 1
        if calls["n"] > 2:  # study.yaml and the first record go through, then the disk is full
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_fsync(fd)

    monkeypatch.setattr("bindscale.store.storage.os.fsync", fsync_then_full)
    with pytest.raises(StorageError, match=r"cannot write .*records/.*\.json: no space left on device; the sweep "
                                           r"stopped, finished trials are kept"):
        run_study(study, out, workers=1, executor="inline")
    records = sorted(p.name for p in (out / "records").iterdir())
    assert len(records) == 1 and not records[0].startswith(".")  # no temporary file left
    monkeypatch.setattr("bindscale.store.storage.os.fsync", real_fsync)
    summary = run_study(study, out, workers=1, executor="inline")  # space freed: resume finishes
    assert summary["n_trials"] == len(study.trials())


def test_memory_urls_are_refused_for_multi_process_executors(tmp_path):
    from bindscale.core.errors import ConfigError

    study = resolve_study(str(TINY))
    with pytest.raises(ConfigError, match="memory:// filesystem lives inside one process"):
        run_study(study, "memory://bindscale-test/run", workers=2, executor="process")
