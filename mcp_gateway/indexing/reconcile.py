"""Reconcile: make the index agree with the truth store (owner side).

SQLite is the truth, so a flushed Redis, a killed worker or a lost index loses nothing:
reconcile (at start-up, every ``queue.reconcile_every_s`` and after a rebuild) finds
- live notes and records whose point is missing or lacks the current dense vector:
  rewritten from the stored vector when the truth store has one, else written
  lexically and queued for embedding;
- points whose payload says something the truth store no longer does (a type, domain,
  priority, prior, lifecycle flag or text hash): an edit commits first and writes the
  index after, so a process stopped in between, or an index write that failed, leaves
  them; rewritten whole (from the stored vector when it still matches the text).
  Points written before the payload carried ``text_hash`` are judged on the rest;
- draft vectors (``jobs.embedding``: a burst's backlog embedded on the faster pass):
  queued to be embedded exactly, a bounded number a pass;
- with ``terms_wanted`` (the index has the latent-terms vector and the embedder makes
  terms): stored vectors without latent terms (written by an engine that makes none, or
  by an older kioku), queued for embedding again, a bounded number a pass;
- points and stored vectors with no live note or record behind them (a delete that
  raced an embedding, a note forgotten while its job ran): deleted. Forgetting a note
  forgets its point and its vector.

A note whose embedding failed permanently (``queue.failures``) stays lexically indexed
and is queued again when it changes or a day after the failure, not at every pass:
each attempt costs the job all its tries.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import anyio.to_thread

from mcp_gateway.common.types import Kind, Note, point_id
from mcp_gateway.index.base import Index
from mcp_gateway.indexing.indexer import Indexer
from mcp_gateway.indexing.note_priors import load_priors
from mcp_gateway.indexing.points import note_payload, record_payload
from mcp_gateway.queue import failures
from mcp_gateway.queue.base import Scheduler
from mcp_gateway.records import Record, RecordStore
from mcp_gateway.stores.notes import NoteStore

log = logging.getLogger(__name__)

RETRY_FAILED_AFTER_S = 24 * 3600
# stored vectors queued to be embedded again a pass, of each sort (drafts; vectors
# without latent terms): a big backlog or an upgraded data dir catches up over a few
# passes instead of one burst
AGAIN_PER_PASS = 500


@dataclass(slots=True)
class ReconcileReport:
    rewritten: int = 0
    # of those, points that were there but stale: a field or text an edit's index
    # write never reached (the process stopped between the commit and that write)
    refreshed: int = 0
    queued: int = 0
    drafts: int = 0  # draft vectors queued to be embedded exactly
    orphans_deleted: int = 0
    vectors_forgotten: int = 0
    deployment: bool = True  # the truth store's part ran here (see ``reconcile``)


async def reconcile(
    index: Index,
    indexer: Indexer,
    notes: NoteStore,
    records: RecordStore,
    jobs: Scheduler,
    *,
    terms_wanted: bool = False,
    deployment: bool = True,
) -> ReconcileReport:
    """One pass; safe beside live traffic (the owner's writes keep going).
    ``deployment=False`` (another gateway on the shared store holds the reconcile
    lease): repair this index only; queueing embeddings and forgetting orphan vectors
    is the holder's work, and their vectors reach this index through the feed."""
    report = ReconcileReport(deployment=deployment)
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
        unembedded = {
            n.id for n in page if n.embedded_model != model or not present.get(pids[n.id])
        }
        drifted = await _drifted_notes(index, notes, [n for n in page if n.id not in unembedded])
        stale = [n for n in page if n.id in unembedded or n.id in drifted]
        pending_notes += await indexer.put_notes(stale)
        report.rewritten += len(stale)
        report.refreshed += len(drifted)
    pending_records: list[Record] = []
    async for batch in records.iter_all():
        pids = {r.id: point_id("record", r.id) for r in batch}
        expected.update(pids.values())
        present = await index.present(list(pids.values()))
        unembedded = {r.id for r in batch if not present.get(pids[r.id])}
        drifted = await _drifted_records(
            index, records, [r for r in batch if r.id not in unembedded]
        )
        stale_records = [r for r in batch if r.id in unembedded or r.id in drifted]
        if stale_records:
            pending_records += await indexer.put_records([r.id for r in stale_records])
            report.rewritten += len(stale_records)
            report.refreshed += len(drifted)
    orphans = sorted(existing - expected)
    await index.delete(orphans)
    report.orphans_deleted = len(orphans)
    if deployment:
        report.vectors_forgotten = await indexer.vectors.forget_orphans()
        # drafts (a burst's backlog, embedded on the faster pass) are embedded exactly now
        again = await indexer.vectors.drafts(model, limit=AGAIN_PER_PASS)
        report.drafts = len(again)
        if terms_wanted:
            again += await indexer.vectors.without_terms(model, limit=AGAIN_PER_PASS)
        if again:
            found = await notes.get_many([sid for kind, sid in again if kind == "note"])
            known = {n.id for n in pending_notes}
            pending_notes += [n for n in found.values() if n.id not in known]
            pending_records += await records_lacking(records, again, pending_records)
        pending_notes = await _not_failed_lately(notes, pending_notes)
        await jobs.notes_changed(pending_notes)
        await jobs.records_changed([r.id for r in pending_records], export=False)
        report.queued = len(pending_notes) + len(pending_records)
    if report.rewritten or report.orphans_deleted:
        log.info(
            "reconcile: %d points rewritten (%d of them stale), %d queued for embedding, "
            "%d orphans deleted",
            report.rewritten,
            report.refreshed,
            report.queued,
            report.orphans_deleted,
        )
    return report


async def _drifted_notes(index: Index, notes: NoteStore, page: list[Note]) -> set[str]:
    """Ids of ``page``'s notes whose point's payload is not what the truth store says."""
    priors = await load_priors(notes.db, [n.id for n in page]) if page else {}
    return await _drifted(
        index, "note", lambda: {n.id: note_payload(n, priors.get(n.id)) for n in page}
    )


async def _drifted_records(index: Index, records: RecordStore, batch: list[Record]) -> set[str]:
    """As ``_drifted_notes``, for records (their lifecycle flag included)."""
    current = await records.current_ids([r.id for r in batch]) if batch else set()
    return await _drifted(
        index, "record", lambda: {r.id: record_payload(r, r.id in current) for r in batch}
    )


async def _drifted(
    index: Index, kind: Kind, expected: Callable[[], dict[str, dict[str, Any]]]
) -> set[str]:
    """Ids whose stored payload differs from ``expected()`` (built off the event loop:
    it hashes every text)."""
    wanted = await anyio.to_thread.run_sync(expected)
    if not wanted:
        return set()
    stored = await index.payloads([point_id(kind, sid) for sid in wanted])
    return {sid for sid, p in wanted.items() if _differs(p, stored.get(point_id(kind, sid)))}


def _differs(expected: dict[str, Any], stored: dict[str, Any] | None) -> bool:
    if stored is None:  # deleted since it was found present: put_* decides
        return False
    keys = expected.keys() | ({"prior"} & stored.keys())
    if "text_hash" not in stored:
        # written before the payload carried it: judged on the other fields.
        # Rewriting every such point would move it out of the HNSW graph of a large
        # collection (an update lands in a plain segment), and nothing rebuilds the
        # graph for that: searches there would scan instead.
        keys -= {"text_hash"}
    return any(not _same(stored.get(k), expected.get(k)) for k in keys)


def _same(stored: Any, expected: Any) -> bool:
    # the engine's JSON may give a float back one ulp away (created_at 1796314859.8978057
    # came back ...8055): a float within 1e-12 relative is the value that was written
    if isinstance(stored, float) and isinstance(expected, float):
        return math.isclose(stored, expected, rel_tol=1e-12)
    return bool(stored == expected)


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
