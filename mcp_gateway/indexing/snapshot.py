"""Joining in seconds: a gateway's index published to the truth store, loaded by a new one.

Without this, a gateway with an empty data dir builds its index from the change feed
and the stored vectors: every note read and written twice (lexically, then with its
vector), minutes at 50k notes. With it:

- **Publish** (``publish_every``): one gateway of the deployment at a time (the holder of
  the ``index:snapshot`` lease), once it is current, every ``index.snapshot_every_s``
  when the feed moved ``index.snapshot_min_changes`` or more since the newest snapshot
  (or none exists): under the follower's and the applier's locks (no pass half-applied,
  so the cursors read there are what the index holds), the shard's files are copied
  with writes held back for the copy (``EdgeIndex.copy_files``), then packed and
  uploaded in chunks (``stores.snapshots``) outside any lock.
- **Load** (``load_newest``, at start-up, before the index opens): a gateway on a shared
  store whose index directory does not exist yet (a new host, a lost data dir) and finds
  a complete snapshot of the live collection for its model downloads and unpacks it
  beside the index root, puts a position file in it, renames it into place (atomic),
  then sets its own cursors to the snapshot's. From there it follows the feed
  (``indexing.follow``): everything committed after the snapshot is applied as any
  write is, and until it is current its searches are refused (``IndexJoining``).

Kills: a kill during the download or unpack leaves a temporary directory that the next
start removes (``catalog.remove_leftovers``) and no cursor set: it loads again. A kill
after the rename but before the cursors are set leaves the index with its position file
and no cursor for this gateway: the next start sets the cursors from that file. Either
way nothing is skipped: the cursors never run ahead of what the index holds, and every
acknowledged write is in the truth store, which the feed replays from there.
"""

from __future__ import annotations

import json
import logging
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import anyio
import anyio.to_thread

from mcp_gateway.index import catalog
from mcp_gateway.index.base import IndexSpec
from mcp_gateway.index.edge import EdgeIndex
from mcp_gateway.index.edge_snapshot import pack, unpack
from mcp_gateway.indexing.follow import FEED_KEY, Follower
from mcp_gateway.stores.db import Database
from mcp_gateway.stores.leases import Leases
from mcp_gateway.stores.snapshots import CHUNK_BYTES, Snapshot, SnapshotStore

log = logging.getLogger(__name__)

LEASE = "index:snapshot"
POSITION_FILE = "kioku_snapshot.json"
TEMP_PREFIX = ".snapshot-"


def cursor_keys(spec: IndexSpec) -> list[str]:
    """Every cursor an index's content is current to (without a gateway's suffix)."""
    return [
        FEED_KEY,
        catalog.APPLIED_KEY,
        catalog.PRIORS_KEY,
        *(catalog.applied_key(c.name) for c in spec.channels),
    ]


def model_key(spec: IndexSpec) -> str:
    return f"{spec.model_id}@{spec.dim}"


async def set_cursors(db: Database, cursors: dict[str, str], suffix: str) -> None:
    rows = [(key + suffix, value) for key, value in cursors.items()]
    await db.transaction(
        lambda c: c.executemany(
            "INSERT INTO meta(key, value) VALUES (?, ?) "
            "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            rows,
        )
    )


async def load_newest(db: Database, root: Path, spec: IndexSpec, suffix: str) -> Snapshot | None:
    """Put the newest snapshot of ``spec`` at ``root / spec.collection`` when that
    directory does not exist, and set this gateway's cursors to its position; or finish
    a load a kill interrupted after the rename. Returns the snapshot loaded (None: none
    loaded: the directory was there, or no snapshot fits). A snapshot that cannot be
    read or unpacked is logged and skipped: the gateway then builds from the feed."""
    target = root / spec.collection
    if await anyio.to_thread.run_sync(target.exists):
        await _finish_interrupted(db, target, suffix)
        return None
    store = SnapshotStore(db)
    found = await store.newest(spec.collection, model_key(spec))
    if found is None:
        return None
    started = time.monotonic()
    log.info("loading index snapshot %d (%.1f MB)", found.id, found.bytes / 1e6)
    temp = await anyio.to_thread.run_sync(_temp_dir, root)
    try:
        archive = temp / "snapshot.tar.gz"
        out = await anyio.to_thread.run_sync(archive.open, "wb")
        try:
            async for chunk in store.chunks(found):
                await anyio.to_thread.run_sync(out.write, chunk)
        finally:
            out.close()
        position = {"snapshot": found.id, "cursors": found.cursors}
        await anyio.to_thread.run_sync(_place, archive, temp / "shard", position, target)
    except (LookupError, ValueError, OSError) as exc:
        log.warning("index snapshot %d not loaded (%s): building from the feed", found.id, exc)
        return None
    finally:
        await anyio.to_thread.run_sync(lambda: shutil.rmtree(temp, ignore_errors=True))
    await set_cursors(db, found.cursors, suffix)
    log.info(
        "loaded index snapshot %d (%d points, %.1f MB, change %d) in %.1f s; following "
        "the feed from there",
        found.id,
        found.points,
        found.bytes / 1e6,
        found.change_seq,
        time.monotonic() - started,
    )
    return found


def _temp_dir(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=TEMP_PREFIX, dir=root))


def _place(archive: Path, shard: Path, position: dict[str, object], target: Path) -> None:
    """Unpack, mark with its position, then move into place in one rename."""
    unpack(archive, shard)
    (shard / POSITION_FILE).write_text(json.dumps(position), "utf-8")
    shard.rename(target)


async def _finish_interrupted(db: Database, target: Path, suffix: str) -> None:
    """A kill between the rename and the cursors: set them from the position file."""
    position = target / POSITION_FILE
    if await db.get_meta(FEED_KEY + suffix) is not None:
        return
    try:
        text = await anyio.to_thread.run_sync(position.read_text, "utf-8")
    except FileNotFoundError:
        return  # an index this gateway built itself
    except OSError as exc:
        log.warning("cannot read %s (%s): the index follows the feed from 0", position, exc)
        return
    try:
        cursors = json.loads(text)["cursors"]
    except (ValueError, KeyError, TypeError) as exc:
        log.warning("cannot read %s (%s): the index follows the feed from 0", position, exc)
        return
    await set_cursors(db, {str(k): str(v) for k, v in cursors.items()}, suffix)
    log.info("index snapshot position restored from %s", position)


async def publish(
    db: Database, index: EdgeIndex, follower: Follower, lock: anyio.Lock, gateway: str
) -> Snapshot | None:
    """Publish this gateway's index now; ``lock``: the points lock (applier and
    indexer), held with the follower's so the cursors read are what the index holds."""
    spec = index.spec
    suffix = follower.key[len(FEED_KEY) :]
    temp = await anyio.to_thread.run_sync(_temp_dir, index.dir.parent)
    store = SnapshotStore(db)
    try:
        async with follower.pass_lock, lock:
            cursors = {}
            for key in cursor_keys(spec):
                cursors[key] = await db.get_meta(key + suffix) or "0"
            points = await index.count()
            await index.copy_files(temp / "shard")
        archive = temp / "snapshot.tar.gz"
        size = await anyio.to_thread.run_sync(pack, temp / "shard", archive)
        change_seq = int(cursors[FEED_KEY])
        snapshot_id = await store.begin(
            spec.collection, model_key(spec), cursors, change_seq, points, gateway
        )
        n = 0
        f = await anyio.to_thread.run_sync(archive.open, "rb")
        try:
            while chunk := await anyio.to_thread.run_sync(f.read, CHUNK_BYTES):
                await store.put_chunk(snapshot_id, n, chunk)
                n += 1
        finally:
            f.close()
        await store.finish(snapshot_id, n, size)
    finally:
        await anyio.to_thread.run_sync(lambda: shutil.rmtree(temp, ignore_errors=True))
    log.info("published index snapshot %d: %d points, %.1f MB", snapshot_id, points, size / 1e6)
    return await store.newest(spec.collection, model_key(spec))


async def due(db: Database, index: EdgeIndex, follower: Follower, min_changes: int) -> bool:
    """Whether this gateway should publish: current, and the feed moved at least
    ``min_changes`` since the newest snapshot of its collection (or there is none)."""
    if not follower.joined or await index.count() == 0:
        return False
    newest = await SnapshotStore(db).newest(index.spec.collection, model_key(index.spec))
    cursor = await follower.cursor()
    return newest is None or cursor - newest.change_seq >= min_changes


async def publish_every(
    db: Database,
    index_of: Callable[[], object],
    follower: Follower,
    lock: anyio.Lock,
    gateway: str,
    every_s: float,
    min_changes: int,
) -> None:
    """The gateway's periodic publisher (its lifetime). ``index_of``: a callable giving
    the index served now (a reindex swaps it; only an embedded one is published)."""
    leases = Leases(db, gateway)
    while True:
        await anyio.sleep(every_s)
        try:
            index = index_of()
            if not isinstance(index, EdgeIndex):
                continue
            if not await leases.acquire(LEASE, every_s * 1.5):
                continue
            if await due(db, index, follower, min_changes):
                await publish(db, index, follower, lock, gateway)
        except Exception:
            log.exception("publishing the index snapshot failed; retrying")
