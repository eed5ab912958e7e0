"""The two rules that move a hit past a higher score, after the fusion.

- ``carry_to_heads``: a retired record (superseded, or a duplicate) that the channels
  found hands its evidence to its lifecycle head, so old wording of a changed decision
  finds the decision now in force, as ``record_search(current_only=true)`` does.
- ``newer_first``: the newer of two notes that say nearly the same thing (dense cosine,
  per model) moves above the older: notes have no ``supersedes`` edge, and a changed
  fact leaves both live.
- ``questions_after``: a note that only asks moves below the hits after it that score
  nearly as well: a question asked in a conversation matches a question about it
  best, and holds no answer (the reply a turn or two later does).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from mcp_gateway.search.ranking import Candidate


@dataclass(frozen=True, slots=True)
class Head:
    """Where a retired record's evidence goes: its lifecycle head's point."""

    point_id: str
    payload: dict[str, Any]


def carry_to_heads(
    candidates: Sequence[Candidate], heads: Mapping[str, Head], factor: float = 1.0
) -> list[Candidate]:
    """Replace every retired record (payload ``current`` false) by its head.

    A head takes the better of its own score and ``factor`` x the retired version's,
    and the better of each channel's evidence (so the keep rule judges it on what found
    it). A retired record with no entry in ``heads`` (its head is out of the caller's
    reach) is dropped, as the index filter would have dropped it."""
    by_id = {c.point_id: c for c in candidates if c.payload.get("current") is not False}
    for old in candidates:
        if old.payload.get("current") is not False or (head := heads.get(old.point_id)) is None:
            continue
        cand = by_id.get(head.point_id)
        if cand is None:
            cand = by_id[head.point_id] = Candidate(head.point_id, dict(head.payload))
        cand.score = max(cand.score, factor * old.score)
        if old.distance is not None and (cand.distance is None or old.distance < cand.distance):
            cand.distance, cand.dense_rank = old.distance, old.dense_rank
        if old.sparse_score is not None and (cand.sparse_score or 0.0) < old.sparse_score:
            cand.sparse_score, cand.sparse_rank = old.sparse_score, old.sparse_rank
    return sorted(by_id.values(), key=lambda c: c.score, reverse=True)


def newer_first(
    chosen: Sequence[Candidate],
    vectors: Mapping[str, Sequence[float]],
    min_similarity: float,
    min_ratio: float,
) -> list[Candidate]:
    """Move a note above an older note of the same type that says nearly the same thing.

    Notes have no ``supersedes`` edge: when a fact changes, the assistant writes a new
    note and the old one stays. Both then match a question about that fact, and the
    older one often ranks first. Here a note whose dense vector (``vectors``, by point
    id, unit length) is within ``min_similarity`` cosine of an older note ranked above
    it, of the same type and namespace (the caller's own notes stay before shared ones,
    ``select``), with at least ``min_ratio`` of that note's score, moves just
    above it: the newer statement of the fact comes first, the old one stays in the
    answer. Two valid facts on one topic sit further apart (e5: dev 0.889-0.917 against
    0.908-0.973 for a replaced fact; bench/LOG.md)."""
    out = list(chosen)
    notes = [c.point_id for c in out if _movable(c, vectors)]
    if len(notes) < 2 or min_similarity <= 0:
        return out
    mat = np.asarray([vectors[p] for p in notes], dtype=np.float64)
    alike = mat @ mat.T
    at = {p: i for i, p in enumerate(notes)}
    for j in range(1, len(out)):
        newer = out[j]
        if newer.point_id not in at:
            continue
        for i in range(j):
            older = out[i]
            if (
                not older.exact  # nothing goes above the one holder of an identifier
                and older.point_id in at
                and older.type == newer.type
                and older.payload.get("namespace") == newer.payload.get("namespace")
                and _created(older) < _created(newer)
                and newer.score >= min_ratio * older.score
                and alike[at[older.point_id], at[newer.point_id]] >= min_similarity
            ):
                out.insert(i, out.pop(j))
                break
    return out


def _movable(cand: Candidate, vectors: Mapping[str, Sequence[float]]) -> bool:
    return cand.payload.get("kind", "note") == "note" and cand.point_id in vectors


def _created(cand: Candidate) -> float:
    return float(cand.payload.get("created_at", 0.0))


QUESTION_MARKS = ("?", "\uff1f")  # ASCII and full-width (Japanese, Chinese)
# a chat turn's frame: "[2026-03-02 session 1] user: ", "Dana: ", "[10:42] Sam: "
_FRAME = re.compile(r"^\s*(?:\[[^\]]{0,80}\]\s*)?(?:[^\s:\[\]]{1,30}:\s)?")
# a sentence ends at . ! ? before a space (not "0.0.1"), or at a full-width mark
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|(?<=[\u3002\uff01\uff1f])")
# "Good.", "Makes sense.", "Welcome back!": a sentence this short before the question
# says nothing the answer needs
FILLER_WORDS, FILLER_CHARS = 3, 20


def asks(text: str) -> bool:
    """The note only asks: after its frame (a leading ``[...]`` and a ``speaker:``), its
    last sentence is a question and every other sentence is a question or filler. A
    turn that tells something and then asks ("I signed up for pottery! Have you tried
    it?") holds a fact: it does not count."""
    body = _FRAME.sub("", text, count=1).strip()
    if not body.endswith(QUESTION_MARKS):
        return False
    for part in _SENTENCE_END.split(body):
        part = part.strip()
        if part and not part.endswith(QUESTION_MARKS):
            if len(part.split()) > FILLER_WORDS or len(part) > FILLER_CHARS:
                return False
    return True


def questions_after(
    chosen: Sequence[Candidate], texts: Mapping[str, str], min_ratio: float
) -> list[Candidate]:
    """Move each note whose text (``texts``, by point id) only asks (``asks``) below the
    hits after it, in the same namespace, that have at least ``min_ratio`` of its score
    (0: below all of them), stopping above the next note that asks; the others keep
    their order. A note that alone holds an identifier of the query (``exact``) stays
    where it is."""
    out = list(chosen)
    asking = {c.point_id for c in out if asks(texts.get(c.point_id, ""))}
    for i in range(len(out) - 2, -1, -1):  # bottom-up: the lower questions settle first
        cand = out[i]
        if cand.exact or cand.point_id not in asking:
            continue
        j = i
        while j + 1 < len(out):
            below = out[j + 1]
            if (
                below.payload.get("namespace") != cand.payload.get("namespace")
                or below.score < min_ratio * cand.score
                or below.point_id in asking
            ):
                break
            j += 1
        if j != i:
            out.insert(j, out.pop(i))
    return out
