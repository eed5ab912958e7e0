"""Records: search (with the ``current_only`` toggle) and one record's lifecycle page."""

from __future__ import annotations

import json

from starlette.requests import Request
from starlette.responses import Response

from mcp_gateway.common.errors import KiokuError
from mcp_gateway.common.render import iso
from mcp_gateway.records.model import RECORD_TYPES, RELATIONS
from mcp_gateway.ui import adapter, graph
from mcp_gateway.ui.web import Viewer, app_of, page, ui_of


async def records(request: Request, who: Viewer) -> Response:
    app = app_of(request)
    q = request.query_params.get("q", "").strip()
    rtype = request.query_params.get("type", "").strip()
    current_only = request.query_params.get("current_only") == "1"
    error, hits, recent = "", [], []
    try:
        if q:
            hits = await adapter.record_search(app, who.caller, q, rtype, current_only)
        else:
            recent = await adapter.recent_records(app, who.caller)
    except KiokuError as exc:
        error = str(exc)
    return page(
        request,
        "records.html",
        status=400 if error else 200,
        who=who,
        q=q,
        rtype=rtype,
        current_only=current_only,
        hits=hits,
        recent=recent,
        error=error,
        types=RECORD_TYPES,
        iso=iso,
    )


def history_text(field: str, value: str | None) -> str:
    """A history value as a reader wants it: the "created" entry stores the record's
    first fields as JSON (shown raw before); the rest are plain values."""
    if field != "created" or not value:
        return value or ""
    try:
        first = json.loads(value)
    except ValueError:
        return value
    if not isinstance(first, dict):
        return value
    labels = (("type", "type"), ("status", "status"), ("action_state", "action"))
    parts = [f"{label}: {first[k]}" for k, label in labels if first.get(k)]
    if first.get("title"):
        parts.append(f"title: {first['title']}")
    return " · ".join(str(p) for p in parts)


async def record(request: Request, who: Viewer) -> Response:
    app = app_of(request)
    rid = request.path_params["record_id"]
    view = await adapter.record_view(app, who.caller, rid)
    neighbourhood = await adapter.record_graph(app, who.caller, view.record.id)
    picture = graph.render(
        neighbourhood, focus=view.record.id, head=view.lifecycle.head, base=ui_of(request).base
    )
    return page(
        request,
        "record.html",
        who=who,
        view=view,
        rec=view.record,
        life=view.lifecycle,
        picture=picture,
        truncated=neighbourhood.truncated,
        relations=RELATIONS,
        iso=iso,
        history_text=history_text,
    )
