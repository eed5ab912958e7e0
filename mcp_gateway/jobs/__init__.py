"""Background work: embedding, session_context export, threshold tuning, re-ranking.

Jobs compute into the truth store (SQLite) and never touch the index; the owner
applies their results (``mcp_gateway.indexing.applier``). The same job functions run on the
in-process runner (embedded default), inline (one-shot CLI commands) or in
``kioku worker`` processes over arq and Redis.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from mcp_gateway.jobs.base import InlineScheduler, Scheduler
from mcp_gateway.jobs.context import JobContext


def build_scheduler(
    kc: JobContext, *, run_jobs: bool, apply: Callable[[], Awaitable[Any]]
) -> Scheduler:
    """Inline for one-shot commands; else arq when ``redis_url`` is set, else in-process."""
    if not run_jobs:
        return InlineScheduler(kc, apply)
    if kc.settings.redis_url:
        from mcp_gateway.jobs.arq_queue import ArqScheduler

        return ArqScheduler(kc)
    from mcp_gateway.jobs.inprocess import InProcessScheduler

    return InProcessScheduler(kc)


__all__ = ["JobContext", "Scheduler", "build_scheduler"]
