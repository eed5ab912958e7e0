"""What searches read from the embedded index, kept until the next write to the shard.

Search hits come back without payloads, and reading them is most of a search's engine
time once the hits are many (the engine converts every payload and builds a UUID per
id: ~10 us a point, ~1.5-2.8 ms for the ~160 distinct hits of a search at 100k notes).
Between writes, searches keep meeting the same notes, so a read costs only the ids not
kept. The cache keeps the most recently used ones: a full cache drops its oldest, not
everything (which, at 100k notes, emptied it every ~60 searches).
"""

from __future__ import annotations

import sys
import threading
import uuid
from array import array
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import qdrant_edge as qe

from mcp_gateway.index.base import KEYWORD_FIELDS
from mcp_gateway.index.edge_types import CURRENT_MIRROR, Payloads, int_id

# payload fields whose values repeat across notes (a namespace, a type): one string
# object for each distinct value, shared by every payload kept
_REPEATED = frozenset((*KEYWORD_FIELDS, "script")) - {"source_id"}
_SHARED_MAX = 4096  # distinct repeated values shared at most (then kept as they come)


class _Shared:
    """One object per distinct field name and repeated value: the engine makes a new
    string for every key and value of every payload (~0.8 KB of a 1.56 KB payload,
    10k notes measured). Bounded: past ``_SHARED_MAX`` values new ones are kept as
    they come."""

    def __init__(self) -> None:
        self.values: dict[str, str] = {}
        # a payload's field names, as the engine made them -> the shared names and the
        # positions of the fields with repeated values; payloads have a handful of shapes
        self._shapes: dict[tuple[str, ...], tuple[tuple[str, ...], tuple[int, ...]]] = {}

    def shape(self, keys: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[int, ...]]:
        found = self._shapes.get(keys)
        if found is None:
            names = tuple(sys.intern(k) for k in keys)
            found = (names, tuple(i for i, k in enumerate(names) if k in _REPEATED))
            if len(self._shapes) < _SHARED_MAX:
                self._shapes[keys] = found
        return found


_shared = _Shared()


def compact(payload: Mapping[str, Any] | None) -> dict[str, Any]:
    """``payload`` as searches see it (no search mirror), its keys and repeated values
    shared with every other payload kept. It runs for every note a search reads from
    the engine: ~4-5 us a payload on a loaded core against ~0.2 for a plain copy, for
    half the memory (bench/LOG.md, "scale at 100k")."""
    if not payload:
        return {}
    names, repeated = _shared.shape(tuple(payload))
    values = list(payload.values())
    seen = _shared.values
    keep = seen.setdefault if len(seen) < _SHARED_MAX else seen.get
    for i in repeated:
        value = values[i]
        if type(value) is str:
            values[i] = keep(value, value)
    out = dict(zip(names, values, strict=True))
    out.pop(CURRENT_MIRROR, None)
    return out


class PayloadCache:
    """Payloads that searches read (and dense vectors of ranked notes), kept until the
    next write to the shard: at most ``size`` payloads and ``vector_size`` vectors, the
    most recently read or met.

    Every write calls ``changed`` before and after it runs; a read stores what it got
    only if no write began or ended while it ran, so the cache never holds a payload
    older than the last write. Thread-safe: reads and writes run in worker threads."""

    def __init__(self, size: int = 24_000, vector_size: int = 10_000) -> None:
        self.size, self.vector_size = size, vector_size
        self._lock = threading.Lock()
        self._epoch = 0
        # "payloads": engine id -> (str id, payload); "vectors": str id -> dense vector
        # of a ranked note (reorder.newer_first)
        self._kept: dict[str, OrderedDict[Any, Any]] = self._empty()

    @staticmethod
    def _empty() -> dict[str, OrderedDict[Any, Any]]:
        return {"payloads": OrderedDict(), "vectors": OrderedDict()}

    def changed(self) -> None:
        with self._lock:
            self._epoch += 1
            self._kept = self._empty()

    @property
    def epoch(self) -> int:
        """Moves whenever a write begins or ends."""
        with self._lock:
            return self._epoch

    def __len__(self) -> int:
        """Payloads kept now."""
        with self._lock:
            return len(self._kept["payloads"])

    def _known(self, kind: str, ids: Iterable[Any]) -> tuple[int, dict[Any, Any], list[Any]]:
        """The epoch, what is kept of ``ids`` (now the most recently used), and the
        ids to read."""
        known: dict[Any, Any] = {}
        missing: list[Any] = []
        with self._lock:
            epoch, kept = self._epoch, self._kept[kind]
            for i in ids:
                found = kept.get(i)
                if found is None:
                    missing.append(i)
                else:
                    known[i] = found
                    kept.move_to_end(i)
        return epoch, known, missing

    def _keep(self, kind: str, epoch: int, fresh: Mapping[Any, Any]) -> None:
        """Keep ``fresh`` unless a write began or ended since ``epoch`` was read; past
        the bound, the least recently used go."""
        bound = self.size if kind == "payloads" else self.vector_size
        with self._lock:
            if self._epoch != epoch:
                return
            kept = self._kept[kind]
            kept.update(fresh)
            for _ in range(len(kept) - bound):
                kept.popitem(last=False)

    def known_vectors(self, ids: Sequence[str]) -> tuple[dict[str, Sequence[float]], list[str]]:
        """The dense vectors of ``ids`` read since the last write, and the ids to read."""
        _, known, missing = self._known("vectors", ids)
        return known, missing

    def read_vectors(
        self, shard: qe.EdgeShard, ids: list[Any], name: str
    ) -> dict[str, Sequence[float]]:
        """The ``name`` vectors of ``ids`` that have one, from the shard; kept like payloads
        (as float32 arrays: the shard stores no more, and a Python list of 384 floats
        takes 12 KB against 1.5 KB, times up to ``vector_size`` kept vectors)."""
        epoch = self._known("vectors", ())[0]
        found: dict[str, Sequence[float]] = {}
        for r in shard.retrieve(ids, False, [name]):
            vector: Any = r.vector.get(name) if isinstance(r.vector, dict) else None
            if vector is not None:
                found[str(r.id)] = array("f", vector)
        self._keep("vectors", epoch, found)
        return found

    def read(self, shard: qe.EdgeShard, ids: set[int]) -> Payloads:
        """Payloads of ``ids`` (point ids as ints); one missing from the shard is absent."""
        epoch, known, missing = self._known("payloads", ids)
        if not missing:
            return known
        fresh: Payloads = {}
        for p in shard.retrieve([uuid.UUID(int=i) for i in missing], True, False):
            pid = p.id  # a new UUID object at every read
            fresh[int_id(pid)] = (str(pid), compact(p.payload))
        self._keep("payloads", epoch, fresh)
        return {**known, **fresh}
