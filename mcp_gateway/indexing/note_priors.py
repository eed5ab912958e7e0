"""The ranking priors of notes, as the truth store keeps them for index points.

The re-ranking job (``jobs.priors``) writes them; the owner copies changed rows into
the payload ``prior`` (``applier``), and every whole-point write reads them here.
"""

from __future__ import annotations

from collections.abc import Sequence

from mcp_gateway.stores.db import Database


async def load_priors(db: Database, note_ids: Sequence[str]) -> dict[str, float]:
    if not note_ids:
        return {}
    marks = ",".join("?" * len(note_ids))
    rows = await db.fetchall(
        f"SELECT note_id, prior FROM note_priors WHERE note_id IN ({marks})", tuple(note_ids)
    )
    return {r["note_id"]: float(r["prior"]) for r in rows}
