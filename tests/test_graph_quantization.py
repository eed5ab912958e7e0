"""The graph build's int8 copies of the dense vectors (``rebuild/build.BUILD_QUANTIZATION``)
and the search that walks them and rescores (``edge_types.search_params``): a graphed
collection answers with exact search's notes and exact search's cosines."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import qdrant_edge as qe

from mcp_gateway.common.types import IndexFilter, IndexPoint, SparseVector, point_id
from mcp_gateway.index.base import DENSE, IndexSpec
from mcp_gateway.index.edge import EdgeIndex
from mcp_gateway.index.edge_shard import CONFIG_FILE
from mcp_gateway.indexing.lexical import sparse_document
from mcp_gateway.rebuild.build import BUILD_OPTIMIZERS, BUILD_QUANTIZATION

DIM, N = 32, 600
SMALL_GRAPH = qe.HnswIndexConfig(m=16, ef_construct=200, full_scan_threshold=10)


def unit(v: np.ndarray) -> list[float]:
    return [float(x) for x in v / np.linalg.norm(v)]


def graphed(path: Path, quantization: qe.ScalarQuantizationConfig | None) -> EdgeIndex:
    return EdgeIndex(
        IndexSpec("quantized", DIM, "test-model"),
        path,
        exact_search_below=10,
        hnsw_ef=N,  # the whole graph: its answer is exact search's
        optimizers=BUILD_OPTIMIZERS,
        hnsw=SMALL_GRAPH,
        quantization=quantization,
    )


async def exact_and_graph(
    index: EdgeIndex, query: list[float]
) -> tuple[list[tuple[str, float]], list[tuple[str, float]]]:
    none = SparseVector([], [])
    graph = await index.search_channels(query, none, IndexFilter(), 10)
    index._exact_below = N + 1
    try:
        exact = await index.search_channels(query, none, IndexFilter(), 10)
    finally:
        index._exact_below = 10
    return [(h.id, h.score) for h in exact.dense], [(h.id, h.score) for h in graph.dense]


async def test_a_quantized_graph_answers_with_exact_cosines(tmp_path: Path) -> None:
    rng = np.random.default_rng(11)
    vectors = rng.standard_normal((N, DIM))
    index = graphed(tmp_path, BUILD_QUANTIZATION)
    await index.open()
    queries = [unit(rng.standard_normal(DIM)) for _ in range(5)]
    try:
        await index.upsert(
            [
                IndexPoint(
                    point_id("note", f"n{i}"),
                    {"kind": "note", "type": "note", "namespace": "default"},
                    sparse_document(f"note {i}"),
                    unit(vectors[i]),
                )
                for i in range(N)
            ]
        )
        await index.build_graph()
        stored = json.loads((index.dir / CONFIG_FILE).read_text("utf-8"))
        assert stored["quantization_config"]["scalar"]["type"] == "int8"
        assert stored["quantization_config"]["scalar"]["always_ram"] is True
        assert list(index.dir.glob("segments/*/vector_storage-dense/quantized.data"))
        unrescored_off = 0.0
        for q in queries:
            exact, graph = await exact_and_graph(index, q)
            assert [i for i, _ in graph] == [i for i, _ in exact]
            for (_, got), (_, want) in zip(graph, exact, strict=True):
                assert got == pytest.approx(want, abs=1e-6)  # rescored: the stored cosine
            # what the walk alone scores (the engine's default here): int8 cosines
            walk = qe.SearchParams(hnsw_ef=N)
            request = qe.QueryRequest(limit=10, query=qe.Query.Nearest(q, using=DENSE), params=walk)
            assert index._shard is not None
            raw = index._shard.query(request)
            unrescored_off = max(
                unrescored_off,
                max(abs(p.score - s) for p, (_, s) in zip(raw, exact, strict=False)),
            )
        assert unrescored_off > 1e-4  # so the exact cosines above came from the rescore
    finally:
        await index.close()
    # reopened as the owner opens it (no quantization asked): the stored copies stay
    owner = graphed(tmp_path, None)
    await owner.open()
    try:
        stored = json.loads((owner.dir / CONFIG_FILE).read_text("utf-8"))
        assert stored["quantization_config"]["scalar"]["type"] == "int8"
        for q in queries:
            exact, graph = await exact_and_graph(owner, q)
            assert [i for i, _ in graph] == [i for i, _ in exact]
            assert [s for _, s in graph] == pytest.approx([s for _, s in exact], abs=1e-6)
    finally:
        await owner.close()
