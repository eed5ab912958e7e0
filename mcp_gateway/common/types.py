"""Shared data types: notes, records, index points and search hits.

Everything that crosses a module boundary is defined here, so that stores, index
backends, ranking and the MCP tools agree on one shape.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from mcp_gateway.common.inputs import NoteFields

Priority = Literal["", "high", "low"]
Kind = Literal["note", "record"]

# Point ids in the index are UUIDs derived deterministically from the source id, so
# re-indexing the same note or record is an idempotent overwrite.
_POINT_NAMESPACE = uuid.UUID("6b1d3c1e-4f0a-4b7e-9a55-6b696f6b7500")


def point_id(kind: Kind, source_id: str) -> str:
    return str(uuid.uuid5(_POINT_NAMESPACE, f"{kind}:{source_id}"))


@dataclass(frozen=True, slots=True)
class SparseVector:
    """Lexical term weights: hashed term ids and their (BM25-style) weights."""

    indices: Sequence[int]  # lists, or compact arrays where kept (``embedders.cache``)
    values: Sequence[float]

    def is_empty(self) -> bool:
        return not self.indices


@dataclass(slots=True)
class IndexPoint:
    """One searchable item in the index (a note or a record).

    ``payload`` holds the filterable fields: ``kind``, ``source_id``, ``type``,
    ``domain``, ``priority``, ``namespace``, ``created_at`` (epoch seconds, float),
    ``current`` (records: lifecycle head), plus ranking priors written by jobs.
    """

    id: str
    payload: dict[str, Any]
    sparse: SparseVector
    dense: list[float] | None = None
    latent: SparseVector | None = None  # latent terms (indexes built with them only)
    # further dense channels (index/base.py ``DenseChannel``), by channel name: written
    # where the index has that channel, ignored elsewhere
    channels: dict[str, list[float]] = field(default_factory=dict)
    # a point without ``dense``: its static vector (``embedders.static``), which the
    # index's fast pool holds until the dense vector is written (``index.fast_pool``)
    fast: list[float] | None = None


@dataclass(frozen=True, slots=True)
class IndexFilter:
    """Conditions every returned point must meet. Empty tuples mean "any"."""

    kinds: tuple[str, ...] = ()
    types: tuple[str, ...] = ()
    domains: tuple[str, ...] = ()
    namespaces: tuple[str, ...] = ()
    current_only: bool = False
    exclude_types: tuple[str, ...] = ()


@dataclass(slots=True)
class IndexHit:
    """A point returned by one retrieval channel, with that channel's raw score.

    For the dense channel ``score`` is cosine similarity (distance = 1 - score);
    for the sparse channel it is the BM25-style dot product. Not frozen: a search
    builds ~200 of these, and a frozen dataclass's ``__init__`` costs 3x (0.09 vs
    0.03 ms for 200). Nothing changes one after it is made.
    """

    id: str
    score: float
    payload: dict[str, Any] = field(default_factory=dict)


class _Identified(BaseModel):
    id: str


class Note(NoteFields, _Identified):
    """A stored note: its own fields (``NoteFields``, the one model of them; the priority
    as stored, one of ``Priority``), then what the store gives it. Fields in the order
    id, the note's own fields, the rest (the bases, last first)."""

    model_config = ConfigDict(frozen=False, extra="ignore")

    priority: Priority = ""
    namespace: str = "default"
    created_at: float
    updated_at: float
    deleted: bool = False
    embedded_model: str | None = None


class SearchResult(BaseModel):
    """One result of ``search_memory`` as the assistant sees it."""

    id: str
    kind: Kind = "note"
    type: str
    priority: str = ""
    domain: str = ""
    created_at: str = Field(description="ISO-8601 UTC creation time")
    distance: float | None = Field(
        default=None, description="cosine distance of the dense match (lower is closer)"
    )
    score: float = Field(
        description="fused relevance (higher is more relevant); the list's order is the "
        "answer's: high priority, the newer of two alike notes and the own namespace can "
        "put an item above one that scores higher"
    )
    tags: list[str] = Field(default_factory=list)
    text: str
    title: str = ""
    also: list[str] = Field(
        default_factory=list,
        description="older notes saying the same in other words, folded into this one "
        "(each still readable with get_note)",
    )


class SearchResponse(BaseModel):
    query: str
    results: list[SearchResult] = Field(description="ranked hits, at most ``top``")
    recent: list[SearchResult] = Field(
        default_factory=list,
        description="newest lessons/conclusions related to the query, outside the ranking",
    )
    dense_available: bool = Field(
        default=True, description="false while the embedder is unavailable: lexical only"
    )
    credited: list[str] = Field(
        default_factory=list, description="ids of ``used`` credited as used (learned from)"
    )
    not_credited: list[str] = Field(
        default_factory=list,
        description="ids of ``used`` ignored: not shown by a search of yours in 30 minutes",
    )
    match: Literal["strong", "weak", "none"] = Field(
        default="strong",
        description='"strong": the results are about the query; "weak": no memory is close '
        'enough, the few closest are shown, tagged [WEAK]; "none": nothing matched',
    )
    channels: list[str] = Field(
        default_factory=list,
        description="the further dense channels (embedder.channels) that ranked this answer",
    )


class RebuildStatus(BaseModel):
    """What `kioku reindex` reports while the owner rebuilds the index."""

    state: str = "idle"  # idle | running | done | failed | cancelled
    collection: str = ""
    model: str = ""
    notes_done: int = 0
    notes_total: int = 0
    records_done: int = 0
    embedded: int = 0
    out_of_process: bool = False
    build_pid: int = 0
    graph_points: int = 0
    seconds: float = 0.0
    message: str = ""


# what `kioku reindex` calls with each status it shows
Progress = Callable[[RebuildStatus], None]
