"""``record_search`` by meaning and by rare words, never by common words alone (issue 45).

Through the real MCP protocol, every record embedded. Full text alone (FTS5 trigram,
words OR-ed) answered "password leaked in logs" with the records that say "in" and
"logs", and missed the Japanese audit of exactly that; a question asked in Thai found
no English record at all.
"""

from __future__ import annotations

from .conftest import Harness
from .test_rare_words import on_store  # noqa: F401  (the fixture: SQLite and PostgreSQL)


async def ids_for(h: Harness, query: str, **more: object) -> list[str]:
    found = await h.ok("record_search", query=query, **more)
    return [hit["id"] for hit in found["hits"]]


async def test_record_search_finds_by_meaning_across_languages(on_store: Harness) -> None:  # noqa: F811
    h = on_store

    async def add(type_: str, title: str, content: str) -> str:
        out = await h.ok("record_add", type=type_, title=title, content=content)
        return str(out["record"]["id"])

    audit = await add(
        "audit",
        "パスワード監査",
        "ログイン処理がユーザーのパスワードを平文でアプリケーションログに書き出していた。",
    )
    unrelated = [
        await add("decision", "Ship logs in JSON", "Every service writes its logs in JSON lines."),
        await add("knowledge", "Access logs in S3", "Access logs are kept in S3 for 90 days."),
        await add("fix", "Rotate logs in the ingest job", "logrotate runs in cron every night."),
    ]
    timeout = await add(
        "fix",
        "Database connection timeout in billing",
        "The billing service timed out connecting to PostgreSQL; the pool was raised to 20.",
    )
    label = await add(
        "audit", "Ticket zqzwkdriqyaf", "The export job dropped rows with a byte order mark."
    )
    await h.settle()

    found = await ids_for(h, "password leaked in logs")
    assert found[:1] == [audit]
    assert len(set(found) & set(unrelated)) < len(unrelated), "common words alone came back"
    # Thai -> English, by meaning
    assert (await ids_for(h, "การเชื่อมต่อฐานข้อมูลหมดเวลา"))[:1] == [timeout]
    # Japanese -> English
    assert (await ids_for(h, "データベース接続のタイムアウト"))[:1] == [timeout]
    # a name one record alone holds, in any case
    assert (await ids_for(h, "ZQZWKDRIQYAF"))[:1] == [label]
    # filters hold: the type, and the common words alone find nothing
    decisions = await h.ok("record_search", query="password leaked in logs", type="decision")
    assert {hit["type"] for hit in decisions["hits"]} <= {"decision"}
    assert await ids_for(h, "in the of") == []
