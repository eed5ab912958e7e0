"""The record project comes from the client's workspace roots, not from the model."""

from __future__ import annotations

from typing import Any

from mcp import types
from pydantic import FileUrl

from mcp_gateway.common.settings import KiokuSettings
from mcp_gateway.protocol.server import create_server
from mcp_gateway.protocol.workspace_tools import project_code

from .conftest import connected


def test_project_code_from_folder_names() -> None:
    assert project_code("billing-api") == "BILLING_API"
    assert project_code("my.repo v2") == "MY_REPO_V2"
    assert project_code("プロジェクト") == ""


async def test_record_ids_use_the_workspace_root(settings: KiokuSettings) -> None:
    async def roots(_ctx: Any) -> types.ListRootsResult:
        return types.ListRootsResult(
            roots=[types.Root(uri=FileUrl("file:///home/dev/src/billing-api"), name="billing")]
        )

    async with connected(
        create_server(settings), list_roots_callback=roots, mode="legacy"
    ) as client:
        res = await client.call_tool("record_add", {"type": "audit", "title": "Leaky retry loop"})
        assert not res.is_error, res.content
        assert res.structured_content["record"]["id"] == "AUDIT-BILLING_API-001"


async def test_without_roots_the_settings_project_applies(settings: KiokuSettings) -> None:
    async with connected(create_server(settings)) as client:
        res = await client.call_tool("record_add", {"type": "fix", "title": "Bound the loop"})
        assert res.structured_content["record"]["id"] == "FIX-MEM-001"
