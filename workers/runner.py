"""Choose the job runner for the gateway: arq over Redis, or in-process (embedded)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mcp_gateway.scheduling import Scheduler

if TYPE_CHECKING:
    from mcp_gateway.app import AppContext


def build_runner(app: AppContext) -> Scheduler:
    """``InProcessScheduler`` when ``redis_url`` is unset, else ``ArqScheduler``."""
    if app.settings.redis_url:
        from .arq_runner import ArqScheduler

        return ArqScheduler(app)
    from .inprocess import InProcessScheduler

    return InProcessScheduler(app)
