"""``search_memory(alternatives=[...])``: other phrasings of the query find what the
query's own words miss (issue 30), through the real MCP protocol."""

from __future__ import annotations

from .conftest import Harness

NOTES = [
    "Rotate the TLS certificates on the load balancer every 60 days",
    "The frontend build uses vite and outputs to dist/",
    "Run database migrations before starting the new API version",
    "Store timestamps in UTC and convert at the edge",
    "The team prefers small pull requests with one concern each",
]


async def test_an_alternative_phrasing_finds_what_the_query_misses(harness: Harness) -> None:
    ids = [(await harness.ok("add_note", text=t))["id"] for t in NOTES]
    await harness.settle()
    query = "what is the cadence for renewing expiring encryption credentials"

    async def first(**kw: object) -> str | None:
        data = await harness.ok("search_memory", query=query, top=1, **kw)
        return data["results"][0]["id"] if data["results"] else None

    alone = await first()
    helped = await first(
        alternatives=["ロードバランサーの TLS 証明書はどのくらいの頻度で更新する？"]
    )
    assert helped == ids[0], (alone, helped)
    # a blank phrasing is ignored, not an error
    assert await first(alternatives=["  "]) == alone


async def test_too_many_alternatives_is_a_clear_error(harness: Harness) -> None:
    text = await harness.error("search_memory", query="tls", alternatives=["a", "b", "c", "d", "e"])
    assert "at most 4" in text
