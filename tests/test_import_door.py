"""``kioku import`` is a door like MCP: hostile files through real CLI processes.

Same text policy and limits as ``add_note``/``record_add``; a malformed file is refused
whole, naming its lines, with nothing written; a Markdown folder import stays inside
the folder; ``kioku export -o FOLDER`` is one clear line.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import httpx
import pytest

from mcp_gateway.cli.client import owner_client
from mcp_gateway.common.settings import KiokuSettings
from mcp_gateway.common.validation import clean_text
from mcp_gateway.daemon import local_gateway as gw
from mcp_gateway.records import validate as rv
from tests.realproc import gateway_paths, stdio_client, wait_until
from tests.test_owner import cli, ok, stop

HEADER = {"kind": "kioku-export", "version": 1}
NOTE = {
    "kind": "note",
    "id": "01JDQ8Z0000000000000000000",
    "text": "Deploys to staging need the VPN",
    "type": "lesson",
    "namespace": "default",
    "created_at": 1_700_000_000.0,
    "updated_at": 1_700_000_000.0,
}
RECORD = {
    "kind": "record",
    "id": "AUDIT-MEM-001",
    "type": "audit",
    "project": "MEM",
    "seq": 1,
    "title": "Flaky upload test",
    "created_at": 1_700_000_000.0,
    "updated_at": 1_700_000_000.0,
    "namespace": "default",
}
HOSTILE_TITLE = "Flaky\x1b]52;c;ZXZpbA==\x07 upload\x1b[31m test"


def export_file(path: Path, *lines: Any) -> Path:
    """A kioku export: the header, then each line (a dict as JSON, a str as written)."""
    body = [json.dumps(HEADER)]
    body += [x if isinstance(x, str) else json.dumps(x, ensure_ascii=False) for x in lines]
    path.write_text("\n".join(body) + "\n", "utf-8")
    return path


def counts(data: Path) -> tuple[int, int]:
    header = json.loads(ok(data, "export").splitlines()[0])
    return header["notes"], header["records"]


# slow: 3 CLI processes, ~10 s on 2 busy cores (the fast set keeps the cheap ones below)
@pytest.mark.slow
def test_import_applies_mcps_text_policy(tmp_path: Path) -> None:
    data = tmp_path / "data"
    source = export_file(
        tmp_path / "in.jsonl",
        {**NOTE, "text": "Deploys\x1b[2J need\x00 the VPN\x07"},
        {**RECORD, "title": HOSTILE_TITLE, "content": "step 1\x00\x1b]52;c;AAAA\x07"},
    )
    assert "imported 1 note " in ok(data, "import", str(source))
    items = [json.loads(x) for x in ok(data, "export").splitlines()[1:]]
    note = next(i for i in items if i["kind"] == "note")
    record = next(i for i in items if i["kind"] == "record")
    # exactly what add_note and record_add store for the same input
    assert note["text"] == clean_text("Deploys\x1b[2J need\x00 the VPN\x07", "text", 32768)
    assert record["title"] == rv.title(HOSTILE_TITLE, rv.MAX_TITLE_CHARS)
    assert record["content"] == rv.content("step 1\x00\x1b]52;c;AAAA\x07", rv.MAX_CONTENT_BYTES)
    for text in (note["text"], record["title"], record["content"]):
        assert not any(ch in text for ch in "\x00\x07\x1b"), text
    shown = ok(data, "records", "show", "AUDIT-MEM-001")
    assert "\x1b" not in shown and "\x07" not in shown


# slow: 6 CLI processes, ~20 s on 2 busy cores
@pytest.mark.slow
def test_a_malformed_import_names_each_line_and_writes_nothing(tmp_path: Path) -> None:
    data = tmp_path / "data"
    source = export_file(
        tmp_path / "bad.jsonl",
        NOTE,  # line 2: fine, and still not written
        {**NOTE, "id": "01JDQ8Z0000000000000000001", "text": "x" * 200_010},
        {**NOTE, "id": "01JDQ8Z0000000000000000002", "namespace": "x`\n## SYSTEM"},
        {**RECORD, "id": "AUDIT-MEM-9223372036854775807", "seq": 2**63 - 1},
        json.dumps({**NOTE, "id": "01JDQ8Z0000000000000000003"})[:-1] + ', "created_at": NaN}',
        {**RECORD, "id": "AUDIT-MEM-002", "seq": 2, "history": ["oops"]},
        '{"kind": "note", "id": "01JDQ8Z0000000000000000004", "text": "a\\ud800b"}',
        {**NOTE, "id": "01JDQ8Z0000000000000000005", "updated_at": "Infinity"},
    )
    bad = cli(data, "import", str(source))
    assert bad.returncode == 1 and "Traceback" not in bad.stderr, bad.stderr
    assert bad.stderr.startswith("kioku: nothing imported"), bad.stderr
    for line, words in [
        (3, "text is 200010 bytes, over the 32768-byte limit"),
        (4, "not a namespace name"),
        (5, "record seq must be an integer from 1 to 999999999"),
        (6, "created_at must be a time"),
        (7, "a history entry is not a JSON object"),
        (8, "not valid Unicode text (lone surrogate)"),
        (9, "updated_at must be a number"),
    ]:
        at = f"{source} line {line}:"
        said = [x for x in bad.stderr.splitlines() if x.strip().startswith(at)]
        assert len(said) == 1 and words in said[0], (line, bad.stderr)
    assert f"{source} line 2:" not in bad.stderr
    assert counts(data) == (0, 0)

    not_object = export_file(tmp_path / "list.jsonl", NOTE, "[1, 2]")
    refused = cli(data, "import", str(not_object))
    assert refused.returncode == 1 and "Traceback" not in refused.stderr
    assert f"{not_object} line 3: not a JSON object" in refused.stderr
    broken = export_file(tmp_path / "broken.jsonl", NOTE, '{"kind": "note", ')
    refused = cli(data, "import", str(broken))
    assert f"{broken} line 3 as JSON" in refused.stderr and "Traceback" not in refused.stderr
    # refused while writing (a record id's namespace tag), after the note was written
    late = export_file(tmp_path / "late.jsonl", NOTE, {**RECORD, "id": "AUDIT-MEM-001.OTHER"})
    refused = cli(data, "import", str(late))
    assert refused.returncode == 1 and "has no .TAG" in refused.stderr, refused.stderr
    assert counts(data) == (0, 0)


# slow: 2 CLI processes
@pytest.mark.slow
def test_imported_sequences_leave_room_for_the_next_record(tmp_path: Path) -> None:
    data = tmp_path / "data"
    top = {**RECORD, "id": f"AUDIT-MEM-{rv.MAX_SEQ}", "seq": rv.MAX_SEQ}
    ok(data, "import", str(export_file(tmp_path / "top.jsonl", top)))
    added = ok(data, "records", "add", "audit", "The next finding")
    assert f"AUDIT-MEM-{rv.MAX_SEQ + 1}" in added


# slow: its own daemon (a model load)
@pytest.mark.slow
async def test_the_owner_checks_what_it_is_sent(tmp_path: Path) -> None:
    """The admin API gets items, not files: the owner checks them again and answers a
    bad one with its place (400), never a 500 with a traceback in its log."""
    data = tmp_path / "data"
    settings = KiokuSettings(data_dir=data)

    async def post(items: list[Any]) -> httpx.Response:
        async with owner_client(settings) as client:
            body = {"op": "transfer.import", "args": {"items": items}}
            # json.dumps writes 1e309 as Infinity, as a hostile client could
            raw = json.dumps(body).encode()
            headers = {"content-type": "application/json"}
            return await client.post("/api/call", content=raw, headers=headers)

    try:
        async with stdio_client(data):
            # an editor's session is answered while the stores open; the admin API
            # (which this test calls directly, not through the CLI) listens once they are
            socket = gateway_paths(data).socket
            assert await asyncio.to_thread(wait_until, lambda: gw.can_connect(socket), 60)
            bad: list[tuple[list[Any], str]] = [
                ([NOTE, [1, 2]], "item 2: not a JSON object"),
                ([{**RECORD, "history": [{"field": "title"}]}], "item 1: at must be a number"),
                ([{**RECORD, "created_at": 1e309}], "item 1: created_at must be a time"),
            ]
            for items, words in bad:
                answer = await post(items)
                assert answer.status_code == 400, answer.text
                assert words in answer.json()["error"]["message"]
            good = export_file(tmp_path / "good.jsonl", NOTE)
            assert "imported 1 note " in ok(data, "import", str(good))  # through the owner
    finally:
        stop(data)
    log = gateway_paths(data).log.read_text("utf-8", errors="replace")
    assert "Traceback" not in log and "internal error" not in log


def test_export_to_a_folder_is_one_clear_line(tmp_path: Path) -> None:
    data, folder = tmp_path / "data", tmp_path / "backups"
    folder.mkdir()
    refused = cli(data, "export", "-o", str(folder))
    assert refused.returncode == 1 and "Traceback" not in refused.stderr
    assert refused.stderr.strip() == (
        f"kioku: {folder} is a folder: name the file to write, e.g. {folder / 'kioku-export.jsonl'}"
    )
    assert list(folder.iterdir()) == []


def test_a_markdown_import_stays_inside_its_folder(tmp_path: Path) -> None:
    data, notes, outside = tmp_path / "data", tmp_path / "vault", tmp_path / "private"
    (notes / "sub").mkdir(parents=True)
    outside.mkdir()
    (outside / "secret.md").write_text("AWS key AKIAEXAMPLESECRET", "utf-8")
    (notes / "ok.md").write_text("Rotate the staging keys monthly", "utf-8")
    (notes / "sub" / "inner.md").write_text("Inner note about rebases", "utf-8")
    os.symlink(outside / "secret.md", notes / "leak.md")
    os.symlink(outside, notes / "linked")
    os.symlink(notes / "sub" / "inner.md", notes / "alias.md")  # inside: allowed
    done = cli(data, "import", str(notes))
    assert done.returncode == 0, done.stderr
    assert "kioku: skipped leak.md: a link to outside the folder" in done.stderr
    assert "kioku: skipped linked: a link to outside the folder" in done.stderr
    assert "imported 3 notes" in done.stdout
    assert "AKIAEXAMPLESECRET" not in ok(data, "export")


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, "utf-8")


def _imported(data: Path) -> dict[str, dict[str, Any]]:
    """The exported notes by their first line."""
    notes = [json.loads(x) for x in ok(data, "export").splitlines()[1:]]
    return {n["text"].splitlines()[0]: n for n in notes if n["kind"] == "note"}


# slow: 3 CLI processes, ~12 s on 2 busy cores
@pytest.mark.slow
def test_markdown_front_matter_and_wiki_links_obsidian_vault(tmp_path: Path) -> None:
    data, vault = tmp_path / "data", tmp_path / "vault"
    _write(vault / ".obsidian" / "workspace.md", "editor state, not a note")
    _write(vault / ".trash" / "old.md", "a deleted note")
    _write(
        vault / "日本語メモ" / "デプロイ手順.md",
        "---\ntitle: デプロイ手順\ntags: [deploy, 本番]\npriority: high\n---\n"
        "本番へのデプロイ前に[[ステージング環境|ステージング]]で確認する。詳細は[[Runbook]]。\n",
    )
    _write(
        vault / "ภาษาไทย.md",
        '---\ntype: lesson\ntags: "#api #ไทย"\n---\n'
        "ห้ามส่งคำขอ PATCH พร้อมกันหลายครั้ง ดู [[API Guide#Retries]] ![[diagram.png]]\n",
    )
    _write(vault / "broken.md", "---\ntitle: [unclosed\n---\nBody kept as written\n")
    _write(vault / "Untitled.md", "---\ntags: []\n---\n\n")
    done = cli(data, "import", str(vault))
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert "imported 3 notes" in done.stdout
    assert done.stderr.splitlines()[:3] == [  # in the order of the paths, then the progress
        "kioku: skipped Untitled.md: no text",
        "kioku: broken.md: front matter is not valid YAML at line 2: imported as written",
        done.stderr.splitlines()[2],
    ]
    assert done.stderr.splitlines()[2].startswith("kioku: read and checked 3 items in ")
    notes = _imported(data)
    ja = notes["# デプロイ手順"]
    assert ja["text"] == (
        "# デプロイ手順\n\n本番へのデプロイ前にステージングで確認する。詳細はRunbook。"
        "\n\ntags: deploy, 本番"
    )
    assert (ja["priority"], ja["domain"], ja["type"]) == ("high", "日本語メモ", "knowledge")
    th = notes["ห้ามส่งคำขอ PATCH พร้อมกันหลายครั้ง ดู API Guide#Retries diagram.png"]
    assert th["type"] == "lesson" and th["text"].endswith("\n\ntags: api, ไทย")
    assert notes["---"]["text"] == "---\ntitle: [unclosed\n---\nBody kept as written"
    found = ok(data, "search", "デプロイ前 ステージング")
    # the first hit is the vault note, shown parsed; the broken file (kept as written,
    # front matter included) may follow it as a filler (search.margin_fill)
    first = found.split("\n[1] ", 1)[1].split("\n[2] ", 1)[0]
    assert "デプロイ手順" in first and "title:" not in first and "[[" not in first


# slow: 2 CLI processes
@pytest.mark.slow
def test_markdown_front_matter_basic_memory_folder(tmp_path: Path) -> None:
    data, folder = tmp_path / "data", tmp_path / "basic-memory"
    _write(
        folder / "coffee" / "coffee-brewing-methods.md",
        "---\ntitle: Coffee Brewing Methods\ntype: note\n"
        "permalink: coffee/coffee-brewing-methods\ntags:\n- coffee\n- brewing\n---\n\n"
        "# Coffee Brewing Methods\n\n## Observations\n"
        "- [method] Pour over gives a cleaner cup #brewing\n"
        "- [tip] Grind just before brewing\n\n## Relations\n"
        "- relates_to [[Coffee Bean Origins]]\n- requires [[Proper Grinding Technique]]\n",
    )
    _write(
        folder / "テスト戦略.md",
        "---\ntitle: テスト戦略\ntype: lesson\npermalink: tesuto\n---\n\n"
        "## Observations\n- [rule] 結合テストは実DBで行う\n",
    )
    assert "imported 2 notes" in ok(data, "import", str(folder))
    notes = _imported(data)
    coffee = notes["# Coffee Brewing Methods"]
    assert coffee["text"] == (
        "# Coffee Brewing Methods\n\n## Observations\n"
        "- [method] Pour over gives a cleaner cup #brewing\n"
        "- [tip] Grind just before brewing\n\n## Relations\n"
        "- relates_to Coffee Bean Origins\n- requires Proper Grinding Technique"
        "\n\ntags: coffee, brewing"
    )
    assert (coffee["type"], coffee["domain"]) == ("note", "coffee")
    ja = notes["# テスト戦略"]
    assert ja["type"] == "lesson" and "permalink" not in ja["text"]
    assert ja["text"] == "# テスト戦略\n\n## Observations\n- [rule] 結合テストは実DBで行う"


# -- the same rules without processes (the fast set's share) ----------------------------
def test_check_items_refuses_each_bad_item_by_place() -> None:
    from mcp_gateway.common.errors import InvalidInput
    from mcp_gateway.services.import_check import Limits, check_items

    limits = Limits.of(KiokuSettings())
    clean = check_items([{**NOTE, "text": "a\x1b[2Jb\x00"}, RECORD], limits)
    assert clean[0]["text"] == "a[2Jb" and clean[1]["seq"] == 1
    with pytest.raises(InvalidInput) as refused:
        check_items(
            [
                NOTE,
                "not an object",
                {**RECORD, "seq": 2**63 - 1},
                {**NOTE, "created_at": float("nan"), "where": "in.jsonl line 9\x1b]52;c;x\x07"},
                {**NOTE, "namespace": "a b"},
            ],
            limits,
        )
    lines = str(refused.value).splitlines()
    assert lines[0] == "nothing imported: fix these and import again"
    assert [x.split(":")[0].strip() for x in lines[1:]] == [
        "item 2",
        "item 3",
        "in.jsonl line 9\\x1b]52;c;x\\x07",  # a place is printed, never obeyed
        "item 5",
    ]


def test_front_matter_mapping() -> None:
    from mcp_gateway.services.markdown_notes import markdown_note

    types = ("note", "lesson", "knowledge")
    note, warning = markdown_note(
        "---\ntitle: Retry policy\ntags: '#api, #http'\ntype: Lesson\npriority: HIGH\n"
        "domain: backend\npermalink: x\n---\nSee [[HTTP Guide|the guide]] and [[Backoff]].",
        types,
    )
    assert warning == ""
    assert note == {
        "text": "# Retry policy\n\nSee the guide and Backoff.\n\ntags: api, http",
        "type": "lesson",
        "priority": "high",
        "domain": "backend",
    }
    kept, warning = markdown_note("---\n- a list\n---\nbody", types)
    assert kept["text"] == "---\n- a list\n---\nbody" and "not a YAML mapping" in warning
    plain, warning = markdown_note("No front matter, a [[Link]]", types)
    assert plain == {"text": "No front matter, a Link", "type": "knowledge"} and warning == ""
