"""The default ranking fuses the further dense channels (``static_use`` and ``minilm``,
docs/ranking.md), through the real MCP door: a fresh default server finds by meaning
what e5 with BM25 alone ranks below unrelated notes, and says which channels ranked the
answer; a data dir made without the channels keeps answering while the owner builds
them in the background, and loses nothing.

Real stores, the real models (MiniLM is a core dependency), real ``kioku serve``
processes over stdio for the upgrade.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from mcp import Client

from mcp_gateway.common.settings import KiokuSettings
from mcp_gateway.services.app import open_app
from tests.conftest import Harness
from tests.realproc import stdio_client
from tests.test_reindex import add_notes

DEFAULT_CHANNELS = ["static_use", "minilm"]

# An English store an assistant could have written; the last note is the answer to a
# question that shares none of its words.
OLD_NOTES = [
    "Deploys go out on Tuesdays after the staging smoke tests pass.",
    "Log timestamps are written in UTC, never in local time.",
    "The Qiita API answers 429 Too Many Requests when many updates are sent in a row.",
    "The printer on floor three jams whenever glossy paper is used.",
]


async def search(client: Client, query: str, top: int = 5) -> dict[str, Any]:
    res = await client.call_tool("search_memory", {"query": query, "top": top})
    assert not res.is_error, res.content[0].text  # type: ignore[union-attr]
    return res.structured_content or {}


async def test_default_settings_name_both_channels() -> None:
    embedder = KiokuSettings().embedder
    assert embedder.channels == DEFAULT_CHANNELS
    assert embedder.minilm_int8


async def test_a_fresh_default_server_says_the_channels_ranked_its_answer(
    harness: Harness,
) -> None:
    for text in OLD_NOTES:
        await harness.ok("add_note", text=text)
    await harness.settle()
    data = await harness.ok("search_memory", query="copier gets stuck with shiny sheets", top=3)
    assert data["results"][0]["text"] == OLD_NOTES[3]
    assert data["channels"] == DEFAULT_CHANNELS
    # MiniLM reads Latin script only: a Japanese query is ranked without it
    data = await harness.ok("search_memory", query="光沢紙でプリンターが詰まる", top=3)
    assert data["channels"] == ["static_use"]


async def test_a_data_dir_without_channels_gains_them_in_the_background(tmp_path: Path) -> None:
    """An upgrade: the data dir was made when the channels were off. The owner serves at
    once (without the channels), builds them beside the live index, and a note added
    meanwhile is not lost."""
    data = tmp_path / "data"
    before = KiokuSettings(data_dir=data, redis_url=None, embedder={"channels": []})  # type: ignore[arg-type]
    async with open_app(before) as app:
        await add_notes(app, OLD_NOTES)
        await app.settle()
        assert app.index.spec.channels == ()
    async with stdio_client(data) as client:
        first = await search(client, "glossy paper jams the printer")
        assert first["results"][0]["text"] == OLD_NOTES[3]  # answered before any build
        added = "Backups of the billing database run nightly at 02:00 UTC."
        res = await client.call_tool("add_note", {"text": added})
        assert not res.is_error
        deadline = time.monotonic() + 180
        data_now = first
        while data_now["channels"] != DEFAULT_CHANNELS and time.monotonic() < deadline:
            await asyncio.sleep(1)
            data_now = await search(client, "copier gets stuck with shiny sheets")
        assert data_now["channels"] == DEFAULT_CHANNELS, "the channels were never built"
        assert data_now["results"][0]["text"] == OLD_NOTES[3]
        # every note, the one added during the build too, is in the rebuilt index
        for text in [*OLD_NOTES, added]:
            found = await search(client, text)
            assert found["results"][0]["text"] == text
