"""The PostgreSQL truth store beyond the per-table contract suites (which run every store
test on both backends through ``database_location``): migrations racing, moving a
memory up from SQLite, and a server restart under a live pool."""

from __future__ import annotations

import asyncio
import json
import subprocess
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcp_gateway.cli.client import owner_client
from mcp_gateway.common.errors import StoreUnavailable
from mcp_gateway.common.inputs import NoteFields, RecordFields
from mcp_gateway.common.settings import KiokuSettings
from mcp_gateway.protocol.server import create_server
from mcp_gateway.records import RecordStore
from mcp_gateway.services.app import AppContext
from mcp_gateway.stores.db import Database
from mcp_gateway.stores.notes import NoteStore
from tests.conftest import Harness, connected
from tests.pg_server import ScratchDatabase, ThrowawayCluster
from tests.realproc import http_proc
from tests.redis_server import RedisDb, redis_base_url, redis_db  # noqa: F401
from tests.test_owner import ok
from tests.test_worker_process import TOPICS, kioku, owner_call, worker_env


async def test_migrations_run_once_whoever_starts_first(pg_database: ScratchDatabase) -> None:
    """Four processes' worth of ``Database`` opening one empty database at once: one
    migrates (advisory lock), the others wait and find it done; every module once."""
    url = pg_database.new_schema()
    dbs = [Database(url) for _ in range(4)]
    async with anyio.create_task_group() as tg:
        for db in dbs:
            tg.start_soon(db.open)
    try:
        rows = await dbs[0].fetchall("SELECT module, version FROM schema_versions")
        assert {r["module"] for r in rows} >= {"notes", "vectors", "records", "note_priors"}
        note = await NoteStore(dbs[1]).add(
            NoteFields(text="written through the second opener", type="knowledge")
        )
        assert (await NoteStore(dbs[3]).get(note.id)).text == note.text
    finally:
        for db in dbs:
            await db.close()


def _items(export: str) -> list[dict[str, object]]:
    lines = [json.loads(x) for x in export.splitlines() if x.strip()]
    assert lines[0]["kind"] == "kioku-export"
    return sorted(lines[1:], key=lambda x: str(x.get("id")))


# CLI processes on both backends (model loads): ~40 s
@pytest.mark.slow
def test_export_from_sqlite_imports_into_postgres_losslessly(
    tmp_path: Path, pg_database: ScratchDatabase
) -> None:
    src, dst = tmp_path / "src", tmp_path / "dst"
    pg = {"KIOKU_DATABASE_URL": pg_database.new_schema()}
    lesson = ok(src, "add", "Never force-push to main", "--type", "lesson").strip()
    ja = ok(src, "add", "本番環境へのデプロイ前にステージングで確認する").strip()
    th = ok(src, "add", "ตรวจสอบสคริปต์ย้ายข้อมูลก่อนปล่อยเวอร์ชันใหม่").strip()
    ok(src, "edit", ja, "--domain", "deploy")
    ok(src, "edit", th, "--text", "ตรวจสอบสคริปต์ย้ายข้อมูลทุกครั้งก่อนปล่อยเวอร์ชันใหม่")
    ok(src, "delete", lesson)
    ok(src, "records", "add", "audit", "索引がクラッシュで書き込みを失う")
    ok(src, "records", "add", "fix", "fsync before rename", "--link", "resolves:AUDIT-MEM-001")
    ok(src, "records", "add", "decision", "ใช้ PostgreSQL เป็นที่เก็บความจริง")
    ok(src, "records", "link", "DECISION-MEM-001", "references", "FIX-MEM-001")
    backup = tmp_path / "backup.jsonl"
    ok(src, "export", "-o", str(backup))

    assert "imported 3 notes" in ok(dst, "import", str(backup), **pg)
    before, after = _items(backup.read_text("utf-8")), _items(ok(dst, "export", **pg))
    assert after == before  # notes with history and deletion, records with edges
    assert "ステージング" in ok(dst, "search", "デプロイ前 ステージング", **pg)
    assert "ย้ายข้อมูล" in ok(dst, "search", "สคริปต์ย้ายข้อมูล", **pg)
    assert "AUDIT-MEM-001" in ok(dst, "records", "search", "クラッシュ", **pg)
    assert "resolved by: FIX-MEM-001" in ok(dst, "records", "show", "AUDIT-MEM-001", **pg)
    assert "AUDIT-MEM-002" in ok(dst, "records", "add", "audit", "Another", **pg)
    assert lesson not in ok(dst, "list", **pg)


async def test_two_pools_share_the_same_rows(pg_database: ScratchDatabase) -> None:
    """Two ``Database`` objects (two processes' pools) on one database share writes at
    once: what one commits, the other reads (records, with their generated keys)."""
    url = pg_database.new_schema()
    a, b = Database(url), Database(url)
    await a.open()
    await b.open()
    try:
        rec = await RecordStore(a, "MEM").add(
            RecordFields(type="audit", title="数据库重启后连接池自动恢复")
        )
        hits = await RecordStore(b, "MEM").search("重启后")
        assert [h.id for h in hits] == [rec.id]
    finally:
        await a.close()
        await b.close()


# its own PostgreSQL server, stopped and started again: ~10 s
@pytest.mark.slow
async def test_a_server_restart_gives_clean_retryable_errors_then_recovers(
    throwaway_cluster: ThrowawayCluster,
) -> None:
    db = Database(throwaway_cluster.url)
    await db.open()
    notes = NoteStore(db)
    try:
        before = await notes.add(NoteFields(text="written before the restart", type="knowledge"))
        await anyio.to_thread.run_sync(throwaway_cluster.stop)
        for _ in range(2):  # a broken pooled connection, then no server at all
            with pytest.raises(StoreUnavailable, match=r"unavailable.*Retry in a moment"):
                await notes.add(
                    NoteFields(text="written while the server is down", type="knowledge")
                )
        with pytest.raises(StoreUnavailable):
            await notes.get(before.id)
        await anyio.to_thread.run_sync(throwaway_cluster.start)
        # the same Database: the pool reconnects by itself
        after = await notes.add(NoteFields(text="written after the restart", type="knowledge"))
        assert (await notes.get(before.id)).text == "written before the restart"
        assert [n.id for n in await notes.page()] == [before.id, after.id]
    finally:
        await db.close()


async def test_an_unreachable_server_is_a_clean_error(
    pg_database: ScratchDatabase, caplog: pytest.LogCaptureFixture
) -> None:
    """A URL nobody answers (a free port): StoreUnavailable within the pool's timeout,
    naming neither the server nor its password (a tenant sees the error); the owner's
    log names the server, without the password."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    db = Database(f"postgresql://kioku:s3cret@127.0.0.1:{port}/kioku")
    with caplog.at_level("WARNING"), pytest.raises(StoreUnavailable) as err:
        await db.open()
    told = str(err.value)
    assert "unavailable" in told and "127.0.0.1" not in told and "s3cret" not in told
    assert f"127.0.0.1:{port}" in caplog.text and "s3cret" not in caplog.text


# an owner and a worker process, each loading the model: ~60 s
@pytest.mark.slow
async def test_a_worker_needs_only_the_database_redis_and_its_model(
    tmp_path: Path,
    pg_database: ScratchDatabase,
    redis_db: RedisDb,  # noqa: F811 - the fixture imported above
) -> None:
    """``kioku serve --http`` and ``kioku worker`` share PostgreSQL and Redis and no
    directory: the worker's data dir is its own, empty one. Notes added at the owner are
    embedded by the worker into the truth store, applied by the owner, and found
    semantically; nothing of the store appears in the worker's data dir."""
    url = pg_database.new_schema()
    owner_settings = KiokuSettings(
        data_dir=tmp_path / "owner", namespace=redis_db.namespace, redis_url=redis_db.url
    )
    env = worker_env(owner_settings)
    env.update(KIOKU_DATABASE_URL=url, KIOKU_DATA_DIR=str(tmp_path / "worker"))
    owner_env: dict[str, Any] = {
        k: v for k, v in env.items() if k.startswith("KIOKU_") and k != "KIOKU_DATA_DIR"
    }
    texts = [f"note {i}: the {topic} runbook lives in the wiki" for i, topic in enumerate(TOPICS)]
    texts.append("本番環境へのデプロイ前にステージングで確認する")
    with (
        (tmp_path / "worker.log").open("wb") as log,
        http_proc(owner_settings.data_dir, **owner_env) as owner,
    ):
        worker = subprocess.Popen(  # noqa: ASYNC220 - starting it does not block
            kioku("worker"), env=env, stdout=log, stderr=subprocess.STDOUT
        )
        try:
            async with owner_client(owner_settings) as client:
                for text in texts:
                    await owner_call(client, "notes.add", text=text, type="knowledge")
                deadline = time.monotonic() + 300
                while True:
                    stats = await owner_call(client, "stats")
                    if stats["notes"]["pending_embedding"] == 0:  # type: ignore[index]
                        break
                    assert worker.poll() is None, (tmp_path / "worker.log").read_text()
                    assert time.monotonic() < deadline, owner.stderr()[-2000:]
                    await asyncio.sleep(0.2)
                found = await owner_call(
                    client, "notes.search", query="ステージング環境での確認", top=3
                )
                top = found["results"][0]  # type: ignore[index]
                assert "ステージング" in top["text"] and top["distance"] is not None
        finally:
            worker.terminate()
            worker.wait(timeout=60)
    db = Database(url)
    await db.open()
    try:
        rows = await db.fetchall(
            "SELECT COUNT(DISTINCT source_id) AS n FROM vectors WHERE kind = 'note'"
        )
        assert rows[0]["n"] == len(texts)
    finally:
        await db.close()
    left = {p.name for p in (tmp_path / "worker").rglob("*")}
    assert not left & {"kioku.sqlite3", "activity.jsonl"}, left


# the model loads in-process: ~25 s on a busy 2-core machine
@pytest.mark.slow
async def test_the_owner_runs_on_postgresql_end_to_end(
    settings: KiokuSettings, pg_database: ScratchDatabase
) -> None:
    """Through a real MCP client: add_note commits to PostgreSQL, the in-process job
    embeds it, search_memory finds it by meaning (no shared word), and a record's full
    text answers in Japanese and Thai."""
    settings = settings.model_copy(update={"database_url": pg_database.new_schema()})
    apps: list[AppContext] = []
    async with connected(create_server(settings, on_app=apps.append)) as client:
        h = Harness(client, apps)
        added = await h.ok("add_note", text="ステージング環境で必ず確認してから本番に出す")
        await h.ok("add_note", text="The cafeteria serves noodles on Fridays")
        await h.settle()
        found = await h.ok("search_memory", query="本番リリースの前にテスト環境で検証")
        assert found["results"][0]["id"] == added["id"]
        assert found["results"][0]["distance"] is not None  # the dense channel answered
        rec = await h.ok("record_add", type="decision", title="ใช้ฐานข้อมูลร่วมกันทุกเกตเวย์")
        hits = await h.ok("record_search", query="ฐานข้อมูลร่วม")
        assert [x["id"] for x in hits["hits"]] == [rec["record"]["id"]]
    assert apps[0].db.dialect == "postgres"


def test_placeholders_translate_outside_quotes_only() -> None:
    from mcp_gateway.stores.pg import translate

    sql = "SELECT '?', \"a?\" FROM t WHERE x LIKE '50%' AND y = ? AND z % 2 = ?"
    assert translate(sql) == (
        "SELECT '?', \"a?\" FROM t WHERE x LIKE '50%%' AND y = %s AND z %% 2 = %s"
    )
    assert translate("SELECT 'it''s ?' WHERE a = ?") == "SELECT 'it''s ?' WHERE a = %s"


async def test_literal_percent_and_question_marks_reach_postgresql_as_written(
    pg_database: ScratchDatabase,
) -> None:
    db = Database(pg_database.new_schema())
    await db.open()
    try:
        rows = await db.fetchall("SELECT '100% sure?' AS a, ? AS b, 7 % 4 AS c", ("ok?",))
        assert tuple(rows[0]) == ("100% sure?", "ok?", 3)
        assert dict(rows[0]) == {"a": "100% sure?", "b": "ok?", "c": 3}
    finally:
        await db.close()


def test_the_index_build_gets_a_database_url_outside_its_command_line(tmp_path: Path) -> None:
    from mcp_gateway.index.base import IndexSpec
    from mcp_gateway.rebuild.build import DB_ENV, build_command, build_env

    url = "postgresql://kioku:s3cret@db.internal:5432/kioku"
    command = build_command(url, tmp_path, IndexSpec("c", 384, "m"), "MEM", "turbo16")
    assert not [a for a in command if "s3cret" in a]  # ps shows every user the argv
    assert (build_env(url) or {})[DB_ENV] == url
    assert build_env(tmp_path / "k.sqlite3") is None  # a file path stays on the line
