"""The stdio proxy's session with the owner, spoken to as an editor does: raw JSON-RPC
lines over a real ``kioku serve`` process."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from tests.http_server import KIOKU, kioku_env
from tests.realproc import INITIALIZE, daemon_pid, kill_daemon, wait_until


class Editor:
    """A ``kioku serve`` child and every line it writes, by id."""

    def __init__(self, data: Path) -> None:
        self.proc = subprocess.Popen(
            [KIOKU, "serve"],
            env=kioku_env(data),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        self.seen: list[dict[str, Any]] = []
        self._lines: queue.Queue[bytes] = queue.Queue()
        out = self.proc.stdout
        assert out is not None
        threading.Thread(target=lambda: [self._lines.put(ln) for ln in out], daemon=True).start()

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def call(self, rid: int, tool: str, **arguments: Any) -> None:
        params = {"name": tool, "arguments": arguments}
        self.send({"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params})

    def reply(self, rid: int, timeout: float = 120) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                msg = json.loads(self._lines.get(timeout=1))
            except queue.Empty:
                assert self.proc.poll() is None, "the proxy died"
                continue
            self.seen.append(msg)
            if msg.get("id") == rid:
                return dict(msg)
        raise AssertionError(f"no reply with id {rid!r}")

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        self.proc.wait(timeout=60)


def test_a_request_in_flight_when_the_daemon_dies_gets_an_error_and_the_session_goes_on(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    editor = Editor(data)
    try:
        editor.send(INITIALIZE)
        assert "result" in editor.reply(1)
        editor.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        editor.call(2, "add_note", text="Rotate the staging keys every Monday")
        note_id = editor.reply(2)["result"]["structuredContent"]["id"]

        first = daemon_pid(data)
        assert first is not None
        os.kill(first, signal.SIGSTOP)  # the next request is delivered, never answered
        editor.call(3, "get_note", id=note_id)
        time.sleep(0.5)
        kill_daemon(data)  # SIGKILL: the connection breaks with request 3 in flight

        broke = editor.reply(3)
        assert broke["error"]["code"] == -32001
        assert "may or may not have been applied" in broke["error"]["message"]

        # the next call starts a fresh daemon, which gets the editor's handshake again
        editor.call(4, "get_note", id=note_id)
        again = editor.reply(4)
        assert "result" in again and not again["result"].get("isError"), again
        assert "staging keys" in json.dumps(again["result"])
        assert daemon_pid(data) not in (None, first)
        # the replayed handshake's reply was not forwarded: the editor saw one reply to 1
        assert [m.get("id") for m in editor.seen].count(1) == 1
        editor.close()
        assert editor.proc.returncode == 0
    finally:
        if editor.proc.poll() is None:
            editor.proc.kill()
        kill_daemon(data)
        assert wait_until(lambda: daemon_pid(data) is None, 30)
