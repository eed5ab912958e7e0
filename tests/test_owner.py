"""One owner per data dir, many clients -- with real processes.

The CLI beside a running owner (the shared stdio daemon, ``serve --http``) goes
through the owner's admin API, and each side sees the other's writes; ``kioku status``
names the owner and ``kioku stop`` ends it; a CLI that finds no owner owns the data
dir itself for the command's duration.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from mcp_gateway.common.inputs import NoteFields
from mcp_gateway.common.settings import KiokuSettings
from mcp_gateway.daemon import local_gateway as gw
from mcp_gateway.services.app import open_app
from tests.realproc import (
    INITIALIZE,
    KIOKU,
    daemon_pid,
    gateway_paths,
    http_proc,
    interruptible,
    kioku_env,
    stdio_client,
    text_of,
    wait_until,
)


def cli(
    data_dir: Path, *args: str, timeout: float = 120, **env: str
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [KIOKU, *args],
        env=kioku_env(data_dir, **env),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def ok(data_dir: Path, *args: str, **env: Any) -> str:
    done = cli(data_dir, *args, **env)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    return done.stdout


def stop(data_dir: Path) -> None:
    cli(data_dir, "stop")
    assert wait_until(lambda: daemon_pid(data_dir) is None, 30)


# slow: its own daemons (model loads) -- over 9 s on a 2-core AVX2 machine (round 10)
@pytest.mark.slow
async def test_cli_and_stdio_daemon_see_each_others_writes(tmp_path: Path) -> None:
    data = tmp_path / "data"
    try:
        async with stdio_client(data) as client:
            added = await client.call_tool(
                "add_note", {"text": "The billing API paginates with cursors", "type": "knowledge"}
            )
            assert not added.is_error
            pid = daemon_pid(data)
            assert pid is not None
            # the CLI goes through the daemon: no "index already open" error, same data
            assert "paginates with cursors" in ok(data, "search", "billing pagination")
            note_id = ok(data, "add", "Deploys freeze on Fridays", "--type", "lesson").strip()
            found = await client.call_tool("search_memory", {"query": "Friday deploy freeze"})
            assert note_id in text_of(found)
            status = json.loads(ok(data, "status", "--json"))
            assert status["owner"]["pid"] == pid and status["owner"]["kind"] == "daemon"
            assert status["notes"]["total"] == 2
            assert json.loads(ok(data, "stats", "--json"))["notes"]["total"] == 2
    finally:
        stop(data)
    assert not gateway_paths(data).socket.exists()


# slow: its own daemons (model loads) -- over 9 s on a 2-core AVX2 machine (round 10)
@pytest.mark.slow
async def test_cli_beside_serve_http(tmp_path: Path) -> None:
    from tests.http_server import http_client

    data = tmp_path / "data"
    with http_proc(data) as gw:
        async with http_client(gw.url, gw.token) as client:
            await client.call_tool("add_note", {"text": "Use ruff format, not black"})
            assert "ruff format" in ok(data, "search", "which code formatter")
            ok(data, "records", "add", "decision", "Postgres 16 for the billing service")
            assert "DECISION-MEM-001" in ok(data, "records", "search", "billing")
            found = await client.call_tool("record_search", {"query": "Postgres billing"})
            assert "DECISION-MEM-001" in text_of(found)
            status = json.loads(ok(data, "status", "--json"))
            assert status["owner"]["kind"] == "http" and status["owner"]["pid"] == gw.proc.pid
            # an editor's stdio `kioku serve` attaches to the HTTP owner: no daemon of its own
            async with stdio_client(data) as editor:
                seen = await editor.call_tool("search_memory", {"query": "ruff format"})
                assert "ruff format" in text_of(seen)
                status = json.loads(ok(data, "status", "--json"))
                assert status["owner"]["pid"] == gw.proc.pid
                assert status["owner"]["sessions"] == 1
        # a second owner is refused with the first one's pid and the way out
        second = cli(data, "serve", "--http", "--port", "1")
        assert second.returncode != 0
        assert str(gw.proc.pid) in second.stderr and "kioku stop" in second.stderr
        ok(data, "stop")
        assert gw.proc.wait(timeout=30) == 0


# slow: its own owner process (model load)
@pytest.mark.slow
def test_cli_settings_travel_to_the_owner_or_are_named(tmp_path: Path) -> None:
    """Before: beside a running owner, `KIOKU_NAMESPACE=other kioku list` listed the
    owner's namespace and `KIOKU_EMBEDDER__PROVIDER=ollama kioku search` silently ran
    with the owner's embedder."""
    data = tmp_path / "data"
    with http_proc(data) as gw:
        mine = ok(data, "add", "Deploy keys rotate every 90 days").strip()
        theirs = ok(data, "add", "Other team: deploy on Tuesdays", KIOKU_NAMESPACE="other")
        theirs = theirs.strip()
        assert theirs != mine
        listed = ok(data, "list", KIOKU_NAMESPACE="other")
        assert theirs in listed and mine not in listed
        assert theirs not in ok(data, "list") and mine in ok(data, "list")
        # another namespace's id answers as an unknown one
        missing = cli(data, "show", mine, KIOKU_NAMESPACE="other")
        assert missing.returncode == 1
        assert f"no note with id '{mine}': `kioku search" in missing.stderr
        shared = ok(data, "list", KIOKU_NAMESPACE="other", KIOKU_READ_NAMESPACES='["default"]')
        assert mine in shared and theirs in shared
        # an import's namespace-less notes go to the importing process's namespace
        source = tmp_path / "import.jsonl"
        header = {"kind": "kioku-export", "version": 1, "notes": 1, "records": 0}
        item = {"kind": "note", "id": "01M8ZH0DYKEC06616FSV3H7JDR", "text": "Imported: ssh on 2222"}
        source.write_text(f"{json.dumps(header)}\n{json.dumps(item)}\n", encoding="utf-8")
        ok(data, "import", str(source), KIOKU_NAMESPACE="other")
        assert item["id"] in ok(data, "list", KIOKU_NAMESPACE="other")
        assert item["id"] not in ok(data, "list")
        added = ok(data, "records", "add", "audit", "Keys leak in CI logs", KIOKU_PROJECT="OPS")
        assert added.startswith("created AUDIT-OPS-001")
        # an owner's setting: the command runs with the owner's, and says so in one line
        found = cli(data, "search", "deploy keys", KIOKU_EMBEDDER__PROVIDER="ollama")
        assert found.returncode == 0 and mine in found.stdout
        lines = found.stderr.strip().splitlines()
        assert len(lines) == 1, found.stderr
        assert lines[0] == (
            f"kioku: the running kioku (pid {gw.proc.pid}) uses embedder.provider = local; "
            "this command's ollama is ignored: `kioku stop`, then run it again"
        )
        assert cli(data, "list").stderr == ""  # the same settings: nothing to say
        ok(data, "stop")
        assert gw.proc.wait(timeout=30) == 0


# slow: its own daemons (model loads) -- over 9 s on a 2-core AVX2 machine (round 10)
@pytest.mark.slow
def test_cli_owns_an_idle_data_dir_and_lists_notes(tmp_path: Path) -> None:
    data = tmp_path / "data"
    first = ok(data, "add", "Prefer small pull requests").strip()
    second = ok(data, "add", "Review migrations twice", "--type", "lesson").strip()
    listed = ok(data, "list")
    assert listed.index(second) < listed.index(first)  # newest first
    ok(data, "edit", first, "--priority", "high")
    assert "priority=high" in ok(data, "show", first)
    ok(data, "delete", first)
    assert first not in ok(data, "list")
    ok(data, "restore", first)
    assert first in ok(data, "list")
    assert "no kioku process owns" in ok(data, "status")
    missing = cli(data, "show", "01NOPE")
    assert missing.returncode == 1 and "no note with id" in missing.stderr


def test_status_and_stop_without_owner(tmp_path: Path) -> None:
    data = tmp_path / "data"
    assert "no kioku process owns" in ok(data, "stop")
    started = time.monotonic()
    assert json.loads(ok(data, "status", "--json")) == {"owner": None}
    assert time.monotonic() - started < 60  # it never starts a daemon
    assert daemon_pid(data) is None


@pytest.mark.slow
def test_sigint_of_reindex_through_the_owner_keeps_it_serving(tmp_path: Path) -> None:
    data = tmp_path / "data"
    n = 600

    async def prepare() -> None:
        async with open_app(KiokuSettings(data_dir=data, redis_url=None), run_jobs=False) as app:
            for i in range(n):  # committed and lexically indexed, never embedded
                note = await app.notes.add(
                    NoteFields(text=f"imported note {i}", type="knowledge"), namespace="default"
                )
                await app.indexer.put_lexical(note)

    asyncio.run(prepare())
    with http_proc(data):
        proc = subprocess.Popen(
            [KIOKU, "reindex"],
            env=kioku_env(data),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            preexec_fn=interruptible,
        )
        assert wait_until(lambda: bool(list((data / "index" / "edge").glob("kioku-2"))), 120)
        time.sleep(1.0)  # mid-way: embedding 600 notes takes far longer
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
        assert proc.returncode != 0 and b"Traceback" not in err
        # the owner cancelled its rebuild and serves the live index, complete
        assert wait_until(lambda: not list((data / "index" / "edge").glob("kioku-2")), 60)
        status = json.loads(ok(data, "status", "--json"))
        assert status["index"]["collection"] == "kioku"
        assert status["index"]["points"] == n
        assert status["index"]["dense_storage"] == "turbo16"  # a new data dir's default
        assert "imported note 17" in ok(data, "search", "imported note 17")
        ok(data, "stop")


# slow: its own daemon (model load)
@pytest.mark.slow
async def test_stdio_session_settings_travel_to_a_running_daemon(tmp_path: Path) -> None:
    """Before: an editor's `kioku serve` with KIOKU_NAMESPACE=other, beside a daemon an
    editor in namespace `team` started, wrote to and searched the daemon's namespace, and
    an owner setting it set otherwise was ignored without a word."""
    data = tmp_path / "data"
    try:
        async with stdio_client(data, KIOKU_NAMESPACE="team") as team:
            added = await team.call_tool("add_note", {"text": "Team: deploy windows are Tuesdays"})
            team_note = added.structured_content["id"]
            pid = daemon_pid(data)
            async with stdio_client(data, KIOKU_NAMESPACE="other", KIOKU_PROJECT="OPS") as other:
                mine = await other.call_tool("add_note", {"text": "Other: deploy windows Fridays"})
                other_note = mine.structured_content["id"]
                found = text_of(await other.call_tool("search_memory", {"query": "deploy windows"}))
                assert other_note in found and team_note not in found
                # the team's id answers exactly like an unknown one
                theirs = await other.call_tool("get_note", {"id": team_note})
                unknown = await other.call_tool("get_note", {"id": "0" * 26})
                assert theirs.is_error and unknown.is_error
                assert text_of(theirs).replace(team_note, "?") == text_of(unknown).replace(
                    "0" * 26, "?"
                )
                record = await other.call_tool("record_add", {"type": "audit", "title": "Leak"})
                assert record.structured_content["record"]["id"].startswith("AUDIT-OPS-001")
                assert daemon_pid(data) == pid  # one owner served both sessions
            # an owner setting: named in one stderr line (the editor's log), with the
            # owner's value and the way out; the session goes on with the owner's
            editor = await asyncio.to_thread(
                subprocess.run,
                [KIOKU, "serve"],
                input=json.dumps(INITIALIZE) + "\n",
                env=kioku_env(data, KIOKU_SEARCH__RECENT_COUNT="5"),
                capture_output=True,
                text=True,
                timeout=60,
            )
            assert json.loads(editor.stdout)["result"]["serverInfo"]["name"] == "kioku"
            assert editor.stderr.strip().splitlines() == [
                f"kioku: the running kioku (pid {pid}) uses search.recent_count = 3; this "
                "session's 5 is ignored: `kioku stop`, then start the session again"
            ], editor.stderr
            # and the team's session still sees only its own
            seen = text_of(await team.call_tool("search_memory", {"query": "deploy windows"}))
            assert team_note in seen and other_note not in seen
    finally:
        stop(data)


def test_status_beside_an_owner_still_starting_is_one_line(tmp_path: Path) -> None:
    """Before: `kioku status` run while an editor's daemon was still opening its stores
    (it holds the lock, its socket is bound but not listening yet) ended in an httpx
    traceback ('Connection refused'). Now it waits for the owner as every other command
    does (local_gateway.start_timeout_s), and one that never answers is one line. The
    starting owner here is this test process: the lock held, the socket bound."""
    data = tmp_path / "data"
    paths = gateway_paths(data)
    fd = gw.acquire(paths.lock, 0.0)
    assert fd is not None
    sock = gw.bind(paths.socket)
    try:
        done = cli(data, "status", KIOKU_LOCAL_GATEWAY__START_TIMEOUT_S="1")
        assert done.returncode == 1 and done.stdout == "", done.stderr[-2000:]
        assert done.stderr.strip().splitlines() == [
            f"kioku: {data} is owned by another kioku process (pid {os.getpid()}, starting); "
            "CLI commands and `kioku serve` talk to it. Stop it with `kioku stop` (or "
            f"`kill {os.getpid()}`) to run this one instead (it does not answer on its socket)"
        ]
    finally:
        sock.close()
        os.close(fd)
    assert json.loads(ok(data, "status", "--json")) == {"owner": None}
