"""An LRU cache in front of ``encode_query``: assistants repeat the same searches often.

Entries are kept compact (``compact``): a query's vector as a list holds 384 Python
floats (~12 KB) and its 64 latent terms ~4.5 KB more; as arrays they take ~3 KB, the
same values. Measured at 1,024 entries (the default size): bench/LOG.md, "footprint".
"""

from __future__ import annotations

import logging
from array import array
from collections import OrderedDict
from collections.abc import Sequence

import anyio

from mcp_gateway.common.types import SparseVector
from mcp_gateway.embedders.base import Embedder, Encoded

logger = logging.getLogger(__name__)


class CachedQueryEmbedder:
    """Wraps any embedder; caches query vectors by exact text, passes everything else through.

    ``hits`` counts queries answered without calling the inner embedder (including callers
    that waited for an identical query already in flight); ``misses`` counts inner calls.
    """

    def __init__(self, inner: Embedder, size: int) -> None:
        if size < 1:
            raise ValueError("cache size must be >= 1 (do not wrap to disable caching)")
        self.inner = inner
        self.size = size
        self.model_id = inner.model_id
        self.dim = inner.dim
        self.latent_terms = inner.latent_terms
        self.makes_drafts = inner.makes_drafts
        self.hits = 0
        self.misses = 0
        self._lru: OrderedDict[str, Encoded] = OrderedDict()
        self._inflight: dict[str, anyio.Event] = {}

    async def start(self) -> None:
        await self.inner.start()
        self.model_id = self.inner.model_id
        self.dim = self.inner.dim
        self.latent_terms = self.inner.latent_terms
        self.makes_drafts = self.inner.makes_drafts

    async def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        return await self.inner.embed_documents(texts)

    async def embed_documents_now(self, texts: Sequence[str]) -> list[list[float]]:
        return await self.inner.embed_documents_now(texts)

    async def encode_documents(
        self, texts: Sequence[str], *, now: bool = False, draft: bool = False
    ) -> list[Encoded]:
        return await self.inner.encode_documents(texts, now=now, draft=draft)

    async def embed_query(self, text: str) -> list[float]:
        return list((await self.encode_query(text)).dense)  # a fresh list: callers may mutate

    def peek(self, text: str) -> Encoded | None:
        """The cached encoding of ``text`` (a hit), or None: never waits, never embeds."""
        cached = self._lru.get(text)
        if cached is not None:
            self._lru.move_to_end(text)
            self.hits += 1
        return cached

    def interrupt(self) -> None:
        self.inner.interrupt()

    async def encode_query(self, text: str) -> Encoded:
        """Cached entries are shared: callers must not mutate what they get."""
        while True:
            cached = self._lru.get(text)
            if cached is not None:
                self._lru.move_to_end(text)
                self.hits += 1
                return cached
            pending = self._inflight.get(text)
            if pending is None:
                break
            # The same query is being embedded: wait for it instead of computing twice.
            # If that call failed (or the entry was evicted meanwhile), loop and try ourselves.
            await pending.wait()

        self.misses += 1
        done = anyio.Event()
        self._inflight[text] = done
        try:
            encoded = compact(await self.inner.encode_query(text))
            self._lru[text] = encoded
            if len(self._lru) > self.size:
                self._lru.popitem(last=False)
            return encoded
        finally:
            del self._inflight[text]
            done.set()

    def clear(self) -> None:
        """Drop every cached vector (e.g. after the model changed)."""
        self._lru.clear()

    async def aclose(self) -> None:
        self._lru.clear()
        await self.inner.aclose()


def compact(encoded: Encoded) -> Encoded:
    """``encoded`` with its vector and terms as arrays holding exactly the same values:
    float32 where every value is one (the local engine's are), float64 otherwise."""
    terms = encoded.terms
    if terms is not None:
        terms = SparseVector(_ints(terms.indices), _floats(terms.values))
    return Encoded(_floats(encoded.dense), terms)


def _floats(values: Sequence[float]) -> array[float]:
    narrow = array("f", values)
    return narrow if narrow.tolist() == list(values) else array("d", values)


def _ints(values: Sequence[int]) -> Sequence[int]:
    try:
        return array("l", values)
    except OverflowError:
        return list(values)
