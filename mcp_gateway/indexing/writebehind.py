"""Index follow-ups of an acknowledged write, run after the reply is on its way.

``add_note`` commits the note to SQLite (the truth store) and acknowledges; writing its
lexical point and queueing its embedding happen here, just after. What makes that safe:

- **read your writes**: every search first waits for the follow-ups started before it
  in the namespaces it reads (``caught_up``), so a note acknowledged to a client is in
  the next search's index -- the wait is the follow-up's own ~1 ms, never an embedding;
- **nothing lost**: the note is committed before the acknowledgement; a follow-up that
  fails (disk nearly full, Redis gone) or a process killed before it ran leaves a note
  the reconcile pass finds without its point or vector and indexes again (at start-up
  and every ``queue.reconcile_every_s``);
- **order**: a follow-up queues the embedding only after its lexical point landed, and
  the applier waits for landing writes before it writes embedded points, so a
  lexical-only point never overwrites an embedded one (not even for a note reconcile
  queued meanwhile);
- **shutdown**: ``close`` waits for every follow-up, before the index closes.

Why: the lexical write is three worker-thread hops (~0.85 ms of the 1.9 ms an add
costs in the owner); the acknowledgement no longer waits for them (bench/LOG.md,
round 6, "the add acknowledges at commit, one payload read a search").

A follow-up starts ``DEFER_S`` after the add returns, not at once: started at once, its
first steps (the sparse encoding, the thread hops, then the embedding job's own) ran
on the event loop and the GIL while the reply was still being written, and the reply
waited for them. A reader that arrives meanwhile starts the follow-ups it waits for
immediately, so deferring never delays a search by more than it did before (bench/LOG.md,
round 12, "the reply before the follow-ups").
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable

log = logging.getLogger(__name__)


Step = Callable[[], Awaitable[None]]


DEFER_S = 0.003  # long enough for the reply to be written; a reader does not wait it out


class WriteBehind:
    def __init__(self, defer_s: float = DEFER_S) -> None:
        self.defer_s = defer_s
        # a follow-up's index write, until it has landed -> the namespace it writes
        self._landing: dict[asyncio.Future[None], str] = {}
        # follow-ups not started yet -> what starts one now (idempotent)
        self._deferred: dict[asyncio.Future[None], Callable[[], None]] = {}
        self._tasks: set[asyncio.Task[None]] = set()

    def start(self, write: Step, then: Step, what: str, namespace: str) -> None:
        """Run ``write`` (the index write readers wait for), then ``then`` (queueing
        the job: nobody waits for it but ``close``), in the background, ``defer_s``
        from now or as soon as a reader waits for it; ``what`` names the follow-up in a
        failure."""
        loop = asyncio.get_running_loop()
        landed: asyncio.Future[None] = loop.create_future()
        self._landing[landed] = namespace
        landed.add_done_callback(lambda f: self._landing.pop(f, None))

        def run_now() -> None:
            if self._deferred.pop(landed, None) is None:
                return  # already started
            timer.cancel()
            task = loop.create_task(self._run(write, then, what, landed))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

        self._deferred[landed] = run_now
        timer = loop.call_later(self.defer_s, run_now)

    @property
    def pending(self) -> int:
        """Follow-ups whose index write has not landed yet."""
        return len(self._landing)

    async def caught_up(self, namespaces: Iterable[str] | None = None) -> None:
        """Return once the index write of every follow-up started before this call has
        landed (only those of ``namespaces`` when given: one tenant's adds never slow
        another's searches). A job the follow-up queues after its write is not waited
        for, so the job's own wait for this (the applier's) cannot wait for itself."""
        wanted = None if namespaces is None else set(namespaces)
        landing = [f for f, ns in self._landing.items() if wanted is None or ns in wanted]
        self._run_now(landing)
        if landing:
            # asyncio.wait: a reader cancelled while waiting does not cancel the writes
            await asyncio.wait(landing)

    async def close(self) -> None:
        while self._tasks or self._deferred:
            self._run_now(list(self._deferred))
            await asyncio.wait(set(self._tasks))

    def _run_now(self, follow_ups: list[asyncio.Future[None]]) -> None:
        for landed in follow_ups:
            if (run_now := self._deferred.get(landed)) is not None:
                run_now()

    @staticmethod
    async def _run(write: Step, then: Step, what: str, landed: asyncio.Future[None]) -> None:
        try:
            try:
                await write()
            finally:
                if not landed.done():
                    landed.set_result(None)
            await then()  # not after a failed write: reconcile writes and queues the note
        except Exception as exc:  # the note is committed: nothing is lost
            log.warning("%s did not complete (%s): the reconcile pass will redo it", what, exc)
