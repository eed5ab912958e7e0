"""A per-worker micro-batcher: many concurrent ``index_note`` jobs, few embedder calls.

Each job submits its note id and awaits the outcome. One flusher task takes what is
pending (up to ``size`` ids, waiting at most ``linger_s`` for more after the first)
and embeds it with one embedder call; while that call runs, new ids accumulate for
the next batch. A batch that fails with a permanent error is retried id by id, so a
poison note fails alone.

What "needs embedding" means: the note is live and either not embedded with the
current model, or its point is missing / lacks a dense vector (the index was lost).
After embedding, notes edited meanwhile are embedded again, so the last write wins.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass

from mcp_gateway.indexing import Indexer
from mcp_gateway.types import Note, point_id

from .contract import is_transient

log = logging.getLogger(__name__)


@dataclass(slots=True)
class BatchStats:
    batches: int = 0
    embedder_calls: int = 0
    indexed: int = 0


async def notes_needing_embedding(indexer: Indexer, note_ids: Sequence[str]) -> list[Note]:
    found = await indexer.notes.get_many(list(dict.fromkeys(note_ids)))
    if not found:
        return []
    pids = {nid: point_id("note", nid) for nid in found}
    present = await indexer.index.present(list(pids.values()))
    model = indexer.embedder.model_id
    return [
        n for n in found.values() if n.embedded_model != model or not present.get(pids[n.id], False)
    ]


async def embed_current(indexer: Indexer, note_ids: Sequence[str], stats: BatchStats) -> None:
    """Embed what needs it; repeat for notes edited while their text was being embedded."""
    todo = await notes_needing_embedding(indexer, note_ids)
    for _round in range(3):
        if not todo:
            return
        outcome = await indexer.embed_notes(todo)
        stats.embedder_calls += outcome.embedder_calls
        stats.indexed += outcome.indexed
        versions = {n.id: n.updated_at for n in todo}
        fresh = await indexer.notes.get_many(list(versions))
        todo = [n for n in fresh.values() if n.updated_at != versions[n.id]]


class Batcher:
    def __init__(self, indexer: Indexer, size: int = 32, linger_s: float = 0.02) -> None:
        self.indexer, self.size, self.linger_s = indexer, size, linger_s
        self.stats = BatchStats()
        self._pending: list[tuple[str, asyncio.Future[None]]] = []
        self._wakeup = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def submit(self, note_id: str) -> None:
        """Resolve once ``note_id`` is embedded (or raise what its batch raised)."""
        self._ensure_running()
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._pending.append((note_id, future))
        self._wakeup.set()
        await future

    def _ensure_running(self) -> None:
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._run(), name="kioku-batcher")

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
        for _, future in self._pending:
            if not future.done():
                future.cancel()
        self._pending.clear()

    async def _run(self) -> None:
        while True:
            await self._wakeup.wait()
            if len(self._pending) < self.size:
                await asyncio.sleep(self.linger_s)
            batch, self._pending = self._pending[: self.size], self._pending[self.size :]
            if not self._pending:
                self._wakeup.clear()
            if batch:
                await self._flush(batch)

    async def _flush(self, batch: list[tuple[str, asyncio.Future[None]]]) -> None:
        self.stats.batches += 1
        try:
            await embed_current(self.indexer, [nid for nid, _ in batch], self.stats)
        except Exception as exc:
            if len(batch) == 1 or is_transient(exc):
                _settle(batch, exc)
                return
            log.warning("batch of %d failed (%r): retrying note by note", len(batch), exc)
            for item in batch:
                await self._flush([item])
            return
        _settle(batch, None)


def _settle(batch: list[tuple[str, asyncio.Future[None]]], exc: BaseException | None) -> None:
    for _, future in batch:
        if future.done():
            continue
        if exc is None:
            future.set_result(None)
        else:
            future.set_exception(exc)
