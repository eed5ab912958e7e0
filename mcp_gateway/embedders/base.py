"""The embedder interface: batch document embedding, query embedding, and identity.

An embedder may also give each text its *latent terms* (``e5_latent``: sparse concept
weights from the same forward pass). ``encode_*`` return both; the dense-only
``embed_*`` calls remain for callers that need no terms. ``DenseOnly`` supplies
``encode_*`` for an embedder that has no terms (Ollama, test embedders).

An embedder may also make *drafts* (``makes_drafts``): a faster, slightly less exact
pass over documents (the local engine's int8 graph: a cosine of ~0.9995 to the exact
vector). The embedding job drafts a backlog so a burst becomes searchable sooner, and
embeds those notes exactly once the owner's reconcile pass finds the drafts.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import anyio
import anyio.to_thread

from mcp_gateway.common.errors import EmbedderUnavailable
from mcp_gateway.common.types import SparseVector


@dataclass(frozen=True, slots=True)
class Encoded:
    """One text's dense vector (L2-normalised) and its latent terms (None: not made)."""

    dense: list[float]
    terms: SparseVector | None = None


class Embedder(Protocol):
    model_id: str  # stored with every vector, e.g. "local/multilingual-e5-small-q4"
    dim: int
    # whether ``encode_*`` return latent terms (known after ``start``)
    latent_terms: bool
    # whether ``encode_documents(draft=True)`` is a faster draft pass (known after ``start``)
    makes_drafts: bool

    async def start(self) -> None:
        """Load or probe the model; sets ``dim``. Raise ``EmbedderUnavailable`` if down."""

    async def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        """One call for the whole batch; vectors are L2-normalised."""

    async def embed_query(self, text: str) -> list[float]: ...

    async def embed_documents_now(self, texts: Sequence[str]) -> list[list[float]]:
        """Documents as ``embed_documents``, but at query priority: a search embedding
        the few fresh notes it met must not wait behind the job's document batch."""

    async def encode_documents(
        self, texts: Sequence[str], *, now: bool = False, draft: bool = False
    ) -> list[Encoded]:
        """Vectors and latent terms; ``now``: at query priority (``embed_documents_now``);
        ``draft``: the draft pass, where ``makes_drafts`` (else ignored)."""

    async def encode_query(self, text: str) -> Encoded: ...

    def peek(self, text: str) -> Encoded | None:
        """The query's encoding when it is at hand without computing it (a cache hit),
        else None: never waits, never embeds."""

    def interrupt(self) -> None:
        """The process is stopping: start no further engine call (later calls raise
        ``EmbedderUnavailable``); a call in progress may be abandoned."""

    async def aclose(self) -> None: ...


class DenseOnly:
    """``encode_*`` for an embedder whose texts have no latent terms."""

    latent_terms = False
    makes_drafts = False

    async def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        raise NotImplementedError

    async def embed_documents_now(self, texts: Sequence[str]) -> list[list[float]]:
        raise NotImplementedError

    async def embed_query(self, text: str) -> list[float]:
        raise NotImplementedError

    async def encode_documents(
        self, texts: Sequence[str], *, now: bool = False, draft: bool = False
    ) -> list[Encoded]:
        embed = self.embed_documents_now if now else self.embed_documents
        return [Encoded(v) for v in await embed(texts)]

    async def encode_query(self, text: str) -> Encoded:
        return Encoded(await self.embed_query(text))

    def peek(self, text: str) -> Encoded | None:
        return None  # no cache of its own (``CachedQueryEmbedder`` keeps one)

    def interrupt(self) -> None:
        return None  # nothing runs in this process between calls


class PinnedChannel(DenseOnly):
    """A channel's embedder over a model loaded in a worker thread: one call at a time
    (the model's threads are pinned, so two calls would only contend), refused once
    interrupted. Subclasses give ``model_id``, ``dim``, ``label`` and ``load``."""

    model_id: str
    dim: int
    label: str  # in errors: "the <label> channel is stopped or not started"

    def __init__(self, threads: int = 1) -> None:
        self.threads = threads
        self._model: Any = None
        self._limiter = anyio.CapacityLimiter(1)
        self._stopped = threading.Event()

    @staticmethod
    def load(threads: int) -> Any:
        """The model, loaded and warmed (runs in a worker thread)."""
        raise NotImplementedError

    async def start(self) -> None:
        if self._model is None:
            self._model = await anyio.to_thread.run_sync(self.load, self.threads)

    def _encode(self, texts: Sequence[str]) -> list[list[float]]:
        if self._stopped.is_set() or self._model is None:
            raise EmbedderUnavailable(f"the {self.label} channel is stopped or not started")
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
