"""A query's vectors: its dense views (one embedding, shifted by the model's
calibration), its latent terms, and each further dense channel's vector."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from mcp_gateway.common.errors import EmbedderUnavailable
from mcp_gateway.common.sections import SearchSettings
from mcp_gateway.common.types import SparseVector
from mcp_gateway.embedders.base import Embedder, Encoded
from mcp_gateway.embedders.channels import ChannelEmbedder
from mcp_gateway.index.live import LiveIndex
from mcp_gateway.search.calibration import Calibration, query_script, shift_views
from mcp_gateway.search.query_memo import QueryMemo

log = logging.getLogger(__name__)


class QueryVectors:
    def __init__(
        self,
        embedder: Embedder,
        index: LiveIndex,
        settings: SearchSettings,
        memo: QueryMemo,
        calibration: Calibration,
        language_shift: float,
        wide_shift: float,
        channels: Sequence[ChannelEmbedder] = (),
    ) -> None:
        self.embedder, self.index, self.settings, self.memo = embedder, index, settings, memo
        self.calibration = calibration
        self.language_shift, self.wide_shift = language_shift, wide_shift
        self.channels = tuple(channels)

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

    def latent(self, terms: SparseVector | None) -> SparseVector | None:
        # latent terms replace BM25 as the second channel where the index has them
        if self.settings.mode != "hybrid" or not self.index.spec.latent:
            return None
        return terms

    def cached(self, query: str) -> tuple[list[Sequence[float]], SparseVector | None] | None:
        """The query's views and latent terms when its embedding is cached (no wait)."""
        if self.settings.mode == "lexical" or not self.model_matches:
            return None
        encoded = self.embedder.peek(query)
        return None if encoded is None else (self._views(query, encoded), encoded.terms)

    def _views(self, query: str, encoded: Encoded) -> list[Sequence[float]]:
        c, weight, wide = self.calibration, self.language_shift, self.wide_shift
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
