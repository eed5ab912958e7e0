"""``InlineScheduler``: each job run to completion in the calling task.

Simple and synchronous, for one-shot CLI commands that own the stores for a moment
(``jobs.build_scheduler`` with ``run_jobs=False``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from mcp_gateway.common.types import Note
from mcp_gateway.jobs import tasks
from mcp_gateway.queue.context import JobContext
from mcp_gateway.queue.run import JobRun


class InlineScheduler:
    """Runs each job to completion before returning, then applies its vectors."""

    def __init__(self, kc: JobContext, apply: Callable[[], Awaitable[Any]]) -> None:
        self.run = JobRun(kc)
        self._apply = apply

    async def start(self) -> None:
        return None

    async def close(self) -> None:
        return None

    async def notes_changed(
        self, notes: Sequence[Note], *, export: bool = False, tune: bool = False
    ) -> None:
        for note in notes:
            await tasks.index_note(self.run, note.id)
        await self._apply()
        if export:
            await tasks.export_session_context(self.run)
        if tune:
            await tasks.tune_thresholds(self.run)

    async def records_changed(self, record_ids: Sequence[str], *, export: bool = True) -> None:
        if record_ids:
            await tasks.index_records(self.run, list(record_ids))
            await self._apply()
        if export:
            await tasks.export_session_context(self.run)

    async def stats(self) -> dict[str, Any]:
        return {"runner": "inline"}

    async def drain(self) -> None:
        return None
