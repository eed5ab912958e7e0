"""Queue jobs. Each is a plain ``async def job(run, ...)`` taking its ``JobRun`` (see
``context``). The same functions run under arq (in ``kioku worker``
processes) and under the in-process runner, so both honour one contract.

Jobs compute and write to the truth store only: vectors, thresholds, priors and the
exported session context. None touches the index; the owner applies their results.
Every job is idempotent: vectors are keyed by item, model and text, so a retry or a
duplicate run writes the same row again.
"""

from __future__ import annotations

import logging
import uuid

import anyio

from mcp_gateway.common.access import Scope, settings_scope
from mcp_gateway.jobs import priors, tuning
from mcp_gateway.jobs import session_context as export
from mcp_gateway.jobs.embedding import EmbedStats, embed_notes, embed_records
from mcp_gateway.queue.contract import EXPORT, TUNE, request_singleton, retry_or_fail, run_singleton
from mcp_gateway.queue.run import JobRun
from mcp_gateway.queue.scheduler import JobFunction
from mcp_gateway.stores.leases import Leases

log = logging.getLogger(__name__)

# With a shared truth store every gateway keeps its own data dir's session_context.md
# current, and one process of the deployment (this lease's holder) writes the
# configured destinations, so N gateways never race on one shared path.
DESTINATIONS_LEASE = "export:destinations"
DESTINATIONS_TTL_S = 600.0
_HOLDER = uuid.uuid4().hex[:12]


async def index_note(run: JobRun, note_id: str, tune: bool = False) -> None:
    """Embed one note through the worker's micro-batcher (one embedder call per batch)."""
    try:
        if run.batcher is not None:
            await run.batcher.submit(note_id)
        else:
            await embed_notes(run.context, [note_id], EmbedStats())
    except Exception as exc:
        await retry_or_fail(run, "index_note", note_id, exc)
    if tune and run.queue is not None:
        # the tuning run measures the note's vector, so it follows the embedding
        await request_singleton(*run.follow_ups(), TUNE)


async def index_records(run: JobRun, record_ids: list[str]) -> int:
    """Embed records lacking a vector for their current text."""
    stats = EmbedStats()
    try:
        await embed_records(run.context, record_ids, stats)
    except Exception as exc:
        await retry_or_fail(run, "index_records", ",".join(record_ids[:5]), exc)
    return stats.embedded


async def export_session_context(run: JobRun, scope: Scope | None = None) -> str:
    """Regenerate session_context.md (for ``scope``: by default the settings' own
    namespace, then the ones it may read) and copy it to every configured destination."""
    kc = run.context
    scope = scope or settings_scope(kc.settings)
    snap, content = await export.for_reader(kc, scope)
    destinations = list(kc.settings.export.destinations)
    if destinations and kc.settings.shared_store and not await _holds_destinations(run):
        destinations = []
    await anyio.to_thread.run_sync(
        export.write_all, content, kc.settings.session_context_path, destinations
    )
    return snap.last_note_id


async def _holds_destinations(run: JobRun) -> bool:
    try:
        holder = f"{_HOLDER}:{run.context.settings.data_dir}"  # a process, a data dir
        return await Leases(run.context.db, holder).acquire(DESTINATIONS_LEASE, DESTINATIONS_TTL_S)
    except Exception as exc:  # the store is down: the next export tries again
        log.warning("session_context destinations skipped: no lease (%s)", exc)
        return False


async def tune_thresholds(run: JobRun) -> dict[str, float]:
    """Recompute per-type distance thresholds from solved queries (see ``tuning``)."""
    report = await tuning.tune(run.context)
    return report.thresholds


async def rerank(run: JobRun) -> dict[str, int]:
    """Recompute usefulness priors and lesson shelf life (see ``priors``)."""
    return await priors.rerank(run.context)


async def run_export(run: JobRun) -> str:
    """Singleton wrapper: at most one export at a time, none lost (see ``contract``)."""
    return str(await run_singleton(run, EXPORT, export_session_context))


async def run_tune(run: JobRun) -> dict[str, float]:
    result: dict[str, float] = await run_singleton(run, TUNE, tune_thresholds)
    return result


async def request_tune(run: JobRun) -> bool:
    """Scheduled entry point: ask for a tuning run through the singleton machinery."""
    return await request_singleton(*run.follow_ups(), TUNE)


# The one registry of queue functions both runners execute (handed to them by
# ``jobs.build_scheduler`` and ``workers.settings``).
JOBS: dict[str, JobFunction] = {
    "index_note": index_note,
    "index_records": index_records,
    EXPORT: run_export,
    TUNE: run_tune,
    "rerank": rerank,
    "request_tune": request_tune,
}
SINGLETON_JOBS = frozenset({EXPORT, TUNE})
