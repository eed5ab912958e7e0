"""The activity log on both backends: what one process appends, another reads back (on
PostgreSQL from any host, through the table; on SQLite through the data dir's file)."""

from __future__ import annotations

import time
from pathlib import Path

from mcp_gateway.common.events import SEARCH, USED
from mcp_gateway.search.recent_asks import WINDOW_S, RecentAsks
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


async def test_recent_entries_come_from_the_tail_and_tell_each_namespace_its_asks(
    database_location: Path | str, tmp_path: Path
) -> None:
    """``read_recent`` answers the last minutes of a long log (older lines by the
    megabyte before them), oldest first; ``RecentAsks`` over it tells each namespace the
    searches it made in the window, spends what was credited, and never answers one
    namespace with another's search or with an entry older than the window."""
    db = Database(database_location)
    await db.open()
    try:
        log = open_activity_log(db, tmp_path / "logs" / "activity.jsonl")
        now = time.time()
        old = {"namespace": "alice", "query": "old", "result_ids": ["m1"], "pad": "x" * 4000}
        for i in range(300):  # ~1.2 MB older than the window, the file read from its end
            log.append_sync(SEARCH, **{**old, "ts": now - 7200 + i})
        log.append_sync(SEARCH, ts=now - 600, namespace="alice", query="q1", result_ids=["m1"])
        log.append_sync(SEARCH, ts=now - 500, namespace="bob", query="bob's", result_ids=["m2"])
        log.append_sync(
            SEARCH, ts=now - 400, query="no namespace (older version)", result_ids=["m3"]
        )
        log.append_sync(
            SEARCH, ts=now - 300, namespace="alice", query="q2", result_ids=["m1", "m3"]
        )
        log.append_sync(USED, ts=now - 200, namespace="alice", ids=["m1"])
        recent = log.read_recent(now - WINDOW_S)
        assert [e.get("query") for e in recent] == [
            "q1",
            "bob's",
            "no namespace (older version)",
            "q2",
            None,
        ]
        asks = RecentAsks(log.read_recent)
        # m1: q2's showing was spent by the credit; q1's is left
        assert await asks.questions_for("alice", ["m1", "m2", "m3"], now) == {
            "m1": "q1",
            "m3": "q2",
        }
        assert await asks.questions_for("alice", ["m1", "m3"], now) == {"m1": "q1", "m3": "q2"}
        assert await asks.questions_for("bob", ["m1", "m2", "m3"], now) == {"m2": "bob's"}
        assert await asks.questions_for("carol", ["m1", "m2"], now) == {}
        # a log only this process writes, and a process older than the window: not read
        assert (
            await RecentAsks(log.read_recent, own_since=now - WINDOW_S - 1).questions_for(
                "alice", ["m1"], now
            )
            == {}
        )
    finally:
        await db.close()
