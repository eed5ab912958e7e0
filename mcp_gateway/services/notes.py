"""Note use cases: add, search, show, update, delete/restore, list.

One implementation for every door (MCP tools, CLI, memory browser, benches): the same
validation, the same index and job follow-ups, the same activity-log entries. Every
call takes the caller's ``Scope``; a note outside it answers exactly like an unknown id.
"""

from __future__ import annotations

import builtins
import time
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel

from mcp_gateway.common import serving
from mcp_gateway.common.access import Scope
from mcp_gateway.common.errors import NotFound
from mcp_gateway.common.events import ADD_NOTE, CHECKPOINT, SEARCH, NoteAdded, Searched
from mcp_gateway.common.inputs import (
    NoteChanges,
    NoteFields,
    NoteQuery,
    NoteRules,
)
from mcp_gateway.common.render import iso, preview
from mcp_gateway.common.types import Note, SearchResponse, point_id
from mcp_gateway.common.validation import bounded_int, checked_filter, checked_used
from mcp_gateway.records.model import RECORD_TYPES
from mcp_gateway.search.request import SearchRequest
from mcp_gateway.services.app import AppContext
from mcp_gateway.services.learning import credit_used


class AddNoteResult(BaseModel):
    id: str
    type: str
    priority: str
    status: str
    lexical_indexed: bool
    semantic_indexing: str
    credited: list[str] = []  # of ``used``: learned from (services.learning)
    not_credited: list[str] = []  # of ``used``: not shown to this caller lately


class NoteView(BaseModel):
    id: str
    text: str
    type: str
    priority: str
    domain: str
    solved_query: str
    namespace: str
    created_at: str
    updated_at: str
    deleted: bool
    embedded_model: str | None
    history: list[dict[str, Any]] = []


class NoteUpdated(BaseModel):
    note: NoteView
    changed: list[str]


class NoteList(BaseModel):
    notes: list[NoteView]
    next_after: str = ""


def note_view(note: Note, history: list[dict[str, Any]] | None = None) -> NoteView:
    data = note.model_dump()
    data["created_at"], data["updated_at"] = iso(note.created_at), iso(note.updated_at)
    changes = [{**h, "changed_at": iso(h["changed_at"])} for h in history or []]
    return NoteView(**data, history=changes)


class NoteService:
    def __init__(self, app: AppContext) -> None:
        self.app = app

    # -- validation -------------------------------------------------------------------
    @property
    def rules(self) -> NoteRules:
        return NoteRules.of(self.app.settings.notes)

    def search_types(self) -> list[str]:
        return sorted({*self.app.settings.notes.types, *RECORD_TYPES})

    async def _readable(self, scope: Scope, note_id: str, *, deleted: bool = False) -> Note:
        note = await self._find(note_id, deleted)
        if not scope.can_read(note.namespace):
            raise _unknown(note_id)
        return note

    async def _writable(self, scope: Scope, note_id: str, *, deleted: bool = False) -> Note:
        note = await self._find(note_id, deleted)
        if note.namespace != scope.write:
            if scope.can_read(note.namespace):
                raise NotFound(
                    f"note {note.id!r} belongs to the shared namespace {note.namespace!r}, "
                    "which is read-only to you"
                )
            raise _unknown(note_id)
        return note

    async def _find(self, note_id: str, deleted: bool) -> Note:
        try:
            return await self.app.notes.get(str(note_id).strip(), include_deleted=deleted)
        except NotFound:
            raise _unknown(note_id) from None

    # -- use cases --------------------------------------------------------------------
    async def add(
        self, scope: Scope, fields: NoteFields, used: Sequence[str] | None = None
    ) -> AddNoteResult:
        """``used``: ids of memories the caller used for this (services.learning),
        credited once the note is stored."""
        ids = checked_used(used)
        # the previous adds' static vectors wait while this one is served
        with serving.requests.serving():
            out = await self._add(scope, fields)
        if ids:
            credit = await credit_used(self.app, scope, ids, fields.solved_query.strip())
            out.credited, out.not_credited = credit.credited, credit.ignored
        return out

    async def _add(self, scope: Scope, fields: NoteFields) -> AddNoteResult:
        started = time.perf_counter()
        checked = fields.checked(self.rules)
        note, created = await self.store_checked(checked, scope.write, behind=True)
        added = NoteAdded(
            id=note.id,
            type=note.type,
            priority=note.priority,
            domain=note.domain,
            text_preview=preview(note.text),
            solved_query=note.solved_query,
            latency_ms=round((time.perf_counter() - started) * 1000, 2),
        )
        event = ADD_NOTE if note.type != CHECKPOINT else CHECKPOINT
        await self.app.activity.append(event, **added.fields())
        return AddNoteResult(
            id=note.id,
            type=note.type,
            priority=note.priority,
            # an exact repeat of a live note is that note, not a second copy
            status="stored" if created else "already_stored",
            lexical_indexed=True,
            semantic_indexing="queued" if created else "unchanged",
        )

    async def store(self, fields: NoteFields, namespace: str) -> Note:
        """Commit, make lexically searchable, hand the rest to jobs (no logging: for
        imports and benches that add in bulk)."""
        return (await self.store_checked(fields, namespace))[0]

    async def store_checked(
        self, fields: NoteFields, namespace: str, *, behind: bool = False
    ) -> tuple[Note, bool]:
        """``store`` that also says whether the note is new: an exact repeat of a live
        note (same normalised text, type, namespace) returns that note, no follow-ups.
        ``behind``: return once the note is committed; its lexical point and job follow
        just after (``writebehind``: the next search still finds it)."""
        app = self.app
        note, created = await app.notes.add_or_existing(fields, namespace)
        if not created:
            return note, False

        async def write() -> None:
            await app.indexer.put_new_lexical(note)

        async def queue() -> None:
            await app.jobs.notes_changed(
                [note],
                export=note.type in app.settings.notes.export_types,
                tune=bool(note.solved_query),
            )
            app.notes_pending()
            await app.indexer.fill_fast(note)  # its static vector, off the ack's path

        if behind:
            app.index.ack_lags.acked(point_id("note", note.id))
            app.writes.start(write, queue, f"indexing note {note.id}", note.namespace)
        else:
            await write()
            await queue()
        return note, True

    async def search(
        self,
        scope: Scope,
        asked: NoteQuery,
        *,
        event: str = SEARCH,
        context: dict[str, Any] | None = None,
    ) -> SearchResponse:
        """``search_memory``. ``asked.priority`` keeps only notes of that priority (the
        memory browser's filter); ``event`` names the activity-log entry, so a person
        browsing (``ui_search``) never trains the jobs that learn from the assistant."""
        started = time.perf_counter()
        limits = self.app.settings.search
        asked = asked.checked(self.search_types(), limits.max_query_chars, limits.max_top)
        request = SearchRequest(
            query=asked.query,
            type=asked.type,
            domain=asked.domain,
            top=limits.max_top if asked.priority else asked.top,
            namespaces=scope.read,
            alternatives=asked.alternatives,
        )
        # before the search: the memories used answered an earlier question, not this one
        credit = await credit_used(self.app, scope, asked.used) if asked.used else None
        response = await self.app.search.search(request)
        if credit is not None:
            response.credited, response.not_credited = credit.credited, credit.ignored
        if priority := asked.priority:
            kept = [r for r in response.results if r.kind == "note" and r.priority == priority]
            response.results = kept[: asked.top]
            response.recent = [r for r in response.recent if r.priority == priority]
        await self._log_search(response, request, scope, started, event, context or {})
        if event == SEARCH and self.app.search.learned is not None:
            shown = [i for r in (*response.results, *response.recent) for i in (r.id, *r.also)]
            self.app.search.learned.asks.note(
                scope.write, request.query, shown, self.app.search.learned.clock()
            )
        return response

    async def get(self, scope: Scope, note_id: str) -> NoteView:
        note = await self._readable(scope, note_id, deleted=True)
        return note_view(note, await self.app.notes.history(note.id))

    async def update(self, scope: Scope, note_id: str, changes: NoteChanges) -> NoteUpdated:
        app = self.app
        current = await self._writable(scope, note_id)
        # the note's own point may still be on its way (``add`` answers before it is
        # written): the index changes below need it there, or the edit would commit and
        # then fail on its point
        await app.writes.caught_up((current.namespace,))
        merged = current.changed_by(changes).checked(self.rules)  # a Note is its fields
        note, changed = await app.notes.update(current.id, NoteChanges(**merged.model_dump()))
        if "text" in changed or "solved_query" in changed:
            await app.indexer.put_lexical(note)
            await app.jobs.notes_changed([note], export=True)
            app.notes_pending()
            app.pool_later([note])
        elif changed:
            await app.indexer.update_payload(note)
            await app.jobs.notes_changed([], export=True)
        await app.activity.append("update_note", id=note.id, changed=changed)
        view = note_view(note, await app.notes.history(note.id))
        return NoteUpdated(note=view, changed=changed)

    async def delete(self, scope: Scope, note_id: str, *, restore: bool = False) -> NoteView:
        app = self.app
        found = await self._writable(scope, note_id, deleted=True)
        await app.writes.caught_up((found.namespace,))  # as in ``update``
        note = await app.notes.set_deleted(found.id, deleted=not restore)
        if restore:
            pending = await app.indexer.put_notes([note])
            await app.jobs.notes_changed(pending, export=True)
        else:
            await app.indexer.remove(note.id)
            await app.vectors.forget("note", [note.id])
            await app.jobs.notes_changed([], export=True)
        await app.activity.append("delete_note", id=note.id, restore=restore)
        return note_view(note)

    async def list(
        self, scope: Scope, *, type: str = "", after: str = "", limit: int = 50
    ) -> NoteList:
        """Live notes the scope can read, newest first; ``after`` pages on."""
        limit = bounded_int(limit, "limit", 1, 1000)
        type, _, _ = checked_filter(self.app.settings.notes.types, type=type)
        notes = await self.app.notes.newest(
            namespaces=scope.read, type=type, before_id=after, limit=limit
        )
        return NoteList(
            notes=[note_view(n) for n in notes],
            next_after=notes[-1].id if len(notes) == limit else "",
        )

    async def browse(
        self,
        scope: Scope,
        *,
        type: str = "",
        domain: str = "",
        priority: str = "",
        deleted: bool = False,
        before: str = "",
        limit: int = 50,
    ) -> builtins.list[Note]:
        """The memory browser's listing: notes the scope reads (``deleted``: the deleted
        ones instead), newest written first; ``before`` (the last id of the previous
        page) pages on."""
        type, domain, priority = checked_filter(
            self.app.settings.notes.types, type=type, domain=domain, priority=priority
        )
        return await self.app.notes.newest(
            namespaces=scope.read,
            type=type,
            domain=domain,
            priority=priority or None,
            deleted=deleted,
            before_id=before,
            limit=limit,
        )

    async def pending(self, ids: builtins.list[str]) -> set[str]:
        """Which of the live notes ``ids`` still wait for their dense vector."""
        found = await self.app.notes.get_many(ids)
        return {nid for nid, note in found.items() if note.embedded_model is None}

    async def every_live(self, scope: Scope) -> builtins.list[Note]:
        """Every live note the scope reads, in id order (read in pages of 500)."""
        out: builtins.list[Note] = []
        after = ""
        while page := await self.app.notes.page(after, 500):
            out += [n for n in page if scope.can_read(n.namespace)]
            after = page[-1].id
        return out

    async def _log_search(
        self,
        response: SearchResponse,
        request: SearchRequest,
        scope: Scope,
        started: float,
        event: str,
        context: dict[str, Any],
    ) -> None:
        min_distance: dict[str, float] = {}
        for item in response.results:
            if item.distance is not None:
                min_distance[item.type] = min(min_distance.get(item.type, 2.0), item.distance)
        searched = Searched(
            namespace=scope.write,  # whose search: ``used=`` credits only the caller's
            query=request.query,
            type=request.type,
            domain=request.domain,
            top=request.top,
            # every note retrieved, the ones folded into another result too
            hits=sum(1 + len(r.also) for r in response.results),
            result_ids=[i for r in response.results for i in (r.id, *r.also)],
            recent_ids=[r.id for r in response.recent],
            min_distance=min_distance,
            dense=response.dense_available,
            match=response.match,
            latency_ms=round((time.perf_counter() - started) * 1000, 2),
        )
        await self.app.activity.append(event, **context, **searched.fields())


def _unknown(note_id: str) -> NotFound:
    # The same words for an id that does not exist and one in a namespace the caller
    # cannot read: ids from other namespaces cannot be probed.
    return NotFound(f"no note with id {str(note_id).strip()!r}", kind="note")
