"""A new user's first session, through the door they use: the README's client snippet
launched as an editor launches it (a real MCP client over stdio, ``kioku serve``, the
shared daemon it starts), then the papercuts of issue 33 that an assistant meets over
that connection: an exact record repeat, two wordings of one lesson, a verified fix in
the open work, and scores that contradicted the order. The same checks in-process are
in test_daily_driver.py, test_tools_records.py and test_neardup.py."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from tests.realproc import KIOKU, daemon_pid, held_clients, kioku_env, text_of, wait_until

README = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
PLACEHOLDER = "/ABSOLUTE/PATH/TO/kioku/.venv/bin/kioku"
NODE_OLD = "Pin the Node version to 20 in .nvmrc; CI breaks on 22."
NODE_NEW = "Keep Node pinned at 20 in .nvmrc because CI fails with Node 22."
STAGING_HIGH = "Check the staging refresh log before touching staging data."
STAGING_PLAIN = "The staging database is refreshed nightly at 02:00 from backups."


def readme_snippet(data_dir: Path) -> StdioServerParameters:
    """The Claude Desktop / Cursor snippet as written in the README, with the venv's
    kioku in place of the placeholder. The MCP client passes what an editor passes: its
    own small default environment (no LANG) and the snippet's ``env``; the data dir and
    the daemon's idle exit are the test's, so no user data is touched."""
    snippets = [json.loads(b) for b in re.findall(r"```json\n(.*?)```", README, re.S)]
    server = next(s for s in snippets if "mcpServers" in s)["mcpServers"]["kioku"]
    assert server["command"] == PLACEHOLDER
    assert server["env"] == {"PYTHONIOENCODING": "utf-8"}  # issue 33 item 10
    ours = kioku_env(data_dir)
    env = {
        **server["env"],
        "KIOKU_DATA_DIR": ours["KIOKU_DATA_DIR"],
        "KIOKU_LOCAL_GATEWAY__IDLE_EXIT_S": ours["KIOKU_LOCAL_GATEWAY__IDLE_EXIT_S"],
        "KIOKU_LOG_LEVEL": "WARNING",
    }
    return StdioServerParameters(command=KIOKU, args=server["args"], env=env)


async def call(client: Client, tool: str, **args: Any) -> Any:
    result = await client.call_tool(tool, args)
    assert not result.is_error, (tool, text_of(result))
    return result


async def context(client: Client) -> str:
    res = await client.read_resource("kioku://session_context")
    return str(res.contents[0].text)  # type: ignore[union-attr]


async def folded_search(client: Client, query: str, newer: str, within: float = 120) -> Any:
    """Search until the newer wording's stored vector is there (the fold uses stored
    vectors; the embedding job runs right after the add)."""
    deadline = asyncio.get_running_loop().time() + within
    while True:
        found = await call(client, "search_memory", query=query, top=5)
        hits = found.structured_content["results"]
        if any(h["id"] == newer and h["also"] for h in hits):
            return found
        assert asyncio.get_running_loop().time() < deadline, text_of(found)
        await asyncio.sleep(0.5)


# slow: its own daemon (model load) and the embedding of a few notes
@pytest.mark.slow
async def test_new_user_session_from_the_readme_snippet(tmp_path: Path) -> None:
    data = tmp_path / "data"
    try:
        async with held_clients([readme_snippet(data)]) as (client,):
            info = client.server_info
            assert info is not None and info.name == "kioku"
            # Japanese and Thai travel both ways over the stdio pipe
            ja = await call(client, "add_note", text="デプロイ前にステージングで確認する。")
            th = await call(client, "add_note", text="ทดสอบบนสเตจจิงก่อนดีพลอยทุกครั้ง")
            for added, words in ((ja, "ステージング"), (th, "สเตจจิง")):
                got = await call(client, "get_note", id=added.structured_content["id"])
                assert words in got.structured_content["text"]

            # item 2: an exact record repeat answers the existing id, and says so
            audit_args = {"type": "audit", "title": "Upload retries forever"}
            audit = await call(
                client, "record_add", content="Never gives up on a 500.", **audit_args
            )
            audit_id = audit.structured_content["record"]["id"]
            again = await call(
                client, "record_add", content="Never gives up on a 500.", **audit_args
            )
            assert again.structured_content["record"]["id"] == audit_id
            assert again.structured_content["status"] == "already_stored"
            assert text_of(again).startswith(f"Already stored as {audit_id}")

            # item 4: a verified fix and the audit it resolves leave the open work;
            # an unverified fix and its audit stay
            fix = await call(
                client,
                "record_add",
                type="fix",
                title="Cap upload retries at 5",
                link=f"resolves:{audit_id}",
            )
            fix_id = fix.structured_content["record"]["id"]
            other = await call(client, "record_add", type="audit", title="Logs fill the disk")
            other_id = other.structured_content["record"]["id"]
            pending = await call(
                client,
                "record_add",
                type="fix",
                title="Rotate logs daily",
                link=f"resolves:{other_id}",
            )
            pending_id = pending.structured_content["record"]["id"]
            open_work = (await context(client)).split("## Open work", 1)[1]
            assert fix_id in open_work and audit_id in open_work
            await call(
                client,
                "record_add",
                type="verification",
                title="Capped at 5 on staging",
                link=f"verifies:{fix_id}",
            )
            text = await context(client)
            open_work = text.split("## Open work", 1)[1]
            assert fix_id not in open_work and audit_id not in open_work, open_work
            assert pending_id in open_work and other_id in open_work

            # item 3: two wordings of one lesson are one entry, the newest wording shown,
            # the older id listed and still readable
            older = await call(client, "add_note", type="lesson", text=NODE_OLD)
            newer = await call(client, "add_note", type="lesson", text=NODE_NEW)
            older_id, newer_id = older.structured_content["id"], newer.structured_content["id"]
            lessons = (await context(client)).split("## Recent lessons", 1)[1].split("\n## ")[0]
            entry = next(x for x in lessons.splitlines() if x.startswith(f"- `{newer_id}`"))
            assert f"also `{older_id}`" in entry and "CI breaks on 22" not in lessons
            found = await folded_search(client, "which Node does CI need?", newer_id)
            ids = [h["id"] for h in found.structured_content["results"]]
            assert older_id not in ids
            assert f"(also {older_id}: older notes saying the same" in text_of(found)
            kept = await call(client, "get_note", id=older_id)
            assert "CI breaks on 22" in kept.structured_content["text"]

            # item 7: the text shows the order, never a score that contradicts it; where
            # a rule put a lower score first, the line says which rule. A record's id and
            # a title without content are printed once (they were twice).
            await call(client, "add_note", type="lesson", priority="high", text=STAGING_HIGH)
            await call(client, "add_note", type="knowledge", text=STAGING_PLAIN)
            queries = ("when is the staging database refreshed", "staging", "cap upload retries")
            for query in queries:
                found = await call(client, "search_memory", query=query)
                shown = text_of(found)
                assert "score=" not in shown and "distance=" not in shown, shown
                hits = found.structured_content["results"]
                heads = [x for x in shown.splitlines() if re.match(r"\[\d+\] ", x)]
                assert [h.split()[1] for h in heads] == [h["id"] for h in hits], shown
                records = [h for h in hits if h["kind"] == "record"]
                for h in records:  # its id once, and a title without content once
                    assert (
                        shown.count(h["id"]) == 1 and f"{shown}\n".count(f"> {h['title']}\n") == 1
                    )
                assert query != queries[-1] or fix_id in [h["id"] for h in records], shown
                for i in range(1, len(hits)):
                    if hits[i]["score"] > hits[i - 1]["score"]:
                        reason = heads[i - 1]
                        rules = ("high priority first", "newer than", "nearer in meaning than")
                        assert any(r in reason for r in rules), shown
    finally:
        await asyncio.to_thread(
            subprocess.run, [KIOKU, "stop"], env=kioku_env(data), capture_output=True, timeout=60
        )
        assert await asyncio.to_thread(wait_until, lambda: daemon_pid(data) is None, 30)
