"""``kioku ui``: open the memory browser for this data dir.

The embedded default keeps one owner per data dir: the local gateway daemon, which
serves MCP (and /ui/) on a Unix socket only. A browser needs TCP, so ``kioku ui``
joins that daemon (starting it if none runs, exactly as a stdio client does) and
serves a loopback port that forwards /ui/ requests to the socket. The page needs a
session like everywhere else; the command mints a one-time sign-in code from the data
dir's key (session.py) and opens ``/ui/signin?code=...``. It runs until Ctrl-C.

Every owner (the daemon, ``kioku serve --http``, ``--standalone``) listens on the data
dir's socket, so the forwarder reaches whichever one runs.

``--link URL`` only prints a one-time sign-in link for a ``kioku serve --http``
gateway sharing this data dir (e.g. run inside the home server's container).
"""

from __future__ import annotations

import asyncio
import logging
import re
import socket
import sys
import threading
import time
import webbrowser
from collections.abc import Callable
from pathlib import Path
from urllib.parse import quote, unquote

import anyio
import httpx
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.types import Receive, Scope, Send

from mcp_gateway.common.access import DEFAULT_GRANT, grant_scopes
from mcp_gateway.common.errors import InvalidInput
from mcp_gateway.common.keyfile import OWNER_HEADER
from mcp_gateway.common.settings import KiokuSettings
from mcp_gateway.protocol import httpguard
from mcp_gateway.ui import signin_page
from mcp_gateway.ui.session import SIGNIN_TTL_S, mint_signin_code, ui_host

log = logging.getLogger(__name__)

MAX_BODY = 1024 * 1024
_HOP = {
    b"connection",
    b"keep-alive",
    b"proxy-authenticate",
    b"proxy-authorization",
    b"te",
    b"trailer",
    b"transfer-encoding",
    b"upgrade",
    b"content-length",
}
# set by this server itself (or decoded by httpx)
_OWN = {"content-encoding", "date", "server"}
# The only paths forwarded: the memory browser's routes (ui/routes.py), matched on the
# decoded path. A segment never starts with a dot (no ``.``/``..``) and holds no slash,
# backslash or percent sign, so what is forwarded is exactly what was matched: no
# client or server below can normalise it into another route (the admin API was
# reachable as ``/ui/%2e%2e/api/status`` while this was a prefix check).
_SEG = r"[A-Za-z0-9_-][A-Za-z0-9_.-]{0,199}"
_ROUTES = re.compile(
    r"/ui/(?:|login|signin|logout|records/|helping|context"
    rf"|notes/{_SEG}(?:/delete|/restore)?|records/{_SEG}|static/{_SEG})"
)


def ui_path(raw_path: bytes) -> str | None:
    """The path to forward for a request's raw path (percent-escapes decoded once), or
    None when it is not one of the memory browser's routes."""
    try:
        text = raw_path.decode("ascii")
        path = unquote(text, errors="strict")
    except (UnicodeDecodeError, ValueError):
        return None
    if "%2f" in text.lower() or "%5c" in text.lower():  # an encoded / or \ in a segment
        return None
    return path if _ROUTES.fullmatch(path) else None


def signin_url(settings: KiokuSettings, base_url: str, grant: str = DEFAULT_GRANT) -> str:
    if grant not in grant_scopes(settings):
        raise InvalidInput(f"no grant {grant!r} in the settings")
    code = mint_signin_code(settings, grant)
    return f"{base_url.rstrip('/')}/ui/signin?code={quote(code, safe='')}"


class Forwarder:
    """ASGI app: /ui/ requests on the loopback port -> the daemon's Unix socket.

    The Host header is checked here (the daemon trusts its socket) and passed on, so
    the UI's same-origin check compares the browser's Origin with what it asked for.
    A request that could not connect never reached a daemon: start one and retry.
    """

    def __init__(self, settings: KiokuSettings, port: int) -> None:
        from mcp_gateway.daemon import local_gateway

        self.settings = settings
        self.paths = local_gateway.GatewayPaths.for_settings(settings)
        # only the data dir's secret name (session.ui_host): a browser that signed in
        # there sends its cookie to no other local server (cookies ignore the port)
        self.host = f"{ui_host(settings.data_dir)}:{port}"
        self._starting = threading.Lock()  # requests that could not connect: one start
        self.signin_page: Path | None = None  # removed once a sign-in succeeds

    def ensure_daemon(self) -> None:
        from mcp_gateway.daemon import local_gateway

        with self._starting:
            local_gateway.ensure_daemon(self.settings, self.paths)
            # the session socket answers while the stores open; the owner's socket,
            # which the browser's requests go to, listens once they are open
            deadline = time.monotonic() + self.settings.local_gateway.start_timeout_s
            while not local_gateway.can_connect(self.paths.socket):
                if time.monotonic() > deadline:
                    return  # the forwarder answers 502 with its own message
                time.sleep(0.05)

    def _client(self) -> httpx.AsyncClient:
        transport = httpx.AsyncHTTPTransport(uds=str(self.paths.socket), retries=0)
        return httpx.AsyncClient(
            transport=transport,
            timeout=httpx.Timeout(self.settings.local_gateway.request_timeout_s, connect=5),
            limits=httpx.Limits(max_keepalive_connections=0),
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":  # nothing to open: the daemon owns the stores
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        if scope["type"] != "http":
            return
        response = await self._answer(Request(scope, receive))
        await response(scope, receive, send)

    async def _answer(self, request: Request) -> Response:
        if request.headers.get("host", "").lower() != self.host:
            # no redirect: that would tell any local user the secret host name
            return PlainTextResponse(
                "unknown host: open the link `kioku ui` printed (kioku-….localhost)\n", 421
            )
        raw = request.scope.get("raw_path") or request.scope["path"].encode()
        if raw in (b"/", b"/ui"):
            return RedirectResponse("/ui/", 307)
        path = ui_path(raw)
        if path is None:
            return PlainTextResponse("not found\n", 404)
        try:  # at most MAX_BODY held: a longer body is refused as it passes the limit
            body = await httpguard.read_body(request, MAX_BODY)
        except httpguard.TooLarge:
            return PlainTextResponse("request too large\n", 413, headers={"Connection": "close"})
        # the owner key is never forwarded (the owner refuses /api and /mcp without it)
        headers = [
            (k, v)
            for k, v in request.headers.raw
            if k.lower() not in _HOP and k.lower() != OWNER_HEADER.encode()
        ]
        target = path + (f"?{request.url.query}" if request.url.query else "")
        async with self._client() as client:
            for attempt in range(3):
                try:
                    upstream = await client.request(
                        request.method,
                        f"http://kioku-gateway{target}",
                        headers=headers,
                        content=body,
                    )
                    break
                except httpx.ConnectError:
                    if attempt == 2:
                        return PlainTextResponse("the kioku gateway is not reachable\n", 502)
                    await anyio.to_thread.run_sync(self.ensure_daemon)
        if path == "/ui/signin" and upstream.status_code == 303:
            signin_page.remove(self.signin_page)
        out = Response(upstream.content, status_code=upstream.status_code)
        for key, value in upstream.headers.multi_items():
            if key.lower().encode() not in _HOP and key.lower() not in _OWN:
                out.headers.append(key, value)
        return out


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _build(settings: KiokuSettings, port: int) -> Forwarder:
    from mcp_gateway.daemon import local_gateway

    if not local_gateway.supported():
        raise InvalidInput(
            "kioku ui needs Unix sockets: run `kioku serve --http` and open /ui/ instead"
        )
    return Forwarder(settings, port)


async def _expire(page: Path) -> None:
    await anyio.sleep(SIGNIN_TTL_S)
    signin_page.remove(page)


def serve_ui(
    settings: KiokuSettings,
    *,
    port: int = 0,
    open_browser: bool = True,
    grant: str = DEFAULT_GRANT,
    link: str = "",
    opener: Callable[[str], object] = webbrowser.open,
) -> int:
    """``kioku ui``. ``opener`` is handed the ``file://`` URL of the private sign-in page
    (never the code): ``webbrowser.open``, which honours ``$BROWSER``."""
    if link:
        print(signin_url(settings, link, grant))
        return 0
    import uvicorn

    port = port or _free_port()
    app = _build(settings, port)
    app.ensure_daemon()
    base = f"http://{app.host}"
    httpguard.raise_open_file_limit()
    http = settings.http
    # the same deadlines and cap as every door (httpguard); each forwarded request also
    # opens a connection to the owner's socket, hence two file descriptors a request
    cap = min(http.max_connections, httpguard.fd_budget(2))
    limits = httpguard.Limits(http.header_timeout_s, http.body_timeout_s, cap)
    server = uvicorn.Server(
        uvicorn.Config(
            app,
            host="127.0.0.1",
            port=port,
            log_level="warning",
            lifespan="auto",
            access_log=False,
            timeout_keep_alive=http.idle_timeout_s,
            backlog=httpguard.BACKLOG,
            http=httpguard.guarded_protocol(httpguard.Door(f"kioku ui port {port}", limits)),
        )
    )

    async def run() -> None:
        httpguard.quiet_accept_errors(asyncio.get_running_loop())
        async with anyio.create_task_group() as tg:

            async def serve_then_stop() -> None:
                tg.start_soon(httpguard.deepen_queues, server)
                await server.serve()
                tg.cancel_scope.cancel()  # Ctrl-C or SIGTERM: the page's timer ends too

            tg.start_soon(serve_then_stop)
            while not server.started:
                if server.should_exit:
                    return
                await anyio.sleep(0.05)
            url = signin_url(settings, base, grant)
            print(f"kioku memory browser: {base}/ui/  (Ctrl-C to stop)", flush=True)
            print(f"one-time sign-in link (2 minutes): {url}", flush=True)
            if open_browser:
                page = signin_page.write(settings.data_dir, url, SIGNIN_TTL_S)
                app.signin_page = page
                tg.start_soon(_expire, page)
                await anyio.to_thread.run_sync(opener, page.as_uri())

    try:
        anyio.run(run)
    except KeyboardInterrupt:
        pass
    finally:
        signin_page.remove(app.signin_page)
    print("kioku ui stopped", file=sys.stderr)
    return 0
