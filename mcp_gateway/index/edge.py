"""The embedded index: the Qdrant engine in-process (qdrant-edge).

Facts this module relies on (qdrant-edge-py 0.9, verified by tests/test_index_contract.py):

- Every acknowledged ``update`` is in the WAL before it returns and survives SIGKILL of
  the process without ``flush()``; ``close()`` flushes segments.
- The shard takes an exclusive lock on its WAL: a second open, from this process or
  another, fails with ``WouldBlock``. That is mapped to ``StoreUnavailable``.
- The shard is safe to call from several threads, but ``close`` must not interleave
  with other calls. Calls therefore run concurrently (a search never waits for a batch
  upsert) and only ``close`` waits for the calls in flight, after new ones are refused.
  Index calls get their own thread limiter, so they never queue behind callers parked
  in the default pool (e.g. threads waiting for the SQLite lock).
- ``MatchValue(True/False)`` is converted to an integer by the bindings and never
  matches a boolean payload. The ``current`` flag is therefore mirrored into a keyword
  field (``_current``) that filters use; it is stripped from returned payloads.
- No HNSW graph is built unless ``EdgeShard.optimize()`` is called, and that call holds
  the GIL for its whole run (3.7 s at 20k points): it would freeze the gateway. So the
  owner never calls it: a separate process builds a graphed collection from the truth
  store (``rebuild/build.py``) and the owner swaps it in. Points written after that go to
  a plain segment, searched exactly beside the graph. So does a point the graph holds
  once anything about it is written again, its payload included: ``set_payload`` on
  every point of a graphed collection added a second copy of each point's sparse
  vectors to ``indexed_vectors_count`` (10k points: 30k -> 50k). ``graph_points`` (a
  marker file the build writes) says how many points the graph covered, and the points
  written since are counted (kept in the marker at close); ``wants_graph`` says when a
  (new) build is due. Below ``exact_search_below`` points dense search is exact, and
  the same build seals the points without a graph every ``seal_every`` points written
  (``edge_graph``): a plain segment keeps their sparse indexes in the engine's heap.
- ``ShardInfo.indexed_vectors_count`` counts sparse vectors too, so it cannot tell
  whether a dense graph exists; hence the marker.
- ``EdgeShard.load`` refuses a config whose vector names differ from the stored
  segments' ("config is incompatible"): a shard made without the latent-terms vector
  cannot gain it, so an existing shard is loaded with what it has (``spec.latent``
  then says so) and ``kioku reindex`` builds a new one.
"""

from __future__ import annotations

import logging
import shutil
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import anyio
import anyio.to_thread
import qdrant_edge as qe

from mcp_gateway.common.errors import IndexMismatch, StoreUnavailable
from mcp_gateway.common.types import IndexFilter, IndexPoint, SparseVector
from mcp_gateway.index.base import (
    DENSE,
    LATENT,
    SPARSE,
    Channels,
    ChannelSearch,
    IndexSpec,
    channel_requests,
    sparse_queries,
)
from mcp_gateway.index.edge_cache import PayloadCache
from mcp_gateway.index.edge_graph import Builds, Marker, read_marker, write_marker
from mcp_gateway.index.edge_pages import (
    GRAPHS,
    PAGE_OUT_EVERY_S,
    READ_BACK,
    SEARCHED,
    page_out,
    read_ahead,
)
from mcp_gateway.index.edge_search import channels_found, search_shard, term_counts
from mcp_gateway.index.edge_shard import open_shard
from mcp_gateway.index.edge_snapshot import copy_tree
from mcp_gateway.index.edge_types import (
    NamespaceCensus,
    Payloads,
    Scored,
    build_filter,
    present,
    stored_payloads,
    with_mirror,
)

log = logging.getLogger(__name__)

T = TypeVar("T")


class EdgeIndex(ChannelSearch):
    """``Index`` on an ``EdgeShard`` stored in ``path / spec.collection``."""

    def __init__(
        self,
        spec: IndexSpec,
        path: Path,
        exact_search_below: int = 20_000,
        hnsw_ef: int = 352,
        optimizers: qe.EdgeOptimizersConfig | None = None,
        hnsw: qe.HnswIndexConfig | None = None,
        write_guard: Callable[[], None] | None = None,
        dense_storage: str = "turbo16",
        payload_cache_size: int = 24_000,
        quantization: qe.ScalarQuantizationConfig | None = None,
        seal_every: int = 0,
    ) -> None:
        """``write_guard`` runs before every write, in the write's own worker thread
        (``diskguard.space_guard``: refuse a write on a nearly full disk, one thread hop
        instead of two). ``dense_storage``: how a new shard stores dense vectors
        (``edge_shard.STORAGE``); an existing one keeps its own, read at ``open``.
        ``payload_cache_size``: hit payloads kept between writes (``edge_cache``).
        ``quantization``: what a graph build quantizes the dense vectors to (the build
        process's; None keeps a stored shard's). ``seal_every``: below
        ``exact_search_below`` points, a build (a seal, no graph) is due once this many
        points were added or written again since the last (0: never)."""
        self.spec = spec
        self.dir = Path(path) / spec.collection
        self._exact_below = exact_search_below
        self._hnsw_ef = hnsw_ef
        self._optimizers = optimizers
        self._hnsw = hnsw  # graph build parameters (m, ef_construct); None: the engine's
        self._quantization = quantization
        self.dense_storage = dense_storage
        # the last out-of-process build and the points written since, each moved out
        # of its segments (``edge_graph``)
        self._builds = Builds(exact_search_below, seal_every)
        self._shard: qe.EdgeShard | None = None
        self._lock = anyio.Lock()  # open/close only
        self._in_flight = 0
        self._drained: anyio.Event | None = None
        self._threads = anyio.CapacityLimiter(8)
        self._write_guard = write_guard
        self._payloads = PayloadCache(payload_cache_size)
        self._census = NamespaceCensus(self._payloads)
        self._paged_at = 0.0  # when written pages were last given back
        # a snapshot's copy holds writes back (``copy_files``): set while it runs
        self._gate: anyio.Event | None = None
        self._writing = 0
        self._writes_done: anyio.Event | None = None

    @property
    def graph_points(self) -> int:
        """The points the HNSW graph covered when it was built (0: no graph)."""
        last = self._builds.last
        return last.points if last.graph else 0

    @property
    def sealed_points(self) -> int:
        """The points the last out-of-process build (graph or seal) covered."""
        return self._builds.last.points

    @property
    def written_since_graph(self) -> int:
        return self._builds.written

    # -- plumbing -----------------------------------------------------------------

    async def _run(self, fn: Callable[[qe.EdgeShard], T]) -> T:
        shard = self._shard
        if shard is None:
            raise StoreUnavailable("the index is not open")
        self._in_flight += 1
        try:
            # Not abandoned on cancel: the thread finishes before ``close`` may proceed.
            return await anyio.to_thread.run_sync(fn, shard, limiter=self._threads)
        except Exception as exc:
            # The engine raises plain Exception for I/O and storage failures; let
            # anything more specific (our errors, bugs) through unchanged.
            if type(exc) is not Exception:
                raise
            raise StoreUnavailable(f"index operation failed: {exc}") from exc
        finally:
            self._in_flight -= 1
            if self._in_flight == 0 and self._drained is not None:
                self._drained.set()

    async def _write(self, fn: Callable[[qe.EdgeShard], T], *, guarded: bool = True) -> T:
        guard = self._write_guard if guarded else None
        cache = self._payloads

        def write(shard: qe.EdgeShard) -> T:
            if guard is not None:
                guard()
            cache.changed()
            try:
                return fn(shard)
            finally:
                cache.changed()
                self._page_out_written()

        while self._gate is not None:  # a snapshot is copying the files: wait for it
            await self._gate.wait()
        self._writing += 1
        try:
            return await self._run(write)
        finally:
            self._writing -= 1
            if self._writing == 0 and self._writes_done is not None:
                self._writes_done.set()

    async def copy_files(self, dest: Path) -> int:
        """Copy the shard's files to ``dest`` as they stand after every write begun so
        far, flushed: the copy opens as this shard (``edge_snapshot``). Writes wait
        meanwhile (searches do not); returns the bytes copied."""
        while self._gate is not None:
            await self._gate.wait()
        self._gate = anyio.Event()
        try:
            while self._writing:
                self._writes_done = anyio.Event()
                await self._writes_done.wait()
            self._writes_done = None
            await self._run(lambda s: s.flush())
            return await anyio.to_thread.run_sync(copy_tree, self.dir, dest)
        finally:
            gate, self._gate = self._gate, None
            gate.set()

    def _page_out_written(self) -> None:
        """Give back the pages writes left resident (WAL, sparse vectors, payloads), at
        most every ``PAGE_OUT_EVERY_S`` (``edge_pages``)."""
        now = time.monotonic()
        if now - self._paged_at >= PAGE_OUT_EVERY_S:
            self._paged_at = now
            page_out(self.dir, keep=SEARCHED)

    def _check_dim(self, vector: Sequence[float]) -> None:
        if len(vector) != self.spec.dim:
            raise IndexMismatch(
                f"dense vector has {len(vector)} dimensions but the index expects "
                f"{self.spec.dim} ({self.spec.model_id}); run `kioku reindex`"
            )

    # -- lifecycle ----------------------------------------------------------------

    def _open_sync(self) -> qe.EdgeShard:
        shard, self.spec, self.dense_storage = open_shard(
            self.dir,
            self.spec,
            self._optimizers,
            self._hnsw,
            self.dense_storage,
            self._quantization,
        )
        # what opening read in (WAL, payload indexes, sparse vectors) is not read again;
        # where the graph serves (exact_search_below points and up), what every search
        # reads hits from is read back in the background. Below it, reading the
        # preallocated files whole costs more than the first searches' faults save.
        page_out(self.dir, keep=GRAPHS)
        if shard.info().points_count >= self._exact_below:
            read_ahead(self.dir, READ_BACK)
        self._paged_at = time.monotonic()
        return shard

    async def open(self) -> None:
        async with self._lock:
            if self._shard is None:
                self._payloads.changed()  # whatever was read before is not this shard's
                self._shard = await anyio.to_thread.run_sync(self._open_sync)
                self._builds.reset(await anyio.to_thread.run_sync(read_marker, self.dir))
                log.debug("opened edge index %s", self.dir)

    async def close(self) -> None:
        async with self._lock:
            shard, self._shard = self._shard, None  # new calls are refused from here
            while self._in_flight:
                self._drained = anyio.Event()
                await self._drained.wait()
            self._drained = None
            if shard is not None:

                def _close() -> None:
                    try:
                        shard.flush()
                        if self._builds.last.points and self.dir.exists():
                            # a crash loses the count since the last close: a later build
                            write_marker(self.dir, self._builds.marker())
                    finally:
                        shard.close()

                await anyio.to_thread.run_sync(_close)

    async def flush(self) -> None:
        """Flush segments to disk (the WAL already protects acknowledged writes)."""
        await self._run(lambda s: s.flush())

    async def build_graph(self, graph: bool = True) -> None:
        """Optimise the segments (with the HNSW graph the shard's config asks for; a
        seal, ``graph`` False, is opened with none) and record how many points they
        cover. Holds the GIL for the whole build: only the build process
        (``rebuild/build.py``) calls this."""

        def _build(shard: qe.EdgeShard) -> None:
            shard.optimize()
            shard.flush()
            self._builds.reset(Marker(shard.info().points_count, 0, graph))
            write_marker(self.dir, self._builds.last)

        await self._run(_build)

    async def wants_graph(self) -> bool:
        """Whether an out-of-process build is due (``edge_graph.graph_due``): a graph at
        ``exact_search_below`` points and up, a seal below (an edit, a prior, a
        re-embedding moves a point out of what the last build covered)."""
        points = await self._run(lambda s: s.info().points_count)
        return self._builds.due(points)

    # -- writes -------------------------------------------------------------------

    def _to_point(self, p: IndexPoint) -> qe.Point:
        vector: dict[str, Any] = {}
        if not p.sparse.is_empty():
            vector[SPARSE] = qe.SparseVector(list(p.sparse.indices), list(p.sparse.values))
        if p.dense is not None:
            self._check_dim(p.dense)
            vector[DENSE] = list(p.dense)
        if self.spec.latent and p.latent is not None and not p.latent.is_empty():
            vector[LATENT] = qe.SparseVector(list(p.latent.indices), list(p.latent.values))
        for name, values in p.channels.items():
            if (channel := self.spec.channel(name)) is not None and len(values) == channel.dim:
                vector[channel.vector_name] = list(values)
        return qe.Point(p.id, vector, with_mirror(p.payload))

    async def upsert(self, points: Sequence[IndexPoint]) -> None:
        if not points:
            return

        def _upsert(shard: qe.EdgeShard) -> None:
            # Converting a batch (vectors, sparse terms) is CPU work: off the event loop.
            batch = [self._to_point(p) for p in points]
            shard.update(qe.UpdateOperation.upsert_points(batch))

        await self._write(_upsert)
        self._builds.count(p.id for p in points)

    async def set_payload(self, ids: Sequence[str], payload: Mapping[str, Any]) -> None:
        if not ids or not payload:
            return
        op = qe.UpdateOperation.set_payload(list(ids), with_mirror(payload))
        await self._write(lambda s: s.update(op))
        self._builds.count(ids)

    async def delete(self, ids: Sequence[str]) -> None:
        if ids:
            op = qe.UpdateOperation.delete_points(list(ids))
            await self._write(lambda s: s.update(op))

    async def clear(self) -> None:
        # Delete-by-filter goes through the WAL, so a crash mid-clear cannot leave a
        # half-removed directory behind (as rmtree + create could).
        op = qe.UpdateOperation.delete_points_by_filter(qe.Filter())
        await self._write(lambda s: s.update(op), guarded=False)

    # -- reads --------------------------------------------------------------------

    async def search_channels(
        self,
        dense: Sequence[float] | None,
        sparse: SparseVector,
        flt: IndexFilter,
        limit: int,
        *,
        more_dense: Sequence[Sequence[float]] = (),
        latent: SparseVector | None = None,
        channel_queries: Mapping[str, Sequence[float]] | None = None,
    ) -> Channels:
        views = [dense, *more_dense] if dense is not None else []
        sparse_requests = sparse_queries(self.spec, sparse, latent)
        extra = channel_requests(self.spec, channel_queries)
        if limit <= 0 or not (views or sparse_requests or extra):
            return Channels([], [], [])
        for view in views:
            self._check_dim(view)
        census = self._census if flt.namespaces and not flt.current_only else None

        def _search(shard: qe.EdgeShard) -> tuple[list[Scored], list[Scored], Payloads, bool]:
            return search_shard(
                shard,
                views,
                extra,
                sparse_requests,
                flt,
                limit,
                census,
                self._payloads,
                self._exact_below,
                self._hnsw_ef,
            )

        view_results, results, found, unfiltered = await self._run(_search)
        return channels_found(
            view_results, results, found, unfiltered, flt, extra, sparse_requests, limit
        )

    async def term_counts(
        self, terms: Sequence[int], flt: IndexFilter, cap: int
    ) -> tuple[list[int], int]:
        wanted = list(terms)  # one thread hop for the requests and the count
        return await self._run(lambda s: term_counts(s, wanted, flt, cap))

    async def present(self, ids: Sequence[str]) -> dict[str, bool]:
        if not ids:
            return {}
        wanted = list(ids)
        return await self._run(lambda s: present(s, wanted, DENSE))

    async def payloads(self, ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        if not ids:
            return {}
        wanted = list(ids)
        return await self._run(lambda s: stored_payloads(s, wanted))

    async def dense_vectors(self, ids: Sequence[str]) -> dict[str, Sequence[float]]:
        if not ids:
            return {}
        # the answer's notes, read once between writes: no thread hop for a repeat
        known, missing = self._payloads.known_vectors(ids)
        if missing:
            known.update(await self._run(lambda s: self._payloads.read_vectors(s, missing, DENSE)))
        return known

    async def count(self, flt: IndexFilter | None = None) -> int:
        request = qe.CountRequest(exact=True, filter=build_filter(flt))
        return await self._run(lambda s: s.count(request))

    async def ids(self) -> set[str]:
        def scan(shard: qe.EdgeShard) -> set[str]:
            out: set[str] = set()
            offset = None
            while True:
                request = qe.ScrollRequest(
                    offset=offset, limit=1000, with_payload=False, with_vector=False
                )
                points, offset = shard.scroll(request)
                out.update(str(p.id) for p in points)
                if offset is None or not points:
                    return out

        return await self._run(scan)

    async def destroy(self) -> None:
        await self.close()
        await anyio.to_thread.run_sync(lambda: shutil.rmtree(self.dir, ignore_errors=True))
