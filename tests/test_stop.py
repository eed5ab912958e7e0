"""``kioku stop`` and SIGTERM reach an owner that is still starting -- real processes.

An editor's ``kioku serve`` proxy starts the shared daemon in the background; the
daemon imports for seconds, then opens its stores and loads its model. A stop in either
phase stops that daemon, in one line, and nothing brings it back until the editor asks.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

from mcp_gateway.daemon import local_gateway as gw
from mcp_gateway.daemon.owner_state import read_owner
from tests.realproc import INITIALIZE, KIOKU, gateway_paths, kill_daemon, kioku_env, wait_until
from tests.test_stdio_proxy import Editor

EXIT_BOUND_S = 5.0  # SIGTERM while loading the model: well under this; before, never


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
