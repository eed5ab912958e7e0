"""RecordStore: ids, validation, atomic writes, automatic action_state, history."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from mcp_gateway.common.errors import InvalidInput, NotFound
from mcp_gateway.common.inputs import RecordChanges, RecordFields
from mcp_gateway.records import RecordStore
from mcp_gateway.stores.db import Database


@pytest.fixture
async def store(database_location: Path | str) -> AsyncIterator[RecordStore]:
    db = Database(database_location)
    await db.open()
    yield RecordStore(db, "mem")
    await db.close()


async def count_rows(store: RecordStore, table: str = "records") -> int:
    rows = await store.db.fetchall(f"SELECT COUNT(*) AS n FROM {table}")
    return int(rows[0]["n"])


async def test_ids_per_type_and_project(store: RecordStore) -> None:
    assert (await store.add(RecordFields(type="audit", title="a"))).id == "AUDIT-MEM-001"
    assert (await store.add(RecordFields(type="audit", title="b"))).id == "AUDIT-MEM-002"
    assert (await store.add(RecordFields(type="fix", title="c"))).id == "FIX-MEM-001"
    assert (
        await store.add(RecordFields(type="Knowledge", title="d", project="web"))
    ).id == "KNOWLEDGE-WEB-001"
    assert (
        await store.add(RecordFields(type="verification", title="e"))
    ).id == "VERIFICATION-MEM-001"
    assert (await store.add(RecordFields(type="decision", title="f"))).id == "DECISION-MEM-001"


async def test_an_exact_repeat_is_found_among_similar_titles(store: RecordStore) -> None:
    """The repeat check reads only titles holding the new title's longest word: spacing
    differences still repeat; LIKE's own characters and letter case do not widen it."""
    first = await store.add(RecordFields(type="audit", title="Fix 100% of_it  now", content="body"))
    await store.add(
        RecordFields(type="audit", title="Fix 100X ofXit now", content="body")
    )  # % and _ taken literally
    assert (
        await store.add(RecordFields(type="audit", title=" Fix 100%\tof_it now ", content="body"))
    ).id == first.id
    assert (
        await store.add(RecordFields(type="audit", title="fix 100% OF_IT now", content="body"))
    ).id != first.id
    ja = await store.add(
        RecordFields(type="audit", title="索引がクラッシュで書き込みを失う", content="本文")
    )
    assert (
        await store.add(
            RecordFields(type="audit", title="索引がクラッシュで書き込みを失う", content="本文")
        )
    ).id == ja.id
    assert await count_rows(store) == 4


async def test_sequence_grows_past_999(store: RecordStore) -> None:
    await store.db.transaction(
        lambda c: c.execute("INSERT INTO record_sequences VALUES ('default', 'audit', 'MEM', 999)")
    )
    assert (await store.add(RecordFields(type="audit", title="x"))).id == "AUDIT-MEM-1000"


async def test_ids_never_reused_after_deletion(store: RecordStore) -> None:
    for title in ("one", "two", "three"):
        await store.add(RecordFields(type="audit", title=title))

    def delete_last(conn: sqlite3.Connection) -> None:
        conn.execute("DELETE FROM record_history WHERE record_id = 'AUDIT-MEM-003'")
        conn.execute("DELETE FROM records WHERE id = 'AUDIT-MEM-003'")

    await store.db.transaction(delete_last)
    assert (await store.add(RecordFields(type="audit", title="four"))).id == "AUDIT-MEM-004"
    assert await store.search("three") == []  # the FTS row went with it


async def test_concurrent_adds_never_collide(store: RecordStore) -> None:
    recs = await asyncio.gather(
        *(store.add(RecordFields(type="fix", title=f"fix {i}")) for i in range(20))
    )
    assert sorted(r.id for r in recs) == [f"FIX-MEM-{n:03d}" for n in range(1, 21)]


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"type": "bug"}, "audit, fix, verification, decision, knowledge"),
        ({"status": "done"}, "open, accepted, resolved, rejected"),
        ({"action_state": "soon"}, "actionable, deferred, blocked, nonactionable, done"),
        ({"title": "   "}, "title is empty"),
        ({"title": "x" * 501}, "limit is 500"),
        ({"title": "\u200b\ufeff \u200d"}, "invisible"),
        ({"content": "é" * 16_385}, "limit is 32768"),
        ({"project": "has space"}, "project code"),
        ({"project": "A" * 17}, "project code"),
        ({"links": ["resolves"]}, "RELATION:TARGET_ID"),
        ({"links": ["resolves:"]}, "RELATION:TARGET_ID"),
        ({"links": [":X"]}, "RELATION:TARGET_ID"),
        ({"links": ["foo:AUDIT-MEM-001"]}, "RELATION:TARGET_ID"),
        ({"title": "\ud800"}, "not valid Unicode"),
    ],
)
async def test_invalid_input_writes_nothing(store: RecordStore, kwargs: dict, needle: str) -> None:
    args = {"type": "audit", "title": "ok"} | kwargs
    with pytest.raises(InvalidInput, match=needle):
        await store.add(RecordFields(**args))
    assert await count_rows(store) == 0
    assert await count_rows(store, "record_sequences") == 0


async def test_title_limits_configurable_and_tabs_allowed(tmp_path: Path) -> None:
    db = Database(tmp_path / "k.sqlite3")
    await db.open()
    store = RecordStore(db, "MEM", max_title_chars=10, max_content_bytes=5)
    assert (await store.add(RecordFields(type="audit", title="a\tb\nc"))).title == "a\tb\nc"
    with pytest.raises(InvalidInput, match="limit is 10"):
        await store.add(RecordFields(type="audit", title="x" * 11))
    with pytest.raises(InvalidInput, match="limit is 5"):
        await store.add(RecordFields(type="audit", title="x", content="123456"))
    await db.close()


async def test_atomic_links(store: RecordStore) -> None:
    audit = await store.add(RecordFields(type="audit", title="bug"))
    with pytest.raises(NotFound, match="AUDIT-MEM-404"):
        await store.add(
            RecordFields(
                type="fix", title="fix", links=(f"resolves:{audit.id}", "references:AUDIT-MEM-404")
            )
        )
    assert await count_rows(store) == 1
    assert await count_rows(store, "record_edges") == 0
    fix = await store.add(
        RecordFields(type="fix", title="fix", links=(f"resolves:{audit.id.lower()}",))
    )
    assert fix.id == "FIX-MEM-001"  # the refused add consumed nothing
    assert (await store.show(audit.id)).lifecycle.resolved_by == [fix.id]


async def test_auto_action_state_on_update_and_override(store: RecordStore) -> None:
    rec = await store.add(RecordFields(type="audit", title="bug"))
    out = await store.update(rec.id, RecordChanges(status="resolved"))
    assert (out.record.status, out.record.action_state) == ("resolved", "done")
    rec2 = await store.add(RecordFields(type="audit", title="bug 2"))
    out2 = await store.update(rec2.id, RecordChanges(status="accepted", action_state="deferred"))
    assert out2.record.action_state == "deferred"
    out3 = await store.update(rec2.id, RecordChanges(status="open", action_state="blocked"))
    assert (out3.record.status, out3.record.action_state) == ("open", "blocked")
    out4 = await store.update(rec2.id, RecordChanges(status="rejected"))
    assert out4.record.action_state == "blocked"  # only resolving/accepting closes work


async def test_auto_action_state_on_add(store: RecordStore) -> None:
    assert (
        await store.add(RecordFields(type="decision", title="d", status="accepted"))
    ).action_state == "done"
    kept = await store.add(
        RecordFields(type="decision", title="d2", status="accepted", action_state="deferred")
    )
    assert kept.action_state == "deferred"
    assert (await store.add(RecordFields(type="audit", title="a"))).action_state == "actionable"


async def test_history_and_noop(store: RecordStore) -> None:
    rec = await store.add(RecordFields(type="knowledge", title="Old title", content="body"))
    noop = await store.update(
        rec.id, RecordChanges(title="Old title", content="body", status="open")
    )
    assert not noop.changed and noop.changes == []
    await store.update(rec.id, RecordChanges(title="New title"))
    await store.update(rec.id, RecordChanges(action_state="deferred"))
    hist = (await store.show(rec.id)).history
    assert [h.field for h in hist] == ["created", "title", "action_state"]
    created = json.loads(hist[0].new_value or "{}")
    assert created["title"] == "Old title" and created["status"] == "open"
    assert (hist[1].old_value, hist[1].new_value) == ("Old title", "New title")
    assert (hist[2].old_value, hist[2].new_value) == ("actionable", "deferred")
    with pytest.raises(InvalidInput, match="nothing to update"):
        await store.update(rec.id, RecordChanges())
    with pytest.raises(NotFound):
        await store.update("AUDIT-MEM-999", RecordChanges(title="x"))


async def test_long_title_update_refused_without_partial_write(store: RecordStore) -> None:
    rec = await store.add(RecordFields(type="audit", title="short"))
    with pytest.raises(InvalidInput):
        await store.update(rec.id, RecordChanges(title="y" * 600, status="resolved"))
    after = await store.get(rec.id)
    assert (after.title, after.status) == ("short", "open")
    assert len((await store.show(rec.id)).history) == 1


async def test_list_current_export_and_counts(store: RecordStore) -> None:
    old = await store.add(RecordFields(type="decision", title="old way"))
    new = await store.add(
        RecordFields(type="decision", title="new way", links=(f"supersedes:{old.id}",))
    )
    rejected = await store.add(RecordFields(type="decision", title="no way", status="rejected"))
    audit = await store.add(RecordFields(type="audit", title="open bug"))
    await store.add(RecordFields(type="audit", title="deferred bug", action_state="deferred"))
    decisions = await store.list_current(types=["decision"])
    assert [r.id for r in decisions] == [rejected.id, new.id]
    actionable = await store.list_current(action_states=["actionable"])
    assert [r.id for r in actionable] == [audit.id, rejected.id, new.id]
    fact = await store.add(RecordFields(type="knowledge", title="the API limit is 10 req/s"))
    await store.add(RecordFields(type="verification", title="fix checked on staging"))
    view = await store.export_view()
    assert [d["id"] for d in view["decisions"]] == [new.id]
    # open work: the actionable audit only; not the decisions (their own section), nor
    # knowledge/verification records (facts, not work)
    assert [a["id"] for a in view["actionable"]] == [audit.id]
    assert fact.action_state == "actionable"
    counts = await store.counts()
    assert counts == {
        "audit": 2,
        "decision": 3,
        "knowledge": 1,
        "verification": 1,
        "total": 7,
        "current": 6,
    }
    sv = await store.search_view([old.id, new.id])
    assert set(sv) == {new.id} and sv[new.id]["title"] == "new way"
    assert await store.current_ids([old.id, new.id]) == {new.id}


async def test_iter_all_and_changed_since(store: RecordStore) -> None:
    a = await store.add(RecordFields(type="audit", title="a"))
    b = await store.add(RecordFields(type="fix", title="b"))
    batches = [batch async for batch in store.iter_all(batch_size=1)]
    assert [[r.id for r in batch] for batch in batches] == [[a.id], [b.id]]
    mark = (await store.get(b.id)).updated_at
    assert await store.changed_since(mark) == []
    await store.link(b.id, "resolves", a.id)
    assert {r.id for r in await store.changed_since(mark)} == {a.id, b.id}


async def test_heads_view_resolves_retired_records_within_reach(store: RecordStore) -> None:
    """The unified search's lookup: a retired record -> its lifecycle head, to the end of
    a mixed supersedes/duplicates chain; current records are not listed; a head outside
    the caller's namespaces is left out."""
    a = await store.add(RecordFields(type="decision", title="deploy on Tuesdays"))
    b = await store.add(
        RecordFields(type="decision", title="deploy any weekday", links=(f"supersedes:{a.id}",))
    )
    c = await store.add(
        RecordFields(type="decision", title="deploy on merge", links=(f"supersedes:{b.id}",))
    )
    dup = await store.add(
        RecordFields(
            type="decision", title="deploy any weekday (again)", links=(f"duplicates:{b.id}",)
        )
    )
    view = await store.heads_view([a.id, b.id, c.id, dup.id], ["default"])
    assert {rid: h["id"] for rid, h in view.items()} == {a.id: c.id, b.id: c.id, dup.id: c.id}
    assert view[a.id] == {"id": c.id, "type": "decision", "namespace": "default"}
    assert await store.heads_view([a.id], ["someone-else"]) == {}
