"""The owner applies what jobs computed: new vectors and priors, from the truth store
into the index.

Jobs (in this process or in ``kioku worker`` processes) write vectors and priors to
SQLite; ``Applier`` reads what is new since its cursors and upserts whole points. The
cursors live in the ``meta`` table and move only after the index write, so a crash in
between re-applies (idempotent), and a flushed Redis or a killed worker loses nothing:
what reached SQLite gets applied, and what did not is found by ``reconcile``.

In-process jobs wake the applier at once; vectors from worker processes are noticed by
polling one indexed row (``poll_s``, 0.1 s by default).

``suffix`` ("" for the embedded owner) names this gateway's own cursors when several
gateways share the truth store (``indexing.follow``): each applies every vector to its
own index.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence

import anyio
import anyio.to_thread

from mcp_gateway.common.types import IndexPoint, point_id
from mcp_gateway.index.base import Index
from mcp_gateway.index.catalog import APPLIED_KEY, PRIORS_KEY, applied_key
from mcp_gateway.indexing.note_priors import load_priors
from mcp_gateway.indexing.points import (
    channel_rows,
    current_channels,
    current_vector,
    note_document,
    note_point,
    record_document,
    record_point,
)
from mcp_gateway.indexing.writebehind import WriteBehind
from mcp_gateway.records import RecordStore
from mcp_gateway.stores.db import Database
from mcp_gateway.stores.notes import NoteStore
from mcp_gateway.stores.vectors import StoredVector, VectorStore

log = logging.getLogger(__name__)

BATCH = 512


class Applier:
    def __init__(
        self,
        db: Database,
        notes: NoteStore,
        records: RecordStore,
        vectors: VectorStore,
        index: Index,
        poll_s: float = 0.1,
        writes: WriteBehind | None = None,
        points_lock: anyio.Lock | None = None,
        suffix: str = "",
    ) -> None:
        """``points_lock``: shared with the ``Indexer`` (why: its docstring)."""
        self.db, self.notes, self.records, self.vectors = db, notes, records, vectors
        self.index, self.poll_s, self.writes = index, poll_s, writes
        self.suffix = suffix
        self.applied_key, self.priors_key = APPLIED_KEY + suffix, PRIORS_KEY + suffix
        self._seq: int | None = None  # the vector cursor as last read or written
        self._wake = anyio.Event()
        self._lock = points_lock or anyio.Lock()
        self.applied = 0
        # where one gateway writes for the deployment (``indexing.shared``): whether this
        # one may write now, asked before each batch (None: always)
        self.gate: Callable[[], Awaitable[bool]] | None = None

    @property
    def points_lock(self) -> anyio.Lock:
        """Held while a pass (or the indexer) writes whole points."""
        return self._lock

    def wake(self) -> None:
        self._wake.set()

    async def run(self) -> None:
        """Apply forever (the owner's lifetime); a failing pass is retried next poll."""
        while True:
            with anyio.move_on_after(self.poll_s):
                await self._wake.wait()
            self._wake = anyio.Event()
            try:
                await self.apply_pending()
            except Exception:
                log.exception("applying new vectors failed; retrying")
                await anyio.sleep(1.0)

    async def apply_pending(self) -> int:
        """Apply every vector and prior written since the cursors; returns points written."""
        if self.gate is not None and not await self.gate():
            return 0
        async with self._lock:
            if self.writes is not None:
                # a lexical-only point landing after its embedded one would undo it
                await self.writes.caught_up()
            done = 0
            spec = self.index.spec
            # read each pass: a rebuild's adoption may have moved it back
            self._seq = await self._cursor(self.applied_key)
            # the main model's vectors, then each further dense channel's: each new row
            # rewrites its whole point from every vector the truth store holds for it
            cursors = [(spec.model_id, self.applied_key)]
            cursors += [(c.model_id, applied_key(c.name) + self.suffix) for c in spec.channels]
            for model, key in cursors:
                while rows := await self.vectors.since(model, await self._cursor(key), BATCH):
                    if self.gate is not None and not await self.gate():
                        return done
                    done += await self._apply_vectors(rows)
                    await self.db.set_meta(key, str(rows[-1].seq))
                    if key == self.applied_key:
                        self._seq = rows[-1].seq
            done += await self._apply_priors()
            self.applied += done
            return done

    async def _cursor(self, key: str) -> int:
        return int(float(await self.db.get_meta(key) or 0))

    async def cursor_seq(self) -> int:
        """The vector seq applied so far (cached: read once, then kept by each pass)."""
        if self._seq is None:
            self._seq = await self._cursor(self.applied_key)
        return self._seq

    async def _apply_vectors(self, rows: Sequence[StoredVector]) -> int:
        spec = self.index.spec
        by_kind: dict[str, dict[str, StoredVector]] = {"note": {}, "record": {}}
        for row in rows:
            by_kind.setdefault(row.kind, {})[row.source_id] = row
        if spec.channels:  # the rows may be any model's: the point needs each one's
            for kind, found in by_kind.items():
                found.clear()
                found.update(await self.vectors.get(kind, spec.model_id, _ids(rows, kind)))
        extra = {
            kind: await channel_rows(self.vectors, spec, kind, _ids(rows, kind))
            for kind in ("note", "record")
        }
        notes = await self.notes.get_many(_ids(rows, "note"))
        priors = await load_priors(self.db, list(notes))
        records = await self.records.get_many(_ids(rows, "record"))
        current = await self.records.current_ids(list(records))

        def build() -> tuple[list[IndexPoint], dict[str, float]]:
            # Hashing and sparse encoding of a batch is CPU work: off the event loop.
            points: list[IndexPoint] = []
            applied_notes: dict[str, float] = {}
            for nid, note in notes.items():
                doc = note_document(note)
                more = current_channels(extra["note"], nid, doc)
                if (vec := current_vector(by_kind["note"].get(nid), doc)) is not None:
                    points.append(note_point(note, vec.vector, priors.get(nid), vec.terms, more))
                    if note.embedded_model != vec.model:  # every gateway applies it: one write
                        applied_notes[nid] = note.updated_at
                elif more:
                    points.append(note_point(note, None, priors.get(nid), channels=more))
            for rid, rec in records.items():
                doc = record_document(rec)
                more = current_channels(extra["record"], rid, doc)
                if (vec := current_vector(by_kind["record"].get(rid), doc)) is not None:
                    points.append(
                        record_point(
                            rec,
                            current=rid in current,
                            dense=vec.vector,
                            latent=vec.terms,
                            channels=more,
                        )
                    )
                elif more:
                    points.append(record_point(rec, current=rid in current, channels=more))
            return points, applied_notes

        points, applied_notes = await anyio.to_thread.run_sync(build)
        # a deleted note or a stale text has no point written here; reconcile removes any
        # point left by a delete that raced this pass
        await self.index.upsert(points)
        await self.notes.mark_embedded(applied_notes, self.index.spec.model_id)
        return len(points)

    async def _apply_priors(self) -> int:
        since = float(await self.db.get_meta(self.priors_key) or 0)
        rows = await self.db.fetchall(
            "SELECT note_id, prior, updated_at FROM note_priors WHERE updated_at > ? "
            "ORDER BY updated_at",
            (since,),
        )
        if not rows:
            return 0
        pids = {r["note_id"]: point_id("note", r["note_id"]) for r in rows}
        present = await self.index.present(list(pids.values()))
        groups: dict[float, list[str]] = {}
        for r in rows:
            if pids[r["note_id"]] in present:
                groups.setdefault(float(r["prior"]), []).append(pids[r["note_id"]])
        for prior, ids in groups.items():
            await self.index.set_payload(ids, {"prior": prior})
        await self.db.set_meta(self.priors_key, repr(float(rows[-1]["updated_at"])))
        return sum(len(ids) for ids in groups.values())


def _ids(rows: Sequence[StoredVector], kind: str) -> list[str]:
    return list(dict.fromkeys(r.source_id for r in rows if r.kind == kind))
