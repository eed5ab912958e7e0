"""A gateway that shares its truth store with others follows the change feed.

Each gateway has its own index (in its own data dir) and keeps it current from the
truth store alone: the ``Applier`` follows vectors and priors; ``Follower`` follows the
notes and records any process added, edited, linked or deleted (``stores.changes``),
rewriting their points from the rows as they stand now (``Indexer.apply_changes``).

Cursors are per gateway: ``<key>@<gateway id>`` in ``meta`` (the id is a file in the
data dir, so a gateway whose data dir is new starts at 0 and builds its index from the
feed). A cursor moves only after the index write: a crash in between re-applies, which
is idempotent. Start-up, a restart and a gateway that fell behind all catch up the same
way: one indexed read "since N" at a time.

Two ways in:
- ``run`` polls every ``poll_s`` (0.5 s): what another gateway wrote is searchable here
  within about that, with nobody asking;
- ``catch_up`` before every search (read-your-writes): one read of both feeds' heads;
  if either is past this gateway's cursor, apply now. A client whose add was
  acknowledged by gateway A (committed) and whose next search lands on gateway B finds
  the note there, whichever gateway answers, without sending anything extra.

Joining: from its start until its cursors first reach both heads, a gateway is
*joining* (a new one, one restarted after being down, one that loaded a snapshot and
follows the feed from its position). A search then catches up inline only when at
most ``JOIN_INLINE`` items are missing; further behind, it is refused with
``IndexJoining`` (how far behind, retry), never answered from a half-built index and
never left waiting minutes behind the whole backlog; ``run`` catches up meanwhile. Once
current, the gateway stays joined: later searches catch up inline as above, however
far a burst of writes put it behind.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable

import anyio

from mcp_gateway.common.errors import IndexJoining
from mcp_gateway.indexing.applier import Applier
from mcp_gateway.indexing.indexer import Indexer
from mcp_gateway.stores.changes import ChangeFeed
from mcp_gateway.stores.db import Database

log = logging.getLogger(__name__)

FEED_KEY = "index.feed_seq"
BATCH = 512
# what a joining gateway's search may still apply inline (changes + vectors): one batch
JOIN_INLINE = BATCH


class Follower:
    def __init__(
        self,
        db: Database,
        feed: ChangeFeed,
        indexer: Indexer,
        applier: Applier,
        suffix: str,
        poll_s: float = 0.5,
    ) -> None:
        self.db, self.feed, self.indexer, self.applier = db, feed, indexer, applier
        self.key, self.poll_s = f"{FEED_KEY}{suffix}", poll_s
        self.pass_lock = anyio.Lock()  # one pass at a time; a second caller waits for it
        self.seq: int | None = None  # the cursor, once read
        self.applied = 0
        # called after passes that applied notes or records, at most every
        # ``changed_every_s`` (the owner asks for a session_context export: its data
        # dir's copy then shows every gateway's writes, without one export per pass)
        self.changed: Callable[[], Awaitable[None]] | None = None
        self.changed_every_s = 5.0
        self._owed = False
        self._told = 0.0
        # set once both cursors reached the feeds' heads since the start (``catch_up``)
        self.joined = False
        self.current = anyio.Event()  # set with ``joined``
        self.started = time.monotonic()
        # True while ``run`` follows in the background: only then may a joining search
        # be refused (someone catches up meanwhile); a one-shot CLI command's app has no
        # background follower and catches up inline, however far behind
        self.background = False
        # where one gateway writes for the deployment (``indexing.shared``): whether this
        # one may write now, asked before each batch (None: always)
        self.gate: Callable[[], Awaitable[bool]] | None = None

    async def cursor(self) -> int:
        if self.seq is None:
            self.seq = int(await self.db.get_meta(self.key) or 0)
        return self.seq

    async def run(self) -> None:
        """Follow forever (the gateway's lifetime); a failing pass is retried."""
        self.background = True
        while True:
            try:
                await self.apply_pending()  # vectors: the applier's own loop
                if not self.joined:
                    await self.behind()  # notes it once current
                await self.tell()
            except Exception as exc:  # the store may be restarting: retry, never die
                log.warning("following the change feed failed (%s); retrying", exc)
                await anyio.sleep(1.0)
            await anyio.sleep(self.poll_s)

    async def apply_pending(self) -> int:
        """Rewrite the points of every item changed since the cursor; returns items."""
        async with self.pass_lock:
            done = 0
            while rows := await self.feed.since(await self.cursor(), BATCH):
                if self.gate is not None and not await self.gate():
                    break
                notes = [r.source_id for r in rows if r.kind == "note"]
                records = [r.source_id for r in rows if r.kind == "record"]
                await self.indexer.apply_changes(notes, records)
                self.seq = rows[-1].seq
                await self.db.set_meta(self.key, str(self.seq))
                done += len(rows)
            self.applied += done
        if done:
            self._owed = True
        return done

    def owe(self) -> None:
        """Changes reached the index (written by another process): tell the owner."""
        self._owed = True

    async def tell(self) -> None:
        if not self._owed or self.changed is None:
            return
        if time.monotonic() - self._told >= self.changed_every_s:
            self._owed, self._told = False, time.monotonic()
            await self.changed()

    async def behind(self) -> tuple[int, int]:
        """(changes, vectors) committed but not yet applied here (items, counted up to
        ``64 * JOIN_INLINE``); marks the gateway joined once both are 0."""
        changes, vectors = await self.feed.heads()
        applied, cursor = await self.applier.cursor_seq(), await self.cursor()
        gap = (0, 0)
        if changes > cursor:  # a seq gap overstates re-written items: count them
            rows = await self.db.fetchall(
                "SELECT COUNT(*) AS n FROM (SELECT 1 FROM changes WHERE seq > ? LIMIT ?) AS c",
                (cursor, JOIN_INLINE * 64),
            )
            gap = (int(rows[0]["n"]), 0)
        if vectors > applied:  # the seq counts every model's vectors: count this one's
            rows = await self.db.fetchall(
                "SELECT COUNT(*) AS n FROM (SELECT 1 FROM vectors WHERE model = ? AND seq > ? "
                "LIMIT ?) AS pending",
                (self.indexer.model_id, applied, JOIN_INLINE * 64),
            )
            gap = (gap[0], int(rows[0]["n"]))
        if gap == (0, 0) and not self.joined:
            self.joined = True
            self.current.set()
            log.info("index current: joined in %.1f s", time.monotonic() - self.started)
        return gap

    async def catch_up(self) -> None:
        """Before a read: apply whatever was committed anywhere before it started.
        Raises ``IndexJoining`` while joining with more than ``JOIN_INLINE`` missing
        and ``run`` catching up in the background."""
        if self.joined:
            changes, vectors = await self.feed.heads()
            if changes > await self.cursor():
                await self.apply_pending()
            if vectors > await self.applier.cursor_seq():
                await self.applier.apply_pending()
            return
        changes, vectors = await self.behind()
        if self.background and not self.joined and changes + vectors > JOIN_INLINE:
            raise IndexJoining(
                f"this gateway is still catching up with the shared memory after its start "
                f"({changes} changes and {vectors} vectors behind): searching its index "
                "now could miss memories, so it answers nothing yet. Retry in a few seconds "
                "(another gateway of the deployment can answer now)"
            )
        if changes:
            await self.apply_pending()
        if vectors:
            await self.applier.apply_pending()
        if changes or vectors:
            await self.behind()
