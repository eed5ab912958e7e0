"""What ``kioku status`` shows about the process that owns a data dir."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Any, Literal

import anyio

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
