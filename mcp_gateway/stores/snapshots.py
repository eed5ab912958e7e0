"""Index snapshots in the truth store: what a new gateway loads instead of building its
index from the change feed (``indexing.snapshot``).

A snapshot is one gateway's embedded index packed into a file (``index.edge_snapshot``),
stored here in chunks, with the cursors that index was current to (the change feed's,
the vectors', the priors'; without any gateway's suffix). The truth store is what every
gateway of a deployment already reaches, on any host, so nothing else needs sharing (a
directory on a network filesystem would be one more thing to mount and to lose).

Chunks are written outside any write transaction (``Database.run``: each statement
commits by itself): a snapshot's upload never holds the deployment's write lock, so
adds go on meanwhile. A snapshot is read only once ``complete``; the publisher removes
older ones of the same collection after completing a new one, so at most one
complete snapshot per collection (and one being written) is kept.

Its two tables, ``index_snapshots`` and ``index_snapshot_chunks``, are declared with
the rest of the schema (``stores/schema``).
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass

from mcp_gateway.stores.db import Database

CHUNK_BYTES = 4 << 20  # one row; small enough for any driver, few enough rows


@dataclass(frozen=True, slots=True)
class Snapshot:
    id: int
    collection: str
    model: str  # "<model id>@<dim>", as ``catalog.MODEL_KEY`` holds it
    cursors: dict[str, str]  # cursor key (no gateway suffix) -> value
    change_seq: int
    points: int
    bytes: int
    chunks: int
    created_at: float


class SnapshotStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def begin(
        self,
        collection: str,
        model: str,
        cursors: dict[str, str],
        change_seq: int,
        points: int,
        gateway: str,
    ) -> int:
        """A new, incomplete snapshot; returns its id."""

        def insert(conn: sqlite3.Connection) -> int:
            row = conn.execute(
                "INSERT INTO index_snapshots(collection, model, cursors, change_seq, points, "
                "created_at, gateway) VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id",
                (collection, model, json.dumps(cursors), change_seq, points, time.time(), gateway),
            ).fetchone()
            return int(row[0])

        return await self.db.run(insert)

    async def put_chunk(self, snapshot_id: int, n: int, data: bytes) -> None:
        await self.db.run(
            lambda c: c.execute(
                "INSERT INTO index_snapshot_chunks(snapshot_id, n, data) VALUES (?, ?, ?)",
                (snapshot_id, n, data),
            )
        )

    async def finish(self, snapshot_id: int, chunks: int, size: int) -> None:
        """Mark it complete (readable), then drop every older snapshot of its collection
        and any incomplete one older than it (a publisher that died mid-upload)."""

        def done(conn: sqlite3.Connection) -> None:
            conn.execute(
                "UPDATE index_snapshots SET complete = 1, chunks = ?, bytes = ? WHERE id = ?",
                (chunks, size, snapshot_id),
            )

        await self.db.run(done)
        row = await self.db.fetchall(
            "SELECT collection FROM index_snapshots WHERE id = ?", (snapshot_id,)
        )
        stale = await self.db.fetchall(
            "SELECT id FROM index_snapshots WHERE id < ? AND (collection = ? OR complete = 0)",
            (snapshot_id, row[0]["collection"]),
        )
        for r in stale:
            await self.remove(int(r["id"]))

    async def remove(self, snapshot_id: int) -> None:
        # the row first: a reader never finds a complete snapshot missing chunks
        await self.db.run(
            lambda c: c.execute("DELETE FROM index_snapshots WHERE id = ?", (snapshot_id,))
        )
        await self.db.run(
            lambda c: c.execute(
                "DELETE FROM index_snapshot_chunks WHERE snapshot_id = ?", (snapshot_id,)
            )
        )

    async def newest(self, collection: str, model: str) -> Snapshot | None:
        """The newest complete snapshot of ``collection`` made for ``model``."""
        rows = await self.db.fetchall(
            "SELECT id, collection, model, cursors, change_seq, points, bytes, chunks, "
            "created_at FROM index_snapshots WHERE collection = ? AND model = ? "
            "AND complete = 1 ORDER BY id DESC LIMIT 1",
            (collection, model),
        )
        if not rows:
            return None
        r = rows[0]
        return Snapshot(
            int(r["id"]),
            str(r["collection"]),
            str(r["model"]),
            {str(k): str(v) for k, v in json.loads(r["cursors"]).items()},
            int(r["change_seq"]),
            int(r["points"]),
            int(r["bytes"]),
            int(r["chunks"]),
            float(r["created_at"]),
        )

    async def chunks(self, snapshot: Snapshot) -> AsyncIterator[bytes]:
        """The snapshot's bytes, a chunk at a time (never all in memory). Raises
        ``LookupError`` when a chunk is gone (a newer snapshot replaced it meanwhile)."""
        for n in range(snapshot.chunks):
            rows = await self.db.fetchall(
                "SELECT data FROM index_snapshot_chunks WHERE snapshot_id = ? AND n = ?",
                (snapshot.id, n),
            )
            if not rows:
                raise LookupError(f"snapshot {snapshot.id} lost chunk {n}")
            yield bytes(rows[0]["data"])
