"""One Qdrant collection that every gateway shares: one writer for the deployment.

Two real gateway apps (the real model and stores, each its own data dir and gateway id)
on one PostgreSQL truth store, both configured with ``qdrant_url``: the collection they
open is the deployment's, so only the holder of the ``index:writer`` lease may write it
(``indexing.shared``).

The Qdrant server is the one part that does not run here (no server installs on this
machine: docs/scale.md). It is stood in for at the edge we do not own, the
qdrant-client API: one qdrant-client local-mode instance in memory is "the server",
and each gateway's ``AsyncQdrantClient(url=...)`` becomes a ``Link`` to it, which
forwards every call unchanged (kioku's own request building, payloads and searches run
as against a server), counts the points that gateway writes, and can freeze after a
write lands -- a gateway killed between its index write and its cursor's move. Why not
an HTTP stub serving local mode to real ``kioku serve`` processes: it would re-implement
Qdrant's REST surface (another thing under test that is not ours) for what this tests,
which is the coordination through the truth store (lease, cursors, published mark),
all real here; a frozen link is what the other gateway sees of a killed writer (no
renewals, no writes), and the lease's expiry is real wall-clock time.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from qdrant_client import AsyncQdrantClient

from mcp_gateway.common.access import settings_scope
from mcp_gateway.common.errors import IndexBehind
from mcp_gateway.common.inputs import NoteFields, NoteQuery
from mcp_gateway.common.sections import IndexSettings, QueueSettings
from mcp_gateway.common.settings import KiokuSettings
from mcp_gateway.common.types import point_id
from mcp_gateway.index import qdrant as qdrant_module
from mcp_gateway.indexing.shared import LEASE
from mcp_gateway.services.app import AppContext, open_app
from mcp_gateway.services.notes import NoteService
from mcp_gateway.stores.leases import Leases
from tests.pg_server import ScratchDatabase, feed_log

SERVER_URL = "http://qdrant.shared.test:6333"
WORDS = "harbor lantern meadow orchid quarry saddle tundra violet walnut falcon".split()


class Link:
    """A gateway's client of the shared local-mode "server"."""

    def __init__(self, server: AsyncQdrantClient) -> None:
        self.server = server
        self.written: Counter[str] = Counter()  # point id -> upserts through this link
        self.other_writes = 0  # deletes and payload updates
        self.freeze_after_write = False
        self.frozen = anyio.Event()
        self.frozen_ids: list[str] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.server, name)

    async def upsert(self, collection_name: str, points: Any, **kw: Any) -> Any:
        await self._unless_frozen()
        ids = [str(p.id) for p in points]
        self.written.update(ids)
        result = await self.server.upsert(collection_name, points, **kw)
        if self.freeze_after_write:  # landed; the cursor never moves
            self.frozen_ids = ids
            self.frozen.set()
            await anyio.sleep_forever()
        return result

    async def delete(self, *args: Any, **kw: Any) -> Any:
        await self._unless_frozen()
        self.other_writes += 1
        return await self.server.delete(*args, **kw)

    async def set_payload(self, *args: Any, **kw: Any) -> Any:
        await self._unless_frozen()
        self.other_writes += 1
        return await self.server.set_payload(*args, **kw)

    async def _unless_frozen(self) -> None:
        if self.frozen.is_set():
            await anyio.sleep_forever()

    async def close(self) -> None:
        """The server outlives a gateway."""


@pytest.fixture
async def qdrant_server(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[list[Link]]:
    server = AsyncQdrantClient(location=":memory:")
    links: list[Link] = []

    def connect(url: str | None = None, **_: Any) -> Link:
        assert url == SERVER_URL  # every gateway reaches the one server
        links.append(Link(server))
        return links[-1]

    monkeypatch.setattr(qdrant_module, "AsyncQdrantClient", connect)
    yield links
    await server.close()


def gateway_settings(tmp_path: Path, name: str, url: str, collection: str) -> KiokuSettings:
    return KiokuSettings(
        data_dir=tmp_path / name,
        database_url=url,
        redis_url=None,
        qdrant_url=SERVER_URL,
        index=IndexSettings(
            backend="qdrant", collection=collection, writer_lease_s=4.0, writer_wait_s=0.5
        ),
        # a reconcile pass rewrites points no change asked for: only the start-up one
        queue=QueueSettings(reconcile_every_s=3600),
    )


@asynccontextmanager
async def two_gateways(
    tmp_path: Path, url: str, links: list[Link]
) -> AsyncIterator[tuple[AppContext, AppContext, Link, Link]]:
    collection = f"t_{uuid.uuid4().hex[:12]}"
    async with AsyncExitStack() as stack:
        a = await stack.enter_async_context(
            open_app(gateway_settings(tmp_path, "a", url, collection))
        )
        assert a.shared is not None and a.follower is not None
        with anyio.fail_after(30):  # alone, it takes the lease, then applies: current
            await a.follower.current.wait()
        assert a.shared.holds
        b = await stack.enter_async_context(
            open_app(gateway_settings(tmp_path, "b", url, collection))
        )
        await a.reconciled.wait()
        await b.reconciled.wait()
        assert len(links) == 2
        yield a, b, links[0], links[1]


def feed_entries(url: str) -> Counter[str]:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT source_id FROM log_changes UNION ALL SELECT source_id FROM log_vectors"
        ).fetchall()
    return Counter(str(r[0]) for r in rows)


async def note_ids(app: AppContext) -> list[str]:
    rows = await app.db.fetchall("SELECT id FROM notes WHERE deleted = 0")
    return [str(r["id"]) for r in rows]


async def test_each_change_is_written_once_and_a_search_after_an_add_finds_it(
    tmp_path: Path, pg_database: ScratchDatabase, qdrant_server: list[Link]
) -> None:
    url = pg_database.new_schema()
    async with two_gateways(tmp_path, url, qdrant_server) as (a, b, link_a, link_b):
        feed_log(url)
        scope = settings_scope(a.settings)
        added: list[str] = []
        for word in WORDS:
            app = b if len(added) % 2 == 0 else a  # the non-writer's search waits for it
            note = await NoteService(app).add(
                scope, NoteFields(text=f"rollout {word}: drain the node pool first", type="note")
            )
            added.append(note.id)
            # right after the add, whichever gateway took it: found
            found = await NoteService(app).search(scope, NoteQuery(query=word))
            assert note.id in [r.id for r in found.results]
        await a.settle()
        await b.settle()

        assert sorted(await note_ids(a)) == sorted(added)
        pids = {n: point_id("note", n) for n in added}
        present = await b.index.present(list(pids.values()))
        assert all(present.get(p) is True for p in pids.values())  # with dense vectors
        # the writer wrote every point; the other gateway wrote nothing
        assert sum(link_b.written.values()) == 0 and link_b.other_writes == 0
        entries = feed_entries(url)
        for note_id, pid in pids.items():
            # each feed entry (the note's change, each vector of it) applied at most
            # once; entries made before a pass read them coalesce into one write
            assert 1 <= link_a.written[pid] <= entries[note_id], (note_id, entries[note_id])
        semantic = await NoteService(b).search(scope, NoteQuery(query="draining a node pool"))
        assert semantic.results

        # a gateway started now has nothing to join: its first search finds everything
        late_settings = b.settings.model_copy(update={"data_dir": tmp_path / "late"})
        async with open_app(late_settings) as late:
            first = await NoteService(late).search(scope, NoteQuery(query=WORDS[0]))
            assert added[0] in [r.id for r in first.results]
        assert sum(qdrant_server[2].written.values()) == 0


async def test_a_killed_writer_is_replaced_and_nothing_acknowledged_is_lost(
    tmp_path: Path, pg_database: ScratchDatabase, qdrant_server: list[Link]
) -> None:
    url = pg_database.new_schema()
    async with two_gateways(tmp_path, url, qdrant_server) as (a, b, link_a, link_b):
        scope = settings_scope(b.settings)
        leases = Leases(b.db, "test")
        assert await leases.holder_of(LEASE) == a.gateway
        before = [
            (await NoteService(b).add(scope, NoteFields(text=f"cache key {i}", type="note"))).id
            for i in range(3)
        ]
        await b.settle()

        # A dies between its next index write and its cursor's move
        link_a.freeze_after_write = True
        after = []
        for i in range(4):
            note = await NoteService(b).add(
                scope, NoteFields(text=f"ハッシュ衝突 {i}: retry the lookup", type="lesson")
            )
            after.append(note.id)
        with anyio.fail_after(10):
            await link_a.frozen.wait()
        # B's search right after its adds: the writer has not applied them, and B says so
        with pytest.raises(IndexBehind, match="behind"):
            await NoteService(b).search(scope, NoteQuery(query="ハッシュ衝突"))

        # the lease expires (A renews no more); B takes over from the deployment's
        # cursors and re-applies what A wrote but never recorded (at least once)
        with anyio.fail_after(30):
            while True:
                try:
                    found = await NoteService(b).search(scope, NoteQuery(query="ハッシュ衝突"))
                    break
                except IndexBehind:
                    await anyio.sleep(0.2)
        assert await leases.holder_of(LEASE) == b.gateway
        assert set(after) <= {r.id for r in found.results}
        await b.settle()
        pids = [point_id("note", n) for n in before + after]
        present = await b.index.present(pids)
        assert all(present.get(p) is True for p in pids)  # every acknowledged note, embedded
        assert sorted(await note_ids(b)) == sorted(before + after)
        assert link_a.frozen_ids
        for pid in link_a.frozen_ids:  # written by A, then again by B: idempotent
            assert link_b.written[pid] >= 1
