"""Record use cases: add, link, show, search, update, graph -- with the index and job
follow-ups every door needs (MCP tools, CLI, memory browser)."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from mcp_gateway.common.access import Scope
from mcp_gateway.common.inputs import RecordChanges, RecordFields
from mcp_gateway.records.model import (
    Edge,
    Record,
    RecordAdded,
    RecordGraph,
    RecordLinked,
    RecordSearchResponse,
    RecordUpdated,
    RecordView,
)
from mcp_gateway.services.app import AppContext

log = logging.getLogger(__name__)

# Fields whose change alters search text or lifecycle; action_state alone does not.
_INDEXED_FIELDS = frozenset({"title", "content", "status"})


class RecordService:
    def __init__(self, app: AppContext) -> None:
        self.app = app

    async def add(self, scope: Scope, fields: RecordFields) -> RecordAdded:
        records = self.app.records
        rec, created = await records.add_or_existing(fields, scope)
        view = await records.show(rec.id, scope=scope)
        edges = [e for e in view.edges if e.source == rec.id]
        await self.changed([rec.id, *(e.target for e in edges)])
        return RecordAdded(
            record=rec, links=edges, status="stored" if created else "already_stored"
        )

    async def link(self, scope: Scope, *, source: str, relation: str, target: str) -> RecordLinked:
        edge: Edge = await self.app.records.link(source, relation, target, scope=scope)
        await self.changed([edge.source, edge.target])
        return RecordLinked(edge=edge)

    async def show(self, scope: Scope, id: str) -> RecordView:
        return await self.app.records.show(id, scope=scope)

    async def search(
        self,
        scope: Scope,
        *,
        query: str,
        type: str = "",
        current_only: bool = False,
        limit: int = 10,
    ) -> RecordSearchResponse:
        hits = await self.app.records.search(query, type, current_only, limit, scope=scope)
        return RecordSearchResponse(query=query, type=type, current_only=current_only, hits=hits)

    async def update(self, scope: Scope, id: str, changes: RecordChanges) -> RecordUpdated:
        out = await self.app.records.update(id, changes, scope)
        if any(c.field in _INDEXED_FIELDS for c in out.changes):
            await self.changed([out.record.id])
        return out

    async def recent(self, scope: Scope, limit: int = 30) -> list[Record]:
        """Current records the scope reads, newest first."""
        return await self.app.records.list_current(limit=limit, namespaces=scope.read)

    async def graph(self, scope: Scope, id: str) -> RecordGraph:
        await self.app.records.show(id, scope=scope)  # the same not-found answer as show
        graph = await self.app.records.graph(id)
        graph.records = {k: r for k, r in graph.records.items() if scope.can_read(r.namespace)}
        graph.edges = [
            e for e in graph.edges if e.source in graph.records and e.target in graph.records
        ]
        return graph

    async def changed(self, ids: Sequence[str]) -> None:
        """Rewrite the records' points (lifecycle flags, text) and queue embeddings."""
        # The write is committed: a failing follow-up must not turn it into an error
        # (reconcile rewrites records whose point is missing or stale).
        app = self.app
        try:
            pending = await app.indexer.put_records(ids)
            await app.jobs.records_changed([r.id for r in pending])
        except Exception:
            log.exception("could not re-index records %s", list(ids))
