"""Feedback from the first hits: the query moved toward what it found best.

Rocchio's pseudo-relevance feedback on the dense channel, training-free: the best few
memories of the first fusion (every channel's evidence, not the dense order alone)
are averaged, weighted by their fused score, and each query view becomes
``normalise(view + weight * centroid)``. How its evidence enters the ranking
(``feedback_mode``):

- ``replace``: one more dense search with the moved views; its hits are the dense
  channel (their distances, and so the keep rule, are to the moved query);
- ``channel``: the same search, its hits fused beside the others at
  ``feedback_fuse`` (the keep rule still reads the query's own distances);
- ``smooth``: no search; each candidate in hand scores its cosine to the centroid,
  fused at ``feedback_fuse`` (the cluster hypothesis on the candidates only).

The top hits' vectors are the ones the answer reads for newer-first anyway (kept
between writes by the index), so ``replace``/``channel`` add one dense search, and
``smooth`` one vector read of the candidates.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from mcp_gateway.common.sections import SearchSettings
from mcp_gateway.common.types import IndexFilter, IndexHit, SparseVector
from mcp_gateway.index.live import LiveIndex
from mcp_gateway.search.ranking import Candidate, RankingParams, _dbsf


def _normalise(vec: Sequence[float]) -> list[float]:
    norm = math.sqrt(math.fsum(x * x for x in vec))
    return [x / norm for x in vec] if norm > 0 else list(vec)


def feeders(candidates: Sequence[Candidate], depth: int, ratio: float) -> list[Candidate]:
    """The first ``depth`` current memories with a dense vector, in fused order, each
    with at least ``ratio`` of the best one's score."""
    out: list[Candidate] = []
    for cand in candidates:
        if cand.payload.get("current") is False or cand.payload.get("dense") is False:
            continue
        if out and cand.score < ratio * out[0].score:
            break
        out.append(cand)
        if len(out) == depth:
            break
    return out


def centroid(
    fed: Sequence[Candidate], vectors: dict[str, Sequence[float]], by_score: bool
) -> list[float] | None:
    """The feeders' mean vector (weighted by fused score when ``by_score``)."""
    total: list[float] | None = None
    mass = 0.0
    for cand in fed:
        vec = vectors.get(cand.point_id)
        if vec is None:
            continue
        w = max(cand.score, 0.0) if by_score else 1.0
        if total is None:
            total = [0.0] * len(vec)
        for i, x in enumerate(vec):
            total[i] += w * x
        mass += w
    if total is None or mass <= 0:
        return None
    return [x / mass for x in total]


def moved(
    views: Sequence[Sequence[float]], mean: Sequence[float], weight: float
) -> list[list[float]]:
    return [_normalise([q + weight * c for q, c in zip(view, mean, strict=True)]) for view in views]


def expanded(
    query: SparseVector, docs: Sequence[tuple[SparseVector, float]], gamma: float, n: int
) -> SparseVector:
    """RM3 on latent terms: the query's terms plus ``gamma`` x the ``n`` strongest terms
    of the feeders' score-weighted mean (each doc's terms scaled to its strongest)."""
    mass = math.fsum(w for _, w in docs) or 1.0
    mean: dict[int, float] = {}
    for terms, w in docs:
        top = max(terms.values, default=0.0) or 1.0
        for i, v in zip(terms.indices, terms.values, strict=True):
            mean[int(i)] = mean.get(int(i), 0.0) + w * v / top / mass
    qtop = max(query.values, default=0.0) or 1.0
    out = {int(i): float(v) for i, v in zip(query.indices, query.values, strict=True)}
    for i, v in sorted(mean.items(), key=lambda kv: -kv[1])[:n]:
        out[i] = out.get(i, 0.0) + gamma * qtop * v
    return SparseVector(list(out), list(out.values()))


class Feedback:
    def __init__(self, index: LiveIndex, settings: SearchSettings) -> None:
        self.index, self.settings = index, settings
        # (point id, payload) pairs -> their latent terms (bench prototype only)
        self.terms_of: Any = None

    async def latent_hits(
        self, candidates: Sequence[Candidate], terms: SparseVector, flt: IndexFilter, limit: int
    ) -> list[IndexHit] | None:
        s = self.settings
        fed = feeders(candidates, s.feedback_depth, s.feedback_ratio)
        if not fed or self.terms_of is None:
            return None
        got = await self.terms_of(fed)
        docs = [
            (got[c.point_id], max(c.score, 0.0) if s.feedback_by_score else 1.0)
            for c in fed
            if c.point_id in got
        ]
        if not docs:
            return None
        new = expanded(terms, docs, s.feedback_weight, s.feedback_terms)
        found = await self.index.search_channels(None, SparseVector([], []), flt, limit, latent=new)
        return found.latent

    @property
    def on(self) -> bool:
        return self.settings.feedback_depth > 0 and self.settings.mode == "hybrid"

    async def hits(
        self,
        candidates: Sequence[Candidate],
        views: Sequence[Sequence[float]],
        flt: IndexFilter,
        limit: int,
    ) -> list[IndexHit] | None:
        """The feedback's hits (scored by cosine), or None where nothing fed it."""
        s = self.settings
        fed = feeders(candidates, s.feedback_depth, s.feedback_ratio)
        if not fed or not views:
            return None
        vectors = await self.index.dense_vectors([c.point_id for c in fed])
        mean = centroid(fed, vectors, s.feedback_by_score)
        if mean is None:
            return None
        if s.feedback_mode == "smooth":
            ids = [c.point_id for c in candidates if c.payload.get("dense") is not False]
            near = await self.index.dense_vectors(ids)
            unit = _normalise(mean)
            by_id = {c.point_id: c for c in candidates}
            out = [
                IndexHit(
                    pid,
                    math.fsum(a * b for a, b in zip(vec, unit, strict=True)),
                    by_id[pid].payload,
                )
                for pid, vec in near.items()
            ]
            return sorted(out, key=lambda h: h.score, reverse=True)
        new = moved(views, mean, s.feedback_weight)
        found = await self.index.search_channels(
            new[0], SparseVector([], []), flt, limit, more_dense=new[1:]
        )
        return found.dense


def add_evidence(
    candidates: Sequence[Candidate], hits: Sequence[IndexHit], params: RankingParams, weight: float
) -> list[Candidate]:
    """The feedback's hits on the candidates in hand, DBSF-scaled at ``weight`` (with the
    prior and the high-priority boost the fusion gave the rest); a hit not in hand is
    left out: it has no distance for the keep rule."""
    by_id = {c.point_id: c for c in candidates}
    mine = [h for h in hits if h.id in by_id]
    parts = _dbsf([h.score for h in mine])
    for hit, part in zip(mine, parts, strict=True):
        cand = by_id[hit.id]
        factor = float(cand.payload.get("prior", 1.0))
        if params.priority_rule != "first" and cand.priority == "high":
            factor *= params.high_boost
        cand.score += weight * part * factor
    return sorted(candidates, key=lambda c: c.score, reverse=True)
