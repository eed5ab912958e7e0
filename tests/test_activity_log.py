"""The activity log on both backends: what one process appends, another reads back (on
PostgreSQL from any host, through the table; on SQLite through the data dir's file)."""

from __future__ import annotations

import time
from pathlib import Path

from mcp_gateway.stores.activity import open_activity_log
from mcp_gateway.stores.db import Database


async def test_entries_written_by_one_opener_are_read_by_another(
    database_location: Path | str, tmp_path: Path
) -> None:
    path = tmp_path / "logs" / "activity.jsonl"
    writer_db, reader_db = Database(database_location), Database(database_location)
    await writer_db.open()
    await reader_db.open()
    try:
        writer = open_activity_log(writer_db, path)
        start = time.time()
        await writer.append("search", query="本番 デプロイ", ids=["n1", "n2"])
        writer.flush()  # append queues for the writer thread; append_sync writes now
        writer.append_sync("add_note", id="n3", text="ตรวจสอบสคริปต์")
        writer.flush()
        entries = list(open_activity_log(reader_db, path).read_sync(start - 1))
        assert [e["event"] for e in entries] == ["search", "add_note"]
        assert entries[0]["query"] == "本番 デプロイ" and entries[0]["ids"] == ["n1", "n2"]
        assert entries[1]["text"] == "ตรวจสอบสคริปต์"
        assert list(open_activity_log(reader_db, path).read_sync(time.time() + 60)) == []
    finally:
        await writer_db.close()
        await reader_db.close()
