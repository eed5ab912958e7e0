"""The index the owner serves from, swappable for blue/green rebuilds.

Everyone in the owner process (search, indexer, applier, reconcile) holds this one
object. ``kioku reindex`` builds a new collection beside the live one; while it builds,
every write is mirrored into the new collection too, so nothing written during the
rebuild is missing from it; ``swap`` then makes it live in one step. A rebuild that is
interrupted or fails never touches the live collection.

A collection built by another process (``rebuild/build.py``) cannot be mirrored into
while it builds; instead the ids of every point written meanwhile are journaled
(``begin_journal``), and the rebuild rewrites those from the truth store once the new
collection is open here, before the swap.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from mcp_gateway.common.types import IndexFilter, IndexPoint, SparseVector
from mcp_gateway.index.ack_lags import AckLags
from mcp_gateway.index.base import Channels, ChannelSearch, Index, IndexSpec
from mcp_gateway.index.fast_pool import FastPool


class LiveIndex(ChannelSearch):
    def __init__(self, current: Index) -> None:
        self.current = current
        self.building: Index | None = None
        self._journal: set[str] | None = None
        # bumped after every write lands (and at a swap): a search's answer computed at
        # generation G is still the answer while the generation is G (``answers.py``)
        self.generation = 0
        # pending points' static vectors (None: off), kept beside the live collection
        self.fast_pool: FastPool | None = None
        # when each acknowledged note's vectors landed here (``kioku status``)
        self.ack_lags = AckLags()

    @property
    def spec(self) -> IndexSpec:
        return self.current.spec

    @property
    def graph_points(self) -> int:
        return self.current.graph_points

    @property
    def dense_storage(self) -> str:
        return self.current.dense_storage

    async def wants_graph(self) -> bool:
        return await self.current.wants_graph()

    def begin_build(self, target: Index) -> None:
        self.building = target

    def end_build(self) -> None:
        self.building = None

    def begin_journal(self) -> None:
        self._journal = set()

    def take_journal(self) -> set[str]:
        """The point ids written since ``begin_journal``; journaling stops."""
        journal, self._journal = self._journal or set(), None
        return journal

    def _note(self, ids: Sequence[str]) -> None:
        if self._journal is not None:
            self._journal.update(ids)

    def swap(self, new: Index) -> Index:
        """Serve from ``new``; returns the old index for the caller to close."""
        old, self.current, self.building = self.current, new, None
        self.generation += 1
        return old

    def _targets(self) -> list[Index]:
        return [self.current] if self.building is None else [self.current, self.building]

    async def open(self) -> None:
        await self.current.open()

    async def close(self) -> None:
        await self.current.close()

    async def upsert(self, points: Sequence[IndexPoint]) -> None:
        self._note([p.id for p in points])
        try:
            for target in self._targets():
                same_model = target.spec.model_id == self.current.spec.model_id
                await target.upsert(points if same_model else _lexical_only(points))
            if self.fast_pool is not None:  # after the write: a failed one changes nothing
                self.fast_pool.write(points)
            self.ack_lags.landed(points, self.fast_pool)
        finally:
            self.generation += 1

    def expect_fast(self, point: IndexPoint) -> None:
        """``point``, just written without a dense vector, gets its fast vector later
        (``fill_fast``); nothing without a fast pool."""
        if self.fast_pool is not None:
            self.fast_pool.expect(point.id, point.payload)

    def expects_fast(self, point_id: str) -> bool:
        return self.fast_pool is not None and self.fast_pool.expects(point_id)

    def fill_fast(self, point_id: str, vector: Sequence[float] | None) -> None:
        """The fast vector ``expect_fast`` promised (None: the text has none)."""
        if self.fast_pool is not None and self.fast_pool.fill(point_id, vector):
            self.ack_lags.fast_landed(point_id)
            self.generation += 1  # a search's answer from before lacks it

    async def set_payload(self, ids: Sequence[str], payload: Mapping[str, Any]) -> None:
        self._note(ids)
        try:
            for target in self._targets():
                await target.set_payload(ids, payload)
            if self.fast_pool is not None:
                self.fast_pool.set_payload(ids, payload)
        finally:
            self.generation += 1

    async def delete(self, ids: Sequence[str]) -> None:
        self._note(ids)
        try:
            for target in self._targets():
                await target.delete(ids)
        finally:
            if self.fast_pool is not None:  # gone from the pool even if a delete failed
                self.fast_pool.discard(ids)
            self.generation += 1

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
        return await self.current.search_channels(
            dense,
            sparse,
            flt,
            limit,
            more_dense=more_dense,
            latent=latent,
            channel_queries=channel_queries,
        )

    async def term_counts(
        self, terms: Sequence[int], flt: IndexFilter, cap: int
    ) -> tuple[list[int], int]:
        return await self.current.term_counts(terms, flt, cap)

    async def present(self, ids: Sequence[str]) -> dict[str, bool]:
        return await self.current.present(ids)

    async def payloads(self, ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        return await self.current.payloads(ids)

    async def dense_vectors(self, ids: Sequence[str]) -> dict[str, Sequence[float]]:
        return await self.current.dense_vectors(ids)

    async def count(self, flt: IndexFilter | None = None) -> int:
        return await self.current.count(flt)

    async def ids(self) -> set[str]:
        return await self.current.ids()

    async def clear(self) -> None:
        try:
            await self.current.clear()
        finally:
            if self.fast_pool is not None:
                self.fast_pool.clear()
            self.generation += 1

    async def destroy(self) -> None:
        raise RuntimeError("the live index is never destroyed; swap it out first")


def _lexical_only(points: Sequence[IndexPoint]) -> list[IndexPoint]:
    """Dense vectors (and their latent terms) belong to the live index's model; a rebuild
    for another model gets its own from the truth store, so mirrored points go in
    lexical-only."""
    return [
        p
        if p.dense is None and p.latent is None
        else IndexPoint(p.id, {**p.payload, "dense": False}, p.sparse)
        for p in points
    ]
