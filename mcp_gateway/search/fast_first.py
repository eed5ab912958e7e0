"""Fast first, exact later: pending notes searched by their static vector.

A note is only lexically indexed until its first dense vector lands (~10 s at a
burst's tail on 2 cores; bench/LOG.md, "burst over MCP"). The index's fast pool
(``index.fast_pool``) holds a static vector (``embedders.static``) of each such note;
a search scores the pool by the query's static vector, maps the best hits' cosines onto
e5's scale and fuses them as dense hits of pending notes only (``ranking.fuse``'s
``fast``): a paraphrase with no word in common is found at once, and the note leaves
the pool when e5 has read it (``search.fast_first``).

The static table is distilled from e5 itself and its rows then trained so that a
text's static vector follows e5's vector of that text (``training/static_train.py``): it
reads what e5's tokenizer reads, Latin, Japanese and Thai alike, so no script abstains.
The query side is e5's own: the search has the query's e5 vector already (the dense
channel's), and projected into the table's space (less the training targets' centre,
on the table's components) it is where the trained rows aim, so it scores the pool far
better than the query's static vector (held-out at 200 pending: +0.016 against +0.000;
bench/LOG.md, "fast first: a trained table"). Without it (another dense model, or a
table with no recorded centre) the query's static vector scores the pool.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import anyio.to_thread
import numpy as np

from mcp_gateway.common.sections import SearchSettings
from mcp_gateway.common.types import IndexFilter, IndexHit, point_id
from mcp_gateway.embedders import static
from mcp_gateway.index.fast_pool import FastPool
from mcp_gateway.index.live import LiveIndex
from mcp_gateway.indexing.points import note_document
from mcp_gateway.stores.notes import NoteStore

log = logging.getLogger(__name__)

# pool cosine (the projected e5 query against a note's static vector) -> e5-small
# cosine (the dense channel's scale), and the least pool cosine a hit needs: chosen on
# both dev sets at 500 / 250 / 100 / 50 pending (bench/LOG.md, "fast first: a trained
# table"). The pool cosine follows e5's only loosely (correlation 0.35-0.45), so its
# scale is e5's compressed; below 0.4 a pool hit is mostly an unrelated pending note,
# which with few notes pending pushes an indexed answer down.
E5_AT_ZERO, E5_PER_COSINE = 0.72, 0.20
LEAST_COSINE = 0.4
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


# the dense model whose query vectors the table's rows were trained against, by the
# table's e5 variant (the model ids ``embedders.local`` gives them)
E5_MODEL_IDS = {
    "original": "local/multilingual-e5-small-q4",
    "enpt": "local/multilingual-e5-small-q4-enpt",
}


def query_projection(dense_model: str) -> tuple[np.ndarray, np.ndarray] | None:
    """(centre, components) that take ``dense_model``'s query vector into the table's
    space, or None when that model is not the table's teacher or the table records no
    centre (a distilled table)."""
    try:
        meta = np.load(static.META_FILE)
    except (OSError, ValueError) as exc:
        log.warning("fast first: no table meta: %s", exc)
        return None
    if "centre" not in meta.files or E5_MODEL_IDS.get(str(meta["variant"])) != dense_model:
        return None
    return meta["centre"].astype(np.float32), meta["components"].astype(np.float32)


class FastFirst:
    def __init__(self, index: LiveIndex, settings: SearchSettings, dense_model: str = "") -> None:
        """``dense_model``: the dense embedder's model id (its query vectors score the
        pool when it is the table's teacher)."""
        self.index, self.limit = index, settings.fast_first_limit
        self.projection = query_projection(dense_model) if dense_model else None

    async def hits(
        self, query: str, flt: IndexFilter, query_vector: Sequence[float] | None = None
    ) -> list[IndexHit]:
        """The pool's best hits for ``query`` (none: an empty pool, or a query with no
        piece in the static table); ``query_vector``: the query's dense vector, which
        scores the pool instead of its static one where ``projection`` allows."""
        pool = self.index.fast_pool
        if pool is None or not len(pool):
            return []
        vec = self.projected(query_vector)
        if vec is None:
            vec = await anyio.to_thread.run_sync(static.vector, query)
        if vec is None:
            return []
        hits = [h for h in pool.search(vec, flt, self.limit) if h.score >= LEAST_COSINE]
        for hit in hits:
            hit.score = E5_AT_ZERO + E5_PER_COSINE * hit.score
        return hits

    def projected(self, query_vector: Sequence[float] | None) -> list[float] | None:
        """The dense query vector in the table's space, unit length (None: no
        projection, no vector, or a vector of the wrong width)."""
        if self.projection is None or query_vector is None:
            return None
        centre, components = self.projection
        if len(query_vector) != len(centre):
            return None
        vec = (np.asarray(query_vector, np.float32) - centre) @ components
        norm = float(np.linalg.norm(vec))
        return (vec / norm).tolist() if norm > 0 else None
