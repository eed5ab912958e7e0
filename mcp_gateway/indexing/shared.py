"""One writer for an index every gateway shares (a Qdrant server: ``qdrant_url``).

Every gateway opens the same collection, so applying the truth store's feeds in each
of them wrote every change once per gateway. Instead one gateway at a time, the holder
of the ``index:writer`` lease (``stores.leases``), applies both feeds (notes and
records: ``Follower``; vectors and priors: ``Applier``) under cursors of the deployment
(``<key>@deployment`` in ``meta``), and after each complete pass publishes how far it
got: ``index.through@deployment`` = the changes' and vectors' heads it read before the
pass (writers are serialised, so everything committed up to them is in the collection
now). The others write nothing into the collection: their adds, edits and deletes
reach it through the feed like anyone's (``Indexer.direct`` off), and so do the
writer's own.

- **Exactly once per change** while the writer lives: one process applies each feed
  entry once. **At least once across its death**: the cursors move after the index
  write, so whoever takes over re-applies the batch in flight (idempotent upserts of
  the points as the truth store holds them now).
- **Read-your-writes.** Before a search a gateway reads the heads and the mark in one
  query. The writer applies what is newer inline (as a lone gateway does); another
  gateway waits, polling the mark, until it passes the heads it read: an add
  acknowledged anywhere before the search began is then in the collection. A wait
  longer than ``writer_wait_s`` (a writer stopped, or far behind) ends in
  ``IndexBehind``, saying how far behind: never an answer from an index that lacks
  what the caller may just have written, without saying so (a refusal is retried, or
  answered once the writer caught up; an incomplete answer reads as "there is none").
- **Takeover.** The writer renews its lease every third of ``writer_lease_s``, and
  checks it before each batch it writes: one that lost it (stalled past it) stops
  writing. The others look at the lease every ``poll_s`` (and a waiting search every
  ``WAIT_POLL_S``): once it has expired one takes it, reads the deployment's cursors
  afresh and carries on from them. The mark is published only while the lease is
  held (checked in the same transaction), so it never claims what a stale writer did.
- A non-writer's answers cache (``search.answers``) keys on the index generation: it
  moves whenever the published mark does, since the writes it stands for were made
  by another process.

Leases compare the hosts' wall clocks: the skew must stay far below
``writer_lease_s`` (NTP). A writer frozen mid-write for longer than that (the write
landing after its successor rewrote the same points) may leave a point one version
old; the next change of that item, or ``kioku reindex``, rewrites it.
"""

from __future__ import annotations

import logging
import sqlite3
import time

import anyio

from mcp_gateway.common.errors import IndexBehind, KiokuError
from mcp_gateway.index.live import LiveIndex
from mcp_gateway.indexing.applier import Applier
from mcp_gateway.indexing.follow import Follower
from mcp_gateway.stores.db import Database
from mcp_gateway.stores.leases import Leases

log = logging.getLogger(__name__)

SUFFIX = "@deployment"  # the deployment's cursors: ``index.feed_seq@deployment`` ...
THROUGH_KEY = "index.through" + SUFFIX
LEASE = "index:writer"
WRITER_POLL_S = 0.1  # the writer's look at the heads (one indexed read)
OTHERS_POLL_S = 0.5  # a non-writer's look at the lease and the mark
WAIT_POLL_S = 0.05  # a waiting search's look at the mark

Heads = tuple[int, int]


def _parse(mark: str | None) -> Heads:
    if not mark:
        return (0, 0)
    changes, _, vectors = mark.partition(",")
    return (int(changes), int(vectors or 0))


class SharedWriter:
    def __init__(
        self,
        db: Database,
        index: LiveIndex,
        follower: Follower,
        applier: Applier,
        holder: str,
        lease_s: float,
        wait_s: float,
    ) -> None:
        self.db, self.index, self.follower, self.applier = db, index, follower, applier
        self.leases, self.holder = Leases(db, holder), holder
        self.lease_s, self.wait_s = lease_s, wait_s
        self._until = 0.0  # monotonic: held until (a margin short of the row's expiry)
        self._renew_at = 0.0
        self._look_at = 0.0  # a non-writer's next look at the lease
        self.seen: Heads = (-1, -1)  # the mark last seen (non-writer) or published
        self.behind_since: float | None = None
        follower.gate = applier.gate = self.may_write

    @property
    def holds(self) -> bool:
        return time.monotonic() < self._until

    async def may_write(self) -> bool:
        """Whether this gateway may write the collection now (checked before each
        batch); renews the lease when due. A lease that lapsed is only taken back by
        ``_take`` (which reads the cursors again)."""
        now = time.monotonic()
        if now < self._renew_at:
            return True
        if now >= self._until:
            return False
        return await self._acquire()

    async def _acquire(self) -> bool:
        started = time.monotonic()
        try:
            held = await self.leases.acquire(LEASE, self.lease_s)
        except KiokuError as exc:  # the store is down: whoever holds it keeps it
            log.warning("index writer lease: %s", exc)
            held = False
        if held:
            # expiry compared from before the statement ran, a tenth short: this side
            # stops before any other can take it
            self._until = started + self.lease_s * 0.9
            self._renew_at = started + self.lease_s / 3
        else:
            self._until = self._renew_at = 0.0
        return held

    async def _take(self) -> bool:
        """Take the lease if it is free or expired; on taking it, start from the
        deployment's cursors as they are now (another writer moved them)."""
        if self.holds:
            return True
        if await self.leases.holder_of(LEASE) not in (None, self.holder):
            return False
        if not await self._acquire():
            return False
        self.follower.seq = None
        self.follower.indexer.written.clear()
        log.info("index writer: this gateway (%s) now writes the shared index", self.holder)
        return True

    async def run(self) -> None:
        """The gateway's lifetime: write while holding the lease, else watch it."""
        while True:
            try:
                await self.step()
            except Exception as exc:  # the store or the server may be restarting
                log.warning("shared index writer: %s; retrying", exc)
                await anyio.sleep(1.0)
            await anyio.sleep(WRITER_POLL_S if self.holds else OTHERS_POLL_S)

    async def step(self) -> None:
        if self.holds or time.monotonic() >= self._look_at:
            self._look_at = time.monotonic() + OTHERS_POLL_S
            if await self._take() and await self.may_write():
                await self.apply(every_feed=True)
                await self.follower.tell()
                return
        heads, through = await self._read()
        await self._saw(through)
        self._note_join(heads, through)
        await self.follower.tell()

    async def apply(self, every_feed: bool = False) -> bool:
        """One pass of both feeds under the deployment's cursors when the heads moved
        past the mark (``every_feed``: also the priors, which have no head); publishes
        the heads it read first once both passes are complete. Whether the collection
        now holds everything up to them (False: the lease lapsed on the way)."""
        heads, through = await self._read()
        if every_feed or not _covers(through, heads):
            await self.follower.apply_pending()
            await self.applier.apply_pending()
            if through != heads and await self.may_write() and await self._publish(heads):
                through = heads
        self.seen = through
        self._note_join(heads, through)
        return _covers(through, heads)

    async def _publish(self, heads: Heads) -> bool:
        value = f"{heads[0]},{heads[1]}"

        def write(conn: sqlite3.Connection) -> None:
            conn.execute(
                "INSERT INTO meta(key, value) VALUES (?, ?) "
                "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                (THROUGH_KEY, value),
            )

        return await self.leases.while_held(LEASE, write)

    async def _read(self) -> tuple[Heads, Heads]:
        rows = await self.db.fetchall(
            "SELECT (SELECT last FROM change_seq WHERE id = 1) AS c, "
            "(SELECT last FROM vector_seq WHERE id = 1) AS v, "
            "(SELECT value FROM meta WHERE key = ?) AS t",
            (THROUGH_KEY,),
        )
        row = rows[0]
        return (int(row["c"] or 0), int(row["v"] or 0)), _parse(row["t"])

    async def _saw(self, through: Heads) -> None:
        if through != self.seen:
            self.seen = through
            self.index.generation += 1  # answers cached before lack what it stands for
            self.follower.owe()  # this data dir's session_context.md shows them too

    def _note_join(self, heads: Heads, through: Heads) -> None:
        if _covers(through, heads) and not self.follower.joined:
            self.follower.joined = True
            self.follower.current.set()

    async def catch_up(self) -> None:
        """Before a search: the collection holds everything committed before this call
        (applied here by the writer, or awaited from it), or ``IndexBehind``."""
        if self.holds and await self.may_write() and await self.apply():
            return
        heads, through = await self._read()
        deadline = time.monotonic() + self.wait_s
        while not _covers(through, heads):
            if await self._take() and await self.apply():  # its heads: read after ours
                return
            if time.monotonic() >= deadline:
                raise IndexBehind(self._behind_message(heads, through))
            await anyio.sleep(WAIT_POLL_S)
            _, through = await self._read()
        await self._saw(through)

    def _behind_message(self, heads: Heads, through: Heads) -> str:
        return (
            f"the shared index is behind the memory: its writer has applied changes up to "
            f"{through[0]} of {heads[0]} and vectors up to {through[1]} of {heads[1]}, and "
            f"did not catch up within {self.wait_s:g} s (it may have stopped: another "
            f"gateway takes over within {self.lease_s:g} s). Searching now could miss "
            "memories, so nothing is answered yet. Retry in a few seconds"
        )

    async def release(self) -> None:
        """A clean stop: another gateway takes over at once, not after the lease."""
        if self.holds:
            self._until = self._renew_at = 0.0
            try:
                await self.leases.release(LEASE)
            except KiokuError as exc:
                log.warning("index writer lease not released (%s): it expires", exc)


def _covers(through: Heads, heads: Heads) -> bool:
    return through[0] >= heads[0] and through[1] >= heads[1]
