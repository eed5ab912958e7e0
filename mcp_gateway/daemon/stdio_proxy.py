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
  them), so the editor's session goes on. A client on the 2026-07-28 protocol has no
  handshake to replay (every request carries its version) and gets none: its
  ``server/discover`` forgets any ``initialize`` before it (the SDK's ``auto`` mode sends
  one when its probe times out on a slow start, then probes again).

Settings: each connection opens with this session's namespace, read namespaces and
project, and owner settings set otherwise are named on stderr (``session_settings``). A
session's first ``initialize`` is answered from the owner's last answer while the daemon
starts (``init_cache``).

Why a session socket and not HTTP: an HTTP request and a stateless MCP session per call
cost a trivial call about twice what plain stdio does (bench/LOG.md, round 3). Why two plain
threads (stdin -> socket in the main thread, socket -> stdout in one reader thread per
connection) and blocking calls, not an event loop: each line crosses the proxy with one
wake-up and one system call each way, where async streams add a task switch, a reader
(de)registration and locks per line (bench/LOG.md, round 9).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import socket
import threading
import time
from typing import Any

from mcp_gateway.common import peercred
from mcp_gateway.common.settings import KiokuSettings
from mcp_gateway.daemon import init_cache
from mcp_gateway.daemon import local_gateway as gw
from mcp_gateway.daemon.editor_pipes import CHUNK, EditorPipes, complete_lines
from mcp_gateway.daemon.jsonrpc_peek import message_id, peek_id, response_id
from mcp_gateway.daemon.local_gateway import GatewayUnavailable
from mcp_gateway.daemon.session_settings import preamble, tell_ignored

log = logging.getLogger(__name__)

__all__ = ["GATEWAY_UNAVAILABLE", "GatewayUnavailable", "Proxy", "run_proxy"]

# JSON-RPC "server error" range; the message says what to do.
GATEWAY_UNAVAILABLE = -32001
_CONNECT_ATTEMPTS = 3
# The gateway's limit (the MCP SDK's 4 MiB body limit): larger lines are refused here,
# answered with the request's id.
MAX_MESSAGE_BYTES = 4 * 1024 * 1024
# A reply line can be larger (an export of a long record history); this bounds memory.
MAX_REPLY_BYTES = 64 * 1024 * 1024
# after stdin's end, how often the proxy checks that someone still reads its stdout
_STDOUT_CHECK_S = 0.2


class _Attached:
    """One connection to the owner's session socket and the thread reading its replies."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.lost = False
        self.reader: threading.Thread | None = None


class Proxy:
    def __init__(self, settings: KiokuSettings, stdin_fd: int = 0, stdout_fd: int = 1) -> None:
        self.settings = settings
        self.paths = gw.GatewayPaths.for_settings(settings)
        self.pipes = EditorPipes(stdin_fd, stdout_fd)
        self._send_lock = threading.Lock()  # attach and send: one client line at a time
        # guards what both threads touch: the connection's state, the requests in flight,
        # the replies to swallow, the replies being written
        self._state = threading.Condition()
        self._attached: _Attached | None = None
        # replayed to a fresh daemon: this client's initialize and initialized lines
        self._handshake: list[bytes] = []
        self._in_flight: dict[str, Any] = {}  # json of the id -> the id
        self._swallow: set[str] = set()  # replies to replayed requests
        self._writing = 0
        self._preamble = preamble(settings)
        self._told = False
        # the client's initialize: its id's key and protocol version (init_cache)
        self._init: tuple[str, str] | None = None
        self._starting: threading.Thread | None = None
        # the start run() began was stopped (kioku stop): the requests that waited on it
        # get that, and the next one starts a fresh daemon
        self._stopped: gw.GatewayStopped | None = None

    def ensure_daemon(self) -> None:
        gw.ensure_daemon(self.settings, self.paths)

    def _start_daemon(self) -> None:
        try:
            self.ensure_daemon()
        except GatewayUnavailable as exc:
            # Keep serving: each request gets this error, and a later one may succeed.
            log.error("%s", exc)
            if isinstance(exc, gw.GatewayStopped):
                self._stopped = exc

    # -- the connection ---------------------------------------------------------------

    def _connect(self) -> socket.socket:
        # the private socket dir of a deep data dir can be re-created by a new daemon,
        # so the path is read again for every connection
        path = os.fspath(self.paths.session_socket)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.connect(path)
            if not peercred.same_user(sock):
                raise ConnectionRefusedError(f"refusing {path}: not served by this user")
        except BaseException:
            sock.close()
            raise
        return sock

    def _attach(self) -> _Attached:
        """The live connection, or a new one (daemon started if needed, handshake
        replayed). Caller holds ``_send_lock``."""
        current = self._attached
        if current is not None and not current.lost:
            return current
        starting, self._starting = self._starting, None
        if starting is not None:
            starting.join()  # the daemon run() began starting; one start at a time
            stopped, self._stopped = self._stopped, None
            if stopped is not None:
                raise stopped
        for attempt in range(_CONNECT_ATTEMPTS):
            try:
                sock = self._connect()
                break
            except OSError:
                if attempt == _CONNECT_ATTEMPTS - 1:
                    raise
                self.ensure_daemon()
        attached = _Attached(sock)
        with self._state:
            self._attached = attached
            for line in self._handshake:
                key = _key(message_id(line))
                if key is not None:
                    self._swallow.add(key)
        attached.reader = threading.Thread(
            target=self._pump_replies, args=(attached,), name="kioku-proxy-replies", daemon=True
        )
        attached.reader.start()
        try:
            sock.sendall(self._preamble)
            for line in self._handshake:
                sock.sendall(line)
        except OSError as exc:
            self._lose(attached)
            raise GatewayUnavailable(_describe(exc)) from exc
        if not self._told:
            self._told = True
            tell_ignored(self.settings, self.paths)
        return attached

    def _lose(self, attached: _Attached) -> None:
        """The connection is gone: every request still waiting gets an error."""
        with self._state:
            if attached.lost:
                return
            attached.lost = True
            waiting, self._in_flight = self._in_flight, {}
            self._swallow.clear()
            self._state.notify_all()
        # wakes the reader thread, which closes the socket: only it ever reads from it
        with contextlib.suppress(OSError):
            attached.sock.shutdown(socket.SHUT_RDWR)
        for req_id in waiting.values():
            self._reply_error(req_id, _describe(ConnectionResetError()))

    # -- client -> gateway --------------------------------------------------------------

    def forward(self, raw: bytes) -> None:
        # Hostile lines (nested thousands deep, over the size limit) are answered here
        # with the request's id, and the session goes on.
        if len(raw) > MAX_MESSAGE_BYTES:
            self._reply_error(
                peek_id(raw),
                f"message of {len(raw)} bytes is over the {MAX_MESSAGE_BYTES}-byte limit",
                code=-32600,
            )
            return
        try:
            message: Any = json.loads(raw)
        except (ValueError, RecursionError) as exc:
            why = "nested too deeply" if isinstance(exc, RecursionError) else "not valid JSON"
            self._reply_error(
                peek_id(raw),
                f"parse error ({why}): each line must be one JSON-RPC message",
                code=-32700,
            )
            return
        method = message.get("method") if isinstance(message, dict) else None
        is_request = method is not None and "id" in message
        line = raw if raw.endswith(b"\n") else raw + b"\n"
        if method == "notifications/cancelled":
            self._cancelled(message.get("params"))
        if method == "initialize" and self._answered_from_cache(message, line):
            return
        with self._send_lock:
            if method in ("initialize", "server/discover"):
                # a new session, or the modern era settled (nothing to replay: replaying
                # an initialize would open the next daemon's connection in the handshake
                # era, and it would refuse this client's enveloped requests)
                self._handshake = []
            try:
                self._send(line, message.get("id") if is_request else None, is_request)
            except (GatewayUnavailable, OSError) as exc:
                log.warning("message %r not delivered: %s", method, exc)
                if is_request:
                    self._reply_error(message.get("id"), _describe(exc))
                return
            if method in ("initialize", "notifications/initialized"):
                self._handshake.append(line)

    def _answered_from_cache(self, message: dict[str, Any], line: bytes) -> bool:
        """Answer the session's first ``initialize`` from the owner's last answer
        (``init_cache``) while the daemon may still be starting; the line then goes
        to the daemon as a handshake replay, its reply swallowed. False: forward it."""
        version = init_cache.requested_version(message)
        key = _key(message.get("id"))
        if version is None or key is None:
            return False
        self._init = (key, version)
        if self._attached is not None:
            return False
        result = init_cache.cached(self.settings.data_dir, version)
        if result is None:
            return False
        reply = {"jsonrpc": "2.0", "id": message.get("id"), "result": result}
        self.pipes.write(_line(reply))
        with self._send_lock:
            self._handshake = [line]
            try:
                self._attach()  # replays it
            except (GatewayUnavailable, OSError) as exc:
                log.warning("initialize not delivered: %s", exc)
        return True

    def _send(self, line: bytes, req_id: Any, is_request: bool) -> None:
        key = _key(req_id) if is_request else None
        for _ in range(_CONNECT_ATTEMPTS):
            attached = self._attach()
            with self._state:
                if attached.lost:  # broke before this line went out: a new connection
                    continue
                if key is not None:
                    self._in_flight[key] = req_id
            break
        else:
            raise GatewayUnavailable(_describe(ConnectionResetError()))
        try:
            attached.sock.sendall(line)
        except OSError:
            # sent or not, unknown: _lose answers every request in flight, this one too
            self._lose(attached)

    def _cancelled(self, params: Any) -> None:
        """The client cancelled a request: the gateway need not answer it (MCP: a
        cancelled request SHOULD get no response), so it is no longer waited for at
        stdin's end. A reply that comes anyway is still written."""
        key = _key(params.get("requestId")) if isinstance(params, dict) else None
        if key is not None:
            with self._state:
                self._in_flight.pop(key, None)
                self._state.notify_all()

    # -- gateway -> client --------------------------------------------------------------

    def _pump_replies(self, attached: _Attached) -> None:
        buffer = bytearray()
        try:
            while chunk := attached.sock.recv(CHUNK):
                for line in complete_lines(buffer, chunk):
                    self._deliver(line)
                if len(buffer) > MAX_REPLY_BYTES:
                    log.warning(
                        "a gateway reply over %d bytes: dropping the connection", MAX_REPLY_BYTES
                    )
                    break
        except OSError:
            pass
        finally:
            self._lose(attached)
            attached.sock.close()

    def _deliver(self, line: bytes) -> None:
        key = _key(response_id(line))
        init = self._init
        if init is not None and key == init[0]:
            self._remember_init(line, init[1])
        with self._state:
            if key is not None:
                if key in self._swallow:
                    self._swallow.discard(key)
                    return
                self._in_flight.pop(key, None)
            self._writing += 1
        try:
            self.pipes.write(line)
        finally:
            with self._state:
                self._writing -= 1
                self._state.notify_all()

    def _remember_init(self, line: bytes, version: str) -> None:
        try:
            message = json.loads(line)
        except ValueError:
            return
        if isinstance(message, dict) and isinstance(message.get("result"), dict):
            init_cache.remember(self.settings.data_dir, version, message["result"])

    def _reply_error(self, req_id: Any, message: str, code: int = GATEWAY_UNAVAILABLE) -> None:
        reply = {"jsonrpc": "2.0", "id": req_id, "error": {"code": code, "message": message}}
        self.pipes.write(_line(reply))

    # -- the loop ---------------------------------------------------------------------

    def run(self) -> None:
        # started at once, awaited by the first connection: meanwhile stdin is read, and
        # an initialize the owner answered before is answered from its last answer
        self._starting = threading.Thread(
            target=self._start_daemon, name="kioku-proxy-start", daemon=True
        )
        self._starting.start()
        buffer = bytearray()
        while chunk := self.pipes.read():
            for line in complete_lines(buffer, chunk):
                if line.strip():
                    self.forward(line)
        if buffer.strip():
            self.forward(bytes(buffer))  # a last line without its newline
        self._drain()

    def _drain(self) -> None:
        """stdin closed: let the replies still owed reach stdout, then detach. Stop
        waiting as soon as none can be delivered any more: none is owed (answered or
        cancelled), the gateway connection is gone, or nobody reads our stdout (the
        editor exited: it was waiting for those replies, now nobody is)."""
        attached = self._attached
        if attached is None:
            return
        deadline = time.monotonic() + self.settings.local_gateway.request_timeout_s
        with self._state:
            while not (attached.lost or (not self._in_flight and not self._writing)):
                left = deadline - time.monotonic()
                if left <= 0 or self.pipes.stdout_gone():
                    break
                self._state.wait(min(left, _STDOUT_CHECK_S))
        self._lose(attached)
        if attached.reader is not None:
            attached.reader.join(timeout=5)


def _line(message: dict[str, Any]) -> bytes:
    return json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"


def _key(req_id: Any) -> str | None:
    return None if req_id is None else json.dumps(req_id)


def _describe(exc: BaseException) -> str:
    if isinstance(exc, GatewayUnavailable):
        return str(exc)
    return (
        f"the kioku gateway connection broke during this request ({type(exc).__name__}); it "
        "may or may not have been applied: check (e.g. search_memory) before retrying. "
        "The next request starts a fresh gateway if needed."
    )


def proxies(settings: KiokuSettings) -> bool:
    """Whether ``kioku serve`` on stdio is a proxy to the shared daemon (else it owns
    the data dir itself, ``owner.serve``)."""
    return settings.local_gateway.shared and gw.supported()


def run_proxy(settings: KiokuSettings) -> None:
    Proxy(settings).run()
