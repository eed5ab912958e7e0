"""What a search reads from the note store, kept per index generation.

Two reads: the newest lessons/conclusions offered under "recent" (source design 6.1),
the same read for every search without a type or domain filter, and the texts of the
notes an answer shows, which searches between two writes keep meeting. Both are kept
like whole answers (``answers.py``): every change to a note (added, edited, deleted,
restored, re-ranked) also writes the index, which bumps the generation after it lands,
so what was read at generation G is still the truth while the generation is G. Each
read cost a search a worker-thread hop and a SQLite query (~0.2-0.3 ms idle, more
after the CPU idled).

Every entry is stored under the generation its caller read *before* it began: a write
landing meanwhile bumps the generation, so what the read saw is never served for a
later state.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence

from mcp_gateway.common.sections import SearchSettings
from mcp_gateway.common.types import Note
from mcp_gateway.stores.notes import NoteStore

Key = tuple[tuple[str, ...], tuple[str, ...], str]  # (type filter,), namespaces, domain
# what ``RecentNotes.known`` and ``read`` take: type filter, namespaces, domain, generation
RecentAt = tuple[str, tuple[str, ...], str, int | None]
MAX_KEPT = 64  # distinct (type, namespaces, domain) combinations; a typical user has a few
# shown notes kept: up to 2,048, and never more than 4M characters of text (~125 notes
# at the 32 KB limit; a typical note is a few hundred characters)
MAX_NOTES, MAX_CHARS = 2048, 4_000_000


class RecentNotes:
    def __init__(self, notes: NoteStore, settings: SearchSettings) -> None:
        self.notes, self.settings = notes, settings
        self._kept: dict[Key, tuple[int, list[Note]]] = {}

    def types_for(self, type_filter: str) -> list[str]:
        """The recent types a search with ``type_filter`` ("" for none) may show."""
        wanted = self.settings.recent_types
        if self.settings.recent_count <= 0:
            return []
        if type_filter:
            return [type_filter] if type_filter in wanted else []
        return list(wanted)

    def known(
        self, type_filter: str, namespaces: Sequence[str], domain: str, generation: int | None
    ) -> list[Note] | None:
        """The list read at ``generation``, if one was (callers must not change it)."""
        if generation is None:
            return None
        kept = self._kept.get(self._key(type_filter, namespaces, domain))
        return kept[1] if kept is not None and kept[0] == generation else None

    async def read(
        self, type_filter: str, namespaces: Sequence[str], domain: str, generation: int | None
    ) -> list[Note]:
        """The newest notes of the recent types, read now and kept for ``generation``."""
        types = self.types_for(type_filter)
        found = (
            await self.notes.recent(
                types,
                namespaces=namespaces,
                domain=domain,
                limit=self.settings.recent_count,
            )
            if types
            else []
        )
        if generation is not None:
            if len(self._kept) >= MAX_KEPT:
                self._kept.clear()
            self._kept[self._key(type_filter, namespaces, domain)] = (generation, found)
        return found

    @staticmethod
    def _key(type_filter: str, namespaces: Sequence[str], domain: str) -> Key:
        return ((type_filter,), tuple(namespaces), domain)


class ShownNotes:
    """The notes answers showed, by id, for the current generation (least recently
    shown first out)."""

    def __init__(
        self, notes: NoteStore, max_notes: int = MAX_NOTES, max_chars: int = MAX_CHARS
    ) -> None:
        self.notes, self.max_notes, self.max_chars = notes, max_notes, max_chars
        self._generation: int | None = None
        self._kept: OrderedDict[str, Note] = OrderedDict()
        self._chars = 0

    def known(self, ids: Sequence[str], generation: int | None) -> dict[str, Note] | None:
        """Every one of ``ids``, if each was kept at ``generation``; else None."""
        if generation is None or generation != self._generation:
            return None
        kept = self._kept
        if not all(i in kept for i in ids):
            return None
        for i in ids:
            kept.move_to_end(i)
        return {i: kept[i] for i in ids}

    async def get_many(self, ids: Sequence[str], generation: int | None) -> dict[str, Note]:
        """Live notes of ``ids`` (a deleted or unknown id is absent; callers must not
        change what they get)."""
        if generation is None or (self._generation is not None and generation < self._generation):
            return await self.notes.get_many(ids)  # no generation, or an older search's
        if generation != self._generation:
            self._generation, self._kept, self._chars = generation, OrderedDict(), 0
        kept = self._kept
        missing = [i for i in ids if i not in kept]
        found = await self.notes.get_many(missing) if missing else {}
        out = {i: note for i in ids if (note := kept.get(i) or found.get(i)) is not None}
        if self._generation == generation:  # not moved on while this read ran
            for i, note in found.items():  # a concurrent search may have kept it already
                if i not in kept:
                    kept[i] = note
                    self._chars += len(note.text)
            for i in out:
                kept.move_to_end(i)
            while kept and (len(kept) > self.max_notes or self._chars > self.max_chars):
                self._chars -= len(kept.popitem(last=False)[1].text)
        return out
