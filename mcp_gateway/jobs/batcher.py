"""A per-worker micro-batcher: many concurrent ``index_note`` jobs, few embedder calls.

Each job submits its note id and awaits the outcome. One flusher task takes what is
pending (up to ``size`` ids, waiting at most ``linger_s`` for more after the first)
and embeds it with one embedder call; while that call runs, new ids accumulate for
the next batch. A batch that fails with a permanent error is retried id by id, so a
poison note fails alone.

What "needs embedding" means: the note is live and the truth store has no vector for
the configured model and its current text (``embedding``).
"""

from __future__ import annotations

import asyncio
import logging

from mcp_gateway.jobs.context import JobContext
from mcp_gateway.jobs.contract import is_transient
from mcp_gateway.jobs.embedding import EmbedStats, embed_notes

log = logging.getLogger(__name__)


class Batcher:
    def __init__(self, kc: JobContext, size: int = 32, linger_s: float = 0.02) -> None:
        self.kc, self.size, self.linger_s = kc, size, linger_s
        self.stats = EmbedStats()
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
            await embed_notes(self.kc, [nid for nid, _ in batch], self.stats)
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
