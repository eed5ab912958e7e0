"""Near-duplicate notes, folded into one entry where memories are listed.

Two notes of the same namespace, type and priority whose dense vectors are at least
``FOLD_SIMILARITY`` cosine apart say the same thing in other words (a lesson written
again in another session). Where notes are listed (session_context.md) they are shown
as one entry: the newest wording, with the other notes' ids beside it, each still
stored and readable (``get_note``, ``kioku show``). Nothing is deleted or changed.

Two notes that differ in an identifier or a number name different things however
alike their wording ("Incident 12 ... marker zq7c" and "Incident 13 ... marker 4b1e",
port 5432 and port 6432): they never fold, so a search that found one by its
identifier shows that one. Nor do two that are one sentence with one thing changed
(``one_change.differ``: "images" / "videos", "Atlantis" / "the CI pipeline", a
negation moved), which the model finds as alike as rewordings.

The threshold was measured, not guessed (``bench/quality/neardup``: hand-written
near-duplicate and related pairs in en/ja/th, chosen on one half, scored on the other;
docs/ranking.md). A note without a stored vector for its current text (its embedding
job has not run yet: the context is written at once after an add) is embedded here
with ``embed`` when given (the export stores what it embeds, so the job does not embed
it again), else shown on its own.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from mcp_gateway.common.errors import EmbedderUnavailable
from mcp_gateway.common.types import Note, SearchResult
from mcp_gateway.indexing.lexical import compounds, tokenize
from mcp_gateway.indexing.points import current_vector, note_document
from mcp_gateway.search.exact_terms import token_like
from mcp_gateway.search.one_change import differ
from mcp_gateway.stores.vectors import StoredVector

log = logging.getLogger(__name__)

# e5 (multilingual-e5-small), chosen with ``one_change`` on the dev half of
# bench/quality/neardup/pairs.jsonl (measure.py: least cost, a wrong fold counting as two
# missed ones, searched at every dev pair's own cosine); on the test half it folds 77 of
# 88 near-duplicates and 12 of 87 related pairs (docs/ranking.md).
FOLD_SIMILARITY = 0.937


class NoteSource(Protocol):
    async def get_many(self, ids: Sequence[str]) -> dict[str, Note]: ...


class VectorSource(Protocol):
    async def get(self, kind: str, model: str, ids: Sequence[str]) -> dict[str, StoredVector]: ...


# the notes' dense vectors by id, embedded now (and stored: ``jobs.embedding.embed_now``)
Embed = Callable[[Sequence[Note]], Awaitable[Mapping[str, Sequence[float]]]]


def marks(text: str) -> frozenset[str]:
    """The identifiers and numbers of ``text`` (casefolded)."""
    return frozenset(
        w.casefold() for w in compounds(text) if token_like(w) or any(c.isdigit() for c in w)
    )


@dataclass(slots=True)
class Entry:
    """One listed entry: the newest wording, and the ids of the notes folded into it."""

    note: Note
    also: list[str] = field(default_factory=list)


@dataclass(slots=True)
class Folder:
    """Folds lists of notes with the stored document vectors of ``model``."""

    vectors: VectorSource
    model: str
    embed: Embed | None = None
    threshold: float = FOLD_SIMILARITY

    async def fold(self, notes: Sequence[Note]) -> list[Entry]:
        """``notes`` as entries, in their order; a note folds into the entry of the
        newest note of its namespace and type that it is a near-duplicate of (of any
        note already in that entry), and that entry shows the newest wording."""
        unit = await self._vectors(notes)
        # a note's marks are read only once its vector is within the threshold of
        # another's (most listed notes never are): the same folds, less work a search
        names: dict[str, frozenset[str]] = {}

        def named(note: Note) -> frozenset[str]:
            if (found := names.get(note.id)) is None:
                found = names[note.id] = marks(note.text)
            return found

        entries: list[Entry] = []
        members: list[list[Note]] = []
        for note in sorted(notes, key=lambda n: (n.created_at, n.id), reverse=True):
            home = self._home(note, entries, members, unit, named)
            if home is None:
                entries.append(Entry(note))
                members.append([note])
            else:
                entries[home].also.append(note.id)
                members[home].append(note)
        position = {n.id: i for i, n in enumerate(notes)}
        return sorted(entries, key=lambda e: position[e.note.id])

    async def _vectors(self, notes: Sequence[Note]) -> dict[str, np.ndarray]:
        """Unit vectors by note id: stored ones of the current text, the rest embedded
        now (a failing embedder leaves them out: those notes are shown on their own)."""
        if len(notes) < 2:
            return {}
        stored = await self.vectors.get("note", self.model, [n.id for n in notes])
        raw: dict[str, Sequence[float]] = {}
        missing: list[Note] = []
        for note in notes:
            if (vec := current_vector(stored.get(note.id), note_document(note))) is not None:
                raw[note.id] = vec.vector
            else:
                missing.append(note)
        if missing and self.embed is not None:
            try:
                raw.update(await self.embed(missing))
            except EmbedderUnavailable as exc:
                # a one-shot CLI command's export at its close (the embedder stopping),
                # an Ollama down: the next export folds them; not worth a traceback on
                # the user's terminal after `kioku add`
                log.info("%d notes listed unfolded: %s", len(missing), exc)
            except Exception:
                log.warning("near-duplicates not folded: embedding failed", exc_info=True)
        unit: dict[str, np.ndarray] = {}
        for note_id, vector in raw.items():
            arr = np.asarray(vector, dtype=np.float64)
            norm = float(np.linalg.norm(arr))
            if norm > 0:
                unit[note_id] = arr / norm
        return unit

    def _home(
        self,
        note: Note,
        entries: list[Entry],
        members: list[list[Note]],
        unit: dict[str, np.ndarray],
        named: Callable[[Note], frozenset[str]],
    ) -> int | None:
        mine = unit.get(note.id)
        if mine is None:
            return None
        for i, group in enumerate(members):
            head = entries[i].note
            # priority too: a high lesson folded under a plain rewording would lose its
            # place in the ranking and its flag in the context
            if (head.namespace, head.type, head.priority) != (
                note.namespace,
                note.type,
                note.priority,
            ):
                continue
            if any(
                m.id in unit
                and float(unit[m.id] @ mine) >= self.threshold
                and named(m) == named(note)
                and not differ(m.text, note.text)
                for m in group
            ):
                return i
        return None


async def fold_results(
    results: Sequence[SearchResult], notes: NoteSource, folder: Folder, query: str = ""
) -> list[SearchResult]:
    """Ranked results with near-duplicate notes as one result: at the place of the group's
    best-ranked member, in the newest member's wording, the others' ids in ``also``.

    A member that holds a word of ``query`` the newest wording lacks stays a result of
    its own: the query singled it out ("ro baa" among "ro bab", "ro bac": short notes
    that differ in one word are as alike to the model as two rewordings)."""
    note_ids = [r.id for r in results if r.kind == "note"]
    if len(note_ids) < 2:
        return list(results)
    found = await notes.get_many(note_ids)
    entries = await folder.fold([found[i] for i in note_ids if i in found])
    asked = set(tokenize(query))

    def folds(head: Note, member: Note) -> bool:
        return not (asked & set(tokenize(member.text))) - set(tokenize(head.text))

    groups = {
        e.note.id: kept for e in entries if (kept := [m for m in e.also if folds(e.note, found[m])])
    }
    if not groups:
        return list(results)
    head_of = {member: head for head, also in groups.items() for member in (head, *also)}
    by_id = {r.id: r for r in results}
    out: list[SearchResult] = []
    placed: set[str] = set()
    for result in results:
        head = head_of.get(result.id)
        if head is None:
            out.append(result)
        elif head not in placed:
            placed.add(head)
            out.append(by_id[head].model_copy(update={"also": list(groups[head])}))
    return out
