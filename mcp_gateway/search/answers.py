"""Answers to repeated searches, kept until the index changes.

Assistants repeat the same search within a session (the start-of-task lookup, a retry
after a failed tool call); over a settled index its answer cannot have changed. An
answer is keyed by everything the request says (query, filters, ``top``, the caller's
namespaces) and stored with the index's write generation and the thresholds it was
ranked with; any index write (a note added, edited, deleted, embedded, re-ranked, a
record superseded, a rebuild swapped in) bumps the generation after it lands
(``index/live.py``), so a stored answer is served only while nothing it depends on has
moved. The recent-lessons part comes from notes whose every change also writes the
index. Answers given while the embedder was down, or that met hits still waiting for
their embedding, are not kept: the next search should try the dense channel again, or
may embed those hits itself (``fresh.py``).

Measured (2k notes, in-process, bench/LOG.md): a repeated search 10.4 ms
-> 0.1 ms in the service; over stdio the round trip is the hop alone.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass

from mcp_gateway.common.types import SearchResponse

# (query, type, domain, top, namespaces, alternatives, kinds, by_meaning)
AnswerKey = tuple[str, str, str, int, tuple[str, ...], tuple[str, ...], tuple[str, ...], bool]
# answers whose texts add up to more are not kept: 256 answers stay under ~16 MB even
# when every note is near the 32 KB limit
MAX_ANSWER_CHARS = 64_000


@dataclass(frozen=True, slots=True)
class _Answer:
    generation: int
    thresholds: dict[str, float]
    response: SearchResponse


class AnswerCache:
    def __init__(self, size: int) -> None:
        self.size = size
        self.hits = 0
        self._answers: OrderedDict[AnswerKey, _Answer] = OrderedDict()

    def get(
        self, key: AnswerKey, generation: int, thresholds: Mapping[str, float]
    ) -> SearchResponse | None:
        """A copy of the stored answer, if it was given at this generation."""
        found = self._answers.get(key)
        if found is None or found.generation != generation or found.thresholds != thresholds:
            return None
        self._answers.move_to_end(key)
        self.hits += 1
        return found.response.model_copy(deep=True)  # callers may filter what they get

    def clear(self) -> None:
        self._answers.clear()

    def put(
        self,
        key: AnswerKey,
        generation: int,
        thresholds: Mapping[str, float],
        response: SearchResponse,
    ) -> None:
        if self.size <= 0 or not response.dense_available:
            return
        shown = [*response.results, *response.recent]
        if sum(len(r.text) + len(r.title) for r in shown) > MAX_ANSWER_CHARS:
            return
        self._answers[key] = _Answer(generation, dict(thresholds), response.model_copy(deep=True))
        self._answers.move_to_end(key)
        while len(self._answers) > self.size:
            self._answers.popitem(last=False)
