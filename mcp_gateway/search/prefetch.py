"""Pending notes embedded between searches, on the query lane's idle core.

During a burst of adds the embedding job is what makes notes semantically searchable,
on the document lane's one thread (~40 short notes a second on 2 cores), while the
query lane's thread waits for the next search. The prefetcher gives that idle time to
the backlog: while notes are pending it embeds the newest one, one note per call (a
search that arrives waits at most for that call, bounded by ``budget_ms`` of predicted
time), never while a search is running, and stores the vector as a search's fresh-note
embedding does (``FreshEmbedder``: the truth store; the applier upserts the point; the
job skips a note that has a vector for its current text, re-checked for every chunk it
embeds). Newest first because the job goes oldest first (the two meet in the middle) and
the newest notes are the likeliest to be searched for next.

It runs only in the process that owns the stores and only when woken: after an add
queues its job, and once at start-up; it starts once adds pause for ``QUIET_S`` (not
beside a burst still arriving). A long note is left to the job; one that does not fit
the budget at the learnt cost (a busy machine) is tried again a little later. Measured
in bench/LOG.md.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager

import anyio
import anyio.lowlevel

from mcp_gateway.common.errors import KiokuError
from mcp_gateway.common.types import Note
from mcp_gateway.search.fresh import FreshEmbedder
from mcp_gateway.stores.notes import NoteStore

log = logging.getLogger(__name__)

WINDOW = 64  # newest pending notes read a step (some may have a vector not applied yet)
# adds keep coming faster than this apart: a burst is still arriving, and embedding beside
# it would slow every acknowledgement (measured: in-process add p50 0.85 -> 1.55 ms)
QUIET_S = 0.1
RETRY_S = 0.25  # a busy machine: how soon to try a note that did not fit again


class Searches:
    """How many searches are running; the prefetcher waits for none."""

    def __init__(self) -> None:
        self.running = 0
        self._quiet = anyio.Event()
        self._quiet.set()

    @contextmanager
    def running_one(self) -> Iterator[None]:
        if self.running == 0:
            self._quiet = anyio.Event()
        self.running += 1
        try:
            yield
        finally:
            self.running -= 1
            if self.running == 0:
                self._quiet.set()

    async def quiet(self) -> None:
        await self._quiet.wait()


class Prefetcher:
    def __init__(
        self, notes: NoteStore, fresh: FreshEmbedder, searches: Searches, budget_ms: float
    ) -> None:
        self.notes, self.fresh, self.searches = notes, fresh, searches
        self.budget_ms = budget_ms
        self._wanted = anyio.Event()
        self._last_wake = 0.0
        # the newest pending notes as last read; read again when used up or woken: one
        # SQLite read per WINDOW notes, not per note (each note's own check is one row)
        self._queue: list[Note] = []
        self._stale = True
        self._idle = anyio.Event()  # replaced while a note is being embedded
        self._idle.set()

    def wake(self) -> None:
        """Notes may be pending: look once adds pause (cheap when none are)."""
        self._last_wake = time.monotonic()
        self._stale = True
        self._wanted.set()

    async def idle(self) -> None:
        """Wait until no note is being embedded (``App.settle``): a prefetch that read a
        note as pending before its job stored a vector still stores its own, and the
        applier then rewrites the note's point."""
        await self._idle.wait()

    async def run(self) -> None:
        self.wake()  # notes left pending by an earlier process
        while True:
            await self._wanted.wait()
            self._wanted = anyio.Event()
            while (done := await self.step()) != 0:
                if done is None:  # nothing fits the budget at the learnt cost yet
                    await anyio.sleep(RETRY_S)
                await anyio.lowlevel.checkpoint()  # a search that just arrived goes first

    async def step(self) -> int | None:
        """Embed one pending note once adds pause and no search runs. Returns how many
        were embedded; 0 when none is left to do, None when one would not fit yet."""
        # a debounce, not a wait for an event: each add moves the deadline
        while (idle := time.monotonic() - self._last_wake) < QUIET_S:  # noqa: ASYNC110
            await anyio.sleep(QUIET_S - idle)
        await self.searches.quiet()
        try:
            if self._stale or not self._queue:
                self._queue, self._stale = await self.notes.pending_newest(WINDOW), False
            while self._queue:
                busy = self._idle = anyio.Event()
                try:
                    done = await self.fresh.prefetch([self._queue.pop(0)], self.budget_ms)
                finally:
                    busy.set()
                if done != 0:
                    return done
            return 0
        except KiokuError as exc:
            log.info("prefetch paused until the next add: %s", exc)
            return 0
        except Exception:
            # optional work: it must never take the owner's background tasks down
            log.exception("prefetch failed; paused until the next add")
            return 0
