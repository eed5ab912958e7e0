"""``RecordStore``: durable lifecycle records in the shared SQLite database.

Writes run in one ``BEGIN IMMEDIATE`` transaction each (``Database.transaction``): the
id sequence, the row, its links, history entries and the FTS index (by trigger) are
written together or not at all. Nothing is overwritten without trace: every change
of a field is a history entry holding the old and the new value.
"""

from __future__ import annotations

import logging
import sqlite3
import time
from collections.abc import Callable, Sequence

from mcp_gateway.common.access import Scope
from mcp_gateway.common.errors import InvalidInput
from mcp_gateway.common.inputs import RecordChanges, RecordFields
from mcp_gateway.records import imports, queries
from mcp_gateway.records import validate as v
from mcp_gateway.records.model import (
    CLOSING_STATUSES,
    Edge,
    Record,
    RecordUpdated,
)
from mcp_gateway.records.reads import RecordReads
from mcp_gateway.records.scope_check import READ_ONLY_RELATIONS, require
from mcp_gateway.stores.db import Database

log = logging.getLogger(__name__)


class RecordStore(RecordReads):
    def __init__(
        self,
        db: Database,
        project: str,
        max_title_chars: int = v.MAX_TITLE_CHARS,
        max_content_bytes: int = v.MAX_CONTENT_BYTES,
    ) -> None:
        self.db = db
        self.project = v.project(project)
        self.max_title_chars = max_title_chars
        self.max_content_bytes = max_content_bytes

    async def add(self, fields: RecordFields, scope: Scope | None = None) -> Record:
        """``add_or_existing`` without the flag: the new record, or the existing repeat."""
        rec, _ = await self.add_or_existing(fields, scope)
        return rec

    async def add_or_existing(
        self, fields: RecordFields, scope: Scope | None = None
    ) -> tuple[Record, bool]:
        """Create a record and its outgoing ``links`` (``RELATION:TARGET_ID``) atomically;
        returns it and True.

        Created with a closing status (resolved/accepted) and the default action_state
        "actionable", the record starts as "done"; any other action_state is kept.

        An exact repeat -- the same type, title and content (whitespace runs as one space)
        in the same namespace as a current record -- is not stored twice: the existing
        record comes back with False, and only those of ``links`` it lacks are added to it
        (a repeated session re-sends what it wrote before; its status is left as it is).
        """
        rtype = v.record_type(fields.type)
        code = v.project(fields.project) if fields.project.strip() else self.project
        title = v.title(fields.title, self.max_title_chars)
        content = v.content(fields.content, self.max_content_bytes)
        st = v.status(fields.status)
        act = v.action_state(fields.action_state)
        if st in CLOSING_STATUSES and act == "actionable":
            act = "done"
        parsed = [v.parse_link(link) for link in fields.links]

        namespace = scope.write if scope else queries.DEFAULT_NAMESPACE

        def write(conn: sqlite3.Connection) -> tuple[Record, bool]:
            for rel, target in parsed:
                require(conn, target, scope, write=rel not in READ_ONLY_RELATIONS)
            same = queries.find_repeat(conn, rtype, title, content, namespace)
            if same is not None:
                now = time.time()
                for rel, target in parsed:
                    if not queries.has_edge(conn, same.id, rel, target):
                        queries.insert_edge(conn, same.id, rel, target, now)
                return same, False
            seq = queries.next_seq(conn, rtype, code, namespace)
            tag = queries.namespace_tag(conn, namespace)
            now = time.time()
            rec = Record.model_validate(
                {
                    "id": queries.record_id_for(rtype, code, seq, tag),
                    "type": rtype,
                    "project": code,
                    "seq": seq,
                    "title": title,
                    "content": content,
                    "status": st,
                    "action_state": act,
                    "created_at": now,
                    "updated_at": now,
                    "namespace": namespace,
                }
            )
            queries.insert_record(conn, rec)
            for rel, target in parsed:
                queries.insert_edge(conn, rec.id, rel, target, now)
            return rec, True

        rec, created = await self.db.transaction(write)
        if created:
            log.info("record %s added with %d link(s)", rec.id, len(parsed))
        else:
            log.info("record add repeats %s: not stored twice", rec.id)
        return rec, created

    async def link(
        self, source: str, relation: str, target: str, scope: Scope | None = None
    ) -> Edge:
        src, tgt, rel = v.record_id(source), v.record_id(target), v.relation(relation)

        def write(conn: sqlite3.Connection) -> Edge:
            require(conn, src, scope, write=True)
            require(conn, tgt, scope, write=rel not in READ_ONLY_RELATIONS)
            return queries.insert_edge(conn, src, rel, tgt, time.time())

        edge = await self.db.transaction(write)
        log.info("edge %s %s %s added", src, rel, tgt)
        return edge

    async def update(
        self, id: str, changes: RecordChanges, scope: Scope | None = None
    ) -> RecordUpdated:
        """Change fields; each real change is a history entry, same values change nothing.

        Changing status to resolved/accepted also sets action_state to "done", unless
        this call sets action_state itself.
        """
        given = changes.model_dump(exclude_none=True)
        if not given:
            *some, last = RecordChanges.model_fields
            raise InvalidInput(f"nothing to update: give {', '.join(some)} or {last}")
        checks: dict[str, Callable[[str], str]] = {
            "title": lambda text: v.title(text, self.max_title_chars),
            "content": lambda text: v.content(text, self.max_content_bytes),
            "status": v.status,
            "action_state": v.action_state,
        }
        wanted = {field: checks[field](value) for field, value in given.items()}
        rid = v.record_id(id)

        def write(conn: sqlite3.Connection) -> RecordUpdated:
            rec = require(conn, rid, scope, write=True)
            current = rec.model_dump()
            diff = {f: val for f, val in wanted.items() if current[f] != val}
            closing = diff.get("status") in CLOSING_STATUSES
            if closing and "action_state" not in wanted and rec.action_state != "done":
                diff["action_state"] = "done"
            now = time.time()
            entries = []
            for field, val in diff.items():
                queries.set_field(conn, rid, field, val, now)
                entries.append(queries.add_history(conn, rid, field, current[field], val, now))
            return RecordUpdated(
                record=queries.get_record(conn, rid), changed=bool(entries), changes=entries
            )

        out = await self.db.transaction(write)
        log.info("record %s updated: %s", rid, [c.field for c in out.changes] or "no change")
        return out

    def put_imported(
        self, conn: sqlite3.Connection, items: Sequence[imports.Imported]
    ) -> tuple[list[str], int]:
        """Checked imported records, inside the importer's transaction (``imports.put``)."""
        return imports.put(conn, items)
