"""MCP sessions for the stdio proxies: one long-lived session per connection on the
owner's session socket (``session.sock`` beside ``gateway.sock``), carrying exactly what
stdio carries -- newline-delimited JSON-RPC, both ways.

Why not the owner's ``/mcp`` HTTP endpoint: there every message crossed an HTTP client in
the proxy, uvicorn, and the SDK's stateless transport, which builds a session per
request: a trivial call cost 3.2 ms through that hop vs 1.4 ms over plain stdio (bench/LOG.md,
round 3, "Performance"); here the proxy copies lines and the owner runs the same
session loop as ``kioku serve --standalone``.

Access control is the socket's: 0600 in the private data dir (or its private socket
dir), and every accepted connection's peer uid must be ours (``peercred``). The proxy
screens hostile lines (size, nesting) before they get here; lines over ``MAX_LINE``
end the connection.

The socket listens before the owner's stores and model are open (``Opening``): the
handshake and the lists (``EARLY``) are answered at once -- an editor waits on
``initialize`` at every launch -- and every other message waits until they are open (a
search then runs on the settled index), or is answered with the reason they could not be.

A proxy's first line may be its session's settings (``session_scope.PREAMBLE``: the
editor's ``KIOKU_NAMESPACE``, read namespaces and project): this session then runs with
them instead of the owner's.
"""

from __future__ import annotations

import errno
import json
import logging
import socket
import time
from typing import Any

import anyio
import mcp_types as types
from anyio.abc import SocketAttribute, SocketStream
from anyio.streams.buffered import BufferedByteReceiveStream
from mcp.server.mcpserver import MCPServer
from mcp.shared.message import SessionMessage

from mcp_gateway.common import compat, peercred, serving
from mcp_gateway.common.access import Scope
from mcp_gateway.common.errors import InvalidInput
from mcp_gateway.common.logbounds import Every
from mcp_gateway.daemon import local_gateway as gw
from mcp_gateway.daemon.jsonrpc_peek import peek_id
from mcp_gateway.daemon.owner_state import OwnerState
from mcp_gateway.daemon.request_context import scope_of
from mcp_gateway.protocol import httpguard
from mcp_gateway.protocol.session_scope import preamble_params, set_session

log = logging.getLogger(__name__)

# The proxy refuses lines over 4 MiB with the request's id; this only bounds memory.
MAX_LINE = 8 * 1024 * 1024
_GONE = gw.STREAM_GONE


# answered from what the server declares, before the stores are open
EARLY = frozenset(
    {
        "initialize",
        "notifications/initialized",
        "server/discover",
        "ping",
        "tools/list",
        "prompts/list",
        "resources/list",
        "resources/templates/list",
    }
)


class Opening:
    """Whether the owner's stores are open yet: set once (open, or failed with a reason)."""

    def __init__(self) -> None:
        self._done = anyio.Event()
        self.failure: str | None = None
        self.held = 0  # messages waiting for it
        self._none_held = anyio.Event()
        self._none_held.set()

    @property
    def is_open(self) -> bool:
        return self._done.is_set() and self.failure is None

    def opened(self) -> None:
        self._done.set()

    def fail(self, reason: str) -> None:
        if not self._done.is_set():
            self.failure = reason
            self._done.set()

    async def wait(self) -> str | None:
        """Until open (None) or failed (the reason)."""
        await self._done.wait()
        return self.failure

    def hold(self) -> None:
        if self.held == 0:
            self._none_held = anyio.Event()
        self.held += 1

    def release(self) -> None:
        self.held -= 1
        if self.held == 0:
            self._none_held.set()

    async def answered(self) -> None:
        """Until no message waits any more (after ``fail``: each got its error)."""
        await self._none_held.wait()


async def serve_sessions(
    server: MCPServer[Any], sock: socket.socket, state: OwnerState, opening: Opening, cap: int
) -> None:
    """Accept proxies on ``sock`` (bound, not yet listening) until cancelled; at most
    ``cap`` sessions at once (a proxy past it is closed: it starts over and says so).

    An editor's session lives for hours and is the same user's (peer uid), so no idle
    deadline applies here. ``accept()`` failing for want of file descriptors is one
    counted line every 10 s and a short pause, not a crash of the listener."""
    sock.listen(httpguard.LISTEN_QUEUE)
    listener = await anyio.abc.SocketListener.from_socket(sock)
    report = Every(10.0)
    refused = 0
    async with listener, anyio.create_task_group() as tg:
        while True:
            try:
                stream = await listener.accept()
            except OSError as exc:
                if exc.errno not in (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM):
                    raise
                refused += 1
                if report.due():
                    log.warning("session.sock: accept() failed %d times (%s)", refused, exc)
                await anyio.sleep(0.1)
                continue
            if state.sessions >= cap:
                refused += 1
                if report.due():
                    log.warning("session.sock: %d sessions open (its cap): closed a new one", cap)
                await stream.aclose()
                continue
            tg.start_soon(_session, server, stream, state, opening)


async def _session(
    server: MCPServer[Any], stream: SocketStream, state: OwnerState, opening: Opening
) -> None:
    if not peercred.same_user(stream.extra(SocketAttribute.raw_socket, None)):
        log.warning("dropped a session connection from another user")
        await stream.aclose()
        return
    state.sessions += 1
    try:
        async with stream:
            await _run(server, stream, state, opening)
    finally:
        state.sessions -= 1
        state.last_request = time.monotonic()


async def _run(
    server: MCPServer[Any], stream: SocketStream, state: OwnerState, opening: Opening
) -> None:
    to_server, from_socket = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    to_socket, from_server = anyio.create_memory_object_stream[SessionMessage](0)
    lines = BufferedByteReceiveStream(stream)
    sending = anyio.Lock()
    try:
        first: bytes | None = await lines.receive_until(b"\n", MAX_LINE)
    except _GONE:
        return
    if first is not None and _is_preamble(first):
        first = None

    async def send(data: bytes) -> bool:
        async with sending:
            try:
                await stream.send(data + b"\n")
            except _GONE:
                return False
        return True

    async def read_lines() -> None:
        nonlocal first
        async with to_server:
            while True:
                if first is not None:  # the line read before the session started
                    line, first = first, None
                else:
                    try:
                        line = await lines.receive_until(b"\n", MAX_LINE)
                    except _GONE:
                        return
                if not line.strip():
                    continue
                state.requests += 1
                state.last_request = time.monotonic()
                serving.requests.touch()  # the last adds' static vectors give way to it
                try:
                    message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
                except ValueError as exc:
                    # answered here, with the request's id: the client waits on it
                    await send(_invalid(line, exc))
                    continue
                if not opening.is_open and _method(message) not in EARLY:
                    opening.hold()
                    try:
                        failure = await opening.wait()
                        if failure is not None:
                            if isinstance(message, types.JSONRPCRequest):
                                await send(_unavailable(message.id, failure))
                            continue
                    finally:
                        opening.release()
                await to_server.send(SessionMessage(message))

    async def write_lines() -> None:
        async with from_server:
            async for item in from_server:
                data = item.message.model_dump_json(by_alias=True, exclude_unset=True)
                if not await send(data.encode()):
                    return

    low = compat.lowlevel_server(server)  # what MCPServer.run_stdio_async drives
    async with anyio.create_task_group() as tg:
        tg.start_soon(read_lines)
        tg.start_soon(write_lines)
        await low.run(from_socket, to_socket, low.create_initialization_options())
        tg.cancel_scope.cancel()


def _is_preamble(line: bytes) -> bool:
    """Whether ``line`` is the proxy's settings line; if so, they are set for this
    session (the calling task and every task it starts). Settings the owner cannot take
    (an empty or over-long namespace) are logged and the owner's apply."""
    try:
        params = preamble_params(json.loads(line))
    except (ValueError, RecursionError):
        return False
    if params is None:
        return False
    try:
        scope = scope_of(params, Scope("", ()))
    except InvalidInput as exc:
        log.warning("session settings refused (%s): the owner's apply", exc)
        return True
    project = params.get("project")
    set_session(scope if scope.write else None, project if isinstance(project, str) else "")
    return True


def _method(message: Any) -> str | None:
    if isinstance(message, types.JSONRPCRequest | types.JSONRPCNotification):
        return message.method
    return None


def _unavailable(request_id: Any, reason: str) -> bytes:
    """The answer to a request held while the owner's stores opened, when they could not."""
    error = {
        "jsonrpc": "2.0",
        "id": request_id,
        "error": {"code": -32001, "message": f"{gw.CANNOT_START}{reason}"},
    }
    return json.dumps(error, ensure_ascii=False).encode()


def _invalid(line: bytes, exc: ValueError) -> bytes:
    """A JSON-RPC error for a line the SDK cannot read (too deep, not a message)."""
    reason = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
    error = {
        "jsonrpc": "2.0",
        "id": peek_id(line),
        "error": {
            "code": -32600,
            "message": f"invalid JSON-RPC message ({reason}); send one message per line",
        },
    }
    return json.dumps(error, ensure_ascii=False).encode()
