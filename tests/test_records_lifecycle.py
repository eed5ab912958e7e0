"""Lifecycle graph: heads, supersedes/duplicates cycles, refusals, resolution, graph tree."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from mcp_gateway.common.errors import Conflict, InvalidInput, NotFound
from mcp_gateway.common.inputs import RecordFields
from mcp_gateway.records import RecordStore, lifecycle
from mcp_gateway.records.render import render_graph
from mcp_gateway.stores.db import Database


@pytest.fixture
async def store(database_location: Path | str) -> AsyncIterator[RecordStore]:
    db = Database(database_location)
    await db.open()
    yield RecordStore(db, "MEM")
    await db.close()


def successors(graph: dict[str, list[str]]) -> lifecycle.Successors:
    return lambda rid: graph.get(rid, [])


# -- pure functions -----------------------------------------------------------------------
def test_replaced_by_edge_directions() -> None:
    assert lifecycle.replaced_by_edge("B", "supersedes", "A") == ("A", "B")
    assert lifecycle.replaced_by_edge("A", "duplicates", "C") == ("A", "C")
    assert lifecycle.replaced_by_edge("F", "resolves", "A") is None


def test_head_path_and_cycles_pure() -> None:
    step = successors({"A": ["B"], "B": ["C", "X"]})
    assert lifecycle.head_path("A", step) == ["A", "B", "C"]
    assert lifecycle.head_path("C", step) == ["C"]
    assert lifecycle.creates_cycle("A", "supersedes", "C", step)  # C -> A closes A->B->C->A
    assert lifecycle.creates_cycle("C", "duplicates", "A", step)
    assert not lifecycle.creates_cycle("A", "duplicates", "C", step)
    assert not lifecycle.creates_cycle("C", "references", "A", step)


def test_head_path_survives_a_corrupt_cycle() -> None:
    assert lifecycle.head_path("A", successors({"A": ["B"], "B": ["A"]})) == ["A", "B"]


# -- store --------------------------------------------------------------------------------
async def test_supersedes_chain_heads(store: RecordStore) -> None:
    a = await store.add(RecordFields(type="decision", title="A"))
    b = await store.add(RecordFields(type="decision", title="B", links=(f"supersedes:{a.id}",)))
    c = await store.add(RecordFields(type="decision", title="C", links=(f"supersedes:{b.id}",)))
    va = await store.show(a.id)
    assert not va.lifecycle.current and va.lifecycle.head == c.id
    assert va.lifecycle.head_path == [a.id, b.id, c.id]
    assert va.lifecycle.superseded_by == [b.id]
    vc = await store.show(c.id)
    assert vc.lifecycle.current and vc.lifecycle.supersedes == [b.id]


async def test_newest_superseder_wins(store: RecordStore) -> None:
    a = await store.add(RecordFields(type="decision", title="A"))
    await store.add(RecordFields(type="decision", title="B1", links=(f"supersedes:{a.id}",)))
    b2 = await store.add(RecordFields(type="decision", title="B2", links=(f"supersedes:{a.id}",)))
    assert (await store.show(a.id)).lifecycle.head == b2.id


async def test_duplicates_and_mixed_chain(store: RecordStore) -> None:
    canon = await store.add(RecordFields(type="knowledge", title="canonical"))
    dup = await store.add(
        RecordFields(type="knowledge", title="dup", links=(f"duplicates:{canon.id}",))
    )
    newer = await store.add(
        RecordFields(type="knowledge", title="newer", links=(f"supersedes:{canon.id}",))
    )
    vd = await store.show(dup.id)
    assert vd.lifecycle.duplicates == [canon.id]
    assert vd.lifecycle.head_path == [dup.id, canon.id, newer.id]
    assert (await store.show(canon.id)).lifecycle.duplicated_by == [dup.id]


async def test_cycles_refused(store: RecordStore) -> None:
    a = await store.add(RecordFields(type="decision", title="A"))
    b = await store.add(RecordFields(type="decision", title="B", links=(f"supersedes:{a.id}",)))
    with pytest.raises(Conflict, match="cycle"):
        await store.link(a.id, "supersedes", b.id)
    with pytest.raises(Conflict, match="cycle"):  # mixed: B duplicates A while replacing A
        await store.link(b.id, "duplicates", a.id)
    k1 = await store.add(RecordFields(type="knowledge", title="k1"))
    k2 = await store.add(RecordFields(type="knowledge", title="k2", links=(f"duplicates:{k1.id}",)))
    with pytest.raises(Conflict, match="cycle"):
        await store.link(k1.id, "duplicates", k2.id)
    # other relations may go both ways
    await store.link(a.id, "references", b.id)
    await store.link(b.id, "references", a.id)


async def test_cycle_through_links_of_a_new_record_writes_nothing(store: RecordStore) -> None:
    a = await store.add(RecordFields(type="decision", title="A"))
    b = await store.add(RecordFields(type="decision", title="B", links=(f"duplicates:{a.id}",)))
    with pytest.raises(Conflict, match="cycle"):
        # A -> X (superseded), X -> B (duplicate), B -> A: a loop of replacements.
        await store.add(
            RecordFields(
                type="decision", title="X", links=(f"supersedes:{a.id}", f"duplicates:{b.id}")
            )
        )
    assert await store.list_current(types=["decision"]) == [await store.get(a.id)]


async def test_self_duplicate_unknown_refused(store: RecordStore) -> None:
    a = await store.add(RecordFields(type="audit", title="A"))
    b = await store.add(RecordFields(type="fix", title="B", links=(f"resolves:{a.id}",)))
    with pytest.raises(Conflict, match="itself"):
        await store.link(a.id, "references", a.id)
    with pytest.raises(Conflict, match="already exists"):
        await store.link(b.id, "resolves", a.id)
    with pytest.raises(Conflict, match="already exists"):
        await store.add(
            RecordFields(type="fix", title="C", links=(f"resolves:{a.id}", f"resolves:{a.id}"))
        )
    with pytest.raises(NotFound):
        await store.link(b.id, "verifies", "VERIFICATION-MEM-777")
    with pytest.raises(NotFound):
        await store.link("FIX-MEM-777", "resolves", a.id)
    with pytest.raises(InvalidInput, match="valid values"):
        await store.link(b.id, "fixes", a.id)
    assert len((await store.show(a.id)).edges) == 1


async def test_resolution_does_not_rewrite_the_audit(store: RecordStore) -> None:
    audit = await store.add(RecordFields(type="audit", title="leak"))
    fix = await store.add(
        RecordFields(type="fix", title="close handle", links=(f"resolves:{audit.id}",))
    )
    ver = await store.add(
        RecordFields(type="verification", title="soak test", links=(f"verifies:{fix.id}",))
    )
    view = await store.show(audit.id)
    assert view.record.status == "open" and view.record.action_state == "actionable"
    assert view.lifecycle.resolved_by == [fix.id]
    assert view.lifecycle.fix_verifications == {fix.id: [ver.id]}
    assert (await store.show(fix.id)).lifecycle.verified_by == [ver.id]
    assert [h.field for h in (await store.show(fix.id)).history] == ["created", "link"]


async def test_contradicts_both_directions(store: RecordStore) -> None:
    a = await store.add(RecordFields(type="knowledge", title="A"))
    b = await store.add(RecordFields(type="knowledge", title="B"))
    await store.link(a.id, "contradicts", b.id)
    assert (await store.show(a.id)).lifecycle.contradicts == [b.id]
    vb = await store.show(b.id)
    assert vb.lifecycle.contradicted_by == [a.id] and vb.lifecycle.current


async def test_graph_tree(store: RecordStore) -> None:
    audit = await store.add(RecordFields(type="audit", title="leak"))
    fix = await store.add(
        RecordFields(type="fix", title="close handle", links=(f"resolves:{audit.id}",))
    )
    ver = await store.add(
        RecordFields(type="verification", title="soak test", links=(f"verifies:{fix.id}",))
    )
    other = await store.add(
        RecordFields(type="knowledge", title="handles", links=(f"references:{audit.id}",))
    )
    text = render_graph(await store.graph(audit.id))
    lines = text.splitlines()
    assert lines[0].startswith(audit.id)
    assert f"├── resolved by {fix.id}" in text
    assert f"│   └── verified by {ver.id}" in text
    assert f"└── referenced by {other.id}" in text
    small = await store.graph(audit.id, max_nodes=2)
    assert small.truncated and "truncated" in render_graph(small)


async def test_cli_commands(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import argparse

    from mcp_gateway.cli.local_memory import LocalMemory
    from mcp_gateway.cli.records import add_records_parser
    from mcp_gateway.common.settings import KiokuSettings
    from mcp_gateway.services import Services
    from mcp_gateway.services.app import open_app

    parser = argparse.ArgumentParser(prog="kioku")
    add_records_parser(parser.add_subparsers(dest="command"))
    settings = KiokuSettings(data_dir=tmp_path / "data", redis_url=None, qdrant_url=None)
    async with open_app(settings, run_jobs=False) as app:
        await _cli_session(parser, LocalMemory(Services.over(app)), capsys)


async def _cli_session(parser, memory, capsys) -> None:
    from mcp_gateway.cli.records import run_records_command

    async def run(*argv: str) -> tuple[int, str, str]:
        code = await run_records_command(parser.parse_args(["records", *argv]), memory)
        out = capsys.readouterr()
        return code, out.out, out.err

    assert (await run("add", "audit", "leaky pool"))[1].startswith("created AUDIT-MEM-001")
    code, out, _ = await run("add", "fix", "close conns", "--link", "resolves:AUDIT-MEM-001")
    assert code == 0 and "resolves AUDIT-MEM-001" in out
    assert (
        "linked FIX-MEM-001 references"
        in (await run("link", "FIX-MEM-001", "references", "AUDIT-MEM-001"))[1]
    )
    assert (
        "status: open -> resolved"
        in (await run("update", "AUDIT-MEM-001", "--status", "resolved"))[1]
    )
    assert "AUDIT-MEM-001" in (await run("search", "leaky", "--current-only"))[1]
    assert "resolved by FIX-MEM-001" in (await run("graph", "AUDIT-MEM-001"))[1]
    code, out, _ = await run("--json", "show", "AUDIT-MEM-001")
    assert code == 0 and '"resolved_by": [' in out
    # errors go up to `kioku`'s main, which prints them with the CLI's hint (test_cli.py)
    from mcp_gateway.common.errors import NotFound

    with pytest.raises(NotFound, match=r"^no record 'AUDIT-MEM-404'$"):
        await run("show", "AUDIT-MEM-404")
