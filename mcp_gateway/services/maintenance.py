"""Operating the memory: statistics, health checks, reconcile, the activity log and
the jobs that failed for good."""

from __future__ import annotations

import time
from typing import Any

import anyio

from mcp_gateway.index.catalog import live_info
from mcp_gateway.queue import failures
from mcp_gateway.services.app import AppContext

# the backlog's rate: vectors written over the last minute
RATE_WINDOW_S = 60


class MaintenanceService:
    def __init__(self, app: AppContext) -> None:
        self.app = app
        self.started_at = time.time()

    async def stats(self) -> dict[str, Any]:
        """Counts of every store side by side: SQLite notes and records, the index's
        points, the vectors per model, and the job queue."""
        app = self.app
        notes = await app.notes.counts()
        records = await app.records.counts()
        points = await app.index.count()
        return {
            "data_dir": str(app.settings.data_dir),
            "embedder": app.embedder.model_id,
            "index": {
                "backend": type(app.index.current).__name__,
                "collection": app.index.spec.collection,
                "model": app.index.spec.model_id,
                "current_model": app.index_current,
                "points": points,
                "expected_points": notes["total"] + records.get("total", 0),
                "graph_points": app.index.graph_points,
                # the points the last out-of-process build sealed (graph or not): the rest
                # are in a plain segment, their sparse indexes in the owner's heap
                "sealed_points": getattr(app.index.current, "sealed_points", 0),
                # how the collection stores dense vectors and how a new one would: they
                # differ until `kioku reindex`
                "dense_storage": app.index.dense_storage,
                "configured_dense_storage": app.settings.index.dense_storage,
                # the collection has the latent-terms vector / the embedder makes terms
                "latent_terms": app.index.spec.latent,
                "embedder_latent_terms": app.embedder.latent_terms,
            },
            "notes": notes,
            "records": records,
            "vectors": await app.vectors.counts(),
            "backlog": await self.backlog(notes["total"] + records.get("total", 0)),
            # how long after its ack a note was searchable by meaning (fast vector, first
            # e5 vector): rolling quantiles over recent notes (index.ack_lags)
            "searchable_after_ack": app.index.ack_lags.figures().model_dump(),
            "jobs": await app.jobs.stats(),
        }

    async def backlog(self, expected: int) -> list[dict[str, Any]]:
        """Per embedding model: the live notes and records without a vector of it
        (``waiting``), its drafts still to be embedded exactly, and its vectors written a
        second over the last ``RATE_WINDOW_S`` (a draft, or a draft redone exactly: one
        vector; both passes together make a burst's rate)."""
        now = time.time()
        out: list[dict[str, Any]] = []
        models = (self.app.embedder.model_id, *(c.embedder.model_id for c in self.app.channels))
        for model in models:
            got = await self.app.vectors.backlog_figures(model, now - RATE_WINDOW_S)
            out.append(
                {
                    "model": model,
                    "waiting": max(0, expected - got["stored"]),
                    "drafts": got["drafts"],
                    "per_s": round(got["written"] / RATE_WINDOW_S, 2),
                    "window_s": RATE_WINDOW_S,
                }
            )
        return out

    async def doctor(self) -> list[dict[str, Any]]:
        """One check per store: ok, and what to do when not."""
        app = self.app
        checks: list[dict[str, Any]] = []
        try:
            vec = await app.embedder.embed_query("doctor probe")
            checks.append(_check("embedder", True, f"{app.embedder.model_id} dim={len(vec)}"))
        except Exception as exc:
            checks.append(_check("embedder", False, str(exc)))
        stats = await self.stats()
        index = stats["index"]
        same = index["points"] == index["expected_points"]
        detail = (
            f"{index['backend']} {index['collection']}: {index['points']} points for "
            f"{index['expected_points']} live notes and records"
        )
        if not same:
            detail += " -- reconcile runs every few minutes; `kioku reindex` rebuilds now"
        checks.append(_check("index", same, detail))
        if not index["current_model"]:
            checks.append(
                _check(
                    "model",
                    False,
                    f"the index holds {index['model']} vectors but the embedder is "
                    f"{app.embedder.model_id}: run `kioku reindex` (search is lexical until then)",
                )
            )
        checks.append(_latent_check(index))
        info = await live_info(app.db, app.settings)
        notes = stats["notes"]
        checks.append(
            _check(
                "sqlite",
                True,
                f"notes={notes['total']} pending_embedding={notes['pending_embedding']} "
                f"live_collection={info.collection}",
            )
        )
        return checks

    async def activity(self, since: float) -> list[dict[str, Any]]:
        """Activity-log entries since ``since`` (every namespace's: the caller cuts them)."""
        log = self.app.activity
        return await anyio.to_thread.run_sync(lambda: list(log.read_sync(since)))

    async def job_failures(self, limit: int = 20) -> dict[str, Any]:
        """Permanent job failures, newest first."""
        return await failures.summary(self.app.db, limit=limit)

    async def reconcile(self) -> dict[str, int]:
        report = await self.app.reconcile()
        return {
            "rewritten": report.rewritten,
            "refreshed": report.refreshed,
            "queued": report.queued,
            "orphans_deleted": report.orphans_deleted,
        }


def _latent_check(index: dict[str, Any]) -> dict[str, Any]:
    has, makes = index["latent_terms"], index["embedder_latent_terms"]
    if has and makes:
        return _check("latent", True, "searched beside dense (BM25 for exact words)")
    if makes:
        return _check(
            "latent",
            False,
            "the index was built without the latent-terms vector: `kioku reindex` adds it "
            "(search uses dense + BM25 until then)",
        )
    why = "this embedder makes none" if has else "off (the embedder makes none)"
    return _check("latent", True, f"{why}: search uses dense + BM25")


def _check(name: str, ok: bool, detail: str) -> dict[str, Any]:
    return {"name": name, "ok": ok, "detail": detail}
