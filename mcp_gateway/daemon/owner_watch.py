"""What keeps the owner running and what ends it: request counting for ``status`` and
the idle shutdown, and the watchers that stop it (admin stop, idle, stdio gone, a
signal, the data dir removed)."""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import uvicorn

from mcp_gateway.common.settings import KiokuSettings
from mcp_gateway.daemon import local_gateway as gw
from mcp_gateway.daemon.owner_state import OwnerState

log = logging.getLogger(__name__)

# the exit code when the data dir went away under a running owner
EXIT_DATA_DIR_GONE = 4


class Activity:
    """ASGI middleware counting requests for ``status`` and the idle shutdown."""

    def __init__(self, app: Any, state: OwnerState) -> None:
        self.app, self.state = app, state

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        self.state.in_flight += 1
        self.state.requests += 1
        try:
            await self.app(scope, receive, send)
        finally:
            self.state.in_flight -= 1
            self.state.last_request = time.monotonic()


async def until_done(work: Awaitable[None], state: OwnerState) -> None:
    try:
        await work
    finally:
        state.stop.set()  # stdio closed: the editor went away


async def watch_idle(state: OwnerState, idle_s: float) -> None:
    while not state.stop.is_set():
        await anyio.sleep(min(max(idle_s / 4, 0.2), 5.0))
        quiet = state.in_flight == 0 and state.sessions == 0
        if quiet and time.monotonic() - state.last_request > idle_s:
            log.info("no requests for %.0f s: shutting down", idle_s)
            state.stop.set()


# how often the owner checks that its data dir is still there (a stat and an fstat)
GONE_CHECK_S = 1.0


async def watch_gone(state: OwnerState, gone: Callable[[], str | None]) -> None:
    """End the process when the data dir, its lock or the owner's socket was removed:
    nobody can reach this owner any more, and a later ``kioku serve`` starts another
    one, so the work it would go on doing (a backlog's embedding at full CPU) is for
    nobody. It ends at once, not through the graceful close: the stores' files are gone,
    so closing them could only fail (the index's flush), and there is nothing to save."""
    while not state.stop.is_set():
        await anyio.sleep(GONE_CHECK_S)
        reason = gone()
        if reason is not None:
            log.error("%s: exiting (nothing left to save)", reason)
            from mcp_gateway.embedders.lanes import exit_now

            exit_now(EXIT_DATA_DIR_GONE)


def gone_check(
    settings: KiokuSettings, lock_fd: int, sockets: dict[Path, int]
) -> Callable[[], str | None]:
    """What ``watch_gone`` asks: why the owner is unreachable now, or None. The owner's
    sockets, where still there and its own, are removed before the answer."""

    def gone() -> str | None:
        reason = why()
        if reason is not None:
            for path, inode in sockets.items():
                gw.unlink_if_ours(path, inode)
        return reason

    def why() -> str | None:
        if not settings.data_dir.is_dir():
            return f"the data dir {settings.data_dir} was removed"
        if os.fstat(lock_fd).st_nlink == 0:
            return f"the lock file in the data dir {settings.data_dir} was removed"
        for path, inode in sockets.items():
            try:
                if os.stat(path).st_ino != inode:
                    return f"the owner socket {path} was replaced"
            except FileNotFoundError:
                return f"the owner socket {path} was removed"
        return None

    return gone


async def watch_stop(state: OwnerState, servers: list[uvicorn.Server]) -> None:
    """Stop every listener when asked (admin stop, idle, stdio gone) or when any one
    of them stops (a signal handled by uvicorn)."""
    while not state.stop.is_set() and not any(s.should_exit for s in servers):
        with anyio.move_on_after(0.2):
            await state.stop.wait()
    state.stop.set()
    for server in servers:
        server.should_exit = True
