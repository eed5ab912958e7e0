"""The application context: every store and client opened in one place, closed in one
place. Only the owner of a data dir opens it (see ``owner``).

``open_app`` opens SQLite, the embedder, the live index (named in the ``meta`` table)
and the job scheduler. Serving owners (``run_jobs=True``) also run the applier (jobs'
vectors into the index) and periodic reconcile; one-shot CLI commands that own the
stores for a moment run jobs inline instead.

A gateway whose truth store others share (``database_url`` set) also follows the change
feed (``indexing.follow``: what other gateways write becomes searchable here, and every
search first catches up) under cursors of its own (``<key>@<gateway id>``). Where the
index itself is shared too (a Qdrant server, ``qdrant_url``), one gateway at a time
follows the feeds for the deployment and the others write no point
(``indexing.shared``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Callable, Coroutine, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
import anyio.abc

from mcp_gateway.common import fsperms
from mcp_gateway.common.access import settings_scope
from mcp_gateway.common.errors import EmbedderUnavailable, KiokuError
from mcp_gateway.common.keyfile import load_secret
from mcp_gateway.common.settings import KiokuSettings
from mcp_gateway.common.types import Note
from mcp_gateway.embedders import build_embedder, latent_configured
from mcp_gateway.embedders.base import Embedder
from mcp_gateway.embedders.channels import (
    ChannelEmbedder,
    build_channel_embedders,
    index_gaps,
)
from mcp_gateway.embedders.deferred import Deferred, deferred_channels
from mcp_gateway.index import catalog
from mcp_gateway.index.base import DenseChannel, IndexSpec
from mcp_gateway.index.live import LiveIndex
from mcp_gateway.indexing import snapshot
from mcp_gateway.indexing.applier import Applier
from mcp_gateway.indexing.follow import Follower
from mcp_gateway.indexing.indexer import Indexer
from mcp_gateway.indexing.reconcile import ReconcileReport, reconcile
from mcp_gateway.indexing.shared import SUFFIX as DEPLOYMENT_SUFFIX
from mcp_gateway.indexing.shared import SharedWriter
from mcp_gateway.indexing.writebehind import WriteBehind
from mcp_gateway.jobs import JobContext, Scheduler, build_scheduler
from mcp_gateway.records import RecordStore
from mcp_gateway.search import fast_first
from mcp_gateway.search.fresh import FreshEmbedder, FreshLimits
from mcp_gateway.search.learned_keys import KeyMatcher
from mcp_gateway.search.neardup import Folder
from mcp_gateway.search.prefetch import Prefetcher
from mcp_gateway.search.recent_asks import RecentAsks
from mcp_gateway.search.service import SearchService
from mcp_gateway.search.thresholds import ThresholdCache
from mcp_gateway.stores.activity import ActivityLog, open_activity_log
from mcp_gateway.stores.changes import ChangeFeed
from mcp_gateway.stores.db import Database
from mcp_gateway.stores.learned_keys import LearnedKeyStore
from mcp_gateway.stores.leases import Leases
from mcp_gateway.stores.notes import NoteStore
from mcp_gateway.stores.schema import TRIGGERS
from mcp_gateway.stores.vectors import VectorStore

log = logging.getLogger(__name__)


@dataclass(slots=True)
class AppContext:
    settings: KiokuSettings
    db: Database
    notes: NoteStore
    records: RecordStore
    vectors: VectorStore
    index: LiveIndex
    embedder: Embedder
    indexer: Indexer
    search: SearchService
    thresholds: ThresholdCache
    activity: ActivityLog
    applier: Applier
    job_context: JobContext
    writes: WriteBehind
    # embeds pending notes between searches (None: off); runs only with the jobs
    prefetcher: Prefetcher | None = None
    # follows the change feed (None: the embedded owner, the only writer)
    follower: Follower | None = None
    # with an index every gateway shares: its one writer, when this gateway holds the
    # lease, and the wait for it otherwise (None: the index is this process's own)
    shared: SharedWriter | None = None
    # this gateway's id where the truth store is shared ("" otherwise): its leases
    gateway: str = ""
    jobs: Scheduler = field(init=False)
    background: anyio.abc.TaskGroup | None = None
    # set once the start-up reconcile has run (or at once when none runs)
    reconciled: anyio.Event = field(default_factory=anyio.Event)
    # further dense channels (embedder.channels), started
    channels: tuple[ChannelEmbedder, ...] = ()

    @property
    def namespaces(self) -> tuple[str, ...]:
        """The namespaces this process serves by default (stdio, jobs, exports)."""
        return settings_scope(self.settings).read

    def notes_pending(self) -> None:
        """Notes were added or re-texted: the prefetcher (if on) embeds between searches."""
        if self.prefetcher is not None:
            self.prefetcher.wake()

    @property
    def index_current(self) -> bool:
        """False while the live index was built for another model than the configured
        one: search is lexical until `kioku reindex` builds and adopts a new index."""
        return self.index.spec.model_id == self.embedder.model_id

    def spawn(self, fn: Callable[[], Coroutine[Any, Any, Any]]) -> None:
        """Run ``fn`` in the owner's background, for as long as the app is open."""
        if self.background is None:
            raise RuntimeError("background work needs an app opened with run_jobs=True")
        self.background.start_soon(fn)

    def pool_later(self, notes: Sequence[Note]) -> None:
        """Imported or re-texted notes' static vectors, after the call that wrote their
        points (``Indexer.fill_fast_many``); none without background work: such a process
        ends soon, and the owner pools what is still pending when it opens."""
        if notes and self.background is not None and self.index.fast_pool is not None:
            self.background.start_soon(self.indexer.fill_fast_many, notes)

    async def settle(self) -> None:
        """Wait until every job requested so far has run, a prefetch in flight has
        stored its vector, and their results are applied (tests, benches, shutdown)."""
        await self.reconciled.wait()
        await self.writes.caught_up()
        await self.jobs.drain()
        if self.prefetcher is not None:  # its vector too, before the applier's pass
            await self.prefetcher.idle()
        if self.shared is not None:  # applied here by the writer, or awaited from it
            await self.shared.catch_up()
            return
        if self.follower is not None:
            await self.follower.apply_pending()
        await self.applier.apply_pending()

    def stopping(self) -> None:
        """The app is closing: embedding starts no further batch and the engine no further
        call, so a stop takes well under a second whatever the backlog (acknowledged
        notes are in the truth store; the next start's reconcile queues what is left)."""
        self.job_context.stopping.set()
        self.embedder.interrupt()
        for channel in self.channels:
            channel.embedder.interrupt()

    async def reconcile(self) -> ReconcileReport:
        """Repair this gateway's index; with a shared store, the work on the store
        itself (queueing what has no vector, forgetting orphan vectors) only in the
        holder of the ``reconcile`` lease: once per deployment, not once per gateway.
        A gateway's first pass does it all the same: a gateway restarted after a kill
        queues at once what its lost in-process jobs had not embedded.
        With an index every gateway shares, only its writer reconciles (it alone writes
        the index), all of it, every pass."""
        terms = self.index.spec.latent and self.embedder.latent_terms
        deployment = True
        indexer = self.indexer
        if self.shared is not None and self.follower is not None:
            if not await self.shared.may_write():
                return ReconcileReport(deployment=False)
            indexer = self.follower.indexer  # writes points (``self.indexer`` does not)
        elif self.settings.shared_store and self.reconciled.is_set():
            ttl = self.settings.queue.reconcile_every_s * 1.5
            try:  # the gateway id holds it: a restarted holder takes it back at once
                deployment = await Leases(self.db, self.gateway).acquire(RECONCILE_LEASE, ttl)
            except KiokuError as exc:
                log.warning("reconcile: no lease (%s); repairing this index only", exc)
                deployment = False
        return await reconcile(
            self.index,
            indexer,
            self.notes,
            self.records,
            self.jobs,
            terms_wanted=terms,
            deployment=deployment,
        )


async def start_embedder(embedder: Embedder, db: Database, settings: KiokuSettings) -> None:
    """Start the embedder; if it is down but the live index already knows its dimension,
    start anyway: adds are stored and lexically searchable, and the jobs embed them
    once the embedder answers again."""
    try:
        await embedder.start()
    except EmbedderUnavailable as exc:
        info = await catalog.live_info(db, settings)
        if info.model_id != embedder.model_id or info.dim is None:
            raise
        log.warning(
            "%s -- starting with the index's dimension %s; indexing will catch up", exc, info.dim
        )
        embedder.dim = info.dim


async def live_spec(
    db: Database,
    settings: KiokuSettings,
    embedder: Embedder,
    channels: tuple[DenseChannel, ...],
) -> IndexSpec:
    """The live collection's spec; a data dir that never built one adopts the embedder
    and ``channels`` (the configured channels whose models started)."""
    info = await catalog.live_info(db, settings)
    catalog.check_schema(info)
    # asked for when the collection is made; an existing one says what it has (index open)
    latent = latent_configured(settings.embedder)
    if info.model_id is None or info.dim is None:
        spec = IndexSpec(
            info.collection, embedder.dim, embedder.model_id, latent=latent, channels=channels
        )
        await catalog.adopt(db, spec, applied_seq=0)
        return spec
    if info.model_id != embedder.model_id:
        log.warning(
            "the index was built for %s but the configured embedder is %s: searching "
            "lexically until `kioku reindex` builds an index for %s",
            info.model_id,
            embedder.model_id,
            embedder.model_id,
        )
    return IndexSpec(info.collection, info.dim, info.model_id, latent=latent, channels=channels)


@asynccontextmanager
async def open_app(
    settings: KiokuSettings, *, run_jobs: bool = True, models: bool = True
) -> AsyncIterator[AppContext]:
    """Open every store and client; ``run_jobs=False`` for one-shot CLI commands;
    ``models=False``: the models load at the first text embedded, not now, where the
    index knows their dimensions (``embedders.deferred``: a command that only reads)."""
    async with AsyncExitStack() as stack:
        fsperms.secure_data_dir(settings.data_dir)  # 0700, and 0600 files inside
        db = Database(settings.database, reserve_bytes=settings.index.reserve_free_mb << 20)
        await db.open()
        stack.push_async_callback(db.close)

        embedder = build_embedder(settings.embedder)
        info = await catalog.live_info(db, settings)
        if not models and info.dim is not None and info.model_id == embedder.model_id:
            embedder = Deferred(embedder, info.dim)
            stack.push_async_callback(embedder.aclose)
            channels = deferred_channels(settings.embedder)
            for channel in channels:
                stack.push_async_callback(channel.embedder.aclose)
        else:
            await start_embedder(embedder, db, settings)
            stack.push_async_callback(embedder.aclose)
            channels = await _start_channels(stack, settings)
        spec = await live_spec(db, settings, embedder, tuple(c.channel for c in channels))
        for name in await anyio.to_thread.run_sync(
            catalog.remove_leftovers, settings, spec.collection
        ):
            log.info("removed %s, left by an interrupted rebuild or snapshot load", name)
        suffix = gateway = ""
        if settings.shared_store:
            gateway = "@" + load_secret(settings.data_dir, GATEWAY_ID_FILE)[:6].hex()
            # one index for all: the deployment's cursors, else this gateway's own
            suffix = DEPLOYMENT_SUFFIX if settings.shared_index else gateway
            if _embedded(settings) and settings.index.snapshot_every_s > 0:
                # no index here yet: start from the newest snapshot
                await snapshot.load_newest(db, catalog.edge_root(settings), spec, suffix)
        index = LiveIndex(await catalog.open_index(settings, spec))
        stack.push_async_callback(index.close)
        fast_first.attach(index, settings.search)  # before any point is written
        for gap in index_gaps(spec.channels, index.spec.channels):
            log.warning("%s", gap)

        if settings.shared_store:
            await _check_feed(db)
        app = _compose(settings, db, embedder, index, suffix, channels, gateway)
        if app.shared is not None:  # a clean stop hands the writing over at once
            stack.push_async_callback(app.shared.release)
        pooled = await fast_first.rebuild(index, app.notes)
        if pooled:
            log.info("%d pending notes searchable by their fast vector", pooled)
        # last to run: a process that then ends with os._exit (an engine call still
        # running, embedders.lanes.exit_if_busy) skips atexit, where the log drains
        stack.push_async_callback(anyio.to_thread.run_sync, app.activity.flush)
        app.jobs = build_scheduler(
            app.job_context, run_jobs=run_jobs, apply=app.applier.apply_pending
        )
        await app.jobs.start()
        stack.push_async_callback(app.jobs.close)
        if app.follower is not None and run_jobs:
            # what another gateway wrote reaches this data dir's session_context.md too
            jobs = app.jobs
            app.follower.changed = lambda: jobs.records_changed([], export=True)
        # before the jobs and the index close: a follow-up queues a job, writes a point
        stack.push_async_callback(app.writes.close)
        if run_jobs:
            tg = await stack.enter_async_context(anyio.create_task_group())
            stack.callback(tg.cancel_scope.cancel)
            app.background = tg
            if app.shared is not None:  # it runs the follower's and applier's passes
                tg.start_soon(app.shared.run)
            else:
                tg.start_soon(app.applier.run)
            if app.follower is not None and app.shared is None:
                tg.start_soon(app.follower.run)
                if _embedded(settings) and settings.index.snapshot_every_s > 0:
                    tg.start_soon(
                        snapshot.publish_every,
                        db,
                        lambda: index.current,
                        app.follower,
                        app.applier.points_lock,
                        suffix,
                        settings.index.snapshot_every_s,
                        settings.index.snapshot_min_changes,
                    )
            tg.start_soon(_reconcile_every, app, settings.queue.reconcile_every_s)
            if app.prefetcher is not None:
                tg.start_soon(app.prefetcher.run)
            if index.fast_pool is not None:
                tg.start_soon(fast_first.release_idle, index)
        else:
            app.reconciled.set()
        # last in, so first out: before the background work, the jobs and the engine close
        stack.callback(app.stopping)
        log.info(
            "kioku ready: data=%s index=%s/%s embedder=%s jobs=%s",
            settings.data_dir,
            type(index.current).__name__,
            index.spec.collection,
            embedder.model_id,
            type(app.jobs).__name__,
        )
        yield app


async def _start_channels(
    stack: AsyncExitStack, settings: KiokuSettings
) -> tuple[ChannelEmbedder, ...]:
    """The configured further dense channels whose models start. One that cannot (its
    package or onnxruntime missing) is one warning that says what to do, and this
    process ranks and writes without it: the channels are on by default, and a memory
    server that no longer starts where a channel's model cannot load would be worse
    than one ranking as the release before. A later start with it available builds it
    (``Rebuilder.mend_channels``)."""
    started = []
    for channel in build_channel_embedders(settings.embedder):
        try:
            await channel.embedder.start()
        except EmbedderUnavailable as exc:
            log.warning("%s -- going without the %s channel", exc, channel.channel.name)
            continue
        stack.push_async_callback(channel.embedder.aclose)
        started.append(channel)
    return tuple(started)


GATEWAY_ID_FILE = "gateway.id"


def _embedded(settings: KiokuSettings) -> bool:
    """Each gateway has an index of its own (the embedded engine): it joins, publishes."""
    return settings.index.backend == "edge" and not settings.qdrant_url


RECONCILE_LEASE = "reconcile"
RECONCILE_AFTER_JOIN_S = 120.0


async def _check_feed(db: Database) -> None:
    missing = set(TRIGGERS) - await ChangeFeed(db).triggers()
    if missing:
        # a later migration rebuilt a watched table without recreating its trigger:
        # other gateways would miss these writes until their next reconcile
        log.error("change feed triggers missing: %s", ", ".join(sorted(missing)))


def _compose(
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


async def _reconcile_every(app: AppContext, every_s: float) -> None:
    # A joining gateway's first pass waits until its index is current: the pass pages
    # every note under the points lock the feed's catch-up needs too, so run beside it
    # it delayed the join (3,000 notes: current 20 s after ready, the pass beside it)
    # (at most RECONCILE_AFTER_JOIN_S: a gateway under a stream of writes may take long
    # to meet the heads exactly)
    if app.follower is not None:
        with anyio.move_on_after(RECONCILE_AFTER_JOIN_S):
            await app.follower.current.wait()
    while True:
        try:
            await app.reconcile()
        except KiokuError as exc:
            log.warning("reconcile failed: %s; retrying in %.0f s", exc, every_s)
        except Exception:
            log.exception("reconcile failed; retrying in %.0f s", every_s)
        app.reconciled.set()
        await anyio.sleep(every_s)
