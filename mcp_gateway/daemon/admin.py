"""The owner's admin API, on its private Unix socket only (0600, the owner's user).

``POST /api/call`` runs a use case by name (``services.api``) with the scope and
project the request carries (``request_context``; the owner's own when it names none),
and names the owner's settings the caller's process sets otherwise. ``GET /api/status``,
``POST /api/stop``; ``/api/reindex`` starts, reports and cancels a blue/green rebuild.
Errors come back as ``{"error": {"type", "message", "kind"}}``
so the CLI raises the same ``KiokuError`` it would raise in-process.

Every request must carry the owner key (``keyfile.OWNER_HEADER``): the socket's peer
check cannot tell the CLI from ``kioku ui``'s forwarder (both run as the owner's user),
and the forwarder never sends the key. ``OwnerOnly`` guards ``/mcp`` on the socket too.
"""

from __future__ import annotations

import hmac
import logging
from pathlib import Path

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from mcp_gateway.common.access import settings_scope
from mcp_gateway.common.errors import KiokuError
from mcp_gateway.common.keyfile import OWNER_HEADER, owner_key
from mcp_gateway.daemon import request_context
from mcp_gateway.daemon.owner_state import OwnerState
from mcp_gateway.services import Services
from mcp_gateway.services.api import call

log = logging.getLogger(__name__)

_STATUS = {"InvalidInput": 400, "NotFound": 404, "Conflict": 409, "AccessDenied": 403}


def error_response(exc: KiokuError) -> JSONResponse:
    name = type(exc).__name__
    error = {"type": name, "message": str(exc), "kind": getattr(exc, "kind", "")}
    return JSONResponse({"error": error}, status_code=_STATUS.get(name, 503))


class OwnerOnly:
    """ASGI middleware: only requests carrying the data dir's owner key reach ``app``;
    any other gets 403 before its body is read."""

    def __init__(self, app: ASGIApp, data_dir: Path) -> None:
        self.app = app
        self._key = owner_key(data_dir).encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            given = b""
            for name, value in scope.get("headers") or []:
                if name.lower() == OWNER_HEADER.encode():
                    given = value
            if not hmac.compare_digest(given, self._key):
                log.warning("refused %s without the owner key", scope.get("path", "?"))
                refusal = JSONResponse(
                    {
                        "error": {
                            "type": "AccessDenied",
                            "message": "the owner API needs the data dir's owner key "
                            "(run kioku commands as the data dir's user)",
                        }
                    },
                    status_code=403,
                )
                await refusal(scope, receive, send)
                return
        await self.app(scope, receive, send)


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

    routes = Starlette(
        routes=[
            Route("/call", do_call, methods=["POST"]),
            Route("/status", status, methods=["GET"]),
            Route("/stop", stop, methods=["POST"]),
            Route("/reindex", reindex, methods=["GET", "POST", "DELETE"]),
        ]
    )
    # every handler behind the key check (not only the routes someone remembered)
    routes.add_middleware(OwnerOnly, data_dir=services.app.settings.data_dir)
    return routes
