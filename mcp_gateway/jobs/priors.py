"""Re-ranking priors: usefulness from the activity log, and a shelf life for lessons.

Usefulness: a note *retrieved* by ``search_memory`` counts as *useful* when the
assistant says it used it (``used=[ids]``, ``services.learning``: explicit, weight
``EXPLICIT_WEIGHT``) or, as the fallback, when a solution credits it (``solve_credit``:
a note with a ``solved_query`` added shortly after; implicit, weight 1). Every count
decays with its age (half-life ``HALF_LIFE_S``), so a burst of wrong marks fades. An
explicit credit counts only when given in the note's own namespace: feedback in one
namespace never moves another's answers. With Laplace smoothing
``p = (useful + 1) / (retrieved + 2)`` (0.5 with no evidence, at most 1), the
usefulness factor is ``1 + USE_WEIGHT * (p - 0.5)``: within [0.75, 1.25].

Shelf life: past the ``SHELF_LIFE`` newest lessons, a lesson that is neither high
priority nor ever useful decays (halving per further ``SHELF_LIFE`` lessons, floored),
so a long tail of stale lessons stops burying the old ones that still matter. Any
other memory never useful and unchanged for ``SHELF_AGE_S`` falls behind slowly too
(halving per ``AGE_HALVING_S``, floored at ``AGE_FLOOR``): never out of the answer, and
still first for its exact identifiers (``ranking.pin_exact``) and by id.

The prior (a multiplier around 1.0, clamped) is stored in SQLite ``note_priors``; the
owner of the index copies changed rows into the point payload (``prior``), which
``ranking.fuse`` multiplies into the fused score, and reads them when it rebuilds points.
"""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import anyio

from mcp_gateway.common.events import SEARCH, USED, Used
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
EXPLICIT_WEIGHT = 2.0
HALF_LIFE_S = 60 * 86_400
SHELF_AGE_S = 90 * 86_400
AGE_HALVING_S = 365 * 86_400
AGE_FLOOR = 0.85


@dataclass(slots=True)
class Usage:
    """``retrieved``/``useful``: raw counts (implicit credits); ``seen``/``helped``: the
    same decayed by age (None: read the raw counts); ``used``: explicit credits by the
    namespace that gave them, decayed."""

    retrieved: int = 0
    useful: int = 0
    seen: float | None = None
    helped: float | None = None
    used: dict[str, float] = field(default_factory=dict)

    def credits(self, namespace: str) -> tuple[float, float]:
        """(retrievals, useful credits) as the prior of a note of ``namespace`` reads them."""
        seen = float(self.retrieved) if self.seen is None else self.seen
        helped = float(self.useful) if self.helped is None else self.helped
        # never more explicit credits than retrievals: marking one answer over and
        # over counts once per time it was shown
        explicit = min(self.used.get(namespace, 0.0), seen)
        useful = helped + EXPLICIT_WEIGHT * explicit
        return max(seen, useful), useful


def usage_from_log(entries: Iterable[dict[str, Any]], now: float | None = None) -> dict[str, Usage]:
    """Count retrievals, explicit credits and "retrieved, then solved" per note id
    (entries in time order); with ``now``, each weighted by its age's decay."""
    usage: dict[str, Usage] = defaultdict(Usage)
    credit = SolveCredit()

    def weight(entry: Mapping[str, Any]) -> float:
        age = max(0.0, (now or 0.0) - float(entry.get("ts", 0.0) or 0.0))
        return 0.5 ** (age / HALF_LIFE_S) if now is not None else 1.0

    for entry in entries:
        if entry.get("event") == SEARCH:
            w = weight(entry)
            for nid in result_ids(entry):
                use = usage[nid]
                use.retrieved += 1
                use.seen = (use.seen or 0.0) + w if now is not None else None
        elif entry.get("event") == USED:
            marked = Used.read(entry)
            w = weight(entry)
            for nid in marked.ids or ():
                used = usage[str(nid)].used
                used[marked.namespace] = used.get(marked.namespace, 0.0) + w
        for nid in credit.feed(entry) or ():
            use = usage[nid]
            use.useful += 1
            use.helped = (use.helped or 0.0) + weight(entry) if now is not None else None
    return dict(usage)


def usefulness(use: Usage | None, namespace: str = "") -> float:
    if use is None:
        return 1.0
    seen, useful = use.credits(namespace)
    p = min(1.0, (useful + 1) / (seen + 2))
    return 1.0 + USE_WEIGHT * (p - 0.5)


def shelf_factor(note: Note, age_rank: int, use: Usage | None, now: float) -> float:
    """``age_rank``: 0 for the newest lesson. Only unimportant, never-useful memories
    age: lessons by their rank among lessons, the rest by time unchanged."""
    if note.priority == "high" or note.type in ("profile", "checkpoint"):
        return 1.0
    if use is not None and use.credits(note.namespace)[1] > 0:
        return 1.0
    factor = 1.0
    if note.type == "lesson" and age_rank >= SHELF_LIFE:
        factor = max(SHELF_FLOOR, 0.5 ** ((age_rank - SHELF_LIFE) / SHELF_LIFE))
    idle = now - max(note.created_at, note.updated_at)
    if idle > SHELF_AGE_S:
        factor *= max(AGE_FLOOR, 0.5 ** ((idle - SHELF_AGE_S) / AGE_HALVING_S))
    return factor


def compute_priors(
    notes: Iterable[Note], usage: Mapping[str, Usage], now: float | None = None
) -> dict[str, float]:
    """Every note's prior, rounded (so equal values group into one payload write).
    ``now``: the time memories age against (None: the newest note's)."""
    notes = list(notes)
    lessons = sorted((n for n in notes if n.type == "lesson"), key=lambda n: -n.created_at)
    rank = {n.id: i for i, n in enumerate(lessons)}
    at = now if now is not None else max((n.updated_at for n in notes), default=0.0)
    out: dict[str, float] = {}
    for note in notes:
        use = usage.get(note.id)
        value = usefulness(use, note.namespace) * shelf_factor(note, rank.get(note.id, 0), use, at)
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
    now = time.time()
    since = now - LOG_WINDOW_S
    usage = await anyio.to_thread.run_sync(
        lambda: usage_from_log(kc.activity.read_sync(since), now)
    )
    priors = compute_priors(await all_notes(kc), usage, now)
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
