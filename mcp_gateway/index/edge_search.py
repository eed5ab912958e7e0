"""One search of an edge shard: every channel of a query in one batch of requests.

The engine holds the GIL while it searches, so the query's dense views, its further
dense channels and its sparse channels go to the shard as one ``query_batch`` (one
thread hop, one traversal of the graph for all views: ``edge_types.view_requests``),
and the hits' payloads are read once for the distinct points (``edge_cache``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import qdrant_edge as qe

from mcp_gateway.common.types import IndexFilter, SparseVector
from mcp_gateway.index.base import CHANNEL_PREFIX, DENSE, LATENT, SPARSE, Channels
from mcp_gateway.index.edge_cache import PayloadCache
from mcp_gateway.index.edge_types import (
    NamespaceCensus,
    Payloads,
    Scored,
    best_scored,
    best_view_cosine,
    build_filter,
    hits,
    scored,
    search_params,
    view_requests,
)


def search_shard(
    shard: qe.EdgeShard,
    views: Sequence[Sequence[float]],
    extra: Sequence[tuple[str, Sequence[float]]],
    sparse_requests: Sequence[tuple[str, SparseVector]],
    flt: IndexFilter,
    limit: int,
    census: NamespaceCensus | None,
    payloads: PayloadCache,
    exact_below: int,
    hnsw_ef: int,
) -> tuple[list[Scored], list[Scored], Payloads, bool]:
    """Every channel of one query in one batch of requests (in a worker thread): the
    query views' results, the other channels' (``extra``, then ``sparse_requests``), the
    hits' payloads, and whether the namespace condition was left out."""
    everywhere = dataclasses.replace(flt, namespaces=())
    # the namespace condition excludes nothing when the shard holds no other
    # namespace: left out, and ``hits`` keeps the answer to the namespaces
    unfiltered = census is not None and census.covered_by(shard, flt.namespaces)
    qfilter = build_filter(everywhere if unfiltered else flt)
    requests: list[qe.QueryRequest] = []
    if views or extra:
        exact = shard.info().points_count < exact_below
        # With a graph, hnsw_ef sets recall (docs/performance.md, "Scale");
        # without one, a non-exact search scans the plain segments anyway.
        params = search_params(exact, hnsw_ef)
        # every view of the query in one traversal of the graph (edge_types)
        requests += view_requests(views, DENSE, qfilter, params, limit) if views else []
    n_views = len(requests)
    for using, view in extra:
        requests += view_requests([view], using, qfilter, params, limit)
    for name, vec in sparse_requests:
        requests.append(
            qe.QueryRequest(
                limit=limit,
                query=qe.Query.Nearest(
                    qe.SparseVector(list(vec.indices), list(vec.values)), using=name
                ),
                filter=qfilter,
                with_payload=False,
            )
        )
    batch = shard.query_batch(qe.QueryBatchRequest(requests))
    results = [scored(found) for found in batch]
    if n_views < len(views):  # one request for all views: its scores as cosines
        results[0] = best_view_cosine(results[0])
    # The channels mostly find the same notes (2k notes: ~95 distinct of 250
    # hits): one payload read for those, not one per hit (-0.8 ms p50 a search),
    # and only for those not read since the last write (edge_cache.PayloadCache).
    ids = {pid for found in results for pid, _ in found}
    return results[:n_views], results[n_views:], payloads.read(shard, ids), unfiltered


def term_counts(
    shard: qe.EdgeShard, terms: Sequence[int], flt: IndexFilter, cap: int
) -> tuple[list[int], int]:
    """How many points within ``flt`` hold each of ``terms``, at most ``cap``, and how
    many points it lets through (in a worker thread): one single-term sparse request
    each, no payload, in one batch, and a count. The filter keeps the namespace
    condition always (no census shortcut): a term counts only where a point the caller
    may read holds it."""
    qfilter = build_filter(flt)
    requests = [
        qe.QueryRequest(
            limit=cap,
            query=qe.Query.Nearest(qe.SparseVector([term], [1.0]), using=SPARSE),
            filter=qfilter,
            with_payload=False,
        )
        for term in terms
    ]
    batch = shard.query_batch(qe.QueryBatchRequest(requests)) if requests else []
    total = shard.count(qe.CountRequest(exact=True, filter=qfilter))
    return [len(found) for found in batch], total


def channels_found(
    view_results: list[Scored],
    results: list[Scored],
    found: Payloads,
    unfiltered: bool,
    flt: IndexFilter,
    extra: Sequence[tuple[str, Sequence[float]]],
    sparse_requests: Sequence[tuple[str, SparseVector]],
    limit: int,
) -> Channels:
    """``search_shard``'s results as each channel's hits (the views' best per point)."""
    only = frozenset(flt.namespaces) if unfiltered else None
    dense_hits = hits(best_scored(view_results, limit), found, only)
    n_dense = len(extra)
    by_channel = {
        name[len(CHANNEL_PREFIX) :]: hits(found_hits, found, only)
        for (name, _), found_hits in zip(extra, results[:n_dense], strict=True)
    }
    by_name = dict(zip((n for n, _ in sparse_requests), results[n_dense:], strict=True))
    return Channels(
        dense_hits,
        hits(by_name.get(SPARSE, []), found, only),
        hits(by_name.get(LATENT, []), found, only),
        by_channel,
    )
