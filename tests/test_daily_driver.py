"""Papercuts of issue 11, through the real MCP protocol (in-process server): identical
notes stored once, search wording, server version, tool descriptions, readable history,
and what session_context.md lists as open work."""

from __future__ import annotations

import re

from mcp_gateway import __version__
from mcp_gateway.common.inputs import NoteChanges, NoteFields
from mcp_gateway.common.settings import KiokuSettings
from mcp_gateway.protocol.server import create_server
from mcp_gateway.services.app import AppContext
from mcp_gateway.stores.notes import NoteStore
from tests.conftest import Harness, connected

ISO = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")


async def test_identical_note_returns_the_existing_id(harness: Harness) -> None:
    text = "Never force-push to main: rebase locally and open a PR."
    first = await harness.call("add_note", text=text, type="lesson", priority="high")
    assert first.content[0].text == f"Stored lesson {first.structured_content['id']}."
    # the same text again (re-sent with other line breaks and spacing): the same note
    resent = "  " + text.replace(" ", "\n", 2) + "\n"
    again = await harness.call("add_note", text=resent, type="lesson")
    assert not again.is_error
    assert again.structured_content["id"] == first.structured_content["id"]
    assert again.structured_content["status"] == "already_stored"
    assert "Already stored" in again.content[0].text and "not stored twice" in again.content[0].text
    # another type is another note
    other = await harness.ok("add_note", text=text, type="knowledge")
    assert other["id"] != first.structured_content["id"] and other["status"] == "stored"
    counts = await harness.app.notes.counts()
    assert counts["total"] == 2


async def test_dedup_is_per_namespace_and_ignores_deleted_notes(harness: Harness) -> None:
    store: NoteStore = harness.app.notes
    a, created = await store.add_or_existing(
        NoteFields(text="same words", type="note"), namespace="alice"
    )
    assert created
    b, created = await store.add_or_existing(
        NoteFields(text="same words", type="note"), namespace="bob"
    )
    assert created and b.id != a.id
    again, created = await store.add_or_existing(
        NoteFields(text="same  words", type="note"), namespace="alice"
    )
    assert not created and again.id == a.id
    await store.set_deleted(a.id, True)
    fresh, created = await store.add_or_existing(
        NoteFields(text="same words", type="note"), namespace="alice"
    )
    assert created and fresh.id != a.id
    # an edit moves the note's identity with its text
    await store.update(fresh.id, NoteChanges(text="new words"))
    moved, created = await store.add_or_existing(
        NoteFields(text="new words", type="note"), namespace="alice"
    )
    assert not created and moved.id == fresh.id


async def test_empty_search_says_what_to_search_for(harness: Harness) -> None:
    message = await harness.error("search_memory", query="   ")
    assert "query is empty: describe what you" in message and "store" not in message


async def test_server_version_and_dedented_tool_descriptions(harness: Harness) -> None:
    info = harness.client.server_info
    assert info is not None and info.name == "kioku" and info.version == __version__ != ""
    tools = await harness.client.list_tools()
    for tool in tools.tools:
        assert tool.description, tool.name
        assert not any(line.startswith("    ") for line in tool.description.splitlines()), (
            tool.name,
            tool.description,
        )


async def test_history_and_counts_read_naturally(harness: Harness) -> None:
    added = await harness.ok("add_note", text="The staging cluster runs Kubernetes 1.29")
    await harness.ok("update_note", id=added["id"], text="The staging cluster runs 1.30")
    shown = await harness.call("get_note", id=added["id"])
    text = shown.content[0].text
    assert re.search(rf"- changed text at {ISO.pattern}", text), text
    assert ISO.fullmatch(shown.structured_content["history"][0]["changed_at"])
    await harness.settle()
    found = await harness.call("search_memory", query="staging cluster Kubernetes", top=1)
    assert found.content[0].text.startswith('1 memory for "staging cluster Kubernetes"')


async def test_session_context_open_work_is_audits_and_fixes(harness: Harness) -> None:
    audit = await harness.ok("record_add", type="audit", title="Login times out on Safari")
    fact = await harness.ok("record_add", type="knowledge", title="Safari caps cookies at 4 KB")
    check = await harness.ok("record_add", type="verification", title="Checked on Safari 17")
    decision = await harness.ok("record_add", type="decision", title="Store sessions in Redis")
    await harness.ok("add_note", text="Safari needs the SameSite=None cookie", type="lesson")
    await harness.settle()
    context = harness.app.settings.session_context_path.read_text(encoding="utf-8")
    head, open_work = context.split("## Open work", 1)
    ids = {k: v["record"]["id"] for k, v in (("a", audit), ("f", fact), ("c", check))}
    assert ids["a"] in open_work
    assert ids["f"] not in open_work and ids["c"] not in open_work
    decision_id = decision["record"]["id"]
    assert decision_id in head and decision_id not in open_work


async def test_unknown_ids_name_the_mcp_tool_that_finds_ids(harness: Harness) -> None:
    """The services' NotFound names the id only; the MCP door adds the tool to call (the
    CLI adds its command instead: tests/test_cli.py)."""
    note = await harness.error("get_note", id="NOPE")
    assert note.endswith(": no note with id 'NOPE'; search_memory shows the ids")
    record = await harness.error("record_show", id="FOO-1")
    assert record.endswith(
        ": no record 'FOO-1'; find ids with record_search (ids look like AUDIT-MEM-001)"
    )


async def test_a_verified_fix_and_its_audit_leave_open_work(harness: Harness) -> None:
    """Before: after AUDIT -> FIX (resolves) -> VERIFICATION (verifies), the fix and the
    audit were still listed as open work; the stored fields are left as they were."""
    audit = (await harness.ok("record_add", type="audit", title="Cache never expires"))["record"]
    fix = (
        await harness.ok(
            "record_add", type="fix", title="TTL of one hour", link=f"resolves:{audit['id']}"
        )
    )["record"]
    other = (await harness.ok("record_add", type="audit", title="Logs fill the disk"))["record"]
    unverified = (
        await harness.ok(
            "record_add", type="fix", title="Rotate logs daily", link=f"resolves:{other['id']}"
        )
    )["record"]

    async def open_work() -> str:
        await harness.settle()
        context = harness.app.settings.session_context_path.read_text(encoding="utf-8")
        return context.split("## Open work", 1)[1]

    assert fix["id"] in await open_work() and audit["id"] in await open_work()
    failed = (
        await harness.ok(
            "record_add",
            type="verification",
            title="Still stale after 2 h",
            status="rejected",
            link=f"verifies:{fix['id']}",
        )
    )["record"]
    assert fix["id"] in await open_work()  # a rejected verification proves nothing
    await harness.ok(
        "record_add", type="verification", title="Expired at 1 h", link=f"verifies:{fix['id']}"
    )
    work = await open_work()
    assert fix["id"] not in work and audit["id"] not in work
    # an unverified fix and the audit it resolves still need doing
    assert unverified["id"] in work and other["id"] in work and failed["id"] not in work
    shown = await harness.ok("record_show", id=fix["id"])
    assert shown["record"]["action_state"] == "actionable"  # edges do not rewrite fields
    tools = {t.name: t.description or "" for t in (await harness.client.list_tools()).tools}
    assert "Open work" in tools["record_update"] and "verified fix" in tools["record_add"]


async def test_search_text_shows_the_order_and_why_not_scores(settings: KiokuSettings) -> None:
    """Before: `[1] ... score=1.8019`, `[2] ... score=1.8945`: the printed fused score
    contradicted the order that the priority rule set. Now the text shows the order and
    the rule; the structured result keeps the scores, in the answer's order."""
    first = settings.model_copy(
        update={"search": settings.search.model_copy(update={"priority_rule": "first"})}
    )
    apps: list[AppContext] = []
    async with connected(create_server(first, on_app=apps.append)) as client:
        harness = Harness(client, apps)
        plain = await harness.ok(
            "add_note",
            text="The staging database is refreshed nightly at 02:00 from production backups.",
            type="knowledge",
        )
        high = await harness.ok(
            "add_note",
            text="Check the staging refresh log before touching staging data.",
            type="lesson",
            priority="high",
        )
        await harness.settle()
        found = await harness.call(
            "search_memory", query="at what time is the staging database refreshed from backups"
        )
        results = found.structured_content["results"]
        assert [r["id"] for r in results][:2] == [high["id"], plain["id"]]
        assert results[0]["score"] < results[1]["score"]  # the rule, not the score, put it first
        text = found.content[0].text
        assert "score=" not in text and "distance=" not in text
        head = next(line for line in text.splitlines() if line.startswith("[1] "))
        assert head.startswith(f"[1] {high['id']}") and "high priority first" in head
        second = next(line for line in text.splitlines() if line.startswith("[2] "))
        assert "first" not in second and "newer" not in second


def test_search_text_names_the_newer_of_two_alike_notes() -> None:
    """The other rule that puts a lower score first (``reorder.newer_first``): the text
    names the older note it was moved above; a plain relevance order names nothing."""
    from mcp_gateway.common.render import render_search
    from mcp_gateway.common.types import SearchResponse, SearchResult

    def hit(i: str, score: float, day: str, type: str = "knowledge") -> SearchResult:
        return SearchResult(id=i, type=type, created_at=f"2026-12-{day}", score=score, text=i)

    moved = SearchResponse(
        query="q", results=[hit("NEW", 0.9, "03"), hit("OLD", 1.0, "01"), hit("X", 0.5, "02")]
    )
    lines = render_search(moved).splitlines()
    assert next(x for x in lines if x.startswith("[1] NEW")).endswith("· newer than [2]")
    plain = SearchResponse(query="q", results=[hit("A", 1.0, "01"), hit("B", 0.9, "03")])
    heads = [x for x in render_search(plain).splitlines() if x.startswith("[")]
    assert heads == ["[1] A · knowledge · 2026-12-01", "[2] B · knowledge · 2026-12-03"]
