"""A ``kioku serve`` (the stdio proxy an editor starts; it starts the owner daemon) spoken
to with raw JSON-RPC lines, for the benches that measure through that door
(``burst_mcp.py``, ``owner_memory.py``).

``Client`` writes requests and a reader thread timestamps each reply as it arrives, so
several requests may be outstanding and a reply's time is its arrival, not when the
caller looked. ``status`` asks ``kioku status --json`` (the owner's pid, backlog, index);
``stop_owner`` ends the owner a run started, so the next run starts its own.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PROTOCOL = "2025-06-18"


def serve_env(data_dir: Path, src: Path, settings: Iterable[str] = ()) -> dict[str, str]:
    """This environment without its ``KIOKU_*`` settings, on ``data_dir``, running the
    source tree ``src`` (``PYTHONPATH``), plus ``settings`` (``KEY=VALUE`` each)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("KIOKU_")}
    env.update(KIOKU_DATA_DIR=str(data_dir), KIOKU_LOG_LEVEL="WARNING")
    env["PYTHONPATH"] = str(src)
    for pair in settings:
        key, _, value = pair.partition("=")
        env[key] = value
    return env


@dataclass
class Reply:
    sent: float
    done: threading.Event = field(default_factory=threading.Event)
    at: float = 0.0
    message: dict[str, Any] = field(default_factory=dict)


class Client:
    """One ``kioku serve`` (an editor's MCP session), initialised on creation (``name``
    is the client's name in the handshake)."""

    def __init__(self, env: dict[str, str], name: str, start_timeout: float = 120.0) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "mcp_gateway.cli", "serve"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
            cwd=tempfile.gettempdir(),
        )
        self._next = 0
        self._open: dict[int, Reply] = {}
        self._lock = threading.Lock()
        self.on_reply: Any = None
        threading.Thread(target=self._read, daemon=True, name=f"read-{name}").start()
        init = self.send(
            "initialize",
            {
                "protocolVersion": PROTOCOL,
                "capabilities": {},
                "clientInfo": {"name": name, "version": "0"},
            },
        )
        self.wait(init, start_timeout)
        self._write({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def _write(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def send(self, method: str, params: dict[str, Any]) -> Reply:
        with self._lock:
            self._next += 1
            rid = self._next
            reply = self._open[rid] = Reply(time.perf_counter())
        self._write({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        return reply

    def tool(self, name: str, arguments: dict[str, Any]) -> Reply:
        return self.send("tools/call", {"name": name, "arguments": arguments})

    def wait(self, reply: Reply, timeout: float = 300.0) -> dict[str, Any]:
        """The reply's message; ``RuntimeError`` for an error reply, none in time, or a
        server that closed its stdout."""
        if not reply.done.wait(timeout):
            raise RuntimeError("no reply in time")
        message = reply.message
        if "error" in message or message.get("result", {}).get("isError"):
            raise RuntimeError(f"error reply: {str(message)[:500]}")
        return message

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            at = time.perf_counter()
            message = json.loads(line)
            with self._lock:
                reply = self._open.pop(message.get("id"), None)
            if reply is None:
                continue
            reply.at, reply.message = at, message
            reply.done.set()
            if self.on_reply is not None:
                self.on_reply(reply)
        with self._lock:  # closed: no reply is coming to what is still open
            gone, self._open = list(self._open.values()), {}
        for reply in gone:
            reply.message = {"error": "kioku serve closed its stdout"}
            reply.done.set()

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def status(env: dict[str, str]) -> dict[str, Any]:
    """``kioku status --json`` for the data dir of ``env``."""
    out = subprocess.run(
        [sys.executable, "-m", "mcp_gateway.cli", "status", "--json"],
        env=env,
        capture_output=True,
        check=True,
        cwd=tempfile.gettempdir(),
    )
    data: dict[str, Any] = json.loads(out.stdout)
    return data


def stop_owner(pid: int, timeout: float = 30.0) -> None:
    """SIGTERM to the owner daemon, then wait (at most ``timeout``) for it to be gone."""
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and Path(f"/proc/{pid}").exists():
        time.sleep(0.1)
