"""Records: search (with the ``current_only`` toggle) and one record's lifecycle page."""

from __future__ import annotations

import json
import re

from markupsafe import Markup, escape
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


# a record id as kioku makes them (``records.queries.record_id_for``)
_RECORD_ID = re.compile(r"\b[A-Z]+-[A-Z0-9_]{1,16}-[0-9]{3,9}(?:\.[A-Z0-9]{1,24})?\b")


def linked_ids(text: str, base: str) -> Markup:
    """``text`` escaped, each record id in it a link to that record's page (a history
    row's ``resolves:AUDIT-MEM-001``): on a lifecycle page every id leads on. An id the
    viewer may not read leads to the page every unknown id gets."""
    parts, last = [], 0
    for found in _RECORD_ID.finditer(text):
        parts.append(escape(text[last : found.start()]))
        rid = found.group()
        parts.append(Markup('<a class="id" href="{}/records/{}">{}</a>').format(base, rid, rid))
        last = found.end()
    parts.append(escape(text[last:]))
    return Markup("").join(parts)


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
        linked=lambda text: linked_ids(text, ui_of(request).base),
    )
