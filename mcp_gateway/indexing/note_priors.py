"""The ranking priors of notes, as the truth store keeps them for index points.

The re-ranking job (``jobs.priors``) writes them; the owner copies changed rows into
the payload ``prior`` (``applier``), and every whole-point write reads them here.
"""

from __future__ import annotations

from collections.abc import Sequence

from mcp_gateway.stores.db import Database, register_migration

# Ranking priors written by the re-ranking job (workers.priors). Kept here, not only in
# the index payload, so a re-embed (a whole-point upsert) carries the prior over.
register_migration(
    "note_priors",
    1,
    """
    CREATE TABLE note_priors (
        note_id TEXT PRIMARY KEY,
        prior REAL NOT NULL,
        updated_at REAL NOT NULL
    );
    """,
)
# Reset priors are kept as 1.0 rows (not deleted), so the owner sees every change.
register_migration(
    "note_priors",
    2,
    "CREATE INDEX note_priors_updated ON note_priors(updated_at);",
)

register_migration(
    "note_priors",
    1,
    """
    CREATE TABLE note_priors (
        note_id TEXT PRIMARY KEY,
        prior DOUBLE PRECISION NOT NULL,
        updated_at DOUBLE PRECISION NOT NULL
    );
    CREATE INDEX note_priors_updated ON note_priors(updated_at);
    """,
    dialect="postgres",
)


async def load_priors(db: Database, note_ids: Sequence[str]) -> dict[str, float]:
    if not note_ids:
        return {}
    marks = ",".join("?" * len(note_ids))
    rows = await db.fetchall(
        f"SELECT note_id, prior FROM note_priors WHERE note_id IN ({marks})", tuple(note_ids)
    )
    return {r["note_id"]: float(r["prior"]) for r in rows}
