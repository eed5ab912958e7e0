"""``kioku stop`` and SIGTERM end an owner promptly, whatever it is doing -- real processes.

An editor's ``kioku serve`` proxy starts the shared daemon in the background; the
daemon imports for seconds, then opens its stores and loads its model. A stop in either
phase stops that daemon, in one line, and nothing brings it back until the editor asks.
With the opt-in channels (USE, MiniLM) a SIGTERM in the middle of their backlog ends
the owner at once too (``tests/test_shutdown.py`` covers the default channel).
"""

from __future__ import annotations

import contextlib
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
from mcp_gateway.daemon.owner_state import read_owner
from mcp_gateway.services.app import open_app
from tests.realproc import (
    INITIALIZE,
    KIOKU,
    db_rows,
    gateway_paths,
    http_proc,
    kill_daemon,
    kioku_env,
    wait_until,
)
from tests.test_shutdown import exit_time
from tests.test_stdio_proxy import Editor

EXIT_BOUND_S = 5.0  # the issue asks for under a second; this only catches a wait
# ~300 tokens: past MiniLM's 256, the longest call its channel makes
LONG = " ".join(["the deploy pipeline retries after a timeout, then pages the on-call"] * 25)


def owner_processes(data: Path) -> list[int]:
    """The pids of the daemons started for ``data`` (their command lines name it)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"mcp_gateway.daemon.owner" in argv and os.fsencode(data) in argv:
            found.append(int(entry.name))
    return found


# slow: its own daemons (model loads)
@pytest.mark.slow
def test_stop_reaches_a_daemon_still_importing_then_one_still_opening(tmp_path: Path) -> None:
    """Before: a ``kioku stop`` while the editor's daemon imported (it took the lock only
    after seconds of imports) said "no kioku process owns this data dir", and the daemon
    came up; a SIGTERM while it opened its stores was logged and ignored, and it served
    on. Now the proxy takes the lock and passes it to the daemon it spawns, so the stop
    finds it from its first instant; the editor's next request is told, and the one
    after starts a fresh daemon, which a SIGTERM while it still opens ends at once."""
    data = tmp_path / "data"
    paths = gateway_paths(data)
    editor = Editor(data)
    try:
        assert wait_until(lambda: owner_processes(data), 30)
        [pid] = owner_processes(data)
        done = subprocess.run(
            [KIOKU, "stop"], env=kioku_env(data), capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 0, done.stderr[-2000:]
        assert done.stdout.splitlines() == [f"stopped kioku pid {pid} (it was still starting)"]
        time.sleep(2)  # it used to come up in these seconds
        assert not gw.lock_held(paths.lock) and not gw.can_connect(paths.session_socket)

        editor.send(INITIALIZE)
        told = editor.reply(1)
        assert "was stopped while it started" in told["error"]["message"], told
        editor.send({**INITIALIZE, "id": 2})

        def opening() -> bool:
            owner = read_owner(paths) or {}
            return owner.get("kind") == "daemon" and not gw.can_connect(paths.socket)

        assert wait_until(opening, 60, step=0.01)
        second = int((read_owner(paths) or {})["pid"])
        began = time.monotonic()
        os.kill(second, signal.SIGTERM)
        assert wait_until(lambda: gw.owner_pid(paths) != second, EXIT_BOUND_S), (
            f"still running {EXIT_BOUND_S} s after SIGTERM"
        )
        print(f"SIGTERM while opening to exit: {time.monotonic() - began:.2f} s")
        assert "Traceback" not in paths.log.read_text()
    finally:
        editor.close()
        kill_daemon(data, signal.SIGTERM)


async def seed_long(data: Path, n: int) -> None:
    """``n`` long acknowledged notes without vectors (``test_shutdown.seed``'s, longer)."""
    settings = KiokuSettings(data_dir=data, redis_url=None, qdrant_url=None)
    async with open_app(settings, run_jobs=False) as app:
        for i in range(n):
            await app.notes.add(NoteFields(text=f"step {i}: {LONG}", type="note"))


def channel_vectors(data: Path, model: str) -> int:
    sql = "SELECT count(*) FROM vectors WHERE kind = 'note' AND model LIKE ?"
    return int(db_rows(data, sql, (f"{model}/%",))[0][0])


# slow: its own owner with three models to load
@pytest.mark.slow
async def test_sigterm_mid_channel_backlog_of_long_notes_exits_at_once(tmp_path: Path) -> None:
    """Before: a channel embedded a job's whole batch in one call on a worker thread
    the stop waited for (13.7 and 15.3 s from SIGTERM to exit here, a 64-note batch of
    long notes on MiniLM). Now a channel makes ``PinnedChannel.STEP`` texts a call on its
    own lane, checks for the stop between them, and the owner does not wait for the call
    in progress; what was not embedded is left to the next start."""
    data = tmp_path / "data"
    await seed_long(data, 64)
    env: dict[str, Any] = {
        "KIOKU_EMBEDDER__CHANNELS": '["use","minilm"]',
        "KIOKU_EMBEDDER__BATCH_SIZE": "64",
    }
    with http_proc(data, **env) as owner:
        # USE is ~10x MiniLM: once its vectors are in, MiniLM's batch is running
        assert wait_until(lambda: channel_vectors(data, "use") > 0, 120), owner.stderr()[-2000:]
        began = time.monotonic()
        owner.proc.send_signal(signal.SIGTERM)
        took = exit_time(owner.proc, began)
        print(f"SIGTERM mid-channel backlog to exit: {took:.2f} s")
        assert owner.proc.returncode == 0, owner.stderr()[-2000:]
        for bad in ("Traceback", "terminate called", ":onnxruntime:"):
            assert bad not in owner.stderr(), owner.stderr()[-3000:]
    assert channel_vectors(data, "minilm") < 64  # it stopped in the middle, as meant


def running_owner(data: Path) -> int:
    """The daemon's pid once it serves (its admin socket answers)."""
    paths = gateway_paths(data)
    assert wait_until(lambda: gw.can_connect(paths.socket), 120)
    return int((read_owner(paths) or {})["pid"])


def stop_on_a_terminal(data: Path, answer: str) -> tuple[int, str]:
    """``kioku stop`` with a pseudo-terminal for stdin and stdout, answering its prompt."""
    import pty

    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [KIOKU, "stop"], env=kioku_env(data), stdin=slave, stdout=slave, stderr=slave
    )
    os.close(slave)
    seen = b""
    try:
        while b"[y/N]" not in seen:
            chunk = os.read(master, 4096)
            assert chunk, seen
            seen += chunk
        os.write(master, answer.encode() + b"\n")
        code = proc.wait(timeout=60)
        with contextlib.suppress(OSError):  # EIO once the child closed its side
            while chunk := os.read(master, 4096):
                seen += chunk
    finally:
        os.close(master)
        if proc.poll() is None:
            proc.kill()
    return code, seen.decode(errors="replace")


# slow: its own daemons (model loads)
@pytest.mark.slow
def test_stop_with_an_editor_attached_says_so_and_needs_force(tmp_path: Path) -> None:
    """Before: ``kioku stop`` stopped the daemon under an attached editor without a word,
    and the editor's next call silently started a new one. Now, with an editor attached,
    it says so and what will happen; it refuses without a terminal (exit 1), asks on one,
    and ``--force`` stops it; the editor's next call is then served by a new daemon."""
    data = tmp_path / "data"
    editor = Editor(data)
    try:
        editor.send(INITIALIZE)
        assert "result" in editor.reply(1)
        editor.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        editor.call(2, "add_note", text="the editor keeps working while nobody stops it")
        assert not editor.reply(2)["result"].get("isError")
        pid = running_owner(data)

        refused = subprocess.run(
            [KIOKU, "stop"], env=kioku_env(data), capture_output=True, text=True, timeout=60
        )
        assert refused.returncode == 1, refused
        assert f"not stopped: 1 editor is attached to kioku pid {pid}" in refused.stderr
        assert "next memory call starts a new kioku daemon" in refused.stderr
        assert "kioku stop --force" in refused.stderr
        assert gw.owner_pid(gateway_paths(data)) == pid  # untouched
        editor.call(3, "search_memory", query="who keeps working")
        assert not editor.reply(3)["result"].get("isError")

        code, said = stop_on_a_terminal(data, "n")
        assert code == 1 and "Stop it? [y/N]" in said and "not stopped" in said, said
        assert gw.owner_pid(gateway_paths(data)) == pid

        forced = subprocess.run(
            [KIOKU, "stop", "--force"],
            env=kioku_env(data),
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert forced.returncode == 0, forced
        assert forced.stdout.splitlines() == [
            f"stopped kioku pid {pid}",
            "1 editor's session ended: the next memory call of each starts a new kioku daemon",
        ]
        editor.call(4, "search_memory", query="who keeps working")
        assert not editor.reply(4)["result"].get("isError")  # a new daemon answered
        assert gw.owner_pid(gateway_paths(data)) not in (None, pid)
    finally:
        editor.close()
        kill_daemon(data, signal.SIGTERM)
