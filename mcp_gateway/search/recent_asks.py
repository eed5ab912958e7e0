"""``RecentAsks``: which searches of a namespace showed which ids, for ``used=[ids]``.

The id must have been shown to that namespace in the last ``WINDOW_S``, and the
question of the newest search that showed it (not credited for it yet) is what the
memory answered.

The activity log is the record: every ``search_memory`` entry carries the caller's
namespace, its query and the ids it returned, and every ``used_memory`` entry the ids
credited. This process keeps its own searches in memory (the common case costs no
read); an id it does not find there is looked up in the log's last ``WINDOW_S``
(replayed: searches noted, credits spent), so a ``used=`` after a restart, or one that
reaches another gateway of a PostgreSQL deployment, still credits the question that
found the memory. A log only this process writes (the data dir's file) holds nothing
the memory lacks once the process is older than the window: it is read only before.
The rules do not change with the source: the caller's own namespace
only, one credit per showing, within the window (the readability of the memory is the
caller's business: ``services.learning``).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import anyio

from mcp_gateway.common.events import SEARCH, USED, Searched, Used

WINDOW_S = 30 * 60
ASKS_KEPT = 64

# the activity log's entries stamped at or after a time, oldest first
LogTail = Callable[[float], Iterable[Mapping[str, Any]]]


@dataclass(slots=True)
class Asked:
    at: float
    query: str
    shown: set[str]  # an id leaves once credited: one credit per showing


class RecentAsks:
    """Each namespace's newest searches: this process's in memory, the rest in the log."""

    def __init__(
        self,
        log: LogTail | None = None,
        *,
        own_since: float | None = None,
        window_s: float = WINDOW_S,
        kept: int = ASKS_KEPT,
    ) -> None:
        """``log``: the activity log's tail; ``own_since``: from when on this process
        alone writes it (None: other processes write it too, e.g. other gateways)."""
        self.log, self.own_since = log, own_since
        self.window_s, self.kept = window_s, kept
        self._asks: dict[str, deque[Asked]] = {}

    def note(self, namespace: str, query: str, shown: Iterable[str], now: float) -> None:
        asks = self._asks.setdefault(namespace, deque(maxlen=self.kept))
        asks.append(Asked(now, query, set(shown)))

    def question_for(self, namespace: str, memory_id: str, now: float) -> str | None:
        """The query of the newest search of ``namespace`` within the window that
        showed ``memory_id`` and was not credited for it yet (it is now); None when
        none did (of those this object holds)."""
        for asked in reversed(self._asks.get(namespace, ())):
            if asked.at < now - self.window_s:
                return None
            if memory_id in asked.shown:
                asked.shown.discard(memory_id)
                return asked.query
        return None

    async def questions_for(
        self, namespace: str, memory_ids: Sequence[str], now: float
    ) -> dict[str, str]:
        """Memory id -> the question it answered, for those of ``memory_ids`` a search of
        ``namespace`` showed in the window: this process's searches first, then (one
        read, only when some id is missing) the log's."""
        found = {}
        for memory_id in memory_ids:
            question = self.question_for(namespace, memory_id, now)
            if question is not None:
                found[memory_id] = question
        missing = [m for m in memory_ids if m not in found]
        if missing and self.log is not None and not self._all_own(now):
            logged = await anyio.to_thread.run_sync(self._logged, namespace, now)
            for memory_id in missing:
                question = logged.question_for(namespace, memory_id, now)
                if question is not None:
                    found[memory_id] = question
        return found

    def _all_own(self, now: float) -> bool:
        """Whether every search of the window is one this process made (and holds)."""
        return self.own_since is not None and now - self.window_s >= self.own_since

    def _logged(self, namespace: str, now: float) -> RecentAsks:
        """``namespace``'s asks as the log's window tells them: its searches noted, the
        credits given since spent (as they were when given)."""
        assert self.log is not None
        asks = RecentAsks(window_s=self.window_s, kept=self.kept)
        for entry in self.log(now - self.window_s):
            if entry.get("namespace") != namespace:
                continue  # another tenant's, or an entry written before the field
            if entry.get("event") == SEARCH:
                searched = Searched.read(entry)
                shown = [*(searched.result_ids or ()), *(searched.recent_ids or ())]
                asks.note(namespace, searched.query, shown, searched.ts)
            elif entry.get("event") == USED:
                used = Used.read(entry)
                for memory_id in used.ids or ():
                    asks.question_for(namespace, memory_id, used.ts)
        return asks
