"""Tenants sharing one HTTP gateway (issue 10, items 1-4), through the real protocol.

An owner token (the settings' namespace "default") plus grants: alice and bob each
write their own namespace and read "team"; team writes "team". Each test fails on the
code before the fix (noted per test).
"""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from mcp_gateway.common.access import Scope
from mcp_gateway.common.inputs import RecordFields
from mcp_gateway.records import RecordStore
from mcp_gateway.search.thresholds import THRESHOLDS_META_KEY, thresholds_key
from mcp_gateway.stores.db import Database
from tests.http_server import http_client, http_gateway
from tests.realproc import db_rows, text_of, wait_until

OWNER = "owner-token-0123456789"
GRANTS: dict[str, dict[str, Any]] = {
    "alice": {"token": "alice-token-0123456789", "namespace": "alice", "read": ["team"]},
    "bob": {"token": "bob-token-0123456789", "namespace": "bob", "read": ["team"]},
    "team": {"token": "team-token-0123456789", "namespace": "team"},
}


def token(name: str) -> str:
    return str(GRANTS[name]["token"])


async def ok(client: Client, tool: str, **args: Any) -> dict[str, Any]:
    res = await client.call_tool(tool, args)
    assert not res.is_error, text_of(res)
    return res.structured_content or {}


async def err(client: Client, tool: str, **args: Any) -> str:
    res = await client.call_tool(tool, args)
    assert res.is_error, f"{tool}({args}) should have been refused"
    return text_of(res)


async def context_of(client: Client) -> str:
    res = await client.read_resource("kioku://session_context")
    return "\n".join(getattr(c, "text", "") for c in res.contents)


@pytest.fixture
def data(tmp_path: Path) -> Path:
    return tmp_path / "data"


@pytest.fixture
def gateway(data: Path) -> Any:
    with http_gateway(data, KIOKU_HTTP__TOKEN=OWNER, KIOKU_HTTP__GRANTS=json.dumps(GRANTS)) as url:
        yield url


async def test_session_context_is_per_token(gateway: str) -> None:
    """Before: every token read the owner's session_context.md (issue 10, item 1)."""
    async with (
        http_client(gateway, OWNER) as owner,
        http_client(gateway, token("alice")) as alice,
        http_client(gateway, token("team")) as team,
    ):
        await ok(owner, "add_note", text="Owner secret: the vault key rotates", type="lesson",
                 priority="high")  # fmt: skip
        await ok(owner, "record_add", type="decision", title="Owner-only decision zebra")
        await ok(alice, "add_note", text="Alice lesson: run the linter", type="lesson",
                 priority="high")  # fmt: skip
        await ok(alice, "record_add", type="decision", title="Alice decision walrus")
        await ok(team, "add_note", text="Team lesson: deploys need review", type="lesson")
        for reader in (alice,):
            text = await context_of(reader)
            assert "Owner secret" not in text and "zebra" not in text
            assert "> Alice lesson: run the linter" in text and "> Alice decision walrus" in text
            shared = text.index("## Shared namespace `team`")
            assert text.index("> Team lesson: deploys need review") > shared  # marked as shared
            assert text.index("> Alice lesson") < shared
            prompt = await alice.get_prompt("session_context")
            prompt_text = "\n".join(getattr(m.content, "text", "") for m in prompt.messages)
            assert "Owner secret" not in prompt_text and "> Alice lesson" in prompt_text
        assert "Owner secret" in await context_of(owner)


async def test_read_only_grant_cannot_change_team_records(gateway: str) -> None:
    """Before: alice (read-only on team) superseded/contradicted/resolved team records."""
    async with (
        http_client(gateway, token("alice")) as alice,
        http_client(gateway, token("team")) as team,
    ):
        decision = await ok(team, "record_add", type="decision", title="Team uses pnpm")
        tid = decision["record"]["id"]
        audit = await ok(team, "record_add", type="audit", title="Team audit: slow CI")
        aid = audit["record"]["id"]
        for rel, target in [("supersedes", tid), ("contradicts", tid), ("duplicates", tid),
                            ("resolves", aid), ("verifies", aid)]:  # fmt: skip
            message = await err(alice, "record_add", type="decision", title=f"Alice {rel}",
                                link=f"{rel}:{target}")  # fmt: skip
            assert "read-only" in message
        mine = (await ok(alice, "record_add", type="knowledge", title="Alice note"))["record"]["id"]
        assert "read-only" in await err(alice, "record_link", source=mine,
                                        relation="contradicts", target=tid)  # fmt: skip
        # a plain reference is fine, but the team never sees alice's id in its view
        await ok(alice, "record_link", source=mine, relation="references", target=tid)
        view = await ok(team, "record_show", id=tid)
        assert view["lifecycle"]["current"] is True
        assert mine not in json.dumps(view)
        hits = await ok(team, "record_search", query="pnpm", current_only=True)
        assert [h["id"] for h in hits["hits"]] == [tid]


async def test_unknown_and_foreign_ids_get_the_same_answer(gateway: str) -> None:
    """Before: a foreign id said "(or it belongs to a namespace you cannot read)" while an
    unknown id did not, and record numbers counted every tenant's records."""
    async with (
        http_client(gateway, token("alice")) as alice,
        http_client(gateway, token("bob")) as bob,
    ):
        note = (await ok(alice, "add_note", text="Alice private note"))["id"]
        unknown_note = note[:-4] + ("AAAA" if not note.endswith("AAAA") else "BBBB")
        cases: list[tuple[str, dict[str, Any]]] = [
            ("get_note", {}),
            ("update_note", {"text": "x"}),
            ("delete_note", {}),
            ("delete_note", {"restore": True}),
        ]
        for tool, extra in cases:
            foreign = await err(bob, tool, id=note, **extra)
            unknown = await err(bob, tool, id=unknown_note, **extra)
            assert foreign.replace(note, "ID") == unknown.replace(unknown_note, "ID"), tool
        for n in range(3):
            rec = (await ok(alice, "record_add", type="audit", title=f"Alice audit {n}"))["record"]
        rid = rec["id"]
        fake = rid.replace("003", "077")
        bobs = (await ok(bob, "record_add", type="audit", title="Bob audit"))["record"]
        assert bobs["seq"] == 1, bobs["id"]  # bob's numbers say nothing about alice's
        calls = [
            ("record_show", lambda i: {"id": i}),
            ("record_update", lambda i: {"id": i, "status": "resolved"}),
            (
                "record_link",
                lambda i: {"source": bobs["id"], "relation": "references", "target": i},
            ),
            (
                "record_link",
                lambda i: {"source": i, "relation": "references", "target": bobs["id"]},
            ),
            ("record_add", lambda i: {"type": "fix", "title": "f", "link": f"resolves:{i}"}),
            ("record_add", lambda i: {"type": "fix", "title": "f", "link": f"references:{i}"}),
        ]
        for tool, args in calls:
            foreign = await err(bob, tool, **args(rid))
            unknown = await err(bob, tool, **args(fake))
            assert foreign.replace(rid, "ID") == unknown.replace(fake, "ID"), tool


async def test_one_tenant_cannot_starve_anothers_record_search(data: Path, gateway: str) -> None:
    """Before: the FTS query took the top 1,000 rows of all namespaces, then filtered:
    1,040 matching records of bob hid alice's own."""
    async with http_client(gateway, token("alice")) as alice:
        mine = (await ok(alice, "record_add", type="audit", title="leak in the cache"))["record"]
        db = Database(data / "kioku.sqlite3")
        await db.open()
        try:
            bob = RecordStore(db, "MEM")
            scope = Scope("bob", ("bob",))
            for i in range(1040):
                await bob.add(
                    RecordFields(type="audit", title=f"leak leak leak number {i}"), scope=scope
                )
        finally:
            await db.close()
        hits = await ok(alice, "record_search", query="leak", limit=5)
        assert [h["id"] for h in hits["hits"]] == [mine["id"]]


async def test_thresholds_are_tuned_per_namespace(data: Path, gateway: str) -> None:
    """Before: one global threshold key, learnt from every namespace's solved queries."""
    async with http_client(gateway, token("bob")) as bob:
        for i in range(6):
            await ok(bob, "add_note", type="lesson", solved_query=f"deploy {i} failed token",
                     text=f"staging deploy {i} broke because the token expired")  # fmt: skip

        def tuned(key: str) -> list[tuple[Any, ...]]:
            try:
                return db_rows(data, "SELECT value FROM meta WHERE key = ?", (key,))
            except sqlite3.OperationalError:
                return []

        assert wait_until(lambda: tuned(thresholds_key("bob")), 120, 0.5), "no tuning for bob"
        assert tuned(thresholds_key("alice")) == [] and tuned(thresholds_key("default")) == []
        assert tuned(THRESHOLDS_META_KEY) == []


def test_current_only_resolves_a_long_chain_in_linear_work(tmp_path: Path) -> None:
    """Before: every matching version walked the chain step by step (1,500 versions x
    up to 1,500 steps, one query each): ~1.1 M statements, the DB lock held for seconds.
    Counted in statements, not seconds (no timed asserts)."""
    import asyncio

    async def run() -> int:
        db = Database(tmp_path / "k.sqlite3")
        await db.open()
        try:
            store = RecordStore(db, "MEM")
            scope = Scope("bob", ("bob",))
            prev = await store.add(
                RecordFields(type="decision", title="use gadget v0"), scope=scope
            )
            for i in range(1, 1500):
                link = f"supersedes:{prev.id}"
                fields = RecordFields(type="decision", title=f"use gadget v{i}", links=(link,))
                prev = await store.add(fields, scope=scope)
            count = [0]
            db.conn.set_trace_callback(lambda _sql: count.__setitem__(0, count[0] + 1))
            hits = await store.search("gadget", current_only=True, limit=5, scope=scope)
            db.conn.set_trace_callback(None)
            assert [h.id for h in hits] == [prev.id]
            return count[0]
        finally:
            await db.close()

    statements = asyncio.run(run())
    assert statements < 5_000, statements


def test_record_ids_keep_the_default_form_and_stay_unique(tmp_path: Path) -> None:
    import asyncio

    async def run() -> list[str]:
        db = Database(tmp_path / "k.sqlite3")
        await db.open()
        try:
            store = RecordStore(db, "MEM")
            ids = []
            for n, ns in enumerate(("default", "alice", "ALICE", "a-l-i-c-e", "default")):
                fields = RecordFields(type="audit", title=f"x{n}")
                ids.append((await store.add(fields, scope=Scope(ns, (ns,)))).id)
            return ids
        finally:
            await db.close()

    ids = asyncio.run(run())
    assert ids[0] == "AUDIT-MEM-001" and ids[4] == "AUDIT-MEM-002"
    assert len(set(ids)) == 5 and all(re.match(r"^AUDIT-MEM-001\.[A-Z0-9]+$", i) for i in ids[1:4])
