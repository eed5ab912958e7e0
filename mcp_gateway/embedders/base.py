"""The embedder interface: batch document embedding, query embedding, and identity."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol


class Embedder(Protocol):
    model_id: str  # stored with every vector, e.g. "local/multilingual-e5-small-q4"
    dim: int

    async def start(self) -> None:
        """Load or probe the model; sets ``dim``. Raise ``EmbedderUnavailable`` if down."""

    async def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        """One call for the whole batch; vectors are L2-normalised."""

    async def embed_query(self, text: str) -> list[float]: ...

    async def embed_documents_now(self, texts: Sequence[str]) -> list[list[float]]:
        """Documents as ``embed_documents``, but at query priority: a search embedding
        the few fresh notes it met must not wait behind the job's document batch."""

    async def aclose(self) -> None: ...
