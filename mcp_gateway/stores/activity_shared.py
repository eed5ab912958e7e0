"""The activity log of a deployment whose processes share the truth store.

The embedded log is a JSONL file in the data dir (``stores.activity``). Where several
gateways share the truth store, each would see only its own tool calls there, and a
worker on another host none: solve credit (a search on one gateway, the solution added
on another), tuning and the browser's insights need the deployment's whole log. So
``SharedActivityLog`` writes the same entries to the ``activity`` table instead, one
insert per batch the writer thread gathers (the reply still never waits), and reads
them back in time order.

The table grows with use, as the file does; nothing prunes either yet.
"""

from __future__ import annotations

import json
import logging
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from mcp_gateway.stores.activity import ActivityLog, entry_line
from mcp_gateway.stores.db import Database, register_migration

log = logging.getLogger(__name__)

register_migration(
    "activity",
    1,
    """
    CREATE TABLE activity (n INTEGER PRIMARY KEY, ts REAL NOT NULL, entry TEXT NOT NULL);
    CREATE INDEX activity_ts ON activity(ts);
    """,
)
register_migration(
    "activity",
    1,
    """
    CREATE TABLE activity (
        n BIGSERIAL PRIMARY KEY,
        ts DOUBLE PRECISION NOT NULL,
        entry TEXT NOT NULL
    );
    CREATE INDEX activity_ts ON activity(ts);
    """,
    dialect="postgres",
)


class SharedActivityLog(ActivityLog):
    def __init__(self, path: Path, db: Database) -> None:
        super().__init__(path)
        self.db = db

    def _write(self, *entries: dict[str, Any]) -> None:
        rows = [(float(e.get("ts", 0.0)), line) for e in entries if (line := entry_line(e))]
        if not rows:
            return
        try:
            self.db.transaction_sync(
                lambda c: c.executemany("INSERT INTO activity(ts, entry) VALUES (?, ?)", rows)
            )
        except Exception as exc:  # advisory, as the file is: never fail a tool call
            log.warning("activity log not written to the truth store: %s", exc)

    def read_sync(self, since: float = 0.0) -> Iterator[dict[str, Any]]:
        self.flush()

        def read(conn: sqlite3.Connection) -> list[Any]:
            return conn.execute(
                "SELECT entry FROM activity WHERE ts >= ? ORDER BY ts, n", (since,)
            ).fetchall()

        for row in self.db.run_sync(read):
            try:
                entry = json.loads(row[0])
            except json.JSONDecodeError:
                continue
            if isinstance(entry, dict):
                yield entry
