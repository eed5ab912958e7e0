"""The same clean refusal for the same bad input on SQLite and PostgreSQL (issue 47):
a NUL in an id or any field, through a real MCP client over HTTP."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from tests.pg_server import ScratchDatabase
from tests.realproc import authed, http_proc

NUL = "\x00"


def _calls(note: str, record: str) -> list[tuple[str, dict[str, Any]]]:
    return [
        ("get_note", {"id": note + NUL}),
        ("get_note", {"id": NUL}),
        ("update_note", {"id": note + NUL, "text": "changed"}),
        ("delete_note", {"id": f"{note}{NUL}x"}),
        ("add_note", {"text": f"kept{NUL}text", "domain": f"build{NUL}x"}),
        ("add_note", {"text": f"a{NUL}b", "solved_query": f"q{NUL}q"}),
        ("search_memory", {"query": f"cache{NUL}dir", "domain": f"a{NUL}"}),
        ("search_memory", {"query": f"cache{NUL}dir", "type": f"note{NUL}"}),
        ("record_add", {"type": "audit", "title": f"t{NUL}t", "project": f"MEM{NUL}"}),
        ("record_add", {"type": "audit", "title": "t", "links": [f"references:{record}{NUL}"]}),
        ("record_add", {"type": f"audit{NUL}", "title": "t"}),
        ("record_show", {"id": record + NUL}),
        ("record_search", {"query": f"cache{NUL}", "type": f"audit{NUL}"}),
        ("record_update", {"id": record + NUL, "title": "x"}),
        ("record_update", {"id": record, "status": f"done{NUL}"}),
        ("record_link", {"source": record, "relation": f"references{NUL}", "target": record}),
        ("record_link", {"source": record + NUL, "relation": "references", "target": record}),
    ]


async def _outcomes(data: Path, **env: str) -> list[tuple[bool, str]]:
    out = []
    with http_proc(data, port=None, **env) as gw:
        token = (data / "http.token").read_text().strip()
        async with Client(authed(gw.url, token)) as client:
            added = await client.call_tool("add_note", {"text": "The cache lives in /var/x."})
            rec = await client.call_tool("record_add", {"type": "audit", "title": "cache audit"})
            note = str((added.structured_content or {})["id"])
            record = str((rec.structured_content or {})["record"]["id"])
            for tool, args in _calls(note, record):
                res = await client.call_tool(tool, args)
                text = " ".join(getattr(c, "text", "") for c in res.content)
                text = text.replace(note, "NOTE").replace(record, "RECORD")
                text = re.sub(r"\b[0-9A-HJKMNP-TV-Z]{26}\b", "ID", text)  # new ids
                out.append((bool(res.is_error), text if res.is_error else "ok"))
        log = gw.stderr()
    assert "Traceback" not in log, log[-3000:]
    return out


# slow: two gateways, one on PostgreSQL: ~30 s
@pytest.mark.slow
async def test_a_nul_gets_the_same_answer_on_sqlite_and_postgresql(
    tmp_path: Path, pg_database: ScratchDatabase
) -> None:
    """Before: PostgreSQL answered "internal error (DataError)" with a traceback in the
    log where SQLite refused cleanly."""
    lite = await _outcomes(tmp_path / "lite")
    pg = await _outcomes(tmp_path / "pg", KIOKU_DATABASE_URL=pg_database.new_schema())
    for (call, _), a, b in zip(_calls("N", "R"), lite, pg, strict=True):
        assert "internal error" not in a[1] + b[1], (call, a, b)
        assert a == b, (call, a, b)
