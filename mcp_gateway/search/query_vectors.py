"""A query's vectors: its dense views (one embedding, shifted by the model's
calibration), its latent terms, each further dense channel's vector, and the views of
its other phrasings."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

import anyio

from mcp_gateway.common.errors import EmbedderUnavailable
from mcp_gateway.common.sections import SearchSettings
from mcp_gateway.common.types import SparseVector
from mcp_gateway.embedders.base import Embedder, Encoded
from mcp_gateway.embedders.channels import ChannelEmbedder
from mcp_gateway.index.live import LiveIndex
from mcp_gateway.search.calibration import Calibration, query_script, shift_views
from mcp_gateway.search.query_memo import QueryMemo

log = logging.getLogger(__name__)

Views = list[Sequence[float]]


@dataclass(slots=True)
class Vectors:
    """What the index is asked with, for one query."""

    views: Views  # its dense views (none: the dense channel is off or down)
    terms: SparseVector | None  # its latent terms, where the index searches them
    more: dict[str, Sequence[float]]  # each further dense channel's vector
    alternatives: Views  # every view of each other phrasing
    dense_ok: bool  # whether the dense channel answered


class QueryVectors:
    def __init__(
        self,
        embedder: Embedder,
        index: LiveIndex,
        settings: SearchSettings,
        memo: QueryMemo,
        calibration: Calibration,
        channels: Sequence[ChannelEmbedder] = (),
    ) -> None:
        self.embedder, self.index, self.settings, self.memo = embedder, index, settings, memo
        self.calibration = calibration
        self.channels = tuple(channels)

    async def read(
        self,
        query: str,
        alternatives: Sequence[str] = (),
        cached: tuple[Views, SparseVector | None] | None = None,
    ) -> Vectors:
        """The query's vectors; ``cached``: its views and terms at hand (``cached``)."""
        more: dict[str, Sequence[float]] = {}
        if cached is not None:
            (views, terms), dense_ok = cached, True
            more.update(await self.channel_queries(query))
        else:
            async with anyio.create_task_group() as tg:
                if self.channels and self.settings.mode != "lexical":
                    # beside the main model's, on their own lane
                    tg.start_soon(self._channel_queries, query, more)
                lexical = self.settings.mode == "lexical"
                views, terms, dense_ok = ([], None, False) if lexical else await self.embed(query)
        other: Views = []
        for alt in alternatives if views else ():
            other.extend((await self.embed(alt))[0])
        # latent terms replace BM25 as the second channel where the index has them
        latent = self.settings.mode == "hybrid" and self.index.spec.latent
        return Vectors(views, terms if latent else None, more, other, dense_ok)

    async def _channel_queries(self, query: str, into: dict[str, Sequence[float]]) -> None:
        into.update(await self.channel_queries(query))

    async def channel_queries(self, query: str) -> dict[str, Sequence[float]]:
        """The query's vector from each further dense channel the index has for the
        configured model (a channel that is down is left out: the others still answer)."""
        out: dict[str, Sequence[float]] = {}
        if self.settings.mode == "lexical":
            return out
        script = query_script(query) if self.channels else ""
        # one after the other: started together on their lanes, they were no faster over
        # stdio idle and slower under a CPU hog (bench/LOG.md, "minilm: int8 kernel quality")
        for ce in self.channels:
            if not self._indexed(ce) or not ce.answers(script):
                continue
            known = ce.embedder.peek(query)
            try:
                out[ce.channel.name] = (
                    known.dense if known is not None else await ce.embedder.embed_query(query)
                )
            except EmbedderUnavailable as exc:
                log.warning("the %s channel skipped a search: %s", ce.channel.name, exc)
        return out

    def _indexed(self, ce: ChannelEmbedder) -> bool:
        # an index built for another model of the channel (embedder.minilm_int8 switched)
        # holds vectors the query's would not compare with, until `kioku reindex`
        held = self.index.spec.channel(ce.channel.name)
        return held is not None and held.model_id == ce.channel.model_id

    def cached(self, query: str) -> tuple[Views, SparseVector | None] | None:
        """The query's views and latent terms when its embedding is cached (no wait)."""
        if self.settings.mode == "lexical" or not self.model_matches:
            return None
        encoded = self.embedder.peek(query)
        return None if encoded is None else (self._views(query, encoded), encoded.terms)

    def _views(self, query: str, encoded: Encoded) -> list[Sequence[float]]:
        c = self.calibration
        weight, wide = c.language_shift, c.wide_shift
        return self.memo.views(
            query, encoded, lambda: shift_views(encoded.dense, query, c, weight, wide)
        )

    @property
    def model_matches(self) -> bool:
        # the configured model differs from the live index's until `kioku reindex`
        # adopts it: its query vectors would not compare with the stored ones
        return self.embedder.model_id == self.index.spec.model_id

    async def embed(self, query: str) -> tuple[list[Sequence[float]], SparseVector | None, bool]:
        """The query's dense views (one embedding, shifted once or twice) and its latent
        terms (None: the embedder makes none)."""
        if not self.model_matches:
            return [], None, False
        try:
            encoded = await self.embedder.encode_query(query)
        except EmbedderUnavailable as exc:
            # Lexical search still answers; indexing catches up when the embedder is back.
            log.warning("dense channel skipped: %s", exc)
            return [], None, False
        return self._views(query, encoded), encoded.terms, True
