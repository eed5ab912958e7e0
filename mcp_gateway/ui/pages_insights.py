""" "Is it helping?" and the session context page."""

from __future__ import annotations

import time

from starlette.requests import Request
from starlette.responses import Response

from mcp_gateway.common.render import iso
from mcp_gateway.ui import adapter, charts, insights, learning_curve, markdown
from mcp_gateway.ui.web import Viewer, app_of, page

DAYS = 30
# The log is read back this far for the attribution and never-retrieved figures.
LOOKBACK_S = 180 * 86_400


async def helping(request: Request, who: Viewer) -> Response:
    app = app_of(request)
    now = time.time()
    entries = await adapter.activity(app, now - LOOKBACK_S)
    facts = insights.summarise(entries, days=DAYS, now=now)
    notes = await adapter.live_notes(app, who.caller)
    readable = {n.id: n for n in notes}
    # Per-memory figures only for memories this grant may read; query texts (which may
    # come from any grant) only for the data dir's own scope.
    solutions = [s for s in facts.solutions if s.note_id in readable][:20]
    for s in solutions:
        s.credited = [i for i in s.credited if i in readable]
    never = insights.never_retrieved(notes, facts.retrieved)
    pending = [n for n in notes if n.embedded_model is None]
    top = [(readable[i], c) for i, c in facts.retrieved.most_common() if i in readable][:10]
    owner = adapter.is_owner(app, who.caller)
    curve = learning_curve.found_and_used(entries, days=DAYS, now=now)
    used = sum(d.hits for d in curve)
    return page(
        request,
        "helping.html",
        who=who,
        facts=facts,
        days=DAYS,
        chart=charts.day_bars(facts.days),
        hit_meter=charts.meter(facts.hits, facts.searches, label="searches with a strong match"),
        curve=charts.day_bars(curve),
        used=used,
        used_meter=charts.meter(used, facts.searches, label="searches found and used"),
        answered=await adapter.newest_keys(app, who.caller),
        embed_meter=charts.meter(
            len(notes) - len(pending), len(notes), label="memories with a vector"
        ),
        solutions=solutions,
        notes=readable,
        never=never[:30],
        never_count=len(never),
        pending=pending[:30],
        pending_count=len(pending),
        top=top,
        failures=await adapter.job_failures(app),
        empty_queries=facts.empty_queries[:15] if owner else [],
        owner=owner,
        total=len(notes),
        iso=iso,
        preview=adapter.preview_text,
    )


async def context(request: Request, who: Viewer) -> Response:
    text = await adapter.session_context(app_of(request), who.caller)
    return page(request, "context.html", who=who, html=markdown.render(text), raw=text)
