"""``RecentAsks`` remembers each namespace's last searches for ``used=[ids]``: the id
must have been shown to that namespace in the last ``WINDOW_S``, and the question of
the newest search that showed it is what the memory answered.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass

WINDOW_S = 30 * 60
ASKS_KEPT = 64


@dataclass(slots=True)
class Asked:
    at: float
    query: str
    shown: set[str]  # an id leaves once credited: one credit per showing


class RecentAsks:
    """Each namespace's newest searches (in process: the owner serves every door)."""

    def __init__(self, window_s: float = WINDOW_S, kept: int = ASKS_KEPT) -> None:
        self.window_s, self.kept = window_s, kept
        self._asks: dict[str, deque[Asked]] = {}

    def note(self, namespace: str, query: str, shown: Iterable[str], now: float) -> None:
        asks = self._asks.setdefault(namespace, deque(maxlen=self.kept))
        asks.append(Asked(now, query, set(shown)))

    def question_for(self, namespace: str, memory_id: str, now: float) -> str | None:
        """The query of the newest search of ``namespace`` within the window that
        showed ``memory_id`` and was not credited for it yet (it is now); None when
        none did."""
        for asked in reversed(self._asks.get(namespace, ())):
            if asked.at < now - self.window_s:
                return None
            if memory_id in asked.shown:
                asked.shown.discard(memory_id)
                return asked.query
        return None
