"""Ranking: fuse the dense and lexical channels, then apply the source design's rules.

Order of operations (each step is measured in ``bench/LOG.md``):
1. weighted score fusion (DBSF) or reciprocal-rank fusion of the two channels, times a
   per-point prior (usefulness and shelf life, written by the re-ranking job). The second
   channel is BM25, or latent terms where the index has them; BM25 then scores only the
   hits the semantic channels did not return (notes not embedded yet among them) and
   stays the lexical evidence of step 2;
2. drop candidates that are neither close in the dense space (per-type distance
   threshold and within ``keep_margin`` of the query's best) nor a strong lexical
   match -- high priority included;
3. priority orders only among relevant hits (``close_to_best``: a fused score, before
   the boost, at least ``priority_near`` of the best kept one's): such a high-priority
   hit is boosted, and under the shipped "gated" rule jumps the queue when it is also
   within ``high_first_margin`` of the query's best dense distance; a high-priority hit
   farther from the best is ranked as any other (low priority sorts last among close
   ones). Then the best ``top``; an answer left shorter than ``top`` is filled after
   them with what only the margin dropped, high priority excepted (``margin_fill``);
4. the newest lessons/conclusions not already present that pass the keep rule, are
   close to the best by the same rule and that the further channels place at
   ``related_floor`` or closer (``related``) form a separate ``recent`` part of the
   answer (never counted against ``top``).
5. the newer of two notes that say nearly the same thing (dense cosine, per model)
   moves above the older (``reorder.newer_first``): notes have no ``supersedes`` edge, and a
   changed fact leaves both live.

Between 1 and 2, a retired record (superseded, or a duplicate) that the channels found
hands its evidence to its lifecycle head (``reorder.carry_to_heads``): old wording of a changed
decision finds the decision now in force, as ``record_search(current_only=true)`` does.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from mcp_gateway.common.types import IndexHit

PRIORITY_ORDER = {"high": 0, "": 1, "low": 2}


@dataclass(frozen=True, slots=True)
class RankingParams:
    fusion: str = "dbsf"  # "dbsf" (distribution-based scores) or "rrf" (reciprocal rank)
    rrf_k: float = 10.0
    dense_weight: float = 1.0
    sparse_weight: float = 0.3
    latent_weight: float = 0.7  # the latent-terms channel, when the search has one
    channel_weight: float = 0.5  # each further dense channel (embedder.channels)
    # a hit within this rank of a further dense channel passes the keep rule on it when
    # its cosine there is at least this share of the channel's best: in a 9-note store
    # every note is in a channel's top 10, and rank alone kept unrelated high-priority
    # lessons (MiniLM 0.13 against the answer's 0.32; a reworded answer in a 12-note
    # store 0.22 against 0.31)
    channel_keep_rank: int = 10
    channel_keep_ratio: float = 0.5
    # the fast pool's hits (``search.fast_first``: pending notes only), on the dense scale
    fast_weight: float = 1.0
    thresholds: Mapping[str, float] = field(default_factory=lambda: {"*": 0.2})
    lexical_keep_ratio: float = 0.5  # lexical-only hits kept if >= ratio * best lexical score
    # "first": the source design's rule, high priority always sorts first among the kept;
    # "boost": high priority multiplies the fused score by ``high_boost`` instead;
    # "gated": boosted, and sorted first when it is a confident match for *this* query:
    # its dense distance within ``high_first_margin`` of the query's best dense distance
    priority_rule: str = "gated"
    high_boost: float = 1.25
    high_first_margin: float = 0.0
    # priority (and [RECENT]) only among hits whose fused score, before the boost, is at
    # least this share of the best kept hit's: an unrelated high-priority lesson that the
    # keep rule lets in stays where its relevance puts it (``close_to_best``)
    priority_near: float = 0.9
    # [RECENT] also asks that every further channel that reads a lesson puts it at
    # this cosine or closer (0: off): a second model's view of the pair (related.py)
    related_floor: float = 0.35
    # A candidate is kept when its distance is within the per-type threshold AND within
    # ``keep_margin`` of the query's best distance, or it is a strong lexical match.
    # High priority gets no exemption: an unrelated high lesson is noise like any other.
    keep_margin: float = 1.0
    # an answer the keep rule left shorter than ``top`` is filled, after every kept hit,
    # with the candidates only the margin dropped (within their type's threshold), high
    # priority excepted: the margin keeps unrelated high lessons out, and on chat turns it
    # also cut answers short (bench/LOG.md, "conversational quality")
    margin_fill: bool = True

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
    sparse_part: float = 0.0
    latent_part: float = 0.0  # the latent-terms channel's share of ``score``
    channel_part: float = 0.0  # the further dense channels' share of ``score``
    channel_rank: int | None = None  # the best rank any further dense channel gave it
    fast_part: float = 0.0  # the fast pool's share of ``score`` (a pending note)
    # how many of the query's identifiers this memory alone holds (``pin_exact``)
    exact: int = 0
    # the priority factor ``select`` multiplied ``score`` by (1: none): close high hits
    boost: float = 1.0
    # the lowest cosine a further channel that reads it gave it (None: none judged it;
    # ``related.mark``), which ``related`` asks beside the score ratio for [RECENT]
    channel_low: float | None = None

    @property
    def base_score(self) -> float:
        """The fused score before the priority boost: what relevance is judged on."""
        return self.score / self.boost

    @property
    def type(self) -> str:
        return str(self.payload.get("type", ""))

    @property
    def priority(self) -> str:
        return str(self.payload.get("priority", ""))


def _dbsf(scores: Sequence[float], basis: Sequence[float] | None = None) -> list[float]:
    """Qdrant's distribution-based score fusion normalisation: mean +- 3 sigma -> [0, 1].
    ``basis``: the scores whose distribution sets the scale (default: ``scores``)."""
    if not scores:
        return []
    basis = basis or scores
    # plain float arithmetic: statistics.pstdev computes exactly with fractions, which
    # cost ~0.2 ms a search for 50-100 scores
    n = len(basis)
    mean = math.fsum(basis) / n
    sigma = math.sqrt(math.fsum((s - mean) * (s - mean) for s in basis) / n)
    if sigma == 0:  # one hit, or all equal: each is the best this channel has
        return [1.0] * len(scores)
    low, span = mean - 3 * sigma, 6 * sigma
    return [min(1.0, max(0.0, (s - low) / span)) for s in scores]


def _contributions(hits: Sequence[IndexHit], params: RankingParams, weight: float) -> list[float]:
    if params.fusion == "dbsf":
        # retired records ride along on the current hits' scale: finding them must not
        # move how the current ones score (it cost contextual and crosslang)
        basis = [h.score for h in hits if h.payload.get("current") is not False]
        return [weight * v for v in _dbsf([h.score for h in hits], basis)]
    return [weight / (params.rrf_k + rank) for rank in range(1, len(hits) + 1)]


def _fast_parts(
    fast: Sequence[IndexHit], dense: Sequence[IndexHit], params: RankingParams
) -> list[float]:
    """The fast hits' contributions, normalised on the dense hits' distribution (their
    scores are on the dense model's scale), or on their own when there is none."""
    if params.fusion != "dbsf":
        return [params.fast_weight / (params.rrf_k + r) for r in range(1, len(fast) + 1)]
    basis = [h.score for h in dense if h.payload.get("current") is not False]
    return [params.fast_weight * v for v in _dbsf([h.score for h in fast], basis or None)]


def fuse(
    dense: Sequence[IndexHit],
    sparse: Sequence[IndexHit],
    params: RankingParams,
    latent: Sequence[IndexHit] | None = None,
    channels: Sequence[Sequence[IndexHit]] = (),
    channel_weights: Sequence[float] = (),
    channel_reads: Sequence[Collection[str] | None] = (),
    fast: Sequence[IndexHit] = (),
) -> list[Candidate]:
    """Weighted fusion of the channels; keeps each channel's raw evidence.

    ``channels``: each further dense channel's hits (another model's cosine order),
    added at ``channel_weight`` each (or its own, ``channel_weights``, in the same
    order). ``channel_reads``: the text scripts (payload ``script``, absent: "latin")
    each channel can read, None: all. A channel abstains on a memory it cannot read:
    that memory's semantic score is scaled up by the weight the channel would have
    added, so an English-only model neither lifts English memories above a Japanese
    answer nor pushes the answer down. A note the main model has not embedded yet is
    judged on its lexical evidence and these channels together.

    ``latent`` (a list, possibly empty: the search has the latent-terms channel) takes
    BM25's place in the score at ``latent_weight``. BM25 stays the evidence of the keep
    rule (an exact word match; nearly every note shares some latent terms with a query,
    so a latent score says little about whether a hit belongs in the answer) and scores
    the hits the other channels did not return, pending notes at full weight."""
    # a candidate shares its hit's payload (the index's payload cache holds it too):
    # nothing changes a candidate's payload, and ~100 copies a search cost ~0.05 ms
    by_id: dict[str, Candidate] = {}
    dense_parts = _contributions(dense, params, params.dense_weight)
    for rank, (hit, part) in enumerate(zip(dense, dense_parts, strict=True), start=1):
        cand = by_id.get(hit.id) or by_id.setdefault(hit.id, Candidate(hit.id, hit.payload))
        cand.dense_rank, cand.distance = rank, max(0.0, 1.0 - hit.score)
        cand.score += part
    if latent is not None:
        latent_parts = _contributions(latent, params, params.latent_weight)
        for hit, part in zip(latent, latent_parts, strict=True):
            cand = by_id.get(hit.id) or by_id.setdefault(hit.id, Candidate(hit.id, hit.payload))
            cand.latent_part = part
            cand.score += part
    weights = [
        channel_weights[i] if i < len(channel_weights) else params.channel_weight
        for i in range(len(channels))
    ]
    reads_of = [channel_reads[i] if i < len(channel_reads) else None for i in range(len(channels))]
    for hits, weight, reads in zip(channels, weights, reads_of, strict=True):
        if reads is not None:  # what it cannot read is not its evidence
            hits = [h for h in hits if h.payload.get("script", "latin") in reads]
        parts = _contributions(hits, params, weight)
        floor = hits[0].score * params.channel_keep_ratio if hits else 0.0
        for rank, (hit, part) in enumerate(zip(hits, parts, strict=True), start=1):
            cand = by_id.get(hit.id) or by_id.setdefault(hit.id, Candidate(hit.id, hit.payload))
            cand.channel_part += part
            cand.score += part
            if hit.score < floor:
                continue  # its rank is no evidence (the keep rule)
            if cand.channel_rank is None or rank < cand.channel_rank:
                cand.channel_rank = rank
    # the fast pool's hits (pending notes by their static vector, its cosine mapped onto
    # the dense model's scale) score as dense hits would, on the dense hits' scale; a
    # note embedded meanwhile (a search's own fresh pass) has its real dense score
    fast = [h for h in fast if h.id not in by_id or by_id[h.id].dense_rank is None]
    for rank, (hit, part) in enumerate(zip(fast, _fast_parts(fast, dense, params), strict=True), 1):
        cand = by_id.get(hit.id) or by_id.setdefault(hit.id, Candidate(hit.id, hit.payload))
        cand.fast_part = part
        cand.score += part
        if cand.channel_rank is None or rank < cand.channel_rank:
            cand.channel_rank = rank  # the keep rule: as a channel's top hit
    if any(reads is not None for reads in reads_of):
        _abstain(by_id.values(), params, latent is not None, weights, reads_of)
    semantic = set(by_id) if latent is not None else set()
    second_weight = params.sparse_weight if latent is None else params.latent_weight
    sparse_parts = _contributions(sparse, params, params.sparse_weight)
    for rank, (hit, part) in enumerate(zip(sparse, sparse_parts, strict=True), start=1):
        cand = by_id.get(hit.id) or by_id.setdefault(hit.id, Candidate(hit.id, hit.payload))
        cand.sparse_rank, cand.sparse_score, cand.sparse_part = rank, hit.score, part
        if hit.id not in semantic:
            cand.score += part
    if params.sparse_weight > 0:
        for cand in by_id.values():
            if cand.payload.get("dense") is False and cand.dense_rank is None:
                # not embedded yet: judge it on its lexical evidence at full weight
                # (and on the further channels that have it: the whole weight of the
                # channels it lacks spread over those it has)
                have = params.sparse_weight + (params.channel_weight if cand.channel_part else 0)
                scale = (params.dense_weight + second_weight + have - params.sparse_weight) / have
                lexical = (cand.sparse_part + cand.channel_part) * scale
                cand.score = lexical
                if cand.fast_part:  # its fast vector stands in for the dense one, and
                    # can only add: a strong lexical match keeps its score
                    both = (cand.sparse_part + cand.channel_part + cand.fast_part) * (
                        (scale * have) / (have + params.fast_weight)
                    )
                    cand.score = max(lexical, both)
    for cand in by_id.values():
        cand.score *= float(cand.payload.get("prior", 1.0))
    # the priority boost waits for ``select``: it applies only to hits close to the best
    return sorted(by_id.values(), key=lambda c: c.score, reverse=True)


def _abstain(
    candidates: Collection[Candidate],
    params: RankingParams,
    has_latent: bool,
    weights: Sequence[float],
    reads: Sequence[Collection[str] | None],
) -> None:
    """Scale up each candidate by the weight of the channels that cannot read its script
    (one factor per script)."""
    total = params.dense_weight + (params.latent_weight if has_latent else 0.0) + sum(weights)
    factors: dict[str, float] = {}
    for cand in candidates:
        script = cand.payload.get("script", "latin")
        if script not in factors:
            away = sum(
                w for w, r in zip(weights, reads, strict=True) if r is not None and script not in r
            )
            factors[script] = total / (total - away) if away and total > away else 1.0
        if factors[script] != 1.0:
            cand.score *= factors[script]


def pin_exact(
    candidates: Sequence[Candidate], held: Mapping[str, tuple[IndexHit, int]]
) -> list[Candidate]:
    """Mark each memory that alone holds some of the query's identifiers (``held``:
    point id -> its lexical hit and how many such identifiers only it holds;
    ``exact_terms.py``). A memory the channels did not return joins the candidates
    from its hit. ``select`` puts marked memories first, most identifiers first."""
    if not held:
        return list(candidates)
    out = list(candidates)
    by_id = {c.point_id: c for c in out}
    for pid, (hit, count) in held.items():
        cand = by_id.get(pid)
        if cand is None:
            cand = Candidate(pid, hit.payload, sparse_score=hit.score)
            out.append(cand)
        cand.exact = count
    return out


def passes_threshold(
    cand: Candidate, params: RankingParams, best_sparse: float, best_distance: float
) -> bool:
    if (
        cand.distance is not None
        and cand.distance <= params.threshold_for(cand.type)
        and cand.distance <= best_distance + params.keep_margin
    ):
        return True
    if cand.channel_rank is not None and cand.channel_rank <= params.channel_keep_rank:
        return True
    if cand.sparse_score is not None and best_sparse > 0:
        return cand.sparse_score >= params.lexical_keep_ratio * best_sparse
    return False


def close_to_best(cand: Candidate, params: RankingParams, best: float) -> bool:
    """Whether ``cand`` is about the query as much as its best hit is: its fused score
    before the priority boost is at least ``priority_near`` of ``best`` (the best such
    score among the hits the keep rule kept). The one relevance rule priority and
    [RECENT] answer to. The keep rule alone is loose on purpose (a hit within the dense
    margin, a further channel's top 10, or half the best exact-word score is kept), so
    in a small store an unrelated high-priority lesson passes it at ~0.8 of the best
    score, and the x1.25 boost then put it first."""
    return best <= 0 or cand.base_score >= params.priority_near * best


def related(cand: Candidate, params: RankingParams, best: float) -> bool:
    """[RECENT]'s rule: ``close_to_best``, and the further channels that read it place
    it at ``related_floor`` or closer (``Candidate.channel_low``; no channel evidence:
    the ratio alone). The ratio alone does not tell an unrelated lesson from a related
    one at 0.9 of the best (related.py). Priority keeps the ratio alone: the floor also
    stopped relevant high-priority memories in another language from being lifted
    (generated dev, buried: bench/LOG.md)."""
    if not close_to_best(cand, params, best):
        return False
    low = cand.channel_low
    return params.related_floor <= 0 or low is None or low >= params.related_floor


def by_meaning(cand: Candidate, params: RankingParams, best_distance: float) -> bool:
    """Kept on more than the query's words: it alone holds an identifier or a name of
    the query, or it is close by meaning, within its type's distance threshold and the
    keep margin of the best (a memory not embedded yet: on its lexical evidence, as the
    keep rule judged it)."""
    if cand.exact:
        return True
    if cand.distance is None:
        return cand.payload.get("dense") is False
    return (
        cand.distance <= params.threshold_for(cand.type)
        and cand.distance <= best_distance + params.keep_margin
    )


def select(
    candidates: list[Candidate],
    params: RankingParams,
    top: int,
    namespaces: Sequence[str] = (),
) -> list[Candidate]:
    """Threshold, boost the high-priority hits close to the best (``close_to_best``),
    cut to ``top``, then priority order, the caller's own namespace (the first of
    ``namespaces``) before shared ones; stable otherwise. A memory that alone holds an
    identifier of the query (``pin_exact``) comes before all of it."""
    best_sparse = max((c.sparse_score or 0.0 for c in candidates), default=0.0)
    best_distance = min((c.distance for c in candidates if c.distance is not None), default=2.0)
    pinned = sorted((c for c in candidates if c.exact), key=lambda c: (-c.exact, -c.score))
    passed = [
        c
        for c in candidates
        if not c.exact and passes_threshold(c, params, best_sparse, best_distance)
    ]
    best = max((c.base_score for c in (*pinned, *passed)), default=0.0)
    near = {c.point_id for c in passed if close_to_best(c, params, best)}
    if params.priority_rule != "first":
        for c in passed:
            if c.priority == "high" and c.point_id in near and c.boost == 1.0:
                c.boost = params.high_boost
                c.score *= c.boost
        passed.sort(key=lambda c: c.score, reverse=True)
    kept = pinned + passed
    rank = {ns: i for i, ns in enumerate(namespaces)}

    def order(part: list[Candidate]) -> list[Candidate]:
        return sorted(
            part,
            key=lambda c: (
                -1 if c.exact else _priority_tier(c, params, best_distance, c.point_id in near),
                0 if c.exact else rank.get(str(c.payload.get("namespace", "")), 0),
            ),
        )

    answer = order(kept[:top])
    if params.margin_fill and len(answer) < top:
        taken = {c.point_id for c in kept}
        fill = [c for c in candidates if c.point_id not in taken and _fills(c, params)]
        answer += order(fill[: top - len(answer)])
    return answer


def _fills(cand: Candidate, params: RankingParams) -> bool:
    """Dropped by the margin alone: within its type's threshold, and not high priority."""
    return (
        cand.priority != "high"
        and cand.distance is not None
        and cand.distance <= params.threshold_for(cand.type)
    )


def recent_floor(
    candidates: Sequence[Candidate], params: RankingParams, wanted: Collection[str] | None = None
) -> dict[str, Candidate]:
    """Notes (by source id) relevant enough to be shown as recent lessons: among this
    query's candidates, passing the same keep rule as a ranked hit, and close to the
    best kept hit by the rule priority answers to (``close_to_best``). A note the index
    did not return for the query at all is unrelated by definition. ``wanted``: only
    these source ids are asked about (a search asks about its few recent notes, not
    about each of its ~100 candidates)."""
    if wanted is not None and not wanted:
        return {}
    best_sparse = max((c.sparse_score or 0.0 for c in candidates), default=0.0)
    best_distance = min((c.distance for c in candidates if c.distance is not None), default=2.0)
    passed = [
        c for c in candidates if c.exact or passes_threshold(c, params, best_sparse, best_distance)
    ]
    best = max((c.base_score for c in passed), default=0.0)
    floor: dict[str, Candidate] = {}
    for c in passed:
        source = str(c.payload.get("source_id"))
        if (
            (wanted is None or source in wanted)
            and c.payload.get("kind", "note") == "note"
            and related(c, params, best)
        ):
            floor[source] = c
    return floor


def _priority_tier(cand: Candidate, params: RankingParams, best_distance: float, near: bool) -> int:
    """0 sorts first (low priority sorts last). High priority counts only for a hit
    close to the best (``near``): one farther from it keeps its relevance order (but
    under "first", the source design's rule, kept as an opt-in). Under "boost"
    and "gated" the boost already lifted close high items, so only a gated, confident
    high match still jumps the queue. Confidence is relative to the query's own best
    dense distance: absolute cosine distances shift with the model and the query (e5
    packs everything into 0.05-0.25), a margin does not."""
    tier = PRIORITY_ORDER.get(cand.priority, 1)
    if params.priority_rule == "first" or tier != 0:  # "first": the source design, opt-in
        return tier
    if not near:
        return 1
    if params.priority_rule == "gated":
        if cand.distance is not None and cand.distance <= best_distance + params.high_first_margin:
            return 0
    return 1
