"""Whole-point writes beside the applier: a reconcile pass never undoes an embedding that
lands meanwhile, and an edit never loses to a pass that read the note before it.

Real stores, the real bundled model, the real embedded engine. The pass is paused right
after it read the truth store's vectors (a wrapper around the real ``VectorStore.get``),
which is where a worker's vector could land unseen.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest

from mcp_gateway.common.inputs import NoteChanges, NoteFields, RecordFields
from mcp_gateway.common.settings import KiokuSettings
from mcp_gateway.common.types import IndexFilter, point_id
from mcp_gateway.indexing.points import note_document, note_point
from mcp_gateway.services.app import open_app
from mcp_gateway.stores.vectors import StoredVector, content_hash
from tests.conftest import Harness, without_prefetcher


@pytest.fixture
def settings(settings: KiokuSettings) -> KiokuSettings:
    """No prefetcher: its late write would make the applier upsert a note's current
    payload after ``settle()``, hiding the stale point these tests leave on purpose."""
    return without_prefetcher(settings)


async def test_an_embedding_applied_during_a_pass_is_not_overwritten_lexically(
    settings: KiokuSettings,
) -> None:
    async with open_app(settings) as app:
        # stored in the truth store only: no job queued, as after a flushed Redis
        note = await app.notes.add(
            NoteFields(text="pin the base image digest in every Dockerfile", type="lesson")
        )
        pid = point_id("note", note.id)
        read, release = asyncio.Event(), asyncio.Event()
        real_get = app.indexer.vectors.get

        async def get_then_pause(kind: str, model: str, ids: Sequence[str]) -> Any:
            found: dict[str, StoredVector] = await real_get(kind, model, ids)
            if note.id in ids:
                read.set()
                await release.wait()
            return found

        app.indexer.vectors.get = get_then_pause  # type: ignore[method-assign]
        reconciling = asyncio.create_task(app.reconcile())
        await asyncio.wait_for(read.wait(), 30)
        # meanwhile a worker embeds the note and the applier indexes it
        [encoded] = await app.embedder.encode_documents([note_document(note)])
        chash = content_hash(note_document(note))
        row = (note.id, chash, list(encoded.dense), encoded.terms)
        await app.vectors.put("note", app.index.spec.model_id, [row])
        applying = asyncio.create_task(app.applier.apply_pending())
        await asyncio.sleep(0.5)  # time for the applier to write, if it does not wait
        release.set()
        await asyncio.wait_for(reconciling, 30)
        await asyncio.wait_for(applying, 30)
        assert (await app.notes.counts())["pending_embedding"] == 0
        # the point keeps its dense vector: without it the note is lexical-only while
        # every store says it is embedded, until the next pass five minutes later
        assert (await app.index.present([pid]))[pid]


async def test_an_edit_during_an_applier_pass_keeps_its_payload(settings: KiokuSettings) -> None:
    """The applier writes whole points from notes it read before it writes them: an edit
    of the note's fields in between must not be overwritten with the old ones."""
    async with open_app(settings) as app:
        note = await app.notes.add(
            NoteFields(text="the nightly export job times out after 30 minutes", type="note")
        )
        [encoded] = await app.embedder.encode_documents([note_document(note)])
        row = (note.id, content_hash(note_document(note)), list(encoded.dense), encoded.terms)
        read, release = asyncio.Event(), asyncio.Event()
        real_get_many = app.applier.notes.get_many

        async def get_many_then_pause(ids: Sequence[str]) -> Any:
            found = await real_get_many(ids)
            if note.id in ids:
                read.set()
                await release.wait()
            return found

        app.applier.notes.get_many = get_many_then_pause  # type: ignore[method-assign]
        await app.vectors.put("note", app.index.spec.model_id, [row])
        app.applier.wake()
        await asyncio.wait_for(read.wait(), 30)
        edited, _ = await app.notes.update(note.id, NoteChanges(domain="batch"))
        editing = asyncio.create_task(app.indexer.update_payload(edited))
        await asyncio.sleep(0.5)  # time for the edit to land first, if it does not wait
        release.set()
        await asyncio.wait_for(editing, 30)
        await app.settle()
        assert await app.index.count(IndexFilter(domains=("batch",))) == 1
        assert (await app.index.present([point_id("note", note.id)]))[point_id("note", note.id)]


async def test_point_writes_use_the_note_as_stored_not_the_callers_copy(
    settings: KiokuSettings,
) -> None:
    """Two edits a few milliseconds apart may reach the index in either order, and a
    reconcile pass writes notes it read a page earlier: each write reads the note again
    under the lock, so the last committed state is what the index keeps."""
    async with open_app(settings) as app:
        note = await app.notes.add(
            NoteFields(text="the staging database is reset every Monday", type="note")
        )
        await app.indexer.put_new_lexical(note)
        edited, _ = await app.notes.update(note.id, NoteChanges(domain="staging"))
        for stale_write in (app.indexer.update_payload, app.indexer.put_lexical):
            await stale_write(note)  # the copy from before the edit
            assert await app.index.count(IndexFilter(domains=("staging",))) == 1
        await app.indexer.put_notes([note])
        assert await app.index.count(IndexFilter(domains=("staging",))) == 1
        await app.notes.set_deleted(note.id, deleted=True)
        await app.indexer.update_payload(edited)  # a delete since: nothing is written back
        await app.indexer.remove(note.id)
        await app.indexer.put_lexical(edited)
        assert await app.index.count(IndexFilter(domains=("staging",))) == 0


async def test_a_payload_an_edit_never_wrote_is_rewritten(harness: Harness) -> None:
    """An edit commits to the truth store, then writes the index: a process stopped in
    between (here: the store is edited directly) leaves a point that is present, embedded
    and wrong. Reconcile compares payloads, not only presence."""
    added = await harness.ok("add_note", text="the canary deploy needs the feature flag on")
    await harness.settle()
    app, pid = harness.app, point_id("note", added["id"])
    await app.notes.update(added["id"], NoteChanges(type="lesson", priority="high", domain="ci"))
    query = {"query": "canary deploy feature flag", "type": "lesson", "domain": "ci"}
    assert (await harness.ok("search_memory", **query))["results"] == []  # the stale point

    report = await app.reconcile()

    assert (report.refreshed, report.queued) == (1, 0)  # its stored vector still fits
    found = await harness.ok("search_memory", **query)
    assert [r["id"] for r in found["results"]] == [added["id"]]
    assert (await app.index.present([pid]))[pid]


async def test_a_solved_query_an_edit_never_indexed_is_indexed(harness: Harness) -> None:
    added = await harness.ok("add_note", text="pin the Node version in .nvmrc")
    await harness.settle()
    app, pid = harness.app, point_id("note", added["id"])
    note, _ = await app.notes.update(
        added["id"], NoteChanges(solved_query="why does CI use node 16")
    )

    report = await app.reconcile()

    assert report.refreshed == 1 and report.queued == 1  # the document changed: embed again
    stored = (await app.index.payloads([pid]))[pid]
    assert stored["text_hash"] == content_hash(note_document(note))
    await app.settle()
    assert (await app.notes.counts())["pending_embedding"] == 0


async def test_a_supersede_the_index_never_heard_of_is_applied(harness: Harness) -> None:
    """The link commits, then the old record's point is rewritten as retired; without
    that write a search in the old decision's words never reaches the one in force."""
    old = await harness.ok("record_add", type="decision", title="Store embeddings in pickle files")
    new = await harness.ok("record_add", type="decision", title="Use the edge index for vectors")
    old_id, new_id = old["record"]["id"], new["record"]["id"]
    await harness.settle()
    await harness.app.records.link(new_id, "supersedes", old_id)  # no index write
    old_pid = point_id("record", old_id)
    assert (await harness.app.index.payloads([old_pid]))[old_pid]["current"] is True

    report = await harness.app.reconcile()

    assert report.refreshed == 1
    assert (await harness.app.index.payloads([old_pid]))[old_pid]["current"] is False
    found = await harness.ok("search_memory", query="pickle files", type="decision", top=1)
    assert [r["id"] for r in found["results"]] == [new_id]


async def test_a_consistent_index_is_left_alone(harness: Harness) -> None:
    for text in ("rotate the staging token monthly", "ステージングのトークンは毎月更新する"):
        await harness.ok("add_note", text=text, type="lesson", priority="high")
    audit = (await harness.ok("record_add", type="audit", title="Token rotation"))["record"]["id"]
    await harness.ok("record_add", type="fix", title="Rotate", link=f"resolves:{audit}")
    await harness.ok(
        "record_add", type="audit", title="Token rotation, again", link=f"supersedes:{audit}"
    )
    await harness.settle()

    report = await harness.app.reconcile()

    assert (report.rewritten, report.refreshed, report.queued) == (0, 0, 0)


async def test_a_record_whose_embedding_was_lost_is_queued_again(harness: Harness) -> None:
    """Its point is there, lexical only, and no job will embed it (a flushed Redis)."""
    app = harness.app
    rec = await app.records.add(
        RecordFields(type="decision", title="Cache the tokenizer per worker")
    )
    assert [r.id for r in await app.indexer.put_records([rec.id])] == [rec.id]  # not queued
    pid = point_id("record", rec.id)
    assert await app.index.present([pid]) == {pid: False}

    report = await app.reconcile()

    assert report.queued == 1
    await app.settle()
    assert await app.index.present([pid]) == {pid: True}


async def test_a_point_from_before_the_text_hash_is_judged_on_its_other_fields(
    harness: Harness,
) -> None:
    """Older data dirs' points have no ``text_hash``: not a reason to rewrite them all
    (an update moves a point out of an HNSW graph), but a wrong field still is."""
    added = await harness.ok("add_note", text="the release branch is cut on Thursdays")
    await harness.settle()
    app, note_id = harness.app, added["id"]
    note = (await app.notes.get_many([note_id]))[note_id]
    stored = (await app.vectors.get("note", app.index.spec.model_id, [note_id]))[note_id]
    old = note_point(note, stored.vector, None, stored.terms)
    del old.payload["text_hash"]
    await app.index.upsert([old])

    assert (await app.reconcile()).refreshed == 0
    await app.notes.update(note_id, NoteChanges(priority="high"))
    assert (await app.reconcile()).refreshed == 1
