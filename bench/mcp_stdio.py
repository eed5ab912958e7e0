"""A ``kioku serve`` (the stdio proxy an editor starts; it starts the owner daemon) spoken
to with raw JSON-RPC lines, for the benches that measure through that door.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Reply:
    sent: float
    done: threading.Event = field(default_factory=threading.Event)
    at: float = 0.0
    message: dict[str, Any] = field(default_factory=dict)


class Client:
    """One ``kioku serve`` (an editor's MCP session) spoken to with raw JSON-RPC lines; a
    reader thread timestamps each reply as it arrives."""

    def __init__(self, env: dict[str, str], name: str) -> None:
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
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": f"burst-bench-{name}", "version": "0"},
            },
        )
        self.wait(init, 120)
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

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def status(env: dict[str, str]) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, "-m", "mcp_gateway.cli", "status", "--json"],
        env=env,
        capture_output=True,
        check=True,
        cwd=tempfile.gettempdir(),
    )
    data: dict[str, Any] = json.loads(out.stdout)
    return data
