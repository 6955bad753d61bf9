"""One driver per run directory.

An exclusive ``flock`` on ``RUN_DIR/.lock``: the kernel drops it when the
holder exits or is killed, so a dead driver never keeps a run locked. The
file names the holder (pid, host, start time) for the refusal message.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import time
from pathlib import Path

from .errors import BindscaleError

LOCK_FILE = ".lock"


class RunLocked(BindscaleError):
    """Another live driver holds the run directory."""


class RunLock:
    """Context manager holding the run directory's lock.

    Raises:
        RunLocked: on enter, when another process holds it.
    """

    def __init__(self, run_dir: Path):
        self.path = Path(run_dir) / LOCK_FILE
        self.fd: int | None = None

    def __enter__(self) -> "RunLock":
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read_holder(fd)
            os.close(fd)
            raise RunLocked(
                f"run directory {self.path.parent} is in use by another bindscale run ({holder}); "
                "wait for it to finish or stop it, then re-run to resume"
            ) from None
        os.ftruncate(fd, 0)
        os.write(fd, json.dumps({"pid": os.getpid(), "host": socket.gethostname(),
                                 "since": time.strftime("%Y-%m-%dT%H:%M:%S")}).encode())
        self.fd = fd
        return self

    def __exit__(self, *exc) -> None:
        if self.fd is not None:
            # Empty, not unlinked: unlinking a flock file lets two later drivers lock different inodes.
            os.ftruncate(self.fd, 0)
            fcntl.flock(self.fd, fcntl.LOCK_UN)
            os.close(self.fd)
            self.fd = None


def _read_holder(fd: int) -> str:
    try:
        info = json.loads(os.pread(fd, 4096, 0) or b"{}")
        return f"pid {info['pid']} on {info['host']} since {info['since']}"
    except (ValueError, KeyError, OSError):
        return "holder unknown"
