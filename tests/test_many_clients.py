"""Several stdio clients on one embedded memory: each spawns its own ``kioku serve``,
which all proxy to one shared local gateway daemon (``mcp_gateway.daemon.local_gateway``)."""

from __future__ import annotations

import asyncio
import os
import signal
import stat
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from mcp_gateway.daemon.owner_state import read_owner
from tests.realproc import (
    daemon_pid,
    db_rows,
    gateway_paths,
    held_clients,
    kill_daemon,
    stdio_params,
    wait_until,
)

NOTES_PER_CLIENT = 12
WORDS = ("alpha", "bravo", "charlie")


async def _writer(client: Client, i: int) -> list[str]:
    """Add notes, searching in between, as an assistant would."""
    ids = []
    for j in range(NOTES_PER_CLIENT):
        res = await client.call_tool(
            "add_note", {"text": f"client {WORDS[i]} note {j}: rebase before pushing {WORDS[i]}"}
        )
        assert not res.is_error, res.content
        ids.append(res.structured_content["id"])
        found = await client.call_tool("search_memory", {"query": f"rebase {WORDS[(i + 1) % 3]}"})
        assert not found.is_error, found.content
    return ids


async def _search_ids(client: Client, query: str) -> set[str]:
    res = await client.call_tool("search_memory", {"query": query, "top": 50})
    assert not res.is_error, res.content
    return {r["id"] for r in res.structured_content["results"]}


async def _all_visible(clients: list[Client], acked: dict[int, list[str]]) -> None:
    everything = [nid for ids in acked.values() for nid in ids]
    for client in clients:
        for nid in everything:
            res = await client.call_tool("get_note", {"id": nid})
            assert not res.is_error, res.content
        for i, ids in acked.items():
            assert set(ids) <= await _search_ids(client, WORDS[i])


@pytest.fixture
def data_dir(tmp_path: Path) -> Any:
    path = tmp_path / "data"
    try:
        yield path
    finally:
        kill_daemon(path)


# slow: its own daemons (model loads) -- over 9 s on a 2-core AVX2 machine (round 10)
@pytest.mark.slow
async def test_three_clients_share_one_memory_and_survive_daemon_kill(data_dir: Path) -> None:
    params = stdio_params(data_dir, KIOKU_LOCAL_GATEWAY__IDLE_EXIT_S="300")
    async with held_clients([params, params, params]) as clients:
        results = await asyncio.gather(*(_writer(c, i) for i, c in enumerate(clients)))
        acked = dict(enumerate(results))
        await _all_visible(clients, acked)

        paths = gateway_paths(data_dir)
        assert stat.S_IMODE(os.stat(paths.socket).st_mode) == 0o600
        first = daemon_pid(data_dir)
        assert first is not None

        # SIGKILL between requests: the socket file stays behind (stale); the next call
        # from any client starts a fresh daemon, which cleans it up.
        kill_daemon(data_dir)
        assert paths.socket.exists()
        await _all_visible(clients, acked)
        second = daemon_pid(data_dir)
        assert second is not None and second != first

        more = await asyncio.gather(
            *(
                c.call_tool("add_note", {"text": f"after restart {WORDS[i]}"})
                for i, c in enumerate(clients)
            )
        )
        assert not any(r.is_error for r in more)

    total = db_rows(data_dir, "SELECT count(*), count(DISTINCT text) FROM notes")[0]
    assert total == (3 * NOTES_PER_CLIENT + 3, 3 * NOTES_PER_CLIENT + 3)


# slow: its own daemons (model loads) -- over 9 s on a 2-core AVX2 machine (round 10)
@pytest.mark.slow
async def test_attached_editor_keeps_the_daemon_which_idles_out_after(data_dir: Path) -> None:
    params = stdio_params(data_dir, KIOKU_LOCAL_GATEWAY__IDLE_EXIT_S="1")
    async with held_clients([params]) as [client]:
        res = await client.call_tool("add_note", {"text": "idle test note"})
        assert not res.is_error
        nid = res.structured_content["id"]
        first = daemon_pid(data_dir)
        assert first is not None
        await asyncio.sleep(3)  # three idle periods: an open editor is not idle
        assert daemon_pid(data_dir) == first
        # a daemon that exits cleanly under an attached editor (kioku stop, SIGTERM):
        # the next call starts a fresh one, which gets the editor's handshake again
        os.kill(first, signal.SIGTERM)
        assert wait_until(lambda: daemon_pid(data_dir) is None, 30)
        assert not gateway_paths(data_dir).session_socket.exists()  # clean exit removes it
        res = await client.call_tool("get_note", {"id": nid})
        assert not res.is_error, res.content
        assert daemon_pid(data_dir) not in (None, first)
    # the editor left: now the daemon idles out
    assert wait_until(lambda: daemon_pid(data_dir) is None, 30), "daemon did not idle out"
    async with held_clients([params]) as [client]:
        res = await client.call_tool("get_note", {"id": nid})
        assert not res.is_error, res.content


async def test_standalone_mode_still_serves_in_process(data_dir: Path) -> None:
    params = stdio_params(data_dir)
    params.args = ["serve", "--standalone"]
    async with held_clients([params]) as [client]:
        res = await client.call_tool("add_note", {"text": "standalone note"})
        assert not res.is_error
        # it owns the data dir itself (CLI commands go through it), no daemon started
        owner = read_owner(gateway_paths(data_dir))
        assert owner is not None and owner["kind"] == "stdio"
