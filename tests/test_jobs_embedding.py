"""The embedding step (``jobs/embedding.py``): a burst's backlog is drafted on the
faster pass, then embedded exactly by the idle batcher (``jobs/batcher.py``) or once
reconcile finds the drafts; a note or two are embedded exactly at once.

Real stores, the real bundled model (its int8 graph is the draft pass), the in-process
scheduler. The owner's prefetcher is turned off here (``search.prefetch_budget_ms = 0``,
its own tests are tests/test_prefetch.py): it embeds pending notes exactly on the query
lane beside the job, and its write could land on a note after the job drafted it, so
these tests would count one draft fewer than the job made.
"""

from __future__ import annotations

from collections.abc import Sequence

import anyio
import numpy as np
import pytest

from mcp_gateway.common.access import settings_scope
from mcp_gateway.common.errors import EmbedderUnavailable
from mcp_gateway.common.inputs import NoteFields
from mcp_gateway.common.settings import KiokuSettings
from mcp_gateway.common.types import Note
from mcp_gateway.indexing.points import note_document
from mcp_gateway.jobs.embedding import DRAFTS_STORED_TOGETHER, EmbedStats, embed_notes
from mcp_gateway.jobs.session_context import for_reader
from mcp_gateway.services.app import AppContext, open_app
from mcp_gateway.stores.vectors import VectorRow
from tests.conftest import without_prefetcher
from tests.test_neardup import FORCE_PUSH_NEW, FORCE_PUSH_OLD

BURST = [
    "the staging database is reset every Monday at 06:00 UTC",
    "ステージングのデータベースは毎週月曜に初期化される",
    "ฐานข้อมูล staging ถูกรีเซ็ตทุกวันจันทร์",
    "rotate the deploy key before the quarterly audit",
    "the payments service retries a 429 after the Retry-After header",
    "never force-push to main; open a revert PR instead",
]


@pytest.fixture
def settings(settings: KiokuSettings) -> KiokuSettings:
    """The job alone embeds: no prefetcher beside it (see the module's docstring), and
    drafts stay drafts until reconcile (the idle batcher's redo has its own test)."""
    return with_embedder(without_prefetcher(settings), exact_after_idle_s=0.0)


def with_embedder(settings: KiokuSettings, **changes: object) -> KiokuSettings:
    return settings.model_copy(update={"embedder": settings.embedder.model_copy(update=changes)})


async def opened_quiet(app: AppContext) -> AppContext:
    """``app`` once its start-up reconcile has run: that pass runs beside the test's
    first writes, and a note it finds without a vector it queues (its job then embeds
    the note alone, exactly, or redoes a draft), so every count here could be one off;
    the next pass is ``queue.reconcile_every_s`` (300 s) away."""
    await app.reconciled.wait()
    return app


async def stored(app: AppContext, notes: Sequence[Note]) -> dict[str, tuple[list[float], bool]]:
    found = await app.vectors.get("note", app.embedder.model_id, [n.id for n in notes])
    return {sid: (v.vector, v.draft) for sid, v in found.items()}


async def exact(app: AppContext, note: Note) -> np.ndarray:
    [encoded] = await app.embedder.encode_documents([note_document(note)])
    return np.asarray(encoded.dense)


async def test_a_backlog_is_drafted_then_embedded_exactly(settings: KiokuSettings) -> None:
    async with open_app(settings) as app:
        await opened_quiet(app)
        assert app.prefetcher is None
        assert app.embedder.makes_drafts
        notes = [await app.notes.add(NoteFields(text=text, type="note")) for text in BURST]
        await app.jobs.notes_changed(notes)  # one batch: a backlog
        await app.settle()
        drafts = await stored(app, notes)
        assert {draft for _, draft in drafts.values()} == {True}
        assert (await app.notes.counts())["pending_embedding"] == 0  # searchable already

        report = await app.reconcile()
        await app.settle()

        assert report.drafts == len(BURST)
        final = await stored(app, notes)
        for note in notes:
            vector, draft = final[note.id]
            assert not draft
            np.testing.assert_allclose(vector, await exact(app, note), atol=1e-5)
            assert float(np.dot(vector, drafts[note.id][0])) > 0.99  # the draft was close
        assert (await app.reconcile()).drafts == 0


async def test_a_note_or_two_are_embedded_exactly_at_once(settings: KiokuSettings) -> None:
    async with open_app(settings) as app:
        await opened_quiet(app)
        notes = [await app.notes.add(NoteFields(text=text, type="note")) for text in BURST[:2]]
        await app.jobs.notes_changed(notes)
        await app.settle()
        assert {draft for _, draft in (await stored(app, notes)).values()} == {False}


async def test_the_context_stores_the_vectors_it_embeds_to_fold(settings: KiokuSettings) -> None:
    """Before: the session context's fold embedded notes that had no vector yet and threw
    the vectors away, so the job embedded them again (~5 % of a burst's embedding,
    bench/LOG.md "burst over MCP"). Now they are stored as the job stores them, exact
    and with latent terms: the context folds, and the job has nothing left to embed."""
    async with open_app(settings) as app:
        await opened_quiet(app)
        older = await app.notes.add(NoteFields(text=FORCE_PUSH_OLD, type="lesson"))
        newer = await app.notes.add(NoteFields(text=FORCE_PUSH_NEW, type="lesson"))
        assert await stored(app, [older, newer]) == {}  # no job has run for them
        _snap, content = await for_reader(app.job_context, settings_scope(app.settings))
        assert f"also `{older.id}`" in content  # folded with the vectors embedded now
        kept = await stored(app, [older, newer])
        assert set(kept) == {older.id, newer.id}
        assert [draft for _, draft in kept.values()] == [False, False]
        np.testing.assert_allclose(kept[newer.id][0], await exact(app, newer), atol=2e-3)
        stats = EmbedStats()
        await embed_notes(app.job_context, [older.id, newer.id], stats)
        assert (stats.embedded, stats.embedder_calls) == (0, 0)


async def test_no_drafts_when_turned_off(settings: KiokuSettings) -> None:
    settings = settings.model_copy(
        update={"embedder": settings.embedder.model_copy(update={"draft_backlog": 0})}
    )
    async with open_app(settings) as app:
        await opened_quiet(app)
        notes = [await app.notes.add(NoteFields(text=text, type="note")) for text in BURST]
        await app.jobs.notes_changed(notes)
        await app.settle()
        assert {draft for _, draft in (await stored(app, notes)).values()} == {False}


async def test_an_idle_batcher_embeds_the_drafts_exactly_without_reconcile(
    settings: KiokuSettings,
) -> None:
    settings = with_embedder(settings, exact_after_idle_s=0.2)
    async with open_app(settings) as app:
        await opened_quiet(app)
        notes = [await app.notes.add(NoteFields(text=text, type="note")) for text in BURST]
        await app.jobs.notes_changed(notes)  # one batch: a backlog, drafted
        await app.settle()
        assert (await app.jobs.stats())["drafted"] == len(BURST)
        for _ in range(600):  # the redo runs 0.2 s after the last note, 8 notes a call
            final = await stored(app, notes)
            if not any(draft for _, draft in final.values()):
                break
            await anyio.sleep(0.05)
        for note in notes:
            vector, draft = final[note.id]
            assert not draft
            np.testing.assert_allclose(vector, await exact(app, note), atol=1e-5)
        assert not await app.vectors.drafts(app.embedder.model_id)


async def test_past_the_draft_limit_a_backlog_is_embedded_exactly_at_once(
    settings: KiokuSettings,
) -> None:
    # a bulk import: the first backlog is drafted (searchable sooner); once that many
    # drafts wait for their exact pass, the next backlog gets one pass, the exact one
    half = len(BURST) // 2
    settings = with_embedder(settings, draft_limit=half, batch_size=half, draft_backlog=2)
    async with open_app(settings) as app:
        # quiet first: a start-up reconcile that ran late (seen at load 7) queued the
        # first notes itself, and its job embedded them exactly, not as drafts
        await opened_quiet(app)
        notes = [await app.notes.add(NoteFields(text=text, type="note")) for text in BURST]
        first, second = notes[:half], notes[half:]
        await app.jobs.notes_changed(first)
        await app.settle()
        await app.jobs.notes_changed(second)
        await app.settle()
        assert {draft for _, draft in (await stored(app, first)).values()} == {True}
        assert await app.vectors.draft_count(app.embedder.model_id, 100) == len(first)
        final = await stored(app, second)
        for note in second:
            vector, draft = final[note.id]
            assert not draft
            np.testing.assert_allclose(vector, await exact(app, note), atol=1e-5)
        assert (await app.jobs.stats())["drafted"] == len(first)


async def test_a_backlog_s_drafts_are_stored_a_few_at_a_time_as_they_are_done(
    settings: KiokuSettings,
) -> None:
    """A note of a drafted chunk is stored once its own few are embedded, not once the
    whole chunk is (bench/LOG.md, "burst over MCP"), and its draft is the one it gets
    embedded alone."""
    texts = [f"{text} (note {i})" for i in range(3) for text in BURST]  # 18: one chunk
    async with open_app(settings) as app:
        await opened_quiet(app)
        puts: list[tuple[int, int]] = []  # (rows, draft calls done by then)
        done = 0
        put, encode = app.vectors.put, app.embedder.encode_documents

        async def recording_put(
            kind: str, model: str, items: Sequence[VectorRow], *, draft: bool = False
        ) -> int:
            if draft:
                puts.append((len(items), done))
            return await put(kind, model, items, draft=draft)

        async def counting(texts: Sequence[str], *, now: bool = False, draft: bool = False):
            nonlocal done
            out = await encode(texts, now=now, draft=draft)
            done += draft
            return out

        app.vectors.put = recording_put  # type: ignore[method-assign]
        app.embedder.encode_documents = counting  # type: ignore[method-assign]
        notes = [await app.notes.add(NoteFields(text=text, type="note")) for text in texts]
        await app.jobs.notes_changed(notes)  # one batch of 18 new notes: a backlog
        await app.settle()
        assert sum(rows for rows, _ in puts) == len(texts)
        assert len(puts) == -(-len(texts) // DRAFTS_STORED_TOGETHER)
        assert max(rows for rows, _ in puts) <= DRAFTS_STORED_TOGETHER
        assert puts[0][1] < len(puts)  # the first stored while later ones were embedded
        app.embedder.encode_documents = encode  # type: ignore[method-assign]
        drafts = await stored(app, notes)
        assert {draft for _, draft in drafts.values()} == {True}
        for note in notes[:: DRAFTS_STORED_TOGETHER + 1]:
            [alone] = await app.embedder.encode_documents([note_document(note)], draft=True)
            np.testing.assert_allclose(drafts[note.id][0], alone.dense, atol=1e-5)


async def test_a_failing_draft_call_raises_its_own_error_and_stops_the_others(
    settings: KiokuSettings,
) -> None:
    """The batcher tells a transient error (the chunk waits and is retried) from a poison
    note (retried one by one) by the error's type: the drafts' several calls must raise
    it as it is, not wrapped in a group."""
    async with open_app(settings) as app:
        await opened_quiet(app)
        encode = app.embedder.encode_documents
        calls = 0

        async def failing(texts: Sequence[str], *, now: bool = False, draft: bool = False):
            nonlocal calls
            calls += 1
            if draft and any("poison" in t for t in texts):
                raise EmbedderUnavailable("the engine went away")
            return await encode(texts, now=now, draft=draft)

        app.job_context.embedder.encode_documents = failing  # type: ignore[method-assign]
        texts = ["poison pill note", *BURST, *(f"{t} again" for t in BURST)]
        notes = [await app.notes.add(NoteFields(text=text, type="note")) for text in texts]
        with pytest.raises(EmbedderUnavailable):
            await embed_notes(app.job_context, [n.id for n in notes], EmbedStats())
        await anyio.sleep(1.0)  # a call left running would store its drafts meanwhile
        assert calls == -(-len(texts) // DRAFTS_STORED_TOGETHER)
        # the poison's call failed before any other returned: none of theirs was stored
        assert await app.vectors.draft_count(app.embedder.model_id, 100) == 0
