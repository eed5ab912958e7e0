"""What ``kioku status`` shows about the process that owns a data dir."""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import anyio

from mcp_gateway.daemon import local_gateway as gw

OwnerKind = Literal["daemon", "http", "stdio"]


@dataclass(slots=True)
class OwnerState:
    """What ``kioku status`` shows about the owner; ``stop`` ends it."""

    kind: OwnerKind
    pid: int = field(default_factory=os.getpid)
    started_at: float = field(default_factory=time.time)
    http_url: str = ""
    requests: int = 0
    in_flight: int = 0
    # proxies attached on the session socket: while one is, an editor is open
    sessions: int = 0
    last_request: float = field(default_factory=time.monotonic)
    stop: anyio.Event = field(default_factory=anyio.Event)
    # SIGTERM or SIGINT came (set by the signal handler; ``owner._watch_signal``)
    signalled: bool = False

    def public(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "pid": self.pid,
            "started_at": self.started_at,
            "http_url": self.http_url,
            "requests": self.requests,
            "in_flight": self.in_flight,
            "sessions": self.sessions,
            "idle_s": round(time.monotonic() - self.last_request, 1),
        }


def info_path(paths: gw.GatewayPaths) -> Path:
    return paths.lock.with_name("owner.json")


def read_owner(paths: gw.GatewayPaths) -> dict[str, Any] | None:
    """The running owner's pid and kind, or None when nobody owns the data dir."""
    pid = gw.owner_pid(paths)
    if pid is None:
        return None
    try:
        data: dict[str, Any] = json.loads(info_path(paths).read_text())
    except (OSError, ValueError):
        data = {}
    if data.get("pid") != pid:
        data = {"pid": pid, "kind": "starting"}
    return data
