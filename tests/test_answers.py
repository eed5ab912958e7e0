"""Repeated searches are answered from the answer cache until the index changes,
through the real MCP protocol; every kind of write makes the next answer fresh."""

from __future__ import annotations

from mcp_gateway.common.access import settings_scope
from mcp_gateway.common.inputs import NoteQuery
from mcp_gateway.services import Services

from .conftest import Harness
from .test_tools_notes import add, search


def answers(h: Harness) -> int:
    return h.app.search.answers.hits


async def test_a_repeated_search_is_answered_again_until_a_write(harness: Harness) -> None:
    first = await add(harness, "Rotate the staging database password every quarter")
    await harness.settle()
    query = "when do we rotate the staging database password?"
    before = await search(harness, query)
    assert [r["id"] for r in before][:1] == [first]
    hits = answers(harness)
    again = await search(harness, query)
    assert again == before and answers(harness) == hits + 1
    # a new note: the next search sees it
    second = await add(harness, "The staging database password lives in the vault, rotate it")
    await harness.settle()
    after_add = [r["id"] for r in await search(harness, query)]
    assert second in after_add and answers(harness) == hits + 1
    # an edit that changes the ranking, and a delete
    await harness.ok("update_note", id=first, priority="low")
    await harness.settle()
    low = {r["id"]: r for r in await search(harness, query)}
    assert low[first]["priority"] == "low"
    await harness.ok("delete_note", id=second)
    await harness.settle()
    assert second not in [r["id"] for r in await search(harness, query)]
    assert answers(harness) == hits + 1


async def test_a_filtered_answer_does_not_shrink_the_stored_one(harness: Harness) -> None:
    """The memory browser filters the service's answer by priority in place: what it
    gets is a copy, so the next plain search still has every result."""
    await add(harness, "Format Python code with ruff, not black", type="lesson", priority="high")
    await add(harness, "Format Python code with ruff before committing", type="knowledge")
    await harness.settle()
    services = Services.over(harness.app)
    scope = settings_scope(harness.app.settings)
    plain = await services.notes.search(scope, NoteQuery(query="python code formatter"))
    assert len(plain.results) == 2
    only_high = await services.notes.search(
        scope, NoteQuery(query="python code formatter", priority="high")
    )
    assert [r.priority for r in only_high.results] == ["high"]
    hits = answers(harness)
    again = await services.notes.search(scope, NoteQuery(query="python code formatter"))
    assert answers(harness) == hits + 1 and again == plain


def test_huge_answers_and_other_generations_are_not_served() -> None:
    from mcp_gateway.common.types import SearchResponse, SearchResult
    from mcp_gateway.search.answers import MAX_ANSWER_CHARS, AnswerCache, AnswerKey

    def response(chars: int) -> SearchResponse:
        hit = SearchResult(id="n", type="note", created_at="", score=1.0, text="x" * chars)
        return SearchResponse(query="q", results=[hit])

    cache = AnswerCache(size=2)
    key: AnswerKey = ("q", "", "", 5, ("default",), (), (), False)
    cache.put(key, 7, {"*": 0.2}, response(MAX_ANSWER_CHARS + 1))
    assert cache.get(key, 7, {"*": 0.2}) is None
    cache.put(key, 7, {"*": 0.2}, response(10))
    assert cache.get(key, 7, {"*": 0.2}) == response(10)
    assert cache.get(key, 8, {"*": 0.2}) is None  # the index moved on
    assert cache.get(key, 7, {"*": 0.3}) is None  # thresholds were retuned
    cache.put(key, 7, {"*": 0.2}, SearchResponse(query="q", results=[], dense_available=False))
    assert cache.get(key, 7, {"*": 0.2}) == response(10)  # a lexical-only answer is not kept
