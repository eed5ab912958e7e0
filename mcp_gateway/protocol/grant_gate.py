"""A bound per grant (bearer token) on the HTTP door, so one tenant cannot starve another
(issue 47).

Before it, a tenant with a valid, even read-only, token that churned complete request
headers whose bodies never came (each connection re-opened as the door closed it) made
the SDK open an MCP session and start its server task for every one of them, before
reading a byte of the body: the door's event loop was busy with that tenant alone and
another tenant's calls timed out 15 of 15 (``bench/doors_flood.py``).

``GrantGate`` counts, per grant, the requests whose body is still arriving: from the
moment uvicorn hands the request over (its headers complete) until the application has
received the last byte of its body, or the request ended. Past
``http.max_pending_bodies_per_grant`` a request of that grant is answered at once with
429, ``Retry-After`` and a one-line JSON error, without reading its body, and its
connection is closed; the other grants are not counted against it. A client that sends
its body with its headers holds a slot for the instant the body takes to be read, so
only a client whose bodies dawdle ever meets the cap.

The grant is found from the ``Authorization`` header alone, with the verifier's own
comparison (every token compared in constant time, all of them always): a token that
names no grant is passed on untouched and gets the same 401 as before, so the gate tells
nothing about which tokens exist. Requests without a body (GET, ``Content-Length: 0``)
are not counted: nothing of theirs can dawdle.

Verified by ``tests/test_doors.py::test_a_tenant_churning_slow_bodies_leaves_others_served``
and ``::test_slow_bodies_past_a_grants_cap_are_refused_at_once``.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

from mcp_gateway.common.logbounds import Every

log = logging.getLogger(__name__)

RETRY_AFTER_S = 1
SETTING = "KIOKU_HTTP__MAX_PENDING_BODIES_PER_GRANT"


def _header(scope: dict[str, Any], name: bytes) -> bytes | None:
    for key, value in scope.get("headers", ()):
        if key.lower() == name:
            return bytes(value)
    return None


def bearer(scope: dict[str, Any]) -> str:
    """The bearer token of a request's ``Authorization`` header, or ""."""
    raw = _header(scope, b"authorization")
    if raw is None:
        return ""
    scheme, _, token = raw.decode("latin-1").partition(" ")
    return token.strip() if scheme.lower() == "bearer" else ""


def has_body(scope: dict[str, Any]) -> bool:
    """Whether a request announces a body (a Content-Length above 0, or chunks)."""
    if _header(scope, b"transfer-encoding") is not None:
        return True
    declared = _header(scope, b"content-length")
    if declared is None:
        return False
    try:
        return int(declared) > 0
    except ValueError:
        return True  # unreadable: counted, and the server below refuses it anyway


def _refusal(cap: int) -> bytes:
    return json.dumps(
        {
            "error": "too_many_requests",
            "error_description": (
                f"this token already has {cap} requests whose bodies are still arriving "
                f"({SETTING}): send each request's body with its headers, or retry after "
                f"{RETRY_AFTER_S} s"
            ),
        }
    ).encode()


class GrantGate:
    """ASGI middleware: at most ``cap`` requests per grant with a body still arriving.
    ``grant_of(token)`` names a token's grant ("" for none)."""

    def __init__(self, app: Any, grant_of: Callable[[str], str], cap: int) -> None:
        self.app = app
        self.grant_of = grant_of
        self.cap = cap
        self.pending: dict[str, int] = {}
        self.refused = 0
        self._body = _refusal(cap)
        self._report = Every(10.0)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or not has_body(scope):
            await self.app(scope, receive, send)
            return
        token = bearer(scope)
        grant = self.grant_of(token) if token else ""
        if not grant:  # no grant: the auth below answers it exactly as before
            await self.app(scope, receive, send)
            return
        if self.pending.get(grant, 0) >= self.cap:
            await self._refuse(grant, send)
            return
        self.pending[grant] = self.pending.get(grant, 0) + 1
        held = True

        def release() -> None:
            nonlocal held
            if held:
                held = False
                left = self.pending[grant] - 1
                if left:
                    self.pending[grant] = left
                else:
                    del self.pending[grant]

        async def receiving() -> Any:
            message = await receive()
            if message.get("type") != "http.request" or not message.get("more_body", False):
                release()  # the whole body is in (or the client left)
            return message

        try:
            await self.app(scope, receiving, send)
        finally:
            release()

    async def _refuse(self, grant: str, send: Any) -> None:
        self.refused += 1
        if self._report.due():
            log.warning(
                "grant %r has %d requests with bodies still arriving (its cap): "
                "refused %d with 429 so far",
                grant,
                self.cap,
                self.refused,
            )
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(self._body)).encode()),
            (b"retry-after", str(RETRY_AFTER_S).encode()),
            # the body is never read: the connection cannot carry another request
            (b"connection", b"close"),
        ]
        await send({"type": "http.response.start", "status": 429, "headers": headers})
        await send({"type": "http.response.body", "body": self._body})
