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
(SQLite triggers; PL/pgSQL trigger functions on PostgreSQL; ``stores.schema``):
every path that writes a note or a record (tools, imports, the memory browser, a
restore) feeds the feed without knowing of it. The triggers fire only on the columns a
point is built from, so ``notes.embedded_model`` (written by every gateway that applies a
vector) never re-enters the feed.
"""

from __future__ import annotations

from dataclasses import dataclass

from mcp_gateway.stores.db import Database


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
