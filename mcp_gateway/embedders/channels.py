"""Further dense channels: which models ``embedder.channels`` names, and their embedders.

A channel is a second (third...) model's vector of every note and record, kept in the
truth store under its model id and in the index as a named vector beside the main
model's (``index.base.DenseChannel``); search fuses its hits with the others
(``search/ranking.py``). The registry knows each channel's model id and size without
loading it, so an index can be made for it before the model has started.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from mcp_gateway.common.sections import EmbedderSettings
from mcp_gateway.embedders.base import Embedder
from mcp_gateway.embedders.cache import CachedQueryEmbedder
from mcp_gateway.embedders.minilm import DIM as MINILM_DIM
from mcp_gateway.embedders.minilm import MODEL_ID as MINILM_MODEL
from mcp_gateway.embedders.minilm import MODEL_ID_INT8 as MINILM_INT8_MODEL
from mcp_gateway.embedders.minilm import MiniLMEmbedder, MiniLMInt8Embedder
from mcp_gateway.embedders.static_channels import DIM as STATIC_DIM
from mcp_gateway.embedders.static_channels import TABLES, StaticChannel
from mcp_gateway.embedders.use import DIM as USE_DIM
from mcp_gateway.embedders.use import MODEL_ID as USE_MODEL
from mcp_gateway.embedders.use import UseEmbedder
from mcp_gateway.index.base import DenseChannel

KNOWN: dict[str, DenseChannel] = {
    "use": DenseChannel("use", USE_MODEL, USE_DIM),
    "minilm": DenseChannel("minilm", MINILM_MODEL, MINILM_DIM),
    **{name: DenseChannel(name, model, STATIC_DIM) for name, (model, _, _) in TABLES.items()},
}
MINILM_INT8 = DenseChannel("minilm", MINILM_INT8_MODEL, MINILM_DIM)
# the query scripts (``search.calibration.query_script``) a channel answers; absent: all.
# MiniLM is English only: a Japanese or Thai query is mostly unknown pieces to it.
SCRIPTS: dict[str, frozenset[str]] = {"minilm": frozenset({"latin"})}
# the channels a new note gets with its first point (before its acknowledged write is
# indexed); the others follow with its embedding job. MiniLM costs ~4x USE a document:
# with it at the add, a 500-note burst took 25-35 s to acknowledge against 12 s without
# (bench/LOG.md). A static table costs ~0.25 ms a text and no model.
FAST = frozenset({"use", *TABLES})


def index_gaps(configured: Sequence[DenseChannel], held: Sequence[DenseChannel]) -> list[str]:
    """What the index lacks of the configured channels, one line each: a channel it has
    not got, or holds for another model (``embedder.minilm_int8`` switched; search goes
    without it, ``search.query_vectors``). ``kioku reindex`` mends both."""
    have = {c.name: c.model_id for c in held}
    missing = [c.name for c in configured if c.name not in have]
    out = []
    if missing:
        out.append(
            f"the index has no {', '.join(missing)} channel yet: a running kioku builds it "
            "in the background, `kioku reindex` at once (the main model's vectors are reused)"
        )
    for c in configured:
        if have.get(c.name, c.model_id) != c.model_id:
            out.append(
                f"the index's {c.name} channel holds {have[c.name]} vectors but {c.model_id} "
                f"is configured: search goes without it until a running kioku (or `kioku "
                "reindex`) builds it"
            )
    return out


def channel_reads(name: str) -> frozenset[str] | None:
    """The scripts a channel reads (queries and texts alike); None: every script."""
    return SCRIPTS.get(name)


def configured_channels(settings: EmbedderSettings) -> tuple[DenseChannel, ...]:
    """The configured channels, in order, once each (``minilm`` under the int8 graph's
    model id with ``minilm_int8``: its vectors are not the float graph's)."""
    return tuple(
        MINILM_INT8 if name == "minilm" and settings.minilm_int8 else KNOWN[name]
        for name in dict.fromkeys(settings.channels)
    )


@dataclass(frozen=True, slots=True)
class ChannelEmbedder:
    channel: DenseChannel
    embedder: Embedder

    @property
    def fast(self) -> bool:
        """Whether a new note gets this channel's vector with its first point."""
        return self.channel.name in FAST

    def answers(self, script: str) -> bool:
        """Whether this channel searches for a query written in ``script``."""
        scripts = channel_reads(self.channel.name)
        return scripts is None or script in scripts


def build_channel_embedders(settings: EmbedderSettings) -> tuple[ChannelEmbedder, ...]:
    """One (not started) embedder per configured channel, behind a query cache unless
    its size is 0."""
    out = []
    for channel in configured_channels(settings):
        embedder: Embedder
        if channel.name == "minilm":
            kind = MiniLMInt8Embedder if channel == MINILM_INT8 else MiniLMEmbedder
            embedder = kind(threads=settings.channel_threads)
        elif channel.name in TABLES:
            embedder = StaticChannel(channel.name)
        else:
            embedder = UseEmbedder(threads=settings.channel_threads)
        if settings.query_cache_size > 0:
            embedder = CachedQueryEmbedder(embedder, settings.query_cache_size)
        out.append(ChannelEmbedder(channel, embedder))
    return tuple(out)
