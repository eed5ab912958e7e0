"""The stdio proxy's session with the owner, spoken to as an editor does: raw JSON-RPC
lines over a real ``kioku serve`` process (or the proxy in this process, on pipes)."""

from __future__ import annotations

import json
import os
import queue
import select
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from mcp_gateway.common.settings import KiokuSettings
from mcp_gateway.daemon.editor_pipes import complete_lines
from mcp_gateway.daemon.stdio_proxy import Proxy
from tests.http_server import KIOKU, kioku_env
from tests.realproc import INITIALIZE, daemon_pid, kill_daemon, pump, wait_until


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
        threading.Thread(target=pump, args=(out, self._lines), daemon=True).start()

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


# slow: its own daemons (model loads) -- over 9 s on a 2-core AVX2 machine (round 10)
@pytest.mark.slow
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


MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "probe", "version": "0"},
    "io.modelcontextprotocol/clientCapabilities": {},
}


# slow: its own daemons (model loads) -- over 9 s on a 2-core AVX2 machine (round 10)
@pytest.mark.slow
def test_a_modern_client_whose_probe_timed_out_survives_a_daemon_restart(tmp_path: Path) -> None:
    """The SDK's ``auto`` mode on a slow start: its ``server/discover`` times out on the
    client's side (the daemon still answers it, which settles the connection's era as
    2026-07-28), it falls back to ``initialize`` (refused: wrong era), then probes again
    and goes on modern. Before: the proxy kept that ``initialize`` and replayed it to the
    next daemon, whose connection then served the handshake era and refused every
    enveloped request (seen in tests/test_many_clients.py under load)."""
    data = tmp_path / "data"
    editor = Editor(data)
    discover = {"jsonrpc": "2.0", "method": "server/discover", "params": {"_meta": MODERN_META}}
    try:
        editor.send({**discover, "id": 1})
        assert "result" in editor.reply(1)
        editor.send({**INITIALIZE, "id": 2})
        assert "error" in editor.reply(2)  # the connection is modern already
        editor.send({**discover, "id": 3})
        assert "result" in editor.reply(3)
        params = {"name": "add_note", "arguments": {"text": "Rotate keys"}, "_meta": MODERN_META}
        editor.send({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": params})
        note_id = editor.reply(4)["result"]["structuredContent"]["id"]

        first = kill_daemon(data)
        params = {"name": "get_note", "arguments": {"id": note_id}, "_meta": MODERN_META}
        editor.send({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": params})
        again = editor.reply(5)
        assert "result" in again and not again["result"].get("isError"), again
        assert "Rotate keys" in json.dumps(again["result"])
        assert daemon_pid(data) not in (None, first)
        editor.close()
    finally:
        if editor.proc.poll() is None:
            editor.proc.kill()
        kill_daemon(data)
        assert wait_until(lambda: daemon_pid(data) is None, 30)


def _lines(fd: int, count: int, timeout: float = 120) -> list[dict[str, Any]]:
    """``count`` JSON lines read from ``fd`` (blocking, bounded by ``timeout``)."""
    out: list[dict[str, Any]] = []
    buffer = b""
    deadline = time.monotonic() + timeout
    while len(out) < count and time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 1)
        if not ready:
            continue
        chunk = os.read(fd, 1 << 16)
        assert chunk, f"stdout closed after {out}"
        buffer += chunk
        *done, buffer = buffer.split(b"\n")
        out += [json.loads(line) for line in done if line.strip()]
    return out


def test_split_reads_a_non_blocking_stdin_and_a_last_line_without_newline(tmp_path: Path) -> None:
    """The proxy in this process, on pipes: stdin left non-blocking by the editor, a
    message that arrives in two reads, and a last line without its newline at EOF, whose
    reply is still owed when stdin ends (it reaches stdout before ``run`` returns)."""
    data = tmp_path / "data"
    rin, win = os.pipe()
    rout, wout = os.pipe()
    os.set_blocking(rin, False)
    proxy = Proxy(KiokuSettings(data_dir=data), rin, wout)
    runner = threading.Thread(target=proxy.run)
    runner.start()
    try:
        first = json.dumps(INITIALIZE).encode() + b"\n"
        os.write(win, first[:20])
        time.sleep(0.2)  # the proxy waits on an empty non-blocking pipe meanwhile
        os.write(win, first[20:])
        assert "result" in _lines(rout, 1)[0]
        os.write(win, b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        call = {"name": "get_note", "arguments": {"id": "01MISSING0000000000000000000"}}
        os.write(win, json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                                  "params": call}).encode())  # fmt: skip
        os.close(win)
        win = -1
        (reply,) = _lines(rout, 1)
        assert reply["id"] == 2 and reply["result"]["isError"], reply
        runner.join(timeout=60)
        assert not runner.is_alive()
    finally:
        for fd in (rin, win, rout, wout):
            if fd >= 0:
                os.close(fd)
        runner.join(timeout=60)
        kill_daemon(data)


# slow: its own processes -- ~8 s on a 2-core AVX2 machine (round 10)
@pytest.mark.slow
def test_requests_from_a_file_and_an_editor_that_closed_our_stdout(tmp_path: Path) -> None:
    """``kioku serve < requests``: a regular file cannot be polled; every reply owed at
    its end is written before the proxy exits. Then the same with stdout already closed
    by the reader: replies are dropped, the proxy still ends cleanly, no traceback."""
    data = tmp_path / "data"
    requests = tmp_path / "requests.jsonl"
    call = {"name": "add_note", "arguments": {"text": "Deploys need a change ticket"}}
    requests.write_text(
        "\n".join(
            json.dumps(m)
            for m in (
                INITIALIZE,
                {"jsonrpc": "2.0", "method": "notifications/initialized"},
                {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call},
            )
        )
        + "\n"
    )
    try:
        with requests.open("rb") as stdin:
            done = subprocess.run(
                [KIOKU, "serve"], env=kioku_env(data), stdin=stdin, capture_output=True,
                timeout=120,
            )  # fmt: skip
        assert done.returncode == 0, done.stderr
        replies = [json.loads(line) for line in done.stdout.splitlines()]
        assert [r["id"] for r in replies] == [1, 2]
        assert replies[1]["result"]["structuredContent"]["status"] == "stored"

        rout, wout = os.pipe()
        os.close(rout)  # the editor is gone before any reply
        try:
            with requests.open("rb") as stdin:
                gone = subprocess.run(
                    [KIOKU, "serve"], env=kioku_env(data), stdin=stdin, stdout=wout,
                    stderr=subprocess.PIPE, timeout=120,
                )  # fmt: skip
        finally:
            os.close(wout)
        assert gone.returncode == 0, gone.stderr
        assert b"Traceback" not in gone.stderr
    finally:
        kill_daemon(data)


def test_lines_are_cut_from_reads_and_only_new_bytes_are_searched() -> None:
    buffer = bytearray()
    assert complete_lines(buffer, b'{"a":') == []
    assert complete_lines(buffer, b'1}\n{"b":2}\n{"c"') == [b'{"a":1}\n', b'{"b":2}\n']
    assert complete_lines(buffer, b":3}\n") == [b'{"c":3}\n'] and buffer == b""
    for _ in range(200):  # a 13 MB line in 64 KiB reads: each read scanned once
        assert complete_lines(buffer, b"x" * 65536) == []
    assert complete_lines(buffer, b"\n") == [b"x" * (200 * 65536) + b"\n"]


def _raw_proxy(data: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [KIOKU, "serve"],
        env=kioku_env(data),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )


def _send(proc: subprocess.Popen[bytes], *messages: dict[str, Any]) -> None:
    assert proc.stdin is not None
    for message in messages:
        proc.stdin.write(json.dumps(message).encode() + b"\n")
    proc.stdin.flush()


def _exit_after_stdin_ends(proc: subprocess.Popen[bytes], what: str) -> None:
    assert proc.stdin is not None
    began = time.monotonic()
    proc.stdin.close()
    try:
        proc.wait(timeout=10)  # it used to wait for request_timeout_s (300 s)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"{what}: the proxy still runs 10 s after stdin's end") from None
    print(f"{what}: exited {time.monotonic() - began:.2f} s after stdin's end")
    assert proc.returncode == 0


def test_stdin_end_waits_for_no_reply_that_cannot_be_delivered(tmp_path: Path) -> None:
    """A request the editor cancelled, or one whose reply nobody reads any more (the
    editor closed our stdout), is not waited for once stdin ends; the daemon is frozen
    (SIGSTOP) so neither is ever answered."""
    data = tmp_path / "data"
    cancelled, unread = _raw_proxy(data), _raw_proxy(data)
    daemon = None
    try:
        for proc in (cancelled, unread):
            assert proc.stdout is not None
            _send(proc, INITIALIZE)
            assert "result" in json.loads(proc.stdout.readline())
            _send(proc, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        daemon = daemon_pid(data)
        assert daemon is not None
        os.kill(daemon, signal.SIGSTOP)  # requests are delivered, never answered
        search = {"name": "search_memory", "arguments": {"query": "deploy keys"}}
        request = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": search}
        cancel = {"method": "notifications/cancelled", "params": {"requestId": 2}}
        _send(cancelled, request, {"jsonrpc": "2.0", **cancel})
        _exit_after_stdin_ends(cancelled, "cancelled request")
        _send(unread, request)
        assert unread.stdout is not None
        unread.stdout.close()  # the editor is gone: nobody reads the reply
        _exit_after_stdin_ends(unread, "stdout closed")
    finally:
        for proc in (cancelled, unread):
            if proc.poll() is None:
                proc.kill()
            proc.wait(timeout=30)
        if daemon is not None:
            os.kill(daemon, signal.SIGCONT)
        kill_daemon(data)


# slow: two daemon starts (model loads)
@pytest.mark.slow
def test_initialize_is_answered_before_the_daemon_has_opened_its_stores(tmp_path: Path) -> None:
    """Before: the proxy read nothing until the daemon it started had imported everything
    and opened the stores and the model, so an editor waited seconds on ``initialize`` at
    every launch. Now the answer is the owner's last one, the same bytes, given while the
    daemon is still starting (its owner socket does not accept yet), and a search sent
    at once is held until the stores are open and then answered."""
    from mcp_gateway.daemon import local_gateway as gw

    data = tmp_path / "data"
    paths = gw.GatewayPaths.for_settings(KiokuSettings(data_dir=data))
    first = Editor(data)
    try:
        first.send(INITIALIZE)
        real = first.reply(1)["result"]
        first.call(2, "add_note", text="Deploy keys rotate every 90 days")
        assert "error" not in first.reply(2)
    finally:
        first.close()
    kill_daemon(data, signal.SIGTERM)
    assert daemon_pid(data) is None
    editor = Editor(data)
    try:
        editor.send(INITIALIZE)
        answered = editor.reply(1)
        assert not gw.can_connect(paths.socket), "the daemon was already open"
        assert answered["result"] == real
        editor.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        editor.send({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        editor.call(3, "search_memory", query="deploy key rotation")
        tools = editor.reply(2)["result"]["tools"]
        assert "search_memory" in {tool["name"] for tool in tools}
        found = editor.reply(3)["result"]
        assert not found.get("isError") and "every 90 days" in found["content"][0]["text"]
        # the daemon's own answer was swallowed: one reply per request
        assert [m.get("id") for m in editor.seen] == [1, 2, 3]
    finally:
        editor.close()
        kill_daemon(data, signal.SIGTERM)
