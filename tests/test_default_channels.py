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


# A paraphrase from the generated quality set (dev, query q137) with the ten memories e5
# and BM25 alone ranked above its answer there (bench/quality/data): off the channels the
# answer is not in the top 5 of this store; with them it is first.
PARAPHRASE = "sharing a real person's contact details in a public ticket while debugging"
ANSWER = (
    "Never paste production customer data into chat, an issue or a prompt. I pasted a failing "
    "row with an email address and phone number into a GitHub issue; it had to be purged and "
    "reported to the privacy officer. Reproduce with the anonymised fixtures instead."
)
AROUND = [
    ("Note to self: the request logger in api/middleware.py dumped full JSON bodies, including "
     "email and phone, into Loki. Bodies are now logged only at DEBUG and through redact_pii(); "
     "check new log lines with the pii-scan CI step before merging.", "lesson", ""),
    ("บั๊กที่ฝ่าย support เจอจะส่งมาทาง Google Form แล้วไปขึ้นในช่อง #support-bugs", "knowledge", ""),
    ("alert ของ staging ส่งเข้าช่อง Slack #alerts-staging", "knowledge", ""),
    ("Never merge someone else's PR, even when it is approved and green, without their explicit "
     "OK. I merged a colleague's approved PR to unblock my work; it was waiting on a config "
     "change in another repo and took the notifications service down for an hour.",
     "lesson", "high"),
    ("レビューで設計の議論が長引いたら、PR の中で続けずに 15 分の通話に切り替える。", "lesson", ""),
    ("การสแกนช่องโหว่ในโค้ดใช้ SonarQube ที่ sonar.internal รันทุก PR", "knowledge", ""),
    ("fraud-scorer ตอนรันบนเครื่อง local ใช้พอร์ต 8071", "knowledge", ""),
    ("外部に公開する ID に連番を使わない。URL の数字を変えるだけで他人の注文が見えた。",
     "lesson", ""),
    ("tax-calculator のステージング環境は https://tax-calculator.staging.internal（VPN 必須）。",
     "knowledge", ""),
]  # fmt: skip


async def search(client: Client, query: str, top: int = 5) -> dict[str, Any]:
    res = await client.call_tool("search_memory", {"query": query, "top": top})
    assert not res.is_error, res.content[0].text  # type: ignore[union-attr]
    return res.structured_content or {}


async def test_default_settings_name_both_channels() -> None:
    embedder = KiokuSettings().embedder
    assert embedder.channels == DEFAULT_CHANNELS
    assert embedder.minilm_int8


async def test_a_fresh_default_server_finds_a_paraphrase_only_the_channels_find(
    harness: Harness,
) -> None:
    for text, type_, priority in [(ANSWER, "lesson", "high"), *AROUND]:
        await harness.ok("add_note", text=text, type=type_, priority=priority)
    await harness.settle()
    data = await harness.ok("search_memory", query=PARAPHRASE, top=5)
    assert data["results"][0]["text"] == ANSWER
    assert data["channels"] == DEFAULT_CHANNELS


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
        # Once the note added during the build has its vectors (on 2 loaded cores it came
        # first for this paraphrase once, right after the swap: not explained, see
        # bench/LOG.md "Two tests that searched before the store caught up"), the
        # paraphrase finds the printer note again.
        while data_now["results"][0]["text"] != OLD_NOTES[3] and time.monotonic() < deadline:
            await asyncio.sleep(1)
            data_now = await search(client, "copier gets stuck with shiny sheets")
        assert data_now["results"][0]["text"] == OLD_NOTES[3]
        # every note, the one added during the build too, is in the rebuilt index
        for text in [*OLD_NOTES, added]:
            found = await search(client, text)
            assert found["results"][0]["text"] == text
