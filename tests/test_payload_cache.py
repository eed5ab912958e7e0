"""The edge index's payload cache (``index/edge_cache.py``) on a real shard: a full
cache drops its least recently used payloads, not all of them, and what it keeps is
the stored payload with its strings shared."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import qdrant_edge as qe

from mcp_gateway.common.types import IndexFilter, IndexPoint, point_id
from mcp_gateway.index.base import IndexSpec
from mcp_gateway.index.edge import EdgeIndex
from mcp_gateway.index.edge_cache import PayloadCache
from mcp_gateway.index.edge_types import int_id
from mcp_gateway.indexing.lexical import sparse_document, sparse_query

DIM = 4


class Counted:
    """The real shard, counting the payloads it is asked for."""

    def __init__(self, shard: qe.EdgeShard) -> None:
        self.shard, self.asked = shard, 0

    def retrieve(self, ids: list[Any], with_payload: Any, with_vector: Any) -> Any:
        self.asked += len(ids)
        return self.shard.retrieve(ids, with_payload, with_vector)


@pytest.fixture
def shard(tmp_path: Path) -> Any:
    config = qe.EdgeConfig(
        vectors={"d": qe.EdgeVectorParams(size=DIM, distance=qe.Distance.Cosine)}
    )
    shard = qe.EdgeShard.create(str(tmp_path), config)
    points = [
        qe.Point(
            point_id("note", f"n{i}"),
            {"d": [1.0, float(i), 0.0, 0.0]},
            {"kind": "note", "source_id": f"n{i}", "namespace": "default", "_current": "true"},
        )
        for i in range(6)
    ]
    shard.update(qe.UpdateOperation.upsert_points(points))
    yield shard
    shard.close()


def engine_ids(shard: qe.EdgeShard) -> list[int]:
    found = shard.retrieve([point_id("note", f"n{i}") for i in range(6)], False, False)
    by_str = {str(p.id): int_id(p.id) for p in found}
    return [by_str[point_id("note", f"n{i}")] for i in range(6)]


def test_a_full_cache_drops_the_least_recently_used(shard: qe.EdgeShard) -> None:
    a, b, c, d, e, f = engine_ids(shard)
    cache, counted = PayloadCache(size=3), Counted(shard)
    cache.read(counted, {a, b, c})  # type: ignore[arg-type]
    assert counted.asked == 3 and len(cache) == 3
    cache.read(counted, {a})  # type: ignore[arg-type]  # kept: a is now the most recent
    assert counted.asked == 3
    cache.read(counted, {d})  # type: ignore[arg-type]  # full: b, the least recent, goes
    assert counted.asked == 4 and len(cache) == 3
    cache.read(counted, {a, c, d})  # type: ignore[arg-type]
    assert counted.asked == 4  # all three still kept
    cache.read(counted, {b})  # type: ignore[arg-type]
    assert counted.asked == 5
    # more at once than the cache holds: what it returns is whole, it keeps `size`
    found = cache.read(counted, {a, b, c, d, e, f})  # type: ignore[arg-type]
    assert set(found) == {a, b, c, d, e, f} and len(cache) == 3


def test_a_write_empties_it(shard: qe.EdgeShard) -> None:
    a, *_ = engine_ids(shard)
    cache, counted = PayloadCache(size=3), Counted(shard)
    cache.read(counted, {a})  # type: ignore[arg-type]
    cache.changed()
    assert len(cache) == 0
    cache.read(counted, {a})  # type: ignore[arg-type]
    assert counted.asked == 2


def test_kept_payloads_are_the_stored_ones_with_shared_strings(shard: qe.EdgeShard) -> None:
    a, b, *_ = engine_ids(shard)
    found = PayloadCache().read(shard, {a, b})
    pa, pb = found[a][1], found[b][1]
    assert found[a][0] == point_id("note", "n0")
    assert pa == {"kind": "note", "source_id": "n0", "namespace": "default"}  # no mirror
    key_a, key_b = (next(k for k in p if k == "namespace") for p in (pa, pb))
    assert key_a is key_b  # the engine makes a new string for each; kept: one
    assert pa["namespace"] is pb["namespace"] and pa["kind"] is pb["kind"]


async def test_searches_past_the_bound_keep_the_latest(tmp_path: Path) -> None:
    """Through the index: more hits than the cache holds, then the last search's
    hits are still kept and answered the same."""
    index = EdgeIndex(IndexSpec("c", dim=DIM, model_id="test"), tmp_path, payload_cache_size=4)
    await index.open()
    try:
        await index.upsert(
            [
                IndexPoint(
                    point_id("note", f"n{i}"),
                    {"kind": "note", "source_id": f"n{i}", "type": "note", "namespace": "default"},
                    sparse_document(f"topic{i % 3} shared words"),
                    [1.0, float(i), 0.0, 0.0],
                )
                for i in range(9)
            ]
        )
        every = IndexFilter()
        first = await index.search(None, sparse_query("topic0"), every, 10)
        assert len(index._payloads) == 3
        await index.search(None, sparse_query("topic1"), every, 10)
        assert len(index._payloads) == 4  # bounded: 6 met, the 4 latest kept
        again = await index.search(None, sparse_query("topic0"), every, 10)
        assert [(h.id, h.payload) for h in again[1]] == [(h.id, h.payload) for h in first[1]]
    finally:
        await index.close()
