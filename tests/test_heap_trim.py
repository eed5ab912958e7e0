"""The owner gives freed heap pages back once its work stops (``common.heap``): the
trim itself on the real glibc heap, and when the owner's watcher runs it."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import pytest

from mcp_gateway.common import heap


def rss_anon_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("RssAnon:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no RssAnon")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc, /proc")
def test_trim_gives_back_pages_freed_between_live_objects() -> None:
    # 2 KB objects come from malloc; keeping one in 16 leaves the freed ones between
    # live ones, where glibc keeps them resident until a trim
    made = [bytes(2048) + i.to_bytes(4, "little") for i in range(24_000)]
    kept = made[::16]
    del made
    before = rss_anon_mb()
    heap.trim()
    assert before - rss_anon_mb() > 20
    assert len(kept) == 1_500


async def test_a_trim_each_time_the_work_stops_none_while_idle_or_busy() -> None:
    work, trims, quiet = [0], list[int](), [True]
    stop = anyio.Event()

    def trimmer() -> None:
        trims.append(work[0])

    async def watch() -> None:
        await heap.trim_when_quiet(lambda: work[0], lambda: quiet[0], stop, 0.01, trimmer)

    async with anyio.create_task_group() as tg:
        tg.start_soon(watch)
        await anyio.sleep(0.05)
        assert trims == []  # nothing ran: nothing to give back
        for _ in range(10):  # work goes on (a loaded machine may let a check trim)
            work[0] += 1
            await anyio.sleep(0.01)
        await anyio.sleep(0.08)
        assert trims[-1] == 10  # it stopped: a trim of all of it
        count = len(trims)
        await anyio.sleep(0.08)
        assert len(trims) == count  # and none again while nothing runs
        quiet[0] = False  # a request in flight: work that stopped waits for it
        work[0] += 1
        await anyio.sleep(0.08)
        assert len(trims) == count
        quiet[0] = True
        await anyio.sleep(0.08)
        assert trims[-1] == 11 and len(trims) == count + 1
        stop.set()


def test_document_batches_count_as_work() -> None:
    before = heap.work()
    heap.trim_heap()
    assert heap.work() == before + 1
