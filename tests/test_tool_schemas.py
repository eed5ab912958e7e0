"""The tools' input schemas teach the closed sets and formats (issue 48): a client can
check a call before making it. Read from the tool list a real MCP client receives
(``kioku serve`` over stdio, through the proxy to the daemon), with note types
configured away from the defaults, since the enum follows ``notes.types``. A client
that ignores the schema still gets the server's clear tool error.

Before: ``type``, ``priority``, ``relation`` were plain strings and the link format
(``RELATION:TARGET_ID``) was only in prose.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from mcp_gateway.records.model import ACTION_STATES, RECORD_TYPES, RELATIONS, STATUSES
from tests.realproc import kill_daemon, stdio_client, text_of

TYPES = ["lesson", "gotcha", "runbook", "checkpoint"]  # notes.types, configured


def accepts(schema: dict[str, Any], value: Any) -> bool:
    try:
        jsonschema.validate(value, schema, format_checker=jsonschema.FormatChecker())
    except jsonschema.ValidationError:
        return False
    return True


def prop(tools: dict[str, dict[str, Any]], tool: str, name: str) -> dict[str, Any]:
    """One argument's schema; of an optional one (``X | None``), its string branch."""
    schema = tools[tool]["properties"][name]
    for branch in schema.get("anyOf", []):
        if branch.get("type") == "string":
            return dict(branch)
    return dict(schema)


# slow: its own daemon (model load) -- ~10 s on 2 cores
@pytest.mark.slow
async def test_the_schemas_a_client_receives_name_every_closed_set_and_format(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    env = {"KIOKU_NOTES__TYPES": json.dumps(TYPES), "KIOKU_SEARCH__MAX_TOP": "20"}
    try:
        async with stdio_client(data, **env) as client:
            listed = await client.list_tools()
            tools = {t.name: t.input_schema for t in listed.tools}

            # every whole tool schema is a valid JSON schema a client can run
            for name, schema in tools.items():
                jsonschema.Draft202012Validator.check_schema(schema)
                assert schema.get("type") == "object", name

            # closed sets: exactly the values the server takes
            assert prop(tools, "add_note", "type")["enum"] == TYPES  # the configuration's
            assert prop(tools, "update_note", "type")["enum"] == TYPES
            assert prop(tools, "add_note", "priority")["enum"] == ["", "high", "low"]
            assert prop(tools, "update_note", "priority")["enum"] == ["", "high", "low"]
            search_types = prop(tools, "search_memory", "type")["enum"]
            assert set(search_types) == {"", *TYPES, *RECORD_TYPES}
            top = prop(tools, "search_memory", "top")
            assert (top["minimum"], top["maximum"]) == (1, 20)  # search.max_top
            assert prop(tools, "record_add", "type")["enum"] == list(RECORD_TYPES)
            assert prop(tools, "record_search", "type")["enum"] == ["", *RECORD_TYPES]
            for tool in ("record_add", "record_update"):
                assert prop(tools, tool, "status")["enum"] == list(STATUSES)
                assert prop(tools, tool, "action_state")["enum"] == list(ACTION_STATES)
            assert prop(tools, "record_link", "relation")["enum"] == list(RELATIONS)

            # formats: record ids, note ids, links
            record_ids = [prop(tools, "record_show", "id"), prop(tools, "record_update", "id")]
            record_ids += [prop(tools, "record_link", end) for end in ("source", "target")]
            for schema in record_ids:
                for good in ("AUDIT-MEM-001", "fix-mem-012", "DECISION-KIOKU_2-1234.ALICE"):
                    assert accepts(schema, good), (schema, good)
                for bad in ("AUDIT-001", "audit", "AUDIT-MEM-1", "AUDIT-MEM-001 x", ""):
                    assert not accepts(schema, bad), (schema, bad)
            for tool in ("get_note", "update_note", "delete_note"):
                schema = prop(tools, tool, "id")
                assert accepts(schema, "01JDQ8Z0000000000000000000")
                assert not accepts(schema, "AUDIT-MEM-001")
            link = prop(tools, "record_add", "link")
            links = tools["record_add"]["properties"]["links"]
            for good in ("resolves:AUDIT-MEM-001", "supersedes:DECISION-MEM-002.ALICE"):
                assert accepts(link, good) and accepts(links, [good])
            assert accepts(link, "")  # no link
            for bad in ("AUDIT-MEM-001", "fixes:AUDIT-MEM-001", "resolves AUDIT-MEM-001"):
                assert not accepts(link, bad) and not accepts(links, [bad])
            assert not accepts(links, [""])
            project = prop(tools, "record_add", "project")
            assert accepts(project, "") and accepts(project, "KIOKU_2")
            assert not accepts(project, "my project") and not accepts(project, "X" * 17)
            assert prop(tools, "record_search", "limit")["maximum"] == 100

            # a client that ignores the schema gets the server's own words
            wrong = await client.call_tool("add_note", {"text": "x", "type": "lesson "})
            assert not wrong.is_error  # the server takes what the schema shows, spaced
            wrong = await client.call_tool("add_note", {"text": "y", "type": "note"})
            assert wrong.is_error
            assert "unknown type 'note': use one of 'lesson', 'gotcha'" in text_of(wrong)
            wrong = await client.call_tool(
                "record_add", {"type": "fix", "title": "t", "link": "fixes:AUDIT-MEM-001"}
            )
            assert wrong.is_error and "RELATION one of references, resolves" in text_of(wrong)
    finally:
        kill_daemon(data)
