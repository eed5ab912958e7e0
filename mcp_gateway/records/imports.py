"""Records brought in by ``kioku import`` (``RecordStore.put_imported``): checked items
written inside the importer's transaction, keeping each record's id, number and history.

Ids stay unique after an import: the namespace's counter continues after the highest
imported number, and an id's ``.TAG`` must be the namespace's tag here (taken on
import when the namespace has none yet), so a later ``record_add`` never makes an id
that already exists.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from mcp_gateway.common.errors import InvalidInput, KiokuError
from mcp_gateway.records import queries
from mcp_gateway.records.model import Edge, HistoryEntry, Record

Imported = tuple[Record, list[HistoryEntry], list[Edge]]


def put(conn: sqlite3.Connection, items: Sequence[Imported]) -> tuple[list[str], int]:
    """Insert the records whose id is new, then the links whose ends both exist and
    that are not there yet. Returns (added ids, links added); raises (the caller's
    transaction rolls back) when an id's tag or a link does not fit this memory."""
    added: list[str] = []
    for rec, history, edges in items:
        if conn.execute("SELECT 1 FROM records WHERE id = ?", (rec.id,)).fetchone():
            continue
        _claim_tag(conn, rec)
        queries.insert_record(conn, rec)
        # insert_record and insert_edge write the "created" and "link" entries themselves
        linking = {f"{e.relation}:{e.target}" for e in edges}
        for h in history:
            if h.field != "created" and not (h.field == "link" and h.new_value in linking):
                queries.add_history(conn, rec.id, h.field, h.old_value, h.new_value, h.at)
        conn.execute(
            "INSERT INTO record_sequences(namespace, type, project, last_seq) "
            "VALUES (?, ?, ?, ?) ON CONFLICT(namespace, type, project) DO UPDATE SET "
            # the larger of the two, written so both SQLite and PostgreSQL read it
            "last_seq = CASE WHEN excluded.last_seq > record_sequences.last_seq "
            "THEN excluded.last_seq ELSE record_sequences.last_seq END",
            (rec.namespace, rec.type, rec.project, rec.seq),
        )
        added.append(rec.id)
    linked = 0
    for _, _, edges in items:
        for e in edges:
            exists = conn.execute(
                "SELECT 1 FROM record_edges WHERE source = ? AND relation = ? AND target = ?",
                (e.source, e.relation, e.target),
            ).fetchone()
            both = conn.execute(
                "SELECT COUNT(*) FROM records WHERE id IN (?, ?)", (e.source, e.target)
            ).fetchone()[0]
            if exists or both != 2:
                continue
            try:
                queries.insert_edge(conn, e.source, e.relation, e.target, e.created_at)
            except KiokuError as exc:
                raise InvalidInput(f"link {e.source} {e.relation} {e.target}: {exc}") from None
            linked += 1
    return added, linked


def _claim_tag(conn: sqlite3.Connection, rec: Record) -> None:
    _, dot, tag = rec.id.partition(".")
    if rec.namespace == queries.DEFAULT_NAMESPACE:
        if dot:
            raise InvalidInput(f"record {rec.id}: an id in the default namespace has no .TAG")
        return
    row = conn.execute(
        "SELECT tag FROM record_namespace_tags WHERE namespace = ?", (rec.namespace,)
    ).fetchone()
    if row is not None and row[0] == tag:
        return
    taken = conn.execute("SELECT 1 FROM record_namespace_tags WHERE tag = ?", (tag,)).fetchone()
    if row is not None or not tag or taken:
        here = f".{row[0]}" if row is not None else "a tag of its own"
        raise InvalidInput(
            f"record {rec.id}: namespace {rec.namespace!r} has {here} in this memory; "
            "import it into a fresh data dir, or into the namespace it came from"
        )
    conn.execute(
        "INSERT INTO record_namespace_tags(namespace, tag) VALUES (?, ?)", (rec.namespace, tag)
    )
