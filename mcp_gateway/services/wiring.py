"""Which object gets which store: one app's stores, index writers, feed followers and
search service, wired together once (``compose``), for ``services.app.open_app``."""

from __future__ import annotations

import time

import anyio
import anyio.abc

from mcp_gateway.common.access import settings_scope
from mcp_gateway.common.settings import KiokuSettings
from mcp_gateway.embedders.base import Embedder
from mcp_gateway.embedders.channels import ChannelEmbedder
from mcp_gateway.index.live import LiveIndex
from mcp_gateway.indexing.applier import Applier
from mcp_gateway.indexing.follow import Follower
from mcp_gateway.indexing.indexer import Indexer
from mcp_gateway.indexing.shared import SharedWriter
from mcp_gateway.indexing.writebehind import WriteBehind
from mcp_gateway.jobs import JobContext
from mcp_gateway.records import RecordStore
from mcp_gateway.search import fast_first
from mcp_gateway.search.fresh import FreshEmbedder, FreshLimits
from mcp_gateway.search.learned_keys import KeyMatcher
from mcp_gateway.search.neardup import Folder
from mcp_gateway.search.prefetch import Prefetcher
from mcp_gateway.search.recent_asks import RecentAsks
from mcp_gateway.search.service import SearchService
from mcp_gateway.search.thresholds import ThresholdCache
from mcp_gateway.services.app_context import AppContext
from mcp_gateway.stores.activity import open_activity_log
from mcp_gateway.stores.changes import ChangeFeed
from mcp_gateway.stores.db import Database
from mcp_gateway.stores.learned_keys import LearnedKeyStore
from mcp_gateway.stores.notes import NoteStore
from mcp_gateway.stores.vectors import VectorStore


def compose(
    settings: KiokuSettings,
    db: Database,
    embedder: Embedder,
    index: LiveIndex,
    suffix: str = "",
    channels: tuple[ChannelEmbedder, ...] = (),
    gateway: str = "",
) -> AppContext:
    notes = NoteStore(db)
    records = RecordStore(db, settings.project)
    vectors = VectorStore(db)
    thresholds = ThresholdCache(db, embedder.model_id, dict(settings.search.thresholds))
    activity = open_activity_log(db, settings.activity_log_path, shared=settings.shared_store)
    writes = WriteBehind()
    points_lock = anyio.Lock()  # whole-point writes: the applier's and the indexer's
    applier = Applier(
        db, notes, records, vectors, index, writes=writes, points_lock=points_lock, suffix=suffix
    )
    fast = {c.channel.name: c.embedder for c in channels if c.fast}
    shared_index = settings.shared_index
    # the request paths' writes; with one index for all, none (the writer's feed pass)
    indexer = Indexer(
        notes, records, index, vectors, points_lock, fast, pending=index, direct=not shared_index
    )
    feed_indexer = (
        Indexer(notes, records, index, vectors, points_lock, pending=index)
        if shared_index
        else indexer
    )
    follower = Follower(db, ChangeFeed(db), feed_indexer, applier, suffix) if suffix else None
    shared = None
    if shared_index and follower is not None:
        shared = SharedWriter(
            db,
            index,
            follower,
            applier,
            gateway,
            settings.index.writer_lease_s,
            settings.index.writer_wait_s,
        )
    catch_up = follower.catch_up if follower is not None else None
    if shared is not None:
        catch_up = shared.catch_up
    s = settings.search
    limits = FreshLimits(s.fresh_top, s.fresh_max_bytes, s.fresh_budget_ms)
    kc = JobContext(
        settings=settings,
        db=db,
        notes=notes,
        records=records,
        vectors=vectors,
        embedder=embedder,
        activity=activity,
        namespaces=settings_scope(settings).read,
        vectors_written=applier.wake,
        thresholds_changed=thresholds.invalidate,
        channels=channels,
    )
    fresh = FreshEmbedder(notes, records, vectors, embedder, limits, applier.wake)
    # near-duplicates fold on stored vectors only: no embedding on the search path
    folder = Folder(vectors, embedder.model_id)
    search = SearchService(
        notes,
        index,
        embedder,
        s,
        thresholds,
        records=records,
        fresh=fresh,
        writes=writes,
        folder=folder,
        catch_up=catch_up,
        channels=channels,
        fast_first=(
            fast_first.FastFirst(index, s, embedder.model_id)
            if index.fast_pool is not None
            else None
        ),
        learned=KeyMatcher(
            LearnedKeyStore(db),
            embedder.model_id,
            min_cosine=s.key_min_cosine,
            offset=s.key_offset,
            cross_cosine=s.key_cross_cosine,
            asks=RecentAsks(
                activity.read_recent, own_since=None if activity.shared else time.time()
            ),
        ),
    )
    prefetcher = (
        Prefetcher(notes, fresh, search.searches, s.prefetch_budget_ms)
        if s.prefetch_budget_ms > 0
        else None
    )
    return AppContext(
        settings=settings,
        db=db,
        notes=notes,
        records=records,
        vectors=vectors,
        index=index,
        embedder=embedder,
        indexer=indexer,
        search=search,
        thresholds=thresholds,
        activity=activity,
        applier=applier,
        job_context=kc,
        writes=writes,
        prefetcher=prefetcher,
        follower=follower,
        shared=shared,
        gateway=gateway,
        channels=channels,
    )
