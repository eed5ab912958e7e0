"""The note store: SQLite rows are the truth; a note exists once its row is committed.

``embedded_model`` records which embedding model last indexed the note's dense vector,
so the reconcile job can find notes whose vector is missing or stale.

``content_hash`` (sha256 of the text with whitespace runs collapsed) deduplicates: adding
a note whose text, type and namespace match a live note returns that note instead of a
second copy. Lookup and insert run in one ``BEGIN IMMEDIATE`` transaction, so two
identical adds racing each other still store one row.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Sequence
from typing import Any

from ulid import ULID

from mcp_gateway.common.errors import NotFound
from mcp_gateway.common.inputs import NoteChanges, NoteFields
from mcp_gateway.common.types import Note
from mcp_gateway.stores.db import Database
from mcp_gateway.stores.note_keys import backfill, normalised, text_key

# a row read whole is a Note: the columns are its fields
_COLUMNS = ", ".join(Note.model_fields)
EDITABLE = tuple(NoteChanges.model_fields)


def _note(row: sqlite3.Row) -> Note:
    data = dict(row)
    data["deleted"] = bool(data["deleted"])
    return Note(**data)


def _change(
    conn: sqlite3.Connection, row: sqlite3.Row, changes: dict[str, Any], now: float
) -> list[str]:
    """Apply ``changes`` to the note ``row`` inside the caller's transaction: each real
    change a history entry; a new text gets its dedup key and is marked for re-embedding."""
    note_id = row["id"]
    changed = [f for f, v in changes.items() if f in EDITABLE and row[f] != v]
    for field in changed:
        conn.execute(
            "INSERT INTO note_history VALUES (?, ?, ?, ?, ?)",
            (note_id, now, field, row[field], changes[field]),
        )
    if changed:
        sets = ", ".join(f"{f} = ?" for f in changed)
        # a new text or type needs a new dense vector: mark it pending
        reembed = ", embedded_model = NULL" if "text" in changed else ""
        conn.execute(
            f"UPDATE notes SET {sets}, updated_at = ?{reembed} WHERE id = ?",
            (*[changes[f] for f in changed], now, note_id),
        )
        if "text" in changed:
            conn.execute(
                "UPDATE notes SET content_hash = ? WHERE id = ?",
                (text_key(changes["text"]), note_id),
            )
    return changed


class NoteStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def add(self, fields: NoteFields, namespace: str = "default") -> Note:
        """Store a note, or return the identical live note already stored (same
        normalised text, type and namespace; see ``add_or_existing``)."""
        note, _created = await self.add_or_existing(fields, namespace)
        return note

    async def add_or_existing(
        self, fields: NoteFields, namespace: str = "default"
    ) -> tuple[Note, bool]:
        """(note, True) for a new note; (the existing note, False) for an exact repeat.
        ``fields`` come checked (``NoteFields.checked``: the service's job)."""
        now = time.time()
        note = Note(
            id=str(ULID()),
            **fields.model_dump(),
            namespace=namespace,
            created_at=now,
            updated_at=now,
        )
        key, same = text_key(note.text), normalised(note.text)
        row = note.model_dump(exclude={"embedded_model"})
        row["deleted"] = 0
        row["content_hash"] = key

        def apply(conn: sqlite3.Connection) -> tuple[Note, bool]:
            backfill(conn)
            for found in conn.execute(
                f"SELECT {_COLUMNS} FROM notes WHERE namespace = ? AND type = ? "
                "AND content_hash = ? AND deleted = 0 ORDER BY id",
                (namespace, note.type, key),
            ):
                if normalised(found["text"]) == same:  # not just the same hash
                    return _note(found), False
            conn.execute(
                f"INSERT INTO notes ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})",
                tuple(row.values()),
            )
            return note, True

        return await self.db.transaction(apply)

    async def get(self, note_id: str, *, include_deleted: bool = False) -> Note:
        rows = await self.db.fetchall(f"SELECT {_COLUMNS} FROM notes WHERE id = ?", (note_id,))
        if not rows or (rows[0]["deleted"] and not include_deleted):
            raise NotFound(f"no note with id {note_id!r}", kind="note")
        return _note(rows[0])

    async def get_many(self, ids: Sequence[str]) -> dict[str, Note]:
        if not ids:
            return {}
        marks = ",".join("?" * len(ids))
        rows = await self.db.fetchall(
            f"SELECT {_COLUMNS} FROM notes WHERE deleted = 0 AND id IN ({marks})", ids
        )
        return {row["id"]: _note(row) for row in rows}

    async def update(self, note_id: str, changes: NoteChanges) -> tuple[Note, list[str]]:
        """Apply ``changes`` (checked), keeping each old value in history.

        Returns the updated note and the names of the fields that really changed.
        """

        def apply(conn: sqlite3.Connection) -> list[str]:
            row = conn.execute(
                "SELECT * FROM notes WHERE id = ? AND deleted = 0", (note_id,)
            ).fetchone()
            if row is None:
                raise NotFound(f"no note with id {note_id!r}", kind="note")
            return _change(conn, row, changes.given(), time.time())

        changed = await self.db.transaction(apply)
        return await self.get(note_id), changed

    async def set_deleted(self, note_id: str, deleted: bool) -> Note:
        def apply(conn: sqlite3.Connection) -> None:
            row = conn.execute("SELECT deleted FROM notes WHERE id = ?", (note_id,)).fetchone()
            if row is None:
                raise NotFound(f"no note with id {note_id!r}", kind="note")
            if bool(row["deleted"]) != deleted:
                now = time.time()
                conn.execute(
                    "INSERT INTO note_history VALUES (?, ?, 'deleted', ?, ?)",
                    (note_id, now, str(bool(row["deleted"])), str(deleted)),
                )
                # a restored note is re-embedded: its point was removed on delete
                conn.execute(
                    "UPDATE notes SET deleted = ?, updated_at = ?, "
                    "embedded_model = CASE WHEN ? = 1 THEN embedded_model END WHERE id = ?",
                    (int(deleted), now, int(deleted), note_id),
                )

        await self.db.transaction(apply)
        return await self.get(note_id, include_deleted=True)

    def put_imported(
        self,
        conn: sqlite3.Connection,
        notes: Sequence[Note],
        history: dict[str, list[tuple[float, str, str | None, str | None]]],
        replace: set[str],
    ) -> tuple[list[str], int, int]:
        """Write imported (already validated) notes inside the caller's transaction, so
        an import of notes and records commits whole or not at all.

        A new id is inserted with its ``history`` and dedup key. An id already stored
        is kept, unless it is in ``replace``, live, and its text differs: then the text
        changes as ``update`` changes it (history, dedup key, re-embedding). Returns
        (ids to index, inserted, updated)."""
        fresh: list[str] = []
        inserted = updated = 0
        for note in notes:
            row = conn.execute("SELECT * FROM notes WHERE id = ?", (note.id,)).fetchone()
            if row is not None:
                if note.id in replace and not row["deleted"]:
                    if _change(conn, row, {"text": note.text}, time.time()):
                        fresh.append(note.id)
                        updated += 1
                continue
            data = note.model_dump(exclude={"embedded_model"})
            data["deleted"] = int(note.deleted)
            data["content_hash"] = text_key(note.text)
            conn.execute(
                f"INSERT INTO notes ({', '.join(data)}) VALUES ({', '.join('?' * len(data))})",
                tuple(data.values()),
            )
            conn.executemany(
                "INSERT INTO note_history VALUES (?, ?, ?, ?, ?)",
                [(note.id, *h) for h in history.get(note.id, [])],
            )
            inserted += 1
            if not note.deleted:  # deleted notes come back restorable, unindexed
                fresh.append(note.id)
        return fresh, inserted, updated

    async def recent(
        self,
        types: Sequence[str],
        *,
        namespaces: Sequence[str],
        domain: str = "",
        limit: int = 3,
        priority: str | None = None,
    ) -> list[Note]:
        """The newest live notes of ``types`` (by creation time)."""
        if limit <= 0 or not types:
            return []
        return await self._newest(
            namespaces,
            "created_at DESC, id DESC",
            limit,
            types=types,
            domain=domain,
            priority=priority,
        )

    async def newest(
        self,
        *,
        namespaces: Sequence[str],
        type: str = "",
        domain: str = "",
        priority: str | None = None,
        deleted: bool = False,
        before_id: str = "",
        limit: int = 50,
    ) -> list[Note]:
        """Live notes (``deleted``: the deleted ones instead) in ``namespaces``, newest
        written first: by ``created_at``, the time shown beside each note (an imported
        note keeps the time it was written, and its id need not follow that time);
        ``before_id`` pages on after that note."""
        types = [type] if type else []
        before: tuple[float, str] | None = None
        if before_id:
            rows = await self.db.fetchall("SELECT created_at FROM notes WHERE id = ?", (before_id,))
            # an unknown id pages from the start (the CLI passes back ids it was given)
            before = (float(rows[0]["created_at"]), before_id) if rows else None
        return await self._newest(
            namespaces,
            "created_at DESC, id DESC",
            limit,
            types=types,
            domain=domain,
            priority=priority,
            deleted=deleted,
            before=before,
        )

    async def pending_newest(self, limit: int) -> list[Note]:
        """Live notes whose dense vector is not in the index yet, newest first (every
        namespace: the owner's prefetch embeds them, ``prefetch``)."""
        sql = (
            f"SELECT {_COLUMNS} FROM notes WHERE embedded_model IS NULL AND deleted = 0 "
            "ORDER BY created_at DESC, id DESC LIMIT ?"
        )
        return [_note(r) for r in await self.db.fetchall(sql, (limit,))]

    async def _newest(
        self,
        namespaces: Sequence[str],
        order: str,
        limit: int,
        *,
        types: Sequence[str] = (),
        domain: str = "",
        priority: str | None = None,
        deleted: bool = False,
        before: tuple[float, str] | None = None,
    ) -> list[Note]:
        if not namespaces:
            return []
        where = [f"namespace IN ({','.join('?' * len(namespaces))})", f"deleted = {int(deleted)}"]
        params: list[Any] = list(namespaces)
        if types:
            where.append(f"type IN ({','.join('?' * len(types))})")
            params.extend(types)
        if domain:
            where.append("domain = ?")
            params.append(domain)
        if priority is not None:
            where.append("priority = ?")
            params.append(priority)
        if before is not None:  # keyset paging on the order (created_at, id)
            where.append("(created_at < ? OR (created_at = ? AND id < ?))")
            params.extend((before[0], before[0], before[1]))
        sql = f"SELECT {_COLUMNS} FROM notes WHERE {' AND '.join(where)} ORDER BY {order} LIMIT ?"
        return [_note(r) for r in await self.db.fetchall(sql, (*params, limit))]

    async def mark_embedded(self, versions: dict[str, float], model_id: str) -> None:
        """Mark notes as indexed with a dense vector of ``model_id``, unless they changed
        after the version that was indexed."""
        if not versions:
            return
        await self.db.transaction(
            lambda c: c.executemany(
                "UPDATE notes SET embedded_model = ? WHERE id = ? AND updated_at = ?",
                [(model_id, nid, ts) for nid, ts in versions.items()],
            )
        )

    async def page(self, after_id: str = "", limit: int = 500) -> list[Note]:
        """Live notes in id order, for rebuilds and reconciliation."""
        rows = await self.db.fetchall(
            f"SELECT {_COLUMNS} FROM notes WHERE deleted = 0 AND id > ? ORDER BY id LIMIT ?",
            (after_id, limit),
        )
        return [_note(r) for r in rows]

    async def history(self, note_id: str) -> list[dict[str, Any]]:
        rows = await self.db.fetchall(
            "SELECT changed_at, field, old_value, new_value FROM note_history "
            "WHERE note_id = ? ORDER BY changed_at",
            (note_id,),
        )
        return [dict(r) for r in rows]

    async def counts(self) -> dict[str, int]:
        rows = await self.db.fetchall(
            "SELECT type, deleted, embedded_model IS NULL AS pending, COUNT(*) AS n "
            "FROM notes GROUP BY type, deleted, pending"
        )
        out: dict[str, int] = {"total": 0, "deleted": 0, "pending_embedding": 0}
        for r in rows:
            if r["deleted"]:
                out["deleted"] += r["n"]
                continue
            out["total"] += r["n"]
            out[f"type:{r['type']}"] = out.get(f"type:{r['type']}", 0) + r["n"]
            if r["pending"]:
                out["pending_embedding"] += r["n"]
        return out

    async def solved(self, limit: int = 5000) -> list[Note]:
        rows = await self.db.fetchall(
            f"SELECT {_COLUMNS} FROM notes WHERE deleted = 0 AND solved_query != '' "
            "ORDER BY created_at DESC LIMIT ?",
            (limit,),
        )
        return [_note(r) for r in rows]
