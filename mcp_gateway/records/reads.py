"""``RecordReads``: what the record store answers without writing (views, search,
lists, counts); ``RecordStore`` adds the writes."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator, Iterable, Sequence
from typing import Any

from mcp_gateway.common.access import Scope
from mcp_gateway.common.errors import InvalidInput
from mcp_gateway.records import matching, queries
from mcp_gateway.records import validate as v
from mcp_gateway.records.fts import parse_query
from mcp_gateway.records.model import Record, RecordGraph, RecordSearchHit, RecordView
from mcp_gateway.records.scope_check import require, visible_edges
from mcp_gateway.stores.db import Database

MAX_SEARCH_LIMIT = 100

OPEN_WORK_TYPES = ("audit", "fix")


class RecordReads:
    db: Database

    async def get(self, id: str) -> Record:
        rid = v.record_id(id)
        return await self.db.run(lambda conn: queries.get_record(conn, rid))

    async def show(self, id: str, scope: Scope | None = None) -> RecordView:
        rid = v.record_id(id)

        def read(conn: sqlite3.Connection) -> RecordView:
            rec = require(conn, rid, scope, write=False)
            edges, visible = visible_edges(conn, rid, queries.edges_touching(conn, rid), scope)
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


def _export_item(rec: Record) -> dict[str, Any]:
    item = rec.model_dump(include={"id", "type", "status", "action_state", "created_at"})
    item["title"] = " ".join(rec.title.split())
    return item
