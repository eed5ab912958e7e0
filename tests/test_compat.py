"""One test per private third-party attribute kioku relies on (mcp_gateway/common/compat.py).

Each runs against the installed library version, so an upgrade that renames or moves
an attribute fails here, by name, rather than inside a request.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
import uvicorn
from mcp.server.mcpserver import MCPServer
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from uvicorn.server import ServerState

from mcp_gateway.common import compat


async def test_uvicorn_protocol_exposes_its_request_cycle() -> None:
    """``cycle`` / ``response_complete``, ``loop`` and ``transport`` of uvicorn's protocol."""
    entered, release = asyncio.Event(), asyncio.Event()

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        entered.set()
        await release.wait()
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    config = uvicorn.Config(app, lifespan="off", log_level="warning")
    config.load()
    state = ServerState()
    made: list[Any] = []

    def factory() -> Any:
        proto = compat.uvicorn_http_protocol()(config=config, server_state=state, app_state={})
        made.append(proto)
        return proto

    loop = asyncio.get_running_loop()
    server = await loop.create_server(factory, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(b"GET / HTTP/1.1\r\nHost: x\r\n")  # headers not complete yet
        await writer.drain()
        for _ in range(200):
            if made:
                break
            await asyncio.sleep(0.01)
        proto = made[0]
        assert proto.loop is loop
        assert proto.transport is not None
        assert compat.awaiting_headers(proto)
        writer.write(b"\r\n")
        await writer.drain()
        await asyncio.wait_for(entered.wait(), 10)
        assert proto.cycle is not None
        assert not compat.awaiting_headers(proto)  # a request in progress
        release.set()
        status = await asyncio.wait_for(reader.readline(), 10)
        assert b"204" in status
        for _ in range(200):
            if compat.awaiting_headers(proto):
                break
            await asyncio.sleep(0.01)
        assert proto.cycle.response_complete
        assert compat.awaiting_headers(proto)  # keep-alive: waiting for the next request
    finally:
        writer.close()
        server.close()
        await server.wait_closed()


def test_mcp_server_has_a_lowlevel_server() -> None:
    low = compat.lowlevel_server(MCPServer("compat"))
    assert callable(low.run)
    assert low.create_initialization_options() is not None


def test_session_manager_admission_and_owners() -> None:
    manager = StreamableHTTPSessionManager(app=compat.lowlevel_server(MCPServer("compat")))
    assert callable(manager._admit_session)
    seen: list[Any] = []

    def wrap(admit: Any) -> Any:
        def mine(requestor: Any) -> Any:
            seen.append(requestor)
            return admit(requestor)

        return mine

    compat.wrap_session_admission(manager, wrap)
    requestor: Any = {"client_id": "a"}  # stands in for the SDK's authorization context
    assert manager._admit_session(requestor) is not None  # admitted: a session
    assert seen == [{"client_id": "a"}]
    assert list(compat.live_session_owners(manager)) == [{"client_id": "a"}]
    manager._server_instances.clear()  # the session closed; its owner entry may linger
    assert list(compat.live_session_owners(manager)) == []


async def test_arq_worker_tasks_and_a_job_cancelled_before_it_started() -> None:
    """``Worker.tasks`` (job id -> task): a task cancelled before it ran ends cancelled,
    and ``asyncio.gather`` over it, as ``Worker.close`` does, raises; dropped, it does
    not, and a job that ran is kept."""
    from arq.worker import Worker, func

    async def job(ctx: dict[str, Any]) -> None:
        return None

    worker = Worker(functions=[func(job, name="job")], handle_signals=False)
    assert isinstance(worker.tasks, dict)

    async def ran() -> None:
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            return  # as arq's run_job does: "will be run again"

    worker.tasks["ran"] = asyncio.create_task(ran())
    await asyncio.sleep(0)  # it starts
    worker.tasks["unstarted"] = asyncio.create_task(ran())
    for task in worker.tasks.values():
        task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.gather(*worker.tasks.values())
    assert await compat.drop_unstarted_jobs(worker) == 1
    assert list(worker.tasks) == ["ran"]
    await asyncio.gather(*worker.tasks.values())
