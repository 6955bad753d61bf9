"""One driver per run directory.

Local (and NFS) run directories: an exclusive ``flock`` on ``RUN_DIR/.lock``;
the kernel drops it when the holder exits or is killed, so a dead driver
never keeps a run locked. The file names the holder (pid, host, start time)
for the refusal message.

Run directories on an fsspec URL have no ``flock``: there the lock is a
*lease*, a ``.lease`` file naming the holder and an expiry time that a
background thread renews every ``LEASE_SECONDS / 3``. A holder that dies
stops renewing, and its lease is free once it expires. Object stores have no
atomic create, so two drivers starting within the same second can both win:
the lease protects against the common mistake, not a deliberate race.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import threading
import time
import uuid
from pathlib import Path

from bindscale.core.errors import BindscaleError
from bindscale.store.storage import RunStore

LOCK_FILE = ".lock"
LEASE_FILE = ".lease"
#: Seconds a lease lives without renewal.
LEASE_SECONDS = 60.0


class RunLocked(BindscaleError):
    """Another live driver holds the run directory (``where``; ``holder`` describes it)."""

    where: str = ""
    holder: str = ""


def _refusal(where: str, holder: str) -> RunLocked:
    err = RunLocked(f"run directory {where} is in use by another bindscale run ({holder}); "
                    "wait for it to finish or stop it, then re-run to resume")
    err.where, err.holder = where, holder
    return err


def RunLock(run_dir: "str | Path | RunStore", lease_seconds: float = LEASE_SECONDS) -> "FileLock | LeaseLock":
    """The run directory's lock: :class:`FileLock` on local paths, :class:`LeaseLock` on URLs."""
    store = RunStore.of(run_dir)
    return FileLock(store.local) if store.local is not None else LeaseLock(store, lease_seconds)


def live_holder(run_dir: "str | Path | RunStore") -> str | None:
    """Who holds ``run_dir`` now ("pid … on … since …"), or None; writes nothing (for ``--dry-run``).

    Local directories: a non-blocking ``flock`` probe on an existing ``.lock`` (released at once); URLs: an
    unexpired lease. A directory or lock file that does not exist is not held.
    """
    store = RunStore.of(run_dir)
    if store.local is None:
        info = LeaseLock(store)._current()
        return _describe(info) if info and float(info.get("expires", 0)) > time.time() else None
    path = Path(store.local) / LOCK_FILE
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    except BlockingIOError:
        return _read_holder(fd)
    finally:
        os.close(fd)


class FileLock:
    """Context manager holding a local run directory's ``flock``.

    Raises:
        RunLocked: on enter, when another process holds it.
    """

    def __init__(self, run_dir: Path):
        self.path = Path(run_dir) / LOCK_FILE
        self.fd: int | None = None

    def __enter__(self) -> "FileLock":
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read_holder(fd)
            os.close(fd)
            raise _refusal(str(self.path.parent), holder) from None
        os.ftruncate(fd, 0)
        os.write(fd, json.dumps(_holder()).encode())
        self.fd = fd
        return self

    def __exit__(self, *exc) -> None:
        if self.fd is not None:
            # Empty, not unlinked: unlinking a flock file lets two later drivers lock different inodes.
            os.ftruncate(self.fd, 0)
            fcntl.flock(self.fd, fcntl.LOCK_UN)
            os.close(self.fd)
            self.fd = None


def _holder() -> dict:
    return {"pid": os.getpid(), "host": socket.gethostname(), "since": time.strftime("%Y-%m-%dT%H:%M:%S")}


def _describe(info: dict) -> str:
    try:
        return f"pid {info['pid']} on {info['host']} since {info['since']}"
    except (KeyError, TypeError):
        return "holder unknown"


def _read_holder(fd: int) -> str:
    try:
        return _describe(json.loads(os.pread(fd, 4096, 0) or b"{}"))
    except (ValueError, OSError):
        return "holder unknown"


class LeaseLock:
    """Context manager holding a lease on a run directory at an fsspec URL (see the module docstring).

    Raises:
        RunLocked: on enter, when another holder's lease has not expired.
    """

    def __init__(self, store: RunStore, lease_seconds: float = LEASE_SECONDS):
        self.store, self.seconds = store, float(lease_seconds)
        self.token = uuid.uuid4().hex
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _current(self) -> dict | None:
        try:
            info = json.loads(self.store.read_bytes(LEASE_FILE))
            return info if isinstance(info, dict) else None
        except (OSError, ValueError):
            return None

    def _write(self) -> None:
        self.store.write_text(LEASE_FILE, json.dumps(
            _holder() | {"token": self.token, "expires": time.time() + self.seconds}))

    def __enter__(self) -> "LeaseLock":
        info = self._current()
        if info and info.get("token") != self.token and float(info.get("expires", 0)) > time.time():
            raise _refusal(self.store.where(), _describe(info))
        self._write()
        if (self._current() or {}).get("token") != self.token:  # lost a race to another driver
            raise _refusal(self.store.where(), _describe(self._current() or {}))
        self._thread = threading.Thread(target=self._renew, name="bindscale-lease", daemon=True)
        self._thread.start()
        return self

    def _renew(self) -> None:
        while not self._stop.wait(self.seconds / 3):
            try:
                self._write()
            except Exception:  # a transient storage error: the next renewal tries again
                pass

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        if (self._current() or {}).get("token") == self.token:
            self.store.remove(LEASE_FILE)
