"""Writing the points of notes and records (``points``) to the index.

Only the owner of the index calls ``Indexer``. ``put_new_lexical`` computes the sparse
vector locally (no model); for ``add_note`` it runs just after the acknowledgement
(``writebehind``), and every search waits for it, so a note is lexically searchable
from the first search after ``add_note`` returns (by meaning, with
``search.fast_first``, once ``fill_fast`` has pooled its static vector just after).
Dense vectors are computed by jobs into the truth store (``vectors``);
``put_notes``/``put_records`` build whole points from whatever vector the truth store
holds for the item's current text.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Mapping, Sequence

import anyio.to_thread

from mcp_gateway.common.errors import EmbedderStopping, EmbedderUnavailable
from mcp_gateway.common.types import IndexPoint, Note, point_id
from mcp_gateway.embedders import static
from mcp_gateway.embedders.base import Embedder
from mcp_gateway.index.base import Index, PendingVectors
from mcp_gateway.indexing.note_priors import load_priors
from mcp_gateway.indexing.points import (
    channel_rows,
    current_channels,
    current_vector,
    note_document,
    note_payload,
    note_point,
    record_document,
    record_point,
)
from mcp_gateway.records import RecordStore
from mcp_gateway.records.model import Record
from mcp_gateway.stores.notes import NoteStore
from mcp_gateway.stores.vectors import VectorStore, content_hash

log = logging.getLogger(__name__)

WRITTEN_KEPT = 10_000
FILL_BATCH = 64  # static vectors a thread hop computes (~0.1-1 ms each)


def _static_vectors(docs: Sequence[str], since: float) -> list[list[float] | None]:
    return [static.vector(doc, True, since) for doc in docs]


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
        pending: PendingVectors | None = None,
        direct: bool = True,
    ) -> None:
        """``fast``: further dense channels (by name) whose vector a new note gets with
        its first point, before its job runs: a burst is searchable by meaning at once.
        ``pending``: where a note written without its dense vector gets its static one
        after the write (the live index; None: nowhere, as for a rebuild's target).
        ``direct=False``: the index is one every gateway shares and only its writer
        writes it, from the feeds (``indexing.shared``): the calls of the request paths
        write no point (what they return, the items still to embed, is the same), and
        the feed brings each change to the writer once."""
        self.notes, self.records, self.index, self.vectors = notes, records, index, vectors
        self.points_lock = points_lock or anyio.Lock()
        # note id -> the version (updated_at) whose point this process wrote last: the
        # change feed brings a gateway its own writes back, and those need no second
        # encoding (bounded: the oldest entries go first)
        self.written: dict[str, float] = {}
        self.fast = dict(fast or {})
        self.pending = pending
        self.direct = direct
        self._fill_one: anyio.CapacityLimiter | None = None  # fill_fast's one thread

    @property
    def model_id(self) -> str:
        """The model whose vectors the index holds (not necessarily the configured one)."""
        return self.index.spec.model_id

    async def put_lexical(self, note: Note) -> None:
        """The point of a note whose text changed (an edit, an import), until its job
        embeds it. Its static vector is not computed here: ``fill_fast_many`` pools it
        after the call (an import of 10,000 notes spent ~10 s of its call on them)."""
        if not self.direct:
            return
        async with self.points_lock:
            for latest in await self._latest([note]):
                prior = (await load_priors(self.notes.db, [latest.id])).get(latest.id)
                point = await anyio.to_thread.run_sync(
                    functools.partial(note_point, latest, None, prior, fast=False)
                )
                await self.index.upsert([point])
                if self.pending is not None:
                    self.pending.expect_fast(point)  # under the lock: the applier waits
                self._wrote([latest])

    async def put_new_lexical(self, note: Note) -> None:
        """The first point of a note ``add_note`` just stored: no lock, because the
        applier, which holds it, waits for these writes (``WriteBehind.caught_up``)
        before it writes embedded points."""
        # Sparse encoding is CPU work (~25 ms for a 32 KB note): never on the event loop.
        channels = await self._fast_channels(note)  # stored: the writer applies them
        if not self.direct:
            return
        point = await anyio.to_thread.run_sync(
            functools.partial(note_point, note, None, None, None, channels, fast=False)
        )
        await self.index.upsert([point])
        if self.pending is not None:
            self.pending.expect_fast(point)  # before the write lands: the applier waits
        self._wrote([note])

    async def fill_fast(self, note: Note) -> None:
        """The static vector of a note ``put_new_lexical`` wrote, into the fast pool
        (``search.fast_first``): after the add's follow-ups, off the path its ack and the
        searches wait on, computed giving way to the adds being served
        (``common.serving``); skipped where its dense vector landed first."""
        await self.fill_fast_many([note])

    async def fill_fast_many(self, notes: Sequence[Note]) -> None:
        """``fill_fast`` for many notes (an import's, in the app's background once the
        import has returned): ``FILL_BATCH`` a thread hop, one hop at a time."""
        pending = self.pending
        if pending is None:
            return
        if self._fill_one is None:
            self._fill_one = anyio.CapacityLimiter(1)
        for start in range(0, len(notes), FILL_BATCH):
            ids = {point_id("note", n.id): n for n in notes[start : start + FILL_BATCH]}
            todo = [(pid, note_document(n)) for pid, n in ids.items() if pending.expects_fast(pid)]
            if not todo:
                continue
            # from just after the ack (or the batch's start): its wait for the gate counts
            since = time.monotonic()
            # one hop at a time: parked threads woken together by the gate would contend
            # for the interpreter with the add being served
            vectors = await anyio.to_thread.run_sync(
                _static_vectors, [doc for _, doc in todo], since, limiter=self._fill_one
            )
            for (pid, _), vec in zip(todo, vectors, strict=True):
                pending.fill_fast(pid, vec)

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
            except EmbedderStopping:
                # a one-shot command closing: the note's job gives it this vector
                log.debug("the %s channel skipped a new note: stopping", name)
                continue
            except EmbedderUnavailable as exc:
                log.warning("the %s channel skipped a new note: %s", name, exc)
                continue
            await self.vectors.put("note", embedder.model_id, [(note.id, content_hash(doc), vec)])
            out[name] = vec
        return out

    async def update_payload(self, note: Note) -> None:
        if not self.direct:
            return
        async with self.points_lock:  # the applier writes whole points from older reads
            for latest in await self._latest([note]):
                await self.index.set_payload([point_id("note", note.id)], note_payload(latest))

    async def remove(self, note_id: str) -> None:
        if not self.direct:
            return
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
                doc = note_document(note)
                more = current_channels(extra, note.id, doc)
                if (vec := current_vector(stored.get(note.id), doc)) is not None:
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
        if self.direct:
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
                doc = record_document(rec)
                more = current_channels(extra, rec.id, doc)
                if (vec := current_vector(stored.get(rec.id), doc)) is not None:
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
        if self.direct:
            await self.index.upsert(points)
        return pending
