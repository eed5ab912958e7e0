"""qdrant-edge filters and payloads: how the embedded index speaks the engine's types.

``MatchValue(True/False)`` is converted to an integer by the bindings and never matches a
boolean payload, so the ``current`` flag is mirrored into a keyword field (``_current``)
that filters use; it is stripped from returned payloads (``index/edge.py``).
"""

from __future__ import annotations

import math
import threading
import uuid
from array import array
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import qdrant_edge as qe

from mcp_gateway.common.types import IndexFilter, IndexHit
from mcp_gateway.index.base import (
    BOOL_FIELDS,
    FLOAT_FIELDS,
    KEYWORD_FIELDS,
    VISIBLE,
    match_any_terms,
    needs_current_condition,
)

CURRENT_MIRROR = "_current"
# The fields this backend's filters (``build_filter``) and the namespace census's facet
# read: each gets a keyword index. The engine reads every index's files in whole when a
# shard opens (~5 MB each, however few the points; ``memory=Cold`` does not change that
# for a plain segment) and keeps a map per index in memory, so only these are indexed.
INDEXED_FIELDS = ("kind", "type", "domain", "namespace", VISIBLE, CURRENT_MIRROR)
# indexed by shards made before round 19 and never filtered on here: dropped at open
DROPPED_INDEXES = tuple(
    f for f in (*KEYWORD_FIELDS, *BOOL_FIELDS, *FLOAT_FIELDS) if f not in INDEXED_FIELDS
)


def _current_mirror(value: Any) -> str:
    # Only an explicit False hides a record; missing/None/True all count as current.
    return "false" if value is False else "true"


def with_mirror(payload: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(payload)
    if "current" in out:
        out[CURRENT_MIRROR] = _current_mirror(out["current"])
    return out


def without_mirror(payload: Mapping[str, Any] | None) -> dict[str, Any]:
    out = dict(payload or {})  # a C-level copy: this runs for every hit of every search
    out.pop(CURRENT_MIRROR, None)
    return out


def _any(key: str, values: tuple[str, ...]) -> qe.FieldCondition:
    # one value (a search's usual namespace, type or domain) as MatchValue: the engine
    # checks it per point ~3x faster than a one-element MatchAny (exact dense search
    # at 10k points: 0.96 vs 1.25 ms, 0.83 with no filter)
    if len(values) == 1:
        return qe.FieldCondition(key, match=qe.MatchValue(values[0]))
    return qe.FieldCondition(key, match=qe.MatchAny(list(values)))


def create_payload_indexes(shard: qe.EdgeShard) -> None:
    """The payload indexes filters use, and no other. Idempotent: re-creating one is a
    no-op; an index a shard no longer needs is dropped once (through the WAL)."""
    for name in INDEXED_FIELDS:
        shard.update(qe.UpdateOperation.create_field_index(name, qe.PayloadSchemaType.Keyword))
    for name in set(shard.info().payload_schema).intersection(DROPPED_INDEXES):
        shard.update(qe.UpdateOperation.delete_field_index(name))


def build_filter(flt: IndexFilter | None) -> qe.Filter | None:
    if flt is None:
        return None
    must: list[Any] = [_any(key, values) for key, values in match_any_terms(flt)]
    must_not: list[Any] = []
    if flt.exclude_types:
        must_not.append(_any("type", flt.exclude_types))
    if needs_current_condition(flt):
        must_not.append(qe.FieldCondition(CURRENT_MIRROR, match=qe.MatchValue("false")))
    if not must and not must_not:
        return None
    return qe.Filter(must=must or None, must_not=must_not or None)


# Point ids are UUIDs (``types.point_id``); between the engine and ``hits`` one travels
# as its 128-bit integer: a UUID hashes in Python (``hash(self.int)``), an int in C, and
# a search looks each hit up four to five times (10k notes, every payload kept: the
# payload read 0.19 -> ~0.05 ms).
Payloads = dict[int, tuple[str, dict[str, Any]]]  # point id as int -> (id as str, payload)
Scored = list[tuple[int, float]]  # one channel's (point id as int, score), best first


def int_id(pid: int | uuid.UUID | str) -> int:
    """A point id the engine handed back, as the int ``Payloads`` and ``Scored`` use."""
    return pid.int if isinstance(pid, uuid.UUID) else uuid.UUID(str(pid)).int


def scored(points: Sequence[qe.ScoredPoint]) -> Scored:
    # ``p.id`` builds a new UUID object at every read: read once a hit
    return [(int_id(p.id), p.score) for p in points]


def best_scored(views: Sequence[Scored], limit: int) -> Scored:
    """Several query views' hits merged by each point's best score, best first (the
    ints merged before any hit is built: ``ranking.best_of_views`` on raw results)."""
    if len(views) == 1:
        return views[0]
    best: dict[int, float] = {}
    for found in views:
        for pid, score in found:
            if score > best.get(pid, -math.inf):
                best[pid] = score
    return sorted(best.items(), key=lambda item: item[1], reverse=True)[:limit]


class PayloadCache:
    """Payloads that searches read, kept until the next write to the shard.

    Search hits come back without payloads, and reading them is most of a search's
    engine time (2k notes: ~100 distinct hits, ~1.4 ms of ~3 ms; the engine converts
    every payload and builds a UUID per id). Between writes, searches keep meeting the
    same notes, so a read costs only the ids not seen since the last write.

    Every write calls ``changed`` before and after it runs; a read stores what it got
    only if no write began or ended while it ran, so the cache never holds a payload
    older than the last write. Thread-safe: reads and writes run in worker threads."""

    def __init__(self, size: int = 10_000) -> None:
        self.size = size
        self._lock = threading.Lock()
        self._epoch = 0
        # "payloads": engine id -> (str id, payload); "vectors": str id -> dense vector
        # of a ranked note (reorder.newer_first)
        self._kept: dict[str, dict[Any, Any]] = {"payloads": {}, "vectors": {}}

    def changed(self) -> None:
        with self._lock:
            self._epoch += 1
            self._kept = {"payloads": {}, "vectors": {}}

    @property
    def epoch(self) -> int:
        """Moves whenever a write begins or ends."""
        with self._lock:
            return self._epoch

    def _known(self, kind: str, ids: Iterable[Any]) -> tuple[int, dict[Any, Any], list[Any]]:
        """The epoch, what is kept of ``ids``, and the ids to read."""
        with self._lock:
            epoch, kept = self._epoch, self._kept[kind]
        known: dict[Any, Any] = {}
        missing: list[Any] = []
        for i in ids:
            found = kept.get(i)
            if found is None:
                missing.append(i)
            else:
                known[i] = found
        return epoch, known, missing

    def _keep(self, kind: str, epoch: int, fresh: Mapping[Any, Any]) -> None:
        """Keep ``fresh`` unless a write began or ended since ``epoch`` was read."""
        with self._lock:
            if self._epoch != epoch:
                return
            if len(self._kept[kind]) + len(fresh) > self.size:
                self._kept[kind] = {}
            self._kept[kind].update(fresh)

    def known_vectors(self, ids: Sequence[str]) -> tuple[dict[str, Sequence[float]], list[str]]:
        """The dense vectors of ``ids`` read since the last write, and the ids to read."""
        _, known, missing = self._known("vectors", ids)
        return known, missing

    def read_vectors(
        self, shard: qe.EdgeShard, ids: list[Any], name: str
    ) -> dict[str, Sequence[float]]:
        """The ``name`` vectors of ``ids`` that have one, from the shard; kept like payloads
        (as float32 arrays: the shard stores no more, and a Python list of 384 floats
        takes 12 KB against 1.5 KB, times up to ``size`` kept vectors)."""
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
        fresh = {
            int_id(p.id): (str(p.id), without_mirror(p.payload))
            for p in shard.retrieve([uuid.UUID(int=i) for i in missing], True, False)
        }
        self._keep("payloads", epoch, fresh)
        return {**known, **fresh}


def stored_payloads(shard: qe.EdgeShard, ids: list[Any]) -> dict[str, dict[str, Any]]:
    """The payload of each of ``ids`` in the shard, as written (no search mirror)."""
    return {str(p.id): without_mirror(p.payload) for p in shard.retrieve(ids, True, False)}


def present(shard: qe.EdgeShard, ids: list[Any], name: str) -> dict[str, bool]:
    """For each of ``ids`` in the shard: whether it has the ``name`` vector. Asked, not
    read: fetching the vectors to look held the GIL ~11 ms a 500-id page (reconcile
    pages through every note), a filtered scroll ~4.6 ms."""
    known = {str(r.id) for r in shard.retrieve(ids, False, False)}
    embedded = qe.Filter(must=[qe.HasIdCondition(set(ids)), qe.HasVectorCondition(name)])
    request = qe.ScrollRequest(
        limit=len(ids), filter=embedded, with_payload=False, with_vector=False
    )
    with_vector = {str(p.id) for p in shard.scroll(request)[0]}
    return {pid: pid in with_vector for pid in known}


class NamespaceCensus:
    """Which namespaces the shard's points belong to, asked again after every write.

    A search's namespace condition is checked per point by an exact dense search
    (10k points: 0.96 ms with it, 0.83 without, for each query view). When every
    namespace in the shard is one the search may read -- one user, one namespace, the
    usual case -- the condition excludes nothing and is left out. The
    answer comes from the payload index's value counts (~0.04 ms), so it may name a
    namespace whose points were all deleted (the condition stays: safe); it is kept
    until the next write begins or ends. A point written between the census and the
    search is caught by ``hits``, which drops every hit outside the search's
    namespaces whenever the condition was left out."""

    MAX_VALUES = 1000  # more namespaces than this: never leave the condition out

    def __init__(self, payloads: PayloadCache) -> None:
        self._payloads = payloads
        # (the epoch it was taken at, the namespaces present): one object, so a
        # thread never reads one census's epoch with another's namespaces
        self._census: tuple[int, frozenset[str] | None] = (-1, None)

    @property
    def present(self) -> frozenset[str] | None:
        """The namespaces the last census found (None: unknown)."""
        return self._census[1]

    def covered_by(self, shard: qe.EdgeShard, namespaces: Sequence[str]) -> bool:
        """Whether every point in ``shard`` is in one of ``namespaces`` (worker thread)."""
        epoch = self._payloads.epoch
        taken, present = self._census
        if taken != epoch:
            request = qe.FacetRequest("namespace", limit=self.MAX_VALUES, exact=False)
            values = [str(h.value) for h in shard.facet(request).hits]
            # none (no payload index, an empty shard) or too many: keep the condition
            present = frozenset(values) if 0 < len(values) < self.MAX_VALUES else None
            self._census = (epoch, present)
        return present is not None and present.issubset(namespaces)


def hits(
    points: Scored, found: Payloads, namespaces: frozenset[str] | None = None
) -> list[IndexHit]:
    """``points`` with their payloads; ``namespaces``: only those in one of them (the
    search left its namespace condition out: ``NamespaceCensus``)."""
    out: list[IndexHit] = []
    for pid, score in points:
        entry = found.get(pid)
        if entry is None:  # a point deleted between the search and the payload read
            continue
        if namespaces is not None and entry[1].get("namespace") not in namespaces:
            continue
        # a shared payload (the cache keeps it): nothing downstream changes it
        out.append(IndexHit(id=entry[0], score=score, payload=entry[1]))
    return out
