"""A per-worker micro-batcher: many concurrent ``index_note`` jobs, few embedder calls.

Each job submits its note id and awaits the outcome. One flusher task takes what is
pending (up to ``size`` ids, waiting at most ``linger_s`` for more after the first)
and embeds it with one embedder call; while that call runs, new ids accumulate for
the next batch. A batch that fails with a permanent error is retried id by id, so a
poison note fails alone.

What "needs embedding" means: the note is live and the truth store has no vector for
the configured model and its current text (``embedding``).

Drafts (a burst's backlog, embedded first on the faster pass) are embedded exactly by
the batcher itself once no note has come for ``embedder.exact_after_idle_s``, a few
(``REDO_CHUNK`` per document lane) a call so a new note waits at most one such call;
reconcile remains the safety net (a process stopped first). An arq worker process runs
one batcher too (``workers/settings.py``).
Without this a burst settled at the next reconcile pass, up to 300 s later.
"""

from __future__ import annotations

import asyncio
import logging

from mcp_gateway.jobs.embedding import EmbedStats, embed_notes, embed_records
from mcp_gateway.queue.context import JobContext
from mcp_gateway.queue.contract import is_transient

log = logging.getLogger(__name__)

# drafts embedded exactly per call while idle, per document lane: ~0.2 s of one thread
# for short notes, so a note that arrives meanwhile waits little more than its own
# batch's linger
REDO_CHUNK = 8


class Batcher:
    def __init__(self, kc: JobContext, size: int = 32, linger_s: float = 0.02) -> None:
        self.kc, self.size, self.linger_s = kc, size, linger_s
        self.stats = EmbedStats()
        self._pending: list[tuple[str, asyncio.Future[None]]] = []
        self._wakeup = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.idle_s = kc.settings.embedder.exact_after_idle_s
        self.redo_chunk = REDO_CHUNK * kc.settings.embedder.document_lanes
        # drafts may be waiting: at start (a previous process's) and after a drafted batch
        self._drafts_left = self.idle_s > 0
        self._redoing = False  # idle long enough: redo until a note comes

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
            if not await self._woken():
                await self._redo_drafts()
                continue
            if len(self._pending) < self.size:
                await asyncio.sleep(self.linger_s)
            batch, self._pending = self._pending[: self.size], self._pending[self.size :]
            if not self._pending:
                self._wakeup.clear()
            if batch:
                await self._flush(batch)

    async def _woken(self) -> bool:
        """Wait for a submission; False once idle for ``idle_s`` with drafts to redo."""
        if not self._drafts_left:
            await self._wakeup.wait()
            return True
        if self._redoing and not self._wakeup.is_set():
            return False  # still idle: the next few drafts at once
        try:
            await asyncio.wait_for(self._wakeup.wait(), self.idle_s)
        except TimeoutError:
            self._redoing = True
            return False
        self._redoing = False
        return True

    async def _redo_drafts(self) -> None:
        """Embed up to ``redo_chunk`` drafts exactly; stop looking once none is left or
        a call made no progress (a draft of a deleted note: reconcile forgets it)."""
        kc = self.kc
        if kc.stopping.is_set():
            self._drafts_left = False
            return
        found = await kc.vectors.drafts(kc.embedder.model_id, limit=self.redo_chunk)
        before = self.stats.embedded
        try:
            notes = [sid for kind, sid in found if kind == "note"]
            records = [sid for kind, sid in found if kind == "record"]
            if notes:
                await embed_notes(kc, notes, self.stats)
            if records:
                await embed_records(kc, records, self.stats)
        except Exception as exc:  # reconcile queues them again; no hot loop here
            log.warning("exact redo of %d drafts failed (%r): left to reconcile", len(found), exc)
            self._drafts_left = False
            return
        if not found or self.stats.embedded == before:
            self._drafts_left = False

    async def _flush(self, batch: list[tuple[str, asyncio.Future[None]]]) -> None:
        self.stats.batches += 1
        self._redoing = False  # a note came: the redo waits for idle again
        drafted = self.stats.drafted
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
        if self.stats.drafted > drafted and self.idle_s > 0:
            self._drafts_left = True
        _settle(batch, None)


def _settle(batch: list[tuple[str, asyncio.Future[None]]], exc: BaseException | None) -> None:
    for _, future in batch:
        if future.done():
            continue
        if exc is None:
            future.set_result(None)
        else:
            future.set_exception(exc)
