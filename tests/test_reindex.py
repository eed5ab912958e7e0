"""Blue/green rebuilds, orphan points, and notes deleted while they are embedded.

Real stores throughout: SQLite, the embedded Qdrant engine, the bundled e5 model (and
an HTTP stub of Ollama's API for an embedder of another dimension).
"""

from __future__ import annotations

import asyncio
import signal
import subprocess
import time
import uuid
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import pytest

import mcp_gateway.services.app as app_module
from mcp_gateway.common.access import settings_scope
from mcp_gateway.common.inputs import NoteFields
from mcp_gateway.common.settings import KiokuSettings
from mcp_gateway.common.types import IndexFilter, SparseVector, point_id
from mcp_gateway.embedders.base import Encoded
from mcp_gateway.index import catalog
from mcp_gateway.search.request import SearchRequest
from mcp_gateway.services import Services
from mcp_gateway.services.app import AppContext, open_app
from tests.realproc import KIOKU, interruptible, kioku_env
from tests.test_embedders_ollama import StubOllama, ollama_stub, stub  # noqa: F401
from tests.test_queue_contract import CountingEmbedder


def settings_for(data_dir: Path, **extra: object) -> KiokuSettings:
    return KiokuSettings(data_dir=data_dir, redis_url=None, qdrant_url=None, **extra)  # type: ignore[arg-type]


async def add_notes(app: AppContext, texts: Sequence[str], *, embed: bool = True) -> list[str]:
    services = Services.over(app)
    ids = []
    for text in texts:
        if embed:
            fields = NoteFields(text=text, type="knowledge")
            ids.append((await services.notes.store(fields, "default")).id)
        else:  # committed and lexically indexed, never embedded (a large import, say)
            note = await app.notes.add(NoteFields(text=text, type="knowledge"), namespace="default")
            await app.indexer.put_lexical(note)
            ids.append(note.id)
    return ids


TEXTS = [f"note {i}: the {w} service needs a retry budget" for i, w in enumerate("abcdefghij")]


@pytest.fixture
async def counted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[CountingEmbedder]:
    embedder = CountingEmbedder()
    monkeypatch.setattr(app_module, "build_embedder", lambda _s: embedder)
    yield embedder


async def test_reindex_reuses_stored_vectors_and_swaps(
    tmp_path: Path, counted, database_location: Path | str
) -> None:
    # on PostgreSQL the build process gets the URL through its environment
    url = database_location if isinstance(database_location, str) else None
    settings = settings_for(tmp_path / "data", database_url=url)
    async with open_app(settings, run_jobs=False) as app:
        ids = await add_notes(app, TEXTS)
        calls = counted.calls
        status = await Services.over(app).rebuild.rebuild()
        assert status.state == "done", status.message
        assert counted.calls == calls  # nothing re-embedded: vectors come from SQLite
        assert status.collection == "kioku-2" == app.index.spec.collection
        present = await app.index.present([point_id("note", n) for n in ids])
        assert all(present.values()) and len(present) == len(ids)
        assert (await catalog.live_info(app.db, settings)).collection == "kioku-2"
    assert [p.name for p in (settings.index_path / "edge").iterdir()] == ["kioku-2"]


async def test_reindex_brings_latent_terms_to_an_older_data_dir(tmp_path: Path) -> None:
    """A data dir made without latent terms (before round 5, or with them off) keeps
    searching with BM25 when they are turned on; ``kioku reindex`` embeds what lacks
    terms, builds a collection with their vector and search uses them from then on."""
    data = tmp_path / "data"
    async with open_app(settings_for(data, embedder={"latent_terms": False})) as app:
        ids = await add_notes(app, TEXTS)
        await app.settle()
        assert not app.index.spec.latent
        rows = await app.vectors.get("note", app.embedder.model_id, ids)
        assert all(r.terms is None for r in rows.values()) and len(rows) == len(ids)
    async with open_app(settings_for(data), run_jobs=False) as app:
        assert app.embedder.latent_terms and not app.index.spec.latent  # cannot gain it
        doctor = {c["name"]: c for c in await Services.over(app).maintenance.doctor()}
        assert not doctor["latent"]["ok"] and "kioku reindex" in doctor["latent"]["detail"]
        request = SearchRequest("retry budget", namespaces=("default",))
        assert (await app.search.search(request)).results
        status = await Services.over(app).rebuild.rebuild()
        assert status.state == "done" and status.embedded == len(TEXTS)
        assert app.index.spec.latent
        doctor = {c["name"]: c for c in await Services.over(app).maintenance.doctor()}
        assert doctor["latent"]["ok"]
        rows = await app.vectors.get("note", app.embedder.model_id, ids)
        assert all(r.terms is not None and r.terms.indices for r in rows.values())
        query = (await app.embedder.encode_query("retry budget")).terms
        found = await app.index.search_channels(
            None, SparseVector([], []), IndexFilter(), 20, latent=query
        )
        assert {h.id for h in found.latent} == {point_id("note", n) for n in ids}
    async with open_app(settings_for(data), run_jobs=False) as app:
        assert app.index.spec.latent  # the adopted collection reopens with its vector


async def test_dimension_switch_by_reindex_and_back(
    tmp_path: Path,
    ollama_stub: tuple[StubOllama, str],  # noqa: F811
) -> None:
    _, url = ollama_stub
    data = tmp_path / "data"
    async with open_app(settings_for(data), run_jobs=False) as app:
        await add_notes(app, TEXTS)
    ollama = settings_for(
        data, embedder={"provider": "ollama", "ollama_host": url, "ollama_model": "stub"}
    )
    async with open_app(ollama, run_jobs=False) as app:
        # configured 8-d Ollama, live index 384-d e5: search stays lexical meanwhile
        before = await app.search.search(SearchRequest("retry budget", namespaces=("default",)))
        assert not before.dense_available and before.results
        status = await Services.over(app).rebuild.rebuild()
        assert status.state == "done" and status.embedded == len(TEXTS)
        assert app.index.spec.dim == 8 and app.index.spec.model_id == "ollama/stub"
        after = await app.search.search(SearchRequest("retry budget", namespaces=("default",)))
        assert after.dense_available and after.results
    async with open_app(settings_for(data), run_jobs=False) as app:
        status = await Services.over(app).rebuild.rebuild()
        # the e5 vectors were kept in the truth store: switching back embeds nothing
        assert status.state == "done" and status.embedded == 0
        assert app.index.spec.model_id == app.embedder.model_id


async def test_failed_reindex_leaves_the_live_index(tmp_path: Path, counted) -> None:
    settings = settings_for(tmp_path / "data")
    async with open_app(settings, run_jobs=False) as app:
        ids = await add_notes(app, TEXTS, embed=False)
        counted.poison = "note 7"  # the rebuild must embed, and one text cannot be
        status = await Services.over(app).rebuild.rebuild()
        assert status.state == "failed"
        assert app.index.spec.collection == "kioku"
        assert await app.index.count() == len(ids)
    assert [p.name for p in (settings.index_path / "edge").iterdir()] == ["kioku"]


@pytest.mark.slow
def test_sigint_mid_reindex_leaves_every_note_searchable(tmp_path: Path) -> None:
    data = tmp_path / "data"
    n = 600

    async def prepare() -> None:
        async with open_app(settings_for(data), run_jobs=False) as app:
            await add_notes(
                app,
                [f"unembedded note {uuid.uuid4().hex} number {i}" for i in range(n)],
                embed=False,
            )

    asyncio.run(prepare())
    proc = subprocess.Popen(
        [KIOKU, "reindex"],
        env=kioku_env(data),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=interruptible,
    )
    deadline = time.monotonic() + 120
    while not list((data / "index" / "edge").glob("kioku-2")):
        assert proc.poll() is None and time.monotonic() < deadline
        time.sleep(0.05)
    time.sleep(1.0)  # mid-way: 600 notes take far longer than this to embed
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode != 0, "the reindex should have been interrupted"
    assert b"Traceback" not in err

    async def check() -> None:
        settings = settings_for(data)
        async with open_app(settings, run_jobs=False) as app:
            assert app.index.spec.collection == "kioku"  # still the live one
            assert await app.index.count() == n
            found = await app.search.search(
                SearchRequest("unembedded note number 17", top=50, namespaces=("default",))
            )
            assert found.results
        assert [p.name for p in (settings.index_path / "edge").iterdir()] == ["kioku"]

    asyncio.run(check())


class EnteredEmbedder(CountingEmbedder):
    """Signals when a document batch reaches the model, then waits for the gate."""

    def __init__(self) -> None:
        super().__init__()
        self.entered = asyncio.Event()

    async def encode_documents(self, texts: Sequence[str], *, now: bool = False) -> list[Encoded]:
        if not now:
            self.entered.set()
        return await super().encode_documents(texts, now=now)


async def test_note_deleted_during_embedding_leaves_no_point(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    embedder = EnteredEmbedder()
    embedder.gate = asyncio.Event()
    monkeypatch.setattr(app_module, "build_embedder", lambda _s: embedder)
    settings = settings_for(tmp_path / "data")
    scope = settings_scope(settings)
    async with open_app(settings) as app:
        await app.reconciled.wait()
        services = Services.over(app)
        kept = await services.notes.store(NoteFields(text="kept"), "default")
        gone = await services.notes.store(NoteFields(text="forgotten"), "default")
        await asyncio.wait_for(embedder.entered.wait(), 60)  # both texts are being embedded
        await services.notes.delete(scope, gone.id)
        embedder.gate.set()
        await app.settle()
        await app.reconcile()
        present = await app.index.present([point_id("note", kept.id), point_id("note", gone.id)])
        assert present == {point_id("note", kept.id): True}
        assert await app.vectors.get("note", app.embedder.model_id, [gone.id]) == {}
