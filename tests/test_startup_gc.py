"""The garbage collector waits for a process's start (``common.startup_gc``): a ``kioku``
command runs its imports and opens its stores with the collector off, then freezes what
the start made and turns the collector on for the rest of its life."""

from __future__ import annotations

import gc
import signal
import subprocess
import sys
import time
from pathlib import Path

from mcp_gateway.common import startup_gc
from mcp_gateway.common.settings import KiokuSettings
from mcp_gateway.daemon import local_gateway as gw
from tests.http_server import KIOKU, kioku_env

# reports the collector's state as the process ends, on stderr
REPORTER = """import atexit, gc, sys
atexit.register(lambda: print(f"gc enabled={gc.isenabled()} frozen={gc.get_freeze_count()}",
                              file=sys.stderr))
"""


def test_a_command_opens_its_stores_with_the_collector_off_then_turns_it_on(
    tmp_path: Path,
) -> None:
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(REPORTER, encoding="utf-8")
    env = kioku_env(tmp_path / "data")
    env["PYTHONPATH"] = f"{hook}:{env.get('PYTHONPATH', '')}".rstrip(":")
    listed = subprocess.run([KIOKU, "list"], env=env, capture_output=True, text=True, timeout=180)
    assert listed.returncode == 0, listed.stderr
    state = listed.stderr.strip().splitlines()[-1]
    enabled, frozen = (part.split("=")[1] for part in state.split()[1:])
    assert enabled == "True"
    # the imports and the stores: tens of thousands of objects, never traversed again
    assert int(frozen) > 20_000, state


def test_the_daemon_starts_with_the_collector_off_and_serves_with_it_on(tmp_path: Path) -> None:
    """The daemon ``kioku serve`` spawns (``python -m mcp_gateway.daemon.owner``): held
    from its first line, released once its stores are open."""
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(REPORTER, encoding="utf-8")
    data = tmp_path / "data"
    env = kioku_env(data)
    env["PYTHONPATH"] = f"{hook}:{env.get('PYTHONPATH', '')}".rstrip(":")
    log = tmp_path / "daemon.err"
    with log.open("wb") as err:
        daemon = subprocess.Popen(
            [sys.executable, "-m", "mcp_gateway.daemon.owner", "--data-dir", str(data)],
            env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err,
        )  # fmt: skip
        try:
            paths = gw.GatewayPaths.for_settings(KiokuSettings(data_dir=data))
            deadline = time.monotonic() + 120
            while not gw.can_connect(paths.socket):  # it listens once its stores are open
                assert daemon.poll() is None and time.monotonic() < deadline, log.read_text()
                time.sleep(0.1)
        finally:
            daemon.send_signal(signal.SIGTERM)
            daemon.wait(60)
    state = log.read_text("utf-8").strip().splitlines()[-1]
    assert state.startswith("gc enabled=True frozen="), state
    assert int(state.rsplit("=", 1)[1]) > 20_000, state


def test_release_only_undoes_a_hold() -> None:
    assert gc.isenabled()
    frozen = gc.get_freeze_count()
    startup_gc.release()  # never held: nothing changes
    assert gc.isenabled() and gc.get_freeze_count() == frozen
    code = (
        "import gc; from mcp_gateway.common import startup_gc as s; s.hold(); "
        "import json, decimal; assert not gc.isenabled(); s.release(); s.release(); "
        "print(gc.isenabled(), gc.get_freeze_count() > 0)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["True", "True"]
