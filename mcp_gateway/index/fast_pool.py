"""Pending points' fast vectors: what makes a note semantically searchable at its ack.

A note's first dense vector (an e5 draft) costs ~19 ms of a core; in a burst over MCP
the queue's tail waits ~10 s for it (bench/LOG.md, "burst over MCP"). Until it lands
the note is only lexically indexed. Its static vector (``embedders.static``, ~0.1-1 ms)
is computed with its lexical-only point (``IndexPoint.fast``), or for a new note just
after it, off the ack's path (``expect``, then ``fill``: tens of ms after the ack in a
burst, bench/LOG.md, "fast first: the ack, and when a note is searchable"), and held
here, in memory, for exactly as long as the point has no dense vector: ``LiveIndex``
adds a point written without one and drops it when its dense vector is written, or
when it is deleted. Search scores the pool by brute force (it is at most a backlog: a few
thousand rows) and fuses its hits for pending notes only (``search.fast_first``).

Per process, in memory: each gateway fills its own from the points it writes (its own
adds and what the change feed brings it), and ``open`` rebuilds it from the truth store
for the notes still pending.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from mcp_gateway.common.types import IndexFilter, IndexHit, IndexPoint
from mcp_gateway.index.base import match_any_terms, needs_current_condition

GROW = 256  # rows added to the matrix at a time


class FastPool:
    def __init__(self, dim: int) -> None:
        self.dim = dim
        self._matrix = np.zeros((0, dim), dtype=np.float32)
        self._ids: list[str] = []  # row -> point id
        self._rows: dict[str, int] = {}  # point id -> row
        self._payloads: list[dict[str, Any]] = []
        self._empty_since: float | None = time.monotonic()
        # new notes' points written without their fast vector, which follows off the
        # ack's path (``expect``, ``fill``): point id -> payload
        self._expected: dict[str, dict[str, Any]] = {}

    def __len__(self) -> int:
        return len(self._ids)

    def __contains__(self, point_id: object) -> bool:
        return point_id in self._rows

    def empty_for(self) -> float:
        """Seconds the pool has been empty (0 while it holds or expects a point)."""
        if self._empty_since is None or self._expected:
            return 0.0
        return time.monotonic() - self._empty_since

    def expect(self, point_id: str, payload: dict[str, Any]) -> None:
        """The point just written without a dense vector gets its fast vector later
        (``fill``), unless its dense vector lands first or it is deleted (``write``,
        ``discard``)."""
        self._expected[point_id] = payload

    def expects(self, point_id: str) -> bool:
        return point_id in self._expected

    def fill(self, point_id: str, vector: Sequence[float] | None) -> bool:
        """Pool an expected point's fast vector (None: it has none); whether it was
        pooled (False: not expected any more)."""
        payload = self._expected.pop(point_id, None)
        if payload is None or vector is None or len(vector) != self.dim:
            return False
        self.put(point_id, vector, payload)
        return True

    def write(self, points: Iterable[IndexPoint]) -> None:
        """Hold each point written without a dense vector that has a fast one; drop
        every other written point (its dense vector landed, or it has no fast one)."""
        for p in points:
            if p.dense is None and p.fast is not None and len(p.fast) == self.dim:
                self.put(p.id, p.fast, p.payload)
            else:
                self.discard([p.id])

    def put(self, point_id: str, vector: Sequence[float], payload: dict[str, Any]) -> None:
        row = self._rows.get(point_id)
        if row is None:
            row = len(self._ids)
            if row == len(self._matrix):
                grown = np.zeros((row + GROW, self.dim), dtype=np.float32)
                grown[:row] = self._matrix[:row]
                self._matrix = grown
            self._ids.append(point_id)
            self._empty_since = None
            self._payloads.append(payload)
            self._rows[point_id] = row
        self._matrix[row] = vector
        self._payloads[row] = payload

    def set_payload(self, ids: Sequence[str], payload: Mapping[str, Any]) -> None:
        for point_id in ids:
            row = self._rows.get(point_id)
            if row is not None:
                self._payloads[row] = {**self._payloads[row], **payload}
            if point_id in self._expected:
                self._expected[point_id] = {**self._expected[point_id], **payload}

    def discard(self, ids: Iterable[str]) -> None:
        """Drop these points (absent ones are ignored): the last row moves into the gap."""
        for point_id in ids:
            self._expected.pop(point_id, None)
            row = self._rows.pop(point_id, None)
            if row is None:
                continue
            last = len(self._ids) - 1
            if row != last:
                moved = self._ids[last]
                self._ids[row], self._payloads[row] = moved, self._payloads[last]
                self._matrix[row] = self._matrix[last]
                self._rows[moved] = row
            self._ids.pop()
            self._payloads.pop()
        if not self._ids:
            if self._empty_since is None:
                self._empty_since = time.monotonic()
            if len(self._matrix) > GROW:
                self._matrix = np.zeros((0, self.dim), dtype=np.float32)

    def clear(self) -> None:
        self.discard(list(self._ids))

    def search(
        self,
        query: Sequence[float],
        flt: IndexFilter,
        limit: int,
        reads: frozenset[str] | None = None,
    ) -> list[IndexHit]:
        """The best ``limit`` pooled points by cosine that meet ``flt``; ``reads``: the
        scripts (payload ``script``, absent: "latin") the fast model can read, None:
        all. Payloads are the points' own (``dense`` False)."""
        n = len(self._ids)
        if not n or limit <= 0:
            return []
        sims = self._matrix[:n] @ np.asarray(query, dtype=np.float32)
        order = np.argsort(-sims)
        out: list[IndexHit] = []
        for row in order:
            payload = self._payloads[row]
            if not _matches(payload, flt) or (
                reads is not None and payload.get("script", "latin") not in reads
            ):
                continue
            out.append(IndexHit(self._ids[row], float(sims[row]), payload))
            if len(out) >= limit:
                break
        return out


def _matches(payload: Mapping[str, Any], flt: IndexFilter) -> bool:
    """``flt`` as the index backends apply it (``index.base.match_any_terms``)."""
    for key, values in match_any_terms(flt):
        if payload.get(key) not in values:
            return False
    if needs_current_condition(flt) and payload.get("current") is False:
        return False
    return not (flt.exclude_types and payload.get("type") in flt.exclude_types)
