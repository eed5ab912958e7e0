"""Sealing the embedded index below exact search's size (``index.seal_every``): the
out-of-process build (``rebuild/build.py --seal``) makes optimised segments with no
graph, whose sparse indexes and dense vectors are mapped from their files instead of
held in the owner's heap (``index/edge_graph.py``), and the owner swaps it in.

Real components: SQLite, the embedded Qdrant engine in the owner and in a real build
process, the bundled models; the last test a real ``kioku serve`` killed with SIGKILL.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import anyio
import pytest

import mcp_gateway.services.reindex as reindex_module
from mcp_gateway.common.sections import IndexSettings
from mcp_gateway.common.types import point_id
from mcp_gateway.index.edge_graph import Marker, graph_due, read_marker
from mcp_gateway.search.request import SearchRequest
from mcp_gateway.services import Services
from mcp_gateway.services.app import AppContext, open_app
from tests.realproc import db_rows, held_clients, kill_daemon, stdio_params, wait_until
from tests.test_reindex import add_notes, settings_for

TOPICS = ["retry budget", "database migration", "cache eviction", "deploy rollback", "login"]
TEXTS = [f"{t}: observation {i} about the {t} of service {i % 7}" for i in range(6) for t in TOPICS]
QUERIES = ["how many retries", "schema change in postgres", "evicting stale cache entries"]
SEAL_EVERY = 20


def seal_settings(data: Path):
    # exact search at the shipped size (no graph), a seal every SEAL_EVERY points
    return settings_for(data, index=IndexSettings(seal_every=SEAL_EVERY, graph_check_s=0))


async def ranked(app: AppContext, query: str) -> list[tuple[str, float]]:
    found = await app.search.search(SearchRequest(query, namespaces=("default",), top=10))
    return [(r.id, round(r.score, 4)) for r in found.results]


def placement(collection: Path) -> list[dict[str, object]]:
    """Each stored segment's vector placement: sparse index type, dense storage, graph m."""
    out: list[dict[str, object]] = []
    for seg in sorted((collection / "segments").glob("*/segment.json")):
        config = json.loads(seg.read_text())["config"]
        dense = config["vector_data"]
        sparse = config.get("sparse_vector_data", {})
        out.append(
            {
                "sparse": sorted({v["index"]["index_type"] for v in sparse.values()}),
                "dense": sorted({v["storage_type"] for v in dense.values()}),
                "m": sorted({v["index"].get("options", {}).get("m", -1) for v in dense.values()}),
            }
        )
    return out


SEALED = {"sparse": ["Mmap"], "dense": ["Mmap"], "m": [0]}


def test_a_seal_is_due_every_seal_every_points_below_exact_search() -> None:
    assert not graph_due(19, Marker(), 20_000, seal_every=20)
    assert graph_due(20, Marker(), 20_000, seal_every=20)
    assert not graph_due(5_000, Marker(), 20_000, seal_every=0)  # off
    sealed = Marker(points=100, written=0, graph=False)
    assert not graph_due(119, sealed, 20_000, seal_every=20)
    assert graph_due(120, sealed, 20_000, seal_every=20)
    assert graph_due(100, Marker(100, 20, False), 20_000, seal_every=20)  # written again
    # at exact search's size a sealed collection wants its graph, whatever was sealed
    assert graph_due(20_000, Marker(19_999, 0, False), 20_000, seal_every=20)
    assert not graph_due(20_000, Marker(19_999, 0, True), 20_000, seal_every=20)
    # a marker from before seals was a graph build's
    assert Marker(5, 0).graph


async def test_a_seal_maps_the_points_and_answers_as_before(tmp_path: Path) -> None:
    settings = seal_settings(tmp_path / "data")
    collection = settings.index_path / "edge" / "kioku-2"
    async with open_app(settings, run_jobs=False) as app:
        await add_notes(app, TEXTS)
        before = {q: await ranked(app, q) for q in QUERIES}
        assert all(before.values())
        assert await app.index.wants_graph()
        status = await Services.over(app).rebuild.rebuild(outside=True)
        assert status.state == "done", status.message
        assert status.out_of_process and status.graph_points == 0
        assert app.index.spec.collection == "kioku-2"
        assert getattr(app.index.current, "sealed_points", 0) == len(TEXTS)
        assert not await app.index.wants_graph()
        assert {q: await ranked(app, q) for q in QUERIES} == before
    # every point in one optimised segment: sparse indexes and vectors mapped, no graph
    # and no int8 copies (the graph build's); the engine adds an empty appendable one
    assert SEALED in placement(collection)
    assert "quantization_config" not in (collection / "edge_config.json").read_text()
    assert read_marker(collection) == Marker(len(TEXTS), 0, graph=False)
    async with open_app(settings, run_jobs=False) as app:  # reopened as it was sealed
        assert getattr(app.index.current, "sealed_points", 0) == len(TEXTS)
        assert getattr(app.index.current, "graph_points", -1) == 0
        assert {q: await ranked(app, q) for q in QUERIES} == before
        assert not await app.index.wants_graph()
        await add_notes(app, [f"later note {i} on the billing export" for i in range(SEAL_EVERY)])
        assert await app.index.wants_graph()  # the next seal is due
    assert SEALED in placement(collection)


async def test_a_seal_waits_for_notes_still_being_embedded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A note the build reads before its vector lands would be written again after the
    swap, out of the sealed segment: the owner's check waits for the backlog, not
    forever."""
    settings = seal_settings(tmp_path / "data")
    async with open_app(settings, run_jobs=False) as app:
        rebuilder = Services.over(app).rebuild
        await add_notes(app, TEXTS[: SEAL_EVERY - 1])
        assert not await rebuilder.build_wanted()  # not due
        await add_notes(app, TEXTS[SEAL_EVERY - 1 : SEAL_EVERY])
        assert await rebuilder.build_wanted()
        await add_notes(app, ["a note committed, its vector not yet written"], embed=False)
        assert await app.index.wants_graph()
        assert not await rebuilder.build_wanted()  # due, but a note waits
        monkeypatch.setattr(reindex_module, "SEAL_WAIT_S", 0.0)
        assert await rebuilder.build_wanted()  # waited long enough


async def set_priors(app: AppContext, priors: dict[str, float]) -> None:
    """Priors as the priors job writes them (one timestamp a run), then applied."""
    now = time.time()
    await app.db.transaction(
        lambda c: c.executemany(
            "INSERT INTO note_priors(note_id, prior, updated_at) VALUES (?, ?, ?) "
            "ON CONFLICT(note_id) DO UPDATE SET prior = excluded.prior, "
            "updated_at = excluded.updated_at",
            [(nid, prior, now) for nid, prior in priors.items()],
        )
    )
    await app.applier.apply_pending()


async def test_a_rebuild_keeps_the_priors_it_built_in_sealed(tmp_path: Path) -> None:
    """The fill writes each note's prior: after the swap the applier applies only the
    priors written since, so the sealed points stay in the sealed segment."""
    settings = seal_settings(tmp_path / "data")
    async with open_app(settings, run_jobs=False) as app:
        ids = await add_notes(app, TEXTS[:SEAL_EVERY])
        await set_priors(app, {ids[0]: 0.5, ids[1]: 2.0})
        status = await Services.over(app).rebuild.rebuild(outside=True)
        assert status.state == "done", status.message
        index = app.index.current
        assert getattr(index, "sealed_points", 0) == SEAL_EVERY
        assert getattr(index, "written_since_graph", -1) == 0  # none written again
        pids = [point_id("note", n) for n in ids[:3]]
        payloads = await app.index.payloads(pids)
        assert [payloads[p].get("prior") for p in pids] == [0.5, 2.0, None]
        await anyio.sleep(0.01)  # a later run of the priors job: a later timestamp
        await set_priors(app, {ids[2]: 0.25})
        assert (await app.index.payloads(pids[2:]))[pids[2]]["prior"] == 0.25
        assert getattr(index, "written_since_graph", -1) == 1


@pytest.mark.slow
async def test_acknowledged_notes_survive_a_kill_after_a_seal(tmp_path: Path) -> None:
    """A real owner seals by itself (``watch_graph``), takes more notes and is killed
    with SIGKILL: every acknowledged note is found by the owner started after."""
    data = tmp_path / "data"
    params = stdio_params(
        data, KIOKU_INDEX__SEAL_EVERY=str(SEAL_EVERY), KIOKU_INDEX__GRAPH_CHECK_S="0.5"
    )
    acked: dict[str, str] = {}

    async def add(client, word: str) -> None:
        res = await client.call_tool("add_note", {"text": f"sealed note about {word}"})
        assert not res.is_error, res.content
        acked[res.structured_content["id"]] = word

    def live() -> str:
        rows = db_rows(data, "SELECT value FROM meta WHERE key = 'index.active'")
        return str(rows[0][0]) if rows else ""

    try:
        async with held_clients([params]) as (client,):
            for i in range(SEAL_EVERY + 5):
                await add(client, f"zq{i:03d}alpha")
            assert await asyncio.to_thread(wait_until, lambda: live() == "kioku-2", 240)
            for i in range(8):  # into the sealed collection's plain segment
                await add(client, f"zq{i:03d}omega")
            await asyncio.to_thread(kill_daemon, data)
            for nid, word in acked.items():  # the next call starts the owner again
                found = await client.call_tool("search_memory", {"query": word, "top": 5})
                assert nid in {r["id"] for r in found.structured_content["results"]}, word
        marker = read_marker(data / "index" / "edge" / "kioku-2")
        assert marker.points >= SEAL_EVERY and not marker.graph
    finally:
        kill_daemon(data)
