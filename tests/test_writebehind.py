"""add_note acknowledges once the note is committed; its index follow-up runs after.

The rules tested: a reader waits for the index writes started before it (only those,
only its namespaces, never the job queued after), a failed follow-up is logged and
repaired by reconcile, shutdown waits for every follow-up, a one-shot CLI add (whose
jobs run inline and wait for the writes themselves) completes.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

import pytest

from mcp_gateway.common.errors import StoreUnavailable
from mcp_gateway.common.settings import KiokuSettings
from mcp_gateway.indexing.writebehind import WriteBehind
from mcp_gateway.protocol.server import create_server
from mcp_gateway.services.app import AppContext
from tests.conftest import Harness, connected, without_prefetcher


class Gate:
    """Steps that finish once ``go`` is set, each recording its name when it does."""

    def __init__(self) -> None:
        self.go, self.done = asyncio.Event(), list[str]()

    def step(self, name: str) -> Callable[[], Awaitable[None]]:
        async def run() -> None:
            await self.go.wait()
            self.done.append(name)

        return run


async def nothing() -> None:
    return None


async def test_a_reader_waits_for_the_writes_started_before_it() -> None:
    writes, first = WriteBehind(), Gate()
    finished = first.done
    writes.start(first.step("first"), nothing, "first", "default")
    reader = asyncio.create_task(writes.caught_up())
    await asyncio.sleep(0.05)
    assert not reader.done() and writes.pending == 1

    later_go = asyncio.Event()

    async def later() -> None:
        await later_go.wait()
        finished.append("later")

    writes.start(later, nothing, "later", "default")  # after the reader began: not waited for
    first.go.set()
    await asyncio.wait_for(reader, 2)
    assert finished == ["first"] and writes.pending == 1
    later_go.set()
    await asyncio.wait_for(writes.close(), 2)
    assert finished == ["first", "later"] and writes.pending == 0


async def test_a_reader_does_not_wait_for_the_job_queued_after_the_write() -> None:
    writes, queue_go = WriteBehind(), asyncio.Event()
    queued: list[bool] = []

    async def queue() -> None:
        await writes.caught_up()  # what the inline scheduler's applier does: no deadlock
        await queue_go.wait()
        queued.append(True)

    writes.start(nothing, queue, "add", "default")
    await asyncio.sleep(0.01)
    await asyncio.wait_for(writes.caught_up(), 1)
    assert not queued
    closing = asyncio.create_task(writes.close())
    await asyncio.sleep(0.02)
    assert not closing.done()  # close waits for the whole follow-up
    queue_go.set()
    await asyncio.wait_for(closing, 2)
    assert queued == [True]


async def test_a_follow_up_waits_for_the_reply_unless_a_reader_needs_it() -> None:
    # started at once, it took the loop while the acknowledgement was being written
    writes, gate = WriteBehind(defer_s=0.05), Gate()
    gate.go.set()
    writes.start(gate.step("deferred"), nothing, "deferred", "default")
    await asyncio.sleep(0.01)
    assert gate.done == []
    await asyncio.sleep(0.1)
    assert gate.done == ["deferred"]

    writes = WriteBehind(defer_s=60)  # a reader never waits out the deferral
    writes.start(gate.step("read"), nothing, "read", "default")
    writes.start(gate.step("other tenant"), nothing, "other", "team-b")
    await asyncio.wait_for(writes.caught_up(["default"]), 1)
    assert gate.done[1:] == ["read"]
    await asyncio.wait_for(writes.close(), 1)  # shutdown starts what is left
    assert gate.done[1:] == ["read", "other tenant"] and writes.pending == 0


async def test_a_reader_waits_only_for_its_own_namespaces() -> None:
    writes, gate = WriteBehind(), Gate()
    writes.start(gate.step("a"), nothing, "a's add", "team-a")
    await asyncio.wait_for(writes.caught_up(["team-b", "shared"]), 1)  # not blocked
    reader = asyncio.create_task(writes.caught_up(["team-a"]))
    await asyncio.sleep(0.02)
    assert not reader.done()
    gate.go.set()
    await asyncio.wait_for(reader, 2)
    await writes.close()


async def test_a_cancelled_reader_does_not_cancel_the_write() -> None:
    writes, gate = WriteBehind(), Gate()
    writes.start(gate.step("write"), nothing, "follow-up", "default")
    reader = asyncio.create_task(writes.caught_up())
    await asyncio.sleep(0.01)
    reader.cancel()
    with pytest.raises(asyncio.CancelledError):
        await reader
    gate.go.set()
    await writes.close()
    assert gate.done == ["write"]


async def test_a_failed_write_is_logged_and_queues_nothing(
    caplog: pytest.LogCaptureFixture,
) -> None:
    writes, queued = WriteBehind(), []

    async def failing() -> None:
        raise StoreUnavailable("the disk is nearly full")

    async def queue() -> None:
        queued.append(True)

    with caplog.at_level(logging.WARNING, logger="mcp_gateway.indexing.writebehind"):
        writes.start(failing, queue, "indexing note X", "default")
        await writes.caught_up()
        await writes.close()
    assert "indexing note X did not complete" in caplog.text and "reconcile" in caplog.text
    assert not queued  # reconcile both writes and queues such a note


async def test_an_acknowledged_add_is_in_the_very_next_search(harness: Harness) -> None:
    """Through MCP, no settling in between: each add is found by the search after it."""
    for i in range(20):
        word = f"zqx{i}kv"
        added = await harness.ok("add_note", text=f"the flaky deploy step is {word}")
        found = await harness.ok("search_memory", query=word, top=3)
        assert added["id"] in [r["id"] for r in found["results"]], (i, found)


async def test_a_lost_follow_up_is_repaired_by_reconcile(settings: KiokuSettings) -> None:
    """The note is committed before the acknowledgement: if its lexical write fails
    (here the index refuses writes, as on a nearly full disk), the add still succeeded,
    and the next reconcile pass indexes and embeds the note. No prefetcher: the failed
    write queues no job, but the search below let the prefetcher embed the note before
    the reconcile pass, which then had nothing to queue (seen once: ``queued=0``)."""
    apps: list[AppContext] = []
    async with connected(create_server(without_prefetcher(settings), on_app=apps.append)) as c:
        await _lost_follow_up(Harness(c, apps))


async def _lost_follow_up(harness: Harness) -> None:
    edge = harness.app.index.current
    guard = edge._write_guard  # type: ignore[attr-defined]

    def refuse() -> None:
        raise StoreUnavailable("the disk is nearly full")

    edge._write_guard = refuse  # type: ignore[attr-defined]
    try:
        added = await harness.ok("add_note", text="the release checklist lives in qpwzk.md")
        assert added["status"] == "stored"
        await harness.app.writes.caught_up()
        found = await harness.ok("search_memory", query="qpwzk", top=3)
        assert added["id"] not in [r["id"] for r in found["results"]]
    finally:
        edge._write_guard = guard  # type: ignore[attr-defined]
    report = await harness.app.reconcile()
    assert report.rewritten >= 1 and report.queued >= 1
    await harness.settle()
    found = await harness.ok("search_memory", query="where is the release checklist?", top=3)
    assert added["id"] in [r["id"] for r in found["results"]]
    note = await harness.ok("get_note", id=added["id"])
    assert note["embedded_model"], note
