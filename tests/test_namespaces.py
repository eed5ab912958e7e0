"""Who may read what: bearer tokens map to namespaces over a real HTTP gateway."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from .http_server import http_client, http_gateway

GRANTS: dict[str, dict[str, Any]] = {
    "alice": {"token": "alice-token-0123456789", "namespace": "alice", "read": ["team"]},
    "bob": {"token": "bob-token-0123456789", "namespace": "bob", "read": ["team"]},
    "team": {"token": "team-token-0123456789", "namespace": "team"},
}


def token(name: str) -> str:
    return str(GRANTS[name]["token"])


async def ok(client: Client, tool: str, **args: Any) -> dict[str, Any]:
    res = await client.call_tool(tool, args)
    assert not res.is_error, res.content[0].text  # type: ignore[union-attr]
    return res.structured_content or {}


async def err(client: Client, tool: str, **args: Any) -> str:
    res = await client.call_tool(tool, args)
    assert res.is_error, f"{tool} should have been refused"
    return str(res.content[0].text)  # type: ignore[union-attr]


async def found_ids(client: Client, query: str) -> list[str]:
    data = await ok(client, "search_memory", query=query, top=10)
    return [r["id"] for r in data["results"]]


@pytest.fixture
def gateway(tmp_path: Path) -> Any:
    with http_gateway(tmp_path / "data", KIOKU_HTTP__GRANTS=json.dumps(GRANTS)) as url:
        yield url


async def test_tokens_isolate_namespaces_and_share_the_team_one(gateway: str) -> None:
    async with (
        http_client(gateway, token("alice")) as alice,
        http_client(gateway, token("bob")) as bob,
        http_client(gateway, token("team")) as team,
    ):
        secret = (await ok(alice, "add_note", text="Alice's staging password rotates monthly"))[
            "id"
        ]
        shared = (await ok(team, "add_note", text="Team rule: staging deploys need a review"))["id"]
        own_bob = (await ok(bob, "add_note", text="Bob prefers staging deploys in the morning"))[
            "id"
        ]

        assert secret in await found_ids(alice, "staging")
        bob_sees = await found_ids(bob, "staging")
        assert secret not in bob_sees and shared in bob_sees and own_bob in bob_sees
        assert bob_sees.index(own_bob) < bob_sees.index(shared)  # own namespace first
        assert shared in await found_ids(alice, "staging")
        assert secret not in await found_ids(team, "staging")

        for tool, args in [
            ("get_note", {"id": secret}),
            ("update_note", {"id": secret, "text": "hijacked"}),
            ("delete_note", {"id": secret}),
        ]:
            message = await err(bob, tool, **args)
            assert "Alice" not in message and "password" not in message
        # team notes are readable but not writable by members
        assert "read-only" in await err(bob, "update_note", id=shared, text="changed")
        assert (await ok(alice, "get_note", id=secret))["text"].startswith("Alice's")


async def test_records_follow_the_same_rules(gateway: str) -> None:
    async with (
        http_client(gateway, token("alice")) as alice,
        http_client(gateway, token("bob")) as bob,
    ):
        audit = await ok(alice, "record_add", type="audit", title="Alice found a leak")
        rid = audit["record"]["id"]
        await err(bob, "record_show", id=rid)
        await err(bob, "record_update", id=rid, status="resolved")
        await err(bob, "record_add", type="fix", title="Bob's fix", link=f"resolves:{rid}")
        hits = await ok(bob, "record_search", query="leak")
        assert hits["hits"] == []
        assert (await ok(alice, "record_search", query="leak"))["hits"][0]["id"] == rid


async def test_missing_or_wrong_token_is_refused(gateway: str) -> None:
    import httpx2

    async with httpx2.AsyncClient() as http:
        for headers in ({}, {"Authorization": "Bearer not-a-token"}):
            res = await http.post(gateway, json={}, headers=headers)
            assert res.status_code == 401
            assert "WWW-Authenticate" in res.headers
