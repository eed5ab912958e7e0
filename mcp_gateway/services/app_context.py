"""The application context: the stores, the index, the embedders and the use cases'
services of one open app, and what an open app does as a whole (settle, stop, reconcile
its index). ``services.app.open_app`` opens it and ``services.wiring.compose`` builds it."""

from __future__ import annotations

import logging
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio
import anyio.abc

from mcp_gateway.common.access import settings_scope
from mcp_gateway.common.errors import KiokuError
from mcp_gateway.common.settings import KiokuSettings
from mcp_gateway.common.types import Note
from mcp_gateway.embedders.base import Embedder
from mcp_gateway.embedders.channels import ChannelEmbedder
from mcp_gateway.index.live import LiveIndex
from mcp_gateway.indexing.applier import Applier
from mcp_gateway.indexing.follow import Follower
from mcp_gateway.indexing.indexer import Indexer
from mcp_gateway.indexing.reconcile import ReconcileReport, reconcile
from mcp_gateway.indexing.shared import SharedWriter
from mcp_gateway.indexing.writebehind import WriteBehind
from mcp_gateway.jobs import JobContext, Scheduler
from mcp_gateway.records import RecordStore
from mcp_gateway.search.prefetch import Prefetcher
from mcp_gateway.search.service import SearchService
from mcp_gateway.search.thresholds import ThresholdCache
from mcp_gateway.stores.activity import ActivityLog
from mcp_gateway.stores.db import Database
from mcp_gateway.stores.leases import Leases
from mcp_gateway.stores.notes import NoteStore
from mcp_gateway.stores.vectors import VectorStore

log = logging.getLogger(__name__)

# the lease a deployment's one reconciler of the shared truth store holds
RECONCILE_LEASE = "reconcile"


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
