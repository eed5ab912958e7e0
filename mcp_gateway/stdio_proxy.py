"""``kioku serve`` on stdio as a thin proxy to the shared local gateway.

Each newline-delimited JSON-RPC message read from stdin is POSTed to the daemon's
stateless streamable-HTTP endpoint on its Unix socket; the JSON reply (if any:
notifications get 202 and no body) is written to stdout as one line. stdout carries
only protocol; logs go to stderr.

Failure handling:
- cannot connect (no daemon, stale socket after a crash, daemon idled out): the
  request never reached a gateway, so the proxy (re)starts the daemon and sends it
  again -- safe, nothing can be applied twice;
- the connection broke after the request was sent: it may or may not have been
  applied, so it is NOT resent; the client gets a JSON-RPC error and later requests
  go to a fresh daemon.

One kept-alive connection is reused (bench/hop.py: a new connection per message cost
~0.5 ms). httpcore drops a pooled connection the daemon has closed (idle exit, crash)
before it sends on it, so a dead daemon still shows up as a connect failure.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from typing import Any

import anyio
import anyio.abc
import httpx

from . import local_gateway as gw
from . import peercred
from .jsonrpc_peek import peek_id
from .settings import KiokuSettings

log = logging.getLogger(__name__)

# JSON-RPC "server error" range; the message says what to do.
GATEWAY_UNAVAILABLE = -32001
_SEND_ATTEMPTS = 3
# The gateway's own body limit (the MCP SDK's 4 MiB): larger lines are refused here,
# answered with the request's id instead of an HTTP 413 the client cannot match.
MAX_MESSAGE_BYTES = 4 * 1024 * 1024


class GatewayUnavailable(Exception):
    pass


class Proxy:
    def __init__(self, settings: KiokuSettings) -> None:
        self.settings = settings
        self.paths = gw.GatewayPaths.for_settings(settings)
        self._start_lock = anyio.Lock()
        self._write_lock = anyio.Lock()
        self._protocol_version: str | None = None
        self._out = anyio.wrap_file(sys.stdout.buffer)
        self._uds = ""
        self._http: httpx.AsyncClient
        self._old_clients: list[httpx.AsyncClient] = []

    # -- the daemon -------------------------------------------------------------------

    async def ensure_daemon(self) -> None:
        """Return once a daemon accepts connections; start one if none owns the lock."""
        async with self._start_lock:
            cfg = self.settings.local_gateway
            deadline = time.monotonic() + cfg.start_timeout_s
            child = None
            while time.monotonic() < deadline:
                if await anyio.to_thread.run_sync(gw.can_connect, self.paths.socket):
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

    def _client(self) -> httpx.AsyncClient:
        # Only a failed connect is retried ("never delivered"); see the module docstring
        # for why keep-alive keeps that true.
        self._uds = str(self.paths.socket)
        return httpx.AsyncClient(
            # every connection must reach a gateway run by this user (SO_PEERCRED)
            # (kept alive: checked once per connection; the pool's limits live there)
            transport=peercred.checked_transport(self._uds, keepalive=8),
            base_url=f"http://{gw.GATEWAY_HOST}",
            timeout=httpx.Timeout(self.settings.local_gateway.request_timeout_s, connect=5.0),
        )

    # -- one message ------------------------------------------------------------------

    async def forward(self, client: httpx.AsyncClient, raw: bytes) -> None:
        # Hostile lines (nested thousands deep, over the size limit) are answered here
        # with the request's id, and the session goes on.
        if len(raw) > MAX_MESSAGE_BYTES:
            await self._write(
                _error(
                    peek_id(raw),
                    f"message of {len(raw)} bytes is over the {MAX_MESSAGE_BYTES}-byte limit",
                    code=-32600,
                )
            )
            return
        try:
            message: Any = json.loads(raw)
        except (ValueError, RecursionError) as exc:
            why = "nested too deeply" if isinstance(exc, RecursionError) else "not valid JSON"
            await self._write(
                _error(
                    peek_id(raw),
                    f"parse error ({why}): each line must be one JSON-RPC message",
                    code=-32700,
                )
            )
            return
        req_id = message.get("id") if isinstance(message, dict) else None
        is_request = isinstance(message, dict) and "method" in message and "id" in message
        try:
            response = await self._post(client, raw)
        except (GatewayUnavailable, httpx.HTTPError) as exc:
            log.warning("request %r failed: %s", req_id, exc)
            if is_request:
                await self._write(_error(req_id, _describe(exc)))
            return
        if response.status_code == 202 or not response.content:
            return
        for reply in _replies(response):
            if isinstance(message, dict) and message.get("method") == "initialize":
                self._remember_version(reply)
            if is_request and isinstance(reply, dict) and reply.get("id") is None:
                reply["id"] = req_id  # the gateway could not read it: the client waits on it
            await self._write(reply)

    async def _post(self, client: httpx.AsyncClient, raw: bytes) -> httpx.Response:
        headers = {
            "content-type": "application/json",
            "accept": "application/json, text/event-stream",
        }
        if self._protocol_version:
            headers["mcp-protocol-version"] = self._protocol_version
        for attempt in range(_SEND_ATTEMPTS):
            try:
                return await client.post("/mcp", content=raw, headers=headers)
            except httpx.ConnectError:
                if attempt == _SEND_ATTEMPTS - 1:
                    raise
                await self.ensure_daemon()
                client = self._current(client)
        raise AssertionError("unreachable")

    def _current(self, client: httpx.AsyncClient) -> httpx.AsyncClient:
        """A client for where the daemon listens now: a deep data dir's private socket
        dir can be re-created by a new daemon (e.g. after a temp-dir cleaner)."""
        if str(self.paths.socket) == self._uds:
            return client
        self._old_clients.append(client)
        self._http = self._client()
        return self._http

    def _remember_version(self, reply: Any) -> None:
        version = (
            (reply.get("result") or {}).get("protocolVersion") if isinstance(reply, dict) else None
        )
        if isinstance(version, str):
            self._protocol_version = version

    async def _write(self, message: Any) -> None:
        line = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"
        async with self._write_lock:
            await self._out.write(line)
            await self._out.flush()

    # -- the loop ---------------------------------------------------------------------

    async def run(self) -> None:
        stdin = anyio.wrap_file(sys.stdin.buffer)
        try:
            await self.ensure_daemon()
        except GatewayUnavailable as exc:
            # Keep serving: each request gets this error, and a later one may succeed.
            log.error("%s", exc)
        self._http = self._client()  # after the daemon made its socket (deep data dir)
        async with anyio.create_task_group() as tg:
            while line := await stdin.readline():
                if line.strip():
                    # Concurrent, like a real MCP server: a slow search never blocks an add.
                    tg.start_soon(self.forward, self._http, line)
        for client in (self._http, *self._old_clients):
            await client.aclose()


def _replies(response: httpx.Response) -> list[Any]:
    """The JSON body, or the ``data:`` events of an SSE body (not expected in JSON mode)."""
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        return [
            json.loads(line[5:])
            for line in response.text.splitlines()
            if line.startswith("data:") and line[5:].strip()
        ]
    try:
        return [response.json()]
    except ValueError:
        return [
            _error(None, f"gateway answered HTTP {response.status_code}: {response.text[:200]!r}")
        ]


def _error(req_id: Any, message: str, code: int = GATEWAY_UNAVAILABLE) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": req_id, "error": {"code": code, "message": message}}


def _describe(exc: Exception) -> str:
    if isinstance(exc, GatewayUnavailable):
        return str(exc)
    return (
        f"the kioku gateway connection broke during this request ({type(exc).__name__}); it "
        "may or may not have been applied: check (e.g. search_memory) before retrying. "
        "The next request starts a fresh gateway if needed."
    )


def run_proxy(settings: KiokuSettings) -> None:
    logging.getLogger("httpx").setLevel(logging.WARNING)  # one INFO line per message is noise
    anyio.run(Proxy(settings).run)
