"""Search & browse, and one note's page (history, edit, delete, restore)."""

from __future__ import annotations

from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from mcp_gateway.common.errors import InvalidInput, KiokuError
from mcp_gateway.common.inputs import NoteQuery, fill
from mcp_gateway.common.render import iso
from mcp_gateway.common.types import Note, SearchResult
from mcp_gateway.common.validation import PRIORITIES
from mcp_gateway.search.match import WEAK_TAG
from mcp_gateway.search.service import RECENT_TAG
from mcp_gateway.ui import adapter
from mcp_gateway.ui.web import Viewer, app_of, page, read_form, ui_of

DEFAULT_TOP = 5
TOPS = (5, 10, 20, 50)
DONE = {
    "updated": "Saved.",
    "unchanged": "Nothing changed.",
    "deleted": "Deleted. It no longer appears in searches; restore brings it back.",
    "restored": "Restored. It is searchable again (its vector is being rebuilt).",
    "forgotten": "Removed that question: it no longer leads to this memory.",
}


def _filters(request: Request) -> dict[str, str]:
    q = request.query_params
    return {k: q.get(k, "").strip() for k in ("q", "type", "domain", "priority", "namespace")}


async def index(request: Request, who: Viewer) -> Response:
    app = app_of(request)
    f = _filters(request)
    deleted = request.query_params.get("deleted") == "1"
    error, dense, match = "", True, "strong"
    results: list[SearchResult] = []
    recent: list[SearchResult] = []
    notes: list[Note] = []
    try:
        if f["q"]:
            asked = fill(NoteQuery, {**f, "query": f["q"], "top": _top(request)})
            response = await adapter.search(app, who.caller, asked, namespace=f["namespace"])
            results, recent = response.results, response.recent
            dense, match = response.dense_available, response.match
        else:
            notes = await adapter.browse(
                app,
                who.caller,
                type=f["type"],
                domain=f["domain"],
                priority=f["priority"],
                namespace=f["namespace"],
                deleted=deleted,
                before=request.query_params.get("before", ""),
            )
    except KiokuError as exc:
        error = str(exc)
    ids = [r.id for r in [*results, *recent] if r.kind == "note"] + [n.id for n in notes]
    pending = await adapter.pending_ids(app, ids)
    return page(
        request,
        "index.html",
        status=400 if error else 200,
        who=who,
        f=f,
        top=request.query_params.get("top", str(DEFAULT_TOP)),
        tops=TOPS,
        deleted=deleted,
        error=error,
        results=results,
        recent=recent,
        notes=notes,
        dense=dense,
        match=match,
        weak_tag=WEAK_TAG,
        pending=pending,
        recent_tag=RECENT_TAG,
        types=adapter.note_types(app),
        priorities=[p for p in PRIORITIES if p],
        namespaces=who.caller.scope.read,
        iso=iso,
        older=_older_url(request, notes),
    )


def _top(request: Request) -> int:
    """``top`` as the assistant passes it (default 5, like ``search_memory``)."""
    raw = request.query_params.get("top", "")
    if not raw:
        return DEFAULT_TOP
    try:
        return int(raw)
    except ValueError:
        raise InvalidInput(f"top must be a whole number, got {raw!r}") from None


def _older_url(request: Request, notes: list[Note]) -> str:
    if len(notes) < adapter.BROWSE_PAGE:
        return ""
    params = {k: v for k, v in request.query_params.items() if k != "before" and v}
    params["before"] = notes[-1].id
    return f"{ui_of(request).base}/?{urlencode(params)}"


async def note_page(
    request: Request, who: Viewer, *, status: int = 200, error: str = "", form: dict[str, str]
) -> Response:
    app = app_of(request)
    note = await adapter.get_note(app, who.caller, request.path_params["note_id"])
    return page(
        request,
        "note.html",
        status=status,
        who=who,
        note=note,
        history=note.history,
        pending=note.embedded_model is None and not note.deleted,
        writable=note.namespace == who.caller.scope.write,
        types=adapter.note_types(app),
        priorities=PRIORITIES,
        done=DONE.get(request.query_params.get("done", ""), ""),
        error=error,
        form=form,
        iso=iso,
        keys=await adapter.learned_keys(app, who.caller, note.id),
        own_namespace=who.caller.scope.write,
    )


async def show_note(request: Request, who: Viewer) -> Response:
    return await note_page(request, who, form={})


async def edit_note(request: Request, who: Viewer) -> Response:
    app = app_of(request)
    form = await read_form(request)
    fields: dict[str, str] = {
        k: form[k] for k in ("text", "type", "priority", "domain") if k in form
    }
    note_id = request.path_params["note_id"]
    try:
        nid, changed = await adapter.update_note(app, who.caller, note_id, fields)
    except InvalidInput as exc:
        return await note_page(request, who, status=400, error=str(exc), form=fields)
    done = "updated" if changed else "unchanged"
    return RedirectResponse(f"{ui_of(request).base}/notes/{nid}?done={done}", 303)


async def forget_key(request: Request, who: Viewer) -> Response:
    """Remove a question this note answered from the caller's own learned keys."""
    form = await read_form(request)
    nid = request.path_params["note_id"]
    await adapter.forget_key(app_of(request), who.caller, nid, form.get("question", ""))
    return RedirectResponse(f"{ui_of(request).base}/notes/{nid}?done=forgotten", 303)


async def delete_note(request: Request, who: Viewer) -> Response:
    nid = await adapter.set_deleted(
        app_of(request), who.caller, request.path_params["note_id"], deleted=True
    )
    return RedirectResponse(f"{ui_of(request).base}/notes/{nid}?done=deleted", 303)


async def restore_note(request: Request, who: Viewer) -> Response:
    nid = await adapter.set_deleted(
        app_of(request), who.caller, request.path_params["note_id"], deleted=False
    )
    return RedirectResponse(f"{ui_of(request).base}/notes/{nid}?done=restored", 303)
