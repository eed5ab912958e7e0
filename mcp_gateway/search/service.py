"""``search_memory``'s core: a checked request down through stages that do not call
back: the query's words (``query_memo``), its candidates (``candidates``, with the
query's vectors from ``query_vectors``), the ranking (``calibration.params``,
``ranking``), the match judgement (``match``), the results (``materialise``, then
``neardup``). Between two writes, what a search already read is not computed again
(``answers.py``, ``note_reads.py``, ``query_memo.py``; docs/performance.md)."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace

from mcp_gateway.common.sections import SearchSettings
from mcp_gateway.common.types import Note, SearchResponse
from mcp_gateway.embedders.base import Embedder
from mcp_gateway.embedders.channels import ChannelEmbedder, channel_reads
from mcp_gateway.index.live import LiveIndex
from mcp_gateway.indexing.writebehind import WriteBehind
from mcp_gateway.search.answers import AnswerCache
from mcp_gateway.search.calibration import for_model
from mcp_gateway.search.candidates import Candidates
from mcp_gateway.search.exact_terms import holders, plain_terms
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
from mcp_gateway.search.note_reads import RecentNotes, ShownNotes
from mcp_gateway.search.prefetch import Searches
from mcp_gateway.search.query_memo import QueryMemo
from mcp_gateway.search.query_vectors import QueryVectors
from mcp_gateway.search.ranking import by_meaning, fuse, pin_exact, recent_floor, select
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
        self.index, self.settings, self.thresholds = index, settings, thresholds
        self.records, self.fresh, self.writes = records, fresh, writes
        self.folder, self.learned = folder, learned
        self._keys_seen = 0
        self.searches = Searches()
        self.memo = QueryMemo(names=settings.exact_names)
        self.recent, self.shown = RecentNotes(notes, settings), ShownNotes(notes)
        self.answers = AnswerCache(settings.answer_cache_size)
        self.calibration = for_model(embedder.model_id).under(settings)
        # what a strong match is, for this model and these further channels (match.py)
        self.match_bars = bars_for(embedder.model_id, [c.channel.name for c in channels])
        calibration = self.calibration
        self.vectors = QueryVectors(embedder, index, settings, self.memo, calibration, channels)
        carries = records is not None and settings.retired_carry > 0
        self.candidates = Candidates(
            index, self.vectors, self.recent, settings, not carries, fresh, fast_first, learned
        )
        self.materialise = Materialiser(
            self.shown,
            index,
            records,
            self.calibration.newer_similarity,
            settings.newer_ratio,
            settings.question_ratio if settings.questions_after else None,
        )

    async def search(self, req: SearchRequest) -> SearchResponse:
        """``req`` comes checked (``NoteQuery.checked``, once per search, at the door's
        service): it is used as it is."""
        query = req.query
        namespace = req.namespaces[0] if req.namespaces else "default"
        if self.writes is not None:  # every note acknowledged to a reader is in the index
            await self.writes.caught_up(req.namespaces)
        if self.catch_up is not None:  # ...whichever gateway acknowledged it
            await self.catch_up()
        # read before anything else: a write that lands meanwhile makes this answer stale
        generation: int | None = self.index.generation
        filters = (req.type, req.domain, req.top, tuple(req.namespaces))
        key = (query, *filters, req.alternatives, req.kinds, req.by_meaning)
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
        words = self.memo.words(query)
        found = await self.candidates.find(query, words, req, generation)
        params = self.calibration.params(self.settings, words.unspaced, thresholds)
        extra = found.semantic.extra
        candidates = fuse(
            found.dense,
            found.sparse,
            params,
            found.latent,
            list(extra.values()),
            [self.settings.channel_weights.get(n, params.channel_weight) for n in extra],
            [channel_reads(n) for n in extra],
            found.fast,
        )
        if found.lifted is not None:
            found.lifted.keep_reference(candidates)
        candidates = pin_exact(candidates, found.held)
        if self.records is not None and any(c.payload.get("current") is False for c in candidates):
            heads = await retired_heads(self.records, candidates, req)
            candidates = carry_to_heads(candidates, heads, self.settings.retired_carry)
        if params.related_floor > 0 and extra:
            # the channels' view, for [RECENT] (ranking.related): asked only of the
            # types it lists, so only those are marked (~0.1 ms for all 150 candidates)
            asked = set(self.settings.recent_types)
            mark_related(
                (c for c in candidates if c.type in asked),
                extra,
                {n: channel_reads(n) for n in extra},
            )
        chosen = select(candidates, params, req.top, req.namespaces)
        if req.by_meaning:
            best = min((c.distance for c in candidates if c.distance is not None), default=2.0)
            rare = await holders(self.index, plain_terms(query), found.flt)
            chosen = [c for c in chosen if c.point_id in rare or by_meaning(c, params, best)]
        sig = signals(
            # a pending note's fast cosine is on e5's scale
            [found.dense, found.fast],
            extra,
            {n: channel_reads(n) for n in extra},
            bool(found.held),
        )
        if self.settings.mode != "dense" and wants_unknown(sig, self.match_bars, bool(chosen)):
            # near the bar: does the query name what no memory in scope holds? (match.py)
            written = {h.payload.get("script", "latin") for h in (*found.dense, *found.sparse)}
            got = await unknown_terms(self.index, query, found.flt, written)
            if got is not None:
                sig = replace(sig, unknown=got.share, named=got.named)
        match = judge(sig, self.match_bars, bool(chosen))
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
        recent = found.recent
        wanted = {n.id for n in recent if n.id not in present} if match == "strong" else set()
        floor = recent_floor(candidates, params, wanted)
        related = [n for n in recent if n.id in floor and (not req.kinds or "note" in req.kinds)]
        if weak:
            results = [r.model_copy(update={"tags": [*r.tags, WEAK_TAG]}) for r in results]
        response = SearchResponse(
            query=query,
            results=results,
            recent=[note_result(n, floor[n.id], [RECENT_TAG]) for n in related],
            dense_available=found.dense_ok,
            match=match,
            channels=list(extra),
        )
        settled = not any(h.payload.get("dense") is False for h in found.sparse)
        return response, settled
