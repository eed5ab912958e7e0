"""The prefetcher: pending notes embedded between searches on the query lane.

Real stores, the real bundled model and the real embedded Qdrant engine; the embedding
job is held at its embedder (``GatedEmbedder``: the document lane waits, the query lane
never), which is the state a burst of adds leaves notes in.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

import anyio
import pytest

from mcp_gateway.common.types import point_id
from mcp_gateway.embedders.base import Encoded
from mcp_gateway.indexing.points import note_document
from mcp_gateway.search.prefetch import Searches
from mcp_gateway.services.notes import NoteService
from mcp_gateway.stores.vectors import content_hash

from .test_fresh_notes import GatedEmbedder, add, gated_app

BURST = [
    "Rotate the staging database password every quarter",
    "The zorblax cache key uses the tenant prefix",
    "Nightly backups of the ledger go to cold storage",
    "ラベル付きのイメージだけを本番にデプロイする",
    "ทดสอบการย้ายฐานข้อมูลบนสเตจจิงก่อนทุกครั้ง",
]


async def wait_for(predicate: Callable[[], Awaitable[bool]]) -> None:
    with anyio.fail_after(60):
        while not await predicate():  # noqa: ASYNC110 - polling a store, not an event
            await anyio.sleep(0.02)


async def test_pending_notes_are_embedded_newest_first_while_the_job_is_held(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    embedder = GatedEmbedder()
    async with gated_app(tmp_path, monkeypatch, embedder, prefetch_budget_ms=1000) as app:
        service = NoteService(app)
        # a search "running" while the burst arrives: the prefetcher waits for it
        with app.search.searches.running_one():
            first = await add(service, app, BURST[0])
            await asyncio.wait_for(embedder.waiting.wait(), 60)  # the job holds BURST[0]
            ids = [first] + [await add(service, app, text) for text in BURST[1:]]
            await anyio.sleep(0.2)
            assert embedder.now == []
        points = [point_id("note", i) for i in ids]

        async def all_searchable() -> bool:
            return set((await app.index.present(points)).values()) == {True}

        # every note gets its dense point while the job is still held at the gate
        await wait_for(all_searchable)
        assert embedder.documents == []
        stored = await app.vectors.get("note", app.embedder.model_id, ids)
        for note_id in ids:
            note = await app.notes.get(note_id)
            assert stored[note_id].content_hash == content_hash(note_document(note))
        assert app.search.fresh is not None and app.search.fresh.prefetched == len(ids)
        # newest first, the note the job is holding last
        assert embedder.now == list(reversed(BURST))

        embedder.gate.set()
        await asyncio.wait_for(app.settle(), 120)
        # the job finished the batch it held and embedded nothing the prefetch had done
        assert embedder.documents == [BURST[0]]


class HeldPrefetch(GatedEmbedder):
    """``GatedEmbedder`` whose query lane (searches, the prefetcher) waits for
    ``now_gate`` too."""

    def __init__(self) -> None:
        super().__init__()
        self.now_gate = asyncio.Event()
        self.now_waiting = asyncio.Event()

    async def encode_documents(self, texts: Sequence[str], *, now: bool = False) -> list[Encoded]:
        if now:
            self.now_waiting.set()
            await self.now_gate.wait()
        return await super().encode_documents(texts, now=now)


async def test_settle_waits_for_a_prefetch_in_flight(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The job and the prefetcher may embed one note at once: ``settle()`` returns only
    once the prefetch has stored its vector too, so nothing rewrites the note's point
    after it (the cause of a flaky read-reuse test)."""
    embedder = HeldPrefetch()
    async with gated_app(tmp_path, monkeypatch, embedder, prefetch_budget_ms=1000) as app:
        await add(NoteService(app), app, BURST[1])
        await asyncio.wait_for(embedder.waiting.wait(), 60)  # the job holds the note
        await asyncio.wait_for(embedder.now_waiting.wait(), 60)  # and so does a prefetch
        embedder.gate.set()  # the job embeds and stores it
        await asyncio.wait_for(app.jobs.drain(), 60)  # done: only the prefetch is left
        # settle() without the prefetcher's wait returns within the applier's pass
        # (milliseconds); a fixed 2 s here waited out the job's embedding as well
        with anyio.move_on_after(0.5) as early:
            await app.settle()
        assert early.cancelled_caught  # the prefetch has not stored its vector yet
        embedder.now_gate.set()
        await asyncio.wait_for(app.settle(), 120)
        settled = app.index.generation
        await anyio.sleep(0.5)
        assert app.index.generation == settled
        assert embedder.documents == embedder.now == [BURST[1]]


async def test_a_running_search_keeps_the_prefetcher_waiting() -> None:
    searches = Searches()
    with searches.running_one():
        with searches.running_one():
            pass
        with anyio.move_on_after(0.1) as waited:
            await searches.quiet()
        assert waited.cancelled_caught  # still one search running
    with anyio.fail_after(1):
        await searches.quiet()
    assert searches.running == 0


async def test_a_note_over_the_budget_is_left_to_the_job(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    embedder = GatedEmbedder()
    long_text = "The zorblax cache key uses the tenant prefix. " + "Filler words here. " * 40
    async with gated_app(tmp_path, monkeypatch, embedder, prefetch_budget_ms=30) as app:
        service = NoteService(app)
        with app.search.searches.running_one():  # the job takes the first note
            await add(service, app, BURST[0])
            await asyncio.wait_for(embedder.waiting.wait(), 60)
            short = await add(service, app, BURST[1])
            long_id = await add(service, app, long_text)
        prefetcher = app.prefetcher
        assert prefetcher is not None
        fresh = app.search.fresh
        assert fresh is not None
        fresh.ms_per_byte = 0.05  # a known cost: 50 bytes fit 30 ms, 800 do not

        async def short_done() -> bool:
            return short in await app.vectors.get("note", app.embedder.model_id, [short])

        prefetcher.wake()
        await wait_for(short_done)
        while await prefetcher.step():  # whatever is left that fits (None: not yet)
            pass
        assert await app.vectors.get("note", app.embedder.model_id, [long_id]) == {}
        assert long_text not in embedder.now


async def test_off_means_no_prefetcher(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    embedder = GatedEmbedder()
    async with gated_app(tmp_path, monkeypatch, embedder, prefetch_budget_ms=0) as app:
        assert app.prefetcher is None
        service = NoteService(app)
        await add(service, app, BURST[0])
        await asyncio.wait_for(embedder.waiting.wait(), 60)
        await add(service, app, BURST[1])
        await anyio.sleep(0.3)
        assert embedder.now == []
