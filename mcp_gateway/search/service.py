"""``search_memory``: one index round trip, one SQLite read, then ranking rules.

The search path is kept lean on purpose: a cached query embedding, a single batched
Qdrant query for both channels, one ``SELECT ... IN`` for the texts. Between two
writes, what a search already read (the answer, the texts, the recent lessons, what
it derived from the query's words) is not computed again (``answers.py``,
``note_reads.py``, ``query_memo.py``; docs/performance.md).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import anyio

from mcp_gateway.common.sections import SearchSettings
from mcp_gateway.common.types import (
    IndexFilter,
    IndexHit,
    Note,
    SearchResponse,
    SparseVector,
)
from mcp_gateway.embedders.base import Embedder
from mcp_gateway.embedders.channels import ChannelEmbedder, channel_reads
from mcp_gateway.index.base import Channels, best_of_views
from mcp_gateway.index.live import LiveIndex
from mcp_gateway.indexing.writebehind import WriteBehind
from mcp_gateway.search.answers import AnswerCache
from mcp_gateway.search.calibration import Calibration, for_model
from mcp_gateway.search.exact_terms import identifier_terms, plain_terms
from mcp_gateway.search.fast_first import FastFirst
from mcp_gateway.search.fresh import FreshEmbedder
from mcp_gateway.search.learned_keys import KeyMatcher
from mcp_gateway.search.match import (
    WEAK_SHOWN,
    WEAK_TAG,
    bars_for,
    judge,
    signals,
    unknown_terms,
    wants_unknown,
)
from mcp_gateway.search.materialise import Materialiser
from mcp_gateway.search.neardup import Folder, fold_results
from mcp_gateway.search.note_reads import RecentAt, RecentNotes, ShownNotes
from mcp_gateway.search.prefetch import Searches
from mcp_gateway.search.query_memo import QueryMemo
from mcp_gateway.search.query_vectors import QueryVectors
from mcp_gateway.search.ranking import (
    RankingParams,
    by_meaning,
    fuse,
    pin_exact,
    recent_floor,
    select,
)
from mcp_gateway.search.related import mark as mark_related
from mcp_gateway.search.reorder import carry_to_heads
from mcp_gateway.search.request import RecordLookup, SearchRequest, retired_heads
from mcp_gateway.search.results import note_result
from mcp_gateway.search.thresholds import ThresholdCache
from mcp_gateway.stores.notes import NoteStore

log = logging.getLogger(__name__)

RECENT_TAG = "[RECENT]"


@dataclass(slots=True)
class _ShownAt:
    """The notes an answer just showed (kept per generation): what folding reads."""

    shown: ShownNotes
    generation: int | None

    async def get_many(self, ids: Sequence[str]) -> dict[str, Note]:
        return await self.shown.get_many(ids, self.generation)


class SearchService:
    def __init__(
        self,
        notes: NoteStore,
        index: LiveIndex,
        embedder: Embedder,
        settings: SearchSettings,
        thresholds: ThresholdCache,
        records: RecordLookup | None = None,
        fresh: FreshEmbedder | None = None,
        writes: WriteBehind | None = None,
        folder: Folder | None = None,
        catch_up: Callable[[], Awaitable[None]] | None = None,
        channels: Sequence[ChannelEmbedder] = (),
        fast_first: FastFirst | None = None,
        learned: KeyMatcher | None = None,
    ) -> None:
        """``catch_up``: where other gateways write the same truth store, applies what
        they committed before this search began (read-your-writes, ``indexing.follow``)."""
        self.catch_up = catch_up
        self.notes, self.index, self.embedder = notes, index, embedder
        self.settings, self.thresholds, self.records = settings, thresholds, records
        self.fresh, self.writes, self.folder = fresh, writes, folder
        self.fast_first = fast_first
        self.learned = learned
        self._keys_seen = 0
        self.searches = Searches()
        self.memo = QueryMemo()
        self.recent, self.shown = RecentNotes(notes, settings), ShownNotes(notes)
        self.answers = AnswerCache(settings.answer_cache_size)
        self.calibration: Calibration = for_model(embedder.model_id)
        # what a strong match is, for this model and these further channels (match.py)
        self.match_bars = bars_for(embedder.model_id, [c.channel.name for c in channels])
        # ``is None``, not ``or``: 0 is a meaningful setting for every one of these
        c, s = self.calibration, settings
        self.high_first_margin = (
            c.high_first_margin if s.high_first_margin is None else s.high_first_margin
        )
        self.keep_margin = c.keep_margin if s.keep_margin is None else s.keep_margin
        self.language_shift = c.language_shift if s.language_shift is None else s.language_shift
        self.wide_shift = c.wide_shift if s.wide_shift is None else s.wide_shift
        self.newer_similarity = (
            c.newer_similarity if s.newer_similarity is None else s.newer_similarity
        )
        self.vectors = QueryVectors(
            embedder,
            index,
            settings,
            self.memo,
            self.calibration,
            self.language_shift,
            self.wide_shift,
            channels,
        )
        self.materialise = Materialiser(
            self.shown,
            index,
            records,
            self.newer_similarity,
            settings.newer_ratio,
            settings.question_ratio if settings.questions_after else None,
        )

    async def search(self, req: SearchRequest) -> SearchResponse:
        """``req.query`` and its alternatives come checked (``inputs.checked_query``,
        once per search, by ``services.notes``): they are used as they are."""
        query = req.query
        namespace = req.namespaces[0] if req.namespaces else "default"
        if self.writes is not None:  # every note acknowledged to a reader is in the index
            await self.writes.caught_up(req.namespaces)
        if self.catch_up is not None:  # ...whichever gateway acknowledged it
            await self.catch_up()
        # read before anything else: a write that lands meanwhile makes this answer stale
        generation: int | None = self.index.generation
        key = (
            query,
            req.type,
            req.domain,
            req.top,
            tuple(req.namespaces),
            req.alternatives,
            req.kinds,
            req.by_meaning,
        )
        if self.learned is not None and self.learned.version != self._keys_seen:
            self.answers.clear()  # a new learned key makes earlier answers stale
            self._keys_seen = self.learned.version
        thresholds = await self.thresholds.get(namespace)
        if generation is not None and (known := self.answers.get(key, generation, thresholds)):
            return known
        with self.searches.running_one():  # the prefetcher keeps off the query lane meanwhile
            response, settled = await self._search(query, req, thresholds, generation)
        if self.folder is not None:  # before the answer is kept: a repeat pays nothing
            shown = _ShownAt(self.shown, generation)
            folded = await fold_results(response.results, shown, self.folder, query)
            if len(folded) != len(response.results):
                response = response.model_copy(update={"results": folded})
        if generation is not None and settled:
            self.answers.put(key, generation, thresholds, response)
        return response

    async def _search(
        self,
        query: str,
        req: SearchRequest,
        thresholds: dict[str, float],
        generation: int | None,
    ) -> tuple[SearchResponse, bool]:
        """The answer, and whether it is settled: no hit is still waiting for its
        embedding (a later search may embed it itself, so such an answer is not kept)."""
        mode = self.settings.mode
        sparse = SparseVector([], []) if mode == "dense" else self.memo.sparse(query)
        flt = IndexFilter(
            kinds=req.kinds,
            types=(req.type,) if req.type else (),
            domains=(req.domain,) if req.domain else (),
            namespaces=req.namespaces,
            # retired records are found too, and hand their evidence to their heads
            current_only=not self._carries,
        )
        limit = self.settings.candidates
        recent_at: RecentAt = (req.type, req.namespaces, req.domain, generation)
        known_recent = self.recent.known(*recent_at)
        recent: list[Note] = [] if known_recent is None else known_recent
        cached = self.vectors.cached(query) if known_recent is not None else None
        held: dict[str, tuple[IndexHit, int]] = {}
        # the look-up is lexical: the dense-only baseline (bench/quality) goes without
        exact = self.settings.exact_first and self.settings.mode != "dense"
        identifiers = identifier_terms(query, self.settings.exact_names) if exact else []

        async def find_held() -> None:
            held.update(await self._held(identifiers, flt))

        if cached is not None:
            # a cached embedding and the recent list known: nothing to overlap, so one
            # index call and no task group (~0.2 ms of a ~3 ms search at 2k)
            views, terms = cached[0], self.vectors.latent(cached[1])
            more = await self.vectors.channel_queries(query)
            semantic = await self._index_call(views, sparse, flt, limit, terms, more)
            sparse_hits, dense_ok = semantic.sparse, True
            if identifiers:
                await find_held()
        else:
            to_read = recent_at if known_recent is None else None
            semantic, sparse_hits, views, terms, dense_ok = await self._overlapped(
                query, sparse, flt, limit, recent, to_read, find_held if identifiers else None
            )
        dense_hits, latent_hits = semantic.dense, semantic.latent
        if req.alternatives and views:
            dense_hits = best_of_views(
                [dense_hits, await self._alternative_hits(req.alternatives, flt, limit)], limit
            )
        if self.fresh is not None and views:
            # the best lexical hits not embedded yet, embedded now (bounded: fresh.py)
            fresh_dense, fresh_latent = await self.fresh.hits(sparse_hits, views, terms)
            if fresh_dense:
                dense_hits = best_of_views([dense_hits, fresh_dense], limit)
            if fresh_latent:
                latent_hits = best_of_views([latent_hits, fresh_latent], limit)
        lifted = None
        if self.learned is not None and views and self.settings.learned_keys:
            # the questions memories answered in the caller's namespace (learned_keys.py)
            lifted = await self.learned.lift(
                req.namespaces[0] if req.namespaces else "default",
                views[0],
                dense_hits,
                (sparse_hits, latent_hits),
                query,
            )
            dense_hits = lifted.dense
        fast_hits: list[IndexHit] = []
        if self.fast_first is not None and self.settings.mode == "hybrid":
            # pending notes by their static vector, until e5 has read them (fast_first.py);
            # the query's own dense vector scores them
            fast_hits = await self.fast_first.hits(query, flt, views[0] if views else None)
        params = self._params(query, thresholds)
        candidates = fuse(
            dense_hits,
            sparse_hits,
            params,
            latent_hits if terms is not None else None,
            list(semantic.extra.values()),
            [self.settings.channel_weights.get(n, params.channel_weight) for n in semantic.extra],
            [channel_reads(n) for n in semantic.extra],
            fast_hits,
        )
        if lifted is not None:
            lifted.keep_reference(candidates)
        candidates = pin_exact(candidates, held)
        if self.records is not None and any(c.payload.get("current") is False for c in candidates):
            heads = await retired_heads(self.records, candidates, req)
            candidates = carry_to_heads(candidates, heads, self.settings.retired_carry)
        if params.related_floor > 0 and semantic.extra:
            # the channels' view, for [RECENT] (ranking.related): asked only of the
            # types it lists, so only those are marked (~0.1 ms for all 150 candidates)
            asked = set(self.settings.recent_types)
            mark_related(
                (c for c in candidates if c.type in asked),
                semantic.extra,
                {n: channel_reads(n) for n in semantic.extra},
            )
        chosen = select(candidates, params, req.top, req.namespaces)
        if req.by_meaning:
            best = min((c.distance for c in candidates if c.distance is not None), default=2.0)
            rare = await self._held(plain_terms(query), flt)
            chosen = [c for c in chosen if c.point_id in rare or by_meaning(c, params, best)]
        found = signals(
            # a pending note's fast cosine is on e5's scale
            [dense_hits, fast_hits],
            semantic.extra,
            {n: channel_reads(n) for n in semantic.extra},
            bool(held),
        )
        if self.settings.mode != "dense" and wants_unknown(found, self.match_bars, bool(chosen)):
            # near the bar: does the query name what no memory in scope holds? (match.py)
            written = {h.payload.get("script", "latin") for h in (*dense_hits, *sparse_hits)}
            got = await unknown_terms(self.index, query, flt, written)
            if got is not None:
                found = replace(found, unknown=got.share, named=got.named)
        match = judge(found, self.match_bars, bool(chosen))
        # no memory close enough: only the closest few, marked (record_search keeps its
        # own relevance floor above instead)
        weak = match == "weak" and not req.by_meaning
        if weak:
            chosen = chosen[:WEAK_SHOWN]
        results = await self.materialise(chosen, generation)
        # The newest lessons/conclusions are a separate, labelled part of the answer
        # (never counted against ``top``), and only those the index found relevant to
        # this query: an unrelated lesson does not ride along with every search, nor
        # with one that matched nothing well.
        present = {r.id for r in results}
        wanted = {n.id for n in recent if n.id not in present} if match == "strong" else set()
        floor = recent_floor(candidates, params, wanted)
        related = [n for n in recent if n.id in floor and (not req.kinds or "note" in req.kinds)]
        if weak:
            results = [r.model_copy(update={"tags": [*r.tags, WEAK_TAG]}) for r in results]
        response = SearchResponse(
            query=query,
            results=results,
            recent=[note_result(n, floor[n.id], [RECENT_TAG]) for n in related],
            dense_available=dense_ok,
            match=match,
            channels=list(semantic.extra),
        )
        settled = not any(h.payload.get("dense") is False for h in sparse_hits)
        return response, settled

    async def _overlapped(
        self,
        query: str,
        sparse: SparseVector,
        flt: IndexFilter,
        limit: int,
        recent: list[Note],
        recent_at: RecentAt | None,
        beside: Callable[[], Coroutine[Any, Any, None]] | None = None,
    ) -> tuple[Channels, list[IndexHit], list[Sequence[float]], SparseVector | None, bool]:
        """The channels of a query whose embedding is not at hand: the recent read
        (``recent_at``; None: known), the lexical channel and ``beside`` (the exact
        identifiers' look-up) run while it is embedded.
        Returns (the index call's channels, the lexical hits, the query views, the
        latent terms if the index searches them, whether the dense channel answered)."""
        lexical_found: list[Channels] = []

        async def read_recent(at: RecentAt) -> None:
            recent.extend(await self.recent.read(*at))

        async def search_lexical() -> None:
            if combined:  # the embedding was back before this task ran
                return
            lexical_started.append(True)
            lexical_found.append(await self.index.search_channels(None, sparse, flt, limit))

        # The query's embedding is most of a new search's time and runs on the query
        # lane, outside the GIL: the recency read and the lexical channel, which do not
        # need it, run meanwhile on the other core (bench/LOG.md).
        # A cached embedding comes back before the lexical task has run: then the
        # lexical channel joins the one index call instead (three threads contending
        # for the GIL cost ~1 ms more than one call).
        combined, lexical_started = False, list[bool]()
        more: dict[str, Sequence[float]] = {}
        more_done = anyio.Event()

        async def channel_queries() -> None:
            try:
                more.update(await self.vectors.channel_queries(query))
            finally:
                more_done.set()

        async with anyio.create_task_group() as tg:
            if recent_at is not None:
                tg.start_soon(read_recent, recent_at)
            if self.vectors.channels and self.settings.mode != "lexical":
                tg.start_soon(channel_queries)  # beside the main model's, on their own lane
            else:
                more_done.set()
            if beside is not None:
                tg.start_soon(beside)
            if not sparse.is_empty():
                tg.start_soon(search_lexical)
            views, terms, dense_ok = (
                ([], None, False)
                if self.settings.mode == "lexical"
                else await self.vectors.embed(query)
            )
            combined = not sparse.is_empty() and not lexical_started
            terms = self.vectors.latent(terms)
            await more_done.wait()
            semantic = await self._index_call(
                views, sparse if combined else SparseVector([], []), flt, limit, terms, more
            )
        sparse_hits = lexical_found[0].sparse if lexical_found else semantic.sparse
        return semantic, sparse_hits, views, terms, dense_ok

    async def _index_call(
        self,
        views: list[Sequence[float]],
        sparse: SparseVector,
        flt: IndexFilter,
        limit: int,
        terms: SparseVector | None,
        more: Mapping[str, Sequence[float]] | None = None,
    ) -> Channels:
        # every query view goes in one index call: the engine holds the GIL while it
        # searches, so a second concurrent call would only queue behind the first
        return await self.index.search_channels(
            views[0] if views else None,
            sparse,
            flt,
            limit,
            more_dense=views[1:],
            latent=terms,
            channel_queries=more,
        )

    async def _alternative_hits(
        self, alternatives: Sequence[str], flt: IndexFilter, limit: int
    ) -> list[IndexHit]:
        """Dense hits of the other phrasings (every view of each) in one index call."""
        views: list[Sequence[float]] = []
        for alt in alternatives:
            views.extend((await self.vectors.embed(alt))[0])
        if not views:
            return []
        found = await self.index.search_channels(
            views[0], SparseVector([], []), flt, limit, more_dense=views[1:]
        )
        return found.dense

    async def _held(
        self, identifiers: Sequence[tuple[str, int]], flt: IndexFilter
    ) -> dict[str, tuple[IndexHit, int]]:
        """Point id -> (its lexical hit, how many of ``identifiers`` only it holds) for
        each current memory within the request's filters that is the one holder of an
        identifier of the query (exact_terms.py). One sparse request per identifier,
        at most two hits each: one hit means the identifier names that memory."""
        only = replace(flt, current_only=True)
        held: dict[str, tuple[IndexHit, int]] = {}
        for _token, term in identifiers:
            found = await self.index.search_channels(None, SparseVector([term], [1.0]), only, 2)
            if len(found.sparse) == 1:
                hit = found.sparse[0]
                held[hit.id] = (hit, held[hit.id][1] + 1 if hit.id in held else 1)
        return held

    @property
    def _carries(self) -> bool:
        return self.records is not None and self.settings.retired_carry > 0

    def _params(self, query: str, thresholds: dict[str, float]) -> RankingParams:
        s = self.settings
        # n-gram matches in unspaced scripts are weaker evidence than whole words
        unspaced = self.memo.unspaced(query)
        sparse_weight = s.sparse_weight * (1 - unspaced * (1 - s.unspaced_sparse_factor))
        return RankingParams(
            fusion=s.fusion,
            priority_rule=s.priority_rule,
            high_boost=s.high_boost,
            high_first_margin=self.high_first_margin,
            priority_near=s.priority_near,
            related_floor=s.related_floor,
            keep_margin=self.keep_margin,
            margin_fill=s.margin_fill,
            lexical_keep_ratio=s.lexical_keep_ratio,
            rrf_k=s.rrf_k,
            dense_weight=s.dense_weight,
            sparse_weight=sparse_weight,
            latent_weight=s.latent_weight,
            channel_weight=s.channel_weight,
            channel_keep_rank=s.channel_keep_rank,
            channel_keep_ratio=s.channel_keep_ratio,
            fast_weight=s.fast_weight,
            thresholds=thresholds,  # read once, with the answer cache's key
        )
