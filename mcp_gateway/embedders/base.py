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

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import anyio
import anyio.to_thread

from mcp_gateway.common.errors import EmbedderUnavailable
from mcp_gateway.common.types import SparseVector
from mcp_gateway.embedders.lanes import Lane, stop_and_wait


@dataclass(frozen=True, slots=True)
class Encoded:
    """One text's dense vector (L2-normalised) and its latent terms (None: not made)."""

    dense: Sequence[float]  # a list, or a compact array where kept (``cache``)
    terms: SparseVector | None = None


def as_list(vector: Sequence[float]) -> list[float]:
    """``vector`` as a list (itself when it is one)."""
    return vector if isinstance(vector, list) else list(vector)


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
    """A channel's embedder over a model loaded in a worker thread. Its calls run one at
    a time on its own lane (``lanes.Lane``: the model's threads are pinned, so two calls
    would only contend), ``STEP`` texts per engine call with a stop check between, and
    are refused once interrupted: a stopping owner neither waits for a batch nor exits
    under one (``lanes.exit_if_busy``). Subclasses give ``model_id``, ``dim``, ``label``
    and ``load``."""

    model_id: str
    dim: int
    label: str  # in errors: "the <label> channel is stopped or not started"
    # texts per engine call: a stop waits for at most these (MiniLM, 256-token texts,
    # one thread, 2 loaded cores: 0.5-0.7 s a call of 4 and as many texts a second as
    # calls of 16, which took 2.7 s each; bench/LOG.md, "owner lifecycle")
    STEP = 4

    def __init__(self, threads: int = 1) -> None:
        self.threads = threads
        self._model: Any = None
        self._lane = Lane(f"channel-{self.label}", threads)

    @staticmethod
    def load(threads: int) -> Any:
        """The model, loaded and warmed (runs in a worker thread)."""
        raise NotImplementedError

    async def start(self) -> None:
        if self._model is None:
            self._model = await anyio.to_thread.run_sync(self.load, self.threads)

    def _encode(self, texts: Sequence[str]) -> list[list[float]]:
        model = self._model
        # similar lengths in one call: padding is most of the cost of a mixed batch
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out: list[list[float]] = [[] for _ in texts]
        for start in range(0, len(order), self.STEP):
            if self._lane.stopping or model is None:
                raise EmbedderUnavailable(f"the {self.label} channel is stopped or not started")
            taken = order[start : start + self.STEP]
            for i, vector in zip(taken, model.encode([texts[i] for i in taken]), strict=True):
                out[i] = vector.tolist()
        return out

    async def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        return await self._lane.run(self._encode, list(texts))

    async def embed_documents_now(self, texts: Sequence[str]) -> list[list[float]]:
        return await self.embed_documents(texts)

    async def embed_query(self, text: str) -> list[float]:
        return (await self.embed_documents([text]))[0]

    def interrupt(self) -> None:
        self._lane.stop()

    async def aclose(self) -> None:
        await stop_and_wait([self._lane])
        self._model = None
        self._lane.close()
