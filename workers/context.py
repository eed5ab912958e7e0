"""The worker's ``JobContext``: what jobs may use, opened once per worker process."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager

from mcp_gateway.common.access import settings_scope
from mcp_gateway.common.settings import KiokuSettings
from mcp_gateway.embedders import build_embedder
from mcp_gateway.embedders.channels import build_channel_embedders
from mcp_gateway.jobs import JobContext
from mcp_gateway.records import RecordStore
from mcp_gateway.stores.activity import open_activity_log
from mcp_gateway.stores.db import Database
from mcp_gateway.stores.notes import NoteStore
from mcp_gateway.stores.vectors import VectorStore


@asynccontextmanager
async def open_worker_context(settings: KiokuSettings) -> AsyncIterator[JobContext]:
    """SQLite (WAL: safe beside the owner and other workers), the embedder, the log."""
    async with AsyncExitStack() as stack:
        db = Database(settings.database)
        await db.open()
        stack.push_async_callback(db.close)
        embedder = build_embedder(settings.embedder)
        await embedder.start()
        stack.push_async_callback(embedder.aclose)
        channels = build_channel_embedders(settings.embedder)
        for channel in channels:
            await channel.embedder.start()
            stack.push_async_callback(channel.embedder.aclose)
        yield JobContext(
            settings=settings,
            db=db,
            notes=NoteStore(db),
            records=RecordStore(db, settings.project),
            vectors=VectorStore(db),
            embedder=embedder,
            activity=open_activity_log(
                db, settings.activity_log_path, shared=settings.shared_store
            ),
            namespaces=settings_scope(settings).read,
            channels=channels,
        )
