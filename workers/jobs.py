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

log = logging.getLogger(__name__)


async def index_notes(ctx: dict[str, Any], note_ids: list[str]) -> int:
    """Embed the given notes (those still lacking a current dense vector) and index them."""
    outcome = await ctx["app"].indexer.embed_ids(note_ids)
    return int(outcome.indexed)


async def index_pending(ctx: dict[str, Any]) -> int:
    """Embed everything SQLite says is missing a dense vector for the current model."""
    app = ctx["app"]
    total = 0
    while True:
        outcome = await app.indexer.embed_pending(limit=app.settings.embedder.batch_size * 4)
        total += outcome.indexed
        if outcome.indexed == 0:
            return total


async def export_session_context(ctx: dict[str, Any]) -> str:
    """Regenerate session_context.md and copy it to every configured destination."""
    app = ctx["app"]
    snap = await export.collect(
        app.notes, app.settings.export, app.namespaces, records=app.records
    )
    content = export.render(snap)
    await anyio.to_thread.run_sync(
        export.write_all,
        content,
        app.settings.session_context_path,
        app.settings.export.destinations,
    )
    return snap.last_note_id
