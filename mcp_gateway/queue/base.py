"""How the owner hands slow work to jobs.

The service layer only says *what happened* (notes written, records changed); a
scheduler turns that into deduplicated jobs. ``InlineScheduler`` runs the job
functions right away in the calling task -- simple and synchronous, used by one-shot
CLI commands that own the stores for a moment. The queue runners are in
``inprocess`` (the embedded default) and ``arq_queue`` (Redis, ``kioku worker``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol

from mcp_gateway.common.types import Note
from mcp_gateway.jobs import tasks
from mcp_gateway.jobs.context import JobContext
from mcp_gateway.jobs.run import JobRun


class Scheduler(Protocol):
    async def start(self) -> None: ...

    async def close(self) -> None: ...

    async def notes_changed(
        self, notes: Sequence[Note], *, export: bool = False, tune: bool = False
    ) -> None:
        """Notes were written (as committed): embed them; regenerate exports /
        thresholds if asked. Taking the notes, not ids, spares the add path a read."""

    async def records_changed(self, record_ids: Sequence[str], *, export: bool = True) -> None:
        """Records were written: embed those lacking a vector; export if asked."""

    async def stats(self) -> dict[str, Any]: ...

    async def drain(self) -> None:
        """Wait until every job requested so far has finished (tests, shutdown)."""


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
