"""The owner's admin API, on its private Unix socket only (0600, the owner's user).

``POST /api/call`` runs a use case by name (``services.api``) with the scope and
project the request carries (``request_context``; the owner's own when it names none),
and names the owner's settings the caller's process sets otherwise. ``GET /api/status``,
``POST /api/stop``; ``/api/reindex`` starts, reports and cancels a blue/green rebuild.
Errors come back as ``{"error": {"type", "message", "kind"}}``
so the CLI raises the same ``KiokuError`` it would raise in-process.
"""

from __future__ import annotations

import logging

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from . import request_context
from .access import settings_scope
from .errors import KiokuError
from .owner_state import OwnerState
from .services import Services
from .services.api import call

log = logging.getLogger(__name__)

_STATUS = {"InvalidInput": 400, "NotFound": 404, "Conflict": 409, "AccessDenied": 403}


def error_response(exc: KiokuError) -> JSONResponse:
    name = type(exc).__name__
    error = {"type": name, "message": str(exc), "kind": getattr(exc, "kind", "")}
    return JSONResponse({"error": error}, status_code=_STATUS.get(name, 503))


def admin_app(services: Services, state: OwnerState) -> Starlette:
    scope = settings_scope(services.app.settings)

    async def do_call(request: Request) -> JSONResponse:
        try:
            body = await request.json()
            op, args = str(body["op"]), dict(body.get("args") or {})
            ctx = dict(body.get("context") or {})
        except (ValueError, KeyError, TypeError):
            return JSONResponse({"error": {"type": "InvalidInput", "message": "bad request"}}, 400)
        try:
            if op == "records.add" and not str(args.get("project") or "").strip():
                args["project"] = str(ctx.get("project") or "")
            out = await call(services, request_context.scope_of(ctx, scope), op, args)
        except KiokuError as exc:
            return error_response(exc)
        ignored = request_context.ignored(ctx, services.app.settings)
        return JSONResponse({"result": out, "ignored": ignored, "pid": state.pid})

    async def status(_: Request) -> JSONResponse:
        stats = await services.maintenance.stats()
        rebuild = services.rebuild.status.model_dump()
        return JSONResponse({"owner": state.public(), **stats, "rebuild": rebuild})

    async def stop(_: Request) -> JSONResponse:
        log.info("stop requested over the admin API")
        state.stop.set()
        return JSONResponse({"stopping": state.pid})

    async def reindex(request: Request) -> JSONResponse:
        rebuilder = services.rebuild
        if request.method == "POST":
            # Runs in the owner, not in this request: the CLI polls and may go away.
            rebuilder.start(services.app.spawn)
        elif request.method == "DELETE":
            rebuilder.cancel()
        return JSONResponse(rebuilder.status.model_dump())

    return Starlette(
        routes=[
            Route("/call", do_call, methods=["POST"]),
            Route("/status", status, methods=["GET"]),
            Route("/stop", stop, methods=["POST"]),
            Route("/reindex", reindex, methods=["GET", "POST", "DELETE"]),
        ]
    )
