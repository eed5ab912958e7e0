"""A query's dense views through the HNSW graph in one traversal (``edge_types.
view_requests``): each point scored by its best view, as exact search scores it, with
the engine's score mapped back to that cosine (``best_view_cosine``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import qdrant_edge as qe

from mcp_gateway.common.types import IndexFilter, IndexPoint, SparseVector, point_id
from mcp_gateway.index.base import DENSE, IndexSpec
from mcp_gateway.index.edge import EdgeIndex
from mcp_gateway.index.edge_types import view_requests
from mcp_gateway.indexing.lexical import sparse_document
from mcp_gateway.rebuild.build import BUILD_OPTIMIZERS

DIM, N = 16, 400


def unit(v: np.ndarray) -> list[float]:
    return [float(x) for x in v / np.linalg.norm(v)]


def test_the_graph_takes_every_view_in_one_request_an_exact_scan_one_each() -> None:
    views = [[1.0, 0.0], [0.0, 1.0]]
    graph = qe.SearchParams(exact=False, hnsw_ef=64)
    assert len(view_requests(views, DENSE, None, graph, 5)) == 1
    assert len(view_requests(views, DENSE, None, qe.SearchParams(exact=True), 5)) == 2
    assert len(view_requests(views[:1], DENSE, None, graph, 5)) == 1


async def test_views_through_the_graph_score_as_exact_search(tmp_path: Path) -> None:
    rng = np.random.default_rng(7)
    vectors = rng.standard_normal((N, DIM))
    index = EdgeIndex(
        IndexSpec("views", DIM, "test-model"),
        tmp_path,
        exact_search_below=10,
        hnsw_ef=N,  # the whole graph: its answer is exact search's
        optimizers=BUILD_OPTIMIZERS,
        hnsw=qe.HnswIndexConfig(m=16, ef_construct=200, full_scan_threshold=10),
    )
    await index.open()
    try:
        await index.upsert(
            [
                IndexPoint(
                    point_id("note", f"n{i}"),
                    {"kind": "note", "source_id": f"n{i}", "type": "note", "namespace": "default"},
                    sparse_document(f"note {i}"),
                    unit(vectors[i]),
                )
                for i in range(N)
            ]
        )
        await index.build_graph()
        assert index.graph_points == N
        none = SparseVector([], [])
        for q in range(5):
            # two views far apart (each has its own neighbours), one not of unit length
            a, b = unit(rng.standard_normal(DIM)), [3.0 * x for x in rng.standard_normal(DIM)]
            graph = await index.search_channels(a, none, IndexFilter(), 10, more_dense=[b])
            index._exact_below = N + 1
            exact = await index.search_channels(a, none, IndexFilter(), 10, more_dense=[b])
            index._exact_below = 10
            assert [h.id for h in graph.dense] == [h.id for h in exact.dense], q
            for got, want in zip(graph.dense, exact.dense, strict=True):
                assert got.score == pytest.approx(want.score, abs=2e-3)
            by_view = [np.asarray(unit(np.asarray(v))) for v in (a, b)]
            best = max(
                float(np.dot(v, unit(vectors[int(exact.dense[0].payload["source_id"][1:])])))
                for v in by_view
            )
            assert graph.dense[0].score == pytest.approx(best, abs=2e-3)
    finally:
        await index.close()
