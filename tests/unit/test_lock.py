import subprocess
import sys
import time

import pytest

from bindscale.lock import RunLock, RunLocked


def test_second_holder_is_refused_with_the_holders_name(tmp_path):
    with RunLock(tmp_path):
        with pytest.raises(RunLocked, match=r"in use by another bindscale run \(pid \d+ on .* since "):
            with RunLock(tmp_path):
                pass
    with RunLock(tmp_path):  # released on exit
        pass


def test_a_killed_holder_does_not_keep_the_lock(tmp_path):
    code = f"from bindscale.lock import RunLock; import time\nwith RunLock({str(tmp_path)!r}):\n    print('held', flush=True); time.sleep(60)"
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
