"""The application context: every client opened in one place, closed in one place.

``open_app`` is used by the MCP gateway's lifespan, by ``kioku`` CLI commands and by
worker processes (``workers.settings.startup``), so all of them see the same services.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from .access import settings_scope
from .activity import ActivityLog
from .db import Database
from .embedders import build_embedder
from .embedders.base import Embedder
from .errors import EmbedderUnavailable, IndexMismatch, KiokuError
from .index.base import Index, IndexSpec
from .indexing import Indexer
from .notes import NoteStore
from .records import RecordStore
from .scheduling import Scheduler, build_scheduler
from .search import SearchService, ThresholdCache
from .settings import KiokuSettings

log = logging.getLogger(__name__)

INDEX_MODEL_META_KEY = "index.model"
INDEX_SCHEMA_META_KEY = "index.schema"
# Bump when the payload layout changes in a way old points cannot serve (2: "visible").
INDEX_SCHEMA = "2"


@dataclass(slots=True)
class AppContext:
    settings: KiokuSettings
    db: Database
    notes: NoteStore
    records: RecordStore
    index: Index
    embedder: Embedder
    indexer: Indexer
    search: SearchService
    thresholds: ThresholdCache
    activity: ActivityLog
    jobs: Scheduler = field(init=False)
    extras: dict[str, Any] = field(default_factory=dict)

    @property
    def namespaces(self) -> tuple[str, ...]:
        """The namespaces this process serves by default (stdio, jobs, exports)."""
        return settings_scope(self.settings).read


async def open_index(settings: KiokuSettings, spec: IndexSpec) -> Index:
    if settings.index.backend == "edge" and not settings.qdrant_url:
        from .index.edge import EdgeIndex

        index: Index = EdgeIndex(
            spec, settings.index_path / "edge", settings.index.exact_search_below
        )
        await index.open()
        return index
    from .index.qdrant import open_qdrant_index

    key = settings.index.qdrant_api_key
    return await open_qdrant_index(
        spec,
        url=settings.qdrant_url,
        path=None if settings.qdrant_url else settings.index_path / "qdrant-local",
        api_key=key.get_secret_value() if key else None,
    )


async def check_index_model(db: Database, spec: IndexSpec, *, adopt: bool) -> None:
    """Refuse to mix vectors of two models in one index; ``adopt`` after a rebuild."""
    stored = await db.get_meta(INDEX_MODEL_META_KEY)
    current = f"{spec.model_id}@{spec.dim}"
    if stored is None or adopt:
        await db.set_meta(INDEX_MODEL_META_KEY, current)
        await db.set_meta(INDEX_SCHEMA_META_KEY, INDEX_SCHEMA)
        return
    if await db.get_meta(INDEX_SCHEMA_META_KEY) != INDEX_SCHEMA:
        raise IndexMismatch(
            "the index was built by an older kioku with another layout: "
            "run `kioku reindex` to rebuild it from SQLite (nothing is lost)"
        )
    if stored != current:
        raise IndexMismatch(
            f"the index was built with {stored} but the configured embedder is {current}: "
            "run `kioku reindex` to rebuild it for the new model, or switch the embedder back"
        )


async def start_embedder(embedder: Embedder, db: Database) -> None:
    """Start the embedder; if it is down but the index already knows its dimension,
    start anyway: adds are stored and lexically searchable, and the jobs embed them
    once the embedder answers again."""
    try:
        await embedder.start()
    except EmbedderUnavailable as exc:
        model, _, dim = (await db.get_meta(INDEX_MODEL_META_KEY) or "").rpartition("@")
        if model != embedder.model_id or not dim.isdigit():
            raise
        log.warning(
            "%s -- starting with the index's dimension %s; indexing will catch up", exc, dim
        )
        embedder.dim = int(dim)


@asynccontextmanager
async def open_app(
    settings: KiokuSettings, *, run_jobs: bool = True, adopt_model: bool = False
) -> AsyncIterator[AppContext]:
    """Open every store and client; ``run_jobs=False`` for one-shot CLI commands."""
    async with AsyncExitStack() as stack:
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        db = Database(settings.db_path)
        await db.open()
        stack.push_async_callback(db.close)

        embedder = build_embedder(settings.embedder)
        await start_embedder(embedder, db)
        stack.push_async_callback(embedder.aclose)

        spec = IndexSpec(settings.index.collection, embedder.dim, embedder.model_id)
        await check_index_model(db, spec, adopt=adopt_model)
        index = await open_index(settings, spec)
        stack.push_async_callback(index.close)

        notes = NoteStore(db)
        records = RecordStore(db, settings.project)
        thresholds = ThresholdCache(db, embedder.model_id, dict(settings.search.thresholds))
        app = AppContext(
            settings=settings,
            db=db,
            notes=notes,
            records=records,
            index=index,
            embedder=embedder,
            indexer=Indexer(notes, index, embedder, settings.embedder.batch_size),
            search=SearchService(
                notes, index, embedder, settings.search, thresholds, records=records
            ),
            thresholds=thresholds,
            activity=ActivityLog(settings.activity_log_path),
        )
        app.jobs = build_scheduler(app, run_jobs=run_jobs)
        await app.jobs.start()
        stack.push_async_callback(app.jobs.close)
        log.info(
            "kioku ready: data=%s index=%s embedder=%s jobs=%s",
            settings.data_dir,
            type(index).__name__,
            embedder.model_id,
            type(app.jobs).__name__,
        )
        yield app


async def preflight(settings: KiokuSettings) -> str | None:
    """Open and close the stores once; the reason they cannot open, or None.

    Servers call this before binding, so a start-up failure is one clear line
    (uvicorn would log a failing lifespan as a traceback).
    """
    try:
        async with open_app(settings, run_jobs=False):
            return None
    except KiokuError as exc:
        return str(exc)
