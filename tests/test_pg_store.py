"""The PostgreSQL truth store beyond the per-table contract suites (which run every store
test on both backends through ``database_location``): migrations racing, moving a
memory up from SQLite, and a server restart under a live pool."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from mcp_gateway.common.errors import StoreUnavailable
from mcp_gateway.records import RecordStore
from mcp_gateway.stores.db import Database
from mcp_gateway.stores.notes import NoteStore
from tests.pg_server import ScratchDatabase, ThrowawayCluster
from tests.test_owner import ok


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
        note = await NoteStore(dbs[1]).add("written through the second opener", "knowledge")
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
        rec = await RecordStore(a, "MEM").add("audit", "数据库重启后连接池自动恢复")
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
        before = await notes.add("written before the restart", "knowledge")
        await anyio.to_thread.run_sync(throwaway_cluster.stop)
        for _ in range(2):  # a broken pooled connection, then no server at all
            with pytest.raises(StoreUnavailable, match=r"unavailable.*Retry in a moment"):
                await notes.add("written while the server is down", "knowledge")
        with pytest.raises(StoreUnavailable):
            await notes.get(before.id)
        await anyio.to_thread.run_sync(throwaway_cluster.start)
        # the same Database: the pool reconnects by itself
        after = await notes.add("written after the restart", "knowledge")
        assert (await notes.get(before.id)).text == "written before the restart"
        assert [n.id for n in await notes.page()] == [before.id, after.id]
    finally:
        await db.close()


async def test_an_unreachable_server_is_a_clean_error(pg_database: ScratchDatabase) -> None:
    """A URL nobody answers (a free port): StoreUnavailable naming the server, without
    its password, within the pool's timeout."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    db = Database(f"postgresql://kioku:s3cret@127.0.0.1:{port}/kioku")
    with pytest.raises(StoreUnavailable) as err:
        await db.open()
    assert f"127.0.0.1:{port}" in str(err.value) and "s3cret" not in str(err.value)
