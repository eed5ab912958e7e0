"""What a search reads from the note store is kept per index generation: between two
writes a search reads neither the recent lessons nor the texts it already read, and
after any write it reads them again (through the real MCP protocol; the stores are
real, the reads are counted)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from mcp_gateway.common.inputs import NoteChanges, NoteFields
from mcp_gateway.common.sections import SearchSettings
from mcp_gateway.common.settings import KiokuSettings
from mcp_gateway.search.note_reads import RecentNotes, ShownNotes
from mcp_gateway.stores.db import Database
from mcp_gateway.stores.notes import NoteStore

from .conftest import Harness, without_prefetcher
from .test_tools_notes import add


class CountedStore:
    """The note store as the search's caches see it, each read named in ``reads``."""

    def __init__(self, store: NoteStore, reads: list[str]) -> None:
        self.store, self.reads = store, reads

    async def get_many(self, *args: Any, **kw: Any) -> Any:
        self.reads.append("get_many")
        return await self.store.get_many(*args, **kw)

    async def recent(self, *args: Any, **kw: Any) -> Any:
        self.reads.append("recent")
        return await self.store.recent(*args, **kw)


@pytest.fixture
def settings(settings: KiokuSettings) -> KiokuSettings:
    """No prefetcher: the job alone embeds, so the generations and reads counted are
    its own (a prefetch beside it stored a vector after ``settle()`` until settling
    waited for it; test_prefetch.py)."""
    return without_prefetcher(settings)


def count_reads(harness: Harness) -> list[str]:
    """Names of the note-store reads searches make from now on (other readers, such
    as the session-context export, are not counted)."""
    search, reads = harness.app.search, list[str]()
    search.shown.notes = search.recent.notes = CountedStore(search.recent.notes, reads)  # type: ignore[assignment]
    return reads


async def test_searches_between_writes_reuse_reads_and_a_write_refreshes_them(
    harness: Harness,
) -> None:
    lesson = await add(harness, "Run the database migrations before the deploy", type="lesson")
    await harness.settle()
    reads = count_reads(harness)
    first = await harness.ok("search_memory", query="what to do before the deploy", top=3)
    assert first["results"][0]["id"] == lesson and reads == ["recent", "get_many"]
    # another query at the same generation: the answer cache misses, the note reads hit
    second = await harness.ok("search_memory", query="deploy preparation checklist", top=3)
    assert second["results"][0]["id"] == lesson and reads == ["recent", "get_many"]

    # an edit: the next search (a query never asked, so no stored answer) shows the new text
    await harness.ok("update_note", id=lesson, text="Run the migrations AND the smoke test first")
    await harness.settle()
    edited = await harness.ok("search_memory", query="deploy preparation steps", top=3)
    assert edited["results"][0]["text"] == "Run the migrations AND the smoke test first"
    assert reads.count("get_many") == 2 and reads.count("recent") == 2

    # a newer lesson: offered under "recent" by the next search that finds it
    newer = await add(harness, "Tag the release after the deploy succeeds", type="lesson")
    await harness.settle()
    found = await harness.ok("search_memory", query="after the deploy, what then", top=1)
    shown = [r["id"] for r in found["results"]] + [r["id"] for r in found.get("recent", [])]
    assert newer in shown and reads.count("recent") == 3

    # a delete: gone from the next answer, though its text was kept a moment ago
    await harness.ok("delete_note", id=newer)
    await harness.settle()
    after = await harness.ok("search_memory", query="tagging the release", top=3)
    ids = [r["id"] for r in after["results"]] + [r["id"] for r in after.get("recent", [])]
    assert newer not in ids


@pytest.fixture
async def store(database_location: Path | str) -> AsyncIterator[NoteStore]:
    db = Database(database_location)
    await db.open()
    try:
        yield NoteStore(db)
    finally:
        await db.close()


async def test_shown_notes_are_bounded_and_an_older_generation_reads_through(
    store: NoteStore,
) -> None:
    ids = [
        (await store.add(NoteFields(text=f"note {i} " + "x" * 100, type="note"))).id
        for i in range(6)
    ]
    shown = ShownNotes(store, max_notes=4, max_chars=10_000)
    assert set(await shown.get_many(ids[:3], 1)) == set(ids[:3])
    assert set(await shown.get_many(ids[3:], 1)) == set(ids[3:])
    assert len(shown._kept) == 4  # the least recently shown went first
    assert list(shown._kept) == [ids[2], *ids[3:]]
    # every id at hand: answered without a read; one missing or another generation: not
    assert set(shown.known(ids[3:5], 1) or {}) == set(ids[3:5])
    assert shown.known(ids[1:3], 1) is None and shown.known(ids[3:5], 2) is None

    await store.update(ids[5], NoteChanges(text="edited"))
    # still generation 1: what was read at 1 stands (the write has not bumped it yet)
    assert (await shown.get_many([ids[5]], 1))[ids[5]].text != "edited"
    assert (await shown.get_many([ids[5]], 2))[ids[5]].text == "edited"
    # a search that began before the bump reads the store and keeps nothing
    assert (await shown.get_many([ids[0]], 1))[ids[0]].text.startswith("note 0")
    assert ids[0] not in shown._kept

    by_chars = ShownNotes(store, max_notes=100, max_chars=200)
    await by_chars.get_many(ids, 3)
    assert list(by_chars._kept) == ids[4:]  # 107 + 6 characters ("edited")


async def test_recent_notes_are_read_once_per_generation_and_filter_aware(
    store: NoteStore,
) -> None:
    await store.add(NoteFields(text="a lesson about retries", type="lesson"))
    recent = RecentNotes(store, SearchSettings())
    assert recent.known("", ("default",), "", 7) is None
    first = await recent.read("", ("default",), "", 7)
    assert [n.text for n in first] == ["a lesson about retries"]
    assert recent.known("", ("default",), "", 7) is first
    assert recent.known("", ("default",), "", 8) is None  # a write since
    assert recent.known("knowledge", ("default",), "", 7) is None  # another filter
    assert await recent.read("knowledge", ("default",), "", 7) == []  # not a recent type
    assert recent.known("", ("default",), "", None) is None  # no generation: no reuse
