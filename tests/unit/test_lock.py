import json
import subprocess
import sys
import time

import pytest

from bindscale.store.lock import RunLock, RunLocked
from bindscale.store.storage import RunStore


def test_second_holder_is_refused_with_the_holders_name(tmp_path):
    with RunLock(tmp_path):
        with pytest.raises(RunLocked, match=r"in use by another bindscale run \(pid \d+ on .* since "):
            with RunLock(tmp_path):
                pass
    with RunLock(tmp_path):  # released on exit
        pass


def test_a_killed_holder_does_not_keep_the_lock(tmp_path):
    code = f"from bindscale.store.lock import RunLock; import time\nwith RunLock({str(tmp_path)!r}):\n    print('held', flush=True); time.sleep(60)"
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "held"
    with pytest.raises(RunLocked):
        with RunLock(tmp_path):
            pass
    proc.kill()
    proc.wait()
    time.sleep(0.1)
    with RunLock(tmp_path):
        pass


def test_a_lease_on_a_url_refuses_a_second_driver_and_frees_after_expiry():
    url = "memory://bindscale-test-lease/run"
    with RunLock(url, lease_seconds=30):
        with pytest.raises(RunLocked, match=r"memory://bindscale-test-lease/run is in use .*\(pid \d+ on "):
            with RunLock(url, lease_seconds=30):
                pass
    with RunLock(url):  # released on exit
        pass
    # A holder that died without releasing: its lease stops being renewed and expires.
    store = RunStore(url)
    store.write_text(".lease", json.dumps({"pid": 1, "host": "gone", "since": "then", "token": "x",
                                           "expires": time.time() - 1}))
    with RunLock(url):
        pass
    store.write_text(".lease", json.dumps({"pid": 1, "host": "alive", "since": "now", "token": "x",
                                           "expires": time.time() + 30}))
    with pytest.raises(RunLocked, match="pid 1 on alive"):
        with RunLock(url):
            pass


def test_a_lease_is_renewed_while_held():
    url = "memory://bindscale-test-lease-renew/run"
    store = RunStore(url)
    with RunLock(url, lease_seconds=0.3):
        first = json.loads(store.read_text(".lease"))["expires"]
        time.sleep(0.5)
        assert json.loads(store.read_text(".lease"))["expires"] > first + 0.1
    assert not store.exists(".lease")
