"""How the owner hands slow work to jobs.

The service layer only says *what happened* (notes written, records changed); a
scheduler turns that into deduplicated jobs. The queue runners are in ``inprocess``
(the embedded default) and ``arq_queue`` (Redis, ``kioku worker``); ``jobs.inline`` runs
the job functions right away in the calling task, for one-shot CLI commands.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from mcp_gateway.common.types import Note


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
