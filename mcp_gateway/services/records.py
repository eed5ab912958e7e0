"""Record use cases: add, link, show, search, update, graph -- with the index and job
follow-ups every door needs (MCP tools, CLI, memory browser)."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from mcp_gateway.common.access import Scope
from mcp_gateway.common.errors import InvalidInput
from mcp_gateway.common.inputs import RecordChanges, RecordFields
from mcp_gateway.common.types import SearchResult
from mcp_gateway.records import validate as v
from mcp_gateway.records.matching import search_hit
from mcp_gateway.records.model import (
    Edge,
    Record,
    RecordAdded,
    RecordGraph,
    RecordLinked,
    RecordSearchHit,
    RecordSearchResponse,
    RecordUpdated,
    RecordView,
)
from mcp_gateway.records.reads import MAX_SEARCH_LIMIT
from mcp_gateway.search.request import SearchRequest
from mcp_gateway.services.app import AppContext

log = logging.getLogger(__name__)

# Fields whose change alters search text or lifecycle; action_state alone does not.
_INDEXED_FIELDS = frozenset({"title", "content", "status"})
# full-text hits read beside the unified search: which version matched, retired versions
MAX_TEXT_HITS = 100


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
        """By meaning and by rare words: the unified search over records alone (dense,
        BM25 and the further channels fused; a record alone holding an identifier or a
        name of the query first), keeping only what is close by meaning or pinned, so
        a match on common words alone ("in", "logs") does not come back. Full text
        (``records.search``: every language, inside Japanese and Thai runs) checks the
        input and names which version matched; with ``current_only`` false, the
        retired versions it finds follow their head, or stand in its place when only
        their words matched. Without a dense channel, full text alone answers."""
        if not 1 <= limit <= MAX_SEARCH_LIMIT:
            raise InvalidInput(f"limit must be between 1 and {MAX_SEARCH_LIMIT}, got {limit}")
        text = await self.app.records.search(query, type, current_only, MAX_TEXT_HITS, scope=scope)
        rtype = v.record_type(type) if type.strip() else ""
        found = await self.app.search.search(
            SearchRequest(
                query=query,
                type=rtype,
                top=limit,
                namespaces=scope.read,
                kinds=("record",),
                by_meaning=True,
            )
        )
        if not found.dense_available:  # no meaning to go by (the embedder is down)
            return RecordSearchResponse(
                query=query, type=type, current_only=current_only, hits=text[:limit]
            )
        hits = await self._hits(found.results, text, current_only, scope)
        return RecordSearchResponse(
            query=query, type=type, current_only=current_only, hits=hits[:limit]
        )

    async def _hits(
        self,
        results: Sequence[SearchResult],
        text: Sequence[RecordSearchHit],
        current_only: bool,
        scope: Scope,
    ) -> list[RecordSearchHit]:
        """The unified search's records (current heads) as hits, in its order and with
        its scores; each head's retired versions found by full text after it unless
        ``current_only``."""
        ids = [r.id for r in results if r.kind == "record"]
        records = await self.app.records.get_many(ids)
        by_text = {h.id: h for h in text}
        versions: dict[str, list[RecordSearchHit]] = {}
        if not current_only:
            retired = [h.id for h in text if not h.current]
            heads = await self.app.records.heads_view(retired, scope.read) if retired else {}
            for h in text:
                head = heads.get(h.id, {}).get("id")
                if head in records:
                    versions.setdefault(head, []).append(h)
        out: list[RecordSearchHit] = []
        for result in results:
            rec = records.get(result.id)
            if rec is None:
                continue
            older = [o.model_copy(update={"score": result.score}) for o in versions.get(rec.id, [])]
            if rec.id in by_text or not older:  # the head matched itself, or by meaning
                matched = by_text[rec.id].matched_id if rec.id in by_text else rec.id
                out.append(search_hit(rec, matched, result.score, True))
            out += older  # only an old version's words matched: it stands for its head
        first: dict[str, RecordSearchHit] = {}
        for hit in out:  # each record once, in its first place
            first.setdefault(hit.id, hit)
        return list(first.values())

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
