"""Opening an app: every store and client opened in one place, closed in one place
(what an open app is: ``app_context``; which object gets which store: ``wiring``). Only
the owner of a data dir opens it (see ``owner``).

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
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager

import anyio
import anyio.abc

from mcp_gateway.common import fsperms
from mcp_gateway.common.errors import EmbedderUnavailable, KiokuError
from mcp_gateway.common.keyfile import load_secret
from mcp_gateway.common.settings import KiokuSettings
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
from mcp_gateway.indexing.shared import SUFFIX as DEPLOYMENT_SUFFIX
from mcp_gateway.jobs import build_scheduler
from mcp_gateway.search import fast_first
from mcp_gateway.services.app_context import AppContext
from mcp_gateway.services.wiring import compose
from mcp_gateway.stores.changes import ChangeFeed
from mcp_gateway.stores.db import Database
from mcp_gateway.stores.schema import TRIGGERS

__all__ = ["AppContext", "live_spec", "open_app", "start_embedder"]

log = logging.getLogger(__name__)


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
        app = compose(settings, db, embedder, index, suffix, channels, gateway)
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


RECONCILE_AFTER_JOIN_S = 120.0


async def _check_feed(db: Database) -> None:
    missing = set(TRIGGERS) - await ChangeFeed(db).triggers()
    if missing:
        # a later migration rebuilt a watched table without recreating its trigger:
        # other gateways would miss these writes until their next reconcile
        log.error("change feed triggers missing: %s", ", ".join(sorted(missing)))


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
