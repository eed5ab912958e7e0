"""MCP tools for notes. The docstrings are the contract the assistant reads: they say
*when* to call each tool, which is what makes it call them on its own. The use cases
themselves live in ``services.notes``.

The closed sets and formats are in the input schemas (``tool_schemas``); note types and
the largest ``top`` follow the settings, so the annotations are built when the tools are
registered (evaluated at definition: no ``from __future__ import annotations`` here, the
local schemas would not resolve from a string)."""

from typing import Annotated

from mcp.server.mcpserver import Context, MCPServer
from mcp.types import CallToolResult

from mcp_gateway.common.inputs import NoteChanges, NoteFields, NoteQuery
from mcp_gateway.common.render import render_note, render_search
from mcp_gateway.common.sections import NoteSettings, SearchSettings
from mcp_gateway.common.types import SearchResponse
from mcp_gateway.protocol import tool_schemas as schema
from mcp_gateway.protocol.tool_schemas import NoteId, Priority
from mcp_gateway.protocol.toolkit import result, scope_of, services_from, tool_errors
from mcp_gateway.services.notes import AddNoteResult, NoteView


def register_note_tools(mcp: MCPServer, notes: NoteSettings, search: SearchSettings) -> None:
    """The note tools on ``mcp``, their schemas naming ``notes.types`` and
    ``search.max_top``."""
    note_type = schema.one_of(notes.types)
    type_filter = schema.one_of(schema.search_types(notes.types))
    top_range = schema.within(1, search.max_top)

    @mcp.tool()
    @tool_errors
    async def add_note(
        text: str,
        ctx: Context,
        type: Annotated[str, note_type] = "note",
        priority: Priority = "",
        domain: str = "",
        solved_query: str = "",
        used: list[str] | None = None,
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
        domain: an optional topic label such as "git", "deploy", "api".
        used: ids of memories from your earlier search_memory results that helped with
        this (e.g. the lesson you followed); memory learns to find them for this need."""
        fields = NoteFields(
            text=text, type=type, priority=priority, domain=domain, solved_query=solved_query
        )
        out = await services_from(ctx).notes.add(scope_of(ctx), fields, used)
        return result(stored_message(out) + used_message(out), out)

    @mcp.tool()
    @tool_errors
    async def search_memory(
        query: str,
        ctx: Context,
        type: Annotated[str, type_filter] = "",
        domain: str = "",
        top: Annotated[int, top_range] = 5,
        alternatives: list[str] | None = None,
        used: list[str] | None = None,
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
        query come back separately under "recent", tagged [RECENT].
        When no memory is close enough the answer's first line says "No strong match
        for ..." (structured: match "weak", or "none" when nothing came back) and only
        the few closest memories follow, tagged [WEAK]: treat them as probably
        unrelated, do not act on them as if they answered the question; say that
        memory holds nothing on it, or search again in other words if you expected a
        memory there.
        alternatives (optional, up to 4): the same question in other words or another
        language (e.g. Japanese for an English query); memories close to any phrasing
        are found. Worth it when your words may differ from how the memory was written:
        measured, it finds reworded coding memories much more often, and changes little
        on chat-history questions. Each phrasing costs one more embedding (~20 ms).
        used (optional, up to 10): ids of memories from your earlier results that you
        actually used (followed, quoted, acted on). Pass them on your next search: the
        question that found each becomes a way to find it again, and useful memories
        rank higher (measured: later rewordings of a need rank it first more often)."""
        asked = NoteQuery(
            query=query,
            type=type,
            domain=domain,
            top=top,
            alternatives=tuple(alternatives or ()),
            used=tuple(used or ()),
        )
        response = await services_from(ctx).notes.search(scope_of(ctx), asked)
        return result(render_search(response) + used_message(response), response)

    @mcp.tool()
    @tool_errors
    async def get_note(id: NoteId, ctx: Context) -> Annotated[CallToolResult, NoteView]:
        """Show one note by id, with its change history."""
        view = await services_from(ctx).notes.get(scope_of(ctx), id)
        return result(render_note(view.model_dump()), view)

    @mcp.tool()
    @tool_errors
    async def update_note(
        id: NoteId,
        ctx: Context,
        text: str | None = None,
        type: Annotated[str, note_type] | None = None,
        priority: Priority | None = None,
        domain: str | None = None,
        solved_query: str | None = None,
    ) -> Annotated[CallToolResult, NoteView]:
        """Correct a note that turned out wrong or incomplete. Only the fields you pass
        change; the old values are kept in the note's history."""
        changes = NoteChanges(
            text=text, type=type, priority=priority, domain=domain, solved_query=solved_query
        )
        out = await services_from(ctx).notes.update(scope_of(ctx), id, changes)
        message = f"Updated {', '.join(out.changed)}." if out.changed else "Nothing changed."
        return result(message + "\n" + render_note(out.note.model_dump()), out.note)

    @mcp.tool()
    @tool_errors
    async def delete_note(
        id: NoteId, ctx: Context, restore: bool = False
    ) -> Annotated[CallToolResult, NoteView]:
        """Forget a wrong or obsolete note (soft delete: it stops appearing in searches
        but is kept, and restore=true brings it back)."""
        view = await services_from(ctx).notes.delete(scope_of(ctx), id, restore=restore)
        verb = "Restored" if restore else "Deleted (restorable with restore=true)"
        return result(f"{verb} note {view.id}.", view)

    @mcp.tool()
    @tool_errors
    async def checkpoint(
        text: str, ctx: Context, domain: str = ""
    ) -> Annotated[CallToolResult, AddNoteResult]:
        """Record routine progress (what was done, where work stopped). Use this, not
        record_add or add_note, for day-to-day status: it is searchable but never
        crowds lessons out of the [RECENT] boost."""
        fields = NoteFields(text=text, type="checkpoint", domain=domain)
        out = await services_from(ctx).notes.add(scope_of(ctx), fields)
        return result(stored_message(out), out)


def used_message(out: AddNoteResult | SearchResponse) -> str:
    """A line on what ``used`` did (nothing when it was not given)."""
    lines = []
    if out.credited:
        lines.append(f"Noted as used: {', '.join(out.credited)}.")
    if out.not_credited:
        lines.append(
            f"Not noted as used (not in your search results of the last 30 minutes): "
            f"{', '.join(out.not_credited)}."
        )
    return "".join("\n" + line for line in lines)


def stored_message(out: AddNoteResult) -> str:
    if out.status == "already_stored":
        return (
            f"Already stored: {out.type} {out.id} has the same text "
            "(not stored twice; update_note changes it)."
        )
    return f"Stored {out.type} {out.id}."
