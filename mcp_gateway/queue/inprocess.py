"""The embedded runner: the job functions run inside the gateway process, no Redis.

Same contract as arq: ``enqueue(..., job_id=X)`` is refused while X is queued,
deferred or running (ids are freed when a job ends, as with ``keep_result=0``); a job
raising ``run.Retry(defer_s)`` runs again later under the same id with ``job_try + 1``;
singletons coordinate through a ``MemoryCoordinator``. A fixed set of consumer tasks
runs the jobs, which are all async (the embedder and SQLite work in threads), so the
event loop never blocks. Periodic jobs (reconcile, rerank, tune) run on timers, and
reconcile also at start-up. Where several gateways share the truth store, a periodic
job runs only in the gateway holding its lease (``stores.leases``), once per deployment;
a holder that dies stops renewing and another takes over within 1.5 periods.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from mcp_gateway.queue import failures
from mcp_gateway.queue.context import JobContext
from mcp_gateway.queue.coordination import MemoryCoordinator
from mcp_gateway.queue.run import JobRun, NoteBatcher, Retry
from mcp_gateway.queue.scheduler import JobFunction, QueueScheduler, periodic_jobs
from mcp_gateway.stores.leases import Leases

log = logging.getLogger(__name__)

# What a stopping process leaves undone instead of draining: each is redone from the
# truth store (reconcile queues every note and record without a vector at the next
# start; the timers request the rest). An export still runs: it is quick, and nothing
# else would write the session context before the next change.
RESUMABLE = frozenset({"index_note", "index_records", "rerank", "request_tune"})


@dataclass(slots=True)
class _Job:
    function: str
    args: tuple[Any, ...]
    job_id: str
    tries: int = 1


class InProcessQueue:
    def __init__(
        self,
        functions: Mapping[str, JobFunction],
        run: JobRun,
        *,
        concurrency: int = 64,
        timeout_s: float = 300.0,
    ) -> None:
        self.functions, self.run, self.timeout_s = functions, run, timeout_s
        self.concurrency = concurrency
        self.counts = {"complete": 0, "failed": 0, "retried": 0}
        self._ready: asyncio.Queue[_Job] = asyncio.Queue()
        self._ids: set[str] = set()
        self._running = 0
        self._timers: dict[asyncio.TimerHandle, _Job] = {}
        self._consumers: list[asyncio.Task[None]] = []
        self._current: dict[asyncio.Task[None], _Job] = {}
        self._idle = asyncio.Event()
        self._idle.set()

    async def enqueue(
        self, function: str, *args: Any, job_id: str | None = None, defer_s: float = 0.0
    ) -> bool:
        if function not in self.functions:
            raise ValueError(f"unknown job {function!r}")
        job_id = job_id or uuid.uuid4().hex
        if job_id in self._ids:
            return False
        self._ids.add(job_id)
        self._idle.clear()
        self._schedule(_Job(function, args, job_id), defer_s)
        return True

    def _schedule(self, job: _Job, defer_s: float) -> None:
        if defer_s <= 0:
            self._ready.put_nowait(job)
            return
        handle: asyncio.TimerHandle

        def release() -> None:
            self._timers.pop(handle, None)
            self._ready.put_nowait(job)

        handle = asyncio.get_running_loop().call_later(defer_s, release)
        self._timers[handle] = job

    def start(self) -> None:
        self._consumers = [
            asyncio.create_task(self._consume(), name=f"kioku-job-{i}")
            for i in range(self.concurrency)
        ]

    async def _consume(self) -> None:
        while True:
            job = await self._ready.get()
            self._running += 1
            me = asyncio.current_task()
            assert me is not None
            self._current[me] = job
            try:
                retried = await self._run(job)
            finally:
                self._running -= 1
                self._current.pop(me, None)
            if not retried:
                self._ids.discard(job.job_id)
                if not self._ids:
                    self._idle.set()

    async def _run(self, job: _Job) -> bool:
        """Run one try; True if it was re-scheduled (its id stays taken)."""
        run = replace(self.run, attempt=job.tries)
        try:
            await asyncio.wait_for(self.functions[job.function](run, *job.args), self.timeout_s)
        except Retry as retry:
            job.tries += 1
            self.counts["retried"] += 1
            self._schedule(job, retry.defer_s)
            return True
        except Exception:
            self.counts["failed"] += 1
            log.exception("job %s (%s) failed", job.function, job.job_id)
        else:
            self.counts["complete"] += 1
        return False

    async def join(self, timeout_s: float | None = None) -> bool:
        """Wait until nothing is queued, deferred or running; False on timeout."""
        try:
            await asyncio.wait_for(self._idle.wait(), timeout_s)
        except TimeoutError:
            return False
        return True

    async def close(self, drain_s: float = 10.0, *, stopping: bool = False) -> None:
        """Wait up to ``drain_s`` for the jobs, then end; ``stopping``: first drop the
        ``RESUMABLE`` ones, queued, deferred or running (a stop must not wait minutes
        for a backlog that the next start redoes)."""
        if stopping:
            dropped = self._drop(RESUMABLE)
            if dropped:
                log.info("stopping: %d embedding and periodic jobs left to the next start", dropped)
        if not await self.join(drain_s):
            log.warning("closing with %d jobs unfinished (reconcile recovers them)", len(self._ids))
        for handle in self._timers:
            handle.cancel()
        self._timers.clear()
        for task in self._consumers:
            task.cancel()
        await asyncio.gather(*self._consumers, return_exceptions=True)
        self._consumers = []

    def _drop(self, functions: frozenset[str]) -> int:
        """Forget every job of ``functions``: queued and deferred ones are removed, running
        ones cancelled (their consumers end: the queue is closing). Returns how many."""
        gone: list[_Job] = []
        kept: list[_Job] = []
        while not self._ready.empty():
            job = self._ready.get_nowait()
            (gone if job.function in functions else kept).append(job)
        for job in kept:
            self._ready.put_nowait(job)
        for handle, job in list(self._timers.items()):
            if job.function in functions:
                handle.cancel()
                del self._timers[handle]
                gone.append(job)
        for task, job in list(self._current.items()):
            if job.function in functions:
                task.cancel()
                gone.append(job)
        for job in gone:
            self._ids.discard(job.job_id)
        if not self._ids:
            self._idle.set()
        return len(gone)

    def snapshot(self) -> dict[str, Any]:
        return {
            "queued": self._ready.qsize(),
            "deferred": len(self._timers),
            "in_progress": self._running,
            **self.counts,
        }


class InProcessScheduler(QueueScheduler):
    """``Scheduler`` for the embedded default (``KIOKU_REDIS_URL`` unset): runs ``jobs``
    (name -> job function), per-note embeddings through the batcher ``make_batcher``
    builds at start (``jobs.build_scheduler`` hands both in)."""

    def __init__(
        self,
        kc: JobContext,
        jobs: Mapping[str, JobFunction],
        make_batcher: Callable[[JobContext], NoteBatcher],
    ) -> None:
        super().__init__(kc)
        self._jobs, self._make_batcher = jobs, make_batcher
        self._runner: InProcessQueue | None = None
        self._batcher: NoteBatcher | None = None
        self._timers: list[asyncio.Task[None]] = []

    async def start(self) -> None:
        settings = self.kc.settings
        self._coord = MemoryCoordinator()
        self._batcher = self._make_batcher(self.kc)
        run = JobRun(self.kc, coord=self._coord, batcher=self._batcher)
        self._runner = InProcessQueue(
            self._jobs,
            run,
            concurrency=settings.queue.max_jobs,
            timeout_s=settings.queue.job_timeout_s,
        )
        self._queue = self._runner
        self._runner.run = replace(run, queue=self._runner)
        self._runner.start()
        for name, every_s, at_start in periodic_jobs(settings):
            self._timers.append(asyncio.create_task(self._every(name, every_s, at_start)))

    def retry_sooner(self, retry_base_s: float, lock_poll_s: float) -> None:
        """Shorter waits before retries and lock polls (tests; arq's workers take the
        same two from their ctx)."""
        if self._runner is not None:
            run = self._runner.run
            self._runner.run = replace(run, retry_base_s=retry_base_s, lock_poll_s=lock_poll_s)

    async def _every(self, name: str, every_s: float, at_start: bool) -> None:
        if not at_start:
            await asyncio.sleep(every_s)
        shared = self.kc.settings.shared_store
        leases = Leases(self.kc.db, uuid.uuid4().hex[:12]) if shared else None
        while True:
            if leases is None or await _holds(leases, f"cron:{name}", every_s * 1.5):
                await self.queue.enqueue(name, job_id=f"cron:{name}")
            await asyncio.sleep(every_s)

    async def drain(self) -> None:
        """Wait until every queued, deferred and running job has finished."""
        await self.wait_idle(None)

    async def wait_idle(self, timeout_s: float | None) -> bool:
        return await self._runner.join(timeout_s) if self._runner else True

    async def close(self) -> None:
        for task in self._timers:
            task.cancel()
        await asyncio.gather(*self._timers, return_exceptions=True)
        self._timers = []
        if self._runner is not None:
            await self._runner.close(stopping=self.kc.stopping.is_set())
        if self._batcher is not None:
            await self._batcher.close()

    async def stats(self) -> dict[str, Any]:
        out: dict[str, Any] = {"runner": "in-process"}
        if self._runner is not None:
            out.update(self._runner.snapshot())
        if self._batcher is not None:
            out["embedder_calls"] = self._batcher.stats.embedder_calls
            out["batches"] = self._batcher.stats.batches
            out["drafted"] = self._batcher.stats.drafted
        out["failures"] = await failures.summary(self.kc.db, limit=5)
        return out


async def _holds(leases: Leases, name: str, ttl_s: float) -> bool:
    try:
        return await leases.acquire(name, ttl_s)
    except Exception as exc:  # the store is down: skip this period, try the next
        log.warning("could not take the lease %s (%s); skipping this run", name, exc)
        return False
