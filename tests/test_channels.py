"""Further dense channels (``embedder.channels``): USE v3 (or a static table) beside e5,
one index.

Real stores and models throughout: SQLite, the embedded Qdrant engine, the bundled e5
model and the USE package (the ``use`` extra, installed with ``dev``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from mcp_gateway.common.errors import EmbedderUnavailable
from mcp_gateway.common.settings import KiokuSettings
from mcp_gateway.common.types import IndexFilter, SparseVector, point_id
from mcp_gateway.embedders import use as use_module
from mcp_gateway.embedders.static_channels import TABLES
from mcp_gateway.embedders.use import MODEL_ID as USE_MODEL
from mcp_gateway.embedders.use import UseEmbedder
from mcp_gateway.search.service import SearchRequest
from mcp_gateway.services import Services
from mcp_gateway.services.app import open_app
from tests.test_reindex import add_notes

TEXTS = [
    "The printer on floor three jams whenever glossy paper is used.",
    "The Qiita API answers 429 Too Many Requests when many updates are sent in a row.",
    "Deploys go out on Tuesdays after the staging smoke tests pass.",
    "Log timestamps are written in UTC, never in local time.",
]


def settings_for(data_dir: Path, channels: list[str]) -> KiokuSettings:
    return KiokuSettings(
        data_dir=data_dir,
        redis_url=None,
        qdrant_url=None,
        # no drafts: a drafted vector is embedded again exactly later, whatever the
        # channels (the reindex test counts e5 vectors written)
        # the float MiniLM graph: these tests name its model id (the default's int8
        # graph is tested through the door, test_default_channels.py)
        embedder={"channels": channels, "draft_backlog": 0, "minilm_int8": False},  # type: ignore[arg-type]
    )


async def test_a_note_gets_both_channels_and_search_fuses_them(tmp_path: Path) -> None:
    async with open_app(settings_for(tmp_path / "data", ["use"])) as app:
        assert [c.name for c in app.index.spec.channels] == ["use"]
        ids = await add_notes(app, TEXTS)
        # the fast channel comes with the first point, before the note's job has run
        await app.writes.caught_up()
        fast = await app.vectors.get("note", USE_MODEL, ids)
        assert set(fast) == set(ids) and all(len(r.vector) == 512 for r in fast.values())
        await app.settle()
        main = await app.vectors.get("note", app.embedder.model_id, ids)
        assert set(main) == set(ids)
        query = (await app.channels[0].embedder.embed_query("copier stuck with shiny sheets"))[:]
        found = await app.index.search_channels(
            None, SparseVector([], []), IndexFilter(), 4, channel_queries={"use": query}
        )
        assert found.extra["use"][0].id == point_id("note", ids[0])
        # the point written last (e5's) still carries the USE vector: each write is whole
        assert len(found.extra["use"]) == len(ids)
        response = await app.search.search(
            SearchRequest("copier gets stuck with shiny sheets", namespaces=("default",))
        )
        assert response.results and response.results[0].id == ids[0]


@pytest.mark.slow  # ~10 s on 2 busy cores
@pytest.mark.parametrize(
    ("channel", "model", "query"),
    [
        ("use", USE_MODEL, "glossy paper jams"),
        ("static_use", TABLES["static_use"][0], "printer paper jams"),  # a packaged table
    ],
)
async def test_reindex_adds_and_drops_a_channel_without_embedding_e5_again(
    tmp_path: Path, channel: str, model: str, query: str
) -> None:
    data = tmp_path / "data"
    async with open_app(settings_for(data, [])) as app:
        ids = await add_notes(app, TEXTS)
        await app.settle()
        assert not app.index.spec.channels
    async with open_app(settings_for(data, [channel]), run_jobs=False) as app:
        before = await app.vectors.get("note", app.embedder.model_id, ids)
        assert not app.index.spec.channels  # an index cannot gain a channel in place
        status = await Services.over(app).rebuild.rebuild()
        assert status.state == "done", status.message
        assert status.embedded == 0  # e5 read back from the truth store
        assert [c.name for c in app.index.spec.channels] == [channel]
        after = await app.vectors.get("note", app.embedder.model_id, ids)
        assert {k: v.seq for k, v in after.items()} == {k: v.seq for k, v in before.items()}
        assert set(await app.vectors.get("note", model, ids)) == set(ids)
        vector = await app.channels[0].embedder.embed_query(query)
        found = await app.index.search_channels(
            None, SparseVector([], []), IndexFilter(), 4, channel_queries={channel: vector}
        )
        assert {h.id for h in found.extra[channel]} == {point_id("note", n) for n in ids}
    async with open_app(settings_for(data, []), run_jobs=False) as app:
        assert [c.name for c in app.index.spec.channels] == [channel]  # kept until reindex
        status = await Services.over(app).rebuild.rebuild()
        assert status.state == "done", status.message and status.embedded == 0
        assert not app.index.spec.channels
        after = await app.vectors.get("note", app.embedder.model_id, ids)
        assert {k: v.seq for k, v in after.items()} == {k: v.seq for k, v in before.items()}
        present = await app.index.present([point_id("note", n) for n in ids])
        assert all(present.values()) and len(present) == len(ids)


async def test_the_channel_not_installed_is_one_actionable_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def missing(name: str) -> object:
        raise ImportError(f"No module named {name!r}")

    monkeypatch.setattr(use_module.importlib, "import_module", missing)
    with pytest.raises(EmbedderUnavailable) as caught:
        await UseEmbedder().start()
    assert "pip install 'kioku[use]'" in str(caught.value) and "\n" not in str(caught.value)
