"""The memory browser as a Starlette app, and how a server mounts it at /ui/.

``build_ui(ui)`` is the whole UI (routes, static files, guards); ``mount_ui`` adds it
to the MCP server's Starlette app (``mcp.streamable_http_app(...)``) so one process and
one port serve both, sharing the opened ``AppContext`` through an ``AppRef``.
"""

from __future__ import annotations

import anyio
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from mcp_gateway.common.errors import InvalidInput, KiokuError, NotFound
from mcp_gateway.common.settings import KiokuSettings
from mcp_gateway.services.app import AppContext
from mcp_gateway.ui import pages_insights, pages_notes, pages_records
from mcp_gateway.ui.session import SESSION_TTL_S, Keys
from mcp_gateway.ui.web import (
    HERE,
    SECURITY_HEADERS,
    AppRef,
    Refused,
    TokenVerifier,
    Ui,
    Viewer,
    guarded,
    page,
    read_form,
    same_origin,
    secure,
    ui_of,
)

_FAILED_SIGNIN_DELAY_S = 0.5


class _Guard:
    """Refuses unknown Host headers (DNS rebinding) and adds the security headers."""

    def __init__(self, app: ASGIApp, ui: Ui) -> None:
        self.app, self.ui = app, ui

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        hosts = self.ui.allowed_hosts
        host = dict(scope.get("headers") or []).get(b"host", b"").decode("latin-1").lower()
        if hosts is not None and host not in hosts:
            await secure(PlainTextResponse("unknown host\n", 421))(scope, receive, send)
            return

        async def send_secured(message: Message) -> None:
            if message["type"] == "http.response.start":
                present = {k.lower() for k, _ in message.get("headers", [])}
                extra = [
                    (k.lower().encode(), v.encode())
                    for k, v in SECURITY_HEADERS.items()
                    if k.lower().encode() not in present
                ]
                message = {**message, "headers": [*message.get("headers", []), *extra]}
            await send(message)

        await self.app(scope, receive, send_secured)


def _safe_next(ui: Ui, target: str) -> str:
    """Only a path inside the UI: never another site (open redirect)."""
    if target.startswith(ui.base + "/") and not target.startswith("//") and "\\" not in target:
        return target
    return ui.base + "/"


def _signed_in(request: Request, grant: str, target: str) -> Response:
    ui = ui_of(request)
    cookie, _ = ui.keys.new_session(grant)
    response = RedirectResponse(_safe_next(ui, target), status_code=303)
    response.set_cookie(
        ui.keys.cookie_name,
        cookie,
        max_age=int(SESSION_TTL_S),
        path=ui.base + "/",
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
    )
    return response


async def login_form(request: Request) -> Response:
    ui = ui_of(request)
    return page(
        request,
        "login.html",
        next=_safe_next(ui, request.query_params.get("next", "")),
        has_tokens=ui.verifier is not None,
        error="",
    )


async def login(request: Request) -> Response:
    ui = ui_of(request)
    if not same_origin(request):
        return PlainTextResponse("cross-site sign-in refused\n", 403)
    form = await read_form(request)
    target = _safe_next(ui, form.get("next", ""))
    token = form.get("token", "").strip()
    access = await ui.verifier.verify_token(token) if ui.verifier and token else None
    if access is None:
        await anyio.sleep(_FAILED_SIGNIN_DELAY_S)  # slows guessing; tokens are long anyway
        return page(
            request,
            "login.html",
            status=401,
            next=target,
            has_tokens=ui.verifier is not None,
            error="That token is not accepted.",
        )
    return _signed_in(request, access.client_id, target)


async def signin_link(request: Request) -> Response:
    """A one-time code minted by ``kioku ui`` (see session.py)."""
    ui = ui_of(request)
    grant = await anyio.to_thread.run_sync(ui.keys.redeem, request.query_params.get("code", ""))
    if grant is None:
        await anyio.sleep(_FAILED_SIGNIN_DELAY_S)
        return page(
            request,
            "login.html",
            status=401,
            next=ui.base + "/",
            has_tokens=ui.verifier is not None,
            error="That sign-in link is used up or expired: run `kioku ui` again.",
        )
    return _signed_in(request, grant, request.query_params.get("next", ""))


async def logout(request: Request, who: Viewer) -> Response:
    ui = ui_of(request)
    if who.session is not None:
        await anyio.to_thread.run_sync(ui.keys.revoke, who.session)
    response = RedirectResponse(f"{ui.base}/login", status_code=303)
    response.delete_cookie(ui.keys.cookie_name, path=ui.base + "/")
    return response


async def _kioku_error(request: Request, exc: Exception) -> Response:
    status = 404 if isinstance(exc, NotFound) else 400 if isinstance(exc, InvalidInput) else 500
    if isinstance(exc, Refused):
        status = exc.status
    message = exc.message if isinstance(exc, Refused) else str(exc)
    return page(request, "error.html", status=status, message=message)


def build_ui(ui: Ui) -> Starlette:
    g = guarded
    routes = [
        Route("/", g(pages_notes.index)),
        Route("/login", login_form, methods=["GET"]),
        Route("/login", login, methods=["POST"]),
        Route("/signin", signin_link, methods=["GET"]),
        Route("/logout", g(logout, change=True), methods=["POST"]),
        Route("/notes/{note_id}", g(pages_notes.show_note), methods=["GET"]),
        Route("/notes/{note_id}", g(pages_notes.edit_note, change=True), methods=["POST"]),
        Route("/notes/{note_id}/delete", g(pages_notes.delete_note, change=True), methods=["POST"]),
        Route(
            "/notes/{note_id}/keys/forget",
            g(pages_notes.forget_key, change=True),
            methods=["POST"],
        ),
        Route(
            "/notes/{note_id}/restore", g(pages_notes.restore_note, change=True), methods=["POST"]
        ),
        Route("/records/", g(pages_records.records)),
        Route("/records/{record_id}", g(pages_records.record)),
        Route("/helping", g(pages_insights.helping)),
        Route("/context", g(pages_insights.context)),
        Mount("/static", app=StaticFiles(directory=HERE / "static"), name="static"),
    ]
    app = Starlette(
        routes=routes,
        exception_handlers={KiokuError: _kioku_error, Refused: _kioku_error},
    )
    app.state.ui = ui
    app.add_middleware(_Guard, ui=ui)
    return app


def ui_mount(
    settings: KiokuSettings,
    ref: AppRef | AppContext,
    *,
    verifier: TokenVerifier | None,
    allowed_hosts: list[str] | None = None,
) -> Mount:
    """The memory browser as a ``Mount("/ui", ...)`` route, for any Starlette app.

    ``ref``: the opened ``AppContext``, or an ``AppRef`` a server lifespan fills later.
    ``verifier``: the server's bearer-token verifier (None: one-time links only).
    ``allowed_hosts``: Host headers to accept (None: any, e.g. behind a Unix socket).
    """
    if not isinstance(ref, AppRef):
        ref = AppRef(ref)
    # a shared truth store keeps the browser's sign-in state (stores.signins): the
    # stores are open by now wherever several gateways can share one
    ui = Ui(settings, Keys.for_settings(settings, ref.app), ref, verifier, allowed_hosts)
    return Mount(ui.base, app=build_ui(ui))


def mount_ui(
    http_app: Starlette,
    settings: KiokuSettings,
    ref: AppRef | AppContext,
    *,
    verifier: TokenVerifier | None,
    allowed_hosts: list[str] | None = None,
) -> None:
    """Serve the memory browser at /ui/ of ``http_app`` (the MCP Starlette app)."""
    mount = ui_mount(settings, ref, verifier=verifier, allowed_hosts=allowed_hosts)
    http_app.router.routes.insert(0, mount)
