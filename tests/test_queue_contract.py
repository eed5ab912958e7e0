"""One contract, two runners: the in-process runner and arq over a real Redis.

Every test runs against both. Under arq, several ``Worker`` objects run in this process,
each with its own Redis connection: they coordinate only through Redis, exactly as
separate processes would, sharing the owner's job context (truth store and model; jobs
never touch the index). The owner applies their vectors to the real qdrant-client
index (local mode). Separate worker processes are tested in ``test_worker_process``.
"""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from arq.worker import Worker

import mcp_gateway.services.app as app_module
from mcp_gateway.common.errors import EmbedderUnavailable
from mcp_gateway.common.inputs import NoteChanges, NoteFields
from mcp_gateway.common.sections import IndexSettings, QueueSettings, SearchSettings
from mcp_gateway.common.settings import KiokuSettings
from mcp_gateway.common.types import point_id
from mcp_gateway.embedders.base import Encoded, as_list
from mcp_gateway.embedders.local import LocalEmbedder
from mcp_gateway.jobs import session_context as export
from mcp_gateway.jobs.batcher import Batcher
from mcp_gateway.queue import failures
from mcp_gateway.queue.arq_queue import ArqScheduler
from mcp_gateway.queue.inprocess import InProcessScheduler
from mcp_gateway.queue.scheduler import index_job_id
from mcp_gateway.search.request import SearchRequest
from mcp_gateway.search.thresholds import thresholds_key
from mcp_gateway.services.app import AppContext, open_app
from mcp_gateway.services.notes import NoteService
from tests.redis_server import RedisDb, redis_base_url, redis_db  # noqa: F401
from workers.settings import worker_settings

RUNNERS = ["inprocess", "arq"]
FAST_CTX = {"retry_base_s": 0.01, "lock_poll_s": 0.02}


class CountingEmbedder:
    """The real bundled model, wrapped to count calls and to fail on purpose (every
    batch on the exact pass: the counts here are about batches, not drafts)."""

    makes_drafts = False

    def __init__(self) -> None:
        self.inner = LocalEmbedder()
        self.model_id = self.inner.model_id
        self.dim = 384
        self.calls = 0
        self.texts = 0
        self.sizes: list[int] = []
        self.fail_next = 0
        self.poison = "POISON"
        self.gate: asyncio.Event | None = None

    async def start(self) -> None:
        await self.inner.start()
        self.dim = self.inner.dim

    async def aclose(self) -> None:
        await self.inner.aclose()

    def peek(self, text: str) -> Encoded | None:
        return self.inner.peek(text)

    def interrupt(self) -> None:
        self.inner.interrupt()

    @property
    def latent_terms(self) -> bool:
        return self.inner.latent_terms

    async def encode_documents(self, texts: Sequence[str], *, now: bool = False) -> list[Encoded]:
        if now:  # a search's fresh notes: not the job's batches this wrapper counts
            return await self.inner.encode_documents(texts, now=True)
        if self.gate is not None:
            await self.gate.wait()
        self.calls += 1
        if self.fail_next > 0:
            self.fail_next -= 1
            raise EmbedderUnavailable("test: embedder briefly down")
        if any(self.poison in t for t in texts):
            raise ValueError("test: this text cannot be embedded")
        self.texts += len(texts)
        self.sizes.append(len(texts))
        return await self.inner.encode_documents(texts)

    async def encode_query(self, text: str) -> Encoded:
        return await self.inner.encode_query(text)

    async def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        return [as_list(e.dense) for e in await self.encode_documents(texts)]

    async def embed_query(self, text: str) -> list[float]:
        return await self.inner.embed_query(text)

    async def embed_documents_now(self, texts: Sequence[str]) -> list[list[float]]:
        return await self.inner.embed_documents_now(texts)


class Env:
    def __init__(self, kind: str, app: AppContext, embedder: Any) -> None:
        self.kind, self.app, self.embedder = kind, app, embedder

    async def drain(self) -> None:
        await asyncio.wait_for(self.app.settle(), 120)

    async def add(self, text: str, type_: str = "note", solved_query: str = "") -> str:
        fields = NoteFields(text=text, type=type_, solved_query=solved_query)
        return (await NoteService(self.app).store(fields, self.app.namespaces[0])).id

    async def has_dense(self, note_ids: Sequence[str]) -> dict[str, bool]:
        present = await self.app.index.present([point_id("note", n) for n in note_ids])
        return {n: present.get(point_id("note", n), False) for n in note_ids}


def make_settings(
    tmp_path: Path,
    namespace: str = "default",
    queue: dict[str, int] | None = None,
    search: dict[str, Any] | None = None,
    channels: list[str] | None = None,
) -> KiokuSettings:
    settings = KiokuSettings(
        data_dir=tmp_path / "data",
        namespace=namespace,
        redis_url=None,
        qdrant_url=None,
        index=IndexSettings(backend="qdrant", collection=f"q{uuid.uuid4().hex[:10]}"),
        queue=QueueSettings.model_validate(
            {"max_jobs": 64, "max_tries": 4, "job_timeout_s": 60, **(queue or {})}
        ),
        # the owner's prefetch embeds pending notes too (tests/test_prefetch.py); these
        # tests count what the queue's jobs embed
        search=SearchSettings.model_validate({"prefetch_budget_ms": 0, **(search or {})}),
    )
    if channels is None:
        return settings
    embedder = settings.embedder.model_copy(update={"channels": channels})
    return settings.model_copy(update={"embedder": embedder})


@asynccontextmanager
async def running(
    kind: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    request: pytest.FixtureRequest,
    embedder: Any,
    workers: int = 2,
    queue: dict[str, int] | None = None,
    search: dict[str, Any] | None = None,
    channels: list[str] | None = None,
) -> AsyncIterator[Env]:
    monkeypatch.setattr(app_module, "build_embedder", lambda _settings: embedder)
    if kind == "inprocess":
        settings = make_settings(tmp_path, queue=queue, search=search, channels=channels)
        async with open_app(settings) as app:
            assert isinstance(app.jobs, InProcessScheduler)
            app.jobs.retry_sooner(**FAST_CTX)
            yield Env(kind, app, embedder)
        return
    redis: RedisDb = request.getfixturevalue("redis_db")
    settings = make_settings(
        tmp_path, namespace=redis.namespace, queue=queue, search=search, channels=channels
    )
    settings.redis_url = redis.url
    async with open_app(settings) as app:
        assert isinstance(app.jobs, ArqScheduler)
        started = [
            Worker(
                **worker_settings(
                    settings,
                    kc=app.job_context,
                    ctx_extra=FAST_CTX,
                    host=f"w{i}",
                    handle_signals=False,
                    poll_delay=0.01,
                )
            )
            for i in range(workers)
        ]
        tasks = [asyncio.create_task(w.async_run()) for w in started]
        try:
            yield Env(kind, app, embedder)
            await asyncio.wait_for(app.jobs.drain(), 120)
        finally:
            for worker in started:
                await worker.close()
            await asyncio.gather(*tasks, return_exceptions=True)


class ExportRecorder:
    """Wraps ``export.write_all``: counts runs, their overlap, and what each contained."""

    def __init__(self, hold_s: float = 0.0) -> None:
        self.hold_s = hold_s
        self.contents: list[str] = []
        self.active = self.max_active = 0
        self.lock = threading.Lock()
        self.release = threading.Event()
        self.release.set()
        self.started = threading.Event()

    def __call__(self, content: str, primary: Path, destinations: Sequence[Path]) -> list[Path]:
        with self.lock:
            self.active += 1
            self.max_active = max(self.max_active, self.active)
        self.started.set()
        try:
            self.release.wait(30)
            if self.hold_s:
                threading.Event().wait(self.hold_s)
            with self.lock:
                self.contents.append(content)
            return [primary]
        finally:
            with self.lock:
                self.active -= 1


@pytest.fixture(params=RUNNERS)
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


async def test_duplicate_index_requests_collapse(kind, tmp_path, monkeypatch, request) -> None:
    embedder = CountingEmbedder()
    embedder.gate = asyncio.Event()
    async with running(kind, tmp_path, monkeypatch, request, embedder) as env:
        note_id = await env.add("a note about deduplication")
        note = await env.app.notes.get(note_id)
        # same note version: refused while the first job is queued or running
        again = await env.app.jobs.queue.enqueue(  # type: ignore[attr-defined]
            "index_note", note_id, False, job_id=index_job_id(note_id, note.updated_at)
        )
        assert again is False
        embedder.gate.set()
        await env.drain()
        assert (await env.has_dense([note_id]))[note_id]


async def test_burst_of_adds_is_batched(kind, tmp_path, monkeypatch, request) -> None:
    """A backlog of index jobs is embedded in batches of up to batch_size texts, not one
    call per note. Deterministic on a loaded machine: the embedder is held until every
    job has reached a worker's micro-batcher, so the bound below does not depend on how
    fast adds arrive compared to the batcher's linger (it did: 169 calls for 1000 adds
    under load). Per batcher: one first batch (however small) plus full batches of the
    rest. Verified: both runners pass it, and it fails with embedder batch_size 1 (96
    calls). Three full batches of notes are enough for that bound (160 embedded 40 %
    more on the real model for the same proof)."""
    n, size = 96, 32
    handed, all_handed = 0, asyncio.Event()
    submit = Batcher.submit

    async def counting_submit(self: Batcher, note_id: str) -> None:
        nonlocal handed
        handed += 1
        if handed >= n:
            all_handed.set()
        await submit(self, note_id)

    monkeypatch.setattr(Batcher, "submit", counting_submit)
    embedder = CountingEmbedder()
    embedder.gate = asyncio.Event()
    # room for the whole burst in flight, and no job timing out while the gate is shut
    queue = {"max_jobs": n, "job_timeout_s": 600}
    async with running(kind, tmp_path, monkeypatch, request, embedder, queue=queue) as env:
        ids = [await env.add(f"burst note number {i} about topic {i % 17}") for i in range(n)]
        await asyncio.wait_for(all_handed.wait(), 120)
        embedder.gate.set()
        await env.drain()
        assert all((await env.has_dense(ids)).values())
        assert (await env.app.notes.counts())["pending_embedding"] == 0
        batchers = 1 if kind == "inprocess" else 2
        assert max(embedder.sizes) <= size
        assert embedder.texts == n
        assert embedder.calls <= batchers + -(-n // size) + batchers, embedder.sizes
        print(f"{kind}: {n} adds -> {embedder.calls} embedder calls")


async def test_requests_during_export_yield_one_follow_up(
    kind, tmp_path, monkeypatch, request
) -> None:
    recorder = ExportRecorder()
    monkeypatch.setattr(export, "write_all", recorder)
    async with running(kind, tmp_path, monkeypatch, request, CountingEmbedder()) as env:
        recorder.release.clear()
        await env.add("first lesson", "lesson")
        assert await asyncio.to_thread(recorder.started.wait, 30)
        last = ""
        # 50 requests while one export is held: they collapse into one follow-up
        for i in range(50):
            last = await env.add(f"lesson {i} learned while the export runs", "lesson")
        recorder.release.set()
        await env.drain()
        assert len(recorder.contents) == 2, len(recorder.contents)
        assert last in recorder.contents[-1]
        assert recorder.max_active == 1


async def test_exports_never_overlap_and_none_is_lost(kind, tmp_path, monkeypatch, request) -> None:
    recorder = ExportRecorder(hold_s=0.03)
    monkeypatch.setattr(export, "write_all", recorder)
    async with running(kind, tmp_path, monkeypatch, request, CountingEmbedder()) as env:
        rng = np.random.default_rng(7)
        last = ""
        for i in range(60):
            last = await env.add(f"conclusion {i}", "conclusion")
            await asyncio.sleep(float(rng.uniform(0, 0.02)))
        await env.drain()
        assert recorder.max_active == 1
        assert last in recorder.contents[-1]
        assert 2 <= len(recorder.contents) < 60


async def test_transient_failures_are_retried(kind, tmp_path, monkeypatch, request) -> None:
    embedder = CountingEmbedder()
    embedder.fail_next = 2
    async with running(kind, tmp_path, monkeypatch, request, embedder) as env:
        ids = [await env.add(f"note {i} written while the embedder is down") for i in range(5)]
        await env.drain()
        assert all((await env.has_dense(ids)).values())
        assert (await failures.summary(env.app.db))["count"] == 0


async def test_permanent_failure_is_recorded_and_isolated(
    kind, tmp_path, monkeypatch, request
) -> None:
    embedder = CountingEmbedder()
    async with running(kind, tmp_path, monkeypatch, request, embedder) as env:
        good = [await env.add(f"healthy note {i}") for i in range(5)]
        bad = await env.add("this POISON note cannot be embedded")
        await env.drain()
        assert all((await env.has_dense(good)).values())
        assert not (await env.has_dense([bad]))[bad]
        summary = await failures.summary(env.app.db)
        assert [(r["job"], r["key"]) for r in summary["recent"]] == [("index_note", bad)]
        stats = await env.app.jobs.stats()
        assert stats["failures"]["count"] == 1
        # reconcile leaves it alone (each attempt costs all the job's tries)...
        calls = embedder.calls
        assert (await env.app.reconcile()).queued == 0
        await env.drain()
        assert embedder.calls == calls
        # ...until it changes (or a day has passed)
        await env.app.notes.update(bad, NoteChanges(text="this POISON note, edited"))
        assert (await env.app.reconcile()).queued == 1


async def test_reconcile_recovers_lost_jobs_and_points(
    kind, tmp_path, monkeypatch, request
) -> None:
    embedder = CountingEmbedder()
    async with running(kind, tmp_path, monkeypatch, request, embedder) as env:
        indexed = await env.add("a note that gets indexed, then its point is lost")
        await env.drain()
        await env.app.index.delete([point_id("note", indexed)])
        # notes committed but never enqueued (as after a flushed Redis)
        lost = []
        for i in range(10):
            note = await env.app.notes.add(
                NoteFields(text=f"lost job {i}", type="note"), namespace=env.app.namespaces[0]
            )
            await env.app.indexer.put_lexical(note)
            lost.append(note.id)
        await env.app.reconcile()  # the owner's: jobs never see the index
        await env.drain()
        assert all((await env.has_dense([indexed, *lost])).values())


async def test_tune_request_follows_embedding(kind, tmp_path, monkeypatch, request) -> None:
    async with running(kind, tmp_path, monkeypatch, request, CountingEmbedder()) as env:
        for i in range(4):
            await env.add(
                f"deploy failed because token {i} expired",
                "lesson",
                solved_query=f"why did deploy {i} fail",
            )
        await env.drain()
        stored = await env.app.db.get_meta(thresholds_key(env.app.namespaces[0]))
        assert stored is not None and '"lesson"' in stored


@pytest.mark.slow
async def test_lexical_first_then_semantic_with_real_model(
    kind, tmp_path, monkeypatch, request
) -> None:
    from mcp_gateway.embedders.local import LocalEmbedder

    class Gated(LocalEmbedder):
        gate = asyncio.Event()

        async def encode_documents(
            self, texts: Sequence[str], *, now: bool = False, draft: bool = False
        ) -> list[Encoded]:
            await self.gate.wait()
            return await super().encode_documents(texts, now=now, draft=draft)

    embedder = Gated()
    await embedder.start()
    # the job path alone: a search embedding the pending note itself is
    # tests/test_fresh_notes.py's subject
    no_fresh = {"fresh_top": 0}
    # e5 alone: the default channels find a pending note by their own vectors written
    # at the add (tests/test_default_channels.py); this is the e5 job's path
    async with running(
        kind, tmp_path, monkeypatch, request, embedder, workers=1, search=no_fresh, channels=[]
    ) as env:
        note_id = await env.add(
            "Never fire dozens of PATCH requests in parallel: the API answered 429 and "
            "blocked the account for a whole day.",
            "lesson",
        )
        # no token in common with the note: only the dense channel can find it
        paraphrase = "too many simultaneous HTTP calls caused throttling"
        lexical = await env.app.search.search(
            SearchRequest("PATCH requests in parallel", namespaces=env.app.namespaces)
        )
        assert note_id in [r.id for r in lexical.results if "[RECENT]" not in r.tags]
        assert not (await env.has_dense([note_id]))[note_id]
        before = await env.app.search.search(
            SearchRequest(paraphrase, namespaces=env.app.namespaces)
        )
        assert note_id not in [r.id for r in before.results if "[RECENT]" not in r.tags]
        Gated.gate.set()
        await env.drain()
        assert (await env.has_dense([note_id]))[note_id]
        after = await env.app.search.search(
            SearchRequest(paraphrase, namespaces=env.app.namespaces)
        )
        hit = [r for r in after.results if r.id == note_id and "[RECENT]" not in r.tags]
        assert hit and hit[0].distance is not None


def test_redis_briefly_down_is_transient_where_redis_is_loaded() -> None:
    """``is_transient`` looks Redis's errors up only once redis is imported (the
    embedded runner never imports it): under arq, a dropped connection is retried."""
    from redis.exceptions import ConnectionError as RedisConnectionError
    from redis.exceptions import TimeoutError as RedisTimeoutError

    from mcp_gateway.queue.contract import is_transient

    assert is_transient(RedisConnectionError("gone"))
    assert is_transient(RedisTimeoutError("slow"))
    assert not is_transient(ValueError("bad input"))
