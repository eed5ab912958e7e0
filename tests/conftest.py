"""Shared fixtures: real stores in a fresh data dir per test, the real MCP protocol."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
import signal
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.server.mcpserver import MCPServer

from mcp_gateway.common.sections import IndexSettings
from mcp_gateway.common.settings import KiokuSettings
from mcp_gateway.daemon import local_gateway as gw
from mcp_gateway.protocol.server import create_server
from mcp_gateway.services.app import AppContext
from tests.pg_server import (  # noqa: F401 (fixtures)
    database_location,
    pg_database,
    throwaway_cluster,
)


def pytest_collection_finish(session: pytest.Session) -> None:
    """What the imports and the collection made lives for the whole run: frozen
    (``gc.freeze``, as a kioku process freezes its start: ``common.startup_gc``), the
    collector's full passes no longer traverse it (GC 1.17 -> 0.68 s of a 30 s subset)."""
    gc.collect()
    gc.freeze()


def run_dir(tmp_path_factory: pytest.TempPathFactory, name: str) -> Path:
    """A directory of this test run's own: under pytest-xdist, the one directory every
    worker of the run shares (beside the workers' base temp dirs), so what one worker
    wrote (a graph built, a module compiled) serves the others, as one user's cache serves
    all of that user's kioku processes (the writes are atomic); alone, the session's."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        shared = tmp_path_factory.getbasetemp().parent / name
        shared.mkdir(mode=0o700, exist_ok=True)
        return shared
    return tmp_path_factory.mktemp(name)


@pytest.fixture(scope="session", autouse=True)
def _private_graph_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The e5 graphs the tests build go to a cache of the run's own (inherited by the
    processes tests start; shared by the run's workers: each build is a child process,
    ~1-3 s of CPU), never to the user's ``~/.cache/kioku``."""
    before = os.environ.get("XDG_CACHE_HOME")
    os.environ["XDG_CACHE_HOME"] = str(run_dir(tmp_path_factory, "xdg-cache"))
    yield
    if before is None:
        os.environ.pop("XDG_CACHE_HOME", None)
    else:
        os.environ["XDG_CACHE_HOME"] = before


@pytest.fixture(scope="session", autouse=True)
def _session_bytecode(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The Python processes the tests start (``kioku`` commands, servers, workers) share
    one bytecode cache of the run's own (``run_dir``): where the environment sets
    ``PYTHONDONTWRITEBYTECODE``, each of them would otherwise compile every module it
    imports again. Nothing is written beside the sources or the installed packages."""
    names = ("PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX")
    before = {name: os.environ.get(name) for name in names}
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    os.environ["PYTHONPYCACHEPREFIX"] = str(run_dir(tmp_path_factory, "pycache"))
    yield
    for name, value in before.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


@pytest.fixture(scope="session", autouse=True)
def _no_daemon_outlives_the_session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Every shared-gateway daemon a test started (through ``kioku serve`` on stdio) lives
    in a data dir under the session's base temp dir: kill any still running at the end.
    (They also idle out after 20 s: tests.http_server.kioku_env.)"""
    yield
    for lock in tmp_path_factory.getbasetemp().rglob("gateway.lock"):
        pid = gw.owner_pid(gw.GatewayPaths(lock=lock, log=lock, direct=lock, socket_record=lock))
        if pid is not None and pid != os.getpid():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


@pytest.fixture
def settings(tmp_path: Path, request: pytest.FixtureRequest) -> KiokuSettings:
    """A fresh data dir; with KIOKU_TEST_BACKEND=postgres, the truth store is a fresh
    schema on the test PostgreSQL instead of SQLite (to run any suite on that backend)."""
    url = None
    if os.environ.get("KIOKU_TEST_BACKEND") == "postgres":
        url = request.getfixturevalue("pg_database").new_schema()
    return KiokuSettings(
        data_dir=tmp_path / "data",
        redis_url=None,
        qdrant_url=None,
        database_url=url,
        index=IndexSettings(collection=f"t_{uuid.uuid4().hex[:12]}"),
    )


def without_prefetcher(settings: KiokuSettings) -> KiokuSettings:
    """``settings`` with the owner's prefetcher off: it embeds pending notes on the query
    lane beside the job (``settle()`` waits for its write), so a test that counts the
    job's work, or leaves a stale point or a draft on purpose, holds it still with this
    (its own tests: test_prefetch.py)."""
    search = settings.search.model_copy(update={"prefetch_budget_ms": 0.0})
    return settings.model_copy(update={"search": search})


class Harness:
    """An MCP client connected in-process to a real server, plus its app context."""

    def __init__(self, client: Client, apps: list[AppContext]) -> None:
        self.client = client
        self._apps = apps

    @property
    def app(self) -> AppContext:
        return self._apps[0]

    async def call(self, tool: str, **arguments: object):
        return await self.client.call_tool(tool, arguments)

    async def ok(self, tool: str, **arguments: object) -> dict:
        res = await self.call(tool, **arguments)
        assert not res.is_error, res.content[0].text
        return res.structured_content or {}

    async def error(self, tool: str, **arguments: object) -> str:
        res = await self.call(tool, **arguments)
        assert res.is_error, f"{tool}({arguments}) should have failed"
        text: str = res.content[0].text
        assert "Traceback" not in text
        return text

    async def settle(self) -> None:
        """Wait until background jobs (embedding, export) have caught up."""
        await self.app.settle()


@asynccontextmanager
async def connected(server: MCPServer[Any], **client_options: Any) -> AsyncIterator[Client]:
    """Hold the client in its own task: anyio cancel scopes must be exited by the task
    that entered them, and pytest-asyncio tears fixtures down from another task."""
    ready, stop = asyncio.Event(), asyncio.Event()
    holder: list[Client] = []

    async def hold() -> None:
        async with Client(server, **client_options) as client:
            holder.append(client)
            ready.set()
            await stop.wait()

    task = asyncio.create_task(hold())
    waiter = asyncio.create_task(ready.wait())
    await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
    if task.done():
        waiter.cancel()
        task.result()  # re-raise the start-up failure
    try:
        yield holder[0]
    finally:
        stop.set()
        await task


@pytest.fixture
async def harness(settings: KiokuSettings) -> AsyncIterator[Harness]:
    apps: list[AppContext] = []
    async with connected(create_server(settings, on_app=apps.append)) as client:
        yield Harness(client, apps)


async def answer_after_notes(
    settings: KiokuSettings, notes: list[str], query: str, top: int, **search: object
) -> list[str]:
    """The texts ``search_memory`` answers for ``query`` (``top``) on a server of its own
    over ``settings`` with the ``search`` settings changed, once ``notes`` are added and
    settled; each variant in a data dir of its own."""
    variant = settings.search.model_copy(update=search)
    name = "-".join(f"{key}={value}" for key, value in sorted(search.items()))
    own = settings.model_copy(update={"search": variant, "data_dir": settings.data_dir / name})
    apps: list[AppContext] = []
    async with connected(create_server(own, on_app=apps.append)) as client:
        h = Harness(client, apps)
        for text in notes:
            await h.ok("add_note", text=text)
        await h.settle()
        data = await h.ok("search_memory", query=query, top=top)
    return [r["text"] for r in data["results"]]
