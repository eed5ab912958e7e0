"""A new gateway joins from a published index snapshot, refuses to answer until its
index is current, and loses nothing when killed while loading or catching up.

Real processes and the real door: ``kioku serve --http`` gateways on the machine's
PostgreSQL (a schema of this test's own, ``tests/pg_server.py``), jobs in-process.

1. Gateway A takes notes over HTTP and publishes a snapshot of its index (the first
   one: there is none yet); then more notes than a joining search applies inline.
2. Gateway B starts on an empty data dir and is SIGKILLed on its "loading index
   snapshot" line (during the load, or just after it on a fast machine), started again
   (it loads again, or finishes the interrupted load from the position file), searched
   at once (refused with ``IndexJoining``'s words, or, already current, answered with the
   newest note: never a partial answer), SIGKILLed while catching up, started a third
   time.
3. B then answers, and every acknowledged note is in B's index: its point ids, read from
   B's shard after a clean stop, hold every note id in the truth store; the first, a
   middle and the last note are found over HTTP.

The in-process test below makes each step happen without timing: the refusal while
behind, the answer after one follower pass, inline catch-up once joined.
"""

from __future__ import annotations

import asyncio
import signal
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp import Client

from mcp_gateway.common.access import settings_scope
from mcp_gateway.common.errors import IndexJoining
from mcp_gateway.common.inputs import NoteFields, NoteQuery
from mcp_gateway.common.sections import IndexSettings
from mcp_gateway.common.settings import KiokuSettings
from mcp_gateway.common.types import point_id
from mcp_gateway.index.base import IndexSpec
from mcp_gateway.index.edge import EdgeIndex
from mcp_gateway.indexing import snapshot
from mcp_gateway.indexing.follow import JOIN_INLINE
from mcp_gateway.services.app import AppContext, open_app
from mcp_gateway.services.notes import NoteService
from mcp_gateway.stores.db import Database
from tests.cluster import KIOKU, TOKEN, Deployment, Host, Proc, free_port, hosts, wait_port
from tests.http_server import http_client
from tests.pg_server import ScratchDatabase

EARLY = 40  # in the snapshot
LATE = 700  # after it: more than a joining search applies inline (follow.JOIN_INLINE)
CLIENTS = 4
WORDS = ["deploy", "rollback", "cache", "デプロイ", "キャッシュ", "ดีพลอย", "แคช", "queue"]


def note_text(i: int) -> str:
    return f"join note {i} {WORDS[i % len(WORDS)]} marker{i:05d}x"


@pytest.fixture
def deployment(pg_database: ScratchDatabase, tmp_path: Path) -> Iterator[Deployment]:
    url = pg_database.new_schema()
    dep = Deployment(tmp_path, url, None, "default")
    try:
        yield dep
    finally:
        dep.close()


async def add_all(gw: Proc, todo: list[int], acked: dict[int, str]) -> None:
    async def one_client(part: list[int]) -> None:
        async with http_client(gw.url, TOKEN) as client:
            for i in part:
                out = await client.call_tool("add_note", {"text": note_text(i), "type": "note"})
                assert not out.is_error, out
                assert out.structured_content is not None
                acked[i] = out.structured_content["id"]

    await asyncio.gather(*(one_client(todo[c::CLIENTS]) for c in range(CLIENTS)))


async def search(client: Client, i: int) -> tuple[bool, str, list[str]]:
    out = await client.call_tool("search_memory", {"query": f"marker{i:05d}x", "top": 5})
    text = out.content[0].text if out.content else ""  # type: ignore[union-attr]
    ids = [r["id"] for r in (out.structured_content or {}).get("results", [])]
    return bool(out.is_error), str(text), ids


def wait_log(gw: Proc, needle: str, timeout_s: float, after: int = 0) -> None:
    """Until ``gw``'s log holds ``needle`` more than ``after`` times."""
    deadline = time.monotonic() + timeout_s
    while gw.tail(1_000_000).count(needle) <= after:
        assert gw.alive(), gw.tail()
        assert time.monotonic() < deadline, f"no {needle!r} in {gw.name}'s log: {gw.tail()}"
        time.sleep(0.02)


async def snapshot_published(url: str, timeout_s: float) -> int:
    db = Database(url)
    await db.open()
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            rows = await db.fetchall(
                "SELECT points FROM index_snapshots WHERE complete = 1 ORDER BY id DESC"
            )
            if rows and int(rows[0]["points"]) > 0:
                return int(rows[0]["points"])
            assert time.monotonic() < deadline, "no snapshot published"
            await asyncio.sleep(0.2)
    finally:
        await db.close()


async def live_note_ids(url: str) -> set[str]:
    db = Database(url)
    await db.open()
    try:
        rows = await db.fetchall("SELECT id FROM notes WHERE deleted = 0")
        return {str(r["id"]) for r in rows}
    finally:
        await db.close()


async def index_ids(data_dir: Path, url: str) -> set[str]:
    """The point ids in the gateway's own index (the gateway stopped)."""
    db = Database(url)
    await db.open()
    try:
        name = await db.get_meta("index.active") or "kioku"
        model, _, dim = (await db.get_meta("index.model") or "").rpartition("@")
    finally:
        await db.close()
    index = EdgeIndex(IndexSpec(name, int(dim), model), data_dir / "index" / "edge")
    await index.open()
    try:
        return await index.ids()
    finally:
        await index.close()


@pytest.mark.slow
async def test_a_new_gateway_loads_a_snapshot_and_loses_nothing_across_kills(
    deployment: Deployment,
) -> None:
    url = str(deployment.db_url)
    with hosts(2, netns=False) as (ha, hb):
        a = gateway(deployment, "a", ha, "WARNING").start()
        acked: dict[int, str] = {}
        await add_all(a, list(range(EARLY)), acked)
        in_snapshot = await snapshot_published(url, 120)
        await add_all(a, list(range(EARLY, EARLY + LATE)), acked)

        b = launch(gateway(deployment, "b", hb, "INFO"))
        wait_log(b, "loading index snapshot", 120)
        b.kill()  # during the load: nothing of it counts yet
        launch(b)
        listening(b)
        log = b.tail(1_000_000)
        assert "loaded index snapshot" in log or "position restored" in log, log
        async with http_client(b.url, TOKEN) as client:
            refused, text, ids = await search(client, EARLY + LATE - 1)
        # refused while behind (how long B stays behind depends on this machine's
        # speed: tests/test_join.py's in-process test makes sure of the refusal), or
        # current already: then the newest note is in the answer, never a partial one
        if refused:
            assert "catching up" in text and "Retry" in text, text
        else:
            assert acked[EARLY + LATE - 1] in ids, text
        print(f"B's first search after loading the snapshot: {'refused' if refused else 'current'}")
        b.kill()  # during the catch-up
        launch(b)
        listening(b)

        deadline = time.monotonic() + 180
        async with http_client(b.url, TOKEN) as client:
            for i in (0, EARLY, EARLY + LATE // 2, EARLY + LATE - 1):
                while True:
                    refused, text, ids = await search(client, i)
                    if not refused:
                        break
                    assert "catching up" in text, text
                    assert time.monotonic() < deadline, "B never caught up"
                    await asyncio.sleep(0.5)
                assert acked[i] in ids, (i, text)
        b.kill(signal.SIGTERM)
        stored = await live_note_ids(url)
        assert set(acked.values()) <= stored
        points = await index_ids(deployment.root / "b" / "data", url)
        lost = {nid for nid in stored if point_id("note", nid) not in points}
        assert not lost, f"{len(lost)} acknowledged notes missing from B's index"
        assert in_snapshot > 0


def gateway(dep: Deployment, name: str, host: Host, level: str) -> Proc:
    """A gateway of ``dep`` (not started) that publishes a snapshot as soon as it is
    current and has points, and never again (one per collection: none exists yet)."""
    env = dep._env(name, host)
    env.update(
        KIOKU_LOG_LEVEL=level,
        KIOKU_INDEX__SNAPSHOT_EVERY_S="0.5",
        KIOKU_INDEX__SNAPSHOT_MIN_CHANGES="1000000",
    )
    port = free_port()
    argv = [KIOKU, "serve", "--http", "--host", host.addr, "--port", str(port)]
    proc = Proc(name, host, argv, env, dep.root / f"{name}.log", port)
    dep.procs.append(proc)
    return proc


def launch(proc: Proc) -> Proc:
    """Start ``proc`` without waiting for its port (its log says how far it got)."""
    port, proc.port = proc.port, 0
    try:
        proc.start()
    finally:
        proc.port = port
    return proc


def listening(proc: Proc, timeout_s: float = 180) -> None:
    wait_port(proc.host.addr, proc.port, timeout_s, proc.proc)


# -- in process: the same steps, each one made to happen (no timing) -------------------


def shared_settings(tmp_path: Path, name: str, url: str, collection: str) -> KiokuSettings:
    return KiokuSettings(
        data_dir=tmp_path / name,
        database_url=url,
        redis_url=None,
        qdrant_url=None,
        index=IndexSettings(collection=collection),
    )


async def add_direct(app: AppContext, first: int, n: int) -> list[str]:
    """``n`` notes committed to the truth store (acknowledged), not through any index."""
    out = []
    for i in range(first, first + n):
        out.append((await app.notes.add(NoteFields(text=note_text(i), type="note"))).id)
    return out


async def test_a_joining_gateway_refuses_searches_until_current_then_answers_inline(
    tmp_path: Path, pg_database: ScratchDatabase
) -> None:
    url = pg_database.new_schema()
    collection = f"t_{uuid.uuid4().hex[:12]}"
    a_settings = shared_settings(tmp_path, "a", url, collection)
    scope = settings_scope(a_settings)
    async with open_app(a_settings) as a:
        early = [
            (await NoteService(a).add(scope, NoteFields(text=note_text(i), type="note"))).id
            for i in range(12)
        ]
        await a.settle()
        assert a.follower is not None
        assert isinstance(a.index.current, EdgeIndex)
        await a.follower.catch_up()
        published = await snapshot.publish(
            a.db, a.index.current, a.follower, a.applier.points_lock, "a"
        )
        assert published is not None and published.points == len(early)
        late = await add_direct(a, 100, JOIN_INLINE + 50)

    # B: a new data dir; no background work, so nothing catches up but what is asked
    async with open_app(shared_settings(tmp_path, "b", url, collection), run_jobs=False) as b:
        assert b.follower is not None and not b.follower.joined
        # a one-shot command's app (no background follower) catches up inline...
        b.follower.background = True  # ...a serving gateway's follower runs meanwhile
        pids = [point_id("note", nid) for nid in early]
        present = await b.index.present(pids)
        assert all(present.get(p) is True for p in pids)  # from the snapshot, embedded
        with pytest.raises(IndexJoining, match="catching up") as refused:
            await NoteService(b).search(scope, NoteQuery(query=f"marker{100:05d}x"))
        assert f"{len(late)} changes" in str(refused.value)
        await b.follower.apply_pending()  # what the gateway's follower does meanwhile
        found = await NoteService(b).search(scope, NoteQuery(query=f"marker{100 + 7:05d}x"))
        assert late[7] in [r.id for r in found.results]
        assert b.follower.joined
        # once current, a burst however large is caught up inline (read-your-writes)
        more = await add_direct(b, 2000, JOIN_INLINE + 50)
        found = await NoteService(b).search(scope, NoteQuery(query=f"marker{2000 + 3:05d}x"))
        assert more[3] in [r.id for r in found.results]
