"""Opening one new SQLite data dir from several places at once (two workers, a worker
beside the owner): every opener finds the schema whole, each migration applied once."""

from __future__ import annotations

from pathlib import Path

import anyio

from mcp_gateway.common.inputs import NoteFields
from mcp_gateway.stores.db import Database
from mcp_gateway.stores.notes import NoteStore

OPENERS = 6


async def test_openers_racing_on_a_new_database_all_open(tmp_path: Path) -> None:
    for attempt in range(5):  # the race needs the openers' reads and writes to interleave
        path = tmp_path / f"try{attempt}" / "kioku.sqlite3"
        dbs = [Database(path) for _ in range(OPENERS)]
        failures: list[BaseException] = []

        async def open_one(db: Database, failures: list[BaseException] = failures) -> None:
            try:
                await db.open()
            except Exception as exc:  # collected: every opener's outcome is checked
                failures.append(exc)

        async with anyio.create_task_group() as tg:
            for db in dbs:
                tg.start_soon(open_one, db)
        try:
            assert failures == []
            note = await NoteStore(dbs[1]).add(NoteFields(text="after the race", type="note"))
            assert (await NoteStore(dbs[-1]).get(note.id)).text == "after the race"
        finally:
            for db in dbs:
                await db.close()
