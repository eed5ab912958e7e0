"""Reconcile: make the index agree with the truth store (owner side).

SQLite is the truth, so a flushed Redis, a killed worker or a lost index loses nothing:
reconcile (at start-up, every ``queue.reconcile_every_s`` and after a rebuild) finds
- live notes and records whose point is missing or lacks the current dense vector:
  rewritten from the stored vector when the truth store has one, else written
  lexically and queued for embedding;
- with ``terms_wanted`` (the index has the latent-terms vector and the embedder makes
  terms): stored vectors without latent terms (written by an engine that makes none, or
  before round 5), queued for embedding again, a bounded number a pass;
- points and stored vectors with no live note or record behind them (a delete that
  raced an embedding, a note forgotten while its job ran): deleted. Forgetting a note
  forgets its point and its vector.

A note whose embedding failed permanently (``jobs.failures``) stays lexically indexed
and is queued again when it changes or a day after the failure, not at every pass:
each attempt costs the job all its tries.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from .index.base import Index
from .indexing import Indexer
from .jobs import failures
from .jobs.base import Scheduler
from .notes import NoteStore
from .records import Record, RecordStore
from .types import Note, point_id

log = logging.getLogger(__name__)

RETRY_FAILED_AFTER_S = 24 * 3600
# stored vectors without latent terms queued again a pass (an upgraded data dir catches
# up over a few passes instead of one burst)
TERMS_PER_PASS = 500


@dataclass(slots=True)
class ReconcileReport:
    rewritten: int = 0
    queued: int = 0
    orphans_deleted: int = 0
    vectors_forgotten: int = 0


async def reconcile(
    index: Index,
    indexer: Indexer,
    notes: NoteStore,
    records: RecordStore,
    jobs: Scheduler,
    *,
    terms_wanted: bool = False,
) -> ReconcileReport:
    """One pass; safe beside live traffic (the owner's writes keep going)."""
    report = ReconcileReport()
    # Snapshot the index first: a note added after this is not in it, so it can never
    # be mistaken for an orphan below.
    existing = await index.ids()
    expected: set[str] = set()
    model = indexer.model_id
    after = ""
    pending_notes: list[Note] = []
    while page := await notes.page(after, limit=500):
        after = page[-1].id
        pids = {n.id: point_id("note", n.id) for n in page}
        expected.update(pids.values())
        present = await index.present(list(pids.values()))
        stale = [n for n in page if n.embedded_model != model or not present.get(pids[n.id])]
        pending_notes += await indexer.put_notes(stale)
        report.rewritten += len(stale)
    pending_records: list[Record] = []
    async for batch in records.iter_all():
        pids = {r.id: point_id("record", r.id) for r in batch}
        expected.update(pids.values())
        present = await index.present(list(pids.values()))
        stale_records = [r for r in batch if not present.get(pids[r.id])]
        if stale_records:
            pending_records += await indexer.put_records([r.id for r in stale_records])
            report.rewritten += len(stale_records)
    orphans = sorted(existing - expected)
    await index.delete(orphans)
    report.orphans_deleted = len(orphans)
    report.vectors_forgotten = await indexer.vectors.forget_orphans()
    if terms_wanted:
        lacking = await indexer.vectors.without_terms(model, limit=TERMS_PER_PASS)
        found = await notes.get_many([sid for kind, sid in lacking if kind == "note"])
        known = {n.id for n in pending_notes}
        pending_notes += [n for n in found.values() if n.id not in known]
        pending_records += await records_lacking(records, lacking, pending_records)
    pending_notes = await _not_failed_lately(notes, pending_notes)
    await jobs.notes_changed(pending_notes)
    await jobs.records_changed([r.id for r in pending_records], export=False)
    report.queued = len(pending_notes) + len(pending_records)
    if report.rewritten or report.orphans_deleted:
        log.info(
            "reconcile: %d points rewritten, %d queued for embedding, %d orphans deleted",
            report.rewritten,
            report.queued,
            report.orphans_deleted,
        )
    return report


async def _not_failed_lately(notes: NoteStore, pending: list[Note]) -> list[Note]:
    since = time.time() - RETRY_FAILED_AFTER_S
    failed = await failures.failed_since(notes.db, "index_note", [n.id for n in pending], since)
    return [n for n in pending if n.id not in failed or n.updated_at > failed[n.id]]


async def records_lacking(
    records: RecordStore, lacking: list[tuple[str, str]], queued: list[Record]
) -> list[Record]:
    wanted = [sid for kind, sid in lacking if kind == "record"]
    known = {r.id for r in queued}
    found = await records.get_many(wanted) if wanted else {}
    return [r for r in found.values() if r.id not in known]
