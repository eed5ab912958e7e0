"""The truth store: notes, records and job state, in SQLite or PostgreSQL.

``Database(path)`` is the embedded default: a SQLite file. ``Database(url)`` with a
``postgresql://`` URL is the shared store (``stores.pg``: a pool, many processes and
hosts); both run the same closures ``fn(conn)`` through ``run``/``transaction``, and
``dialect`` names the backend for the few places whose SQL differs (the schema, one
ordered list per dialect in ``stores.schema``; records' full text).

On SQLite one ``Database`` per process wraps one connection in WAL mode. Calls are serialised by
a lock and run in a worker thread (``anyio.to_thread``), so the event loop never blocks
on disk. Several processes may open the same file (gateway and workers); WAL plus a
busy timeout keeps them from failing with "database is locked".

On open, ``Database`` brings the schema up to date: the steps of ``stores.schema`` for
its dialect, in their order, each once, in one transaction, recorded per module in
``schema_versions``. Every table exists whatever the opening process imported.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import sqlite3
import threading
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

import anyio

from mcp_gateway.common.diskguard import require_space
from mcp_gateway.common.errors import StoreUnavailable
from mcp_gateway.stores.schema import Dialect, postgres, sqlite

if TYPE_CHECKING:
    from mcp_gateway.stores.pg import PgBackend

log = logging.getLogger(__name__)


T = TypeVar("T")

_BASE_SCHEMA = """
CREATE TABLE IF NOT EXISTS schema_versions (module TEXT PRIMARY KEY, version INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""


def is_database_url(location: Path | str) -> bool:
    return isinstance(location, str) and location.startswith(("postgresql://", "postgres://"))


class Database:
    def __init__(self, path: Path | str, reserve_bytes: int = 0) -> None:
        """``path``: a SQLite file (or ":memory:"), or a ``postgresql://`` URL."""
        self.dialect: Dialect = "postgres" if is_database_url(path) else "sqlite"
        self._pg: PgBackend | None = None
        if self.dialect == "postgres":
            from mcp_gateway.stores.pg import PgBackend  # the driver only when configured

            self._pg = PgBackend(str(path))
        self.path = Path(path) if str(path) != ":memory:" and not self._pg else path
        # write transactions are refused while less is free (diskguard: the index,
        # written through mmapped files, must never be the one to hit ENOSPC)
        self.reserve_bytes = reserve_bytes
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None

    # -- lifecycle -------------------------------------------------------------------
    def open_sync(self) -> None:
        if self._pg is not None:
            self._pg.open()
            self._pg.migrate(_BASE_SCHEMA, postgres.STEPS)
            return
        try:
            if isinstance(self.path, Path):
                self.path.parent.mkdir(parents=True, exist_ok=True)
            with _setup_lock(self.path):
                self._connect_and_migrate()
        except sqlite3.OperationalError as exc:
            raise StoreUnavailable(
                f"cannot open the database at {self.path}: {exc}. "
                "Check that the data dir exists, is writable and the disk is not full."
            ) from exc

    def _connect_and_migrate(self) -> None:
        # Several processes may open a new data dir at once (two workers, a worker beside
        # the owner): switching a new file to WAL answers "database is locked" without
        # waiting, and two openers reading the versions before either applies a migration
        # would both apply it ("table ... already exists"). Hence one opener at a time.
        conn = sqlite3.connect(
            str(self.path), timeout=30.0, isolation_level=None, check_same_thread=False
        )
        conn.row_factory = sqlite3.Row
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA foreign_keys=ON")
        conn.execute("PRAGMA busy_timeout=30000")
        self._conn = conn
        self._migrate()

    async def open(self) -> None:
        await anyio.to_thread.run_sync(self.open_sync)

    def close_sync(self) -> None:
        if self._pg is not None:
            self._pg.close()
            return
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    async def close(self) -> None:
        await anyio.to_thread.run_sync(self.close_sync)

    @property
    def conn(self) -> sqlite3.Connection:
        if self._conn is None:
            raise StoreUnavailable("the database is closed")
        return self._conn

    def _migrate(self) -> None:
        conn = self.conn
        conn.executescript(_BASE_SCHEMA)
        current = {
            row["module"]: row["version"]
            for row in conn.execute("SELECT module, version FROM schema_versions")
        }
        for module, version, sql in sqlite.STEPS:
            if current.get(module, 0) >= version:
                continue
            # One script, one transaction: a migration is applied whole or not at all.
            # Foreign keys are off meanwhile (SQLite's way to rebuild a parent table, which
            # cannot be toggled inside a transaction) and checked right after.
            conn.execute("PRAGMA foreign_keys=OFF")
            try:
                conn.executescript(
                    f"BEGIN IMMEDIATE;\n{sql}\n;"
                    f"INSERT OR REPLACE INTO schema_versions(module, version) "
                    f"VALUES ('{module}', {int(version)});\nCOMMIT;"
                )
            except BaseException:
                _rollback(conn)
                raise
            finally:
                conn.execute("PRAGMA foreign_keys=ON")
            broken = conn.execute("PRAGMA foreign_key_check").fetchall()
            if broken:
                log.error(
                    "migration %s v%d left %d broken references", module, version, len(broken)
                )
            current[module] = version

    # -- running work ----------------------------------------------------------------
    def run_sync(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``fn(conn)`` under the lock (no transaction is opened for you; on
        PostgreSQL each statement commits by itself, and calls run side by side)."""
        if self._pg is not None:
            return self._pg.run(cast("Callable[[Any], T]", fn))
        with self._lock:
            try:
                return fn(self.conn)
            except sqlite3.OperationalError as exc:
                raise _translate(exc) from exc

    def transaction_sync(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``fn(conn)`` in one ``BEGIN IMMEDIATE`` transaction: all or nothing
        (PostgreSQL: one transaction holding the deployment's write lock)."""
        if self._pg is not None:
            return self._pg.transaction(cast("Callable[[Any], T]", fn))
        if self.reserve_bytes and isinstance(self.path, Path):
            require_space(self.path.parent, self.reserve_bytes)
        with self._lock:
            conn = self.conn
            try:
                conn.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as exc:
                raise _translate(exc) from exc
            try:
                result = fn(conn)
                conn.execute("COMMIT")
                return result
            except sqlite3.OperationalError as exc:
                _rollback(conn)
                raise _translate(exc) from exc
            except BaseException:
                _rollback(conn)
                raise

    async def run(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        return await anyio.to_thread.run_sync(self.run_sync, fn)

    async def transaction(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        return await anyio.to_thread.run_sync(self.transaction_sync, fn)

    async def fetchall(self, sql: str, params: Iterable[Any] = ()) -> list[sqlite3.Row]:
        args = tuple(params)
        return await self.run(lambda c: c.execute(sql, args).fetchall())

    async def get_meta(self, key: str) -> str | None:
        rows = await self.fetchall("SELECT value FROM meta WHERE key = ?", (key,))
        return rows[0]["value"] if rows else None

    async def set_meta(self, key: str, value: str) -> None:
        await self.transaction(
            lambda c: c.execute(
                "INSERT INTO meta(key, value) VALUES (?, ?) "
                "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                (key, value),
            )
        )


@contextlib.contextmanager
def _setup_lock(path: Path | str) -> Iterator[None]:
    """An exclusive ``flock`` on ``<database>.setup.lock`` (0600) beside a database
    file; nothing for an in-memory one. Not the database file itself: closing another
    descriptor of it would drop SQLite's own POSIX locks."""
    if not isinstance(path, Path):
        yield
        return
    fd = os.open(f"{path}.setup.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


def _rollback(conn: sqlite3.Connection) -> None:
    # SQLite may already have rolled back (e.g. "database or disk is full"); a second
    # ROLLBACK would raise and hide the real error.
    if conn.in_transaction:
        conn.execute("ROLLBACK")


def _translate(exc: sqlite3.OperationalError) -> StoreUnavailable | sqlite3.OperationalError:
    msg = str(exc).lower()
    if "readonly" in msg or "read-only" in msg:
        return StoreUnavailable("the data dir is read-only: make it writable to store memories")
    if "disk is full" in msg or "database or disk is full" in msg:
        return StoreUnavailable("the disk is full: free space, then retry; nothing was stored")
    if "disk i/o error" in msg:
        return StoreUnavailable("the disk failed to read or write the database; check it, retry")
    if "locked" in msg or "busy" in msg:
        return StoreUnavailable("the database stayed locked for 30 s by another process; retry")
    return exc
