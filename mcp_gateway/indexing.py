"""Turning notes (and records) into index points, and the embed-and-index step.

``put_lexical`` runs on the request path: it computes the sparse vector locally (no
model) so a note is lexically searchable the moment ``add_note`` returns.
``embed_notes`` is the heavy part, run by jobs: one embedder call per batch, then one
upsert of complete points (sparse + dense + payload), which also heals a point that
went missing from the index.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from . import lexical
from .db import Database, register_migration
from .embedders.base import Embedder
from .index.base import Index, visible_value
from .notes import NoteStore
from .records.model import Record
from .types import IndexPoint, Note, point_id

log = logging.getLogger(__name__)

# Ranking priors written by the re-ranking job (workers.priors). Kept here, not only in
# the index payload, so a re-embed (a whole-point upsert) carries the prior over.
register_migration(
    "note_priors",
    1,
    """
    CREATE TABLE note_priors (
        note_id TEXT PRIMARY KEY,
        prior REAL NOT NULL,
        updated_at REAL NOT NULL
    );
    """,
)


async def load_priors(db: Database, note_ids: Sequence[str]) -> dict[str, float]:
    if not note_ids:
        return {}
    marks = ",".join("?" * len(note_ids))
    rows = await db.fetchall(
        f"SELECT note_id, prior FROM note_priors WHERE note_id IN ({marks})", tuple(note_ids)
    )
    return {r["note_id"]: float(r["prior"]) for r in rows}


def note_payload(note: Note, prior: float | None = None) -> dict[str, Any]:
    payload: dict[str, Any] = {
        "kind": "note",
        "source_id": note.id,
        "type": note.type,
        "domain": note.domain,
        "priority": note.priority,
        "namespace": note.namespace,
        "visible": visible_value(note.namespace),
        "created_at": note.created_at,
    }
    if prior is not None:
        payload["prior"] = prior
    return payload


def note_document(note: Note) -> str:
    # The solved query is indexed with the note: it is literally a query that should
    # find it again (the source design's dynamic-threshold idea, used for recall too).
    return f"{note.text}\n{note.solved_query}" if note.solved_query else note.text


def note_point(
    note: Note, dense: Sequence[float] | None = None, prior: float | None = None
) -> IndexPoint:
    # "dense" tells ranking that a missing dense score means "not embedded yet", not
    # "far away", so a fresh note competes on its lexical evidence alone.
    payload = {**note_payload(note, prior), "dense": dense is not None}
    return IndexPoint(
        id=point_id("note", note.id),
        payload=payload,
        sparse=lexical.sparse_document(note_document(note)),
        dense=list(dense) if dense is not None else None,
    )


def record_point(rec: Record, *, current: bool, dense: Sequence[float] | None = None) -> IndexPoint:
    # ``current`` lets every search drop superseded and duplicate records in the index.
    return IndexPoint(
        id=point_id("record", rec.id),
        payload={
            "kind": "record",
            "source_id": rec.id,
            "type": rec.type,
            "domain": "",
            "priority": "",
            "namespace": rec.namespace,
            "visible": visible_value(rec.namespace, current),
            "created_at": rec.created_at,
            "current": current,
            "dense": dense is not None,
        },
        sparse=lexical.sparse_document(record_document(rec)),
        dense=list(dense) if dense is not None else None,
    )


def record_document(rec: Record) -> str:
    return f"{rec.id}\n{rec.title}\n{rec.content}"


@dataclass(slots=True)
class IndexOutcome:
    indexed: int
    embedder_calls: int


class Indexer:
    def __init__(self, notes: NoteStore, index: Index, embedder: Embedder, batch: int) -> None:
        self.notes, self.index, self.embedder, self.batch = notes, index, embedder, batch

    async def put_lexical(self, note: Note) -> None:
        await self.index.upsert([note_point(note)])

    async def update_payload(self, note: Note) -> None:
        await self.index.set_payload([point_id("note", note.id)], note_payload(note))

    async def remove(self, note_id: str) -> None:
        await self.index.delete([point_id("note", note_id)])

    async def embed_notes(self, notes: Sequence[Note]) -> IndexOutcome:
        """Embed ``notes`` in batches and upsert complete points; mark them embedded."""
        calls = done = 0
        for start in range(0, len(notes), self.batch):
            chunk = list(notes[start : start + self.batch])
            vectors = await self.embedder.embed_documents([note_document(n) for n in chunk])
            calls += 1
            priors = await load_priors(self.notes.db, [n.id for n in chunk])
            await self.index.upsert(
                [note_point(n, v, priors.get(n.id)) for n, v in zip(chunk, vectors, strict=True)]
            )
            await self.notes.mark_embedded(
                {n.id: n.updated_at for n in chunk}, self.embedder.model_id
            )
            done += len(chunk)
        return IndexOutcome(indexed=done, embedder_calls=calls)

    async def embed_ids(self, note_ids: Sequence[str]) -> IndexOutcome:
        """Embed the given notes if they still need it (idempotent for duplicates)."""
        found = await self.notes.get_many(list(dict.fromkeys(note_ids)))
        todo = [n for n in found.values() if n.embedded_model != self.embedder.model_id]
        return await self.embed_notes(todo)

    async def index_records(self, records: Sequence[Record], current: set[str]) -> IndexOutcome:
        """Embed and upsert records whole; lexical first, so a slow embedder never hides them."""
        await self.index.upsert([record_point(r, current=r.id in current) for r in records])
        calls = 0
        for start in range(0, len(records), self.batch):
            chunk = list(records[start : start + self.batch])
            vectors = await self.embedder.embed_documents([record_document(r) for r in chunk])
            calls += 1
            await self.index.upsert(
                [
                    record_point(r, current=r.id in current, dense=v)
                    for r, v in zip(chunk, vectors, strict=True)
                ]
            )
        return IndexOutcome(indexed=len(records), embedder_calls=calls)
