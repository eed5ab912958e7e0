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
from mcp_gateway.indexing.indexer import (
    load_priors,
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
) -> dict[str, float]:
    """Write every live note; returns the versions written with a dense vector."""
    embedded: dict[str, float] = {}
    after = ""
    while page := await notes.page(after, limit=PAGE):
        after = page[-1].id
        vectors = await vectors_for("note", {n.id: note_document(n) for n in page})
        priors = await load_priors(db, [n.id for n in page])
        # sparse encoding of a page is CPU work: off the event loop
        points = await anyio.to_thread.run_sync(
            lambda p=page, v=vectors, pr=priors: [  # type: ignore[misc]
                _note(n, v.get(n.id), pr.get(n.id)) for n in p
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
) -> None:
    async for batch in records.iter_all(batch_size=PAGE):
        vectors = await vectors_for("record", {r.id: record_document(r) for r in batch})
        current = await records.current_ids([r.id for r in batch])
        points: list[IndexPoint] = await anyio.to_thread.run_sync(
            lambda b=batch, v=vectors, c=current: [  # type: ignore[misc]
                _record(r, r.id in c, v.get(r.id)) for r in b
            ]
        )
        await target.upsert(points)
        on_batch(len(batch))


def _note(note: Note, vec: Encoded | None, prior: float | None) -> IndexPoint:
    if vec is None:
        return note_point(note, None, prior)
    return note_point(note, vec.dense, prior, vec.terms)


def _record(rec: Record, current: bool, vec: Encoded | None) -> IndexPoint:
    if vec is None:
        return record_point(rec, current=current)
    return record_point(rec, current=current, dense=vec.dense, latent=vec.terms)
