"""The per-query memo: each derivation once per text, views tied to one embedding."""

from __future__ import annotations

from mcp_gateway.embedders import lexical
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
    assert memo.views("q", again, lambda: make("c")) == [[2.0]] and made == ["a", "c"]
    # least recently used text goes first
    memo.views("r", first, lambda: make("d"))
    memo.views("s", first, lambda: make("e"))
    memo.views("q", again, lambda: make("f"))
    assert made[-1] == "f"


def test_lexical_derivations_equal_the_functions_they_memoise() -> None:
    memo = QueryMemo()
    for query in ("before the deploy, run migrations", "本番デプロイの前に", "ก่อนดีพลอย"):
        assert memo.sparse(query) == lexical.sparse_query(query)
        assert memo.sparse(query) is memo.sparse(query)
        assert memo.unspaced(query) == lexical.unspaced_share(query)
