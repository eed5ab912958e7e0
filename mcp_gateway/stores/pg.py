"""The PostgreSQL backend of ``Database`` (``KIOKU_DATABASE_URL=postgresql://...``).

Imported only when a PostgreSQL URL is configured: the embedded SQLite default needs
no driver. psycopg 3 runs synchronously in ``anyio`` worker threads behind the same
closure API as SQLite (``fn(conn)``), so every store module keeps one body of SQL;
``PgConnection`` is the small subset of ``sqlite3.Connection`` that SQL uses (``?``
placeholders, ``execute``/``executemany`` returning an iterable cursor, rows readable
by index and by name).

Write transactions take one advisory lock (``WRITE_LOCK``) before their first
statement, the equivalent of SQLite's ``BEGIN IMMEDIATE``: writers of the whole
deployment are serialised, so the read-then-write checks the stores rely on (note
dedup, record cycles, namespace tags) stay race-free across processes and hosts.
Reads are not serialised.

A connection that dies (server restart, network) is replaced by the pool: each
checkout is checked first, so the first call after PostgreSQL comes back succeeds;
while it is down, calls fail with ``StoreUnavailable`` (retryable), never a traceback.
"""

from __future__ import annotations

import logging
import re
import time
import weakref
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

import psycopg
import psycopg_pool
from psycopg.rows import RowMaker

from mcp_gateway.common.errors import StoreUnavailable

log = logging.getLogger(__name__)

T = TypeVar("T")

# pg_advisory_lock keys (bigint): "kioku" in ASCII, and one more for migrations
WRITE_LOCK = 0x6B696F6B75
MIGRATE_LOCK = WRITE_LOCK + 1
# a pooled connection used this recently is lent without a check (a restart takes longer)
FRESH_S = 1.0


class Row(tuple[Any, ...]):
    """A result row readable as ``row[0]`` and ``row["name"]``, and ``dict(row)``
    (what ``sqlite3.Row`` offers and kioku's SQL reads)."""

    _names: tuple[str, ...]

    def __new__(cls, names: tuple[str, ...], values: Sequence[Any]) -> Row:
        row = super().__new__(cls, values)
        row._names = names
        return row

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, str):
            try:
                return tuple.__getitem__(self, self._names.index(key))
            except ValueError:
                raise IndexError(f"no column named {key!r}") from None
        return tuple.__getitem__(self, key)

    def keys(self) -> list[str]:
        return list(self._names)


def _row_factory(cursor: psycopg.Cursor[Any]) -> RowMaker[Row]:
    names = tuple(c.name for c in cursor.description or ())
    return lambda values: Row(names, values)


# '...' literals, "..." identifiers, or a ? placeholder / a % to escape
_TOKENS = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|[?%]")


def translate(sql: str) -> str:
    """sqlite3's ``?`` placeholders as psycopg's ``%s``, every literal ``%`` doubled; a
    ``?`` inside quoted text stays a question mark."""

    def sub(m: re.Match[str]) -> str:
        tok = m.group(0)
        # psycopg reads % everywhere, quoted text included; ? only outside quotes
        return "%s" if tok == "?" else tok.replace("%", "%%")

    return _TOKENS.sub(sub, sql)


class PgConnection:
    """The ``sqlite3.Connection`` subset kioku's SQL uses, over one psycopg connection."""

    dialect = "postgres"

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self.raw = conn

    def execute(self, sql: str, params: Iterable[Any] = ()) -> psycopg.Cursor[Any]:
        cur = self.raw.cursor()
        cur.execute(translate(sql), tuple(params))
        return cur

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> psycopg.Cursor[Any]:
        cur = self.raw.cursor()
        batch = [tuple(r) for r in rows]
        if batch:
            cur.executemany(translate(sql), batch)
        return cur

    def executescript(self, sql: str) -> None:
        self.raw.execute(sql.encode("utf-8"))  # several statements, no parameters


def redacted(url: str) -> str:
    """``url`` without its password, for messages and logs."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{parts.username}:***@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))


def unavailable(url: str, exc: BaseException) -> StoreUnavailable:
    detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return StoreUnavailable(
        f"PostgreSQL at {redacted(url)} is unavailable ({detail}). Retry in a moment: "
        "kioku reconnects by itself once the server is back (a repeated add finds the "
        "note or record if the first one was committed after all)."
    )


# errors that mean "the server or the link", not "this SQL": retryable, never a traceback
TRANSIENT: tuple[type[BaseException], ...] = (
    psycopg.OperationalError,
    psycopg.InterfaceError,
    psycopg_pool.PoolTimeout,
)


class PgBackend:
    def __init__(self, url: str, *, max_size: int = 8, timeout_s: float = 5.0) -> None:
        self.url = url
        self.timeout_s = timeout_s
        self._last_used: weakref.WeakKeyDictionary[psycopg.Connection[Any], float] = (
            weakref.WeakKeyDictionary()
        )
        self._pool = psycopg_pool.ConnectionPool(
            url,
            min_size=1,
            max_size=max_size,
            open=False,
            timeout=timeout_s,
            # give up a failing reconnection soon: the next call starts a fresh attempt
            # at once, instead of waiting out an exponential backoff that grew while
            # the server was down (the first call after a restart then succeeds)
            reconnect_timeout=2.0,
            # a connection broken by a restart is found and replaced before use
            check=self._check,
            reset=self._returned,
            kwargs={"autocommit": True, "row_factory": _row_factory, "connect_timeout": 5},
            name="kioku",
        )

    def _returned(self, conn: psycopg.Connection[Any]) -> None:
        self._last_used[conn] = time.monotonic()

    def _check(self, conn: psycopg.Connection[Any]) -> None:
        """Check a connection idle for ``FRESH_S`` or more with a round trip (the
        pool replaces it if that fails); one back from use within that time is lent
        as it is: a read path makes several calls in a row, and a check each time
        cost ~0.15 ms of a 0.6 ms read (bench/LOG.md)."""
        if time.monotonic() - self._last_used.get(conn, 0.0) >= FRESH_S:
            psycopg_pool.ConnectionPool.check_connection(conn)

    def open(self) -> None:
        try:
            # one direct attempt first: a refused or misspelt URL fails at once with
            # the server's own words, not after the pool's wait
            psycopg.connect(self.url, connect_timeout=5).close()
            self._pool.open(wait=True, timeout=self.timeout_s)
        except TRANSIENT as exc:
            self._pool.close()
            raise unavailable(self.url, exc) from exc

    def close(self) -> None:
        self._pool.close()

    def run(self, fn: Callable[[PgConnection], T]) -> T:
        try:
            with self._pool.connection() as conn:
                return fn(PgConnection(conn))
        except TRANSIENT as exc:
            raise unavailable(self.url, exc) from exc

    def transaction(self, fn: Callable[[PgConnection], T]) -> T:
        try:
            with self._pool.connection() as conn, conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (WRITE_LOCK,))
                return fn(PgConnection(conn))
        except TRANSIENT as exc:
            raise unavailable(self.url, exc) from exc

    def migrate(self, base_schema: str, migrations: Sequence[tuple[str, int, str]]) -> None:
        """Apply ``migrations`` not yet recorded, each in its own transaction, under a
        session advisory lock: whichever process starts first migrates, the others wait
        and then find nothing left to do."""
        try:
            with self._pool.connection() as conn:
                conn.execute("SELECT pg_advisory_lock(%s)", (MIGRATE_LOCK,))
                try:
                    self._migrate(conn, base_schema, migrations)
                finally:
                    conn.execute("SELECT pg_advisory_unlock(%s)", (MIGRATE_LOCK,))
        except TRANSIENT as exc:
            raise unavailable(self.url, exc) from exc

    @staticmethod
    def _migrate(
        conn: psycopg.Connection[Any],
        base_schema: str,
        migrations: Sequence[tuple[str, int, str]],
    ) -> None:
        conn.execute(base_schema.encode("utf-8"))
        current = {
            row["module"]: row["version"]
            for row in conn.execute("SELECT module, version FROM schema_versions")
        }
        for module, version, sql in migrations:  # in their order (``stores.schema``)
            if current.get(module, 0) >= version:
                continue
            with conn.transaction():
                conn.execute(sql.encode("utf-8"))
                conn.execute(
                    "INSERT INTO schema_versions(module, version) VALUES (%s, %s) "
                    "ON CONFLICT (module) DO UPDATE SET version = excluded.version",
                    (module, version),
                )
            log.info("PostgreSQL schema: %s is now at version %d", module, version)
            current[module] = version
