"""What an embedded shard keeps resident once it is opened again: its dense vectors are
mapped, not read in (``edge_shard._dense``), and only the payload indexes its filters
use exist (``edge_types.INDEXED_FIELDS``); a shard an older kioku made (vectors read in
at every open, four more indexes) still opens, loses those indexes and answers.

Real engine, real files; resident memory is read from ``/proc/self/smaps`` (Linux).
"""

from __future__ import annotations

import threading
import uuid
from pathlib import Path

import numpy as np
import pytest
import qdrant_edge as qe

import mcp_gateway.index.edge as edge_module
from mcp_gateway.common.types import IndexFilter, IndexPoint, SparseVector, point_id
from mcp_gateway.index.base import (
    BOOL_FIELDS,
    DENSE,
    FLOAT_FIELDS,
    KEYWORD_FIELDS,
    LATENT,
    SPARSE,
    IndexSpec,
)
from mcp_gateway.index.edge import EdgeIndex
from mcp_gateway.index.edge_shard import STORAGE
from mcp_gateway.index.edge_types import CURRENT_MIRROR, INDEXED_FIELDS, with_mirror
from mcp_gateway.indexing.lexical import sparse_document

pytestmark = pytest.mark.skipif(not Path("/proc/self/smaps").exists(), reason="Linux /proc")

DIM = 384
POINTS = 300
# the engine's plain segment stores dense vectors in 32 MB chunks: read in, one chunk is
# resident whatever the points; mapped, only the pages searches read (300 x ~0.8 KB)
MAPPED_MAX_MB = 4.0


def resident_mb(under: Path, part: str) -> float:
    """Resident MB of this process's mappings of files under ``under`` whose path has
    ``part``."""
    total, counting = 0, False
    for line in Path("/proc/self/smaps").read_text().splitlines():
        head = line.split(maxsplit=5)
        if len(head) >= 5 and "-" in head[0] and ":" not in head[0]:
            path = head[5] if len(head) > 5 else ""
            counting = path.startswith(str(under)) and part in path
        elif counting and line.startswith("Rss:"):
            total += int(line.split()[1])
    return total / 1024


def vectors(n: int) -> np.ndarray:
    v = np.random.default_rng(7).standard_normal((n, DIM)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def points(dense: np.ndarray) -> list[IndexPoint]:
    return [
        IndexPoint(
            point_id("note", f"N-{i}"),
            {
                "kind": "note",
                "source_id": f"N-{i}",
                "type": "note" if i % 2 else "lesson",
                "namespace": "default",
                "visible": "default",
                "current": True,
                "priority": "normal",
                "created_at": float(i),
            },
            sparse_document(f"observation {i} about service {i % 13}"),
            [float(x) for x in dense[i]],
        )
        for i in range(len(dense))
    ]


async def top(index: EdgeIndex, query: np.ndarray, flt: IndexFilter | None = None) -> list[str]:
    dense = [float(x) for x in query]
    hits, _ = await index.search(dense, SparseVector([], []), flt or IndexFilter(), 5)
    return [h.id for h in hits]


def indexed(index: EdgeIndex) -> set[str]:
    assert index._shard is not None
    return set(index._shard.info().payload_schema)


@pytest.mark.parametrize("storage", ["turbo16", "float32"])
async def test_a_reopened_shard_reads_in_only_the_dense_pages_searched(
    tmp_path: Path, storage: str
) -> None:
    spec = IndexSpec("c", dim=DIM, model_id="test", latent=False)
    dense = vectors(POINTS)
    index = EdgeIndex(spec, tmp_path, dense_storage=storage)
    await index.open()
    await index.upsert(points(dense))
    before = await top(index, dense[5])
    await index.close()

    index = EdgeIndex(spec, tmp_path, dense_storage=storage)
    await index.open()
    try:
        assert resident_mb(tmp_path, "vector_storage-dense") < MAPPED_MAX_MB
        assert await top(index, dense[5]) == before  # exact search read every vector
        assert before[0] == point_id("note", "N-5")
        assert resident_mb(tmp_path, "vector_storage-dense") < MAPPED_MAX_MB
        assert indexed(index) == set(INDEXED_FIELDS)
    finally:
        await index.close()


async def test_a_shard_made_with_vectors_read_in_still_opens(tmp_path: Path) -> None:
    """In a shard made by older code the dense vectors were read in at every open (the engine's
    default placement) and ten payload fields were indexed. Such a shard opens under
    the new config, drops the indexes no filter uses and answers the same, filters
    included; its segment keeps reading its vectors in at open (the engine keeps a
    segment's placement; `kioku reindex` builds a new collection, made like the one
    above), and they are given back once it is open."""
    dense = vectors(POINTS)
    directory = tmp_path / "c"
    config = qe.EdgeConfig(
        vectors={
            DENSE: qe.EdgeVectorParams(
                size=DIM, distance=qe.Distance.Cosine, datatype=STORAGE["turbo16"]
            )
        },
        sparse_vectors={
            SPARSE: qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf),
            LATENT: qe.EdgeSparseVectorParams(full_scan_threshold=1),
        },
    )
    old = qe.EdgeShard.create(str(directory), config)
    schemas = {f: qe.PayloadSchemaType.Keyword for f in (*KEYWORD_FIELDS, CURRENT_MIRROR)}
    schemas.update({f: qe.PayloadSchemaType.Bool for f in BOOL_FIELDS})
    schemas.update({f: qe.PayloadSchemaType.Float for f in FLOAT_FIELDS})
    for name, schema in schemas.items():
        old.update(qe.UpdateOperation.create_field_index(name, schema))
    assert len(old.info().payload_schema) == 10
    old.update(
        qe.UpdateOperation.upsert_points(
            [
                qe.Point(str(uuid.UUID(p.id)), {DENSE: list(p.dense or ())}, with_mirror(p.payload))
                for p in points(dense)
            ]
        )
    )
    old.close()
    assert resident_mb(tmp_path, "vector_storage-dense") == 0

    index = EdgeIndex(IndexSpec("c", dim=DIM, model_id="test", latent=True), tmp_path)
    await index.open()
    try:
        assert index.spec.latent and index.dense_storage == "turbo16"
        # its segment read them in at open (the engine keeps a segment's placement);
        # edge_pages gave them back
        assert resident_mb(tmp_path, "vector_storage-dense") < MAPPED_MAX_MB
        assert indexed(index) == set(INDEXED_FIELDS)
        assert (await top(index, dense[9]))[0] == point_id("note", "N-9")
        lessons = IndexFilter(types=("lesson",), namespaces=("default",), current_only=True)
        assert (await top(index, dense[9], lessons))[0] != point_id("note", "N-9")
        assert (await top(index, dense[8], lessons))[0] == point_id("note", "N-8")
        await index.upsert(points(vectors(POINTS + 1))[POINTS:])  # and takes writes
        assert await index.count() == POINTS + 1
    finally:
        await index.close()


async def written_shard(
    tmp_path: Path, exact_search_below: int = 20_000
) -> tuple[IndexSpec, np.ndarray]:
    """A shard under ``tmp_path`` holding ``POINTS`` points, written and closed: what
    a later open finds on disk."""
    spec = IndexSpec("c", dim=DIM, model_id="test", latent=False)
    dense = vectors(POINTS)
    index = EdgeIndex(spec, tmp_path, exact_search_below=exact_search_below)
    await index.open()
    await index.upsert(points(dense))
    await index.close()
    return spec, dense


async def test_what_opening_read_in_is_given_back(tmp_path: Path) -> None:
    """Opening reads the WAL and each payload index's files in whole (~5 MB an index,
    however few the points); ``edge_pages.page_out`` gives those pages back."""
    spec, dense = await written_shard(tmp_path)

    index = EdgeIndex(spec, tmp_path)
    await index.open()
    try:
        assert resident_mb(tmp_path, "/c/") < 2 * MAPPED_MAX_MB  # 6 indexes read in: ~30
        flt = IndexFilter(types=("note",), namespaces=("default",), current_only=True)
        assert (await top(index, dense[7], flt))[0] == point_id("note", "N-7")
    finally:
        await index.close()


async def test_what_searches_read_hits_from_is_read_back_after_the_open(
    tmp_path: Path,
) -> None:
    """After the page-out at open, the stored dense vectors and the payloads are read
    back into the page cache by a thread (``edge_pages.read_ahead``): the names it
    looks for are the engine's folders of a real shard, and reading them leaves this
    process's resident pages of the dense vectors as few as the searches map."""
    from mcp_gateway.index.edge_pages import READ_BACK, read_ahead, read_back_paths

    spec, dense = await written_shard(tmp_path)

    files = read_back_paths(tmp_path, READ_BACK)
    for part in READ_BACK:  # each kind present, each a file with data
        assert any(part in str(f) and f.stat().st_size > 0 for f in files), part
    assert not any("/vector_index-" in str(f) or "/wal/" in str(f) for f in files)

    index = EdgeIndex(spec, tmp_path)
    await index.open()
    try:
        read_ahead(tmp_path, READ_BACK).join(timeout=30)
        assert resident_mb(tmp_path, "/vector_storage-dense") < MAPPED_MAX_MB
        assert (await top(index, dense[11]))[0] == point_id("note", "N-11")
    finally:
        await index.close()


@pytest.mark.parametrize(("exact_below", "read_back"), [(1, True), (20_000, False)])
async def test_the_open_reads_back_only_where_the_graph_serves(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, exact_below: int, read_back: bool
) -> None:
    """Reading the stored vectors and payloads back pays where searches walk the graph
    (``exact_search_below`` points and up); below it the preallocated files read whole
    cost an open more than its first searches' faults (the test suite's opens: +70 s)."""
    calls: list[Path] = []
    real = edge_module.read_ahead

    def spy(directory: Path, parts: tuple[str, ...]) -> threading.Thread:
        calls.append(directory)
        return real(directory, parts)

    monkeypatch.setattr(edge_module, "read_ahead", spy)
    spec, dense = await written_shard(tmp_path, exact_search_below=exact_below)
    calls.clear()

    index = EdgeIndex(spec, tmp_path, exact_search_below=exact_below)
    await index.open()
    try:
        assert calls == ([index.dir] if read_back else [])
        assert (await top(index, dense[11]))[0] == point_id("note", "N-11")
    finally:
        await index.close()


@pytest.mark.parametrize("every_s", [0.0, 3600.0])
async def test_writes_give_back_their_pages_but_the_searched_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, every_s: float
) -> None:
    """Written pages (WAL, sparse vectors) are given back after writes; the dense
    vectors every search scans stay resident."""
    monkeypatch.setattr(edge_module, "PAGE_OUT_EVERY_S", every_s)
    index = EdgeIndex(IndexSpec("c", dim=DIM, model_id="test", latent=False), tmp_path)
    await index.open()
    try:
        dense = vectors(2 * POINTS)
        batch = points(dense)
        for start in range(0, len(batch), 10):
            await index.upsert(batch[start : start + 10])
        await top(index, dense[3])  # reads every dense vector
        await index.upsert(batch[:1])
        wal, sparse = resident_mb(tmp_path, "/wal/"), resident_mb(tmp_path, "-sparse/")
        if every_s:
            assert wal > 0.5 and sparse > 0.05  # each write's pages stay resident
        else:
            assert wal < 0.1 and sparse < 0.02
        assert resident_mb(tmp_path, "vector_storage-dense") > 0.3  # 600 x 772 bytes
        assert await index.count() == len(batch)
    finally:
        await index.close()
