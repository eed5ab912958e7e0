"""What the memory browser must remember across mounts and restarts: used sign-in codes
and signed-out sessions.

Codes and cookies are signed, so any process holding the data dir's key accepts them;
only *spending* one is state. In one process's memory, a code used on ``kioku ui``'s
port worked again on ``kioku serve --http``'s /ui/, and everything worked again after
``kioku stop``. So the state lives in ``ui-sessions.db`` (SQLite, 0600, in the data
dir), the one owner of these two tables: a code is spent by an ``INSERT`` on its
primary key, which succeeds exactly once whatever mount or process tries, and is on
disk (SQLite's commit) before the browser gets its cookie. Rows leave with their expiry.

A data dir that cannot hold the file (read-only) falls back to this process's memory,
with a warning: codes then work once per process.

Gateways sharing a truth store keep this state there instead (``stores.signins``):
``SignInState`` is what both offer.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Protocol

log = logging.getLogger(__name__)

DB_FILE = "ui-sessions.db"
_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS used_codes (nonce TEXT PRIMARY KEY, expires REAL NOT NULL);"
    "CREATE TABLE IF NOT EXISTS revoked_sessions (sid TEXT PRIMARY KEY, expires REAL NOT NULL);"
)


class SignInState(Protocol):
    """Where used sign-in codes and signed-out sessions are kept."""

    def spend_code(self, nonce: str, expires: float) -> bool: ...

    def revoke(self, sid: str, expires: float) -> None: ...

    def revoked(self, sid: str) -> bool: ...


class Spent:
    """Used sign-in codes and revoked sessions (see the module docstring)."""

    def __init__(self, path: Path | None) -> None:
        """``path``: the SQLite file (None: this process's memory only)."""
        self._lock = threading.Lock()
        self._memory: sqlite3.Connection | None = None
        self.path = path
        if path is not None:
            try:
                self._create(path)
            except (OSError, sqlite3.Error) as exc:
                log.warning(
                    "ui: cannot keep sign-in state in %s (%s); this process's memory only "
                    "(a used sign-in link works again after a restart)",
                    path,
                    exc,
                )
                self.path = None
        if self.path is None:
            self._memory = sqlite3.connect(":memory:", check_same_thread=False)
            self._memory.executescript(_SCHEMA)

    @classmethod
    def for_data_dir(cls, data_dir: Path) -> Spent:
        return cls(data_dir / DB_FILE)

    @staticmethod
    def _create(path: Path) -> None:
        with contextlib.suppress(FileExistsError):
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600))
        with contextlib.closing(sqlite3.connect(path, timeout=10)) as conn:
            conn.executescript(_SCHEMA)

    @contextlib.contextmanager
    def _conn(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            if self._memory is not None:
                with self._memory:
                    yield self._memory
                return
            assert self.path is not None
            conn = sqlite3.connect(self.path, timeout=10)
            try:
                with conn:  # one transaction, committed (fsync) on leaving
                    yield conn
            finally:
                conn.close()

    def spend_code(self, nonce: str, expires: float) -> bool:
        """True the first time ``nonce`` is spent (by any mount or process), else False."""
        with self._conn() as conn:
            conn.execute("DELETE FROM used_codes WHERE expires < ?", (time.time(),))
            try:
                conn.execute("INSERT INTO used_codes VALUES (?, ?)", (nonce, expires))
            except sqlite3.IntegrityError:
                return False
        return True

    def revoke(self, sid: str, expires: float) -> None:
        with self._conn() as conn:
            conn.execute("DELETE FROM revoked_sessions WHERE expires < ?", (time.time(),))
            conn.execute("INSERT OR IGNORE INTO revoked_sessions VALUES (?, ?)", (sid, expires))

    def revoked(self, sid: str) -> bool:
        with self._conn() as conn:
            row = conn.execute("SELECT 1 FROM revoked_sessions WHERE sid = ?", (sid,)).fetchone()
        return row is not None
