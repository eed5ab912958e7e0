"""Fast first, exact later: pending notes searched by their static vector.

A note is only lexically indexed until its first dense vector lands (~10 s at a
burst's tail on 2 cores; bench/LOG.md, "burst over MCP"). The index's fast pool
(``index.fast_pool``) holds a static vector (``embedders.static``) of each such note;
a search scores the pool by the query's static vector, maps the best hits' cosines onto
e5's scale and fuses them as dense hits of pending notes only (``ranking.fuse``'s
``fast``): a paraphrase with no word in common is found at once, and the note leaves
the pool when e5 has read it (``search.fast_first``).

The static table is distilled from e5 itself (``embedders.static``): it reads what e5's
tokenizer reads, Latin, Japanese and Thai alike, so no script abstains (bench/LOG.md,
"fast first from e5's own table").
"""

from __future__ import annotations

import logging

import anyio.to_thread

from mcp_gateway.common.sections import SearchSettings
from mcp_gateway.common.types import IndexFilter, IndexHit, point_id
from mcp_gateway.embedders import static
from mcp_gateway.index.fast_pool import FastPool
from mcp_gateway.index.live import LiveIndex
from mcp_gateway.indexing.points import note_document
from mcp_gateway.stores.notes import NoteStore

log = logging.getLogger(__name__)

# static cosine -> e5-small cosine (the dense channel's scale), and the least static
# cosine a pool hit needs: chosen on both dev sets at 500 / 100 / 50 pending (bench/LOG.md,
# "fast first from e5's own table"). The static cosine says little (correlation 0.27-0.34
# with e5's), so its scale is e5's compressed; and below 0.6 a pool hit is mostly an
# unrelated pending note, which with few notes pending pushed an indexed answer down
# (conversational dev, 100 pending: -0.010 without the floor, +0.000 with it).
E5_AT_ZERO, E5_PER_COSINE = 0.77, 0.10
LEAST_COSINE = 0.6
# the static model (its tokenizer, the table's touched pages) is let go once the pool
# has been empty this long, and loaded again (off the event loop) by the next pending
# note
IDLE_RELEASE_S = 60.0
REBUILD_LIMIT = 20_000  # pending notes read back at open (a backlog, not the corpus)


def attach(index: LiveIndex, settings: SearchSettings) -> None:
    """Give the live index a fast pool when the setting is on (and the static table
    ships); points written from now on with no dense vector get a static one."""
    static.enable(False)
    index.fast_pool = None
    if not settings.fast_first or settings.mode == "lexical":
        return
    try:
        dim = static.dimension()
    except (OSError, ValueError) as exc:
        log.warning("fast first vectors off: %s", exc)
        return
    index.fast_pool = FastPool(dim)
    static.enable(True)


async def rebuild(index: LiveIndex, notes: NoteStore) -> int:
    """Pool the notes that are still pending at open (their points were written by an
    earlier process): their index payloads, their static vectors. Returns how many."""
    pool = index.fast_pool
    if pool is None:
        return 0
    pending = await notes.pending_newest(REBUILD_LIMIT)
    if not pending:
        return 0
    ids = [point_id("note", n.id) for n in pending]
    payloads = await index.payloads(ids)
    todo = [
        (pid, n)
        for pid, n in zip(ids, pending, strict=True)
        if payloads.get(pid, {}).get("dense") is False and pid not in pool
    ]
    docs = [note_document(n) for _, n in todo]
    vectors = await anyio.to_thread.run_sync(_encode, docs)
    for (pid, _), vec in zip(todo, vectors, strict=True):
        if vec is not None:
            pool.put(pid, vec, payloads[pid])
    index.generation += 1  # an answer computed before is not the answer now
    return len(todo)


def _encode(docs: list[str]) -> list[list[float] | None]:
    return [static.vector(d) for d in docs]


async def release_idle(index: LiveIndex, every_s: float = IDLE_RELEASE_S / 2) -> None:
    """Runs for the app's life: lets the static model go while nothing is pending."""
    while True:
        await anyio.sleep(every_s)
        pool = index.fast_pool
        idle = pool.empty_for() if pool is not None else 0.0
        if idle >= IDLE_RELEASE_S and static.release():
            log.debug("fast first model released after %.0f s with nothing pending", idle)


class FastFirst:
    def __init__(self, index: LiveIndex, settings: SearchSettings) -> None:
        self.index, self.limit = index, settings.fast_first_limit

    async def hits(self, query: str, flt: IndexFilter) -> list[IndexHit]:
        """The pool's best hits for ``query`` (none: an empty pool, or a query with no
        piece in the static table)."""
        pool = self.index.fast_pool
        if pool is None or not len(pool):
            return []
        vec = await anyio.to_thread.run_sync(static.vector, query)
        if vec is None:
            return []
        hits = [h for h in pool.search(vec, flt, self.limit) if h.score >= LEAST_COSINE]
        for hit in hits:
            hit.score = E5_AT_ZERO + E5_PER_COSINE * hit.score
        return hits
