"""Leases in the truth store: work that must run once per deployment, not once per
gateway (the in-process runner's periodic re-ranking and tuning; the one writer of an
index every gateway shares, ``indexing.shared``).

A lease is a row ``(name, holder, expires_at)``. ``acquire`` takes it when it is free,
expired or already ours (a renewal), in one statement that both SQLite and PostgreSQL
run atomically (``INSERT .. ON CONFLICT DO UPDATE .. WHERE``), then reads who holds it.
A holder that dies simply stops renewing: after ``ttl_s`` another process takes over.

Expiry compares wall clocks of different hosts: keep them NTP-synchronised (a skew far
below ``ttl_s``; the leases here last minutes to an hour).
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable

from mcp_gateway.stores.db import Database


class Leases:
    def __init__(self, db: Database, holder: str) -> None:
        self.db, self.holder = db, holder

    async def acquire(self, name: str, ttl_s: float) -> bool:
        """Take or renew ``name`` for ``ttl_s`` seconds; False while another holds it."""
        now = time.time()

        def take(conn: sqlite3.Connection) -> bool:
            conn.execute(
                "INSERT INTO leases(name, holder, expires_at) VALUES (?, ?, ?) "
                "ON CONFLICT(name) DO UPDATE SET holder = excluded.holder, "
                "expires_at = excluded.expires_at "
                "WHERE leases.holder = excluded.holder OR leases.expires_at < ?",
                (name, self.holder, now + ttl_s, now),
            )
            row = conn.execute("SELECT holder FROM leases WHERE name = ?", (name,)).fetchone()
            return row is not None and row[0] == self.holder

        return await self.db.transaction(take)

    async def while_held(self, name: str, fn: Callable[[sqlite3.Connection], None]) -> bool:
        """Run ``fn(conn)`` in a transaction only while this holder has ``name`` (checked
        in that transaction: a holder whose lease expired writes nothing); whether it ran."""
        now = time.time()

        def fenced(conn: sqlite3.Connection) -> bool:
            row = conn.execute(
                "SELECT holder FROM leases WHERE name = ? AND expires_at >= ?", (name, now)
            ).fetchone()
            if row is None or row[0] != self.holder:
                return False
            fn(conn)
            return True

        return await self.db.transaction(fenced)

    async def release(self, name: str) -> None:
        """Give ``name`` up at once (a clean stop), if this holder has it."""
        await self.db.transaction(
            lambda c: c.execute(
                "DELETE FROM leases WHERE name = ? AND holder = ?", (name, self.holder)
            )
        )

    async def holder_of(self, name: str) -> str | None:
        rows = await self.db.fetchall(
            "SELECT holder FROM leases WHERE name = ? AND expires_at >= ?", (name, time.time())
        )
        return str(rows[0]["holder"]) if rows else None
