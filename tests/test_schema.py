"""The truth store's schema: one ordered list per dialect (``stores.schema``), applied by
``Database`` on open, whatever the opening process imported.

A fresh database and one upgraded from an earlier kioku end with the same schema, on
both dialects. The earlier ones are recorded in ``tests/data/schema``, made by kioku
1b610e3's code (the last with tables registered on import): ``*-main-1b610e3.sql`` is
the schema it created, ``*-early.sql`` only the first version of its oldest tables
(notes, vectors, records, note_priors, leases), each with a row in its main tables.
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from mcp_gateway.stores.db import Database
from mcp_gateway.stores.schema import postgres, sqlite

DUMPS = Path(__file__).parent / "data" / "schema"
EARLIER = ["early", "main-1b610e3"]


def sqlite_schema(path: Path) -> dict[str, Any]:
    conn = sqlite3.connect(path)
    try:
        objects = conn.execute(
            "SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name"
        ).fetchall()
        versions = conn.execute("SELECT module, version FROM schema_versions ORDER BY 1").fetchall()
        columns = {
            name: conn.execute(f"PRAGMA table_xinfo({name})").fetchall()
            for (kind, name, _, _) in objects
            if kind == "table"
        }
    finally:
        conn.close()
    return {"objects": objects, "versions": versions, "columns": columns}


def open_and_close(location: Path | str) -> None:
    db = Database(location)
    db.open_sync()
    db.close_sync()


@pytest.mark.parametrize("earlier", EARLIER)
def test_a_sqlite_database_upgraded_from_an_earlier_kioku_ends_as_a_fresh_one(
    tmp_path: Path, earlier: str
) -> None:
    fresh = tmp_path / "fresh.sqlite3"
    open_and_close(fresh)
    upgraded = tmp_path / "upgraded.sqlite3"
    with sqlite3.connect(upgraded) as conn:
        conn.executescript((DUMPS / f"sqlite-{earlier}.sql").read_text("utf-8"))
    conn.close()
    before = sqlite_schema(upgraded)
    open_and_close(upgraded)
    assert sqlite_schema(upgraded) == sqlite_schema(fresh)
    assert sqlite_schema(upgraded) != before or earlier == "main-1b610e3"
    # the rows survived (records v3 rebuilt their table); the feed and FTS still work
    with sqlite3.connect(upgraded) as conn:
        assert conn.execute("SELECT id FROM notes").fetchall() == [("x-id",)]
        assert conn.execute("SELECT id, namespace FROM records").fetchall() == [("x-id", "default")]
        conn.execute("UPDATE records SET title = 'renamed' WHERE id = 'x-id'")
        hits = conn.execute("SELECT rowid FROM records_fts WHERE records_fts MATCH 'renamed'")
        assert hits.fetchall() == [(1,)]
    conn.close()


def pg_schema(url: str) -> dict[str, Any]:
    import psycopg

    with psycopg.connect(url) as conn:
        here = conn.execute("SELECT current_schema()").fetchone()
        assert here is not None
        schema = here[0]

        def rows(sql: str) -> list[tuple[Any, ...]]:
            # each test has a schema of its own: its name is no part of what is compared
            return [
                tuple(v.replace(f"{schema}.", "") if isinstance(v, str) else v for v in row)
                for row in conn.execute(sql, {"s": schema}).fetchall()
            ]

        return {
            "columns": rows(
                "SELECT table_name, column_name, data_type, is_nullable, column_default, "
                "is_identity, collation_name FROM information_schema.columns "
                "WHERE table_schema = %(s)s ORDER BY 1, 2"
            ),
            "indexes": rows(
                "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = %(s)s ORDER BY 1"
            ),
            "constraints": rows(
                "SELECT c.conrelid::regclass::text, c.conname, pg_get_constraintdef(c.oid) "
                "FROM pg_constraint c JOIN pg_namespace n ON n.oid = c.connamespace "
                "WHERE n.nspname = %(s)s ORDER BY 1, 2"
            ),
            "triggers": rows(
                "SELECT t.tgname, pg_get_triggerdef(t.oid) FROM pg_trigger t JOIN pg_class r "
                "ON r.oid = t.tgrelid JOIN pg_namespace n ON n.oid = r.relnamespace "
                "WHERE n.nspname = %(s)s AND NOT t.tgisinternal ORDER BY 1"
            ),
            "functions": rows(
                "SELECT p.proname, p.prosrc FROM pg_proc p "
                "JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = %(s)s ORDER BY 1"
            ),
            "versions": rows("SELECT module, version FROM schema_versions ORDER BY 1"),
        }


@pytest.mark.parametrize("earlier", EARLIER)
def test_a_postgres_database_upgraded_from_an_earlier_kioku_ends_as_a_fresh_one(
    pg_database: Any, earlier: str
) -> None:
    import psycopg

    fresh = pg_database.new_schema()
    open_and_close(fresh)
    upgraded = pg_database.new_schema()
    with psycopg.connect(upgraded, autocommit=True) as conn:
        conn.execute((DUMPS / f"postgres-{earlier}.sql").read_text("utf-8").encode())
    before = pg_schema(upgraded)
    open_and_close(upgraded)
    assert pg_schema(upgraded) == pg_schema(fresh)
    assert pg_schema(upgraded) != before or earlier == "main-1b610e3"
    with psycopg.connect(upgraded) as conn:
        assert conn.execute("SELECT id FROM notes").fetchall() == [("x-id",)]


def test_every_table_exists_whatever_the_opening_process_imported(tmp_path: Path) -> None:
    """A process that imports only ``stores.db`` (a CLI command, a worker, a script)
    opens the same schema as the gateway does: no table waits for its module's import."""
    alone = tmp_path / "alone.sqlite3"
    code = (
        "import sys\nfrom mcp_gateway.stores.db import Database\n"
        "db = Database(sys.argv[1])\ndb.open_sync()\ndb.close_sync()\n"
    )
    subprocess.run([sys.executable, "-c", code, str(alone)], check=True, timeout=60)
    import mcp_gateway.services.app  # noqa: F401  (everything the gateway imports)

    gateway = tmp_path / "gateway.sqlite3"
    open_and_close(gateway)
    assert sqlite_schema(alone) == sqlite_schema(gateway)


@pytest.mark.parametrize("steps", [sqlite.STEPS, postgres.STEPS], ids=["sqlite", "postgres"])
def test_each_module_steps_up_one_version_at_a_time(steps: Any) -> None:
    """A step is applied when its version is above its module's: the versions of a
    module must climb 1, 2, 3 in list order, or a step would be skipped for good."""
    seen: dict[str, int] = {}
    for module, version, _ in steps:
        assert version == seen.get(module, 0) + 1, f"{module} v{version} out of order"
        seen[module] = version
