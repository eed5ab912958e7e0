"""How long after its acknowledgement a new note became searchable by meaning.

``add_note`` acknowledges a note once it is committed; its index point follows just
after (``writebehind``). Two moments make it searchable by meaning: its static vector
in the index's fast pool (``index.fast_pool``, only with ``search.fast_first``), and
its first e5 vector (a draft or the exact one) in the index. The owner records both
per note, from the acknowledgement, and ``kioku status`` shows rolling quantiles over
the last ``KEPT`` notes beside the embedding backlog (``services.maintenance``).

Measured where the writes land (``LiveIndex.upsert``, ``fill_fast``): a point written
with a dense vector is the note's first e5 vector; the note's static vector pooled,
with its point or just after it (a new note's, off the ack's path), its fast vector.
Monotonic seconds, in memory, per process; a note this process did not acknowledge (an
import, another gateway's add) is not counted.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Container, Iterable

from pydantic import BaseModel

from mcp_gateway.common.types import IndexPoint

KEPT = 1000  # the quantiles are over this many recent notes
# notes acknowledged and not yet given a dense vector: the oldest go first (a note
# deleted before its vector, or a backlog this long, is dropped from the figures)
PENDING_KEPT = 20_000


class LagQuantiles(BaseModel):
    """Seconds from a note's acknowledgement to a vector of it in the index, over the
    ``count`` most recent notes that got one (at most ``KEPT``)."""

    count: int
    p50_s: float
    p95_s: float
    p99_s: float


class SearchableAfterAck(BaseModel):
    """``kioku status``'s ``searchable_after_ack``: None where no note got that vector
    yet (``fast``: always None with ``search.fast_first`` off)."""

    fast: LagQuantiles | None = None
    first_e5: LagQuantiles | None = None


class AckLags:
    def __init__(self, kept: int = KEPT) -> None:
        # point id -> [acknowledged at, whether its fast vector was counted]
        self._acked: dict[str, tuple[float, bool]] = {}
        self._fast: deque[float] = deque(maxlen=kept)
        self._first: deque[float] = deque(maxlen=kept)

    def acked(self, point_id: str) -> None:
        """The note of ``point_id`` was acknowledged now."""
        self._acked[point_id] = (time.monotonic(), False)
        while len(self._acked) > PENDING_KEPT:
            del self._acked[next(iter(self._acked))]

    def landed(self, points: Iterable[IndexPoint], pooled: Container[str] | None) -> None:
        """``points`` were written to the index; ``pooled``: the fast pool after the
        write (``in``: a point it holds), None where there is none."""
        now = time.monotonic()
        for p in points:
            seen = self._acked.get(p.id)
            if seen is None:
                continue
            if p.dense is not None:
                self._first.append(now - seen[0])
                del self._acked[p.id]
            elif pooled is not None and p.id in pooled:
                self.fast_landed(p.id)

    def fast_landed(self, point_id: str) -> None:
        """The fast vector of ``point_id`` was pooled now (``LiveIndex.fill_fast``)."""
        seen = self._acked.get(point_id)
        if seen is not None and not seen[1]:
            self._fast.append(time.monotonic() - seen[0])
            self._acked[point_id] = (seen[0], True)

    def figures(self) -> SearchableAfterAck:
        return SearchableAfterAck(fast=_quantiles(self._fast), first_e5=_quantiles(self._first))


def _quantiles(lags: Iterable[float]) -> LagQuantiles | None:
    ordered = sorted(lags)
    if not ordered:
        return None

    def q(x: float) -> float:
        return round(ordered[min(len(ordered) - 1, int(x * len(ordered)))], 4)

    return LagQuantiles(count=len(ordered), p50_s=q(0.5), p95_s=q(0.95), p99_s=q(0.99))
