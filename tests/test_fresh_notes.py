"""Fresh notes: a search embeds the few best pending lexical hits itself (``fresh.py``).

Real stores, the real bundled model, the real embedded Qdrant engine; the MCP tools
through the real protocol. The embedding job is held at its embedder (a gate on the
document lane only), which is the state a burst of adds leaves notes in.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import mcp_gateway.services.app as app_module
from mcp_gateway.common.access import settings_scope
from mcp_gateway.common.inputs import NoteFields, NoteQuery
from mcp_gateway.common.sections import IndexSettings, SearchSettings
from mcp_gateway.common.settings import KiokuSettings
from mcp_gateway.common.types import point_id
from mcp_gateway.embedders.base import Encoded, as_list
from mcp_gateway.embedders.local import LocalEmbedder
from mcp_gateway.indexing.points import note_document, record_document
from mcp_gateway.protocol.server import create_server
from mcp_gateway.search.fresh import FreshLimits, choose
from mcp_gateway.services.app import AppContext, open_app
from mcp_gateway.services.notes import NoteService
from mcp_gateway.stores.vectors import content_hash

from .conftest import Harness, connected

OTHERS = [
    "Use connection pooling for the postgres client in the billing service",
    "The frontend build uses vite and outputs to dist/",
    "Timezone bugs: store timestamps in UTC and convert at the edge",
    "Docker images are built with multi-stage builds to stay small",
]


class GatedEmbedder:
    """The real model; the job's document lane waits for ``gate``, the query lane never."""

    makes_drafts = False

    def __init__(self) -> None:
        self.inner = LocalEmbedder()
        self.model_id = self.inner.model_id
        self.dim = 384
        self.gate = asyncio.Event()
        self.waiting = asyncio.Event()  # a document batch has reached the gate
        self.documents: list[str] = []  # texts the job embedded
        self.now: list[str] = []  # texts searches embedded
        self.now_fails = False  # the engine rejects what a search hands it

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
        if now:
            if self.now_fails:
                raise ValueError("test: this text cannot be embedded")
            self.now.extend(texts)
            return await self.inner.encode_documents(texts, now=True)
        self.waiting.set()
        await self.gate.wait()
        self.documents.extend(texts)
        return await self.inner.encode_documents(texts)

    async def encode_query(self, text: str) -> Encoded:
        return await self.inner.encode_query(text)

    async def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        return [as_list(e.dense) for e in await self.encode_documents(texts)]

    async def embed_documents_now(self, texts: Sequence[str]) -> list[list[float]]:
        return [as_list(e.dense) for e in await self.encode_documents(texts, now=True)]

    async def embed_query(self, text: str) -> list[float]:
        return await self.inner.embed_query(text)


def make_settings(
    tmp_path: Path, *, channels: list[str] | None = None, **search: Any
) -> KiokuSettings:
    """The prefetcher off unless ``search`` turns it on: these tests hold notes pending,
    and ``settle`` does not wait for it, so it could embed one between ``make_pending``
    and the search (a clean-clone CI run met that once; tests/test_prefetch.py covers
    the prefetcher)."""
    settings = KiokuSettings(
        data_dir=tmp_path / "data",
        redis_url=None,
        qdrant_url=None,
        index=IndexSettings(collection=f"f_{uuid.uuid4().hex[:12]}"),
        search=SearchSettings.model_validate({"prefetch_budget_ms": 0, **search}),
    )
    if channels is None:
        return settings
    embedder = settings.embedder.model_copy(update={"channels": channels})
    return settings.model_copy(update={"embedder": embedder})


@asynccontextmanager
async def gated_app(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, embedder: GatedEmbedder, **search: Any
) -> AsyncIterator[AppContext]:
    """The app over ``embedder`` (the prefetcher off, as in ``make_settings``)."""
    monkeypatch.setattr(app_module, "build_embedder", lambda _settings: embedder)
    async with open_app(make_settings(tmp_path, **search)) as app:
        yield app
        embedder.gate.set()  # let the held jobs finish before the app closes


@asynccontextmanager
async def mcp_harness(settings: KiokuSettings) -> AsyncIterator[Harness]:
    apps: list[AppContext] = []
    async with connected(create_server(settings, on_app=apps.append)) as client:
        yield Harness(client, apps)


async def add(service: NoteService, app: AppContext, text: str) -> str:
    return (await service.store(NoteFields(text=text), app.namespaces[0])).id


async def make_pending(app: AppContext, note_id: str) -> None:
    """As a burst leaves a note: lexically indexed, no vector anywhere yet."""
    await app.vectors.forget("note", [note_id])
    await app.indexer.put_lexical(await app.notes.get(note_id))
    assert await app.index.present([point_id("note", note_id)]) == {
        point_id("note", note_id): False
    }


async def test_search_embeds_a_pending_hit_and_stores_its_vector(tmp_path: Path) -> None:
    async with mcp_harness(make_settings(tmp_path)) as h:
        for text in OTHERS:
            await h.ok("add_note", text=text)
        note_id = (await h.ok("add_note", text="The zorblax cache key uses the tenant prefix"))[
            "id"
        ]
        await h.settle()
        app = h.app
        await app.reconcile()  # these adds were a backlog: drafts, embedded exactly now
        await h.settle()
        settled = await app.vectors.get("note", app.embedder.model_id, [note_id])
        assert not settled[note_id].draft
        await make_pending(app, note_id)

        data = await h.ok("search_memory", query="zorblax cache key")
        first = data["results"][0]
        assert first["id"] == note_id
        # scored in the dense space at once, as an indexed note is
        assert first["distance"] is not None
        stored = await app.vectors.get("note", app.embedder.model_id, [note_id])
        note = await app.notes.get(note_id)
        assert stored[note_id].content_hash == content_hash(note_document(note))
        # the same passage vector the job would have stored (one engine, one text)
        np.testing.assert_allclose(stored[note_id].vector, settled[note_id].vector, atol=1e-5)
        # the owner's applier upserts the point from the stored vector
        await app.applier.apply_pending()
        assert await app.index.present([point_id("note", note_id)]) == {
            point_id("note", note_id): True
        }


async def test_a_pending_record_is_embedded_too(tmp_path: Path) -> None:
    # a budget any machine meets: on a CPU without int8 dot products (AVX2 only) the
    # learnt cost put this record's ~90 bytes past the default 60 ms, and the search
    # rightly left it to the job; what this test checks is that records take the path
    async with mcp_harness(make_settings(tmp_path, fresh_budget_ms=1000)) as h:
        for text in OTHERS:
            await h.ok("add_note", text=text)
        data = await h.ok(
            "record_add",
            type="decision",
            title="Use the zorblax cache for tenant sessions",
            content="Chosen for its per-tenant key prefix.",
        )
        record_id = data["record"]["id"]
        await h.settle()
        app = h.app
        # as a burst leaves a record: lexically indexed, no vector anywhere yet
        await app.vectors.forget("record", [record_id])
        [record] = (await app.records.get_many([record_id])).values()
        await app.indexer.put_records([record_id])
        assert await app.index.present([point_id("record", record_id)]) == {
            point_id("record", record_id): False
        }
        results = (await h.ok("search_memory", query="zorblax cache tenant sessions"))["results"]
        hit = next(r for r in results if r["id"] == record_id)
        assert hit["kind"] == "record" and hit["distance"] is not None
        stored = await app.vectors.get("record", app.embedder.model_id, [record_id])
        assert stored[record_id].content_hash == content_hash(record_document(record))


async def test_fresh_off_or_a_long_note_stays_lexical(tmp_path: Path) -> None:
    long_text = "The zorblax cache key uses the tenant prefix. " + "Filler words here. " * 40
    cases: list[tuple[dict[str, Any], str]] = [
        ({"fresh_top": 0}, "The zorblax cache key"),
        ({}, long_text),
    ]
    for search, text in cases:
        async with mcp_harness(make_settings(tmp_path / str(len(text)), **search)) as h:
            for other in OTHERS:
                await h.ok("add_note", text=other)
            note_id = (await h.ok("add_note", text=text))["id"]
            await h.settle()
            app = h.app
            await make_pending(app, note_id)
            data = await h.ok("search_memory", query="zorblax cache key")
            first = data["results"][0]
            # still found on its lexical evidence, and nothing was embedded for it
            assert first["id"] == note_id
            assert first["distance"] is None
            assert await app.vectors.get("note", app.embedder.model_id, [note_id]) == {}


async def test_a_slow_machine_embeds_nothing_then_measures_again(tmp_path: Path) -> None:
    async with mcp_harness(make_settings(tmp_path)) as h:
        for text in OTHERS:
            await h.ok("add_note", text=text)
        note_id = (await h.ok("add_note", text="The zorblax cache key uses the tenant prefix"))[
            "id"
        ]
        await h.settle()
        app = h.app
        await make_pending(app, note_id)
        fresh = app.search.fresh
        assert fresh is not None
        fresh.ms_per_byte = 50.0  # as if the last embedding had crawled: nothing fits

        async def distance() -> float | None:
            data = await h.ok("search_memory", query="zorblax cache key")
            hit = next(r for r in data["results"] if r["id"] == note_id)
            return hit["distance"]

        assert await distance() is None
        assert await app.vectors.get("note", app.embedder.model_id, [note_id]) == {}
        # each search that could embed nothing moves the estimate back to the prior,
        # so the note is embedded once the estimate fits the budget again
        for _ in range(60):
            if await distance() is not None:
                break
        assert await distance() is not None
        assert fresh.embedded == 1


async def test_the_job_skips_what_a_search_embedded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    embedder = GatedEmbedder()
    async with gated_app(tmp_path, monkeypatch, embedder) as app:
        service = NoteService(app)
        first = await add(service, app, "Rotate the staging database password every quarter")
        # the job's first batch (this note alone) is now held at the gate; the next
        # notes queue behind it, as in a burst
        await asyncio.wait_for(embedder.waiting.wait(), 60)
        wanted = await add(service, app, "The zorblax cache key uses the tenant prefix")
        other = await add(service, app, "Nightly backups of the ledger go to cold storage")
        assert await app.index.present([point_id("note", wanted)]) == {
            point_id("note", wanted): False
        }

        scope = settings_scope(app.settings)
        response = await service.search(scope, NoteQuery(query="zorblax cache key", top=3))
        assert response.results[0].id == wanted
        assert response.results[0].distance is not None
        assert embedder.now == ["The zorblax cache key uses the tenant prefix"]

        embedder.gate.set()
        await asyncio.wait_for(app.settle(), 120)
        # the job embedded the other two and not the one the search already had
        assert sorted(embedder.documents) == sorted(
            [
                "Rotate the staging database password every quarter",
                "Nightly backups of the ledger go to cold storage",
            ]
        )
        present = await app.index.present([point_id("note", n) for n in (first, wanted, other)])
        assert set(present.values()) == {True}


def test_choose_respects_count_size_and_budget() -> None:
    limits = FreshLimits(top=3, max_bytes=500, budget_ms=60)
    # 0.2 ms a byte: 100 bytes cost 20 ms
    assert choose([100, 100, 100], limits, 0.2) == [0, 1, 2]
    assert choose([100, 100, 100, 100], limits, 0.2) == [0, 1, 2]  # at most top
    assert choose([600, 100], limits, 0.01) == [1]  # over max_bytes: left to the job
    assert choose([200, 200, 50], limits, 0.2) == [0, 2]  # 40 + 40 > 60: skip, not stop
    assert choose([100, 100], limits, 1.0) == []  # a busy machine: nothing fits
    assert choose([100], FreshLimits(top=0), 0.2) == []


async def test_an_embedding_failure_leaves_the_search_lexical(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    embedder = GatedEmbedder()
    embedder.now_fails = True
    async with gated_app(tmp_path, monkeypatch, embedder) as app:
        service = NoteService(app)
        await add(service, app, "Rotate the staging database password every quarter")
        await asyncio.wait_for(embedder.waiting.wait(), 60)  # the job is held
        wanted = await add(service, app, "The zorblax cache key uses the tenant prefix")
        scope = settings_scope(app.settings)
        response = await service.search(scope, NoteQuery(query="zorblax cache key", top=3))
        # the optional step failed; the search still answers from the lexical channel
        assert response.results[0].id == wanted
        assert response.results[0].distance is None
        assert await app.vectors.get("note", app.embedder.model_id, [wanted]) == {}
