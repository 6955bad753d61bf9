"""Where a run lives: a local (or NFS) directory, or any fsspec filesystem URL.

A cluster run writes its records to storage every node can see. Local paths
(including NFS mounts) are written with temp file + fsync + rename, so a
reader sees a whole file or none. Other filesystems (``s3://``, ``gs://``,
``memory://`` …, through fsspec) are written to a temporary name and moved;
on object stores a single put is already all-or-nothing.

Every write error is re-raised as :class:`StorageError`, one line naming the
file and the cause (disk full, permission denied …), after removing the
temporary file: no half-written file is ever left under a final name.
"""

from __future__ import annotations

import errno
import os
import tempfile
import uuid
from pathlib import Path

from bindscale.core.errors import BindscaleError


class StorageError(BindscaleError):
    """A run directory cannot be written or read."""


def _why(err: OSError) -> str:
    if err.errno == errno.ENOSPC:
        return "no space left on device"
    if err.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return "permission denied" if err.errno != errno.EROFS else "read-only filesystem"
    return err.strerror or type(err).__name__


def is_url(location: str | Path) -> bool:
    """``True`` for ``scheme://…`` locations (fsspec), ``False`` for plain paths."""
    return "://" in str(location) and not str(location).startswith("file://")


class RunStore:
    """A run directory addressed by a path or URL; names inside it are ``/``-separated.

    Args:
        location: a local path, ``file://`` URL, or any URL fsspec can open
            (remote filesystems need their fsspec driver installed, e.g. ``s3fs``).

    Raises:
        StorageError: an empty location or a URL whose filesystem cannot be loaded.
    """

    def __init__(self, location: str | Path):
        loc = str(location)
        if not loc.strip():
            raise StorageError("empty run-directory path; give a directory or URL for the run")
        self.location = loc
        if loc.startswith("file://"):
            loc = loc[len("file://"):]
            if not loc.strip():
                raise StorageError("file:// names no directory; give file:///path/to/run")
        self.local: Path | None = None if is_url(loc) else Path(loc)
        self.fs = None
        if self.local is None:
            import fsspec

            try:
                self.fs, self.root = fsspec.core.url_to_fs(loc)
            except Exception as err:  # noqa: BLE001 - any driver's failure (missing package, refused connection …)
                raise StorageError(f"cannot open storage {loc!r}: {type(err).__name__}: "
                                   f"{(str(err).splitlines() or [''])[0][:200]}") from None

    @classmethod
    def of(cls, location: "str | Path | RunStore") -> "RunStore":
        return location if isinstance(location, RunStore) else cls(location)

    def __str__(self) -> str:
        return self.location

    def __repr__(self) -> str:
        return f"RunStore({self.location!r})"

    def path(self, name: str = "") -> str:
        """Full path or URL of ``name`` inside the run directory (for messages and fsspec)."""
        if self.local is not None:
            return str(self.local / name) if name else str(self.local)
        return f"{self.root.rstrip('/')}/{name}" if name else self.root

    def where(self, name: str = "") -> str:
        """``name`` as the user would write it: a path, or a URL with its scheme (for messages)."""
        if self.local is not None:
            return self.path(name)
        return f"{self.location.rstrip('/')}/{name}" if name else self.location

    # ------------------------------------------------------------------ writing

    def makedirs(self, name: str = "") -> None:
        """Create the directory ``name`` (and parents). Raises :class:`StorageError`."""
        try:
            if self.local is not None:
                (self.local / name).mkdir(parents=True, exist_ok=True)
            else:
                self.fs.makedirs(self.path(name), exist_ok=True)
        except OSError as err:
            raise StorageError(f"cannot create {self.where(name)}: {_why(err)}") from None

    def write_bytes(self, name: str, data: bytes) -> None:
        """Atomically write ``data`` to ``name``.

        Raises:
            StorageError: disk full, permission denied or any I/O error; the
                temporary file is removed and ``name`` keeps its old content.
        """
        try:
            if self.local is not None:
                _atomic_local(self.local / name, data)
            else:
                final = self.path(name)
                tmp = f"{final.rsplit('/', 1)[0]}/.{final.rsplit('/', 1)[-1]}.{uuid.uuid4().hex}.tmp"
                self.fs.makedirs(final.rsplit("/", 1)[0], exist_ok=True)
                try:
                    self.fs.pipe_file(tmp, data)
                    self.fs.mv(tmp, final)
                except BaseException:
                    if self.fs.exists(tmp):
                        self.fs.rm(tmp)
                    raise
        except OSError as err:
            raise StorageError(f"cannot write {self.where(name)}: {_why(err)}") from None

    def write_text(self, name: str, text: str) -> None:
        self.write_bytes(name, text.encode("utf-8"))

    def remove(self, name: str) -> None:
        """Delete ``name`` if present."""
        if self.local is not None:
            (self.local / name).unlink(missing_ok=True)
        elif self.fs.exists(self.path(name)):
            self.fs.rm(self.path(name))

    # ------------------------------------------------------------------ reading

    def read_bytes(self, name: str) -> bytes:
        """Contents of ``name``. Raises ``OSError`` (``FileNotFoundError`` when absent)."""
        if self.local is not None:
            return (self.local / name).read_bytes()
        return self.fs.cat_file(self.path(name))

    def read_text(self, name: str) -> str:
        return self.read_bytes(name).decode("utf-8")

    def exists(self, name: str = "") -> bool:
        if self.local is not None:
            return (self.local / name).exists()
        return self.fs.exists(self.path(name))

    def is_dir(self, name: str = "") -> bool:
        if self.local is not None:
            return (self.local / name).is_dir()
        return self.fs.isdir(self.path(name))

    def list(self, subdir: str, suffix: str) -> list[str]:
        """Sorted file names (not paths) in ``subdir`` ending with ``suffix``, hidden files excluded."""
        if self.local is not None:
            d = self.local / subdir
            names = [p.name for p in d.iterdir()] if d.is_dir() else []
        else:
            d = self.path(subdir)
            names = [p.rsplit("/", 1)[-1] for p in self.fs.ls(d, detail=False)] if self.fs.isdir(d) else []
        return sorted(n for n in names if n.endswith(suffix) and not n.startswith("."))

    def list_temporaries(self, subdir: str) -> list[str]:
        """Leftover temporary files in ``subdir`` (a writer killed between write and rename)."""
        if self.local is not None:
            d = self.local / subdir
            return sorted(p.name for p in d.glob(".*.tmp")) if d.is_dir() else []
        d = self.path(subdir)
        names = [p.rsplit("/", 1)[-1] for p in self.fs.ls(d, detail=False)] if self.fs.isdir(d) else []
        return sorted(n for n in names if n.startswith(".") and n.endswith(".tmp"))


def remove_temporaries(store: RunStore, subdir: str) -> int:
    """Delete the temporary files a killed writer left in ``subdir``; returns how many.

    Call only when no writer can be active (the run lock is held and no worker runs).
    """
    names = store.list_temporaries(subdir)
    for name in names:
        store.remove(f"{subdir}/{name}")
    return len(names)


def _atomic_local(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, 0o644)  # mkstemp makes 0600; records are meant to be shared
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
