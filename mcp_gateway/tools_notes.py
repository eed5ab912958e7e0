"""MCP tools for notes. The docstrings are the contract the assistant reads: they say
*when* to call each tool, which is what makes it call them on its own."""

from __future__ import annotations

import time
from typing import Annotated, Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.types import CallToolResult
from pydantic import BaseModel

from .access import request_scope
from .activity import preview
from .app import AppContext
from .errors import InvalidInput
from .render import iso, render_note, render_search
from .search import SearchRequest
from .toolkit import app_from, result, tool_errors
from .types import Note, SearchResponse
from .validation import PRIORITIES, bounded_int, choice, clean_text, one_line


class AddNoteResult(BaseModel):
    id: str
    type: str
    priority: str
    status: str
    lexical_indexed: bool
    semantic_indexing: str


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


def _view(note: Note, history: list[dict[str, Any]] | None = None) -> NoteView:
    data = note.model_dump()
    data["created_at"], data["updated_at"] = iso(note.created_at), iso(note.updated_at)
    return NoteView(**data, history=history or [])


async def readable_note(app: AppContext, note_id: str, *, include_deleted: bool = False) -> Note:
    note = await app.notes.get(str(note_id).strip(), include_deleted=include_deleted)
    request_scope(app.settings).require_read(note.namespace, f"note with id {note_id!r}")
    return note


async def writable_note(app: AppContext, note_id: str, *, include_deleted: bool = False) -> Note:
    note = await app.notes.get(str(note_id).strip(), include_deleted=include_deleted)
    request_scope(app.settings).require_write(note.namespace, f"note with id {note_id!r}")
    return note


def clean_query(query: str, max_chars: int) -> str:
    if isinstance(query, str) and len(query) > max_chars:
        raise InvalidInput(
            f"query is over {max_chars} characters: summarise the situation in a few sentences"
        )
    return clean_text(query, "query", max_chars * 4)


def note_fields(
    app: AppContext, *, text: str, type: str, priority: str, domain: str, solved_query: str
) -> dict[str, str]:
    limit = app.settings.notes.max_text_bytes
    return {
        "text": clean_text(text, "text", limit),
        "type": choice(type, "type", app.settings.notes.types),
        "priority": choice(priority, "priority", PRIORITIES),
        "domain": one_line(domain, "domain", 64).lower(),
        "solved_query": clean_text(solved_query, "solved_query", limit, required=False),
    }


async def store_note(app: AppContext, fields: dict[str, str], namespace: str) -> Note:
    """Commit, make lexically searchable, hand the rest to jobs. Shared with checkpoint."""
    note = await app.notes.add(
        fields["text"],
        fields["type"],
        priority=fields["priority"],
        domain=fields["domain"],
        solved_query=fields["solved_query"],
        namespace=namespace,
    )
    await app.indexer.put_lexical(note)
    await app.jobs.notes_changed(
        [note],
        export=note.type in app.settings.notes.export_types,
        tune=bool(note.solved_query),
    )
    return note


def register_note_tools(mcp: MCPServer) -> None:
    @mcp.tool()
    @tool_errors
    async def add_note(
        text: str,
        ctx: Context,
        type: str = "note",
        priority: str = "",
        domain: str = "",
        solved_query: str = "",
    ) -> Annotated[CallToolResult, AddNoteResult]:
        """Record a realisation, agreement, lesson or conclusion on the spot, so future
        sessions never repeat a mistake. Call it yourself, without being asked:
        - the user corrects you or points out a mistake -> type="lesson", priority="high";
        - you and the user reach a conclusion or agreement -> type="conclusion";
        - you learn a new technical fact about this project or its tools -> type="knowledge";
        - you learn a lasting preference of the user -> type="profile".
        Write the note so it stands alone: what happened, why, and what to do instead.
        solved_query: when the note records how a problem was solved, pass the query or
        request that led to the problem; it is used to find the note again.
        domain: an optional topic label such as "git", "deploy", "api"."""
        started = time.perf_counter()
        app = app_from(ctx)
        fields = note_fields(
            app, text=text, type=type, priority=priority, domain=domain, solved_query=solved_query
        )
        note = await store_note(app, fields, request_scope(app.settings).write)
        await app.activity.append(
            "add_note",
            id=note.id,
            type=note.type,
            priority=note.priority,
            domain=note.domain,
            text_preview=preview(note.text),
            solved_query=note.solved_query,
            latency_ms=round((time.perf_counter() - started) * 1000, 2),
        )
        out = AddNoteResult(
            id=note.id,
            type=note.type,
            priority=note.priority,
            status="stored",
            lexical_indexed=True,
            semantic_indexing="queued",
        )
        return result(f"Stored {note.type} note {note.id}.", out)

    @mcp.tool()
    @tool_errors
    async def search_memory(
        query: str, ctx: Context, type: str = "", domain: str = "", top: int = 5
    ) -> Annotated[CallToolResult, SearchResponse]:
        """Search past lessons, conclusions, knowledge, profile notes and durable records.
        Call it yourself BEFORE acting whenever past experience could matter: before
        running commands with side effects (deploys, bulk API calls, git history edits),
        when the user's request resembles earlier work, or when unsure of a convention.
        Write the query as a full description of the situation (what you are about to do
        and why); short keywords retrieve worse. Filters: type ("lesson", "conclusion",
        "knowledge", "profile", "note", "checkpoint", or a record type such as
        "decision"), domain, top (1-50: the number of ranked results). Confident
        high-priority matches come first. The newest lessons/conclusions related to the
        query come back separately under "recent", tagged [RECENT]."""
        started = time.perf_counter()
        app = app_from(ctx)
        top = bounded_int(top, "top", 1, app.settings.search.max_top)
        if type:
            allowed = sorted({*app.settings.notes.types, *RECORD_TYPES})
            type = choice(type, "type", allowed)
        request = SearchRequest(
            query=clean_query(query, app.settings.search.max_query_chars),
            type=type,
            domain=one_line(domain, "domain", 64).lower(),
            top=top,
            namespaces=request_scope(app.settings).read,
        )
        response = await app.search.search(request)
        await _log_search(app, response, request, started)
        return result(render_search(response), response)

    @mcp.tool()
    @tool_errors
    async def get_note(id: str, ctx: Context) -> Annotated[CallToolResult, NoteView]:
        """Show one note by id, with its change history."""
        app = app_from(ctx)
        note = await readable_note(app, id, include_deleted=True)
        view = _view(note, await app.notes.history(note.id))
        return result(render_note(view.model_dump()), view)

    @mcp.tool()
    @tool_errors
    async def update_note(
        id: str,
        ctx: Context,
        text: str | None = None,
        type: str | None = None,
        priority: str | None = None,
        domain: str | None = None,
        solved_query: str | None = None,
    ) -> Annotated[CallToolResult, NoteView]:
        """Correct a note that turned out wrong or incomplete. Only the fields you pass
        change; the old values are kept in the note's history."""
        app = app_from(ctx)
        current = await writable_note(app, id)
        merged = note_fields(
            app,
            text=current.text if text is None else text,
            type=current.type if type is None else type,
            priority=current.priority if priority is None else priority,
            domain=current.domain if domain is None else domain,
            solved_query=current.solved_query if solved_query is None else solved_query,
        )
        note, changed = await app.notes.update(current.id, merged)
        if "text" in changed or "solved_query" in changed:
            await app.indexer.put_lexical(note)
            await app.jobs.notes_changed([note], export=True)
        elif changed:
            await app.indexer.update_payload(note)
            await app.jobs.notes_changed([], export=True)
        await app.activity.append("update_note", id=note.id, changed=changed)
        view = _view(note, await app.notes.history(note.id))
        message = f"Updated {', '.join(changed)}." if changed else "Nothing changed."
        return result(message + "\n" + render_note(view.model_dump()), view)

    @mcp.tool()
    @tool_errors
    async def delete_note(
        id: str, ctx: Context, restore: bool = False
    ) -> Annotated[CallToolResult, NoteView]:
        """Forget a wrong or obsolete note (soft delete: it stops appearing in searches
        but is kept, and restore=true brings it back)."""
        app = app_from(ctx)
        await writable_note(app, id, include_deleted=True)
        note = await app.notes.set_deleted(id.strip(), deleted=not restore)
        if restore:
            await app.indexer.put_lexical(note)
            await app.jobs.notes_changed([note], export=True)
        else:
            await app.indexer.remove(note.id)
            await app.jobs.notes_changed([], export=True)
        await app.activity.append("delete_note", id=note.id, restore=restore)
        verb = "Restored" if restore else "Deleted (restorable with restore=true)"
        return result(f"{verb} note {note.id}.", _view(note))

    @mcp.tool()
    @tool_errors
    async def checkpoint(
        text: str, ctx: Context, domain: str = ""
    ) -> Annotated[CallToolResult, AddNoteResult]:
        """Record routine progress (what was done, where work stopped). Use this, not
        record_add or add_note, for day-to-day status: it is searchable but never
        crowds lessons out of the [RECENT] boost."""
        app = app_from(ctx)
        fields = note_fields(
            app, text=text, type="checkpoint", priority="", domain=domain, solved_query=""
        )
        note = await store_note(app, fields, request_scope(app.settings).write)
        await app.activity.append("checkpoint", id=note.id, text_preview=preview(note.text))
        out = AddNoteResult(
            id=note.id,
            type=note.type,
            priority="",
            status="stored",
            lexical_indexed=True,
            semantic_indexing="queued",
        )
        return result(f"Checkpoint {note.id} stored.", out)


RECORD_TYPES = ("audit", "fix", "verification", "decision", "knowledge")


async def _log_search(
    app: AppContext, response: SearchResponse, request: SearchRequest, started: float
) -> None:
    min_distance: dict[str, float] = {}
    for item in response.results:
        if item.distance is not None:
            min_distance[item.type] = min(min_distance.get(item.type, 2.0), item.distance)
    await app.activity.append(
        "search_memory",
        query=request.query,
        type=request.type,
        domain=request.domain,
        top=request.top,
        hits=len(response.results),
        result_ids=[r.id for r in response.results],
        min_distance=min_distance,
        dense=response.dense_available,
        latency_ms=round((time.perf_counter() - started) * 1000, 2),
    )
