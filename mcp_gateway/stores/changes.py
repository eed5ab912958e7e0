"""The change feed: which notes and records changed, in commit order.

Every gateway keeps its own index current from the truth store. Vectors carry their own
commit-ordered ``seq`` (``stores.vectors``); this table does the same for the items
themselves, so a gateway learns of a note added, edited or deleted, or a record written
or linked, by *any* process, with one indexed read: ``since(n)``.

One row per item (``(kind, source_id)`` is the key): a write moves the item's row to a
new ``seq``, so the table grows with the number of items, never with the number of
writes, and nothing needs pruning. The seq comes from the single-row ``change_seq``
counter, updated in the writing transaction: SQLite serialises writers; on PostgreSQL
the counter's row lock serialises committing writers, so a reader never sees seq N+1
committed before N (a sequence/BIGSERIAL would be handed out in start order, not commit
order, and a follower could skip a late commit for good).

The rows are written by triggers on the owners' tables, in the owners' transactions
(SQLite triggers; PL/pgSQL trigger functions on PostgreSQL):
every path that writes a note or a record (tools, imports, the memory browser, a
restore) feeds the feed without knowing of it. The triggers fire only on the columns a
point is built from, so ``notes.embedded_model`` (written by every gateway that applies a
vector) never re-enters the feed.
"""

from __future__ import annotations

from dataclasses import dataclass

# the watched tables' migrations must be registered wherever this one is: a process
# that opened a new database without them would fail creating the triggers
from mcp_gateway.records import schema as _records_schema  # noqa: F401
from mcp_gateway.stores import notes_schema as _notes_schema  # noqa: F401
from mcp_gateway.stores.db import Database, register_migration

# ``INSERT`` into ``changes`` at the counter's new value; ``{kind}``/``{sid}`` filled in
_BUMP = """
    UPDATE change_seq SET last = last + 1 WHERE id = 1;
    INSERT INTO changes(kind, source_id, seq) SELECT '{kind}', {sid}, last FROM change_seq
    WHERE id = 1 ON CONFLICT(kind, source_id) DO UPDATE SET seq = excluded.seq;
"""


def _trigger(name: str, event: str, table: str, kind: str, *sids: str) -> str:
    body = "".join(_BUMP.format(kind=kind, sid=sid) for sid in sids)
    return f"CREATE TRIGGER {name} AFTER {event} ON {table} BEGIN{body}END;\n"


# The point of a note is built from these columns (indexing.points.note_point); of a
# record from its text, lifecycle and namespace, and the edges that supersede it.
_NOTE_COLUMNS = "text, type, priority, domain, solved_query, namespace, deleted"
_RECORD_COLUMNS = "title, content, status, type, namespace"

# Migrations run in module-name order; the name sorts after "notes" and "records", whose
# tables the triggers watch. A later migration that rebuilds one of those tables must
# recreate its trigger here (``tests/test_feed.py`` checks every trigger exists).
MODULE = "zz_changes"
TRIGGERS = (
    "changes_note_insert",
    "changes_note_update",
    "changes_note_delete",
    "changes_record_insert",
    "changes_record_update",
    "changes_edge_insert",
    "changes_edge_delete",
)

register_migration(
    MODULE,
    1,
    """
    CREATE TABLE changes (
        kind TEXT NOT NULL,
        source_id TEXT NOT NULL,
        seq INTEGER NOT NULL,
        PRIMARY KEY (kind, source_id)
    );
    CREATE INDEX changes_seq ON changes(seq);
    CREATE TABLE change_seq (id INTEGER PRIMARY KEY CHECK (id = 1), last INTEGER NOT NULL);
    INSERT INTO change_seq VALUES (1, 0);
    """
    + _trigger(TRIGGERS[0], "INSERT", "notes", "note", "NEW.id")
    + _trigger(TRIGGERS[1], f"UPDATE OF {_NOTE_COLUMNS}", "notes", "note", "NEW.id")
    + _trigger(TRIGGERS[2], "DELETE", "notes", "note", "OLD.id")
    + _trigger(TRIGGERS[3], "INSERT", "records", "record", "NEW.id")
    + _trigger(TRIGGERS[4], f"UPDATE OF {_RECORD_COLUMNS}", "records", "record", "NEW.id")
    + _trigger(TRIGGERS[5], "INSERT", "record_edges", "record", "NEW.source", "NEW.target")
    + _trigger(TRIGGERS[6], "DELETE", "record_edges", "record", "OLD.source", "OLD.target"),
)


def _pg_function(name: str, kind: str, *columns: str) -> str:
    """A trigger function feeding ``(kind, <row>.<column>)`` for each column."""
    new = "".join(f"PERFORM kioku_change('{kind}', NEW.{c}); " for c in columns)
    old = "".join(f"PERFORM kioku_change('{kind}', OLD.{c}); " for c in columns)
    return (
        f"CREATE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
        f"IF TG_OP = 'DELETE' THEN {old}RETURN OLD; END IF; {new}RETURN NEW; END $$;\n"
    )


def _pg_trigger(name: str, event: str, table: str, function: str) -> str:
    each = f"FOR EACH ROW EXECUTE FUNCTION {function}()"
    return f"CREATE TRIGGER {name} AFTER {event} ON {table} {each};\n"


register_migration(
    MODULE,
    1,
    """
    CREATE TABLE changes (
        kind TEXT NOT NULL,
        source_id TEXT NOT NULL,
        seq BIGINT NOT NULL,
        PRIMARY KEY (kind, source_id)
    );
    CREATE INDEX changes_seq ON changes(seq);
    CREATE TABLE change_seq (id INTEGER PRIMARY KEY CHECK (id = 1), last BIGINT NOT NULL);
    INSERT INTO change_seq VALUES (1, 0);
    CREATE FUNCTION kioku_change(p_kind TEXT, p_source TEXT) RETURNS void LANGUAGE plpgsql
    AS $$ BEGIN
        WITH bumped AS (UPDATE change_seq SET last = last + 1 WHERE id = 1 RETURNING last)
        INSERT INTO changes(kind, source_id, seq) SELECT p_kind, p_source, last FROM bumped
        ON CONFLICT (kind, source_id) DO UPDATE SET seq = excluded.seq;
    END $$;
    """
    + _pg_function("changes_note", "note", "id")
    + _pg_function("changes_record", "record", "id")
    + _pg_function("changes_edge", "record", "source", "target")
    + _pg_trigger(TRIGGERS[0], "INSERT", "notes", "changes_note")
    + _pg_trigger(TRIGGERS[1], f"UPDATE OF {_NOTE_COLUMNS}", "notes", "changes_note")
    + _pg_trigger(TRIGGERS[2], "DELETE", "notes", "changes_note")
    + _pg_trigger(TRIGGERS[3], "INSERT", "records", "changes_record")
    + _pg_trigger(TRIGGERS[4], f"UPDATE OF {_RECORD_COLUMNS}", "records", "changes_record")
    + _pg_trigger(TRIGGERS[5], "INSERT", "record_edges", "changes_edge")
    + _pg_trigger(TRIGGERS[6], "DELETE", "record_edges", "changes_edge"),
    dialect="postgres",
)


@dataclass(frozen=True, slots=True)
class Change:
    kind: str  # "note" | "record"
    source_id: str
    seq: int


class ChangeFeed:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def since(self, after_seq: int, limit: int = 512) -> list[Change]:
        """Items changed after ``after_seq``, oldest first (each once, at its last seq)."""
        rows = await self.db.fetchall(
            "SELECT kind, source_id, seq FROM changes WHERE seq > ? ORDER BY seq LIMIT ?",
            (after_seq, limit),
        )
        return [Change(r["kind"], r["source_id"], int(r["seq"])) for r in rows]

    async def heads(self) -> tuple[int, int]:
        """(last change seq, last vector seq): one read tells a follower whether it is
        behind either feed (read-your-writes before a search)."""
        rows = await self.db.fetchall(
            "SELECT (SELECT last FROM change_seq WHERE id = 1) AS c, "
            "(SELECT last FROM vector_seq WHERE id = 1) AS v"
        )
        return (int(rows[0]["c"] or 0), int(rows[0]["v"] or 0)) if rows else (0, 0)

    async def triggers(self) -> set[str]:
        """The feed's triggers present in the database (a check, not a hot path)."""
        sql = (
            "SELECT t.tgname AS name FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid "
            "JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = current_schema() AND starts_with(t.tgname, 'changes_')"
            if self.db.dialect == "postgres"
            else "SELECT name FROM sqlite_master WHERE type = 'trigger' AND name LIKE 'changes_%'"
        )
        rows = await self.db.fetchall(sql)
        return {r["name"] for r in rows}
