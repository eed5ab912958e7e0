"""Background work: embedding, session_context export, threshold tuning, re-ranking.

The job bodies; what queues and runs them is ``queue`` (below this). Jobs compute into
the truth store (SQLite) and never touch the index; the owner applies their results
(``mcp_gateway.indexing.applier``). The same job functions (``tasks.JOBS``) run on the
in-process runner (embedded default), inline (one-shot CLI commands) or in
``kioku worker`` processes over arq and Redis.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from mcp_gateway.jobs.batcher import Batcher
from mcp_gateway.jobs.inline import InlineScheduler
from mcp_gateway.jobs.tasks import JOBS
from mcp_gateway.queue.base import Scheduler
from mcp_gateway.queue.context import JobContext


def build_scheduler(
    kc: JobContext, *, run_jobs: bool, apply: Callable[[], Awaitable[Any]]
) -> Scheduler:
    """Inline for one-shot commands; else arq when ``redis_url`` is set, else in-process."""
    if not run_jobs:
        return InlineScheduler(kc, apply)
    if kc.settings.redis_url:
        from mcp_gateway.queue.arq_queue import ArqScheduler

        return ArqScheduler(kc)
    from mcp_gateway.queue.inprocess import InProcessScheduler

    return InProcessScheduler(kc, JOBS, lambda kc: Batcher(kc, kc.settings.embedder.batch_size))


__all__ = ["JobContext", "Scheduler", "build_scheduler"]
