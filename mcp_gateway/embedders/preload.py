"""The models load while the rest of the process starts.

A daemon an editor's ``kioku serve`` spawns spends its first seconds importing the
server (the MCP SDK, uvicorn, starlette, the stores) and opening the stores; the
editor's ``initialize`` is answered meanwhile, and its first search waited for the
model, which loaded only after all of that. ``begin`` builds the configured embedder
and channels at once and starts them on a thread of their own (with its own event
loop: their start only loads files and warms the engines, and their calls later run on
their own lanes, bound to no loop), so the loading overlaps the imports; ``take`` hands
them to ``open_app``, waiting for what is still loading. A process that never called
``begin`` (CLI commands, tests) loads them in ``open_app`` as before.

A start that fails here is left to ``open_app``, which starts the same embedder again
and reports the failure its usual way (``services.app.start_embedder``).
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from concurrent.futures import Future
from dataclasses import dataclass

import anyio.to_thread

from mcp_gateway.common.errors import EmbedderUnavailable
from mcp_gateway.common.sections import EmbedderSettings
from mcp_gateway.embedders import build_embedder
from mcp_gateway.embedders.base import Embedder
from mcp_gateway.embedders.channels import ChannelEmbedder, build_channel_embedders

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Preloaded:
    settings: EmbedderSettings
    embedder: Embedder
    channels: tuple[ChannelEmbedder, ...]


_lock = threading.Lock()
_pending: Future[Preloaded] | None = None


def begin(settings: EmbedderSettings) -> None:
    """Start loading the configured embedder and channels now, on a thread of their own
    (once per process; a second call does nothing)."""
    global _pending
    with _lock:
        if _pending is not None:
            return
        future: Future[Preloaded] = Future()
        _pending = future

    def run() -> None:
        try:
            future.set_result(asyncio.run(_load(settings)))
        except BaseException as exc:  # handed to ``take``, which falls back
            future.set_exception(exc)

    threading.Thread(target=run, name="kioku-preload", daemon=True).start()
    log.info("loading the models in the background")


async def _load(settings: EmbedderSettings) -> Preloaded:
    began = time.perf_counter()
    embedder = build_embedder(settings)
    channels = build_channel_embedders(settings)
    for one in (embedder, *(c.embedder for c in channels)):
        try:
            await one.start()
        except EmbedderUnavailable as exc:  # open_app starts it again and says why
            log.debug("preload: %s", exc)
    log.info("models loaded in the background in %.2f s", time.perf_counter() - began)
    return Preloaded(settings, embedder, channels)


async def take(settings: EmbedderSettings) -> Preloaded | None:
    """What ``begin`` loaded for these very settings (waiting for the rest of its
    loading), or None: nothing begun, begun for other settings, or its loading failed.
    Hands it over once."""
    global _pending
    with _lock:
        future, _pending = _pending, None
    if future is None:
        return None
    try:
        got = await anyio.to_thread.run_sync(future.result)
    except Exception as exc:
        log.warning("loading the models in the background failed (%s); loading them now", exc)
        return None
    if got.settings != settings:
        for one in (got.embedder, *(c.embedder for c in got.channels)):
            await one.aclose()
        return None
    return got
