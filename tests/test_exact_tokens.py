"""A token that occurs in exactly one memory finds that memory first (issue 30).

Through the real MCP protocol, every note embedded: hundreds of near-identical notes
and records are equally close to a query in the dense space, so only the one exact
token tells them apart, and it must win whatever the semantic channels say.
"""

from __future__ import annotations

import hashlib

from mcp_gateway.exact_terms import identifier_terms
from mcp_gateway.lexical import term_id

from .conftest import Harness

NOTES, RECORDS = 250, 150


def marker(i: int) -> str:
    return "zq" + hashlib.sha1(str(i).encode()).hexdigest()[:10]


async def top_ids(h: Harness, query: str, top: int = 5) -> list[str]:
    data = await h.ok("search_memory", query=query, top=top)
    return [r["id"] for r in data["results"]]


async def test_a_token_held_by_one_memory_finds_it_first(harness: Harness) -> None:
    notes = [
        (
            await harness.ok(
                "add_note",
                text=f"Incident {i}: the auth service exhausted its pool, marker {marker(i)}",
            )
        )["id"]
        for i in range(NOTES)
    ]
    records = [
        (
            await harness.ok(
                "record_add",
                type="audit",
                title=f"Incident {i}: auth pool exhausted",
                content=f"The auth service exhausted its pool, marker {marker(1000 + i)}",
            )
        )["record"]["id"]
        for i in range(RECORDS)
    ]
    # right after the burst, most notes still wait for their embedding: found all the same
    burst = [
        i for i in range(0, NOTES, 10) if (await top_ids(harness, marker(i)))[:1] != [notes[i]]
    ]
    assert burst == [], f"{len(burst)} markers missed before the notes were embedded"
    await harness.settle()
    missed = [i for i in range(NOTES) if (await top_ids(harness, marker(i)))[:1] != [notes[i]]]
    assert missed == [], f"{len(missed)} of {NOTES} note markers missed at rank 1"
    for i in range(0, RECORDS, 3):  # every third record: each through both doors
        token = marker(1000 + i)
        assert (await top_ids(harness, f"which incident had marker {token}?"))[0] == records[i]
        hits = (await harness.ok("record_search", query=f"marker {token}", limit=5))["hits"]
        assert hits[0]["id"] == records[i]
    # a unique incident number is an identifier too; a shared word is not
    assert (await top_ids(harness, "what happened in Incident 123"))[0] == notes[123]


async def test_a_token_held_by_two_memories_pins_neither(harness: Harness) -> None:
    async def add(text: str) -> str:
        return str((await harness.ok("add_note", text=text))["id"])

    shared = [
        await add("Flaky checkout test traced to shared fixture state, ticket tok-4411"),
        await add("Payment webhook retried twice after a timeout, ticket tok-4411"),
    ]
    unique = await add("Docker layer cache missed after the base image bump, ticket tok-9071")
    tls = await add("Rotate the TLS certificates on the load balancer every 60 days")
    for text in (
        "The frontend build uses vite and outputs to dist/",
        "Run database migrations before starting the new API version",
        "Store timestamps in UTC and convert at the edge",
    ):
        await add(text)
    await harness.settle()
    question = "how often do we rotate the TLS certificates on the load balancer"
    # the shared token names no one memory: the note the question describes wins
    assert (await top_ids(harness, f"{question} tok-4411"))[0] == tls
    # the token only one memory holds names it, over the better semantic match
    assert (await top_ids(harness, f"{question} tok-9071"))[0] == unique
    assert set(await top_ids(harness, "tok-4411", top=2)) == set(shared)


def test_which_words_are_identifiers() -> None:
    query = "ERR_POOL_42 v1.2.3 third-party 9am JavaScript getUserName"
    assert [t for t, _ in identifier_terms(query)] == ["err_pool_42", "v1.2.3", "getusername"]
    assert [t for t, _ in identifier_terms("Docker Hub 429 อีกแล้ว tok-4411")] == ["429", "tok-4411"]
    assert identifier_terms("エラーE1234が出た") == [("e1234", term_id("e1234"))]
    assert identifier_terms("how do we rotate the TLS certificates") == []
