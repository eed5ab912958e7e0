"""A Qdrant server's collection is laid out as the settings say (shards, replicas, write
consistency, on-disk vectors and graph), through qdrant-client's local mode: the only
Qdrant that runs here. Local mode takes these parameters and ignores them, so the test
reads what kioku asked the client for (the request's edge, which a server would honour)
and checks that the collection it made works: written, searched, reopened."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from qdrant_client import AsyncQdrantClient

from mcp_gateway.common.sections import IndexSettings
from mcp_gateway.common.settings import KiokuSettings
from mcp_gateway.common.types import IndexFilter, IndexPoint, SparseVector, point_id
from mcp_gateway.index import catalog
from mcp_gateway.index.base import IndexSpec


async def test_a_new_collection_takes_the_configured_layout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[dict[str, Any]] = []
    create = AsyncQdrantClient.create_collection

    async def spy(self: AsyncQdrantClient, *args: Any, **kwargs: Any) -> Any:
        asked.append(kwargs)
        return await create(self, *args, **kwargs)

    monkeypatch.setattr(AsyncQdrantClient, "create_collection", spy)
    settings = KiokuSettings(
        data_dir=tmp_path,
        index=IndexSettings(
            backend="qdrant",
            qdrant_shards=6,
            qdrant_replicas=2,
            qdrant_write_consistency=2,
            qdrant_on_disk=True,
        ),
    )
    spec = IndexSpec("layout", 4, "m")
    index = await catalog.open_index(settings, spec)
    try:
        (made,) = asked
        assert (made["shard_number"], made["replication_factor"]) == (6, 2)
        assert made["write_consistency_factor"] == 2
        assert made["vectors_config"]["dense"].on_disk is True
        assert made["hnsw_config"].on_disk is True
        pid = point_id("note", "01LAYOUT")
        point = IndexPoint(
            pid, {"kind": "note", "namespace": "default"}, SparseVector([1], [1.0]), [1, 0, 0, 0]
        )
        await index.upsert([point])
        found = await index.search_channels(
            [1.0, 0.0, 0.0, 0.0], SparseVector([1], [1.0]), IndexFilter(), 5
        )
        assert [h.id for h in found.dense] == [pid]
    finally:
        await index.close()
    reopened = await catalog.open_index(settings, spec)  # an existing one keeps its own
    await reopened.close()
    assert len(asked) == 1
