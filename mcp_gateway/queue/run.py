"""``JobRun``: what one try of one job gets, on both runners.

The ``JobContext`` (stores, embedder, settings), which try this is, and what the job
may queue follow-ups with. The in-process runner builds it directly; under arq, which
hands jobs a ``dict`` ctx, ``arq_queue.arq_function`` builds it from that dict
(``JobRun.from_arq``: the ``JobContext`` under ``KEY``, arq's ``job_try``, the queue,
the coordinator and the batcher the worker's startup put there). The job contract
(``contract``) is written against it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from mcp_gateway.queue.context import KEY, JobContext
from mcp_gateway.queue.coordination import Coordinator

# a transient failure waits this long before its first retry, then twice as long each time
RETRY_BASE_S = 0.5
# a singleton whose lock is held tries again after this long
LOCK_BUSY_DEFER_S = 0.2


class Retry(Exception):
    """Run this job again in ``defer_s`` seconds, as the next try (arq's ``Retry``).

    Ours, not arq's: the embedded runner must not import arq and redis (~8 MB resident,
    with the JWT and crypto modules redis pulls in); under arq, ``arq_queue.arq_function``
    raises arq's own from it."""

    def __init__(self, defer_s: float = 0.0) -> None:
        super().__init__(f"retry in {defer_s:.2f} s")
        self.defer_s = defer_s


class JobQueue(Protocol):
    async def enqueue(
        self, function: str, *args: Any, job_id: str | None = None, defer_s: float = 0.0
    ) -> bool:
        """Queue ``function(*args)``; False if ``job_id`` is already queued or running."""


class NoteBatcher(Protocol):
    """``jobs.batcher.Batcher``, as the runners hold it."""

    stats: Any  # what it counted (embedder calls, batches, drafted), for ``stats``

    async def submit(self, note_id: str) -> None:
        """Embed the note with others submitted meanwhile (one embedder call a batch)."""

    async def close(self) -> None: ...


@dataclass(frozen=True, slots=True)
class JobRun:
    """One try of one job: what both runners hand it."""

    context: JobContext
    attempt: int = 1  # 1 for the first try (arq's ``job_try``)
    # what a job queues follow-up runs with; None where a runner queues none (inline)
    queue: JobQueue | None = None
    coord: Coordinator | None = None
    batcher: NoteBatcher | None = None  # per-note embeddings go through it where set
    retry_base_s: float = RETRY_BASE_S
    lock_poll_s: float = LOCK_BUSY_DEFER_S

    @classmethod
    def from_arq(cls, ctx: Mapping[str, Any]) -> JobRun:
        """The run arq's ``ctx`` describes (``workers.settings`` fills it at startup;
        ``retry_base_s`` / ``lock_poll_s`` there override the defaults, for tests)."""
        return cls(
            context=ctx[KEY],
            attempt=int(ctx.get("job_try", 1)),
            queue=ctx.get("queue"),
            coord=ctx.get("coord"),
            batcher=ctx.get("batcher"),
            retry_base_s=float(ctx.get("retry_base_s", RETRY_BASE_S)),
            lock_poll_s=float(ctx.get("lock_poll_s", LOCK_BUSY_DEFER_S)),
        )

    def follow_ups(self) -> tuple[Coordinator, JobQueue]:
        """The coordinator and queue that request further runs (singletons)."""
        if self.coord is None or self.queue is None:
            raise RuntimeError("this runner queues no follow-up jobs")
        return self.coord, self.queue
