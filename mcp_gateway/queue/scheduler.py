"""The gateway side of both queue runners: turn "what happened" into deduplicated jobs.

``QueueScheduler`` holds the logic common to the in-process runner and arq:
- a written note -> ``index_note`` with job id ``index:{id}:{updated_at}`` (one job per
  note version; duplicates collapse while queued or running);
- ``export=True`` -> a singleton request (generation pattern, ``contract``);
- ``tune=True`` -> carried by the index job, which requests tuning once the note's
  dense vector exists (tuning measures it).
The job functions both runners execute are registered above this (``jobs.tasks.JOBS``).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from mcp_gateway.common.settings import KiokuSettings
from mcp_gateway.common.types import Note
from mcp_gateway.queue.context import JobContext
from mcp_gateway.queue.contract import EXPORT, TUNE, request_singleton
from mcp_gateway.queue.coordination import Coordinator
from mcp_gateway.queue.run import JobQueue

log = logging.getLogger(__name__)

JobFunction = Callable[..., Awaitable[Any]]


def index_job_id(note_id: str, updated_at: float) -> str:
    """One job per note version: a newer edit gets a new id, duplicates collapse."""
    return f"index:{note_id}:{updated_at!r}"


RERANK_EVERY_S = 3600
TUNE_EVERY_S = 3600


@dataclass(frozen=True, slots=True)
class QueueNames:
    """Redis names for one deployment; the namespace keeps two deployments apart."""

    queue: str
    prefix: str

    def health_key(self, host: str, pid: int) -> str:
        """One key per worker (its host or container, and its pid): a worker that stops
        deletes its own key only, so another worker's check never depends on it."""
        return f"{self.health_prefix(host)}{pid}"

    def health_prefix(self, host: str) -> str:
        """What every ``health_key`` of ``host`` starts with (``workers.main`` scans it)."""
        return f"{self.queue}:health-check:{host}:"

    @classmethod
    def for_settings(cls, settings: KiokuSettings) -> QueueNames:
        return cls(queue=f"kioku:{settings.namespace}:queue", prefix=f"kioku:{settings.namespace}:")


def periodic_jobs(settings: KiokuSettings) -> list[tuple[str, int, bool]]:
    """(job, every seconds, also at start-up)."""
    return [
        ("rerank", RERANK_EVERY_S, False),
        ("request_tune", TUNE_EVERY_S, False),
    ]


class QueueScheduler:
    """Enqueue side shared by ``InProcessScheduler`` and ``ArqScheduler``."""

    def __init__(self, kc: JobContext) -> None:
        self.kc = kc
        self._queue: JobQueue | None = None
        self._coord: Coordinator | None = None

    @property
    def queue(self) -> JobQueue:
        if self._queue is None:
            raise RuntimeError("the job scheduler is not started")
        return self._queue

    @property
    def coord(self) -> Coordinator:
        if self._coord is None:
            raise RuntimeError("the job scheduler is not started")
        return self._coord

    async def notes_changed(
        self, notes: Sequence[Note], *, export: bool = False, tune: bool = False
    ) -> None:
        for note in notes:
            await self.queue.enqueue(
                "index_note",
                note.id,
                tune,
                job_id=index_job_id(note.id, note.updated_at),
            )
        if export:
            await request_singleton(self.coord, self.queue, EXPORT)
        if tune and not notes:
            await request_singleton(self.coord, self.queue, TUNE)

    async def records_changed(self, record_ids: Sequence[str], *, export: bool = True) -> None:
        if record_ids:
            await self.queue.enqueue("index_records", sorted(set(record_ids)))
        if export:
            await request_singleton(self.coord, self.queue, EXPORT)

    async def request(self, name: str) -> bool:
        """Ask for a run of a singleton job (``export`` or ``tune``)."""
        return await request_singleton(self.coord, self.queue, name)
