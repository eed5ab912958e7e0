"""qdrant-edge filters and payloads: how the embedded index speaks the engine's types.

``MatchValue(True/False)`` is converted to an integer by the bindings and never matches a
boolean payload, so the ``current`` flag is mirrored into a keyword field (``_current``)
that filters use; it is stripped from returned payloads (``index/edge.py``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import qdrant_edge as qe

from ..types import IndexFilter, IndexHit
from .base import match_any_terms, needs_current_condition

CURRENT_MIRROR = "_current"


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
    return qe.FieldCondition(key, match=qe.MatchAny(list(values)))


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


Payloads = dict[Any, dict[str, Any]]  # point id (as the engine returns it) -> payload


def payloads(shard: qe.EdgeShard, ids: set[Any]) -> Payloads:
    """The payloads of ``ids``, read once (search hits come back without them)."""
    if not ids:
        return {}
    return {p.id: without_mirror(p.payload) for p in shard.retrieve(list(ids), True, False)}


def hits(points: Sequence[qe.ScoredPoint], found: Payloads) -> list[IndexHit]:
    # ``p.id`` builds a new UUID object at every read: read it once a hit (a search
    # reads ~150 hits; three reads each cost ~0.3 ms of the search)
    out: list[IndexHit] = []
    for p in points:
        pid = p.id
        payload = found.get(pid)
        if payload is not None:  # a point deleted between the search and the payload read
            out.append(IndexHit(id=str(pid), score=p.score, payload=payload))
    return out
