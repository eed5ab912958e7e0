"""One contract for every ``Index`` backend: qdrant-edge (dense vectors stored as float32
and as 16-bit TurboQuant) and qdrant-client (local mode).

No mocks: each test runs the real engine in a temporary directory.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import uuid
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import anyio.to_thread
import numpy as np
import pytest
import qdrant_edge as qe

from mcp_gateway.common.errors import IndexMismatch, StoreUnavailable
from mcp_gateway.common.types import IndexFilter, IndexPoint, SparseVector, point_id
from mcp_gateway.index.base import DenseChannel, Index, IndexSpec
from mcp_gateway.index.edge import EdgeIndex
from mcp_gateway.index.edge_cache import PayloadCache
from mcp_gateway.index.edge_graph import MIN_GRAPH_GROWTH
from mcp_gateway.index.edge_types import int_id
from mcp_gateway.index.qdrant import open_qdrant_index
from mcp_gateway.indexing.lexical import sparse_document, sparse_query

DIM = 16
RNG = np.random.default_rng(1234)


def unit(seed: int | None = None) -> list[float]:
    rng = RNG if seed is None else np.random.default_rng(seed)
    v = rng.standard_normal(DIM)
    return [float(x) for x in v / np.linalg.norm(v)]


def pid(name: str) -> str:
    return point_id("note", name)


def point(name: str, text: str, dense: list[float] | None = None, **payload: Any) -> IndexPoint:
    base: dict[str, Any] = {
        "kind": "note",
        "source_id": name,
        "type": "note",
        "namespace": "default",
    }
    return IndexPoint(pid(name), {**base, **payload}, sparse_document(text), dense)


class Backend:
    def __init__(self, name: str, root: Path) -> None:
        self.name = name
        self.root = root
        self.collection = f"c{uuid.uuid4().hex}"
        self.opened: list[Index] = []

    async def open(
        self, dim: int = DIM, latent: bool = False, channels: tuple[DenseChannel, ...] = ()
    ) -> Index:
        spec = IndexSpec(
            self.collection, dim=dim, model_id=f"test-{dim}", latent=latent, channels=channels
        )
        index: Index
        if self.name.startswith("edge"):
            storage = "turbo16" if self.name == "edge-turbo16" else "float32"
            index = EdgeIndex(spec, self.root, exact_search_below=1_000, dense_storage=storage)
            await index.open()
        else:
            index = await open_qdrant_index(spec, url=None, path=self.root / "qdrant", api_key=None)
        self.opened.append(index)
        return index

    async def close_all(self) -> None:
        for index in self.opened:
            await index.close()
        self.opened.clear()


@pytest.fixture(params=["edge", "edge-turbo16", "qdrant"])
async def backend(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Backend]:
    b = Backend(request.param, tmp_path)
    yield b
    await b.close_all()


@pytest.fixture
async def index(backend: Backend) -> Index:
    return await backend.open()


ANY = IndexFilter()


async def ids_found(
    index: Index, dense: Sequence[float] | None, sparse: SparseVector, flt: IndexFilter = ANY
) -> tuple[set[str], set[str]]:
    d, s = await index.search(dense, sparse, flt, limit=100)
    return {h.id for h in d}, {h.id for h in s}


async def test_sparse_only_point_then_dense(index: Index) -> None:
    vec = unit()
    await index.upsert([point("a", "deploy checklist before release")])
    assert await index.present([pid("a"), pid("missing")]) == {pid("a"): False}

    dense_hits, sparse_hits = await index.search(vec, sparse_query("release"), ANY, 10)
    assert dense_hits == []
    assert [h.id for h in sparse_hits] == [pid("a")]
    assert sparse_hits[0].payload["source_id"] == "a"
    assert sparse_hits[0].score > 0

    await index.upsert([point("a", "deploy checklist before release", vec)])  # embedded
    assert await index.present([pid("a"), pid("gone")]) == {pid("a"): True}
    dense_hits, sparse_hits = await index.search(vec, sparse_query("release"), ANY, 10)
    assert [h.id for h in dense_hits] == [pid("a")]
    assert dense_hits[0].score == pytest.approx(1.0, abs=1e-4)
    assert dense_hits[0].payload["source_id"] == "a"
    assert [h.id for h in sparse_hits] == [pid("a")]  # sparse vector kept too


async def test_dense_vectors_are_the_stored_unit_vectors(index: Index) -> None:
    vec = unit()
    await index.upsert([point("a", "embedded", [2 * x for x in vec]), point("b", "lexical only")])
    found = await index.dense_vectors([pid("a"), pid("b"), pid("missing")])
    assert set(found) == {pid("a")}  # no vector yet, or no point: not there
    assert found[pid("a")] == pytest.approx(vec, abs=1e-5)  # cosine: stored normalised
    assert await index.dense_vectors([]) == {}


async def test_channels_can_be_skipped(index: Index) -> None:
    await index.upsert([point("a", "redis lock", unit())])
    d, s = await index.search(None, sparse_query("redis"), ANY, 10)
    assert d == [] and [h.id for h in s] == [pid("a")]
    d, s = await index.search(unit(), SparseVector([], []), ANY, 10)
    assert [h.id for h in d] == [pid("a")] and s == []
    assert await index.search(None, SparseVector([], []), ANY, 10) == ([], [])


async def test_dense_ranking_and_idf(index: Index) -> None:
    target = unit(7)
    await index.upsert(
        [point("t", "rare zebra common", target)]
        + [point(f"o{i}", "common words here", unit()) for i in range(6)]
    )
    d, s = await index.search(target, sparse_query("zebra common"), ANY, 3)
    assert d[0].id == pid("t") and len(d) == 3
    assert d[0].score >= d[1].score >= d[2].score
    assert s[0].id == pid("t") and s[0].score > s[1].score


async def test_filters(index: Index) -> None:
    text = "shared memo about caching"
    await index.upsert(
        [
            point("n1", text, unit(), type="lesson", domain="infra"),
            point("n2", text, unit(), type="conclusion", domain="web", namespace="team"),
            point("n3", text, unit(), type="note"),
            point("r1", text, unit(), kind="record", type="decision", current=True),
            point("r2", text, unit(), kind="record", type="decision", current=False),
        ]
    )
    q_dense, q_sparse = unit(), sparse_query("caching")
    every = {pid(x) for x in ("n1", "n2", "n3", "r1", "r2")}
    cases: list[tuple[IndexFilter, set[str]]] = [
        (ANY, every),
        (IndexFilter(types=("lesson",)), {pid("n1")}),
        (IndexFilter(types=("lesson", "conclusion")), {pid("n1"), pid("n2")}),
        (IndexFilter(domains=("web", "infra")), {pid("n1"), pid("n2")}),
        (IndexFilter(namespaces=("team",)), {pid("n2")}),
        (IndexFilter(namespaces=("default",)), every - {pid("n2")}),
        (IndexFilter(kinds=("record",)), {pid("r1"), pid("r2")}),
        (IndexFilter(current_only=True), every - {pid("r2")}),
        (IndexFilter(kinds=("record",), current_only=True), {pid("r1")}),
        (IndexFilter(exclude_types=("note", "decision")), {pid("n1"), pid("n2")}),
        (IndexFilter(types=("lesson",), namespaces=("team",)), set()),
    ]
    for flt, expected in cases:
        assert await ids_found(index, q_dense, q_sparse, flt) == (expected, expected), flt
        assert await index.count(flt) == len(expected), flt

    # current flips through set_payload (the edge backend mirrors it for filtering)
    await index.set_payload([pid("r2")], {"current": True})
    await index.set_payload([pid("r1")], {"current": False, "prior": 0.5})
    flt = IndexFilter(kinds=("record",), current_only=True)
    assert await ids_found(index, q_dense, q_sparse, flt) == ({pid("r2")}, {pid("r2")})
    d, _ = await index.search(q_dense, q_sparse, IndexFilter(kinds=("record",)), 10)
    payloads = {h.id: h.payload for h in d}
    assert payloads[pid("r1")]["prior"] == 0.5
    assert payloads[pid("r1")]["current"] is False
    assert payloads[pid("r1")]["type"] == "decision"  # merged, not replaced
    assert set(payloads[pid("r1")]) == {
        "kind",
        "source_id",
        "type",
        "namespace",
        "current",
        "prior",
    }


async def test_payloads_are_read_back_as_written(index: Index) -> None:
    """Reconcile compares them with the truth store: the search mirror stays inside."""
    await index.upsert([point("r1", "release notes", unit(), kind="record", current=True)])
    await index.set_payload([pid("r1")], {"current": False, "created_at": 1796314859.8978057})
    stored = await index.payloads([pid("r1"), pid("missing")])
    assert list(stored) == [pid("r1")]
    assert stored[pid("r1")] == {
        "kind": "record",
        "source_id": "r1",
        "type": "note",
        "namespace": "default",
        "current": False,
        "created_at": pytest.approx(1796314859.8978057, rel=1e-12),
    }
    assert await index.payloads([]) == {}


async def test_delete_count_clear(index: Index) -> None:
    await index.upsert([point(f"p{i}", f"item {i} text", unit()) for i in range(5)])
    assert await index.count() == 5
    await index.delete([pid("p0"), pid("p1"), pid("never")])
    assert await index.count() == 3
    assert await index.present([pid("p0"), pid("p2")]) == {pid("p2"): True}
    d, s = await ids_found(index, unit(), sparse_query("item text"))
    assert pid("p0") not in d | s and len(d) == len(s) == 3
    await index.clear()
    assert await index.count() == 0
    assert await ids_found(index, unit(), sparse_query("item")) == (set(), set())
    await index.upsert([point("after", "after clear", unit())])  # still usable
    assert await index.count() == 1


async def test_idempotent_upsert(index: Index) -> None:
    vec = unit()
    await index.upsert([point("a", "first version", vec, type="lesson")])
    await index.upsert([point("a", "second version", vec, type="knowledge")])
    assert await index.count() == 1
    _, s = await index.search(None, sparse_query("second"), ANY, 10)
    assert [h.id for h in s] == [pid("a")] and s[0].payload["type"] == "knowledge"
    _, s = await index.search(None, sparse_query("first"), ANY, 10)
    assert s == []  # the sparse vector was replaced, not merged
    # a full upsert without dense drops the old dense vector
    await index.upsert([point("a", "second version")])
    assert await index.present([pid("a")]) == {pid("a"): False}


async def test_every_write_shows_in_the_next_search(index: Index) -> None:
    """Hits' payloads are current after each kind of write: the edge index keeps the
    payloads searches read until the next write (``edge_cache.PayloadCache``)."""
    vec = unit()

    async def found() -> dict[str, Any]:
        dense_hits, sparse_hits = await index.search(vec, sparse_query("rollout"), ANY, 10)
        assert {h.id for h in dense_hits} == {h.id for h in sparse_hits}
        return {h.id: h.payload for h in dense_hits}

    await index.upsert([point("a", "rollout plan", vec, type="lesson")])
    assert (await found())[pid("a")]["type"] == "lesson"
    await index.upsert([point("a", "rollout plan", vec, type="knowledge")])
    assert (await found())[pid("a")]["type"] == "knowledge"
    await index.set_payload([pid("a")], {"priority": "high"})
    assert (await found())[pid("a")]["priority"] == "high"
    await index.upsert([point("b", "rollout notes", unit())])
    assert set(await found()) == {pid("a"), pid("b")}
    await index.delete([pid("a")])
    assert set(await found()) == {pid("b")}
    await index.clear()
    assert await found() == {}


def test_edge_payload_read_overlapping_a_write_is_not_kept(tmp_path: Path) -> None:
    """A payload read that a write overlaps returns what it read, but the next read
    goes to the shard again: the cache never outlives a write it may predate."""
    config = qe.EdgeConfig(
        vectors={"d": qe.EdgeVectorParams(size=DIM, distance=qe.Distance.Cosine)}
    )
    shard = qe.EdgeShard.create(str(tmp_path), config)
    key = pid("a")
    shard.update(qe.UpdateOperation.upsert_points([qe.Point(key, {"d": unit()}, {"v": "old"})]))
    cache = PayloadCache()

    class WriteDuringRead:
        """The real shard; a write lands (and is announced) while the read is running."""

        def retrieve(self, ids: list[Any], with_payload: bool, with_vector: bool) -> Any:
            got = shard.retrieve(ids, with_payload, with_vector)
            cache.changed()
            shard.update(qe.UpdateOperation.set_payload([key], {"v": "new"}))
            cache.changed()
            return got

    (engine_id,) = [int_id(p.id) for p in shard.retrieve([key], False, False)]
    assert cache.read(WriteDuringRead(), {engine_id})[engine_id][1] == {"v": "old"}  # type: ignore[arg-type]
    assert cache.read(shard, {engine_id})[engine_id][1] == {"v": "new"}
    assert cache.read(shard, {engine_id})[engine_id][1] == {"v": "new"}  # now from the cache
    shard.close()


async def test_edge_namespace_condition_is_left_out_only_while_it_excludes_nothing(
    tmp_path: Path,
) -> None:
    """One namespace in the shard: a search in it needs no namespace condition
    (``edge_types.NamespaceCensus``); once another namespace is written, it does."""
    index = EdgeIndex(IndexSpec("c", dim=DIM, model_id="test"), tmp_path)
    await index.open()
    try:
        vec, mine = unit(), IndexFilter(namespaces=("default",))
        await index.upsert([point("a", "rollout plan", vec)])
        assert await ids_found(index, vec, sparse_query("rollout"), mine) == (
            {pid("a")},
            {pid("a")},
        )
        census = index._census
        assert census.present == {"default"}
        await index.upsert([point("b", "rollout plan", vec, namespace="team")])
        found = await ids_found(index, vec, sparse_query("rollout"), mine)
        assert found == ({pid("a")}, {pid("a")}) and census.present == {"default", "team"}
        both = IndexFilter(namespaces=("default", "team"))
        assert await ids_found(index, vec, sparse_query("rollout"), both) == (
            {pid("a"), pid("b")},
            {pid("a"), pid("b")},
        )
    finally:
        await index.close()


async def test_edge_a_census_outrun_by_a_write_never_leaks_another_namespace(
    tmp_path: Path,
) -> None:
    """A point of another namespace written between the census and the search (here:
    a census that says so, forever) is dropped from every channel's hits."""
    index = EdgeIndex(IndexSpec("c", dim=DIM, model_id="test", latent=True), tmp_path)
    await index.open()
    try:
        vec = unit()
        theirs = point("b", "rollout plan", vec, namespace="team")
        theirs.latent = SparseVector([1, 2], [1.0, 1.0])
        await index.upsert([point("a", "rollout notes", unit()), theirs])
        index._census.covered_by = lambda shard, namespaces: True  # type: ignore[method-assign]
        got = await index.search_channels(
            vec,
            sparse_query("rollout plan"),
            IndexFilter(namespaces=("default",)),
            10,
            latent=SparseVector([1, 2], [1.0, 1.0]),
        )
        assert [h.id for h in got.dense] == [pid("a")]
        assert [h.id for h in got.sparse] == [pid("a")]
        assert got.latent == []
    finally:
        await index.close()


async def test_query_views_merge_by_each_points_best_score(index: Index) -> None:
    """Several dense views in one call: each point scored by its best view, best
    first, cut to the limit (the search's calibrated and wide views)."""
    a, b, c = unit(1), unit(2), unit(3)
    await index.upsert([point("a", "alpha", a), point("b", "beta", b), point("c", "gamma", c)])
    both = await index.search_channels(a, SparseVector([], []), ANY, 2, more_dense=[b])
    assert [h.id for h in both.dense] == [pid("a"), pid("b")]  # c is nobody's best
    assert [round(h.score, 4) for h in both.dense] == [1.0, 1.0]
    one = await index.search_channels(a, SparseVector([], []), ANY, 3)
    assert one.dense[0].id == pid("a") and len(one.dense) == 3


async def test_japanese_and_thai_lexical_match(index: Index) -> None:
    await index.upsert(
        [
            point("ja", "デプロイ前に必ずCIの結果を確認すること", unit()),
            point("ja2", "データベースのバックアップ手順", unit()),
            point("th", "เราตกลงกันว่าจะใช้ git rebase แทนการ merge เสมอ", unit()),
            point("th2", "อย่าส่งคำขอ PATCH พร้อมกันหลายครั้ง", unit()),
            point("en", "always check CI before deploying", unit()),
        ]
    )
    for query, expected in [
        ("CIを確認", "ja"),
        ("バックアップ", "ja2"),
        ("แทนการ merge", "th"),
        ("คำขอพร้อมกัน", "th2"),
    ]:
        _, s = await index.search(None, sparse_query(query), ANY, 5)
        assert s and s[0].id == pid(expected), (query, [h.payload["source_id"] for h in s])


async def test_wrong_dense_size_is_rejected(index: Index) -> None:
    with pytest.raises(IndexMismatch, match="reindex"):
        await index.upsert([point("a", "x", [1.0, 0.0])])
    with pytest.raises(IndexMismatch):
        await index.search([1.0, 0.0], SparseVector([], []), ANY, 5)


async def test_reopen_keeps_data_and_dim_mismatch_raises(backend: Backend) -> None:
    index = await backend.open()
    vec = unit()
    await index.upsert([point("a", "persisted note", vec)])
    await backend.close_all()

    index = await backend.open()
    d, s = await ids_found(index, vec, sparse_query("persisted"))
    assert d == s == {pid("a")}
    await backend.close_all()

    with pytest.raises(IndexMismatch, match="kioku reindex"):
        await backend.open(dim=DIM * 2)
    index = await backend.open()  # the failed open released the store
    assert await index.count() == 1


async def test_second_open_of_same_store_is_store_unavailable(backend: Backend) -> None:
    first = await backend.open()
    await first.upsert([point("a", "held open", unit())])
    with pytest.raises(StoreUnavailable, match="another"):
        await backend.open()
    assert await first.count() == 1  # the first one is unharmed


async def test_closed_edge_index_raises_store_unavailable(tmp_path: Path) -> None:
    index = EdgeIndex(IndexSpec("c", DIM, "m"), tmp_path)
    with pytest.raises(StoreUnavailable, match="not open"):
        await index.count()


_CHILD = textwrap.dedent(
    """
    import anyio, sys
    from pathlib import Path
    from mcp_gateway.index.base import IndexSpec
    from mcp_gateway.index.edge import EdgeIndex
    from mcp_gateway.indexing.lexical import sparse_document
    from mcp_gateway.common.types import IndexPoint, point_id

    async def main():
        index = EdgeIndex(IndexSpec("kill", 4, "m"), Path(sys.argv[1]))
        await index.open()
        for i in range(200):
            p = IndexPoint(point_id("note", str(i)), {"kind": "note"},
                           sparse_document(f"note number {i}"), [1.0, 0.0, 0.0, float(i)])
            await index.upsert([p])
        print("acked", flush=True)
        await anyio.sleep(60)

    anyio.run(main)
    """
)


def _write_then_sigkill(root: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", _CHILD, str(root)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parents[1],
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "acked"
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()


async def test_edge_acknowledged_writes_survive_sigkill(tmp_path: Path) -> None:
    await anyio.to_thread.run_sync(_write_then_sigkill, tmp_path)
    index = EdgeIndex(IndexSpec("kill", 4, "m"), tmp_path)
    await index.open()
    try:
        assert await index.count() == 200
        d, _ = await index.search([0.0, 1.0, 0.0, 0.0], SparseVector([], []), ANY, 1)
        assert d[0].id == point_id("note", "0")
    finally:
        await index.close()


async def test_unreachable_qdrant_server_is_store_unavailable() -> None:
    spec = IndexSpec("c", DIM, "m")
    with pytest.raises(StoreUnavailable, match="unavailable"):
        await open_qdrant_index(spec, url="http://127.0.0.1:9", path=None, api_key=None)


def terms(weights: dict[int, float]) -> SparseVector:
    return SparseVector(sorted(weights), [weights[i] for i in sorted(weights)])


async def test_latent_channel_scores_by_dot_product(backend: Backend) -> None:
    """The latent-terms vector: plain dot product (no IDF), searched in the same round
    trip as the other channels; a point without terms is simply not a latent hit."""
    index = await backend.open(latent=True)
    assert index.spec.latent
    a = point("a", "alpha words", unit(1))
    a.latent = terms({3: 1.0, 7: 2.0})
    b = point("b", "beta words", unit(2))
    b.latent = terms({7: 0.5, 9: 4.0})
    c = point("c", "gamma words", unit(3))  # embedded, no terms
    await index.upsert([a, b, c])
    found = await index.search_channels(
        unit(1), sparse_query("words"), ANY, 10, latent=terms({7: 1.0, 9: 0.1})
    )
    assert [h.id for h in found.latent] == [pid("a"), pid("b")]
    assert [round(h.score, 4) for h in found.latent] == [2.0, 0.9]
    assert {h.id for h in found.sparse} == {pid("a"), pid("b"), pid("c")}
    assert found.dense[0].id == pid("a")
    # the two-channel call is unchanged
    dense, sparse = await index.search(unit(1), sparse_query("words"), ANY, 10)
    assert [h.id for h in dense] == [h.id for h in found.dense] and len(sparse) == 3


async def test_a_collection_without_latent_terms_keeps_working(backend: Backend) -> None:
    """An index made before round 5 cannot gain the vector in place: it opens with
    what it has (``spec.latent`` False), takes points with terms and answers without
    the channel; ``kioku reindex`` builds one with it (tests/test_reindex.py)."""
    old = await backend.open(latent=False)
    await old.upsert([point("a", "alpha", unit(1))])
    await old.close()
    backend.opened.remove(old)
    index = await backend.open(latent=True)
    assert not index.spec.latent
    p = point("b", "beta", unit(2))
    p.latent = terms({1: 1.0})
    await index.upsert([p])
    found = await index.search_channels(unit(2), sparse_query("beta"), ANY, 5, latent=p.latent)
    assert found.latent == [] and found.dense[0].id == pid("b")
    assert await index.count() == 2


async def test_edge_a_graph_is_due_again_once_its_points_were_written_again(
    tmp_path: Path,
) -> None:
    """An update moves a point out of the HNSW graph (payload updates too), and a
    collection whose points all moved is searched by a scan: ``wants_graph`` counts
    those writes as it counts added points, across a restart."""
    spec = IndexSpec("graphed", DIM, "test-model")
    ids = [pid(f"p{i}") for i in range(MIN_GRAPH_GROWTH)]
    index = EdgeIndex(spec, tmp_path, exact_search_below=10)
    await index.open()
    try:
        await index.upsert([point(f"p{i}", "release", unit()) for i in range(len(ids))])
        assert await index.wants_graph()
        await index.build_graph()
        assert not await index.wants_graph()
        await index.set_payload(ids[:-1], {"prior": 0.5})
        assert not await index.wants_graph()  # one write short
    finally:
        await index.close()
    reopened = EdgeIndex(spec, tmp_path, exact_search_below=10)
    await reopened.open()
    try:
        assert not await reopened.wants_graph()
        await reopened.set_payload(ids[-1:], {"prior": 0.5})
        assert await reopened.wants_graph()
    finally:
        await reopened.close()


async def test_a_further_dense_channel_is_searched_by_its_own_vectors(backend: Backend) -> None:
    """Named vectors: each point carries the channel's vector beside ``dense``; a search
    asks the channel with its own query vector and gets its own cosine order; a point
    written without the channel's vector is not in it; the collection reopens with the
    channel it was made with, whatever is asked then."""
    use = DenseChannel("alt", "test-alt", 8)
    index = await backend.open(channels=(use,))
    assert index.spec.channels == (use,)
    alt = np.eye(8)
    points = [point(f"n{i}", f"text {i}", unit(i)) for i in range(4)]
    for i, p in enumerate(points[:3]):
        p.channels = {"alt": [float(x) for x in alt[i]]}
    await index.upsert(points)
    found = await index.search_channels(
        None, SparseVector([], []), ANY, 10, channel_queries={"alt": list(alt[1])}
    )
    assert [h.id for h in found.extra["alt"]][:1] == [pid("n1")]
    assert {h.id for h in found.extra["alt"]} == {pid(f"n{i}") for i in range(3)}
    assert found.dense == [] and found.sparse == []
    both = await index.search_channels(
        unit(2), SparseVector([], []), ANY, 10, channel_queries={"alt": list(alt[0])}
    )
    assert both.dense[0].id == pid("n2") and both.extra["alt"][0].id == pid("n0")
    if backend.name.startswith("edge"):
        await backend.close_all()
        again = await backend.open()  # asked without it: the stored shard keeps it
        assert again.spec.channels == (use,)
