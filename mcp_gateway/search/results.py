"""A chosen candidate as it appears in ``search_memory``'s answer."""

from __future__ import annotations

from typing import Any

from mcp_gateway.common.render import iso
from mcp_gateway.common.types import Note, SearchResult
from mcp_gateway.search.ranking import Candidate


def kind_of(cand: Candidate) -> str:
    return str(cand.payload.get("kind", "note"))


def note_result(note: Note, cand: Candidate | None, tags: list[str] | None = None) -> SearchResult:
    return SearchResult(
        id=note.id,
        kind="note",
        type=note.type,
        priority=note.priority,
        domain=note.domain,
        created_at=iso(note.created_at),
        distance=None if cand is None or cand.distance is None else round(cand.distance, 4),
        score=0.0 if cand is None else round(cand.score, 5),
        tags=list(tags or []),
        text=note.text,
    )


def record_result(record_id: str, view: dict[str, Any], cand: Candidate) -> SearchResult:
    return SearchResult(
        id=record_id,
        kind="record",
        type=str(view["type"]),
        priority="",
        domain="",
        created_at=iso(float(view["created_at"])),
        distance=None if cand.distance is None else round(cand.distance, 4),
        score=round(cand.score, 5),
        tags=[f"[{record_id}]", f"status={view.get('status', '')}"],
        title=str(view["title"]),
        text=str(view.get("content") or view["title"]),
    )
