"""Ranking: fuse the dense and lexical channels, then apply the source design's rules.

Order of operations (each step is measured in ``docs/ranking.md``):
1. weighted reciprocal-rank fusion of the two channels (``rrf_k``, channel weights),
   times a per-point prior (usefulness and shelf life, written by the re-ranking job);
2. drop candidates that are neither close in the dense space (per-type distance
   threshold) nor a strong lexical match; high-priority items are always kept;
3. keep the best ``top``, then put ``priority="high"`` first (low last);
4. add the newest lessons/conclusions not already present, tagged ``[RECENT]``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .types import IndexHit

PRIORITY_ORDER = {"high": 0, "": 1, "low": 2}


@dataclass(frozen=True, slots=True)
class RankingParams:
    rrf_k: float = 10.0
    dense_weight: float = 1.0
    sparse_weight: float = 1.0
    thresholds: Mapping[str, float] = field(default_factory=lambda: {"*": 0.35})
    lexical_keep_ratio: float = 0.5  # lexical-only hits kept if >= ratio * best lexical score

    def threshold_for(self, type_: str) -> float:
        return self.thresholds.get(type_, self.thresholds.get("*", 1.0))


@dataclass(slots=True)
class Candidate:
    point_id: str
    payload: dict[str, Any]
    score: float = 0.0
    distance: float | None = None
    dense_rank: int | None = None
    sparse_score: float | None = None
    sparse_rank: int | None = None
    tags: list[str] = field(default_factory=list)

    @property
    def type(self) -> str:
        return str(self.payload.get("type", ""))

    @property
    def priority(self) -> str:
        return str(self.payload.get("priority", ""))


def fuse(
    dense: Sequence[IndexHit], sparse: Sequence[IndexHit], params: RankingParams
) -> list[Candidate]:
    """Weighted reciprocal-rank fusion; keeps each channel's raw evidence."""
    by_id: dict[str, Candidate] = {}
    for rank, hit in enumerate(dense, start=1):
        cand = by_id.setdefault(hit.id, Candidate(hit.id, dict(hit.payload)))
        cand.dense_rank, cand.distance = rank, max(0.0, 1.0 - hit.score)
        cand.score += params.dense_weight / (params.rrf_k + rank)
    for rank, hit in enumerate(sparse, start=1):
        cand = by_id.setdefault(hit.id, Candidate(hit.id, dict(hit.payload)))
        cand.sparse_rank, cand.sparse_score = rank, hit.score
        cand.score += params.sparse_weight / (params.rrf_k + rank)
    for cand in by_id.values():
        cand.score *= float(cand.payload.get("prior", 1.0))
    return sorted(by_id.values(), key=lambda c: c.score, reverse=True)


def passes_threshold(cand: Candidate, params: RankingParams, best_sparse: float) -> bool:
    if cand.priority == "high":
        return True
    if cand.distance is not None and cand.distance <= params.threshold_for(cand.type):
        return True
    if cand.sparse_score is not None and best_sparse > 0:
        return cand.sparse_score >= params.lexical_keep_ratio * best_sparse
    return False


def select(
    candidates: list[Candidate],
    params: RankingParams,
    top: int,
    namespaces: Sequence[str] = (),
) -> list[Candidate]:
    """Threshold, cut to ``top``, then priority order, the caller's own namespace
    (the first of ``namespaces``) before shared ones; stable otherwise."""
    best_sparse = max((c.sparse_score or 0.0 for c in candidates), default=0.0)
    kept = [c for c in candidates if passes_threshold(c, params, best_sparse)][:top]
    rank = {ns: i for i, ns in enumerate(namespaces)}
    return sorted(
        kept,
        key=lambda c: (
            PRIORITY_ORDER.get(c.priority, 1),
            rank.get(str(c.payload.get("namespace", "")), 0),
        ),
    )
