"""Turning notes and records into index points, and writing them to the index.

Only the owner of the index calls ``Indexer``. ``put_new_lexical`` computes the sparse
vector locally (no model); for ``add_note`` it runs just after the acknowledgement
(``writebehind``), and every search waits for it, so a note is lexically searchable
from the first search after ``add_note`` returns. Dense vectors are computed by jobs into the
truth store (``vectors``); ``put_notes``/``put_records`` build whole points from
whatever vector the truth store holds for the item's current text.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

import anyio.to_thread

from mcp_gateway.common.errors import EmbedderUnavailable
from mcp_gateway.common.types import IndexPoint, Note, SparseVector, point_id
from mcp_gateway.embedders import lexical, static
from mcp_gateway.embedders.base import Embedder
from mcp_gateway.index.base import Index, IndexSpec, visible_value
from mcp_gateway.records import RecordStore
from mcp_gateway.records.model import Record
from mcp_gateway.stores.db import Database, register_migration
from mcp_gateway.stores.notes import NoteStore
from mcp_gateway.stores.vectors import StoredVector, VectorStore, content_hash

log = logging.getLogger(__name__)

WRITTEN_KEPT = 10_000

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
# Reset priors are kept as 1.0 rows (not deleted), so the owner sees every change.
register_migration(
    "note_priors",
    2,
    "CREATE INDEX note_priors_updated ON note_priors(updated_at);",
)

register_migration(
    "note_priors",
    1,
    """
    CREATE TABLE note_priors (
        note_id TEXT PRIMARY KEY,
        prior DOUBLE PRECISION NOT NULL,
        updated_at DOUBLE PRECISION NOT NULL
    );
    CREATE INDEX note_priors_updated ON note_priors(updated_at);
    """,
    dialect="postgres",
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
        # which text the point's sparse vector was built from: reconcile finds a point
        # an edit's index write never reached (the write is after the commit)
        "text_hash": content_hash(note_document(note)),
    }
    _add_script(payload, note_document(note))
    if prior is not None:
        payload["prior"] = prior
    return payload


def note_document(note: Note) -> str:
    # The solved query is indexed with the note: it is literally a query that should
    # find it again (the source design's dynamic-threshold idea, used for recall too).
    return f"{note.text}\n{note.solved_query}" if note.solved_query else note.text


def note_point(
    note: Note,
    dense: Sequence[float] | None = None,
    prior: float | None = None,
    latent: SparseVector | None = None,
    channels: dict[str, list[float]] | None = None,
) -> IndexPoint:
    # "dense" tells ranking that a missing dense score means "not embedded yet", not
    # "far away", so a fresh note competes on its lexical evidence alone (and on the
    # further channels it already has, ``channels``).
    payload = {**note_payload(note, prior), "dense": dense is not None}
    doc = note_document(note)
    return IndexPoint(
        id=point_id("note", note.id),
        payload=payload,
        sparse=lexical.sparse_document(doc),
        dense=list(dense) if dense is not None else None,
        latent=latent if dense is not None else None,
        channels=channels or {},
        # searchable by meaning until its dense vector lands (index.fast_pool)
        fast=static.vector(doc) if dense is None else None,
    )


def record_point(
    rec: Record,
    *,
    current: bool,
    dense: Sequence[float] | None = None,
    latent: SparseVector | None = None,
    channels: dict[str, list[float]] | None = None,
) -> IndexPoint:
    doc = record_document(rec)
    return IndexPoint(
        id=point_id("record", rec.id),
        payload={**record_payload(rec, current), "dense": dense is not None},
        sparse=lexical.sparse_document(doc),
        dense=list(dense) if dense is not None else None,
        latent=latent if dense is not None else None,
        channels=channels or {},
        fast=static.vector(doc) if dense is None and current else None,
    )


ChannelRows = dict[str, dict[str, StoredVector]]  # source id -> channel name -> vector


async def channel_rows(
    vectors: VectorStore, spec: IndexSpec, kind: str, ids: Sequence[str]
) -> ChannelRows:
    """The truth store's vectors of ``ids`` for each further dense channel of ``spec``."""
    out: ChannelRows = {}
    for channel in spec.channels:
        for sid, row in (await vectors.get(kind, channel.model_id, ids)).items():
            out.setdefault(sid, {})[channel.name] = row
    return out


def current_channels(rows: ChannelRows, sid: str, document: str) -> dict[str, list[float]]:
    """The channel vectors of ``sid`` embedded from ``document`` as it reads now."""
    found = rows.get(sid)
    if not found:
        return {}
    chash = content_hash(document)
    return {name: row.vector for name, row in found.items() if row.content_hash == chash}


def record_payload(rec: Record, current: bool) -> dict[str, Any]:
    # ``current`` lets every search drop superseded and duplicate records in the index.
    payload: dict[str, Any] = {
        "kind": "record",
        "source_id": rec.id,
        "type": rec.type,
        "domain": "",
        "priority": "",
        "namespace": rec.namespace,
        "visible": visible_value(rec.namespace, current),
        "created_at": rec.created_at,
        "current": current,
        "text_hash": content_hash(record_document(rec)),
    }
    _add_script(payload, record_document(rec))
    return payload


SCRIPT_SAMPLE = 2000  # characters read to tell a text's script


def _add_script(payload: dict[str, Any], text: str) -> None:
    """A text not in Latin script says so (``script``): a channel that reads only Latin
    script (MiniLM) abstains on it in the fusion (``ranking.fuse``)."""
    script = lexical.script_of(text[:SCRIPT_SAMPLE])
    if script != "latin":
        payload["script"] = script


def record_document(rec: Record) -> str:
    return f"{rec.id}\n{rec.title}\n{rec.content}"


class Indexer:
    """Writes points for the owner; ``index`` is the live index (swapped by reindex).

    ``points_lock`` is the applier's: writing a whole point from the truth store (read
    the stored vector, then upsert) must not interleave with the applier's writes, or a
    lexical-only point built before a worker's vector landed overwrites the embedded
    one the applier wrote meanwhile, and the note stays marked embedded without its
    vector until the next reconcile pass (``tests/test_reconcile.py``). Notes and
    records are read again under the lock, so the last committed change is the one
    written, whatever order the writers reach the lock in."""

    def __init__(
        self,
        notes: NoteStore,
        records: RecordStore,
        index: Index,
        vectors: VectorStore,
        points_lock: anyio.Lock | None = None,
        fast: Mapping[str, Embedder] | None = None,
    ) -> None:
        """``fast``: further dense channels (by name) whose vector a new note gets with
        its first point, before its job runs: a burst is searchable by meaning at once."""
        self.notes, self.records, self.index, self.vectors = notes, records, index, vectors
        self.points_lock = points_lock or anyio.Lock()
        # note id -> the version (updated_at) whose point this process wrote last: the
        # change feed brings a gateway its own writes back, and those need no second
        # encoding (bounded: the oldest entries go first)
        self.written: dict[str, float] = {}
        self.fast = dict(fast or {})

    @property
    def model_id(self) -> str:
        """The model whose vectors the index holds (not necessarily the configured one)."""
        return self.index.spec.model_id

    async def put_lexical(self, note: Note) -> None:
        """The point of a note whose text changed (an edit, an import), until its job
        embeds it."""
        async with self.points_lock:
            for latest in await self._latest([note]):
                prior = (await load_priors(self.notes.db, [latest.id])).get(latest.id)
                point = await anyio.to_thread.run_sync(note_point, latest, None, prior)
                await self.index.upsert([point])
                self._wrote([latest])

    async def put_new_lexical(self, note: Note) -> None:
        """The first point of a note ``add_note`` just stored: no lock, because the
        applier, which holds it, waits for these writes (``WriteBehind.caught_up``)
        before it writes embedded points."""
        # Sparse encoding is CPU work (~25 ms for a 32 KB note): never on the event loop.
        channels = await self._fast_channels(note)
        point = await anyio.to_thread.run_sync(note_point, note, None, None, None, channels)
        await self.index.upsert([point])
        self._wrote([note])

    def _wrote(self, notes: Sequence[Note]) -> None:
        for note in notes:
            self.written.pop(note.id, None)
            self.written[note.id] = note.updated_at
        while len(self.written) > WRITTEN_KEPT:
            del self.written[next(iter(self.written))]

    async def _fast_channels(self, note: Note) -> dict[str, list[float]]:
        """The note's vectors from the fast channels the index has, stored in the truth
        store too (the job then skips them; a reindex reads them back). A channel that
        fails leaves the note to its job."""
        out: dict[str, list[float]] = {}
        doc = note_document(note)
        for name, embedder in self.fast.items():
            if self.index.spec.channel(name) is None:
                continue
            try:
                vec = (await embedder.embed_documents_now([doc]))[0]
            except EmbedderUnavailable as exc:
                log.warning("the %s channel skipped a new note: %s", name, exc)
                continue
            await self.vectors.put("note", embedder.model_id, [(note.id, content_hash(doc), vec)])
            out[name] = vec
        return out

    async def update_payload(self, note: Note) -> None:
        async with self.points_lock:  # the applier writes whole points from older reads
            for latest in await self._latest([note]):
                await self.index.set_payload([point_id("note", note.id)], note_payload(latest))

    async def remove(self, note_id: str) -> None:
        async with self.points_lock:  # or the applier's pass may write it back
            self.written.pop(note_id, None)
            await self.index.delete([point_id("note", note_id)])

    async def put_notes(self, notes: Sequence[Note]) -> list[Note]:
        """Upsert whole points, with the stored vector where one matches the note's
        current text; returns the notes that still need embedding."""
        if not notes:
            return []
        async with self.points_lock:
            return await self._put_notes(await self._latest(notes))

    async def apply_changes(self, note_ids: Sequence[str], record_ids: Sequence[str]) -> None:
        """Rewrite the points of items another process changed (the change feed), from
        the truth store as it stands now; an item gone (a deleted note) loses its point.
        Embedding is left to the process that wrote the item (it queued the job) and to
        reconcile."""
        async with self.points_lock:
            gone: list[str] = []
            if note_ids:
                found = await self.notes.get_many(list(dict.fromkeys(note_ids)))
                # what this process wrote itself is in the index already (its vector,
                # if any since, comes through the applier)
                await self._put_notes(
                    [n for n in found.values() if self.written.get(n.id) != n.updated_at]
                )
                for i in note_ids:
                    if i not in found:
                        gone.append(point_id("note", i))
                        self.written.pop(i, None)  # a restore must write it again
            if record_ids:
                records = await self.records.get_many(list(dict.fromkeys(record_ids)))
                current = await self.records.current_ids(list(records))
                await self._put_records(list(records.values()), current)
                gone += [point_id("record", i) for i in record_ids if i not in records]
            if gone:
                await self.index.delete(gone)

    async def _latest(self, notes: Sequence[Note]) -> list[Note]:
        """``notes`` as the truth store holds them now (read under the lock: an edit
        committed after the caller read its copy is what gets written), without those
        deleted since."""
        found = await self.notes.get_many([n.id for n in notes])
        return [found[n.id] for n in notes if n.id in found]

    async def _put_notes(self, notes: Sequence[Note]) -> list[Note]:
        stored = await self.vectors.get("note", self.model_id, [n.id for n in notes])
        priors = await load_priors(self.notes.db, [n.id for n in notes])
        extra = await channel_rows(self.vectors, self.index.spec, "note", [n.id for n in notes])

        def build() -> tuple[list[IndexPoint], list[Note], dict[str, float]]:
            # Hashing and sparse encoding are CPU work (~25 ms for a 32 KB note): in a
            # worker thread, never on the event loop.
            points, pending, embedded = [], [], {}
            for note in notes:
                vec = stored.get(note.id)
                doc = note_document(note)
                more = current_channels(extra, note.id, doc)
                if vec is not None and vec.content_hash == content_hash(doc):
                    points.append(
                        note_point(note, vec.vector, priors.get(note.id), vec.terms, more)
                    )
                    if note.embedded_model != self.model_id:  # marked already: no write
                        embedded[note.id] = note.updated_at
                else:
                    points.append(note_point(note, None, priors.get(note.id), channels=more))
                    pending.append(note)
            return points, pending, embedded

        points, pending, embedded = await anyio.to_thread.run_sync(build)
        await self.index.upsert(points)
        self._wrote(notes)
        await self.notes.mark_embedded(embedded, self.model_id)
        return pending

    async def put_records(self, ids: Sequence[str]) -> list[Record]:
        """As ``put_notes``, for records and their lifecycle flag, both read under the
        lock."""
        if not ids:
            return []
        async with self.points_lock:
            found = await self.records.get_many(list(dict.fromkeys(ids)))
            current = await self.records.current_ids(list(found))
            return await self._put_records(list(found.values()), current)

    async def _put_records(self, records: Sequence[Record], current: set[str]) -> list[Record]:
        ids = [r.id for r in records]
        stored = await self.vectors.get("record", self.model_id, ids)
        extra = await channel_rows(self.vectors, self.index.spec, "record", ids)

        def build() -> tuple[list[IndexPoint], list[Record]]:
            points, pending = [], []
            for rec in records:
                vec = stored.get(rec.id)
                doc = record_document(rec)
                more = current_channels(extra, rec.id, doc)
                if vec is not None and vec.content_hash == content_hash(doc):
                    points.append(
                        record_point(
                            rec,
                            current=rec.id in current,
                            dense=vec.vector,
                            latent=vec.terms,
                            channels=more,
                        )
                    )
                else:
                    points.append(record_point(rec, current=rec.id in current, channels=more))
                    pending.append(rec)
            return points, pending

        points, pending = await anyio.to_thread.run_sync(build)
        await self.index.upsert(points)
        return pending
