"""Real processes for the reliability tests: stdio clients of the shared local gateway,
``kioku serve --http`` subprocesses, SQLite checks. Every process started here is
killed in a ``finally``."""

from __future__ import annotations

import asyncio
import contextlib
import os
import queue
import signal
import socket
import sqlite3
import subprocess
import tempfile
import time
from collections.abc import AsyncIterator, Iterable, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcp import Client, StdioServerParameters

from mcp_gateway.common.settings import KiokuSettings
from mcp_gateway.daemon import local_gateway as gw
from tests.http_server import KIOKU, free_port, kioku_env

__all__ = ["KIOKU", "free_port", "kioku_env"]

# An MCP client's first message, for tests that speak raw JSON-RPC.
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "probe", "version": "0"},
    },
}


def gateway_paths(data_dir: Path) -> gw.GatewayPaths:
    return gw.GatewayPaths.for_settings(KiokuSettings(data_dir=data_dir))


def daemon_pid(data_dir: Path) -> int | None:
    return gw.owner_pid(gateway_paths(data_dir))


def kill_daemon(data_dir: Path, sig: int = signal.SIGKILL) -> int | None:
    pid = daemon_pid(data_dir)
    if pid is not None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)
        # released, or already taken by the daemon a proxy restarted at once (an attached
        # editor's proxy restarts it when its session drops): waiting for a free lock
        # then only ran out the 30 s
        wait_until(
            lambda: (
                not gw.lock_held(gateway_paths(data_dir).lock)
                or daemon_pid(data_dir) not in (None, pid)
            ),
            30,
        )
    return pid


def interruptible() -> None:
    """``preexec_fn`` for a child the test will SIGINT: a shell that started the test
    run in the background (``make test &``) makes its children ignore SIGINT, and Python
    keeps an ignored SIGINT ignored -- the child would never see the interrupt."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def wait_until(pred: Any, timeout: float, step: float = 0.05) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(step)
    return False


def stdio_params(data_dir: Path, **env: str) -> StdioServerParameters:
    return StdioServerParameters(command=KIOKU, args=["serve"], env=kioku_env(data_dir, **env))


@asynccontextmanager
async def held_clients(servers: list[Any]) -> AsyncIterator[list[Client]]:
    """Connect all clients concurrently, each held by its own task (anyio cancel scopes
    must be exited by the task that entered them)."""
    stop = asyncio.Event()
    ready = [asyncio.Event() for _ in servers]
    clients: list[Client | None] = [None] * len(servers)

    async def hold(i: int) -> None:
        async with Client(servers[i]) as client:
            clients[i] = client
            ready[i].set()
            await stop.wait()

    tasks = [asyncio.create_task(hold(i)) for i in range(len(servers))]
    try:
        for i, task in enumerate(tasks):
            waiter = asyncio.create_task(ready[i].wait())
            await asyncio.wait({task, waiter}, timeout=90, return_when=asyncio.FIRST_COMPLETED)
            waiter.cancel()
            if task.done():
                task.result()
            assert ready[i].is_set(), f"client {i} did not connect within 90 s"
        yield [c for c in clients if c is not None]
    finally:
        stop.set()
        for task in tasks:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(task, 30)


@asynccontextmanager
async def stdio_client(data_dir: Path, **env: str) -> AsyncIterator[Client]:
    """One real ``kioku serve`` stdio client (a proxy to the shared daemon)."""
    async with held_clients([stdio_params(data_dir, **env)]) as clients:
        yield clients[0]


@dataclass
class HttpProc:
    proc: subprocess.Popen[bytes]
    url: str
    port: int
    stderr_path: Path
    data_dir: Path

    def stderr(self) -> str:
        return self.stderr_path.read_text("utf-8", errors="replace")

    @property
    def token(self) -> str | None:
        """The token generated into the data dir when none is configured (else None)."""
        from mcp_gateway.protocol.http_token import read_token

        return read_token(self.data_dir)


@contextmanager
def http_proc(
    data_dir: Path, *args: str, port: int | None = None, **env: str
) -> Iterator[HttpProc]:
    """``kioku serve --http`` on a free loopback port; waits until it accepts."""
    port = port or free_port()
    # Outside the data dir's filesystem: the fault tests make that one read-only or full.
    err = Path(tempfile.gettempdir()) / f"kioku-serve-{port}-{time.monotonic_ns()}.stderr"
    with open(err, "wb") as errfile:
        proc = subprocess.Popen(
            [KIOKU, "serve", "--http", "--port", str(port), *args],
            env=kioku_env(data_dir, **env),
            stdout=subprocess.DEVNULL,
            stderr=errfile,
        )
    handle = HttpProc(proc, f"http://127.0.0.1:{port}/mcp", port, err, data_dir)
    try:
        deadline = time.monotonic() + 60
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"gateway exited {proc.returncode}: {handle.stderr()[-2000:]}")
            with contextlib.suppress(OSError):
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            if time.monotonic() > deadline:
                raise RuntimeError("gateway did not start within 60 s")
            time.sleep(0.1)
        yield handle
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=30)
        err.unlink(missing_ok=True)


def authed(url: str, token: str | None) -> Any:
    """A streamable-HTTP transport for ``Client`` that sends ``token``."""
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return streamable_http_client(url, http_client=httpx2.AsyncClient(headers=headers, timeout=60))


def db_rows(data_dir: Path, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(f"file:{data_dir / 'kioku.sqlite3'}?mode=ro", uri=True, timeout=30)
    try:
        return conn.execute(sql, params).fetchall()
    finally:
        conn.close()


def integrity(data_dir: Path) -> str:
    return str(db_rows(data_dir, "PRAGMA integrity_check")[0][0])


def letters(n: int) -> str:
    """A unique lowercase word for ``n`` (lexical search finds it as one token)."""
    out = ""
    n += 26 * 26
    while n:
        n, r = divmod(n, 26)
        out = chr(ord("a") + r) + out
    return out


def text_of(result: Any) -> str:
    return "\n".join(getattr(c, "text", "") for c in result.content)


def pump(lines: Iterable[bytes], into: queue.Queue[bytes]) -> None:
    """Put each line of a process's output on ``into`` (a reader thread's target)."""
    for line in lines:
        into.put(line)
