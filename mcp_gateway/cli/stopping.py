"""``kioku stop``: end the process that owns the data dir, also one still starting.

Editors attached to the shared daemon (their ``kioku serve`` proxies, one MCP session
each) lose their session when it stops, and each one's next memory call starts a new
daemon (seconds of start-up that call waits for). So, as a daemon's stop command does
when it would cut off its users, a stop with editors attached asks first on a terminal
and otherwise refuses, saying so, unless ``--force``; ``kioku status`` lists them.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
import time

import anyio

from mcp_gateway.cli.client import RemoteMemory, owner_client
from mcp_gateway.common.settings import KiokuSettings
from mcp_gateway.daemon import local_gateway as gw
from mcp_gateway.daemon.owner_state import read_owner

# a lock held by nobody named yet: a daemon's spawner between its fork and the pid
_PID_WAIT_S = 2.0


async def editors_attached(settings: KiokuSettings) -> int:
    """How many editors' sessions the running owner serves (0 when it cannot say)."""
    try:
        async with owner_client(settings) as client:
            owner = (await RemoteMemory(client).status())["owner"]
    except Exception:  # it is ending or unreachable: nobody to warn about
        return 0
    return int(owner.get("sessions", 0))


def consequence(pid: int, editors: int) -> str:
    sessions = "1 editor is" if editors == 1 else f"{editors} editors are"
    return (
        f"{sessions} attached to kioku pid {pid} (`kioku status` lists them): stopping it "
        "ends their sessions, and each one's next memory call starts a new kioku daemon, "
        "which takes a few seconds"
    )


def confirmed(pid: int, editors: int, force: bool) -> bool:
    """Whether to go on: ``--force``, or a yes on a terminal; else the refusal is said."""
    if force:
        return True
    what = consequence(pid, editors)
    if sys.stdin.isatty() and sys.stdout.isatty():
        answer = input(f"{what}.\nStop it? [y/N] ")
        if answer.strip().lower() in ("y", "yes"):
            return True
        print("not stopped")
        return False
    print(
        f"kioku: not stopped: {what}. Close the editors first, or run `kioku stop --force`.",
        file=sys.stderr,
    )
    return False


async def stop(args: argparse.Namespace, settings: KiokuSettings) -> int:
    """Stop the owner, also one still starting: an editor's daemon holds the lock, its
    pid in the lock file, from before its first import (``local_gateway.spawn_daemon``).
    With editors attached: ``confirmed`` first (exit 1 when not)."""
    paths = gw.GatewayPaths.for_settings(settings)
    owner = read_owner(paths)
    named_by = time.monotonic() + _PID_WAIT_S
    while owner is None and gw.lock_held(paths.lock) and time.monotonic() < named_by:
        await anyio.sleep(0.02)  # the spawner names its child right after the fork
        owner = read_owner(paths)
    if owner is None:
        print("no kioku process owns this data dir")
        return 0
    pid = int(owner["pid"])
    # importing (no owner.json of its own yet), or opening its stores (not listening)
    still = owner.get("kind") == "starting" or not gw.can_connect(paths.socket)
    starting = " (it was still starting)" if still else ""
    # one still starting cannot say: it has served nobody a memory call yet
    editors = 0 if still else await editors_attached(settings)
    if editors and not confirmed(pid, editors, args.force):
        return 1
    with contextlib.suppress(ProcessLookupError):  # it ended meanwhile
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + args.timeout
    while gw.owner_pid(paths) == pid:
        if time.monotonic() > deadline:
            print(f"kioku pid {pid} did not stop within {args.timeout:g} s", file=sys.stderr)
            return 1
        await anyio.sleep(0.05)
    print(f"stopped kioku pid {pid}{starting}")
    if editors:
        sessions = "1 editor's session" if editors == 1 else f"{editors} editors' sessions"
        print(f"{sessions} ended: the next memory call of each starts a new kioku daemon")
    return 0
