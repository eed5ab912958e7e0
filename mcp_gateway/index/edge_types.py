"""qdrant-edge filters and payloads: how the embedded index speaks the engine's types.

``MatchValue(True/False)`` is converted to an integer by the bindings and never matches a
boolean payload, so the ``current`` flag is mirrored into a keyword field (``_current``)
that filters use; it is stripped from returned payloads (``index/edge.py``).
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

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
# indexed by older shards and never filtered on here: dropped at open
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


# A graph's quantized vectors (``rebuild/build.BUILD_QUANTIZATION``) steer the walk; its
# best ``oversampling x limit`` are rescored with the stored vectors, so a hit's score
# is the stored vector's cosine. Rescoring is asked for: the engine's default for
# these shards does not (recall@10 0.89 at 100k, rescored 0.998). An exact search
# ignores them: exact stays exact.
RESCORED = qe.QuantizationSearchParams(rescore=True, oversampling=2.0)
UNQUANTIZED = qe.QuantizationSearchParams(ignore=True)


def search_params(exact: bool, hnsw_ef: int) -> qe.SearchParams:
    """A dense request's parameters: an exact scan, or a graph walk at ``hnsw_ef``
    (quantized where the graph has them, then rescored)."""
    if exact:
        return qe.SearchParams(exact=True, quantization=UNQUANTIZED)
    return qe.SearchParams(exact=False, hnsw_ef=hnsw_ef, quantization=RESCORED)


def view_requests(
    views: Sequence[Sequence[float]],
    using: str,
    qfilter: qe.Filter | None,
    params: qe.SearchParams,
    limit: int,
) -> list[qe.QueryRequest]:
    """A dense channel's requests for its query views. An exact scan: one request a
    view (the batch scores them in one pass over the points). Through the graph: one
    request for all of them (``RecommendBestScore``: each point scored by its best
    view, in one traversal; one per view cost each a whole traversal, ~2 ms at 100k).
    Its scores are the engine's transform of that cosine: ``best_view_cosine``."""
    if len(views) == 1 or params.exact:
        queries = [qe.Query.Nearest(list(v), using=using) for v in views]
    else:
        best = qe.RecommendQuery([list(v) for v in views], [])
        queries = [qe.Query.RecommendBestScore(best, using=using)]
    return [
        qe.QueryRequest(limit=limit, query=q, filter=qfilter, with_payload=False, params=params)
        for q in queries
    ]


def best_view_cosine(found: Scored) -> Scored:
    """The cosines behind a ``RecommendBestScore`` answer with no negative example: the
    engine reports ``0.5 * (x / (1 + |x|) + 1)`` of the best view's cosine ``x``
    (its "scaled fast sigmoid"), a monotone map, so the order is the cosine's."""
    out: Scored = []
    for pid, score in found:
        f = 2.0 * score - 1.0
        out.append((pid, f / (1.0 - abs(f))))
    return out


def best_scored(views: Sequence[Scored], limit: int) -> Scored:
    """Several query views' hits merged by each point's best score, best first (the
    ints merged before any hit is built: ``index.base.best_of_views`` on raw results)."""
    if len(views) == 1:
        return views[0]
    best: dict[int, float] = {}
    for found in views:
        for pid, score in found:
            if score > best.get(pid, -math.inf):
                best[pid] = score
    return sorted(best.items(), key=lambda item: item[1], reverse=True)[:limit]


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


class Epoched(Protocol):
    """What the census needs of the payload cache (``edge_cache.PayloadCache``)."""

    @property
    def epoch(self) -> int:
        """Moves whenever a write to the shard begins or ends."""
        ...


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

    def __init__(self, payloads: Epoched) -> None:
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
