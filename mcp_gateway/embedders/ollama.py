"""Embeddings from an Ollama server (``POST /api/embed``), e.g. nomic-embed-text on a home server.

Ollama adds no task prefixes itself: nomic-embed-text expects ``search_query: `` and
``search_document: ``, so they are configurable here (set them to "" for models without).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import httpx
import numpy as np
import ollama

from mcp_gateway.common.errors import EmbedderUnavailable
from mcp_gateway.embedders.base import DenseOnly

logger = logging.getLogger(__name__)


class OllamaEmbedder(DenseOnly):
    def __init__(
        self,
        host: str,
        model: str = "nomic-embed-text",
        query_prefix: str = "search_query: ",
        document_prefix: str = "search_document: ",
        timeout_s: float = 30.0,
        batch_size: int = 32,
        *,
        client: ollama.AsyncClient | None = None,
        **client_kwargs: Any,
    ) -> None:
        """``client``, or ``client_kwargs`` passed on to httpx (e.g. ``transport=``), for tests."""
        if batch_size < 1:
            raise ValueError("batch_size must be >= 1")
        self.host = host
        self.model = model
        self.model_id = f"ollama/{model}"
        self.dim = 0
        self.query_prefix = query_prefix
        self.document_prefix = document_prefix
        self.batch_size = batch_size
        self._owns_client = client is None
        self._client = client or ollama.AsyncClient(host=host, timeout=timeout_s, **client_kwargs)
        self._timeout_s = timeout_s

    async def start(self) -> None:
        # One real embed call: proves the server is up, the model is pulled, and gives the dim.
        [vec] = await self._embed(["dimension probe"])
        self.dim = len(vec)
        logger.info("ollama embedder %s at %s ready (dim %d)", self.model, self.host, self.dim)

    async def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        out: list[list[float]] = []
        for i in range(0, len(texts), self.batch_size):
            chunk = texts[i : i + self.batch_size]
            out.extend(await self._embed([self.document_prefix + t for t in chunk]))
        return out

    async def embed_documents_now(self, texts: Sequence[str]) -> list[list[float]]:
        # one HTTP call; priority is the Ollama server's business, not ours
        return await self.embed_documents(texts)

    async def embed_query(self, text: str) -> list[float]:
        [vec] = await self._embed([self.query_prefix + text])
        return vec

    async def aclose(self) -> None:
        if self._owns_client:
            await self._client.close()

    async def _embed(self, inputs: list[str]) -> list[list[float]]:
        try:
            # truncate=True: an over-long text is cut to the model's context instead of a 400.
            resp = await self._client.embed(model=self.model, input=inputs, truncate=True)
        except ollama.ResponseError as exc:
            raise EmbedderUnavailable(self._http_error_message(exc)) from exc
        except httpx.TimeoutException as exc:
            raise EmbedderUnavailable(
                f"Ollama at {self.host} did not answer within {self._timeout_s:g} s "
                f"(model {self.model!r}, {len(inputs)} text(s)): it may be loading the model "
                "or overloaded; retry, or raise embedder.timeout_s / lower embedder.batch_size"
            ) from exc
        except (ConnectionError, httpx.TransportError) as exc:
            # ollama turns httpx.ConnectError into the builtin ConnectionError
            raise EmbedderUnavailable(
                f"Ollama at {self.host} is not reachable ({exc.__class__.__name__}): start it "
                f"(`ollama serve`) and make sure `ollama pull {self.model}` has been run, "
                "or check embedder.ollama_host"
            ) from exc
        return self._validate(resp.embeddings, len(inputs))

    def _http_error_message(self, exc: ollama.ResponseError) -> str:
        status = exc.status_code
        if status == 404:
            return (
                f"Ollama at {self.host} does not have the model {self.model!r} ({exc.error}): "
                f"run `ollama pull {self.model}`, or set embedder.ollama_model"
            )
        if status >= 500:
            return (
                f"Ollama at {self.host} failed with HTTP {status} for model {self.model!r}: "
                f"{exc.error}. Check the Ollama server log; it retries once Ollama is healthy"
            )
        return (
            f"Ollama at {self.host} rejected the embed request with HTTP {status}: {exc.error}. "
            f"Check that {self.model!r} is an embedding model and embedder.ollama_host is right"
        )

    def _validate(self, embeddings: Sequence[Sequence[float]], expected: int) -> list[list[float]]:
        if len(embeddings) != expected:
            raise EmbedderUnavailable(
                f"Ollama at {self.host} returned {len(embeddings)} embeddings for "
                f"{expected} inputs (model {self.model!r}); is it an embedding model?"
            )
        try:
            matrix = np.asarray(embeddings, dtype=np.float64)
        except ValueError as exc:  # ragged rows
            raise EmbedderUnavailable(
                f"Ollama at {self.host} returned malformed embeddings for {self.model!r}"
            ) from exc
        if matrix.ndim != 2 or matrix.shape[1] == 0:
            raise EmbedderUnavailable(
                f"Ollama at {self.host} returned empty embeddings for {self.model!r}"
            )
        if self.dim and matrix.shape[1] != self.dim:
            raise EmbedderUnavailable(
                f"Ollama model {self.model!r} now returns {matrix.shape[1]}-d vectors, "
                f"not {self.dim}-d: the model changed; restart kioku and run `kioku reindex`"
            )
        # /api/embed already normalises, but older servers or proxies may not: be robust.
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        vectors: list[list[float]] = (matrix / np.maximum(norms, 1e-12)).tolist()
        return vectors
