"""arq worker settings: the job registry, cron schedule, start-up and shut-down.

``worker_settings(settings)`` returns the keyword arguments of ``arq.worker.Worker``
(arq's ``WorkerSettings``, as a dict). Start-up opens the worker's ``JobContext``
(truth store, embedder, activity log; never the index), plus the Redis coordinator,
the queue adapter and the micro-batcher. Tests may pass ``kc=`` to share one context.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Awaitable, Callable, Mapping
from contextlib import AsyncExitStack
from typing import Any

from arq import cron
from arq.connections import RedisSettings
from arq.cron import CronJob
from arq.worker import Function, func

from mcp_gateway.common.settings import KiokuSettings
from mcp_gateway.jobs import JobContext
from mcp_gateway.jobs.batcher import Batcher
from mcp_gateway.jobs.tasks import JOBS, SINGLETON_JOBS
from mcp_gateway.queue.arq_queue import ArqQueue, arq_function
from mcp_gateway.queue.context import KEY
from mcp_gateway.queue.coordination import RedisCoordinator
from mcp_gateway.queue.scheduler import QueueNames
from workers.context import open_worker_context


def _job(name: str) -> Any:
    # arq's WorkerCoroutine type is narrower than our registry's
    return arq_function(JOBS[name])


# Lock-busy retries of a singleton count as tries in arq; the contract bounds real
# failures itself (``contract.run_singleton``), so arq's own limit is set out of reach.
SINGLETON_MAX_TRIES = 1_000_000
Hook = Callable[[dict[str, Any]], Awaitable[None]]


def functions(settings: KiokuSettings) -> list[Function]:
    q = settings.queue
    return [
        func(
            _job(name),
            name=name,
            keep_result=0,
            timeout=q.job_timeout_s,
            # +1: the job itself decides when to stop retrying and records the failure
            max_tries=SINGLETON_MAX_TRIES if name in SINGLETON_JOBS else q.max_tries + 1,
        )
        for name in JOBS
    ]


def _every(seconds: int) -> dict[str, Any]:
    """cron fields for "every ``seconds``" (rounded to what cron can express)."""
    if seconds < 60:
        return {"second": set(range(0, 60, max(seconds, 1)))}
    if seconds < 3600:
        return {"minute": set(range(0, 60, max(seconds // 60, 1))), "second": 0}
    return {"hour": set(range(0, 24, max(seconds // 3600, 1))), "minute": 0, "second": 0}


def cron_jobs(settings: KiokuSettings) -> list[CronJob]:
    # reconcile is the owner's (it needs the index); workers run the computing jobs
    return [
        cron(_job("rerank"), name="cron:rerank", minute=7, second=0),
        cron(_job("request_tune"), name="cron:request_tune", minute=37, second=0),
    ]


def lifecycle(
    settings: KiokuSettings,
    names: QueueNames,
    kc: JobContext | None = None,
    ctx_extra: Mapping[str, Any] | None = None,
) -> tuple[Hook, Hook]:
    async def startup(ctx: dict[str, Any]) -> None:
        stack = AsyncExitStack()
        ctx["_stack"] = stack
        shared = kc
        if shared is None:
            shared = await stack.enter_async_context(open_worker_context(settings))
        batcher = Batcher(shared, size=settings.embedder.batch_size)
        stack.push_async_callback(batcher.close)
        ctx.update(
            {KEY: shared},
            queue=ArqQueue(ctx["redis"], names),
            coord=RedisCoordinator(ctx["redis"], names.prefix),
            batcher=batcher,
        )
        ctx.update(ctx_extra or {})

    async def shutdown(ctx: dict[str, Any]) -> None:
        stack = ctx.pop("_stack", None)
        if stack is not None:
            await stack.aclose()

    return startup, shutdown


def worker_settings(
    settings: KiokuSettings,
    *,
    burst: bool = False,
    names: QueueNames | None = None,
    kc: JobContext | None = None,
    ctx_extra: Mapping[str, Any] | None = None,
    host: str | None = None,
    **overrides: Any,
) -> dict[str, Any]:
    if not settings.redis_url:
        raise ValueError("worker settings need settings.redis_url")
    names = names or QueueNames.for_settings(settings)
    startup, shutdown = lifecycle(settings, names, kc, ctx_extra)
    options: dict[str, Any] = {
        "functions": functions(settings),
        "cron_jobs": cron_jobs(settings),
        "redis_settings": RedisSettings.from_dsn(settings.redis_url),
        "queue_name": names.queue,
        "health_check_key": names.health_key(host or socket.gethostname(), os.getpid()),
        "health_check_interval": settings.queue.health_check_interval_s,
        "max_jobs": settings.queue.max_jobs,
        "job_timeout": settings.queue.job_timeout_s,
        "max_tries": settings.queue.max_tries + 1,
        "keep_result": 0,
        "on_startup": startup,
        "on_shutdown": shutdown,
        "burst": burst,
    }
    options.update(overrides)
    return options
