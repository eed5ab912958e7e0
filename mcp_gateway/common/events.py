"""Activity-log events: one model per entry that jobs and the browser read back.

The services write them (``ActivityLog.append(event, **fields)``, which stamps ``ts``
and ``event``); re-ranking, tuning and the browser's insights read them through the
same models (``read``). The log is advisory and outlives versions, so reading checks
nothing: a field an old entry lacks reads as its default, and no entry fails a job.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self

from pydantic import BaseModel, ConfigDict

SEARCH = "search_memory"  # the assistant's searches: what re-ranking learns from
UI_SEARCH = "ui_search"  # a person browsing: never trains the jobs
ADD_NOTE = "add_note"
CHECKPOINT = "checkpoint"
USED = "used_memory"  # the assistant said it used these memories (services.learning)


class LoggedEvent(BaseModel):
    model_config = ConfigDict(extra="allow")

    ts: float = 0.0
    event: str = ""

    @classmethod
    def read(cls, entry: Mapping[str, Any]) -> Self:
        """``entry`` (one parsed log line) seen through this model, unchecked."""
        return cls.model_construct(**entry)

    def fields(self) -> dict[str, Any]:
        """What ``ActivityLog.append`` takes beside the event name."""
        return self.model_dump(exclude={"ts", "event"})


class NoteAdded(LoggedEvent):
    """``add_note`` / ``checkpoint``: a note was stored (or an exact repeat answered)."""

    id: str = ""
    type: str = ""
    priority: str = ""
    domain: str = ""
    text_preview: str = ""
    solved_query: str = ""  # set: the note solved a problem ("retrieved, then solved")
    latency_ms: float = 0.0


class Searched(LoggedEvent):
    """``search_memory`` / ``ui_search``: what a search asked and returned, for whom
    (``namespace``: the caller's own; entries written before the field have none)."""

    namespace: str = ""
    query: str = ""
    type: str = ""
    domain: str = ""
    top: int = 0
    hits: int | None = None  # every note retrieved, folded ones included
    result_ids: list[str] | None = None  # in rank order, folded ones after their result
    recent_ids: list[str] | None = None
    min_distance: dict[str, float] | None = None
    dense: bool = True
    # "strong", "weak" (no memory close enough) or "none" (nothing came back); entries
    # written before the field existed have none (then ``hits`` says whether it matched)
    match: str | None = None
    latency_ms: float = 0.0


class Used(LoggedEvent):
    """``used=[ids]``: memories the assistant used, credited in ``namespace`` (the
    caller's own); ``questions``: id -> the question each answered."""

    namespace: str = ""
    ids: list[str] | None = None
    questions: dict[str, str] | None = None
