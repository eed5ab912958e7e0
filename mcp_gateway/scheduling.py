"""How the gateway hands slow work to jobs.

The gateway only says *what happened* (notes written, records changed); a scheduler
turns that into deduplicated jobs. ``InlineScheduler`` runs the job functions right
away in the calling task -- simple and synchronous, used by one-shot CLI commands.
The queue runners (in-process and arq over Redis) live in ``workers.runner``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from .app import AppContext
    from .types import Note


class Scheduler(Protocol):
    async def start(self) -> None: ...

    async def close(self) -> None: ...

    async def notes_changed(
        self, notes: Sequence[Note], *, export: bool = False, tune: bool = False
    ) -> None:
        """Notes were written (as committed): embed them; regenerate exports /
        thresholds if asked. Taking the notes, not ids, spares the add path a read."""

    async def records_changed(self, record_ids: Sequence[str]) -> None:
        """Records were written or their lifecycle changed: (re)index them, export."""

    async def stats(self) -> dict[str, Any]: ...

    async def drain(self) -> None:
        """Wait until every job requested so far has finished (tests, shutdown)."""


class InlineScheduler:
    """Runs each job to completion before returning (no queue, no dedup needed)."""

    def __init__(self, app: AppContext) -> None:
        self.ctx: dict[str, Any] = {"app": app}

    async def start(self) -> None:
        return None

    async def close(self) -> None:
        return None

    async def notes_changed(
        self, notes: Sequence[Note], *, export: bool = False, tune: bool = False
    ) -> None:
        from workers import jobs

        await jobs.index_notes(self.ctx, [n.id for n in notes])
        if export:
            await jobs.export_session_context(self.ctx)
        if tune:
            await jobs.tune_thresholds(self.ctx)

    async def records_changed(self, record_ids: Sequence[str]) -> None:
        from workers import jobs

        await jobs.index_records(self.ctx, list(record_ids))
        await jobs.export_session_context(self.ctx)

    async def stats(self) -> dict[str, Any]:
        return {"runner": "inline"}

    async def drain(self) -> None:
        return None


def build_scheduler(app: AppContext, *, run_jobs: bool) -> Scheduler:
    if not run_jobs:
        return InlineScheduler(app)
    from workers.runner import build_runner

    return build_runner(app)
