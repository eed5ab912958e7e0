"""What a search derives from the query's words, kept per query text.

A search tokenised its query four times (the BM25 terms, the unspaced share, the
script and the ramp of the language shift: ~150 us for an English sentence), looked
for the identifiers it names (``exact_terms``) and
shifted the embedding into its two views (~40 us of numpy), all again for a query
whose embedding came from the cache. A search over a cached embedding takes ~5 ms
in-process at 10k notes; these were ~0.2 ms of it.

Keyed by the exact text, like the embedder's query cache. The views are reused only
while the embedder hands back the very same cached embedding object, so they never
outlive it (an evicted and re-embedded query gets new views). What it returns is
shared: callers must not mutate it. Views are kept as float64 arrays, the very values
``make`` gave (as lists of Python floats two views took ~25 KB a query, ~6 MB for a
full memo; bench/LOG.md, "footprint").
"""

from __future__ import annotations

from array import array
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from mcp_gateway.common.types import SparseVector
from mcp_gateway.indexing import lexical
from mcp_gateway.search.exact_terms import identifier_terms


@dataclass(frozen=True, slots=True)
class QueryWords:
    """What a search reads from the query's words (not its meaning)."""

    identifiers: list[tuple[str, int]]  # (token, term) the query names (exact_terms)
    sparse: SparseVector  # its BM25 terms
    unspaced: float  # the share of its letters in unspaced scripts (lexical)


@dataclass(slots=True)
class _Entry:
    words: QueryWords | None = None
    embedding: object = None  # the cached embedding the views were made from
    views: list[Sequence[float]] | None = None


class QueryMemo:
    def __init__(self, size: int = 256, *, names: bool = True) -> None:
        """``names``: a known name counts as an identifier (``search.exact_names``)."""
        self.size, self.names = size, names
        self._entries: OrderedDict[str, _Entry] = OrderedDict()

    def _entry(self, query: str) -> _Entry:
        entry = self._entries.get(query)
        if entry is None:
            entry = self._entries[query] = _Entry()
            if len(self._entries) > self.size:
                self._entries.popitem(last=False)
        else:
            self._entries.move_to_end(query)
        return entry

    def words(self, query: str) -> QueryWords:
        entry = self._entry(query)
        if entry.words is None:
            entry.words = QueryWords(
                identifier_terms(query, self.names),
                lexical.sparse_query(query),
                lexical.unspaced_share(query),
            )
        return entry.words

    def views(
        self, query: str, embedding: object, make: Callable[[], list[list[float]]]
    ) -> list[Sequence[float]]:
        """The views ``make`` builds from ``embedding``, built once per embedding object."""
        entry = self._entry(query)
        if entry.views is None or entry.embedding is not embedding:
            entry.embedding = embedding
            entry.views = [array("d", view) for view in make()]
        return entry.views
