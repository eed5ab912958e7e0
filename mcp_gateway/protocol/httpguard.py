"""HTTP hardening shared by ``kioku serve --http`` and the local gateway daemon.

- **Header timeout.** uvicorn waits forever for a request's headers, so a client that
  sends them a byte at a time (slowloris) holds a connection indefinitely; 300 such
  connections were held in the attack of issue 10. ``guarded_protocol`` closes a
  connection whose request headers are not complete ``header_timeout_s`` after the
  connection opened (or after its first byte of a keep-alive request).
- **Peer uid** (Unix socket only): connections from another user are dropped
  (``peercred``).
- **Bodies.** ``read_body`` reads a request body up to a limit and stops there: a
  Content-Length over it is refused before a byte is read, a chunked body once it
  passes it (the memory browser's forms and ``kioku ui``'s forwarder; MCP has the SDK's
  own 4 MiB limit; the admin API refuses any request without the owner key unread).
- **Sessions per grant.** The MCP SDK caps open sessions (10,000) for the whole server,
  so one token could use them all and lock every other grant out; ``limit_sessions``
  gives each grant its own cap and leaves the global one in place.

Verified by ``tests/test_security_http.py``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from mcp_gateway.common import compat, peercred

log = logging.getLogger(__name__)


def guarded_protocol(header_timeout_s: float, *, peer_check: bool = False) -> type[Any]:
    """uvicorn's HTTP protocol with a request-header deadline (and a peer-uid check)."""
    base = compat.uvicorn_http_protocol()

    class Guarded(base):  # type: ignore[misc, valid-type]
        _header_timer: asyncio.TimerHandle | None = None

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            if peer_check and not peercred.same_user(transport.get_extra_info("socket")):
                log.warning("dropped a connection from another user")
                transport.abort()
                return
            self._arm()

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            if not self._awaiting_headers():
                self._disarm()
            elif self._header_timer is None:
                self._arm()  # the first bytes of a keep-alive connection's next request

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

        def _awaiting_headers(self) -> bool:
            return compat.awaiting_headers(self)

        def _arm(self) -> None:
            self._header_timer = self.loop.call_later(header_timeout_s, self._expire)

        def _disarm(self) -> None:
            if self._header_timer is not None:
                self._header_timer.cancel()
                self._header_timer = None

        def _expire(self) -> None:
            self._header_timer = None
            if self._awaiting_headers() and not self.transport.is_closing():
                log.info(
                    "closing a connection: request headers incomplete after %gs", header_timeout_s
                )
                self.transport.close()

    Guarded.__name__ = f"Guarded{base.__name__}"
    return Guarded


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
