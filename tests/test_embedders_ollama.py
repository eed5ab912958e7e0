"""OllamaEmbedder against a stub of Ollama's HTTP API served by uvicorn on 127.0.0.1."""

from __future__ import annotations

import asyncio
import hashlib
import math
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from mcp_gateway.common.errors import EmbedderUnavailable
from mcp_gateway.common.sections import EmbedderSettings
from mcp_gateway.embedders import CachedQueryEmbedder, build_embedder
from mcp_gateway.embedders.ollama import OllamaEmbedder

DIM = 8


def fake_vector(text: str, scale: float = 1.0) -> list[float]:
    """Deterministic, text-dependent, unit-norm (times ``scale``) vector."""
    digest = hashlib.sha256(text.encode()).digest()
    raw = [b - 127.5 for b in digest[:DIM]]
    norm = math.sqrt(sum(x * x for x in raw))
    return [scale * x / norm for x in raw]


class StubOllama:
    """POST /api/embed. The model name picks the behaviour, like a real server's models."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        # "slow" answers once this is set (or after 60 s): a timeout test never races it
        self.release = threading.Event()
        self.app = Starlette(routes=[Route("/api/embed", self.embed, methods=["POST"])])

    async def embed(self, request: Request) -> JSONResponse:
        body = await request.json()
        self.requests.append(body)
        model, inputs = body["model"], body["input"]
        inputs = [inputs] if isinstance(inputs, str) else inputs
        if model == "missing":
            return JSONResponse(
                {"error": f'model "{model}" not found, try pulling it first'}, status_code=404
            )
        if model == "broken":
            return JSONResponse({"error": "llama runner process has terminated"}, status_code=500)
        if model == "slow":
            await asyncio.to_thread(self.release.wait, 60)
        if model == "short":
            inputs = inputs[:-1]
        scale = 3.0 if model == "unnormalised" else 1.0
        embeddings = [fake_vector(t, scale) for t in inputs]
        return JSONResponse({"model": model, "embeddings": embeddings})


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def stub() -> Iterator[tuple[StubOllama, str]]:
    state = StubOllama()
    port = _free_port()
    config = uvicorn.Config(
        state.app, host="127.0.0.1", port=port, log_level="warning", timeout_graceful_shutdown=1
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert time.monotonic() < deadline, "stub server did not start"
        time.sleep(0.02)
    yield state, f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(timeout=5)


@pytest.fixture
def ollama_stub(stub: tuple[StubOllama, str]) -> tuple[StubOllama, str]:
    state, url = stub
    state.requests.clear()
    return state, url


async def test_start_probes_dimension_and_model_id(ollama_stub: tuple[StubOllama, str]) -> None:
    state, url = ollama_stub
    emb = OllamaEmbedder(url)
    await emb.start()
    assert emb.dim == DIM
    assert emb.model_id == "ollama/nomic-embed-text"
    assert len(state.requests) == 1
    assert state.requests[0]["model"] == "nomic-embed-text"
    await emb.aclose()


async def test_prefixes_are_sent(ollama_stub: tuple[StubOllama, str]) -> None:
    state, url = ollama_stub
    emb = OllamaEmbedder(url)
    await emb.start()
    state.requests.clear()
    q = await emb.embed_query("how to deploy")
    docs = await emb.embed_documents(["deploy with compose", "rollback steps"])
    assert state.requests[0]["input"] == ["search_query: how to deploy"]
    assert state.requests[1]["input"] == [
        "search_document: deploy with compose",
        "search_document: rollback steps",
    ]
    assert q == pytest.approx(fake_vector("search_query: how to deploy"))
    assert docs[1] == pytest.approx(fake_vector("search_document: rollback steps"))
    await emb.aclose()


async def test_custom_and_empty_prefixes(ollama_stub: tuple[StubOllama, str]) -> None:
    state, url = ollama_stub
    emb = OllamaEmbedder(url, model="mxbai-embed-large", query_prefix="", document_prefix="")
    await emb.embed_query("q")
    await emb.embed_documents(["d"])
    assert [r["input"] for r in state.requests] == [["q"], ["d"]]
    assert emb.model_id == "ollama/mxbai-embed-large"
    await emb.aclose()


async def test_batching_splits_requests_and_keeps_order(
    ollama_stub: tuple[StubOllama, str],
) -> None:
    state, url = ollama_stub
    emb = OllamaEmbedder(url, batch_size=4)
    texts = [f"note {i}" for i in range(10)]
    vecs = await emb.embed_documents(texts)
    assert [len(r["input"]) for r in state.requests] == [4, 4, 2]
    assert vecs == [pytest.approx(fake_vector(f"search_document: {t}")) for t in texts]
    assert await emb.embed_documents([]) == []
    assert len(state.requests) == 3  # an empty batch costs no request
    await emb.aclose()


async def test_vectors_are_normalised(ollama_stub: tuple[StubOllama, str]) -> None:
    _, url = ollama_stub
    emb = OllamaEmbedder(url, model="unnormalised")
    await emb.start()
    for vec in [await emb.embed_query("x"), *(await emb.embed_documents(["a", "b"]))]:
        assert all(isinstance(x, float) for x in vec)
        assert math.sqrt(sum(x * x for x in vec)) == pytest.approx(1.0, abs=1e-9)
    await emb.aclose()


async def test_model_not_found_says_pull(ollama_stub: tuple[StubOllama, str]) -> None:
    _, url = ollama_stub
    emb = OllamaEmbedder(url, model="missing")
    with pytest.raises(EmbedderUnavailable) as info:
        await emb.start()
    msg = str(info.value)
    assert "ollama pull missing" in msg and url in msg and "not found" in msg
    await emb.aclose()


async def test_server_error_maps(ollama_stub: tuple[StubOllama, str]) -> None:
    _, url = ollama_stub
    emb = OllamaEmbedder(url, model="broken")
    with pytest.raises(EmbedderUnavailable) as info:
        await emb.embed_documents(["a"])
    msg = str(info.value)
    assert "HTTP 500" in msg and "llama runner process has terminated" in msg
    await emb.aclose()


async def test_timeout_maps(ollama_stub: tuple[StubOllama, str]) -> None:
    # The stub holds the answer until the test releases it: the error can only come from
    # the client's own timeout (it raced a 1.5 s answer, with a wall-clock bound, before).
    state, url = ollama_stub
    emb = OllamaEmbedder(url, model="slow", timeout_s=0.3)
    state.release.clear()
    try:
        with pytest.raises(EmbedderUnavailable) as info:
            await asyncio.wait_for(emb.embed_query("a"), 30)
        assert "did not answer within 0.3 s" in str(info.value)
    finally:
        state.release.set()
        await emb.aclose()


async def test_unreachable_server_maps() -> None:
    url = f"http://127.0.0.1:{_free_port()}"  # nothing listens there any more
    emb = OllamaEmbedder(url)
    with pytest.raises(EmbedderUnavailable) as info:
        await emb.start()
    msg = str(info.value)
    assert f"Ollama at {url} is not reachable" in msg
    assert "ollama pull nomic-embed-text" in msg
    await emb.aclose()


async def test_wrong_embedding_count_maps(ollama_stub: tuple[StubOllama, str]) -> None:
    _, url = ollama_stub
    emb = OllamaEmbedder(url, model="short")
    with pytest.raises(EmbedderUnavailable, match="returned 1 embeddings for 2 inputs"):
        await emb.embed_documents(["a", "b"])
    await emb.aclose()


async def test_transport_injection() -> None:
    # The httpx kwargs reach the client: no server needed for unit-level checks.
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"model": "m", "embeddings": [[3.0, 4.0]]})

    emb = OllamaEmbedder("http://ollama.invalid:11434", transport=httpx.MockTransport(handler))
    await emb.start()
    assert emb.dim == 2
    assert await emb.embed_query("x") == pytest.approx([0.6, 0.8])
    await emb.aclose()


async def test_build_embedder_ollama_with_cache(ollama_stub: tuple[StubOllama, str]) -> None:
    state, url = ollama_stub
    emb = build_embedder(EmbedderSettings(provider="ollama", ollama_host=url, batch_size=2))
    assert isinstance(emb, CachedQueryEmbedder)
    await emb.start()
    assert (emb.model_id, emb.dim) == ("ollama/nomic-embed-text", DIM)
    await emb.embed_query("same")
    await emb.embed_query("same")
    await emb.embed_documents(["a", "b", "c"])
    assert (emb.hits, emb.misses) == (1, 1)
    assert [len(r["input"]) for r in state.requests] == [1, 1, 2, 1]  # probe, query, 2 batches
    await emb.aclose()
