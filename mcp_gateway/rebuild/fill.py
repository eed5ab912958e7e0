"""Fill a new collection from the truth store: every live note and record, with its
stored vector and prior. Shared by the in-process rebuild (``services/reindex.py``) and
the out-of-process graph build (``rebuild/build.py``), so both write identical points."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Protocol

import anyio
import anyio.to_thread

from mcp_gateway.common.types import IndexPoint, Note
from mcp_gateway.embedders.base import Encoded
from mcp_gateway.index.base import IndexSpec
from mcp_gateway.indexing.note_priors import load_priors
from mcp_gateway.indexing.points import (
    channel_rows,
    current_channels,
    note_document,
    note_point,
    record_document,
    record_point,
)
from mcp_gateway.records import Record, RecordStore
from mcp_gateway.stores.db import Database
from mcp_gateway.stores.notes import NoteStore
from mcp_gateway.stores.vectors import VectorStore, content_hash

PAGE = 256


class Sink(Protocol):
    async def upsert(self, points: Sequence[IndexPoint]) -> None: ...


# (kind, {source_id: document}) -> {source_id: vector and terms} for the items that have one
VectorsFor = Callable[[str, dict[str, str]], Awaitable[dict[str, Encoded]]]


# (kind, {source_id: document}) -> {source_id: {channel: vector}} (further dense channels)
ChannelsFor = Callable[[str, dict[str, str]], Awaitable[dict[str, dict[str, list[float]]]]]


async def _no_channels(_kind: str, _docs: dict[str, str]) -> dict[str, dict[str, list[float]]]:
    return {}


def stored_channels(store: VectorStore, spec: IndexSpec) -> ChannelsFor:
    """The stored vectors of each further dense channel of ``spec`` whose text hash
    still matches the document (none: a channel just added; its job fills them in)."""

    async def get(kind: str, docs: dict[str, str]) -> dict[str, dict[str, list[float]]]:
        rows = await channel_rows(store, spec, kind, list(docs))
        return {sid: current_channels(rows, sid, docs[sid]) for sid in rows if sid in docs}

    return get


def stored_vectors(store: VectorStore, model: str) -> VectorsFor:
    """The stored vectors of ``model`` whose text hash still matches the document."""

    async def get(kind: str, docs: dict[str, str]) -> dict[str, Encoded]:
        stored = await store.get(kind, model, list(docs))
        return {
            sid: Encoded(v.vector, v.terms)
            for sid, v in stored.items()
            if sid in docs and v.content_hash == content_hash(docs[sid])
        }

    return get


async def fill_notes(
    notes: NoteStore,
    db: Database,
    target: Sink,
    vectors_for: VectorsFor,
    on_page: Callable[[int], None] = lambda _n: None,
    channels_for: ChannelsFor = _no_channels,
) -> dict[str, float]:
    """Write every live note; returns the versions written with a dense vector."""
    embedded: dict[str, float] = {}
    after = ""
    while page := await notes.page(after, limit=PAGE):
        after = page[-1].id
        docs = {n.id: note_document(n) for n in page}
        vectors = await vectors_for("note", docs)
        more = await channels_for("note", docs)
        priors = await load_priors(db, [n.id for n in page])
        # sparse encoding of a page is CPU work: off the event loop
        points = await anyio.to_thread.run_sync(
            lambda p=page, v=vectors, pr=priors, m=more: [  # type: ignore[misc]
                _note(n, v.get(n.id), pr.get(n.id), m.get(n.id)) for n in p
            ]
        )
        await target.upsert(points)
        embedded.update({n.id: n.updated_at for n in page if n.id in vectors})
        on_page(len(page))
    return embedded


async def fill_records(
    records: RecordStore,
    target: Sink,
    vectors_for: VectorsFor,
    on_batch: Callable[[int], None] = lambda _n: None,
    channels_for: ChannelsFor = _no_channels,
) -> None:
    async for batch in records.iter_all(batch_size=PAGE):
        docs = {r.id: record_document(r) for r in batch}
        vectors = await vectors_for("record", docs)
        more = await channels_for("record", docs)
        current = await records.current_ids([r.id for r in batch])
        points: list[IndexPoint] = await anyio.to_thread.run_sync(
            lambda b=batch, v=vectors, c=current, m=more: [  # type: ignore[misc]
                _record(r, r.id in c, v.get(r.id), m.get(r.id)) for r in b
            ]
        )
        await target.upsert(points)
        on_batch(len(batch))


def _note(
    note: Note, vec: Encoded | None, prior: float | None, more: dict[str, list[float]] | None
) -> IndexPoint:
    if vec is None:
        return note_point(note, None, prior, channels=more)
    return note_point(note, vec.dense, prior, vec.terms, more)


def _record(
    rec: Record, current: bool, vec: Encoded | None, more: dict[str, list[float]] | None
) -> IndexPoint:
    if vec is None:
        return record_point(rec, current=current, channels=more)
    return record_point(rec, current=current, dense=vec.dense, latent=vec.terms, channels=more)
