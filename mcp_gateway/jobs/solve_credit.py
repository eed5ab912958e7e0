""" "Retrieved, then solved": the one rule that credits a memory with a solution.

A memory returned by the assistant's ``search_memory`` is credited when, within
``SOLVE_WINDOW_S`` after that search, a note with a ``solved_query`` is added: the
problem at hand got solved, and what was retrieved just before it likely helped. Each
retrieval is credited for one solution at most, and a note never credits itself.

The re-ranking job (``jobs/priors.py``) turns the credits into priors; the browser's
"Is it helping?" page (``ui/insights.py``) shows them. Both read the activity log
through ``SolveCredit`` so they can never disagree.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from typing import Any

from mcp_gateway.common.events import ADD_NOTE, SEARCH, LoggedEvent, NoteAdded, Searched

SOLVE_WINDOW_S = 30 * 60


def result_ids(entry: Mapping[str, Any]) -> list[str]:
    """The memory ids a logged ``search_memory`` returned, in rank order."""
    return [str(i) for i in Searched.read(entry).result_ids or []]


def is_solution(entry: Mapping[str, Any]) -> bool:
    added = NoteAdded.read(entry)
    return added.event == ADD_NOTE and bool(added.solved_query)


class SolveCredit:
    """Fed the activity log's entries in time order; ``feed`` answers, for an entry
    that adds a solution, the ids it credits (in the order they were retrieved), and
    None for every other entry."""

    def __init__(self, window_s: float = SOLVE_WINDOW_S) -> None:
        self.window_s = window_s
        self._recent: deque[tuple[float, list[str]]] = deque()

    def feed(self, entry: Mapping[str, Any]) -> list[str] | None:
        logged = LoggedEvent.read(entry)
        ts = float(logged.ts)
        while self._recent and self._recent[0][0] < ts - self.window_s:
            self._recent.popleft()
        if logged.event == SEARCH:
            self._recent.append((ts, result_ids(entry)))
            return None
        if not is_solution(entry):
            return None
        own = str(NoteAdded.read(entry).id)
        credited = list(dict.fromkeys(i for _, ids in self._recent for i in ids if i != own))
        self._recent.clear()  # each retrieval is credited for one solution at most
        return credited
