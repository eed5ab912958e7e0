"""docs/scale.md's scale-out block works as pasted (issue 48): two gateways, a worker, one
PostgreSQL database and one Redis database, started by exactly the shell lines the doc
shows, run with bash from the checkout.

Only what must differ on a shared test machine is put in place, each a literal the doc
names below its block and that must be there (a doc edit that drops one fails here, not
silently): the database name, the Redis URL (this session's private server and a db of
its own), the two ports, the token and the directory. Then a real MCP client adds a note
on gateway A and finds it on gateway B, and the worker is still running.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import subprocess
import time
import uuid
from pathlib import Path

import pytest
from mcp import Client

from tests.cluster import wait_port
from tests.pg_server import ADMIN_URL, server_answers
from tests.realproc import authed, free_port, text_of
from tests.redis_server import RedisDb, redis_base_url, redis_db  # noqa: F401

REPO = Path(__file__).resolve().parents[1]
MARKER = "<!-- tests/test_scale_doc.py runs the block below -->"
TOKEN_LINE = "$(python3 -c 'import secrets; print(secrets.token_hex(32))')"


def doc_block() -> str:
    text = (REPO / "docs" / "scale.md").read_text("utf-8")
    found = re.search(re.escape(MARKER) + r"\n```sh\n(.*?)```", text, re.S)
    assert found, "docs/scale.md lost its runnable block"
    return found.group(1)


def substituted(block: str, swaps: dict[str, str]) -> str:
    for literal, ours in swaps.items():
        assert literal in block, f"the doc's block no longer has {literal!r}"
        block = block.replace(literal, ours)
    return block


async def add_on_a_find_on_b(ports: list[int], token: str) -> None:
    """A real MCP client over HTTP: a note added on gateway A, found on gateway B."""
    text = "Gateway A took this note: ゲートウェイ越しに見える บันทึกข้ามเกตเวย์"
    async with Client(authed(f"http://127.0.0.1:{ports[0]}/mcp", token)) as a:
        added = await a.call_tool("add_note", {"text": text, "type": "knowledge"})
        assert not added.is_error, text_of(added)
    async with Client(authed(f"http://127.0.0.1:{ports[1]}/mcp", token)) as b:
        found = await b.call_tool("search_memory", {"query": "ゲートウェイ越しに見える"})
        assert not found.is_error, text_of(found)
        hits = (found.structured_content or {})["results"]
        assert text in [hit["text"] for hit in hits], text_of(found)


def drop_database(name: str) -> None:
    import psycopg

    with psycopg.connect(ADMIN_URL, autocommit=True, connect_timeout=3) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


# slow: two gateways and a worker, each loading a model
@pytest.mark.slow
def test_the_scale_out_block_runs_as_pasted(
    tmp_path: Path,
    redis_db: RedisDb,  # noqa: F811 - the fixture imported above
) -> None:
    if not server_answers():
        pytest.skip("no PostgreSQL at 127.0.0.1:5432")
    database = f"kioku_doc_{uuid.uuid4().hex[:12]}"  # made by the block, dropped here
    ports = [free_port(), free_port()]
    token = uuid.uuid4().hex
    script = substituted(
        doc_block(),
        {
            "kioku_demo": database,
            "redis://127.0.0.1:6379/1": redis_db.url,
            "8766": str(ports[0]),
            "8767": str(ports[1]),
            TOKEN_LINE: token,
            "$HOME/kioku-demo": str(tmp_path / "kioku-demo"),
        },
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("KIOKU_")}
    env["KIOKU_LOG_LEVEL"] = "WARNING"
    out = (tmp_path / "block.log").open("wb")
    # its own process group: the block's background jobs are ended with it
    shell = subprocess.Popen(
        ["bash", "-e", "-c", script],
        cwd=REPO,
        env=env,
        stdout=out,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        for port in ports:
            wait_port("127.0.0.1", port, 180)
        assert shell.wait(timeout=60) == 0, (tmp_path / "block.log").read_text()
        asyncio.run(add_on_a_find_on_b(ports, token))
        workers = subprocess.run(
            ["pgrep", "-g", str(shell.pid), "-f", "kioku worker|-m workers"],
            capture_output=True,
            text=True,
        )
        assert workers.stdout.split(), (tmp_path / "block.log").read_text()
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(shell.pid, signal.SIGTERM)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and _group_alive(shell.pid):
            time.sleep(0.2)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(shell.pid, signal.SIGKILL)
        shell.poll()
        out.close()
        drop_database(database)
    log = (tmp_path / "block.log").read_text(errors="replace")
    assert "Traceback" not in log, log[-3000:]


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True
