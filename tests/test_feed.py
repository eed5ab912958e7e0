"""Several gateways on one truth store: the change feed, read-your-writes, leases.

Two real apps (each its own data dir and embedded index, the real model) share one
truth store through ``database_url``, on both backends: one SQLite file (as two
``kioku serve --http`` processes on one host share it) and a PostgreSQL schema
(``tests/test_gateways_failover.py`` runs real processes on separate "hosts"). What one writes, the
other finds on its next search, with nothing but the truth store between them.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path

import pytest

from mcp_gateway.common.access import settings_scope
from mcp_gateway.common.inputs import NoteChanges, NoteFields, NoteQuery, RecordFields
from mcp_gateway.common.sections import IndexSettings
from mcp_gateway.common.settings import KiokuSettings
from mcp_gateway.common.types import point_id
from mcp_gateway.jobs.solve_credit import SolveCredit
from mcp_gateway.services.app import AppContext, open_app
from mcp_gateway.services.notes import NoteService
from mcp_gateway.services.records import RecordService
from mcp_gateway.stores.changes import ChangeFeed
from mcp_gateway.stores.db import Database
from mcp_gateway.stores.leases import Leases
from mcp_gateway.stores.schema import TRIGGERS


@pytest.fixture
def shared_url(database_location: Path | str) -> str:
    if isinstance(database_location, Path):
        return f"sqlite:///{database_location}"
    return database_location


def shared_settings(tmp_path: Path, name: str, url: str) -> KiokuSettings:
    return KiokuSettings(
        data_dir=tmp_path / name,
        database_url=url,
        redis_url=None,
        qdrant_url=None,
        index=IndexSettings(collection=f"t_{uuid.uuid4().hex[:12]}"),
    )


@asynccontextmanager
async def two_gateways(tmp_path: Path, url: str) -> AsyncIterator[tuple[AppContext, AppContext]]:
    async with AsyncExitStack() as stack:
        a = await stack.enter_async_context(open_app(shared_settings(tmp_path, "a", url)))
        b = await stack.enter_async_context(open_app(shared_settings(tmp_path, "b", url)))
        yield a, b


async def test_a_note_added_on_one_gateway_is_found_on_the_other(
    tmp_path: Path, shared_url: str
) -> None:
    async with two_gateways(tmp_path, shared_url) as (a, b):
        assert a.settings.database == b.settings.database
        assert a.follower is not None and b.follower is not None
        scope = settings_scope(a.settings)
        added = await NoteService(a).add(
            scope,
            NoteFields(
                text="ガベージコレクションの停止時間は G1 の領域サイズで調整する", type="lesson"
            ),
        )
        # the next search on the other gateway finds it (read-your-writes: it catches up
        # the feed before answering), lexically now and semantically once embedded
        found = await NoteService(b).search(scope, NoteQuery(query="G1 の領域サイズ"))
        assert added.id in [r.id for r in found.results]
        await a.settle()
        await b.settle()
        pid = point_id("note", added.id)
        assert (await b.index.present([pid])).get(pid) is True  # with its dense vector
        semantic = await NoteService(b).search(scope, NoteQuery(query="GC pause tuning in the JVM"))
        assert added.id in [r.id for r in semantic.results]

        # an edit and a delete on b reach a's index too
        await NoteService(b).delete(scope, added.id)
        await a.follower.apply_pending()
        assert pid not in await a.index.present([pid])
        # ...and a restore brings it back there (a gateway that wrote a version itself
        # skips it in the feed, but not once the point is gone)
        await NoteService(b).delete(scope, added.id, restore=True)
        await a.follower.apply_pending()
        assert pid in await a.index.present([pid])


async def test_records_and_their_links_follow(tmp_path: Path, shared_url: str) -> None:
    async with two_gateways(tmp_path, shared_url) as (a, b):
        scope = settings_scope(a.settings)
        old = await RecordService(a).add(
            scope, RecordFields(type="decision", title="Use Redis for the queue")
        )
        new = await RecordService(a).add(
            scope, RecordFields(type="decision", title="Use PostgreSQL for the queue")
        )
        await RecordService(a).link(
            scope, source=new.record.id, relation="supersedes", target=old.record.id
        )
        assert b.follower is not None
        await b.follower.apply_pending()
        pid = point_id("record", old.record.id)
        assert (await b.index.payloads([pid]))[pid]["current"] is False


async def test_each_gateway_has_its_own_cursors(tmp_path: Path, shared_url: str) -> None:
    async with two_gateways(tmp_path, shared_url) as (a, b):
        assert a.follower is not None and b.follower is not None
        assert a.follower.key != b.follower.key
        assert a.applier.applied_key != b.applier.applied_key
        await NoteService(a).add(
            settings_scope(a.settings), NoteFields(text="one more note", type="note")
        )
        await a.settle()
        await b.settle()
        assert await a.follower.cursor() == await b.follower.cursor() > 0


async def test_the_embedded_owner_follows_nothing(settings: KiokuSettings) -> None:
    async with open_app(settings) as app:
        assert app.follower is None
        assert app.applier.applied_key == "index.applied_seq"
        # the triggers are there (a later switch to a shared store needs no migration)
        assert await ChangeFeed(app.db).triggers() == set(TRIGGERS)


async def test_every_trigger_is_in_place(database_location: Path | str) -> None:
    db = Database(database_location)
    await db.open()
    try:
        assert await ChangeFeed(db).triggers() == set(TRIGGERS)
    finally:
        await db.close()


async def test_the_feed_holds_one_row_an_item_in_commit_order(
    database_location: Path | str,
) -> None:
    db = Database(database_location)
    await db.open()
    try:
        from mcp_gateway.stores.notes import NoteStore

        notes, feed = NoteStore(db), ChangeFeed(db)
        first = await notes.add(NoteFields(text="first", type="note"))
        second = await notes.add(NoteFields(text="second", type="note"))
        await notes.update(first.id, NoteChanges(text="first, edited"))
        await notes.mark_embedded({second.id: second.updated_at}, "some-model")
        rows = await feed.since(0)
        # the edit moved "first" past "second"; marking a note embedded is not a change
        assert [(r.source_id, r.seq) for r in rows] == [(second.id, 2), (first.id, 3)]
        assert await feed.since(3) == []
        assert (await feed.heads())[0] == 3
    finally:
        await db.close()


async def test_a_lease_is_held_by_one_until_it_expires(database_location: Path | str) -> None:
    db = Database(database_location)
    await db.open()
    try:
        one, two = Leases(db, "one"), Leases(db, "two")
        assert await one.acquire("cron:rerank", 60)
        assert not await two.acquire("cron:rerank", 60)
        assert await one.acquire("cron:rerank", 60)  # a renewal
        assert await two.acquire("cron:tune", 60)  # another lease is another row
        assert await one.acquire("cron:rerank", -1)  # renewed into the past: expired
        assert await two.acquire("cron:rerank", 60)
        assert await two.holder_of("cron:rerank") == "two"
        # work fenced by a lease runs only in its holder's transaction
        ran: list[str] = []
        assert not await one.while_held("cron:rerank", lambda c: ran.append("one"))
        assert await two.while_held("cron:rerank", lambda c: ran.append("two"))
        assert ran == ["two"]
        await two.release("cron:rerank")
        assert await two.holder_of("cron:rerank") is None
    finally:
        await db.close()


@pytest.mark.parametrize("url", ["sqlite:////abs/k.db", "sqlite:///rel/k.db"])
def test_a_sqlite_url_names_the_file(url: str, tmp_path: Path) -> None:
    s = KiokuSettings(data_dir=tmp_path, database_url=url)
    assert s.shared_store
    assert str(s.db_path) == url.removeprefix("sqlite:///")


async def test_the_activity_log_is_the_deployments(tmp_path: Path, shared_url: str) -> None:
    """A search on one gateway and the solution added on the other: solve credit (read
    by the re-ranking job, wherever it runs) sees both."""
    async with two_gateways(tmp_path, shared_url) as (a, b):
        scope = settings_scope(a.settings)
        hint = await NoteService(a).add(
            scope, NoteFields(text="retry the deploy with --force", type="note")
        )
        await a.settle()
        found = await NoteService(a).search(scope, NoteQuery(query="the deploy is stuck"))
        assert hint.id in [r.id for r in found.results]
        a.activity.flush()  # another process's entries land within ~5 ms
        await NoteService(b).add(
            scope,
            NoteFields(text="forced the deploy", type="lesson", solved_query="deploy is stuck"),
        )
        credit = SolveCredit()
        credited = [c for e in b.activity.read_sync() if (c := credit.feed(e))]
        assert credited and hint.id in credited[0]
        assert not (a.settings.activity_log_path).exists()  # nothing left per gateway


async def test_a_gateway_started_later_builds_its_index_from_the_feed(
    tmp_path: Path, shared_url: str
) -> None:
    """A new data dir (a new gateway, or one whose disk was lost) starts at cursor 0."""
    async with open_app(shared_settings(tmp_path, "a", shared_url)) as a:
        scope = settings_scope(a.settings)
        added = [
            await NoteService(a).add(
                scope, NoteFields(text=f"ノート {i}: deploy step {i}", type="note")
            )
            for i in range(5)
        ]
        await a.settle()
    async with open_app(shared_settings(tmp_path, "late", shared_url)) as late:
        assert late.follower is not None
        await late.settle()
        pids = [point_id("note", n.id) for n in added]
        present = await late.index.present(pids)
        assert all(present.get(p) is True for p in pids)  # with their stored vectors


async def test_periodic_work_runs_in_one_gateway(
    tmp_path: Path, shared_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without Redis, each gateway's timers would each run the re-ranking: the lease in
    the truth store lets one of them (the first to take it) run it every period."""
    import anyio

    from mcp_gateway.queue import inprocess

    period, window = 0.25, 1.5
    monkeypatch.setattr(inprocess, "periodic_jobs", lambda settings: [("rerank", period, True)])
    runs: dict[int, int] = {}
    enough = asyncio.Event()
    enqueue = inprocess.InProcessQueue.enqueue

    async def counted(self, function, *args, **kwargs):
        if function == "rerank":
            runs[id(self)] = runs.get(id(self), 0) + 1
            if sum(runs.values()) >= window / period / 2:
                enough.set()
        return await enqueue(self, function, *args, **kwargs)

    monkeypatch.setattr(inprocess.InProcessQueue, "enqueue", counted)
    async with two_gateways(tmp_path, shared_url):
        runs.clear()  # both are up: from here each has its timer
        enough.clear()
        began = time.monotonic()
        await anyio.sleep(window)
        # a stalled event loop (a loaded machine) runs fewer periods, never more: wait
        # for the lower bound rather than failing on it, and bound the runs by the time
        # that really passed
        with anyio.fail_after(60):
            await enough.wait()
        total, elapsed = sum(runs.values()), time.monotonic() - began
    # once a period in all (the lease may pass to the other gateway if its holder misses
    # a renewal, e.g. an event loop stall here, but never doubles a period); two timers
    # without the lease would run it twice a period
    assert window / period / 2 <= total <= elapsed / period + 1, (runs, elapsed)


@pytest.mark.slow  # two gateways, a rebuild or waits on the jobs: ~15-20 s each
async def test_a_reindex_on_one_gateway_is_followed_by_the_other(
    tmp_path: Path, shared_url: str
) -> None:
    """``kioku reindex`` on gateway A adopts a new collection for the deployment; B,
    with its own embedded index, builds its own copy under that name (stored vectors),
    keeps following the feed into it, and never adopts anything back."""
    from mcp_gateway.index import catalog
    from mcp_gateway.services.index_follow import adopt_elsewhere
    from mcp_gateway.services.reindex import Rebuilder

    async with two_gateways(tmp_path, shared_url) as (a, b):
        scope = settings_scope(a.settings)
        before = [
            await NoteService(a).add(
                scope,
                NoteFields(text=f"リリース手順 {i}: tag, build, deploy step {i}", type="note"),
            )
            for i in range(4)
        ]
        await a.settle()
        await b.settle()
        old = b.index.spec.collection
        assert await adopt_elsewhere(Rebuilder(b)) == "same"
        status = await Rebuilder(a).rebuild()
        assert status.state == "done", status
        name = a.index.spec.collection
        assert name != old and b.index.spec.collection == old  # B has not looked yet
        assert await adopt_elsewhere(Rebuilder(b)) == "rebuilt"
        assert b.index.spec.collection == name
        assert (await catalog.live_info(b.db, b.settings)).collection == name
        pids = [point_id("note", n.id) for n in before]
        present = await b.index.present(pids)
        assert all(present.get(p) is True for p in pids)
        assert not (b.settings.index_path / "edge" / old).exists()  # its old copy is gone
        # what A writes next reaches B's new index through the feed
        later = await NoteService(a).add(
            scope, NoteFields(text="ロールバック手順: revert the tag", type="note")
        )
        await a.settle()
        await b.settle()
        pid = point_id("note", later.id)
        assert (await b.index.present([pid])).get(pid) is True
        assert await adopt_elsewhere(Rebuilder(b)) == "same"
        assert await adopt_elsewhere(Rebuilder(a)) == "same"  # nothing adopted back
        # a model switch made elsewhere that this gateway does not embed with: it keeps
        # serving its index (and says so in its log) instead of building a wrong one
        await a.db.set_meta(catalog.ACTIVE_KEY, name + "-other")
        await a.db.set_meta(catalog.MODEL_KEY, "some-other-model@3")
        assert await adopt_elsewhere(Rebuilder(b)) == "mismatch"
        assert b.index.spec.collection == name


@pytest.mark.slow  # two gateways, a rebuild or waits on the jobs: ~15-20 s each
async def test_session_context_holds_every_gateways_writes(
    tmp_path: Path, shared_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each gateway's data dir copy of session_context.md shows a lesson added on the
    other (its follower asks for an export); the configured destinations are written by
    one process of the deployment only (a lease), never raced by both."""
    import anyio

    from mcp_gateway.jobs import session_context as export

    shared = tmp_path / "shared"
    shared.mkdir()
    writers: set[Path] = set()
    write_all = export.write_all

    def recorded(content: str, primary: Path, destinations):
        if destinations:
            writers.add(primary)
        return write_all(content, primary, destinations)

    monkeypatch.setattr(export, "write_all", recorded)
    async with AsyncExitStack() as stack:
        apps = []
        for name in ("a", "b"):
            s = shared_settings(tmp_path, name, shared_url)
            s = s.model_copy(
                update={"export": s.export.model_copy(update={"destinations": [shared]})}
            )
            apps.append(await stack.enter_async_context(open_app(s)))
        a, b = apps
        scope = settings_scope(a.settings)
        lessons = [
            (b, "Thai: ตรวจสอบ rollback ก่อน deploy ทุกครั้ง"),
            (a, "本番の DB 移行は必ず読み取り専用の時間帯に行う"),
        ]
        for app, text in lessons:  # b's own export is over before a's lesson exists
            await NoteService(app).add(scope, NoteFields(text=text, type="lesson"))
            await a.settle()
            await b.settle()

        def shows_both(path: Path) -> bool:
            return path.exists() and all(t in path.read_text("utf-8") for _, t in lessons)

        for app in (a, b):
            with anyio.fail_after(60):
                while not shows_both(app.settings.session_context_path):  # noqa: ASYNC110
                    await anyio.sleep(0.2)
        await a.settle()
        await b.settle()
        assert shows_both(shared / a.settings.session_context_path.name)
    assert len(writers) == 1, writers


@pytest.mark.slow  # two gateways, a rebuild or waits on the jobs: ~15-20 s each
async def test_reconcile_queues_embeddings_once_per_deployment(
    tmp_path: Path, shared_url: str
) -> None:
    """Each gateway repairs its own index; queueing what has no vector (and forgetting
    orphan vectors) is the work of the gateway holding the ``reconcile`` lease, and the
    vector it gets reaches the other's index through the feed."""
    async with two_gateways(tmp_path, shared_url) as (a, b):
        scope = settings_scope(a.settings)
        note = await NoteService(a).add(
            scope, NoteFields(text="การย้ายฐานข้อมูลต้องทำช่วงกลางคืน", type="note")
        )
        await a.settle()
        await b.settle()
        pid = point_id("note", note.id)
        # as after a crash that lost the vector and both points
        await a.db.transaction(
            lambda c: c.execute("DELETE FROM vectors WHERE source_id = ?", (note.id,))
        )
        await a.index.delete([pid])
        await b.index.delete([pid])
        reports = [await a.reconcile(), await b.reconcile()]
        assert sorted(r.deployment for r in reports) == [False, True], reports
        holder = next(r for r in reports if r.deployment)
        other = next(r for r in reports if not r.deployment)
        assert holder.queued == 1 and other.queued == 0
        assert holder.rewritten >= 1 and other.rewritten >= 1  # both indexes repaired
        # the next passes keep the same holder
        again = [await a.reconcile(), await b.reconcile()]
        assert [r.deployment for r in again] == [r.deployment for r in reports]
        await a.settle()
        await b.settle()
        for app in (a, b):
            assert app.follower is not None
            await app.follower.catch_up()
            assert (await app.index.present([pid])).get(pid) is True  # dense again
