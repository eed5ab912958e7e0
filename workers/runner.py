"""Job runners (placeholder until the queue runners land): inline execution."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mcp_gateway.scheduling import InlineScheduler, Scheduler

if TYPE_CHECKING:
    from mcp_gateway.app import AppContext


def build_runner(app: AppContext) -> Scheduler:
    return InlineScheduler(app)
