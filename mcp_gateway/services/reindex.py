"""``kioku reindex``: build a new index beside the live one, then swap (blue/green).

Vectors come from the truth store, so a rebuild for the same model embeds nothing; a
rebuild for another model (or dimension) embeds what the truth store lacks for it and
keeps those vectors. The live index serves every search until the new one is
complete; while it builds, every write is mirrored into it (``LiveIndex``). Only then
are the new collection and model adopted, in one SQLite transaction. A rebuild that is
interrupted (Ctrl-C, a crash) or fails leaves the live index as it was; its half-built
collection is removed.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

import anyio
import anyio.to_thread
from pydantic import BaseModel

from ..app import AppContext
from ..index import catalog
from ..index.base import Index, IndexSpec
from ..indexing import load_priors, note_document, note_point, record_document, record_point
from ..types import IndexPoint
from ..vectors import content_hash

log = logging.getLogger(__name__)

PAGE = 256


class RebuildStatus(BaseModel):
    state: str = "idle"  # idle | running | done | failed | cancelled
    collection: str = ""
    model: str = ""
    notes_done: int = 0
    notes_total: int = 0
    records_done: int = 0
    embedded: int = 0
    seconds: float = 0.0
    message: str = ""


@dataclass(slots=True)
class _Run:
    status: RebuildStatus = field(default_factory=RebuildStatus)
    started: float = field(default_factory=time.monotonic)


class Rebuilder:
    """One rebuild at a time per owner; ``status`` is what `kioku reindex` shows."""

    def __init__(self, app: AppContext) -> None:
        self.app = app
        self.run_state = _Run()
        self._lock = anyio.Lock()
        self._cancel: anyio.CancelScope | None = None

    @property
    def status(self) -> RebuildStatus:
        st = self.run_state.status
        if st.state == "running":
            st.seconds = round(time.monotonic() - self.run_state.started, 2)
        return st

    def cancel(self) -> bool:
        if self._cancel is None:
            return False
        self._cancel.cancel()
        return True

    def start(
        self, spawn: Callable[[Callable[[], Coroutine[Any, Any, Any]]], None]
    ) -> RebuildStatus:
        """Start a rebuild in the owner's background (``spawn``); reports "running" at
        once, so a caller polling the status never sees a stale "idle"."""
        if self.status.state != "running":
            self.run_state = _Run(RebuildStatus(state="running"))
            spawn(self._go)
        return self.status

    async def rebuild(self) -> RebuildStatus:
        """Run a whole rebuild in the calling task; returns the final status."""
        if self.status.state == "running":
            return self.status
        self.run_state = _Run(RebuildStatus(state="running"))
        return await self._go()

    async def _go(self) -> RebuildStatus:
        async with self._lock:
            st = self.run_state.status
            with anyio.CancelScope() as scope:
                self._cancel = scope
                try:
                    await self._rebuild(st)
                    st.state = "done"
                except Exception as exc:
                    st.state, st.message = "failed", str(exc)
                    log.exception("reindex failed; the live index is unchanged")
            self._cancel = None
            if scope.cancelled_caught:
                st.state, st.message = "cancelled", "cancelled; the live index is unchanged"
            st.seconds = round(time.monotonic() - self.run_state.started, 2)
            return st

    async def _rebuild(self, st: RebuildStatus) -> None:
        app = self.app
        embedder = app.embedder
        live = app.index.current.spec.collection
        spec = IndexSpec(
            catalog.next_collection(app.settings.index.collection, live),
            embedder.dim,
            embedder.model_id,
        )
        st.collection, st.model = spec.collection, spec.model_id
        st.notes_total = (await app.notes.counts())["total"]
        start_seq = await app.vectors.last_seq()
        target: Index | None = None
        adopted = False
        try:
            target = await catalog.open_index(app.settings, spec)
            app.index.begin_build(target)
            embedded = await self._fill_notes(target, st)
            await self._fill_records(target, st)
            await catalog.adopt(app.db, spec, applied_seq=start_seq)
            adopted = True
            await app.notes.mark_embedded(embedded, spec.model_id)
            old = app.index.swap(target)
        finally:
            if not adopted:
                app.index.end_build()
                with anyio.CancelScope(shield=True):
                    if target is not None:
                        await target.destroy()
                    # a collection interrupted while it was being created
                    await anyio.to_thread.run_sync(
                        catalog.remove_leftovers, app.settings, app.index.spec.collection
                    )
        with anyio.CancelScope(shield=True):
            await old.destroy()
            await app.applier.apply_pending()
            await app.reconcile()
        log.info("reindex: %s (%s) is live", spec.collection, spec.model_id)

    async def _vectors(
        self, kind: str, docs: dict[str, str], st: RebuildStatus
    ) -> dict[str, list[float]]:
        """The stored vector of each item for the configured model; embeds the missing."""
        app = self.app
        model = app.embedder.model_id
        hashes = {sid: content_hash(doc) for sid, doc in docs.items()}
        stored = await app.vectors.get(kind, model, list(docs))
        out = {sid: v.vector for sid, v in stored.items() if v.content_hash == hashes[sid]}
        missing = [sid for sid in docs if sid not in out]
        size = app.settings.embedder.batch_size
        for start in range(0, len(missing), size):
            chunk = missing[start : start + size]
            vecs = await app.embedder.embed_documents([docs[sid] for sid in chunk])
            await app.vectors.put(
                kind, model, [(sid, hashes[sid], v) for sid, v in zip(chunk, vecs, strict=True)]
            )
            out.update(zip(chunk, vecs, strict=True))
            st.embedded += len(chunk)
        return out

    async def _fill_notes(self, target: Index, st: RebuildStatus) -> dict[str, float]:
        """Write every live note; returns the versions written with a dense vector."""
        embedded: dict[str, float] = {}
        after = ""
        while page := await self.app.notes.page(after, limit=PAGE):
            after = page[-1].id
            vectors = await self._vectors("note", {n.id: note_document(n) for n in page}, st)
            priors = await load_priors(self.app.db, [n.id for n in page])
            # sparse encoding of a page is CPU work: off the event loop
            points = await anyio.to_thread.run_sync(
                lambda p=page, v=vectors, pr=priors: [  # type: ignore[misc]
                    note_point(n, v.get(n.id), pr.get(n.id)) for n in p
                ]
            )
            await target.upsert(points)
            embedded.update({n.id: n.updated_at for n in page if n.id in vectors})
            st.notes_done += len(page)
        return embedded

    async def _fill_records(self, target: Index, st: RebuildStatus) -> None:
        async for batch in self.app.records.iter_all(batch_size=PAGE):
            vectors = await self._vectors("record", {r.id: record_document(r) for r in batch}, st)
            current = await self.app.records.current_ids([r.id for r in batch])
            points: list[IndexPoint] = await anyio.to_thread.run_sync(
                lambda b=batch, v=vectors, c=current: [  # type: ignore[misc]
                    record_point(r, current=r.id in c, dense=v.get(r.id)) for r in b
                ]
            )
            await target.upsert(points)
            st.records_done += len(batch)
