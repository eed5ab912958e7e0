""" "Is it helping?": the learning curve, from the activity log (pure, no I/O).

A search *found and used* is one whose question the assistant later credited
(``used_memory``: it named a memory it used, and this search's question is the one the
memory answered) within ``WINDOW_S``. The share of such searches per day is the curve
a memory that learns from use should lift over weeks.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from typing import Any

from mcp_gateway.common.events import SEARCH, USED, Searched, Used
from mcp_gateway.ui.insights import Day

WINDOW_S = 30 * 60


def _day(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d")


def found_and_used(entries: Iterable[dict[str, Any]], *, days: int, now: float) -> list[Day]:
    """Per day of the last ``days`` (oldest first): searches, and of them (``hits``)
    those found and used. Entries in log order."""
    today = datetime.fromtimestamp(now, UTC).date()
    window = [(today - timedelta(days=days - 1 - i)).isoformat() for i in range(days)]
    per_day = {d: Day(d) for d in window}
    waiting: dict[str, list[tuple[float, Day]]] = defaultdict(list)
    for entry in entries:
        event, ts = entry.get("event"), float(entry.get("ts", 0.0) or 0.0)
        if event == SEARCH:
            bucket = per_day.get(_day(ts))
            if bucket is not None:
                bucket.searches += 1
                waiting[str(Searched.read(entry).query)].append((ts, bucket))
        elif event == USED:
            for question in set((Used.read(entry).questions or {}).values()):
                asked = waiting.get(str(question))
                while asked and asked[-1][0] < ts - WINDOW_S:
                    asked.pop()
                if asked:
                    asked.pop()[1].hits += 1
    return list(per_day.values())
