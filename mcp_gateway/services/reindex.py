"""``kioku reindex``: build a new index beside the live one, then swap (blue/green).

Vectors come from the truth store, so a rebuild for the same model embeds nothing; a
rebuild for another model (or dimension) embeds what the truth store lacks for it and
keeps those vectors. The live index serves every search until the new one is
complete; while it builds, every write is mirrored into it (``LiveIndex``). Only then
are the new collection and model adopted, in one SQLite transaction. A rebuild that is
interrupted (Ctrl-C, a crash) or fails leaves the live index as it was; its half-built
collection is removed.

Two ways to build (docs/queue.md, "Rebuilds: blue/green"):
- in this process, mirroring every write into the new collection (small collections,
  the Qdrant-client backend, or a model switch's embedding pass);
- for the embedded engine above ``index.exact_search_below`` points, in a separate
  process that also builds the HNSW graph (``rebuild/build.py``), which would freeze the
  owner's event loop if built here. Writes made meanwhile are journaled by the live
  index and rewritten into the new collection from the truth store before the swap;
  the applier's cursor restarts at the vectors' seq taken before the build, and the
  reconcile after the swap removes anything deleted. The owner also starts such a build
  by itself when the live collection wants a graph, or below that size a seal
  (``watch_graph``, ``index.edge_graph``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio
import anyio.to_thread

from mcp_gateway.common.types import IndexPoint, RebuildStatus, point_id
from mcp_gateway.embedders.base import Encoded
from mcp_gateway.index import catalog
from mcp_gateway.index.base import Index, IndexSpec
from mcp_gateway.indexing.indexer import Indexer
from mcp_gateway.rebuild.build import build_command, build_env, run_build
from mcp_gateway.rebuild.fill import VectorsFor, fill_notes, fill_records, stored_vectors
from mcp_gateway.services.app import AppContext
from mcp_gateway.stores.vectors import content_hash

log = logging.getLogger(__name__)

# A seal waits (at most this long) until no note waits for its vectors: a note the build
# reads before its exact vector lands is written again after the swap, which moves it
# out of the sealed segment and leaves a deleted copy there (10k notes sealed during a
# burst: ~2,000 moved; the index call 1.47x a clean seal's 1.04x; bench/LOG.md)
SEAL_WAIT_S = 300.0
# a shared Qdrant collection replaced by a rebuild lives this long after the swap:
# three of the other gateways' checks (index_follow.FOLLOW_EVERY_S)
SHARED_SWAP_GRACE_S = 15.0


@dataclass(slots=True)
class _Run:
    status: RebuildStatus = field(default_factory=RebuildStatus)
    started: float = field(default_factory=time.monotonic)


class Rebuilder:
    """One rebuild at a time per owner; ``status`` is what `kioku reindex` shows."""

    def __init__(self, app: AppContext) -> None:
        self.app = app
        self.run_state = _Run()
        self._lock = anyio.Lock()
        self._cancel: anyio.CancelScope | None = None
        self._seal_due_since: float | None = None

    @property
    def status(self) -> RebuildStatus:
        st = self.run_state.status
        if st.state == "running":
            st.seconds = round(time.monotonic() - self.run_state.started, 2)
        return st

    def cancel(self) -> bool:
        if self._cancel is None:
            return False
        self._cancel.cancel()
        return True

    def start(
        self, spawn: Callable[[Callable[[], Coroutine[Any, Any, Any]]], None]
    ) -> RebuildStatus:
        """Start a rebuild in the owner's background (``spawn``); reports "running" at
        once, so a caller polling the status never sees a stale "idle"."""
        if self.status.state != "running":
            self.run_state = _Run(RebuildStatus(state="running"))
            spawn(self._go)
        return self.status

    def mend_channels(
        self, spawn: Callable[[Callable[[], Coroutine[Any, Any, Any]]], None]
    ) -> bool:
        """Start a rebuild in the background (``start``) when the live index lacks a
        configured further dense channel or holds one for another model: a data dir
        made before the channel was a default gains it with no `kioku reindex`. Search
        goes without that channel until the swap (the live index serves every search
        and every write is mirrored into the new one), so nothing is lost meanwhile.
        Not when the main model changed too (that rebuild embeds every note: the user's
        `kioku reindex` to start), nor on a shared store (one gateway's rebuild is every
        gateway's: `kioku reindex` there too). Returns whether it started one."""
        app = self.app
        live = app.index.spec
        if app.settings.shared_store or live.model_id != app.embedder.model_id:
            return False
        held = {c.name: c.model_id for c in live.channels}
        if all(held.get(c.channel.name) == c.channel.model_id for c in app.channels):
            return False
        self.start(spawn)
        return True

    async def rebuild(self, adopted: str | None = None, outside: bool = False) -> RebuildStatus:
        """Run a whole rebuild in the calling task; returns the final status.
        ``adopted``: build this gateway's copy of the collection another gateway of
        the deployment adopted (``services.index_follow``), adopting nothing itself.
        ``outside``: in the build process whatever the size (the embedded engine)."""
        if self.status.state == "running":
            return self.status
        self.run_state = _Run(RebuildStatus(state="running"))
        return await self._go(adopted, outside)

    async def _go(self, adopted: str | None = None, outside: bool = False) -> RebuildStatus:
        async with self._lock:
            st = self.run_state.status
            with anyio.CancelScope() as scope:
                self._cancel = scope
                try:
                    await self._rebuild(st, adopted, outside)
                    st.state = "done"
                except Exception as exc:
                    st.state, st.message = "failed", str(exc)
                    log.exception("reindex failed; the live index is unchanged")
            self._cancel = None
            if scope.cancelled_caught:
                st.state, st.message = "cancelled", "cancelled; the live index is unchanged"
            st.seconds = round(time.monotonic() - self.run_state.started, 2)
            return st

    def _embedded(self) -> bool:
        settings = self.app.settings
        return settings.index.backend == "edge" and not settings.qdrant_url

    def _outside(self, points: int) -> bool:
        """Build in another process for an embedded collection that would get a graph or
        a seal (``EdgeIndex.wants_graph``) anyway: an in-process build's plain segment
        would be sealed again at the next check."""
        settings = self.app.settings
        seal = 0 if settings.shared_store else settings.index.seal_every
        size = settings.index.exact_search_below
        return self._embedded() and (points >= size or 0 < seal <= points)

    async def _rebuild(
        self, st: RebuildStatus, adopted: str | None = None, outside: bool = False
    ) -> None:
        app = self.app
        live = app.index.current.spec.collection
        # the configured further dense channels: one added is embedded below (the main
        # model's vectors are read back, never embedded again), one dropped is not written
        spec = embedder_spec(
            app, adopted or catalog.next_collection(app.settings.index.collection, live)
        )
        st.collection, st.model = spec.collection, spec.model_id
        st.notes_total = (await app.notes.counts())["total"]
        st.out_of_process = (outside and self._embedded()) or self._outside(st.notes_total)
        new_model = spec.model_id != app.index.spec.model_id
        new_channel = any(app.index.spec.channel(c.name) is None for c in spec.channels)
        if st.out_of_process and (
            new_model or new_channel or (spec.latent and not app.index.spec.latent)
        ):
            # the build process embeds nothing: embed what the new model (or the new
            # latent-terms vector, or a new channel) lacks first
            await fill_notes(
                app.notes, app.db, _Discard(), self._vectors_for(st), channels_for=self._channels
            )
            await fill_records(
                app.records, _Discard(), self._vectors_for(st), channels_for=self._channels
            )
        start_seq = await app.vectors.last_seq()
        # the fill reads every prior written so far: applying them all again after the
        # swap would move each such point out of the built segments (``edge_graph``)
        rows = await app.db.fetchall("SELECT MAX(updated_at) AS at FROM note_priors")
        priors_at = float(rows[0]["at"] or 0.0) if rows else 0.0
        target: Index | None = None
        done = False
        embedded: dict[str, float] = {}  # the out-of-process build marks none
        try:
            if st.out_of_process:
                target = await self._build_outside(spec, st)
            else:
                target = await catalog.open_index(app.settings, spec)
                app.index.begin_build(target)
                embedded = await fill_notes(
                    app.notes,
                    app.db,
                    target,
                    self._vectors_for(st),
                    st_bump(st, "notes_done"),
                    self._channels,
                )
                await fill_records(
                    app.records,
                    target,
                    self._vectors_for(st),
                    st_bump(st, "records_done"),
                    self._channels,
                )
            await catalog.adopt(
                app.db,
                spec,
                applied_seq=start_seq,
                suffix=app.applier.suffix,
                cursors_only=adopted is not None,
                priors_at=priors_at,
            )
            done = True
            await app.notes.mark_embedded(embedded, spec.model_id)
            old = app.index.swap(target)
        finally:
            if not done:
                app.index.end_build()
                app.index.take_journal()
                with anyio.CancelScope(shield=True):
                    if target is not None:
                        await target.destroy()
                    # a collection interrupted while it was being created
                    await anyio.to_thread.run_sync(
                        catalog.remove_leftovers, app.settings, app.index.spec.collection
                    )
        with anyio.CancelScope(shield=True):
            if app.settings.shared_store and app.settings.qdrant_url:
                # one collection on the Qdrant server for every gateway: the others
                # still search the old one until they follow (services.index_follow)
                await anyio.sleep(SHARED_SWAP_GRACE_S)
            await old.destroy()
            await app.applier.apply_pending()
            await app.reconcile()
        log.info("reindex: %s (%s) is live", spec.collection, spec.model_id)

    async def _build_outside(self, spec: IndexSpec, st: RebuildStatus) -> Index:
        """Build in a separate process, open the result here, replay what was written
        meanwhile; the caller adopts and swaps it."""
        app = self.app
        root = catalog.edge_root(app.settings)

        def progress(p: dict[str, int]) -> None:
            st.notes_done = p.get("notes_done", st.notes_done)
            st.records_done = p.get("records_done", st.records_done)
            st.graph_points = p.get("graph_points", st.graph_points)

        def started(pid: int) -> None:
            st.build_pid = pid

        # below exact search's size the build seals the points (no graph: searches scan)
        graph = await app.index.count() >= app.settings.index.exact_search_below
        app.index.begin_journal()
        settings = app.settings
        command = build_command(
            settings.database, root, spec, settings.project, settings.index.dense_storage, graph
        )
        await run_build(
            command, root / spec.collection, progress, started, build_env(settings.database)
        )
        target = await catalog.open_index(app.settings, spec)
        try:
            # from here every write reaches both; what came before is in the journal
            app.index.begin_build(target)
            await self._replay(target, app.index.take_journal())
        except BaseException:
            with anyio.CancelScope(shield=True):
                await target.destroy()
            raise
        return target

    async def _replay(self, target: Index, touched: set[str]) -> None:
        """Rewrite every point written during an out-of-process build from the truth
        store (stored vectors, priors, lifecycle); delete those whose item is gone."""
        if not touched:
            return
        app = self.app
        indexer = Indexer(app.notes, app.records, target, app.vectors, app.indexer.points_lock)
        after = ""
        while page := await app.notes.page(after, limit=500):
            after = page[-1].id
            await indexer.put_notes([n for n in page if point_id("note", n.id) in touched])
            touched.difference_update(point_id("note", n.id) for n in page)
        async for batch in app.records.iter_all():
            changed = [r for r in batch if point_id("record", r.id) in touched]
            if changed:
                await indexer.put_records([r.id for r in changed])
            touched.difference_update(point_id("record", r.id) for r in batch)
        await target.delete(sorted(touched))

    def _vectors_for(self, st: RebuildStatus) -> VectorsFor:
        async def get(kind: str, docs: dict[str, str]) -> dict[str, Encoded]:
            return await self._vectors(kind, docs, st)

        return get

    async def _vectors(
        self, kind: str, docs: dict[str, str], st: RebuildStatus
    ) -> dict[str, Encoded]:
        """The stored vector of each item for the configured model; embeds the missing
        (and, when the embedder makes latent terms, those stored without them)."""
        app = self.app
        model = app.embedder.model_id
        out = await stored_vectors(app.vectors, model)(kind, docs)
        terms = app.embedder.latent_terms
        missing = [sid for sid in docs if sid not in out or (terms and out[sid].terms is None)]
        size = app.settings.embedder.batch_size
        for start in range(0, len(missing), size):
            chunk = missing[start : start + size]
            encoded = await app.embedder.encode_documents([docs[sid] for sid in chunk])
            rows = [
                (sid, content_hash(docs[sid]), e.dense, e.terms)
                for sid, e in zip(chunk, encoded, strict=True)
            ]
            await app.vectors.put(kind, model, rows)
            out.update(zip(chunk, encoded, strict=True))
            st.embedded += len(chunk)
        return out

    async def _channels(self, kind: str, docs: dict[str, str]) -> dict[str, dict[str, list[float]]]:
        """Each configured further dense channel's vector of each item: stored, or
        embedded now where missing (a channel just added)."""
        app = self.app
        out: dict[str, dict[str, list[float]]] = {sid: {} for sid in docs}
        hashes = {sid: content_hash(doc) for sid, doc in docs.items()}
        for ce in app.channels:
            model = ce.embedder.model_id
            have = await app.vectors.get(kind, model, list(docs))
            missing = []
            for sid in docs:
                row = have.get(sid)
                if row is not None and row.content_hash == hashes[sid]:
                    out[sid][ce.channel.name] = row.vector
                else:
                    missing.append(sid)
            size = app.settings.embedder.batch_size
            for start in range(0, len(missing), size):
                chunk = missing[start : start + size]
                vecs = await ce.embedder.embed_documents([docs[sid] for sid in chunk])
                await app.vectors.put(
                    kind, model, [(sid, hashes[sid], v) for sid, v in zip(chunk, vecs, strict=True)]
                )
                for sid, v in zip(chunk, vecs, strict=True):
                    out[sid][ce.channel.name] = v
        return out

    async def watch_graph(self, every_s: float) -> None:
        """The owner's periodic check: start an out-of-process build (an HNSW graph, or
        below exact search's size a seal) when the live embedded collection wants one
        (``EdgeIndex.wants_graph``); one at a time."""
        while True:
            await anyio.sleep(every_s)
            try:
                if self.status.state != "running" and await self.build_wanted():
                    log.info("building the index's optimised segments in the background")
                    await self.rebuild(outside=True)
            except Exception:
                log.exception("graph check failed; retrying in %.0f s", every_s)

    async def build_wanted(self) -> bool:
        """Whether ``watch_graph`` starts a build now: the live index wants one and, for
        a seal (below exact search's size), no note waits for its vectors, or one has
        been due for ``SEAL_WAIT_S`` (an embedder that is down must not hold it forever)."""
        app = self.app
        if not await app.index.wants_graph():
            self._seal_due_since = None
            return False
        if await app.index.count() >= app.settings.index.exact_search_below:
            return True  # a graph
        now = time.monotonic()
        since = self._seal_due_since = self._seal_due_since or now
        if now - since >= SEAL_WAIT_S or not await self._embedding_pending():
            self._seal_due_since = None
            return True
        return False

    async def _embedding_pending(self) -> bool:
        app = self.app
        if (await app.notes.counts())["pending_embedding"]:
            return True
        drafts = await app.vectors.backlog_figures(app.embedder.model_id, time.time())
        return drafts["drafts"] > 0


def embedder_spec(app: AppContext, collection: str) -> IndexSpec:
    """``collection`` as this gateway's embedder and configured channels would build it."""
    embedder = app.embedder
    return IndexSpec(
        collection,
        embedder.dim,
        embedder.model_id,
        latent=embedder.latent_terms,
        channels=tuple(c.channel for c in app.channels),
    )


def st_bump(st: RebuildStatus, key: str) -> Callable[[int], None]:
    def bump(n: int) -> None:
        setattr(st, key, getattr(st, key) + n)

    return bump


class _Discard:
    """Drops writes: lets the embedding pass reuse the fill walk."""

    async def upsert(self, points: Sequence[IndexPoint]) -> None:
        return None
