"""What every page handler shares: who is asking, templates, security headers, guards.

Authentication is the MCP server's: an ``Authorization: Bearer`` header is checked by
the server's own token verifier (scripts), else the signed session cookie a browser got
by signing in. Either yields a grant name, and the grant's scope comes from
``access.grant_scopes`` exactly as for MCP tools. Nothing under /ui/ except sign-in and
static files answers without one.

A change (POST) made with the cookie must also carry the session's CSRF token and come
from this origin (``Origin``, else ``Referer``, equal to the ``Host`` asked for); the
cookie is ``SameSite=Strict`` besides. Requests authenticated by a bearer header need
neither: a cross-site page cannot set that header.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import parse_qsl, quote, urlsplit

import anyio
from jinja2 import Environment, FileSystemLoader, select_autoescape
from mcp.server.auth.provider import AccessToken
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from mcp_gateway.common.access import grant_scopes
from mcp_gateway.common.settings import KiokuSettings
from mcp_gateway.protocol import httpguard
from mcp_gateway.services.app import AppContext
from mcp_gateway.ui.adapter import Caller
from mcp_gateway.ui.session import Keys, Session

log = logging.getLogger(__name__)

HERE = Path(__file__).parent
# No inline script or style anywhere: every asset is a file under /ui/static/.
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "font-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; "
    "base-uri 'none'"
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
}
MAX_FORM_BYTES = 256 * 1024
_MAX_FIELDS = 50


class TokenVerifier(Protocol):
    async def verify_token(self, token: str) -> AccessToken | None: ...


class AppRef:
    """The gateway's ``AppContext`` once its lifespan has opened the stores."""

    def __init__(self, app: AppContext | None = None) -> None:
        self.app = app

    def set(self, app: AppContext) -> None:
        self.app = app


@dataclass(slots=True)
class Ui:
    settings: KiokuSettings
    keys: Keys
    ref: AppRef
    verifier: TokenVerifier | None = None
    # Host headers accepted (DNS-rebinding guard); None: any (behind a Unix socket,
    # or bound to all interfaces where the token is the gate)
    allowed_hosts: list[str] | None = None
    base: str = "/ui"
    env: Environment = field(init=False)

    def __post_init__(self) -> None:
        self.env = Environment(
            loader=FileSystemLoader(HERE / "templates"),
            autoescape=select_autoescape(default=True, default_for_string=True),
            trim_blocks=True,
            lstrip_blocks=True,
        )


@dataclass(frozen=True, slots=True)
class Viewer:
    caller: Caller
    session: Session | None  # None: a bearer-authenticated script
    csrf: str = ""


class Refused(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status, self.message = status, message


def ui_of(request: Request) -> Ui:
    return request.app.state.ui


def app_of(request: Request) -> AppContext:
    app = ui_of(request).ref.app
    if app is None:
        raise Refused(503, "the gateway is still starting; reload in a moment")
    return app


def same_origin(request: Request) -> bool:
    origin = request.headers.get("origin") or request.headers.get("referer") or ""
    parts = urlsplit(origin)
    host = request.headers.get("host", "")
    return parts.scheme in ("http", "https") and bool(host) and parts.netloc.lower() == host.lower()


async def viewer(request: Request) -> Viewer | None:
    ui = ui_of(request)
    header = request.headers.get("authorization", "")
    session: Session | None = None
    if header.lower().startswith("bearer "):
        if ui.verifier is None:
            return None
        token = await ui.verifier.verify_token(header[7:].strip())
        if token is None:
            return None
        grant = token.client_id
    else:
        cookie = request.cookies.get(ui.keys.cookie_name)
        # a store read (sign-outs): off the event loop
        session = await anyio.to_thread.run_sync(ui.keys.read_session, cookie) if cookie else None
        if session is None:
            return None
        grant = session.grant
    scope = grant_scopes(ui.settings).get(grant or "")
    if scope is None:  # the grant was removed from the settings
        return None
    csrf = ui.keys.csrf_token(session) if session else ""
    return Viewer(Caller(grant or "", scope), session, csrf)


def wants_html(request: Request) -> bool:
    return "text/html" in request.headers.get("accept", "")


def secure(response: Response) -> Response:
    for key, value in SECURITY_HEADERS.items():
        response.headers.setdefault(key, value)
    return response


def page(request: Request, template: str, status: int = 200, **context: Any) -> HTMLResponse:
    ui = ui_of(request)
    html = ui.env.get_template(template).render(base=ui.base, request=request, **context)
    return HTMLResponse(html, status_code=status)


def login_redirect(request: Request) -> Response:
    ui = ui_of(request)
    target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
    return RedirectResponse(f"{ui.base}/login?next={quote(target, safe='')}", status_code=303)


Handler = Callable[[Request, Viewer], Awaitable[Response]]


def guarded(handler: Handler, *, change: bool = False) -> Callable[[Request], Awaitable[Response]]:
    """Authenticate (and for changes: origin + CSRF check) before ``handler``."""

    async def endpoint(request: Request) -> Response:
        who = await viewer(request)
        if who is None:
            if not change and wants_html(request):
                return login_redirect(request)
            return Response(
                "sign in first (or send Authorization: Bearer <token>)\n",
                status_code=401,
                headers={"WWW-Authenticate": 'Bearer realm="kioku"'},
                media_type="text/plain",
            )
        if change and who.session is not None:
            if not same_origin(request):
                return Response("cross-site request refused\n", 403, media_type="text/plain")
            form = await read_form(request)
            if not ui_of(request).keys.csrf_ok(who.session, form.get("csrf", "")):
                return Response("missing or stale form token: reload the page\n", 403)
        return await handler(request, who)

    return endpoint


async def read_form(request: Request) -> dict[str, str]:
    """The urlencoded form (cached on the request: the guard and handler both read it).
    The pages post urlencoded forms only (no file fields)."""
    cached = request.scope.get("kioku.form")
    if cached is not None:
        return cached
    try:  # bounded before it is read: a chunked body has no Content-Length to check
        body = await httpguard.read_body(request, MAX_FORM_BYTES)
    except httpguard.TooLarge:
        raise Refused(413, "form too large") from None
    try:
        pairs = parse_qsl(body.decode("utf-8"), keep_blank_values=True, max_num_fields=_MAX_FIELDS)
    except (UnicodeDecodeError, ValueError):
        raise Refused(400, "unreadable form: send it from the page") from None
    out = dict(pairs)
    request.scope["kioku.form"] = out
    return out
