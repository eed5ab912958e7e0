"""Permanent job failures, kept in the truth store so ``kioku stats`` shows them.

One row per (job, key): the key is the note id for per-note jobs, the job name for
singletons. A later failure of the same key updates the row and its count.
"""

from __future__ import annotations

import sqlite3
import time
from typing import Any

from mcp_gateway.stores.db import Database

# the table: ``stores.schema`` (job_failures)
MAX_ERROR_CHARS = 500


async def record(db: Database, job: str, key: str, error: BaseException, tries: int) -> None:
    text = f"{type(error).__name__}: {error}"[:MAX_ERROR_CHARS]
    now = time.time()

    def write(conn: sqlite3.Connection) -> None:
        conn.execute(
            "INSERT INTO job_failures(job, key, error, tries, count, first_at, last_at) "
            "VALUES (?, ?, ?, ?, 1, ?, ?) ON CONFLICT(job, key) DO UPDATE SET "
            "error = excluded.error, tries = excluded.tries, count = job_failures.count + 1, "
            "last_at = excluded.last_at",
            (job, key, text, tries, now, now),
        )

    await db.transaction(write)


async def failed_since(db: Database, job: str, keys: list[str], since: float) -> dict[str, float]:
    """Key -> time of the last permanent failure of ``job``, for the ``keys`` that failed
    after ``since``."""
    if not keys:
        return {}
    marks = ",".join("?" * len(keys))
    rows = await db.fetchall(
        f"SELECT key, last_at FROM job_failures WHERE job = ? AND key IN ({marks}) AND last_at > ?",
        (job, *keys, since),
    )
    return {str(r["key"]): float(r["last_at"]) for r in rows}


async def clear(db: Database, job: str, key: str) -> None:
    await db.transaction(
        lambda c: c.execute("DELETE FROM job_failures WHERE job = ? AND key = ?", (job, key))
    )


async def summary(db: Database, limit: int = 20) -> dict[str, Any]:
    total = await db.fetchall("SELECT COUNT(*) AS n FROM job_failures")
    rows = await db.fetchall(
        "SELECT job, key, error, tries, count, last_at FROM job_failures "
        "ORDER BY last_at DESC LIMIT ?",
        (limit,),
    )
    return {"count": int(total[0]["n"]), "recent": [dict(r) for r in rows]}
