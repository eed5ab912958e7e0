"""``kioku serve`` on stdio as a thin proxy to the shared local gateway.

The proxy attaches to the owner's session socket (``session_socket``): one MCP session
per proxy, the same newline-delimited JSON-RPC that stdio carries. Lines from stdin go to
the socket, lines from the socket go to stdout, each copied as bytes; the proxy parses a
message only to screen it (size, nesting, JSON) and to know which requests await a reply.
stdout carries only protocol; logs go to stderr.

Failure handling:
- cannot connect (no daemon, stale socket after a crash, daemon idled out): the message
  never reached a gateway, so the proxy (re)starts the daemon and sends it again --
  safe, nothing can be applied twice;
- the connection broke while requests were in flight: they may or may not have been
  applied, so they are NOT resent; each gets a JSON-RPC error naming its id. The next
  message attaches to a fresh daemon, which first gets this client's ``initialize`` and
  ``notifications/initialized`` again (their replies are not forwarded: the client had
  them), so the editor's session goes on.

Why a session socket and not HTTP: ``bench/hop.py`` measured a trivial call at 3.2 ms
through the old proxy -> HTTP -> stateless-MCP hop vs 1.4 ms over plain stdio
(docs/performance.md has the figures of this design).
"""

from __future__ import annotations

import json
import logging
import time
from typing import Any

import anyio
import anyio.abc
from anyio.streams.buffered import BufferedByteReceiveStream

from . import local_gateway as gw
from . import peercred
from .jsonrpc_peek import peek_id
from .settings import KiokuSettings
from .stdio_lines import StdioLines

log = logging.getLogger(__name__)

# JSON-RPC "server error" range; the message says what to do.
GATEWAY_UNAVAILABLE = -32001
_CONNECT_ATTEMPTS = 3
# The gateway's limit (the MCP SDK's 4 MiB body limit): larger lines are refused here,
# answered with the request's id.
MAX_MESSAGE_BYTES = 4 * 1024 * 1024
# A reply line can be larger (an export of a long record history); this bounds memory.
MAX_REPLY_BYTES = 64 * 1024 * 1024
_GONE = gw.STREAM_GONE


class GatewayUnavailable(Exception):
    pass


class _Attached:
    """One connection to the owner's session socket."""

    def __init__(self, stream: anyio.abc.SocketStream) -> None:
        self.stream = stream
        self.lines = BufferedByteReceiveStream(stream)
        self.lost = False


class Proxy:
    def __init__(self, settings: KiokuSettings, stdio: StdioLines | None = None) -> None:
        self.settings = settings
        self.paths = gw.GatewayPaths.for_settings(settings)
        self._stdio = stdio or StdioLines()
        self._start_lock = anyio.Lock()
        self._send_lock = anyio.Lock()
        self._attached: _Attached | None = None
        # replayed to a fresh daemon: this client's initialize and initialized lines
        self._handshake: list[bytes] = []
        self._in_flight: dict[str, Any] = {}  # json of the id -> the id
        self._swallow: set[str] = set()  # replies to replayed requests
        self._tg: anyio.abc.TaskGroup | None = None
        self._settled: anyio.Event | None = None  # set when nothing is in flight any more

    # -- the daemon -------------------------------------------------------------------

    async def ensure_daemon(self) -> None:
        """Return once a daemon accepts connections; start one if none owns the lock."""
        async with self._start_lock:
            cfg = self.settings.local_gateway
            deadline = time.monotonic() + cfg.start_timeout_s
            child = None
            while time.monotonic() < deadline:
                if await anyio.to_thread.run_sync(gw.can_connect, self.paths.session_socket):
                    return
                owned = await anyio.to_thread.run_sync(gw.lock_held, self.paths.lock)
                if not owned:
                    if child is not None and child.poll() not in (None, 0):
                        raise GatewayUnavailable(
                            f"the kioku gateway for {self.settings.data_dir} failed to start "
                            f"(log: {self.paths.log}): {gw.start_failure(self.paths)}"
                        )
                    if child is None or child.poll() is not None:
                        log.info("starting the kioku gateway for %s", self.settings.data_dir)
                        try:
                            child = gw.spawn_daemon(self.settings, self.paths)
                        except OSError as exc:
                            raise GatewayUnavailable(
                                f"cannot start the kioku gateway: {exc.filename} is not "
                                f"writable ({exc.strerror}); the data dir must be writable"
                            ) from exc
                await anyio.sleep(0.05)
            raise GatewayUnavailable(
                f"the kioku gateway for {self.settings.data_dir} did not become ready within "
                f"{cfg.start_timeout_s:g} s (see {self.paths.log})"
            )

    async def _connect(self) -> anyio.abc.SocketStream:
        # the private socket dir of a deep data dir can be re-created by a new daemon,
        # so the path is read again for every connection
        path = str(self.paths.session_socket)
        stream = await anyio.connect_unix(path)
        if not peercred.same_user(stream.extra(anyio.abc.SocketAttribute.raw_socket, None)):
            await stream.aclose()
            raise ConnectionRefusedError(f"refusing {path}: not served by this user")
        return stream

    async def _attach(self) -> _Attached:
        """The live connection, or a new one (daemon started if needed, handshake
        replayed). Caller holds ``_send_lock``."""
        if self._attached is not None and not self._attached.lost:
            return self._attached
        for attempt in range(_CONNECT_ATTEMPTS):
            try:
                stream = await self._connect()
                break
            except OSError:
                if attempt == _CONNECT_ATTEMPTS - 1:
                    raise
                await self.ensure_daemon()
        attached = _Attached(stream)
        self._attached = attached
        assert self._tg is not None
        self._tg.start_soon(self._pump_replies, attached)
        try:
            for line in self._handshake:
                key = _key(_message_id(line))
                if key is not None:
                    self._swallow.add(key)
                await stream.send(line)
        except _GONE as exc:
            await self._lose(attached)
            raise GatewayUnavailable(_describe(exc)) from exc
        return attached

    # -- client -> gateway --------------------------------------------------------------

    async def forward(self, raw: bytes) -> None:
        # Hostile lines (nested thousands deep, over the size limit) are answered here
        # with the request's id, and the session goes on.
        if len(raw) > MAX_MESSAGE_BYTES:
            await self._reply_error(
                peek_id(raw),
                f"message of {len(raw)} bytes is over the {MAX_MESSAGE_BYTES}-byte limit",
                code=-32600,
            )
            return
        try:
            message: Any = json.loads(raw)
        except (ValueError, RecursionError) as exc:
            why = "nested too deeply" if isinstance(exc, RecursionError) else "not valid JSON"
            await self._reply_error(
                peek_id(raw),
                f"parse error ({why}): each line must be one JSON-RPC message",
                code=-32700,
            )
            return
        method = message.get("method") if isinstance(message, dict) else None
        is_request = method is not None and "id" in message
        line = raw if raw.endswith(b"\n") else raw + b"\n"
        async with self._send_lock:
            if method == "initialize":
                self._handshake = []  # a new session: forget the old one's
            try:
                await self._send(line, message.get("id") if is_request else None, is_request)
            except (GatewayUnavailable, OSError) as exc:
                log.warning("message %r not delivered: %s", method, exc)
                if is_request:
                    await self._reply_error(message.get("id"), _describe(exc))
                return
            if method in ("initialize", "notifications/initialized"):
                self._handshake.append(line)

    async def _send(self, line: bytes, req_id: Any, is_request: bool) -> None:
        attached = await self._attach()
        key = _key(req_id) if is_request else None
        if key is not None:
            self._in_flight[key] = req_id
        try:
            await attached.stream.send(line)
        except _GONE:
            # sent or not, unknown: _lose answers every request in flight, this one too
            await self._lose(attached)

    # -- gateway -> client --------------------------------------------------------------

    async def _pump_replies(self, attached: _Attached) -> None:
        try:
            while True:
                line = await attached.lines.receive_until(b"\n", MAX_REPLY_BYTES)
                key = _key(_response_id(line))
                if key is not None:
                    if key in self._swallow:
                        self._swallow.discard(key)
                        continue
                    self._in_flight.pop(key, None)
                await self._stdio.write(line + b"\n")
                if not self._in_flight and self._settled is not None:
                    self._settled.set()
        except _GONE:
            pass
        finally:
            await self._lose(attached)

    async def _lose(self, attached: _Attached) -> None:
        """The connection is gone: every request still waiting gets an error."""
        if attached.lost:
            return
        attached.lost = True
        with anyio.CancelScope(shield=True):
            await attached.stream.aclose()
        waiting, self._in_flight = self._in_flight, {}
        self._swallow.clear()
        for req_id in waiting.values():
            await self._reply_error(req_id, _describe(ConnectionResetError()))
        if self._settled is not None:
            self._settled.set()

    async def _reply_error(
        self, req_id: Any, message: str, code: int = GATEWAY_UNAVAILABLE
    ) -> None:
        reply = {"jsonrpc": "2.0", "id": req_id, "error": {"code": code, "message": message}}
        line = json.dumps(reply, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"
        await self._stdio.write(line)

    # -- the loop ---------------------------------------------------------------------

    async def run(self) -> None:
        try:
            await self.ensure_daemon()
        except GatewayUnavailable as exc:
            # Keep serving: each request gets this error, and a later one may succeed.
            log.error("%s", exc)
        async with anyio.create_task_group() as tg:
            self._tg = tg
            async with self._stdio:
                while line := await self._stdio.readline():
                    if line.strip():
                        await self.forward(line)
            await self._drain()
            tg.cancel_scope.cancel()

    async def _drain(self) -> None:
        """stdin closed: let the replies still owed reach stdout, then detach."""
        if self._in_flight and self._attached is not None and not self._attached.lost:
            self._settled = anyio.Event()
            with anyio.move_on_after(self.settings.local_gateway.request_timeout_s):
                await self._settled.wait()
        if self._attached is not None:
            await self._lose(self._attached)


def _key(req_id: Any) -> str | None:
    return None if req_id is None else json.dumps(req_id)


def _message_id(line: bytes) -> Any:
    try:
        message = json.loads(line)
    except ValueError:
        return None
    return message.get("id") if isinstance(message, dict) else None


def _response_id(line: bytes) -> Any:
    """The id of a response (result or error); None for the gateway's own requests and
    notifications, whose ids are in the gateway's number space, not the client's."""
    try:
        message = json.loads(line)
    except (ValueError, RecursionError):
        return None
    if not isinstance(message, dict) or "method" in message:
        return None
    return message.get("id")


def _describe(exc: BaseException) -> str:
    if isinstance(exc, GatewayUnavailable):
        return str(exc)
    return (
        f"the kioku gateway connection broke during this request ({type(exc).__name__}); it "
        "may or may not have been applied: check (e.g. search_memory) before retrying. "
        "The next request starts a fresh gateway if needed."
    )


def run_proxy(settings: KiokuSettings) -> None:
    anyio.run(Proxy(settings).run)
