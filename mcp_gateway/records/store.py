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
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from typing import Any

from mcp_gateway.common.access import Scope, unseen
from mcp_gateway.common.errors import InvalidInput, NotFound
from mcp_gateway.records import imports, matching, queries
from mcp_gateway.records import validate as v
from mcp_gateway.records.fts import parse_query
from mcp_gateway.records.model import (
    CLOSING_STATUSES,
    Edge,
    Record,
    RecordGraph,
    RecordSearchHit,
    RecordUpdated,
    RecordView,
)
from mcp_gateway.stores.db import Database

log = logging.getLogger(__name__)

MAX_SEARCH_LIMIT = 100
# Links that only point at a record; every other relation changes the target's state
# or what its readers see (superseded, duplicated, resolved, verified, contradicted),
# so it needs write access to the target's namespace.
_READ_ONLY_RELATIONS = frozenset({"references"})


class RecordStore:
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

    # -- writes --------------------------------------------------------------------------
    async def add(
        self,
        type: str,
        title: str,
        content: str = "",
        status: str = "open",
        action_state: str = "actionable",
        links: Sequence[str] = (),
        project: str = "",
        scope: Scope | None = None,
    ) -> Record:
        """``add_or_existing`` without the flag: the new record, or the existing repeat."""
        rec, _ = await self.add_or_existing(
            type, title, content, status, action_state, links, project, scope
        )
        return rec

    async def add_or_existing(
        self,
        type: str,
        title: str,
        content: str = "",
        status: str = "open",
        action_state: str = "actionable",
        links: Sequence[str] = (),
        project: str = "",
        scope: Scope | None = None,
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
        rtype = v.record_type(type)
        code = v.project(project) if project.strip() else self.project
        title = v.title(title, self.max_title_chars)
        content = v.content(content, self.max_content_bytes)
        st = v.status(status)
        act = v.action_state(action_state)
        if st in CLOSING_STATUSES and act == "actionable":
            act = "done"
        parsed = [v.parse_link(link) for link in links]

        namespace = scope.write if scope else queries.DEFAULT_NAMESPACE

        def write(conn: sqlite3.Connection) -> tuple[Record, bool]:
            for rel, target in parsed:
                _require(conn, target, scope, write=rel not in _READ_ONLY_RELATIONS)
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
            _require(conn, src, scope, write=True)
            _require(conn, tgt, scope, write=rel not in _READ_ONLY_RELATIONS)
            return queries.insert_edge(conn, src, rel, tgt, time.time())

        edge = await self.db.transaction(write)
        log.info("edge %s %s %s added", src, rel, tgt)
        return edge

    async def update(
        self,
        id: str,
        title: str | None = None,
        content: str | None = None,
        status: str | None = None,
        action_state: str | None = None,
        scope: Scope | None = None,
    ) -> RecordUpdated:
        """Change fields; each real change is a history entry, same values change nothing.

        Changing status to resolved/accepted also sets action_state to "done", unless
        this call sets action_state itself.
        """
        if title is None and content is None and status is None and action_state is None:
            raise InvalidInput("nothing to update: give title, content, status or action_state")
        wanted: dict[str, str] = {}
        if title is not None:
            wanted["title"] = v.title(title, self.max_title_chars)
        if content is not None:
            wanted["content"] = v.content(content, self.max_content_bytes)
        if status is not None:
            wanted["status"] = v.status(status)
        if action_state is not None:
            wanted["action_state"] = v.action_state(action_state)
        rid = v.record_id(id)

        def write(conn: sqlite3.Connection) -> RecordUpdated:
            rec = _require(conn, rid, scope, write=True)
            current = rec.model_dump()
            changes = {f: val for f, val in wanted.items() if current[f] != val}
            closing = changes.get("status") in CLOSING_STATUSES
            if closing and "action_state" not in wanted and rec.action_state != "done":
                changes["action_state"] = "done"
            now = time.time()
            entries = []
            for field, val in changes.items():
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

    # -- reads ---------------------------------------------------------------------------
    async def get(self, id: str) -> Record:
        rid = v.record_id(id)
        return await self.db.run(lambda conn: queries.get_record(conn, rid))

    async def show(self, id: str, scope: Scope | None = None) -> RecordView:
        rid = v.record_id(id)

        def read(conn: sqlite3.Connection) -> RecordView:
            rec = _require(conn, rid, scope, write=False)
            edges, visible = _visible_edges(conn, rid, queries.edges_touching(conn, rid), scope)
            return RecordView(
                record=rec,
                lifecycle=queries.lifecycle_of(conn, rid, edges, visible),
                edges=edges,
                history=queries.history(conn, rid),
            )

        return await self.db.run(read)

    async def search(
        self,
        query: str,
        type: str = "",
        current_only: bool = False,
        limit: int = 10,
        scope: Scope | None = None,
    ) -> list[RecordSearchHit]:
        """Full-text search of titles and contents, best first.

        ``current_only`` replaces every hit by its lifecycle head and lists each head
        once, so old wording of a superseded record finds the record now in force.
        """
        if not 1 <= limit <= MAX_SEARCH_LIMIT:
            raise InvalidInput(f"limit must be between 1 and {MAX_SEARCH_LIMIT}, got {limit}")
        rtype = v.record_type(type) if type.strip() else ""
        parsed = parse_query(query)

        namespaces = list(scope.read) if scope is not None else []

        def read(conn: sqlite3.Connection) -> list[RecordSearchHit]:
            scored = matching.candidates(conn, parsed, namespaces, self.db.dialect)
            recs = queries.records_by_pk(conn, list(scored))
            matched = [(recs[pk], recs[pk].id, s) for pk, s in scored.items() if pk in recs]
            if current_only:
                matched = matching.resolve_heads(conn, matched)
            kept = [
                (r, m, s)
                for r, m, s in matched
                if (not rtype or r.type == rtype) and (scope is None or scope.can_read(r.namespace))
            ]
            kept.sort(key=lambda hit: (-hit[2], -hit[0].created_at))
            step = queries.successors(conn)
            return [
                matching.search_hit(r, m, s, current_only or not step(r.id))
                for r, m, s in kept[:limit]
            ]

        return await self.db.run(read)

    async def list_current(
        self,
        types: Sequence[str] = (),
        action_states: Sequence[str] = (),
        limit: int = 500,
        namespaces: Sequence[str] = (),
        open_work: bool = False,
    ) -> list[Record]:
        """Current records (not superseded, not duplicates), newest first.

        ``types``, ``action_states`` and ``namespaces`` filter (an empty one means any),
        e.g. ``types=["decision"]`` or ``action_states=["actionable"]`` for session context;
        ``open_work`` drops what verified fixes settled (``queries.OPEN_WORK_FILTER``).
        """
        tlist = [v.record_type(t) for t in types]
        alist = [v.action_state(a) for a in action_states]
        where, params = queries.current_filter(tlist, alist, list(namespaces))
        if open_work:
            where = f"{where} AND {queries.OPEN_WORK_FILTER}"

        def read(conn: sqlite3.Connection) -> list[Record]:
            return queries.select_records(
                conn, f"{where} ORDER BY created_at DESC, pk DESC LIMIT ?", [*params, limit]
            )

        return await self.db.run(read)

    async def iter_all(self, batch_size: int = 500) -> AsyncIterator[list[Record]]:
        """Every record in creation order, in batches (for a full re-index)."""
        last_pk = 0
        while True:
            rows = await self.db.fetchall(
                "SELECT pk, id FROM records WHERE pk > ? ORDER BY pk LIMIT ?",
                (last_pk, batch_size),
            )
            if not rows:
                return
            last_pk = int(rows[-1]["pk"])
            ids = [r["id"] for r in rows]
            found = await self.get_many(ids)
            yield [found[i] for i in ids if i in found]

    async def get_many(self, ids: Sequence[str]) -> dict[str, Record]:
        return await self.db.run(lambda conn: queries.records_by_id(conn, list(ids)))

    async def changed_since(self, since: float, limit: int = 1000) -> list[Record]:
        """Records whose row changed, or that gained an edge either way, after ``since``."""
        where = (
            "updated_at > ? OR id IN (SELECT source FROM record_edges WHERE created_at > ? "
            "UNION SELECT target FROM record_edges WHERE created_at > ?) "
            "ORDER BY updated_at, pk LIMIT ?"
        )
        params = [since, since, since, limit]
        return await self.db.run(lambda conn: queries.select_records(conn, where, params))

    async def current_ids(self, ids: Iterable[str]) -> set[str]:
        """Which of ``ids`` are current (for the index's ``current`` payload)."""
        wanted = [v.record_id(i) for i in ids]

        def read(conn: sqlite3.Connection) -> set[str]:
            step = queries.successors(conn)
            return {i for i in wanted if not step(i)}

        return await self.db.run(read)

    async def search_view(self, ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        """Id -> {"title", "content", "type", "status", "action_state", "created_at"} for
        the current records among ``ids`` (the unified search shows only current ones)."""
        current = await self.current_ids(ids)
        found = await self.get_many(list(current))
        fields = {"title", "content", "type", "status", "action_state", "created_at"}
        return {rid: rec.model_dump(include=fields) for rid, rec in found.items()}

    async def heads_view(
        self, ids: Sequence[str], namespaces: Sequence[str]
    ) -> dict[str, dict[str, Any]]:
        """Retired id -> {"id", "type", "namespace"} of its lifecycle head, for the
        unified search (``matching.retired_heads``)."""
        wanted = [v.record_id(i) for i in ids]
        return await self.db.run(lambda conn: matching.retired_heads(conn, wanted, namespaces))

    async def export_view(
        self, namespaces: Sequence[str] = (), limit: int = 50
    ) -> dict[str, list[dict[str, Any]]]:
        """Current decisions (not rejected) and open work -- current actionable audits
        and fixes, less a verified fix and an audit a verified fix resolves
        (``queries.OPEN_WORK_FILTER``) -- in ``namespaces``, newest first, for
        session_context.md; titles on one line. Knowledge and verification records are
        facts, not work, and decisions have their own section: neither is open work."""
        decisions = await self.list_current(
            types=["decision"], limit=limit * 2, namespaces=namespaces
        )
        actionable = await self.list_current(
            types=OPEN_WORK_TYPES,
            action_states=["actionable"],
            limit=limit,
            namespaces=namespaces,
            open_work=True,
        )
        in_force = [d for d in decisions if d.status != "rejected"][:limit]
        return {
            "decisions": [_export_item(r) for r in in_force],
            "actionable": [_export_item(r) for r in actionable],
        }

    async def counts(self) -> dict[str, int]:
        """Number of records per type, plus "total" and "current"."""
        where, params = queries.current_filter([], [], [])

        def read(conn: sqlite3.Connection) -> dict[str, int]:
            out = {
                r[0]: int(r[1])
                for r in conn.execute(
                    "SELECT type, COUNT(*) FROM records GROUP BY type ORDER BY type"
                )
            }
            out["total"] = sum(out.values())
            row = conn.execute(f"SELECT COUNT(*) FROM records WHERE {where}", params).fetchone()
            out["current"] = int(row[0])
            return out

        return await self.db.run(read)

    async def graph(self, id: str, max_nodes: int = 200) -> RecordGraph:
        """The records connected to ``id`` by any edge, breadth first, up to ``max_nodes``."""
        rid = v.record_id(id)
        return await self.db.run(lambda conn: queries.connected(conn, rid, max_nodes))


def _require(conn: sqlite3.Connection, rid: str, scope: Scope | None, *, write: bool) -> Record:
    """The record, if the caller's scope may read (or write) it; else NotFound, worded
    the same for an unknown id and another namespace's id (``unseen``)."""
    try:
        rec = queries.get_record(conn, rid)
    except NotFound:
        raise unseen(f"record {rid!r}", "record") from None
    if scope is not None:
        if write:
            scope.require_write(rec.namespace, f"record {rid!r}", "record")
        else:
            scope.require_read(rec.namespace, f"record {rid!r}", "record")
    return rec


OPEN_WORK_TYPES = ("audit", "fix")


def _visible_edges(
    conn: sqlite3.Connection, rid: str, edges: list[Edge], scope: Scope | None
) -> tuple[list[Edge], Callable[[str], bool] | None]:
    """The edges whose other end the caller may read, and that test itself: another
    tenant's record ids never appear in a view (e.g. one that references yours)."""
    if scope is None:
        return edges, None
    namespaces: dict[str, str] = {}

    def visible(other: str) -> bool:
        if other not in namespaces:
            found = queries.records_by_id(conn, [other]).get(other)
            namespaces[other] = found.namespace if found else ""
        return scope.can_read(namespaces[other])

    kept = [e for e in edges if visible(e.target if e.source == rid else e.source)]
    return kept, visible


def _export_item(rec: Record) -> dict[str, Any]:
    item = rec.model_dump(include={"id", "type", "status", "action_state", "created_at"})
    item["title"] = " ".join(rec.title.split())
    return item
