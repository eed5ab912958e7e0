"""Owner-only files: the data dir is 0700 and everything in it 0600/0700, always.

Notes, records, logs and the index are private to the user who owns the data dir, so
kioku never relies on the caller's umask (the usual 022 makes SQLite, its WAL, the
logs and the index files world-readable). Two layers:

- ``private_umask()`` at every entry point (CLI, local daemon, worker): everything the
  process creates afterwards -- SQLite's db/-wal/-shm, the edge index's segment files
  (written by the Rust engine, which honours the umask too), logs -- is born 0600/0700;
- ``secure_data_dir()`` when the stores open: creates the dir 0700 and tightens what an
  older kioku (or another umask) left behind. It never follows symlinks and only
  touches files this user owns.

Verified by ``tests/test_security_local.py::test_data_dir_is_private_whatever_the_umask``.
"""

from __future__ import annotations

import logging
import os
import stat
import tempfile
from pathlib import Path

log = logging.getLogger(__name__)

PRIVATE_UMASK = 0o077
DIR_MODE = 0o700
FILE_MODE = 0o600


def private_umask() -> int:
    """Make every file this process creates owner-only; returns the previous umask."""
    return os.umask(PRIVATE_UMASK)


def _tighten(path: Path, st: os.stat_result) -> None:
    if st.st_uid != os.geteuid():
        return  # not ours: leave it (and do not fail the start-up over it)
    wanted = DIR_MODE if stat.S_ISDIR(st.st_mode) else FILE_MODE
    if stat.S_IMODE(st.st_mode) & ~wanted:
        try:
            os.chmod(path, stat.S_IMODE(st.st_mode) & wanted, follow_symlinks=False)
        except (NotImplementedError, OSError) as exc:  # read-only fs: reported elsewhere
            log.debug("cannot tighten %s: %s", path, exc)


def secure_data_dir(data_dir: Path) -> None:
    """Create ``data_dir`` 0700 (parents as needed) and strip group/other bits from
    everything under it. Symlinks are neither followed nor changed."""
    data_dir.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
    for root, dirs, files in os.walk(data_dir, followlinks=False):
        here = Path(root)
        with _suppress_missing():
            _tighten(here, os.lstat(here))
        for name in (*dirs, *files):
            path = here / name
            with _suppress_missing():
                st = os.lstat(path)
                if not stat.S_ISLNK(st.st_mode):
                    _tighten(path, st)


class _suppress_missing:
    """A file may vanish while we walk (the WAL after a checkpoint): ignore it."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, exc_type: object, exc: object, tb: object) -> bool:
        return isinstance(exc, FileNotFoundError)


def open_private(path: Path, flags: int) -> int:
    """``os.open`` creating ``path`` 0600 (whatever the umask)."""
    fd = os.open(path, flags | os.O_CLOEXEC, FILE_MODE)
    try:
        if os.fstat(fd).st_uid == os.geteuid():
            os.fchmod(fd, FILE_MODE)
    except OSError:
        pass
    return fd


def write_atomic(path: Path, data: str | bytes) -> None:
    """Write ``data`` (text as UTF-8) to ``path`` whole or not at all: a reader, or a
    crash, never sees half a file. Born 0600 (``mkstemp``), synced before the rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data.encode("utf-8") if isinstance(data, str) else data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
