"""Re-ranking priors: usefulness from the activity log, and a shelf life for lessons.

Usefulness: a note *retrieved* by ``search_memory`` counts as *useful* when a solution
credits it (``solve_credit``: a note with a ``solved_query`` added shortly after).
With Laplace smoothing ``p = (useful + 1) / (retrieved + 2)`` (0.5 with no evidence),
the usefulness factor is ``1 + USE_WEIGHT * (p - 0.5)``.

Shelf life: past the ``SHELF_LIFE`` newest lessons, a lesson that is neither high
priority nor ever useful decays (halving per further ``SHELF_LIFE`` lessons, floored),
so a long tail of stale lessons stops burying the old ones that still matter.

The prior (a multiplier around 1.0, clamped) is stored in SQLite ``note_priors``; the
owner of the index copies changed rows into the point payload (``prior``), which
``ranking.fuse`` multiplies into the fused score, and reads them when it rebuilds points.
"""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import anyio

from mcp_gateway.common.events import SEARCH
from mcp_gateway.common.types import Note
from mcp_gateway.indexing import note_priors as _table  # noqa: F401  (the table this job writes)
from mcp_gateway.jobs.solve_credit import SolveCredit, result_ids
from mcp_gateway.queue.context import JobContext

log = logging.getLogger(__name__)

USE_WEIGHT = 0.5
SHELF_LIFE = 100
SHELF_FLOOR = 0.6
LOWEST, HIGHEST = 0.5, 1.5
LOG_WINDOW_S = 180 * 86_400


@dataclass(slots=True)
class Usage:
    retrieved: int = 0
    useful: int = 0


def usage_from_log(entries: Iterable[dict[str, Any]]) -> dict[str, Usage]:
    """Count retrievals and "retrieved, then solved" per note id (entries in time order)."""
    usage: dict[str, Usage] = defaultdict(Usage)
    credit = SolveCredit()
    for entry in entries:
        if entry.get("event") == SEARCH:
            for nid in result_ids(entry):
                usage[nid].retrieved += 1
        for nid in credit.feed(entry) or ():
            usage[nid].useful += 1
    return dict(usage)


def usefulness(use: Usage | None) -> float:
    if use is None:
        return 1.0
    p = (use.useful + 1) / (use.retrieved + 2)
    return 1.0 + USE_WEIGHT * (p - 0.5)


def shelf_factor(note: Note, age_rank: int, use: Usage | None) -> float:
    """``age_rank``: 0 for the newest lesson. Only unimportant, never-useful lessons age."""
    if note.type != "lesson" or note.priority == "high" or age_rank < SHELF_LIFE:
        return 1.0
    if use is not None and use.useful > 0:
        return 1.0
    return max(SHELF_FLOOR, 0.5 ** ((age_rank - SHELF_LIFE) / SHELF_LIFE))


def compute_priors(notes: Iterable[Note], usage: Mapping[str, Usage]) -> dict[str, float]:
    """Every note's prior, rounded (so equal values group into one payload write)."""
    notes = list(notes)
    lessons = sorted((n for n in notes if n.type == "lesson"), key=lambda n: -n.created_at)
    rank = {n.id: i for i, n in enumerate(lessons)}
    out: dict[str, float] = {}
    for note in notes:
        use = usage.get(note.id)
        value = usefulness(use) * shelf_factor(note, rank.get(note.id, 0), use)
        out[note.id] = round(min(max(value, LOWEST), HIGHEST), 2)
    return out


async def all_notes(kc: JobContext) -> list[Note]:
    notes: list[Note] = []
    after = ""
    while page := await kc.notes.page(after, limit=1000):
        notes.extend(page)
        after = page[-1].id
    return notes


async def store_priors(kc: JobContext, priors: Mapping[str, float]) -> dict[str, float]:
    """Write the priors that changed (a reset is kept as a 1.0 row, so the owner sees
    it); return them."""
    rows = await kc.db.fetchall("SELECT note_id, prior FROM note_priors")
    before = {r["note_id"]: float(r["prior"]) for r in rows}
    changed = {nid: p for nid, p in priors.items() if before.get(nid, 1.0) != p}
    changed.update({nid: 1.0 for nid, p in before.items() if nid not in priors and p != 1.0})
    now = time.time()

    def write(conn: Any) -> None:
        conn.executemany(
            "INSERT INTO note_priors(note_id, prior, updated_at) VALUES (?, ?, ?) "
            "ON CONFLICT(note_id) DO UPDATE SET prior = excluded.prior, "
            "updated_at = excluded.updated_at",
            [(nid, prior, now) for nid, prior in changed.items()],
        )

    await kc.db.transaction(write)
    return changed


async def rerank(kc: JobContext) -> dict[str, int]:
    since = time.time() - LOG_WINDOW_S
    usage = await anyio.to_thread.run_sync(lambda: usage_from_log(kc.activity.read_sync(since)))
    priors = compute_priors(await all_notes(kc), usage)
    changed = await store_priors(kc, priors)
    boosted = sum(1 for p in priors.values() if p > 1.0)
    demoted = sum(1 for p in priors.values() if p < 1.0)
    log.info("rerank: %d changed, %d boosted, %d demoted", len(changed), boosted, demoted)
    return {
        "notes": len(priors),
        "changed": len(changed),
        "boosted": boosted,
        "demoted": demoted,
    }
