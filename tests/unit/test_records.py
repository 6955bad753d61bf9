import errno
import json
from pathlib import Path

import pytest

from bindscale.studies.scaling.config import TrialConfig
from bindscale.store.records import load_records, read_record, record_path, write_record
from bindscale.store.storage import RunStore, StorageError
from bindscale.run.planner import pending_trials


def _rec(trial, status="ok"):
    return {"trial_id": trial.trial_id, "status": status, "config": trial.flat(), "metrics": {"r2_heldout": float("nan")}}


def test_records_are_strict_json_shared_and_leave_no_temp_files(tmp_path):
    t = TrialConfig(seed=3)
    path = Path(write_record(tmp_path, _rec(t)))
    assert str(path) == record_path(tmp_path, t.trial_id)
    data = json.loads(path.read_text(), parse_constant=lambda c: (_ for _ in ()).throw(ValueError(c)))
    assert data["metrics"]["r2_heldout"] is None  # NaN is not JSON
    assert oct(path.stat().st_mode & 0o777) == "0o644"
    assert [p.name for p in path.parent.iterdir()] == [path.name]


def test_truncated_or_misnamed_records_are_rerun(tmp_path, capsys):
    trials = [TrialConfig(seed=s) for s in range(4)]
    for t in trials:
        write_record(tmp_path, _rec(t, status="failed" if t.seed == 3 else "ok"))
    p = Path(record_path(tmp_path, trials[0].trial_id))
    p.write_text(p.read_text()[:40])  # truncated
    q = Path(record_path(tmp_path, trials[1].trial_id))
    q.write_text(json.dumps(_rec(trials[2])))  # someone else's record under this name
    assert read_record(tmp_path, trials[0].trial_id) is None and read_record(tmp_path, trials[1].trial_id) is None
    assert "warning: ignoring unreadable record" in capsys.readouterr().err
    todo, have = pending_trials(trials, tmp_path)
    # 0 corrupt, 1 misnamed, 3 failed → re-run; 2 is done.
    assert sorted(t.seed for t in todo) == [0, 1, 3]
    assert set(load_records(tmp_path)) == {trials[2].trial_id, trials[3].trial_id}


def test_records_on_an_fsspec_url_round_trip_and_are_validated_on_read(capsys):
    url = "memory://bindscale-test-records/run"
    trials = [TrialConfig(seed=s) for s in range(3)]
    for t in trials:
        write_record(url, _rec(t))
    store = RunStore(url)
    assert store.list_temporaries("records") == []
    store.write_bytes(f"records/{trials[0].trial_id}.json", b'{"trial_id": ')  # corrupt
    assert set(load_records(url)) == {trials[1].trial_id, trials[2].trial_id}
    assert f"ignoring unreadable record {url}/records/{trials[0].trial_id}.json" in capsys.readouterr().err
    todo, _ = pending_trials(trials, url)
    assert [t.seed for t in todo] == [0]


@pytest.mark.parametrize("code, why", [(errno.ENOSPC, "no space left on device"), (errno.EACCES, "permission denied")])
def test_a_failed_write_is_one_clear_error_and_leaves_no_file(tmp_path, monkeypatch, code, why):
    t = TrialConfig(seed=1)
    write_record(tmp_path, _rec(t, status="failed"))
    before = Path(record_path(tmp_path, t.trial_id)).read_bytes()

    def full(fd):
        raise OSError(code, "simulated")

    monkeypatch.setattr("bindscale.store.storage.os.fsync", full)
    with pytest.raises(StorageError, match=f"cannot write .*{t.trial_id}.json: {why}$"):
        write_record(tmp_path, _rec(t, status="ok"))
    # The old record is intact and no temporary file is left behind.
    assert Path(record_path(tmp_path, t.trial_id)).read_bytes() == before
    assert sorted(p.name for p in (tmp_path / "records").iterdir()) == [f"{t.trial_id}.json"]


def test_temporaries_of_a_killed_writer_are_found_and_removed(tmp_path):
    from bindscale.store.storage import remove_temporaries

    t = TrialConfig(seed=2)
    write_record(tmp_path, _rec(t))
    (tmp_path / "records" / f".{t.trial_id}.json.abc123.tmp").write_text('{"trial_id"')  # killed mid-write
    store = RunStore(tmp_path)
    assert store.list_temporaries("records") == [f".{t.trial_id}.json.abc123.tmp"]
    assert remove_temporaries(store, "records") == 1
    assert sorted(p.name for p in (tmp_path / "records").iterdir()) == [f"{t.trial_id}.json"]


@pytest.mark.parametrize("url, why", [("file://", "names no directory"), ("zip://x", "cannot open storage")])
def test_unusable_locations_are_one_storage_error(url, why):
    with pytest.raises(StorageError, match=why):
        RunStore(url)
