"""A name one memory alone holds finds it, in any case, on SQLite and PostgreSQL (issue 45).

Through the real MCP protocol, every note embedded: near-identical notes that differ by
a made-up ticket label in lowercase letters (no digit, no ``_``: not identifier-shaped).
Fused, the one BM25 match drowned among notes the dense channel rates as close (a
memory a semantic channel returned keeps no BM25 score): 31 of 100 labels missed the
top 5 on either store. A common word that one memory alone holds ("forever") is a topic
word, and does not pull that memory first.
"""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator

import pytest

from mcp_gateway.common.settings import KiokuSettings
from mcp_gateway.protocol.server import create_server
from mcp_gateway.services.app import AppContext

from .conftest import Harness, connected

NOTES = 60
TOPICS = [
    "the auth service exhausted its connection pool",
    "the docker build cache missed after a base image bump",
    "a flaky checkout test shared fixture state",
    "the payment webhook retried twice after a timeout",
    "TLS certificates expired on the load balancer",
    "migrations ran after the new API version started",
    "timestamps were stored in local time",
    "the CSV export lost its byte order mark",
    "redis evicted the session keys under memory pressure",
    "the nightly cron job ran twice",
]


def label(i: int) -> str:
    """A made-up ticket label: twelve lowercase letters."""
    return "".join(chr(97 + b % 26) for b in hashlib.sha1(f"label{i}".encode()).digest()[:12])


@pytest.fixture(params=["sqlite", "postgres"])
async def on_store(
    request: pytest.FixtureRequest, settings: KiokuSettings
) -> AsyncIterator[Harness]:
    """A server over SQLite, or over a fresh schema on the test PostgreSQL."""
    if request.param == "postgres":
        url = request.getfixturevalue("pg_database").new_schema()
        settings = settings.model_copy(update={"database_url": url})
    apps: list[AppContext] = []
    async with connected(create_server(settings, on_app=apps.append)) as client:
        yield Harness(client, apps)


async def top_ids(h: Harness, query: str, top: int = 5) -> list[str]:
    data = await h.ok("search_memory", query=query, top=top)
    return [r["id"] for r in data["results"]]


async def test_a_name_held_by_one_note_finds_it_in_any_case(on_store: Harness) -> None:
    h = on_store
    ids = [
        (await h.ok("add_note", text=f"Ticket {label(i)}: {TOPICS[i % 10]} (sprint {i % 7})"))["id"]
        for i in range(NOTES)
    ]
    await h.settle()
    missed = [i for i in range(NOTES) if ids[i] not in (await top_ids(h, label(i)))]
    assert missed == [], f"{len(missed)} of {NOTES} labels missed the top 5"
    shouted = [i for i in range(0, NOTES, 6) if ids[i] not in await top_ids(h, label(i).upper())]
    assert shouted == [], f"{len(shouted)} upper-case labels missed the top 5"
    asked = [
        i
        for i in range(1, NOTES, 6)
        if (await top_ids(h, f"what was ticket {label(i)} about?"))[:1] != [ids[i]]
    ]
    assert asked == [], f"{len(asked)} labels in a question missed rank 1"


async def test_a_common_word_one_note_holds_does_not_pull_it_first(harness: Harness) -> None:
    async def add(text: str) -> str:
        return str((await harness.ok("add_note", text=text))["id"])

    docker = await add("Docker image builds are slow: order the Dockerfile so the layer cache hits")
    await add("The staging database keeps audit rows forever; nobody prunes them")
    await add("Bake the sourdough loaf at 230 C for 40 minutes")
    for text in (
        "Run database migrations before starting the new API version",
        "Store timestamps in UTC and convert at the edge",
        "Rotate the TLS certificates on the load balancer every 60 days",
    ):
        await add(text)
    await harness.settle()
    assert (await top_ids(harness, "docker image build takes forever"))[0] == docker


KATAKANA = "アイウエオカキクケコサシスセソタチツテトナニヌネノハヒフヘホマミムメモラリルレロ"
THAI = "กขคงจฉชซญฎฏฐฑฒณดตถทธนบปผพฟภมยรลวศษสหฬอฮ"


def unspaced_name(i: int, alphabet: str) -> str:
    """A made-up six-letter name in an unspaced script."""
    digest = hashlib.sha1(f"name{i}".encode()).digest()
    return "".join(alphabet[b % len(alphabet)] for b in digest[:6])


async def test_a_made_up_japanese_or_thai_name_finds_its_note(harness: Harness) -> None:
    """No name rule reads unspaced scripts (no word to look up whole); their character
    n-grams and the dense channel find such a name: this holds that (a guard)."""
    h, n = harness, 20
    ja = [
        (
            await h.ok(
                "add_note", text=f"{unspaced_name(i, KATAKANA)}の認証サービスで接続プールが枯渇した"
            )
        )["id"]
        for i in range(n)
    ]
    th = [
        (await h.ok("add_note", text=f"บริการ{unspaced_name(n + i, THAI)}ใช้การเชื่อมต่อจนหมดพูล"))["id"]
        for i in range(n)
    ]
    await h.settle()
    missed = [i for i in range(n) if ja[i] not in await top_ids(h, unspaced_name(i, KATAKANA))]
    missed += [n + i for i in range(n) if th[i] not in await top_ids(h, unspaced_name(n + i, THAI))]
    assert missed == [], f"{len(missed)} of {2 * n} ja/th names missed the top 5"
