"""The chosen hits' texts, read for the answer: notes and records, in their final order."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import anyio

from mcp_gateway.common.types import Note, SearchResult
from mcp_gateway.index.live import LiveIndex
from mcp_gateway.search.note_reads import ShownNotes
from mcp_gateway.search.ranking import Candidate
from mcp_gateway.search.reorder import newer_first, questions_after
from mcp_gateway.search.request import RecordLookup
from mcp_gateway.search.results import kind_of, note_result, record_result


@dataclass(slots=True)
class Materialiser:
    shown: ShownNotes
    index: LiveIndex
    records: RecordLookup | None
    newer_similarity: float
    newer_ratio: float
    # a note that only asks yields to the hits below it with this share of its score
    # (None: off; ``reorder.questions_after``)
    question_ratio: float | None = None

    async def __call__(self, chosen: list[Candidate], generation: int | None) -> list[SearchResult]:
        """The chosen hits' texts, in their final order: the newer of two notes that
        say nearly the same thing first (``ranking.newer_first``, on the vectors read
        beside the texts)."""
        note_ids = [str(c.payload.get("source_id")) for c in chosen if kind_of(c) == "note"]
        record_ids = [str(c.payload.get("source_id")) for c in chosen if kind_of(c) == "record"]
        points = [c.point_id for c in chosen if kind_of(c) == "note"]
        newer = self.newer_similarity > 0 and len(note_ids) > 1
        vectors: dict[str, Sequence[float]] = {}
        notes = self.shown.known(note_ids, generation)
        if notes is not None:  # every text at hand: no task group (~0.15 ms)
            records = await self.record_views(record_ids)
            if newer:
                vectors = await self.index.dense_vectors(points)
        else:
            notes = {}

            async def read_vectors() -> None:
                vectors.update(await self.index.dense_vectors(points))

            async def read_notes(into: dict[str, Note]) -> None:
                into.update(await self.shown.get_many(note_ids, generation))

            async with anyio.create_task_group() as tg:
                if newer:
                    tg.start_soon(read_vectors)
                tg.start_soon(read_notes, notes)
                records = await self.record_views(record_ids)
        if vectors:
            chosen = newer_first(chosen, vectors, self.newer_similarity, self.newer_ratio)
        if self.question_ratio is not None and notes:
            texts = {
                c.point_id: notes[sid].text
                for c in chosen
                if kind_of(c) == "note" and (sid := str(c.payload.get("source_id"))) in notes
            }
            chosen = questions_after(chosen, texts, self.question_ratio)
        out: list[SearchResult] = []
        for cand in chosen:
            source_id = str(cand.payload.get("source_id"))
            if kind_of(cand) == "note" and source_id in notes:
                out.append(note_result(notes[source_id], cand))
            elif kind_of(cand) == "record" and source_id in records:
                out.append(record_result(source_id, records[source_id], cand))
            # else: deleted or superseded since indexing -> a ghost point, skipped
        return out

    async def record_views(self, ids: list[str]) -> dict[str, dict[str, Any]]:
        return await self.records.search_view(ids) if self.records and ids else {}
