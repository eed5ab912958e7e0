""" "Is it helping?": figures read from the activity log (pure functions, no I/O).

- searches per day and their hit rate (a search whose answer matched strongly is a hit:
  a weak match, the few closest memories shown as not an answer, is a miss, as is one
  with no result; an entry logged before the match level was, a hit when it had results);
- which memories were retrieved shortly before a note with a ``solved_query`` was
  added: the re-ranking job's own rule (``solve_credit``);
- memories never retrieved by the assistant.

Only the assistant's ``search_memory`` events count; the browser's own searches are
logged as ``ui_search`` and kept apart.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from mcp_gateway.common.events import SEARCH, UI_SEARCH, NoteAdded, Searched
from mcp_gateway.common.types import Note
from mcp_gateway.jobs.solve_credit import SolveCredit, is_solution, result_ids


@dataclass(slots=True)
class Day:
    day: str  # YYYY-MM-DD (UTC)
    searches: int = 0
    hits: int = 0


@dataclass(slots=True)
class Solution:
    note_id: str
    at: float
    solved_query: str
    credited: list[str] = field(default_factory=list)


@dataclass(slots=True)
class Insights:
    days: list[Day]
    searches: int
    hits: int
    retrieved: Counter[str]
    solutions: list[Solution]
    empty_queries: list[tuple[float, str]]  # newest first
    ui_searches: int

    @property
    def hit_rate(self) -> float | None:
        return self.hits / self.searches if self.searches else None


def _day(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d")


def summarise(entries: Iterable[dict[str, Any]], *, days: int, now: float) -> Insights:
    """Entries in log order (oldest first)."""
    today = datetime.fromtimestamp(now, UTC).date()
    window = [(today - timedelta(days=days - 1 - i)).isoformat() for i in range(days)]
    per_day = {d: Day(d) for d in window}
    retrieved: Counter[str] = Counter()
    solutions: list[Solution] = []
    empty: list[tuple[float, str]] = []
    credit = SolveCredit()
    searches = hits = ui = 0
    for entry in entries:
        event, ts = entry.get("event"), float(entry.get("ts", 0.0))
        credited = credit.feed(entry)
        if event == UI_SEARCH:
            ui += 1
        elif event == SEARCH:
            ids = result_ids(entry)
            hit = matched(entry, ids)
            searches += 1
            hits += hit
            retrieved.update(ids)
            bucket = per_day.get(_day(ts))
            if bucket is not None:
                bucket.searches += 1
                bucket.hits += hit
            if not hit:
                empty.append((ts, str(Searched.read(entry).query)))
        elif is_solution(entry):
            added = NoteAdded.read(entry)
            solutions.append(Solution(str(added.id), ts, str(added.solved_query), credited or []))
    return Insights(
        days=list(per_day.values()),
        searches=searches,
        hits=hits,
        retrieved=retrieved,
        solutions=solutions[::-1],
        empty_queries=empty[::-1],
        ui_searches=ui,
    )


def matched(entry: dict[str, Any], ids: Sequence[str]) -> bool:
    """Whether a logged search found what it asked for (``Searched.match``)."""
    level = entry.get("match")
    if level is not None:
        return level == "strong"
    return int(entry.get("hits", len(ids)) or 0) > 0


def never_retrieved(notes: Sequence[Note], retrieved: Counter[str]) -> list[Note]:
    """Live notes no assistant search ever returned, oldest first (checkpoints aside:
    they are progress logs, not memories meant to be recalled)."""
    out = [n for n in notes if n.id not in retrieved and n.type != "checkpoint"]
    return sorted(out, key=lambda n: n.created_at)
