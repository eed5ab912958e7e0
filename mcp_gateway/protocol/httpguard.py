"""HTTP hardening shared by every uvicorn door: ``kioku serve --http``, the owner's
Unix socket and ``kioku ui``'s loopback port.

- **Header timeout.** uvicorn waits forever for a request's headers, so a client that
  sends them a byte at a time (slowloris) holds a connection indefinitely; 300 such
  connections were held in the attack of issue 10. A connection whose request headers
  are not complete ``header_timeout_s`` after it opened (or after the first byte of a
  keep-alive request) is closed.
- **Body timeout.** A request whose headers arrived but whose body is not complete
  ``body_timeout_s`` later is closed: 1,030 bodies that never came were all held after
  30 s, by a read-only token (issue 47).
- **Idle timeout.** uvicorn's keep-alive timeout (``timeout_keep_alive``), set per door.
- **A cap per door** (``Door``): at most ``max_connections`` open, and never more than the
  open-file limit leaves for it (``fd_budget``), so ``accept()`` is not starved of file
  descriptors. A new connection past the cap closes the door's oldest connection that
  is waiting on its client (headers, idle keep-alive, then an unfinished body); a request
  being answered is never cut. Floods of half-sent requests thus replace each other,
  and a client that sends its request at once is served.
- **Peer uid** (Unix socket only): connections from another user are dropped
  (``peercred``).
- **Bodies.** ``read_body`` reads a request body up to a limit and stops there.
- **Sessions per grant.** ``limit_sessions`` gives each grant its own cap on open MCP
  sessions beside the SDK's server-wide one.

Verified by ``tests/test_security_http.py`` and ``tests/test_doors.py``.
"""

from __future__ import annotations

import asyncio
import logging
import os
import resource
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from mcp_gateway.common import compat, peercred
from mcp_gateway.common.logbounds import Every

log = logging.getLogger(__name__)

# file descriptors kept for the stores, the index, the model and the log, before the
# doors share what the open-file limit leaves (a data dir's owner holds ~60 at rest)
RESERVED_FDS = 192
MIN_PER_DOOR = 16
# connections asyncio accepts in one turn of the loop (uvicorn's ``backlog``), before any
# is admitted or closed: its 2,048 by default took a whole 1,024 open-file limit at once
BACKLOG = 16
# ...while the kernel's queue of connections not yet accepted is longer: a flood waits
# there with the legitimate clients instead of failing them (a Unix socket's connect()
# fails at once when the queue is full; TCP retries its SYN a second later)
LISTEN_QUEUE = 2048
# a connection nothing was read from yet is not closed for its silence before this
GRACE_S = 0.5


def fd_budget(doors: int) -> int:
    """Connections each of ``doors`` listeners may hold within the open-file limit."""
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return 1 << 20
    doors = max(1, doors)
    return max(MIN_PER_DOOR, (soft - RESERVED_FDS - BACKLOG * doors) // doors)


def raise_open_file_limit() -> None:
    """Soft open-file limit up to the hard one (many systems start at 1,024 soft)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != soft:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        except (ValueError, OSError):  # a hard limit the kernel caps lower
            pass


@dataclass(frozen=True, slots=True)
class Limits:
    header_timeout_s: float
    body_timeout_s: float
    max_connections: int


@dataclass(slots=True)
class Door:
    """One listener's open connections, oldest first, and its cap."""

    name: str
    limits: Limits
    live: dict[Any, None] = field(default_factory=dict)
    closed_at_cap: int = 0
    _report: Every = field(default_factory=lambda: Every(10.0))

    @property
    def cap(self) -> int:
        return self.limits.max_connections

    def admit(self, conn: Any) -> bool:
        """Register ``conn``; past the cap, close the oldest connection waiting on its
        client, or refuse ``conn`` itself (False) when every other one is being
        answered."""
        self.live[conn] = None
        if len(self.live) <= self.cap:
            return True
        victim = self._oldest_waiting(conn)
        self.closed_at_cap += 1
        if self._report.due():
            log.warning(
                "%s: %d connections open (its cap): closed %d waiting ones so far",
                self.name,
                len(self.live) - 1,
                self.closed_at_cap,
            )
        if victim is None:
            self.live.pop(conn, None)
            return False
        self.live.pop(victim, None)
        victim.transport.abort()
        return True

    def leave(self, conn: Any) -> None:
        self.live.pop(conn, None)

    def _oldest_waiting(self, newcomer: Any) -> Any | None:
        """The oldest connection waiting on its client that had its chance: never served
        (no answer below 400) and part of its headers read, or an unfinished body, or
        silent for ``GRACE_S``; else a served client's idle keep-alive connection; else
        the oldest silent one. A connection the loop has not read yet is not judged by
        its silence at once: under a flood a client's whole request waits a few turns
        of the loop to be read."""
        now = time.monotonic()
        silent = idle_served = None
        for conn in self.live:
            if conn is newcomer or conn.transport is None or conn.transport.is_closing():
                continue
            if compat.awaiting_headers(conn):
                if conn.served:
                    idle_served = idle_served or conn
                elif conn.heard or now - conn.born > GRACE_S:
                    return conn
                else:
                    silent = silent or conn
            elif compat.awaiting_body(conn):
                return conn
        return idle_served or silent


def guarded_protocol(door: Door, *, peer_check: bool = False) -> type[Any]:
    """uvicorn's HTTP protocol within ``door``: header and body deadlines, the
    connection cap (and on a Unix socket, the peer-uid check)."""
    base = compat.uvicorn_http_protocol()
    header_s, body_s = door.limits.header_timeout_s, door.limits.body_timeout_s

    class Guarded(base):  # type: ignore[misc, valid-type]
        _timer: asyncio.TimerHandle | None = None
        _timing: str = ""  # "headers" or "body": what the armed timer waits for
        served = False  # answered below 400 once: a client, not a flood (Door)
        heard = False  # some bytes of this connection were read
        born = 0.0  # monotonic time it was accepted

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.app = self._watch(self.app)  # type: ignore[has-type]  # uvicorn runs ``self.app`` per request

        def _watch(self, app: Any) -> Any:
            async def watched(scope: Any, receive: Any, send: Any) -> None:
                async def sending(message: Any) -> None:
                    if message.get("type") == "http.response.start":
                        self.served = self.served or int(message.get("status", 500)) < 400
                    await send(message)

                await app(scope, receive, sending)

            return watched

        def connection_made(self, transport: Any) -> None:
            self.born = time.monotonic()
            super().connection_made(transport)
            if peer_check and not peercred.same_user(transport.get_extra_info("socket")):
                log.warning("dropped a connection from another user")
                transport.abort()
                return
            if not door.admit(self):
                transport.abort()
                return
            self._arm("headers", header_s)

        def data_received(self, data: bytes) -> None:
            self.heard = True
            super().data_received(data)
            self._follow()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            self._disarm()  # idle now: uvicorn's keep-alive timeout takes over

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            door.leave(self)
            super().connection_lost(exc)

        def _follow(self) -> None:
            """After the client sent something: which deadline applies now."""
            if compat.awaiting_headers(self):
                if self._timing != "headers":  # the first bytes of a keep-alive request
                    self._arm("headers", header_s)
            elif compat.awaiting_body(self):
                if self._timing != "body":
                    self._arm("body", body_s)
            else:
                self._disarm()

        def _arm(self, what: str, after_s: float) -> None:
            self._disarm()
            self._timing = what
            self._timer = self.loop.call_later(after_s, self._expire)

        def _disarm(self) -> None:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            self._timing = ""

        def _expire(self) -> None:
            what = self._timing
            self._timer, self._timing = None, ""
            waiting = compat.awaiting_headers(self) if what == "headers" else None
            if waiting is None:
                waiting = compat.awaiting_body(self)
            if waiting and not self.transport.is_closing():
                log.debug("closing a connection: request %s incomplete in time", what)
                self.transport.close()

    Guarded.__name__ = f"Guarded{base.__name__}"
    return Guarded


async def deepen_queues(server: Any) -> None:
    """Once uvicorn ``server`` listens, lengthen its sockets' kernel queue to
    ``LISTEN_QUEUE`` (asyncio's ``backlog`` sets the queue and the accept batch alike)."""
    while not server.started:
        if server.should_exit:
            return
        await asyncio.sleep(0.05)
    for listening in getattr(server, "servers", []):
        for wrapped in listening.sockets:
            with socket.socket(fileno=os.dup(wrapped.fileno())) as sock:
                sock.listen(LISTEN_QUEUE)


def quiet_accept_errors(loop: asyncio.AbstractEventLoop) -> None:
    """Report ``accept()`` failures (EMFILE: the open-file limit) as one counted line
    every 10 s instead of a traceback per try: asyncio logs one for each of up to
    ``backlog`` tries per loop turn, 157 MB of stderr in 13 s under a flood (issue 47).
    Every other error goes to the loop's default handler."""
    every = Every(10.0)
    counted = [0]

    def handler(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        exc = context.get("exception")
        if str(context.get("message", "")).startswith("socket.accept() out of system"):
            counted[0] += 1
            if every.due():
                soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
                log.warning(
                    "accept() failed %d times: %s (open-file limit %d); new connections "
                    "wait in the backlog",
                    counted[0],
                    getattr(exc, "strerror", exc),
                    soft,
                )
            return
        loop.default_exception_handler(context)

    loop.set_exception_handler(handler)


class TooLarge(Exception):
    """A request body over the limit (answer 413; the rest of it is never read)."""


async def read_body(request: Any, limit: int) -> bytes:
    """``request``'s body (a Starlette ``Request``), at most ``limit`` bytes held."""
    declared = request.headers.get("content-length")
    if declared is not None:
        try:
            if int(declared) > limit:
                raise TooLarge(f"request body over {limit} bytes")
        except ValueError:
            raise TooLarge("unreadable Content-Length") from None
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise TooLarge(f"request body over {limit} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


def limit_sessions(manager: Any, per_grant: int) -> None:
    """Give every grant (token) its own cap on open MCP sessions.

    Wraps the SDK session manager's admission step (``_admit_session``); the SDK's own
    global cap still applies. A refused grant gets the SDK's 503 "Too many open
    sessions", and only that grant is refused.
    """

    def per_grant_cap(admit: Callable[[Any], Any]) -> Callable[[Any], Any]:
        def admit_per_grant(requestor: Any) -> Any:
            if requestor is not None:
                mine = sum(1 for who in compat.live_session_owners(manager) if who == requestor)
                if mine >= per_grant:
                    log.warning(
                        "grant %r has %d open sessions (its cap): refusing another",
                        requestor.get("client_id"),
                        mine,
                    )
                    return None
            return admit(requestor)

        return admit_per_grant

    compat.wrap_session_admission(manager, per_grant_cap)
