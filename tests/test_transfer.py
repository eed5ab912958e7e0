"""``kioku export`` / ``kioku import`` through real CLI processes: a round trip into a
fresh data dir, idempotent re-import, and the formats users come from."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.test_owner import cli, ok


# ~30 s of CLI processes (a dozen exports and imports), the longest of the fast set: it
# runs with the slow set (CI runs both) to keep `make test` within its 6 minutes.
@pytest.mark.slow
def test_export_then_import_round_trip_is_idempotent(tmp_path: Path) -> None:
    src, dst = tmp_path / "src", tmp_path / "dst"
    lesson = ok(src, "add", "Never force-push to main", "--type", "lesson", "--priority", "high")
    note = ok(src, "add", "本番環境へのデプロイ前にステージングで確認する").strip()
    ok(src, "edit", note, "--domain", "deploy")
    ok(src, "delete", lesson.strip())
    ok(src, "records", "add", "audit", "Index loses writes on crash")
    ok(src, "records", "add", "fix", "fsync before rename", "--link", "resolves:AUDIT-MEM-001")
    backup = tmp_path / "backup.jsonl"
    ok(src, "export", "-o", str(backup))
    lines = [json.loads(x) for x in backup.read_text("utf-8").splitlines()]
    assert lines[0]["kind"] == "kioku-export" and (lines[0]["notes"], lines[0]["records"]) == (2, 2)
    edited = next(x for x in lines if x.get("id") == note)
    assert [h["field"] for h in edited["history"]] == ["domain"]
    fix = next(x for x in lines if x.get("id") == "FIX-MEM-001")
    assert fix["links"][0]["relation"] == "resolves"

    assert "imported 2 notes" in ok(dst, "import", str(backup))
    assert "imported 0 notes" in ok(dst, "import", str(backup))  # idempotent
    copied = [json.loads(x) for x in ok(dst, "export").splitlines()]
    # the same history, links written once
    assert next(x for x in copied if x.get("id") == "FIX-MEM-001")["history"] == fix["history"]
    assert "ステージング" in ok(dst, "search", "デプロイ前 ステージング")
    assert "resolved by: FIX-MEM-001" in ok(dst, "records", "show", "AUDIT-MEM-001")
    assert lesson.strip() not in ok(dst, "list")  # deleted stays deleted (restorable)
    ok(dst, "restore", lesson.strip())
    # new ids continue after the imported ones
    assert "AUDIT-MEM-002" in ok(dst, "records", "add", "audit", "Another finding")
    assert "# kioku export" in ok(dst, "export", "--format", "markdown")


# slow: ~12 s on a 2-core AVX2 machine (round 10)
@pytest.mark.slow
def test_import_server_memory_graph_and_markdown_folder(tmp_path: Path) -> None:
    data = tmp_path / "data"
    graph = tmp_path / "memory.json"
    graph.write_text(
        "\n".join(
            json.dumps(x)
            for x in [
                {
                    "type": "entity",
                    "name": "billing-api",
                    "entityType": "service",
                    "observations": ["paginates with cursors", "owned by team payments"],
                },
                {
                    "type": "relation",
                    "from": "billing-api",
                    "to": "postgres",
                    "relationType": "uses",
                },
            ]
        ),
        "utf-8",
    )
    assert "imported 1 note " in ok(data, "import", str(graph))
    assert "imported 0 notes" in ok(data, "import", str(graph))
    found = ok(data, "search", "billing api pagination")
    assert "paginates with cursors" in found and "uses postgres" in found

    notes = tmp_path / "notes"
    (notes / "git").mkdir(parents=True)
    (notes / "git" / "rebase.md").write_text("# Rebase\nNever rebase a shared branch.", "utf-8")
    (notes / "thai.md").write_text("ห้ามส่งคำขอ PATCH พร้อมกันหลายครั้ง", "utf-8")
    assert "imported 2 notes" in ok(data, "import", str(notes))
    (notes / "git" / "rebase.md").write_text("# Rebase\nNever rebase main.", "utf-8")
    assert "(1 updated)" in ok(data, "import", str(notes))  # the file changed: updated
    assert "Never rebase main" in ok(data, "search", "rebase")

    bad = cli(data, "import", str(tmp_path / "nope.txt"))
    assert bad.returncode == 1 and "cannot read" in bad.stderr and "Traceback" not in bad.stderr


# slow: 5 CLI processes, ~20 s on 2 busy cores
@pytest.mark.slow
def test_import_replacing_a_text_refreshes_its_dedup_key(tmp_path: Path) -> None:
    """Issue 32: an import that replaces a note's text goes through the note store, so
    adding the new text answers "already stored" instead of storing a second copy."""
    data, graph = tmp_path / "data", tmp_path / "memory.json"

    def entity(observation: str) -> None:
        line = {"type": "entity", "name": "billing-api", "entityType": "service"}
        graph.write_text(json.dumps({**line, "observations": [observation]}), "utf-8")

    entity("paginates with cursors")
    assert "imported 1 note " in ok(data, "import", str(graph))
    ok(data, "add", "Deploys to staging need the VPN")  # every stored text has its key now
    entity("paginates with offsets")
    assert "(1 updated)" in ok(data, "import", str(graph))
    new_text = "billing-api (service)\n- paginates with offsets"
    again = cli(data, "add", new_text, "--type", "knowledge")
    assert again.returncode == 0, again.stderr
    assert "already stored as" in again.stderr, again.stderr
    assert ok(data, "list", "--type", "knowledge").count("billing-api") == 1
