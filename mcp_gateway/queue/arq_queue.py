"""The Redis runner, owner side: enqueue into arq; ``kioku worker`` processes run jobs.

``ArqQueue`` adapts an ``ArqRedis`` pool to ``JobQueue``: job ids get the deployment's
prefix (arq's job keys are global to the Redis db), and ``enqueue_job`` returning None
(id queued or running) becomes False. Job functions are registered with
``keep_result=0`` (``workers.settings``), so ids are free again as soon as a job ends.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from arq.connections import ArqRedis, RedisSettings, create_pool
from arq.constants import in_progress_key_prefix
from arq.worker import Retry as ArqRetry

from mcp_gateway.queue import failures
from mcp_gateway.queue.context import JobContext
from mcp_gateway.queue.coordination import RedisCoordinator
from mcp_gateway.queue.run import JobRun, Retry
from mcp_gateway.queue.scheduler import JobFunction, QueueNames, QueueScheduler

log = logging.getLogger(__name__)


def arq_function(job: JobFunction) -> Callable[..., Awaitable[Any]]:
    """``job`` as arq calls it: arq hands a ``dict`` ctx, the job takes its ``JobRun``;
    a ``Retry`` of ours becomes arq's."""

    @functools.wraps(job)
    async def from_ctx(ctx: dict[str, Any], *args: Any) -> Any:
        try:
            return await job(JobRun.from_arq(ctx), *args)
        except Retry as retry:
            raise ArqRetry(defer=retry.defer_s) from retry

    return from_ctx


class ArqQueue:
    def __init__(self, redis: ArqRedis, names: QueueNames) -> None:
        self.redis, self.names = redis, names

    async def enqueue(
        self, function: str, *args: Any, job_id: str | None = None, defer_s: float = 0.0
    ) -> bool:
        job = await self.redis.enqueue_job(
            function,
            *args,
            _job_id=f"{self.names.prefix}{job_id}" if job_id else None,
            _queue_name=self.names.queue,
            _defer_by=defer_s or None,
        )
        return job is not None


async def open_pool(redis_url: str, names: QueueNames) -> ArqRedis:
    return await create_pool(RedisSettings.from_dsn(redis_url), default_queue_name=names.queue)


async def queue_counts(redis: ArqRedis, names: QueueNames, sample: int = 1000) -> dict[str, int]:
    """Jobs in the queue (arq keeps a job there until it ends) and how many are running."""
    now_ms = time.time() * 1000
    queued = int(await redis.zcard(names.queue))
    ready = int(await redis.zcount(names.queue, "-inf", now_ms))
    ids = await redis.zrange(names.queue, 0, sample - 1)
    running = 0
    if ids:
        keys = [in_progress_key_prefix + i.decode() for i in ids]
        running = int(await redis.exists(*keys))
    return {"queued": queued, "ready": ready, "deferred": queued - ready, "in_progress": running}


class ArqScheduler(QueueScheduler):
    """``Scheduler`` for ``KIOKU_REDIS_URL`` set: the gateway only enqueues."""

    def __init__(self, kc: JobContext, names: QueueNames | None = None) -> None:
        super().__init__(kc)
        self.names = names or QueueNames.for_settings(kc.settings)
        self._pool: ArqRedis | None = None

    async def start(self) -> None:
        url = self.kc.settings.redis_url
        if not url:
            raise RuntimeError("ArqScheduler needs settings.redis_url")
        self._pool = await open_pool(url, self.names)
        self._queue = ArqQueue(self._pool, self.names)
        self._coord = RedisCoordinator(self._pool, self.names.prefix)

    async def close(self) -> None:
        if self._pool is not None:
            await self._pool.aclose(close_connection_pool=True)
            self._pool = None

    async def drain(self) -> None:
        """Wait until the queue is empty (workers must be running)."""
        await self.wait_idle(None)

    async def wait_idle(self, timeout_s: float | None, poll_s: float = 0.02) -> bool:
        """Wait until the queue is empty; False on timeout."""
        if self._pool is None:
            return True
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while await self._pool.zcard(self.names.queue):
            if deadline is not None and time.monotonic() > deadline:
                return False
            await asyncio.sleep(poll_s)
        return True

    async def stats(self) -> dict[str, Any]:
        out: dict[str, Any] = {"runner": "arq", "queue": self.names.queue}
        if self._pool is not None:
            out.update(await queue_counts(self._pool, self.names))
        out["failures"] = await failures.summary(self.kc.db, limit=5)
        return out
