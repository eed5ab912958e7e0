"""The out-of-process HNSW build (``rebuild/build.py``) and its swap into the owner.

Real components: SQLite, the embedded Qdrant engine in the owner and in a real build
process (``python -m mcp_gateway.rebuild.build``), the bundled e5 model. A build is held
at its start by a shell wrapper waiting for a file, so writes can be made "during" it
without any timing assumption.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest

import mcp_gateway.services.reindex as reindex_module
from mcp_gateway.common.access import settings_scope
from mcp_gateway.common.inputs import NoteChanges
from mcp_gateway.common.sections import IndexSettings
from mcp_gateway.common.types import IndexFilter, SparseVector, point_id
from mcp_gateway.index import catalog
from mcp_gateway.index.edge_graph import GRAPH_FILE
from mcp_gateway.search.request import SearchRequest
from mcp_gateway.services import Services
from mcp_gateway.services.app import AppContext, open_app
from tests.test_reindex import add_notes, settings_for

TOPICS = ["retry budget", "database migration", "cache eviction", "deploy rollback", "login"]
TEXTS = [f"{t}: observation {i} about the {t} of service {i % 7}" for i in range(8) for t in TOPICS]
QUERIES = ["how many retries", "schema change in postgres", "evicting stale cache entries"]


def graph_settings(data: Path):
    # every collection "outgrows" exact search: rebuilds go out of process
    return settings_for(data, index=IndexSettings(exact_search_below=1, graph_check_s=0))


async def until(condition: Callable[[], bool]) -> None:
    """Poll a condition another process makes true (no time limit of ours: pytest's)."""
    for _ in range(100_000):
        if condition():
            return
        await anyio.sleep(0.02)
    raise AssertionError("never happened")


async def dense_top(app: AppContext, query: str, k: int = 5) -> list[str]:
    vec = await app.embedder.embed_query(query)
    hits, _ = await app.index.search(vec, SparseVector([], []), IndexFilter(), k)
    return [h.id for h in hits]


def gate(monkeypatch: pytest.MonkeyPatch, go: Path, *, before: bool) -> None:
    """Build processes wait for ``go`` to exist before they start (``before``) or, their
    collection complete, before they exit."""
    real: Callable[..., list[str]] = reindex_module.build_command
    wait = 'while [ ! -f "$0" ]; do sleep 0.05; done'
    script = f'{wait}; exec "$@"' if before else f'"$@"; code=$?; {wait}; exit $code'

    def wrapped(*args: object) -> list[str]:
        return ["sh", "-c", script, str(go), *real(*args)]

    monkeypatch.setattr(reindex_module, "build_command", wrapped)


async def test_built_graph_answers_like_exact_search(tmp_path: Path) -> None:
    settings = graph_settings(tmp_path / "data")
    async with open_app(settings, run_jobs=False) as app:
        await add_notes(app, TEXTS)
        before = {q: await dense_top(app, q) for q in QUERIES}  # plain segments: exact
        status = await Services.over(app).rebuild.rebuild()
        assert status.state == "done", status.message
        assert status.out_of_process and status.graph_points == len(TEXTS)
        assert app.index.spec.collection == "kioku-2"
        assert getattr(app.index.current, "graph_points", 0) == len(TEXTS)
        after = {q: await dense_top(app, q) for q in QUERIES}
        assert after == before
    assert [p.name for p in (settings.index_path / "edge").iterdir()] == ["kioku-2"]
    # the graph walks int8 copies of the vectors (and rescores: same answers as above)
    stored = (settings.index_path / "edge" / "kioku-2" / "edge_config.json").read_text()
    assert '"quantization_config":{"scalar":{"type":"int8"' in stored
    # a restarted owner opens the graph built with the build's own parameters
    async with open_app(settings, run_jobs=False) as app:
        assert getattr(app.index.current, "graph_points", 0) == len(TEXTS)
        assert {q: await dense_top(app, q) for q in QUERIES} == before


async def test_a_float32_collection_is_kept_until_reindex_converts_it(tmp_path: Path) -> None:
    """A data dir made before round 15 stores float32 vectors: the owner opens it as it
    is under the turbo16 default (the engine refuses a config that differs), and
    `kioku reindex` (the build process) makes the new collection turbo16, same answers."""
    data = tmp_path / "data"
    old = settings_for(data, index=IndexSettings(exact_search_below=1, dense_storage="float32"))
    async with open_app(old, run_jobs=False) as app:
        await add_notes(app, TEXTS)
        before = {q: await dense_top(app, q) for q in QUERIES}
    settings = graph_settings(data)
    assert settings.index.dense_storage == "turbo16"  # the shipped default
    async with open_app(settings, run_jobs=False) as app:
        assert getattr(app.index.current, "dense_storage", None) == "float32"
        assert {q: await dense_top(app, q) for q in QUERIES} == before
        status = await Services.over(app).rebuild.rebuild()
        assert status.state == "done", status.message
        assert getattr(app.index.current, "dense_storage", None) == "turbo16"
        assert {q: await dense_top(app, q) for q in QUERIES} == before
    stored = (settings.index_path / "edge" / "kioku-2" / "edge_config.json").read_text()
    assert '"datatype":"turbo16"' in stored
    async with open_app(settings, run_jobs=False) as app:  # and it reopens as turbo16
        assert getattr(app.index.current, "dense_storage", None) == "turbo16"


async def test_writes_during_the_build_are_not_lost(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    go = tmp_path / "go"
    gate(monkeypatch, go, before=False)
    settings = graph_settings(tmp_path / "data")
    scope = settings_scope(settings)
    async with open_app(settings, run_jobs=False) as app:
        services = Services.over(app)
        ids = await add_notes(app, TEXTS[:10])
        async with anyio.create_task_group() as tg:
            tg.start_soon(services.rebuild.rebuild)
            marker = settings.index_path / "edge" / "kioku-2" / GRAPH_FILE
            await until(marker.exists)
            # the build process has read SQLite and built its graph but not exited: all
            # of this is written during the build, into the live index only
            added = await add_notes(app, ["zebra migration happened on tuesday night"])
            await services.notes.delete(scope, ids[0])
            await services.notes.update(
                scope, ids[1], NoteChanges(text="kangaroo payroll bug in march")
            )
            await services.notes.update(scope, ids[2], NoteChanges(type="lesson"))  # payload only
            go.touch()
        assert services.rebuild.status.state == "done", services.rebuild.status.message
        assert app.index.spec.collection == "kioku-2"
        live = [*ids[1:], *added]
        present = await app.index.present([point_id("note", n) for n in live])
        assert present == {point_id("note", n): True for n in live}  # all with dense vectors
        assert point_id("note", ids[0]) not in await app.index.ids()
        assert await app.index.count() == len(live)
        # a payload-only change has no new vector: only the journal replay carries it
        vec = await app.embedder.embed_query(TEXTS[2])
        lessons, _ = await app.index.search(
            vec, SparseVector([], []), IndexFilter(types=("lesson",)), 5
        )
        assert [h.id for h in lessons] == [point_id("note", ids[2])]
        for query, want in (("zebra migration", added[0]), ("kangaroo payroll", ids[1])):
            found = await app.search.search(SearchRequest(query, namespaces=("default",)))
            assert found.results and found.results[0].id == want


@pytest.mark.slow
async def test_killed_build_leaves_the_live_index_serving(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    go = tmp_path / "go"
    gate(monkeypatch, go, before=True)
    settings = graph_settings(tmp_path / "data")
    async with open_app(settings, run_jobs=False) as app:
        services = Services.over(app)
        await add_notes(app, TEXTS[:10])
        async with anyio.create_task_group() as tg:
            tg.start_soon(services.rebuild.rebuild)
            await until(lambda: bool(services.rebuild.status.build_pid))
            go.touch()
            target = settings.index_path / "edge" / "kioku-2"
            await until(target.exists)  # the build process has created its collection
            os.kill(services.rebuild.status.build_pid, signal.SIGKILL)
        status = services.rebuild.status
        assert status.state == "failed" and "status -9" in status.message
        assert app.index.spec.collection == "kioku"
        assert (await catalog.live_info(app.db, settings)).collection == "kioku"
        assert await app.index.count() == 10
        found = await app.search.search(SearchRequest("retry budget", namespaces=("default",)))
        assert found.results
    assert [p.name for p in (settings.index_path / "edge").iterdir()] == ["kioku"]
