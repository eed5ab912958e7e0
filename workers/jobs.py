"""Job functions. Each is a plain ``async def job(ctx, ...)``; ``ctx["app"]`` is the
``AppContext`` opened by the runner. The same functions run under arq (over Redis) and
under the in-process runner, so both honour one contract.

Every job is idempotent: point ids are derived from note/record ids, so a retry or a
duplicate run overwrites with the same data.
"""

from __future__ import annotations

import logging
from typing import Any

import anyio

from mcp_gateway import export
from mcp_gateway.types import Note, point_id

from . import priors, tuning
from .batcher import BatchStats, embed_current
from .contract import EXPORT, TUNE, request_singleton, retry_or_fail, run_singleton

log = logging.getLogger(__name__)


async def index_notes(ctx: dict[str, Any], note_ids: list[str]) -> int:
    """Embed the given notes (those still lacking a current dense vector) and index them."""
    outcome = await ctx["app"].indexer.embed_ids(note_ids)
    return int(outcome.indexed)


async def index_records(ctx: dict[str, Any], record_ids: list[str]) -> int:
    """(Re)index records with their current lifecycle flag; idempotent."""
    app = ctx["app"]
    found = await app.records.get_many(record_ids)
    current = await app.records.current_ids(list(found))
    outcome = await app.indexer.index_records(list(found.values()), current)
    return int(outcome.indexed)


async def index_all_records(ctx: dict[str, Any]) -> int:
    app = ctx["app"]
    total = 0
    async for batch in app.records.iter_all():
        current = await app.records.current_ids([r.id for r in batch])
        outcome = await app.indexer.index_records(batch, current)
        total += outcome.indexed
    return total


async def export_session_context(ctx: dict[str, Any]) -> str:
    """Regenerate session_context.md and copy it to every configured destination."""
    app = ctx["app"]
    snap = await export.collect(app.notes, app.settings.export, app.namespaces, records=app.records)
    content = export.render(snap)
    await anyio.to_thread.run_sync(
        export.write_all,
        content,
        app.settings.session_context_path,
        app.settings.export.destinations,
    )
    return snap.last_note_id


def index_job_id(note_id: str, updated_at: float) -> str:
    """One job per note version: a newer edit gets a new id, duplicates collapse."""
    return f"index:{note_id}:{updated_at!r}"


# -- queue jobs (registered with both runners in ``workers.registry``) ----------------


async def index_note(ctx: dict[str, Any], note_id: str, tune: bool = False) -> None:
    """Embed one note through the worker's micro-batcher (one embedder call per batch)."""

    try:
        batcher = ctx.get("batcher")
        if batcher is not None:
            await batcher.submit(note_id)
        else:
            await embed_current(ctx["app"].indexer, [note_id], BatchStats())
    except Exception as exc:
        await retry_or_fail(ctx, "index_note", note_id, exc)
    if tune and "queue" in ctx:
        # the tuning run measures the note's dense vector, so it follows the embedding
        await request_singleton(ctx["coord"], ctx["queue"], TUNE)


async def tune_thresholds(ctx: dict[str, Any]) -> dict[str, float]:
    """Recompute per-type distance thresholds from solved queries (see ``tuning``)."""

    report = await tuning.tune(ctx["app"])
    return report.thresholds


async def rerank(ctx: dict[str, Any]) -> dict[str, int]:
    """Recompute usefulness priors and lesson shelf life (see ``priors``)."""

    return await priors.rerank(ctx["app"])


async def reconcile(ctx: dict[str, Any]) -> int:
    """Queue every live note whose point is missing or lacks a current dense vector.

    SQLite is the truth, so a flushed Redis or a killed worker loses nothing: the next
    reconcile (at start-up and every ``queue.reconcile_every_s``) finds the gap.
    """

    app = ctx["app"]
    queue = ctx.get("queue")
    missing = await find_unindexed(ctx)
    records = await find_unindexed_records(ctx)
    if queue is None:
        await index_notes(ctx, [n.id for n in missing])
        await index_records(ctx, records)
        return len(missing) + len(records)
    if records:
        await queue.enqueue("index_records", records)
        log.info("reconcile: %d records queued for indexing", len(records))
    for note in missing:
        await queue.enqueue("index_note", note.id, job_id=index_job_id(note.id, note.updated_at))
    if missing:
        log.info(
            "reconcile: %d notes queued for embedding (model %s)",
            len(missing),
            app.embedder.model_id,
        )
    return len(missing) + len(records)


async def find_unindexed_records(ctx: dict[str, Any]) -> list[str]:
    """Record ids whose point is missing or has no dense vector yet."""
    app = ctx["app"]
    missing: list[str] = []
    async for batch in app.records.iter_all():
        present = await app.index.present([point_id("record", r.id) for r in batch])
        missing += [r.id for r in batch if not present.get(point_id("record", r.id), False)]
    return missing


async def find_unindexed(ctx: dict[str, Any], page_size: int = 500) -> list[Note]:

    app = ctx["app"]
    model = app.embedder.model_id
    missing: list[Note] = []
    after = ""
    while page := await app.notes.page(after, limit=page_size):
        after = page[-1].id
        present = await app.index.present([point_id("note", n.id) for n in page])
        missing += [
            n
            for n in page
            if n.embedded_model != model or not present.get(point_id("note", n.id), False)
        ]
    return missing


async def run_export(ctx: dict[str, Any]) -> str:
    """Singleton wrapper: at most one export at a time, none lost (see ``contract``)."""

    return str(await run_singleton(ctx, EXPORT, export_session_context))


async def run_tune(ctx: dict[str, Any]) -> dict[str, float]:

    result: dict[str, float] = await run_singleton(ctx, TUNE, tune_thresholds)
    return result


async def request_tune(ctx: dict[str, Any]) -> bool:
    """Scheduled entry point: ask for a tuning run through the singleton machinery."""
    return await request_singleton(ctx["coord"], ctx["queue"], TUNE)
