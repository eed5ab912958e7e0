"""The one place the memory browser calls the gateway's use cases.

Every page goes through these functions, and every change goes through the same use
cases as the MCP tools (``services.NoteService`` / ``RecordService``: same validation,
same index and job follow-ups, same activity-log entries), and every read of one note
or record goes through the services' single access rule, so an id the caller may not
read answers exactly like an unknown one. The browser's other reads (filtered browsing,
pending state, the activity log, job failures, the session context) are use cases too:
no page opens a store.

The caller's scope is passed explicitly (``Caller``): the MCP tools read it from the
request's access token, the browser from its session's grant; both end in the same
``access.grant_scopes``.

UI searches are logged as ``ui_search``, not ``search_memory``: the re-ranking and
threshold jobs learn from what the *assistant* retrieved, and a person browsing is
not that. Curation is logged by the services, exactly as from MCP.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mcp_gateway.common.access import Scope, settings_scope
from mcp_gateway.common.errors import InvalidInput
from mcp_gateway.common.inputs import NoteChanges, NoteQuery, fill
from mcp_gateway.common.render import preview
from mcp_gateway.common.types import Note, SearchResponse
from mcp_gateway.records.model import RecordGraph, RecordSearchHit, RecordView
from mcp_gateway.services import learning
from mcp_gateway.services.app import AppContext
from mcp_gateway.services.context import ContextService
from mcp_gateway.services.learning import KeyView
from mcp_gateway.services.maintenance import MaintenanceService
from mcp_gateway.services.notes import NoteService, NoteView
from mcp_gateway.services.records import RecordService

BROWSE_PAGE = 50


@dataclass(frozen=True, slots=True)
class Caller:
    grant: str
    scope: Scope


# -- notes ---------------------------------------------------------------------------


def note_types(app: AppContext) -> list[str]:
    return list(app.settings.notes.types)


def _namespaces(caller: Caller, namespace: str) -> tuple[str, ...]:
    if not namespace:
        return caller.scope.read
    if not caller.scope.can_read(namespace):
        raise InvalidInput(f"unknown namespace {namespace!r}")
    return (namespace,)


async def search(
    app: AppContext, caller: Caller, asked: NoteQuery, *, namespace: str = ""
) -> SearchResponse:
    """``search_memory`` itself, narrowed to ``namespace``, logged as ``ui_search``."""
    scope = Scope(caller.scope.write, _namespaces(caller, namespace))
    return await NoteService(app).search(
        scope, asked, event="ui_search", context={"grant": caller.grant}
    )


async def browse(
    app: AppContext,
    caller: Caller,
    *,
    type: str = "",
    domain: str = "",
    priority: str = "",
    namespace: str = "",
    deleted: bool = False,
    before: str = "",
    limit: int = BROWSE_PAGE,
) -> list[Note]:
    """Notes newest written first (``before``: the last id of the previous page)."""
    scope = Scope(caller.scope.write, _namespaces(caller, namespace))
    return await NoteService(app).browse(
        scope,
        type=type,
        domain=domain,
        priority=priority,
        deleted=deleted,
        before=before,
        limit=limit,
    )


async def pending_ids(app: AppContext, ids: list[str]) -> set[str]:
    """Which of the notes ``ids`` still wait for their dense vector (live notes only)."""
    return await NoteService(app).pending(ids)


async def get_note(app: AppContext, caller: Caller, note_id: str) -> NoteView:
    """``get_note``, deleted notes included, with its history. The service's one access
    rule: another namespace's id answers exactly like an unknown one."""
    return await NoteService(app).get(caller.scope, note_id)


async def update_note(
    app: AppContext, caller: Caller, note_id: str, form: dict[str, str]
) -> tuple[str, list[str]]:
    """``update_note``: only the given fields change. Returns (id, changed fields)."""
    out = await NoteService(app).update(caller.scope, note_id, fill(NoteChanges, form))
    return out.note.id, out.changed


async def set_deleted(app: AppContext, caller: Caller, note_id: str, *, deleted: bool) -> str:
    """``delete_note`` (soft) and ``delete_note(restore=true)``; returns the id."""
    view = await NoteService(app).delete(caller.scope, note_id, restore=not deleted)
    return view.id


# -- records -------------------------------------------------------------------------


async def record_search(
    app: AppContext, caller: Caller, query: str, type: str, current_only: bool, limit: int = 30
) -> list[RecordSearchHit]:
    found = await RecordService(app).search(
        caller.scope, query=query, type=type, current_only=current_only, limit=limit
    )
    return found.hits


async def recent_records(app: AppContext, caller: Caller, limit: int = 30) -> list[Any]:
    return await RecordService(app).recent(caller.scope, limit)


async def record_view(app: AppContext, caller: Caller, record_id: str) -> RecordView:
    """``record_show``: another namespace's id answers exactly like an unknown one."""
    return await RecordService(app).show(caller.scope, record_id)


async def record_graph(app: AppContext, caller: Caller, record_id: str) -> RecordGraph:
    """The lifecycle neighbourhood, cut to the records the caller may read."""
    return await RecordService(app).graph(caller.scope, record_id)


# -- insight sources -----------------------------------------------------------------


async def activity(app: AppContext, since: float) -> list[dict[str, Any]]:
    return await MaintenanceService(app).activity(since)


async def live_notes(app: AppContext, caller: Caller) -> list[Note]:
    """Every live note the caller may read (for never-retrieved)."""
    return await NoteService(app).every_live(caller.scope)


async def job_failures(app: AppContext) -> dict[str, Any]:
    """Permanent job failures, newest first."""
    return await MaintenanceService(app).job_failures(limit=20)


def is_owner(app: AppContext, caller: Caller) -> bool:
    """The data dir's own scope (stdio, the default grant): may see every query text."""
    return caller.scope == settings_scope(app.settings)


async def session_context(app: AppContext, caller: Caller) -> str:
    """The caller's session context, rendered now: the document ``kioku://session_context``
    serves its grant (and, for the data dir's own scope, what ``session_context.md`` holds
    once the export has run)."""
    return await ContextService(app).render(caller.scope)


def preview_text(text: str) -> str:
    return preview(text)


async def learned_keys(app: AppContext, caller: Caller, note_id: str) -> list[KeyView]:
    """The questions a note answered (services.learning): none shown for a note the
    caller may not read, which answers like an unknown id."""
    return await learning.keys_of(app, caller.scope, note_id)


async def forget_key(app: AppContext, caller: Caller, note_id: str, question: str) -> bool:
    return await learning.forget_key(app, caller.scope, note_id, question)


async def newest_keys(app: AppContext, caller: Caller) -> list[KeyView]:
    return await learning.newest_keys(app, caller.scope)
