"""The index on the qdrant-client API: a Qdrant server, or the client's local mode.

Local mode (``path=`` / ``":memory:"``) is exact numpy search with no payload indexes;
it serves tests of this code path and small setups. A real server (``url=``) gets the
payload indexes and HNSW. Both channels of a search go out in one ``query_batch_points``.
A collection made without the latent-terms vector keeps working without it (``spec``
says so after ``open``); ``kioku reindex`` builds one with it.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import warnings
from collections.abc import Callable, Coroutine, Mapping, Sequence
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

from qdrant_client import AsyncQdrantClient, models
from qdrant_client.http.exceptions import ResponseHandlingException, UnexpectedResponse

from mcp_gateway.common.errors import IndexMismatch, StoreUnavailable
from mcp_gateway.common.types import IndexFilter, IndexHit, IndexPoint, SparseVector
from mcp_gateway.index.base import (
    BOOL_FIELDS,
    CHANNEL_PREFIX,
    DENSE,
    FLOAT_FIELDS,
    KEYWORD_FIELDS,
    LATENT,
    SPARSE,
    Channels,
    ChannelSearch,
    IndexSpec,
    best_of_views,
    channel_requests,
    match_any_terms,
    needs_current_condition,
    sparse_queries,
)

log = logging.getLogger(__name__)

_SCHEMA: dict[str, models.PayloadSchemaType] = {
    **{f: models.PayloadSchemaType.KEYWORD for f in KEYWORD_FIELDS},
    **{f: models.PayloadSchemaType.BOOL for f in BOOL_FIELDS},
    **{f: models.PayloadSchemaType.FLOAT for f in FLOAT_FIELDS},
}


P = ParamSpec("P")
R = TypeVar("R")


def _store_errors(
    fn: Callable[P, Coroutine[Any, Any, R]],
) -> Callable[P, Coroutine[Any, Any, R]]:
    """Server unreachable or refusing -> ``StoreUnavailable`` with the reason."""

    @functools.wraps(fn)
    async def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return await fn(*args, **kwargs)
        except (ResponseHandlingException, UnexpectedResponse, OSError) as exc:
            raise StoreUnavailable(
                f"the Qdrant index is unavailable ({exc}); check that it is running"
            ) from exc

    return wrapper


def _any(key: str, values: tuple[str, ...]) -> models.FieldCondition:
    # one value as MatchValue, as the edge backend does (measured there: ~3x
    # cheaper per point than a one-element MatchAny; not measured against a server)
    if len(values) == 1:
        return models.FieldCondition(key=key, match=models.MatchValue(value=values[0]))
    return models.FieldCondition(key=key, match=models.MatchAny(any=list(values)))


def build_filter(flt: IndexFilter | None) -> models.Filter | None:
    if flt is None:
        return None
    must: list[models.Condition] = [_any(key, values) for key, values in match_any_terms(flt)]
    must_not: list[models.Condition] = []
    if flt.exclude_types:
        must_not.append(_any("type", flt.exclude_types))
    if needs_current_condition(flt):
        # Notes carry no ``current``; only records explicitly marked false are hidden.
        must_not.append(models.FieldCondition(key="current", match=models.MatchValue(value=False)))
    if not must and not must_not:
        return None
    return models.Filter(must=must or None, must_not=must_not or None)


def _sparse(vec: SparseVector) -> models.SparseVector:
    return models.SparseVector(indices=list(vec.indices), values=list(vec.values))


def _hits(points: Sequence[models.ScoredPoint]) -> list[IndexHit]:
    return [IndexHit(id=str(p.id), score=p.score, payload=dict(p.payload or {})) for p in points]


@dataclasses.dataclass(frozen=True, slots=True)
class ServerLayout:
    """How a new collection is laid out on a Qdrant server (``index.qdrant_*``
    settings; docs/scale.md, "One shared index"). Local mode takes and ignores them.
    ``on_disk``: dense vectors and the HNSW graph on the server's disk, mapped (its
    memory then holds the int8 copies and the pages searches touch)."""

    shards: int = 1
    replicas: int = 1
    write_consistency: int = 1
    on_disk: bool = False


class QdrantIndex(ChannelSearch):
    """``Index`` on an ``AsyncQdrantClient`` collection named ``spec.collection``."""

    # the server builds and keeps its own graphs, and chooses how it stores vectors
    graph_points = 0
    dense_storage = ""

    def __init__(
        self, spec: IndexSpec, client: AsyncQdrantClient, layout: ServerLayout | None = None
    ) -> None:
        self.spec = spec
        self.client = client
        self.layout = layout or ServerLayout()

    async def wants_graph(self) -> bool:
        return False

    @property
    def _name(self) -> str:
        return self.spec.collection

    def _check_dim(self, vector: Sequence[float]) -> None:
        if len(vector) != self.spec.dim:
            raise IndexMismatch(
                f"dense vector has {len(vector)} dimensions but the index expects "
                f"{self.spec.dim} ({self.spec.model_id}); run `kioku reindex`"
            )

    @_store_errors
    async def open(self) -> None:
        if await self.client.collection_exists(self._name):
            await self._check_existing()
        else:
            sparse = {SPARSE: models.SparseVectorParams(modifier=models.Modifier.IDF)}
            if self.spec.latent:
                # plain dot product; the inverted index even for small collections
                # (a full scan meets most notes: index/edge.py)
                sparse[LATENT] = models.SparseVectorParams(
                    index=models.SparseIndexParams(full_scan_threshold=1)
                )
            on_disk = self.layout.on_disk or None
            dense = {
                DENSE: models.VectorParams(
                    size=self.spec.dim, distance=models.Distance.COSINE, on_disk=on_disk
                )
            }
            for channel in self.spec.channels:
                dense[channel.vector_name] = models.VectorParams(
                    size=channel.dim, distance=models.Distance.COSINE, on_disk=on_disk
                )
            await self.client.create_collection(
                self._name,
                vectors_config=dense,
                sparse_vectors_config=sparse,
                shard_number=self.layout.shards,
                replication_factor=self.layout.replicas,
                write_consistency_factor=self.layout.write_consistency,
                hnsw_config=models.HnswConfigDiff(on_disk=True) if on_disk else None,
            )
        with warnings.catch_warnings():
            # Local mode warns that payload indexes have no effect there: expected.
            warnings.simplefilter("ignore", UserWarning)
            for name, schema in _SCHEMA.items():
                await self.client.create_payload_index(self._name, name, schema)

    async def _check_existing(self) -> None:
        info = await self.client.get_collection(self._name)
        vectors = info.config.params.vectors
        params = vectors.get(DENSE) if isinstance(vectors, dict) else None
        sparse = info.config.params.sparse_vectors or {}
        if params is None or SPARSE not in sparse:
            raise IndexMismatch(
                f"collection {self._name!r} was not created by kioku (no {DENSE!r} and "
                f"{SPARSE!r} vectors); choose another collection or run `kioku reindex`"
            )
        if params.size != self.spec.dim:
            raise IndexMismatch(
                f"collection {self._name!r} was built for {params.size}-dimensional vectors, "
                f"but the embedder {self.spec.model_id!r} produces {self.spec.dim}; "
                "run `kioku reindex`"
            )
        if (LATENT in sparse) != self.spec.latent:
            self.spec = dataclasses.replace(self.spec, latent=LATENT in sparse)
        # a further dense channel the collection lacks cannot be added in place (`kioku
        # reindex`); one it has that is not configured is left unused
        named = vectors if isinstance(vectors, dict) else {}
        kept = tuple(
            c
            for c in self.spec.channels
            if (v := named.get(c.vector_name)) is not None and v.size == c.dim
        )
        if kept != self.spec.channels:
            self.spec = dataclasses.replace(self.spec, channels=kept)

    async def close(self) -> None:
        await self.client.close()

    @_store_errors
    async def upsert(self, points: Sequence[IndexPoint]) -> None:
        if not points:
            return
        structs = []
        for p in points:
            vector: dict[str, Any] = {}
            if not p.sparse.is_empty():
                vector[SPARSE] = _sparse(p.sparse)
            if p.dense is not None:
                self._check_dim(p.dense)
                vector[DENSE] = list(p.dense)
            if self.spec.latent and p.latent is not None and not p.latent.is_empty():
                vector[LATENT] = _sparse(p.latent)
            for name, values in p.channels.items():
                if (channel := self.spec.channel(name)) is not None and len(values) == channel.dim:
                    vector[channel.vector_name] = list(values)
            structs.append(models.PointStruct(id=p.id, vector=vector, payload=dict(p.payload)))
        await self.client.upsert(self._name, structs, wait=True)

    @_store_errors
    async def set_payload(self, ids: Sequence[str], payload: Mapping[str, Any]) -> None:
        if ids and payload:
            await self.client.set_payload(self._name, dict(payload), points=list(ids), wait=True)

    @_store_errors
    async def delete(self, ids: Sequence[str]) -> None:
        if ids:
            await self.client.delete(self._name, models.PointIdsList(points=list(ids)), wait=True)

    @_store_errors
    async def clear(self) -> None:
        await self.client.delete(
            self._name, models.FilterSelector(filter=models.Filter()), wait=True
        )

    @_store_errors
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
        qfilter = build_filter(flt)
        requests: list[models.QueryRequest] = []
        for view in views:
            self._check_dim(view)
        for using, view in [(DENSE, v) for v in views] + extra:
            requests.append(
                models.QueryRequest(
                    query=list(view), using=using, filter=qfilter, limit=limit, with_payload=True
                )
            )
        for name, vec in sparse_requests:
            requests.append(
                models.QueryRequest(
                    query=_sparse(vec), using=name, filter=qfilter, limit=limit, with_payload=True
                )
            )
        responses = await self.client.query_batch_points(self._name, requests)
        dense_hits = best_of_views([_hits(r.points) for r in responses[: len(views)]], limit)
        n_dense = len(views) + len(extra)
        by_channel = {
            name[len(CHANNEL_PREFIX) :]: _hits(r.points)
            for (name, _), r in zip(extra, responses[len(views) : n_dense], strict=True)
        }
        by_name = dict(zip((n for n, _ in sparse_requests), responses[n_dense:], strict=True))
        return Channels(
            dense_hits,
            _hits(by_name[SPARSE].points) if SPARSE in by_name else [],
            _hits(by_name[LATENT].points) if LATENT in by_name else [],
            by_channel,
        )

    @_store_errors
    async def term_counts(
        self, terms: Sequence[int], flt: IndexFilter, cap: int
    ) -> tuple[list[int], int]:
        qfilter = build_filter(flt)
        requests = [
            models.QueryRequest(
                query=models.SparseVector(indices=[term], values=[1.0]),
                using=SPARSE,
                filter=qfilter,
                limit=cap,
                with_payload=False,
            )
            for term in terms
        ]
        responses = await self.client.query_batch_points(self._name, requests) if terms else []
        total = await self.client.count(self._name, count_filter=qfilter, exact=True)
        return [len(r.points) for r in responses], total.count

    @_store_errors
    async def present(self, ids: Sequence[str]) -> dict[str, bool]:
        if not ids:
            return {}
        records = await self.client.retrieve(
            self._name, list(ids), with_payload=False, with_vectors=[DENSE]
        )
        return {
            str(r.id): isinstance(r.vector, dict) and r.vector.get(DENSE) is not None
            for r in records
        }

    @_store_errors
    async def payloads(self, ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        if not ids:
            return {}
        records = await self.client.retrieve(
            self._name, list(ids), with_payload=True, with_vectors=False
        )
        return {str(r.id): dict(r.payload or {}) for r in records}

    @_store_errors
    async def dense_vectors(self, ids: Sequence[str]) -> dict[str, Sequence[float]]:
        if not ids:
            return {}
        records = await self.client.retrieve(
            self._name, list(ids), with_payload=False, with_vectors=[DENSE]
        )
        out: dict[str, Sequence[float]] = {}
        for r in records:
            vector: Any = r.vector.get(DENSE) if isinstance(r.vector, dict) else None
            if isinstance(vector, list):
                out[str(r.id)] = [float(x) for x in vector]
        return out

    @_store_errors
    async def ids(self) -> set[str]:
        out: set[str] = set()
        offset = None
        while True:
            points, offset = await self.client.scroll(
                self._name, limit=1000, offset=offset, with_payload=False, with_vectors=False
            )
            out.update(str(p.id) for p in points)
            if offset is None or not points:
                return out

    @_store_errors
    async def destroy(self) -> None:
        if await self.client.collection_exists(self._name):
            await self.client.delete_collection(self._name)
        await self.close()

    @_store_errors
    async def count(self, flt: IndexFilter | None = None) -> int:
        result = await self.client.count(self._name, count_filter=build_filter(flt), exact=True)
        return result.count


async def open_qdrant_index(
    spec: IndexSpec,
    url: str | None,
    path: Path | None,
    api_key: str | None,
    layout: ServerLayout | None = None,
) -> QdrantIndex:
    """A server at ``url`` when given, else local mode under ``path`` (in memory if None)."""
    try:
        if url:
            client = AsyncQdrantClient(url=url, api_key=api_key)
        elif path is not None:
            client = AsyncQdrantClient(path=str(path))
        else:
            client = AsyncQdrantClient(location=":memory:")
    except RuntimeError as exc:
        # Local mode allows one client per folder ("already accessed by another instance").
        raise StoreUnavailable(
            f"the local Qdrant index at {path} is in use by another process: {exc}"
        ) from exc
    index = QdrantIndex(spec, client, layout)
    try:
        await index.open()
    except BaseException:
        await client.close()
        raise
    return index
