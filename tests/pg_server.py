"""A real PostgreSQL for tests: the machine's server on 127.0.0.1:5432 (trust auth, user
postgres), in a database each session creates for itself, ``kioku_test_<random>``, and
drops at the end. Nothing else on the server is touched: a database is dropped only when
its comment carries the token this session wrote into it when creating it.

Each test gets its own schema in that database (``store_location``): fresh tables,
the same server-wide objects (pg_trgm lives in ``public``).

The fixtures are imported by ``tests/conftest.py``.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

ADMIN_URL = "postgresql://postgres@127.0.0.1:5432/postgres"


def _admin():
    import psycopg

    return psycopg.connect(ADMIN_URL, autocommit=True, connect_timeout=3)


def server_answers() -> bool:
    try:
        with _admin():
            return True
    except Exception:
        return False


class ScratchDatabase:
    """One database created by this process, dropped only if it is still ours."""

    def __init__(self) -> None:
        self.name = f"kioku_test_{uuid.uuid4().hex[:12]}"
        self.token = uuid.uuid4().hex
        with _admin() as conn:
            conn.execute(f'CREATE DATABASE "{self.name}"')
            conn.execute(f"COMMENT ON DATABASE \"{self.name}\" IS 'kioku test {self.token}'")
        self.url = f"postgresql://postgres@127.0.0.1:5432/{self.name}"
        import psycopg

        # in public, seen from every test's schema (a migration would put it in the first)
        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION pg_trgm SCHEMA public")

    def new_schema(self) -> str:
        """A fresh schema; the URL that makes it the connections' own."""
        import psycopg

        schema = f"t_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute(f"CREATE SCHEMA {schema}")
        return f"{self.url}?options=-csearch_path%3D{schema},public"

    def drop(self) -> None:
        with _admin() as conn:
            row = conn.execute(
                "SELECT shobj_description(oid, 'pg_database') FROM pg_database WHERE datname = %s",
                (self.name,),
            ).fetchone()
            if row is None or row[0] != f"kioku test {self.token}":
                return  # not the database this session made: leave it alone
            conn.execute(f'DROP DATABASE "{self.name}" WITH (FORCE)')


@pytest.fixture(scope="session")
def pg_database() -> Iterator[ScratchDatabase]:
    if not server_answers():
        pytest.fail("PostgreSQL is not answering on 127.0.0.1:5432 (.ci/run starts it)")
    db = ScratchDatabase()
    try:
        yield db
    finally:
        db.drop()


@pytest.fixture(params=["sqlite", "postgres"])
def database_location(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Path | str]:
    """What ``Database`` opens: a SQLite file, or a fresh schema on PostgreSQL."""
    if request.param == "sqlite":
        yield tmp_path / "kioku.sqlite3"
    else:
        yield request.getfixturevalue("pg_database").new_schema()


PG_BIN = Path("/usr/lib/postgresql/15/bin")


class ThrowawayCluster:
    """A PostgreSQL server of the test's own (``initdb`` in a temp dir, a free port), so
    that a test may stop and restart it without touching the machine's server."""

    def __init__(self) -> None:
        import os
        import shutil
        import socket
        import tempfile

        self.root = Path(tempfile.mkdtemp(prefix="kioku-pg-"))
        self._as_postgres = os.getuid() == 0  # initdb refuses to run as root
        if self._as_postgres:
            shutil.chown(self.root, "postgres", "postgres")
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.port = int(sock.getsockname()[1])
        self.data = self.root / "data"
        self._run(
            PG_BIN / "initdb", "-D", self.data, "-U", "postgres", "-A", "trust",
            "-E", "UTF8", "--locale", "C.UTF-8", "--no-sync",
        )  # fmt: skip
        self.url = f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def _run(self, *args: object) -> None:
        import subprocess

        cmd = [str(a) for a in args]
        if self._as_postgres:
            cmd = ["runuser", "-u", "postgres", "--", *cmd]
        subprocess.run(cmd, check=True, capture_output=True, timeout=120)

    def start(self) -> None:
        options = f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off"
        self._run(
            PG_BIN / "pg_ctl", "-D", self.data, "-l", self.root / "log", "-o", options,
            "-w", "start",
        )  # fmt: skip

    def stop(self) -> None:
        self._run(PG_BIN / "pg_ctl", "-D", self.data, "-m", "fast", "-w", "stop")

    def remove(self) -> None:
        import contextlib
        import shutil
        import subprocess

        with contextlib.suppress(subprocess.CalledProcessError):
            self.stop()
        shutil.rmtree(self.root, ignore_errors=True)


@pytest.fixture
def throwaway_cluster() -> Iterator[ThrowawayCluster]:
    if not (PG_BIN / "initdb").exists():
        pytest.skip(f"no PostgreSQL 15 binaries in {PG_BIN}")
    cluster = ThrowawayCluster()
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.remove()


def feed_log(url: str) -> None:
    """Every entry of both feeds, as it is made (a changes or vectors row getting a new
    seq), kept in tables of the test's own: what "once per change" counts against."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        for table in ("changes", "vectors"):
            conn.execute(f"CREATE TABLE log_{table} (source_id TEXT, seq BIGINT)")
            conn.execute(
                f"CREATE FUNCTION log_{table}() RETURNS trigger LANGUAGE plpgsql AS $$ "
                f"BEGIN INSERT INTO log_{table} VALUES (NEW.source_id, NEW.seq); RETURN NEW; "
                "END $$"
            )
            conn.execute(
                f"CREATE TRIGGER log_{table} AFTER INSERT OR UPDATE OF seq ON {table} "
                f"FOR EACH ROW EXECUTE FUNCTION log_{table}()"
            )
