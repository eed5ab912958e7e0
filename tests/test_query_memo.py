"""The per-query memo: each derivation once per text, views tied to one embedding."""

from __future__ import annotations

import gc
import tracemalloc

import numpy as np

from mcp_gateway.indexing import lexical
from mcp_gateway.search.exact_terms import identifier_terms
from mcp_gateway.search.query_memo import QueryMemo


def test_views_are_made_once_per_embedding_object_and_text() -> None:
    memo, made = QueryMemo(size=2), list[str]()

    def make(tag: str) -> list[list[float]]:
        made.append(tag)
        return [[float(len(made))]]

    first, again = object(), object()
    views = memo.views("q", first, lambda: make("a"))
    assert memo.views("q", first, lambda: make("b")) is views and made == ["a"]
    # the embedder's cache evicted and re-embedded the query: a new object, new views
    assert [list(v) for v in memo.views("q", again, lambda: make("c"))] == [[2.0]]
    assert made == ["a", "c"]
    # least recently used text goes first
    memo.views("r", first, lambda: make("d"))
    memo.views("s", first, lambda: make("e"))
    memo.views("q", again, lambda: make("f"))
    assert made[-1] == "f"


def test_lexical_derivations_equal_the_functions_they_memoise() -> None:
    memo = QueryMemo(names=False)
    for query in (
        "before the deploy, check kiokuSearchX in ab12cd",
        "本番デプロイの前に",
        "ก่อนดีพลอย",
    ):
        words = memo.words(query)
        assert words is memo.words(query)
        assert words.sparse == lexical.sparse_query(query)
        assert words.unspaced == lexical.unspaced_share(query)
        assert words.identifiers == identifier_terms(query, False)


def test_views_are_kept_compact_with_the_values_made() -> None:
    """Two views of a 384-d query as lists of Python floats held ~25 KB a query (a full
    memo ~6 MB); as float64 arrays ~6 KB, the same values."""
    rng = np.random.default_rng(3)
    made = {f"q{i}": rng.uniform(-1, 1, (2, 384)) for i in range(64)}
    memo = QueryMemo(size=64)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        # ``shift_views`` makes its views with numpy's ``tolist``: new float objects
        kept = {q: memo.views(q, views, views.tolist) for q, views in made.items()}
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert held / len(made) < 8_000
    assert all([list(v) for v in kept[q]] == views.tolist() for q, views in made.items())
