"""The search-index interface shared by both backends.

The index is derived data: SQLite holds the truth and ``kioku reindex`` rebuilds the
index from it. A point carries a sparse (lexical) vector from the moment its note is
added; the embedding job later upserts the whole point again, with its dense vector.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

from mcp_gateway.common.types import IndexFilter, IndexHit, IndexPoint, SparseVector

DENSE = "dense"
SPARSE = "sparse"
LATENT = "latent"  # latent terms (graphs/e5_latent.py): a plain dot-product sparse vector
CHANNEL_PREFIX = "dense_"  # a further dense channel's vector name: "dense_<channel>"

# Payload fields that get a payload index (keyword unless noted).
KEYWORD_FIELDS = ("kind", "type", "domain", "priority", "namespace", "source_id", "visible")
# "visible" folds namespace and lifecycle into one keyword: the namespace for notes and
# current records, "" for superseded/duplicate records. The search path's usual filter
# (current, in these namespaces) is then one condition instead of two: measured 3.4 ->
# 2.6 ms per hybrid query at 10k points, 39 -> 22 ms at 100k (exact search).
VISIBLE = "visible"
BOOL_FIELDS = ("current",)
FLOAT_FIELDS = ("created_at",)


def match_any_terms(flt: IndexFilter) -> list[tuple[str, tuple[str, ...]]]:
    """The filter's "field is one of these values" conditions, as both backends apply them."""
    by_namespace = VISIBLE if flt.current_only else "namespace"
    return [
        (key, values)
        for key, values in (
            ("kind", flt.kinds),
            ("type", flt.types),
            ("domain", flt.domains),
            (by_namespace, flt.namespaces),
        )
        if values
    ]


def needs_current_condition(flt: IndexFilter) -> bool:
    """``current_only`` without namespaces still needs its own condition."""
    return flt.current_only and not flt.namespaces


def visible_value(namespace: str, current: bool = True) -> str:
    return namespace if current else ""


class Channels(NamedTuple):
    dense: list[IndexHit]
    sparse: list[IndexHit]
    latent: list[IndexHit]
    # each further dense channel asked for (``channel_queries``) -> its hits by cosine
    extra: dict[str, list[IndexHit]] = {}  # noqa: RUF012 (never mutated: a fresh dict each)


@dataclass(frozen=True, slots=True)
class DenseChannel:
    """A further dense channel: another model's vector of every point, beside ``dense``
    (``embedders/channels.py`` names them). The truth store keys its vectors by
    ``model_id``; the index holds them under ``CHANNEL_PREFIX + name``."""

    name: str
    model_id: str
    dim: int

    @property
    def vector_name(self) -> str:
        return CHANNEL_PREFIX + self.name


@dataclass(frozen=True, slots=True)
class IndexSpec:
    """What the collection is built for: dense size and the model that fills it."""

    collection: str
    dim: int
    model_id: str
    # whether the collection has the latent-terms vector: asked for at creation, then
    # what the stored collection has (an existing one cannot gain it: `kioku reindex`)
    latent: bool = False
    # further dense channels, the same way: asked for at creation, then what the stored
    # collection has (`kioku reindex` adds or drops one)
    channels: tuple[DenseChannel, ...] = ()

    def channel(self, name: str) -> DenseChannel | None:
        return next((c for c in self.channels if c.name == name), None)


class Index(Protocol):
    @property
    def graph_points(self) -> int:
        """Points an HNSW graph covers (0: every search is exact, or a server decides)."""

    @property
    def dense_storage(self) -> str:
        """How the collection stores dense vectors ("" where the backend does not say)."""

    @property
    def spec(self) -> IndexSpec:
        """The collection, dense size and model this index holds."""

    async def wants_graph(self) -> bool:
        """Whether the owner should build this index a new HNSW graph, out of process
        (an embedded collection that outgrew its last graph; never a server's)."""

    async def open(self) -> None:
        """Create the collection for ``spec`` or load it; raise ``IndexMismatch`` when an
        existing collection has another dense size."""

    async def close(self) -> None: ...

    async def upsert(self, points: Sequence[IndexPoint]) -> None:
        """Insert or fully replace points (sparse, optional dense, payload)."""

    async def set_payload(self, ids: Sequence[str], payload: Mapping[str, Any]) -> None:
        """Merge ``payload`` into each point's payload."""

    async def delete(self, ids: Sequence[str]) -> None: ...

    async def search(
        self,
        dense: Sequence[float] | None,
        sparse: SparseVector,
        flt: IndexFilter,
        limit: int,
        *,
        more_dense: Sequence[Sequence[float]] = (),
    ) -> tuple[list[IndexHit], list[IndexHit]]:
        """Both channels in one round trip: (dense hits by cosine, sparse hits by BM25).
        ``dense=None`` skips the dense channel; an empty sparse vector skips that one.
        ``more_dense``: further views of the query, searched in the same round trip;
        each dense hit then carries its best cosine over all views."""

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
        """``search`` plus the latent-terms channel (hits by dot product) in the same
        round trip, when ``latent`` is given, not empty and ``spec.latent``, and each
        further dense channel of ``channel_queries`` (name -> the query's vector from
        that channel's model) the collection has (``Channels.extra``)."""

    async def term_counts(
        self, terms: Sequence[int], flt: IndexFilter, cap: int
    ) -> tuple[list[int], int]:
        """How many points within ``flt`` hold each lexical term (term ids), at most
        ``cap`` (one single-term request each, at most ``cap`` hits), and how many points
        ``flt`` lets through, in one round trip."""

    async def present(self, ids: Sequence[str]) -> dict[str, bool]:
        """For each id present in the index: whether it has a dense vector."""

    async def payloads(self, ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        """The stored payload of each id present in the index (reconcile compares them
        with the truth store)."""

    async def dense_vectors(self, ids: Sequence[str]) -> dict[str, Sequence[float]]:
        """The stored (unit-length) dense vector of each id that has one."""

    async def count(self, flt: IndexFilter | None = None) -> int: ...

    async def ids(self) -> set[str]:
        """Every point id (reconcile compares them with the truth store)."""

    async def clear(self) -> None:
        """Drop every point."""

    async def destroy(self) -> None:
        """Close and delete the whole collection (an abandoned or replaced rebuild)."""


def sparse_queries(
    spec: IndexSpec, sparse: SparseVector, latent: SparseVector | None
) -> list[tuple[str, SparseVector]]:
    """The sparse requests of a search, by vector name: BM25 unless empty, the latent
    terms when given, not empty and the collection has their vector."""
    out = [(SPARSE, sparse)] if not sparse.is_empty() else []
    if spec.latent and latent is not None and not latent.is_empty():
        out.append((LATENT, latent))
    return out


def channel_requests(
    spec: IndexSpec, queries: Mapping[str, Sequence[float]] | None
) -> list[tuple[str, Sequence[float]]]:
    """The further dense channels' requests of a search, by vector name: those of
    ``queries`` the collection has, with a vector of that channel's size."""
    out: list[tuple[str, Sequence[float]]] = []
    for name, vec in (queries or {}).items():
        if (channel := spec.channel(name)) is not None and len(vec) == channel.dim:
            out.append((channel.vector_name, vec))
    return out


class PendingVectors(Protocol):
    """Where a point written without its dense vector gets its static vector later,
    off the writer's path (``LiveIndex`` over its fast pool, ``search.fast_first``)."""

    def expect_fast(self, point: IndexPoint) -> None:
        """``point`` was just written without a dense vector: its fast one follows."""
        ...

    def expects_fast(self, point_id: str) -> bool: ...

    def fill_fast(self, point_id: str, vector: Sequence[float] | None) -> None:
        """The vector ``expect_fast`` promised (None: the text has none)."""
        ...


class ChannelSearch:
    """``Index.search`` for a backend whose primitive is ``search_channels``."""

    search_channels: Callable[..., Awaitable[Channels]]

    async def search(
        self,
        dense: Sequence[float] | None,
        sparse: SparseVector,
        flt: IndexFilter,
        limit: int,
        *,
        more_dense: Sequence[Sequence[float]] = (),
    ) -> tuple[list[IndexHit], list[IndexHit]]:
        found = await self.search_channels(dense, sparse, flt, limit, more_dense=more_dense)
        return found.dense, found.sparse


def best_of_views(views: Sequence[Sequence[IndexHit]], limit: int) -> list[IndexHit]:
    """Dense hits of several query views merged by each point's best score."""
    if len(views) == 1:
        return list(views[0])
    best: dict[str, IndexHit] = {}
    for hits in views:
        for h in hits:
            if h.id not in best or h.score > best[h.id].score:
                best[h.id] = h
    return sorted(best.values(), key=lambda h: h.score, reverse=True)[:limit]
