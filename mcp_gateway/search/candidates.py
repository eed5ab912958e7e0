"""A request's candidates: what each channel of the index finds for its query (one
index call; the lexical one and the recent read run while a new query is embedded),
the other phrasings', the pending memories embedded now (``fresh.py``) or by their
static vector (``fast_first.py``), the learned keys' lift (``learned_keys.py``) and the
one holders of the query's identifiers (``exact_terms.py``). It ranks nothing."""

from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass

import anyio

from mcp_gateway.common.sections import SearchSettings
from mcp_gateway.common.types import IndexFilter, IndexHit, Note, SparseVector
from mcp_gateway.index.base import Channels, best_of_views
from mcp_gateway.index.live import LiveIndex
from mcp_gateway.search.exact_terms import Held, holders
from mcp_gateway.search.fast_first import FastFirst
from mcp_gateway.search.fresh import FreshEmbedder
from mcp_gateway.search.learned_keys import KeyMatcher, Lifted
from mcp_gateway.search.note_reads import RecentAt, RecentNotes
from mcp_gateway.search.query_memo import QueryWords
from mcp_gateway.search.query_vectors import QueryVectors
from mcp_gateway.search.request import SearchRequest


@dataclass(slots=True)
class Found:
    """Each channel's hits for one request, before any ranking."""

    flt: IndexFilter  # the request's filters, as the index reads them
    semantic: Channels  # the index call's channels (``extra``: the further dense ones)
    dense: list[IndexHit]  # the main model's, every phrasing and fresh embedding joined
    sparse: list[IndexHit]
    latent: list[IndexHit] | None  # None: the index searches no latent terms
    fast: list[IndexHit]  # pending notes by their static vector
    held: Held  # the one holder of an identifier of the query (``exact_terms.holders``)
    recent: list[Note]  # the newest lessons/conclusions in scope
    lifted: Lifted | None  # the learned keys' part (``learned_keys.py``)
    dense_ok: bool  # whether the dense channel answered


@dataclass(slots=True)
class Candidates:
    index: LiveIndex
    vectors: QueryVectors
    recent: RecentNotes
    settings: SearchSettings
    current_only: bool  # False: retired records hand their evidence to their heads
    fresh: FreshEmbedder | None
    fast_first: FastFirst | None
    learned: KeyMatcher | None

    async def find(
        self, query: str, words: QueryWords, req: SearchRequest, generation: int | None
    ) -> Found:
        mode = self.settings.mode
        sparse = SparseVector([], []) if mode == "dense" else words.sparse
        flt = IndexFilter(
            kinds=req.kinds,
            types=(req.type,) if req.type else (),
            domains=(req.domain,) if req.domain else (),
            namespaces=req.namespaces,
            current_only=self.current_only,
        )
        limit = self.settings.candidates
        recent_at: RecentAt = (req.type, req.namespaces, req.domain, generation)
        known_recent = self.recent.known(*recent_at)
        recent: list[Note] = [] if known_recent is None else known_recent
        # a cached embedding and the recent list known: nothing to overlap, so one index
        # call and no task group (~0.2 ms of a ~3 ms search at 2k)
        cached = self.vectors.cached(query) if known_recent is not None else None
        # the look-up is lexical: the dense-only baseline (bench/quality) goes without
        exact = self.settings.exact_first and mode != "dense"
        identifiers = words.identifiers if exact else []
        held: Held = {}
        lexical: list[Channels] = []

        async def read_recent() -> None:
            recent.extend(await self.recent.read(*recent_at))

        async def find_held() -> None:
            held.update(await holders(self.index, identifiers, flt))

        async def search_lexical() -> None:
            if combined:  # the embedding was back before this task ran
                return
            lexical_started.append(True)
            lexical.append(await self.index.search_channels(None, sparse, flt, limit))

        # The query's embedding is most of a new search's time and runs on the query
        # lane, outside the GIL: the recency read, the identifiers' look-up and the
        # lexical channel, which do not need it, run meanwhile on the other core
        # (bench/LOG.md). A cached embedding comes back before the lexical task has
        # run: then the lexical channel joins the one index call instead (three threads
        # contending for the GIL cost ~1 ms more than one call).
        combined, lexical_started = False, list[bool]()
        group = anyio.create_task_group() if cached is None else nullcontext()
        async with group as tg:
            if tg is not None:
                if known_recent is None:
                    tg.start_soon(read_recent)
                if identifiers:
                    tg.start_soon(find_held)
                if not sparse.is_empty():
                    tg.start_soon(search_lexical)
            vectors = await self.vectors.read(query, req.alternatives, cached)
            views = vectors.views
            combined = not sparse.is_empty() and not lexical_started
            # every query view goes in one index call: the engine holds the GIL while
            # it searches, so a second concurrent call would only queue behind the first
            semantic = await self.index.search_channels(
                views[0] if views else None,
                sparse if combined else SparseVector([], []),
                flt,
                limit,
                more_dense=views[1:],
                latent=vectors.terms,
                channel_queries=vectors.more,
            )
        if cached is not None and identifiers:
            await find_held()
        sparse_hits = lexical[0].sparse if lexical else semantic.sparse
        dense_hits, latent_hits = semantic.dense, semantic.latent
        if req.alternatives and views:
            # the other phrasings' dense hits: every view of each, in one index call
            other: list[IndexHit] = []
            if alts := vectors.alternatives:
                found = await self.index.search_channels(
                    alts[0], SparseVector([], []), flt, limit, more_dense=alts[1:]
                )
                other = found.dense
            dense_hits = best_of_views([dense_hits, other], limit)
        if self.fresh is not None and views:
            # the best lexical hits not embedded yet, embedded now (bounded: fresh.py)
            fresh_dense, fresh_latent = await self.fresh.hits(sparse_hits, views, vectors.terms)
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
        if self.fast_first is not None and mode == "hybrid":
            # pending notes by their static vector, until e5 has read them (fast_first.py);
            # the query's own dense vector scores them
            fast_hits = await self.fast_first.hits(query, flt, views[0] if views else None)
        latent = latent_hits if vectors.terms is not None else None
        hits = (dense_hits, sparse_hits, latent, fast_hits)
        return Found(flt, semantic, *hits, held, recent, lifted, vectors.dense_ok)
