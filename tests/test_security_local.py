"""Other users on the same machine (issue 10, items 5, 6 and 8), with real processes.

Runs as root in CI and on the dev machine, so a second local user is simulated with
``nobody`` (uid 65534) where needed; those tests skip when we cannot switch users.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import shutil
import signal
import stat
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.http_server import http_client
from tests.realproc import (
    db_rows,
    gateway_paths,
    held_clients,
    http_proc,
    kill_daemon,
    stdio_params,
    text_of,
    wait_until,
)

NOBODY = 65534
as_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to run a second user")

# A fake gateway run by another user: it records what it receives and answers nothing.
ATTACKER = r"""
import os, socket, sys
path, capture = sys.argv[1], sys.argv[2]
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(path); os.chmod(path, 0o777); s.listen(64)
open(capture + ".ready", "w").close()
while True:
    c, _ = s.accept()
    c.settimeout(2)
    try:
        data = c.recv(65536)
    except OSError:
        data = b""
    with open(capture, "ab") as f:
        f.write(data)
    c.close()
"""


@contextmanager
def attacker_listening(path: Path) -> Iterator[Path]:
    """``nobody`` binds ``path`` first; yields the file of what it captured."""
    spool = Path(tempfile.mkdtemp(prefix="kioku-attacker-"))
    spool.chmod(0o777)
    capture = spool / "captured"
    proc = subprocess.Popen(
        ["/usr/bin/python3", "-c", ATTACKER, str(path), str(capture)], user=NOBODY, group=NOBODY
    )
    try:
        assert wait_until(lambda: Path(f"{capture}.ready").exists(), 20), "attacker not ready"
        yield capture
    finally:
        proc.kill()
        proc.wait(10)
        shutil.rmtree(spool, ignore_errors=True)


def captured(capture: Path) -> bytes:
    return capture.read_bytes() if capture.exists() else b""


async def add_and_check(data_dir: Path, text: str) -> None:
    async with held_clients([stdio_params(data_dir)]) as (client,):
        res = await client.call_tool("add_note", {"text": text})
        assert not res.is_error, text_of(res)
        nid = res.structured_content["id"]
    assert db_rows(data_dir, "SELECT text FROM notes WHERE id = ?", (nid,)) == [(text,)]


@as_root
async def test_deep_data_dir_never_uses_a_predictable_tmp_socket(tmp_path: Path) -> None:
    """Before: a data dir too deep for AF_UNIX put the socket at
    /tmp/kioku-<uid>-<hash>.sock; another user bound it first and captured the note."""
    data = tmp_path / ("d" * 60) / ("e" * 60) / "data"
    digest = hashlib.sha256(os.fsencode(data.resolve())).hexdigest()[:16]
    old = Path(tempfile.gettempdir()) / f"kioku-{os.getuid()}-{digest}.sock"
    try:
        with attacker_listening(old) as capture:
            await add_and_check(data, "secret note for the deep data dir")
            assert b"secret" not in captured(capture) and captured(capture) == b""
        sock = gateway_paths(data).socket
        assert sock.exists() and not str(sock).startswith(str(old))
        st = os.lstat(sock.parent)
        assert st.st_uid == os.geteuid() and stat.S_IMODE(st.st_mode) == 0o700
        # a stopped owner leaves no private dir behind in the temp dir, nor its record
        kill_daemon(data, signal.SIGTERM)
        assert not sock.parent.exists()
        assert not gateway_paths(data).socket_record.exists()
    finally:
        private = gateway_paths(data).socket.parent  # before the kill: its record goes
        kill_daemon(data)
        old.unlink(missing_ok=True)
        # a killed owner cannot remove its private socket dir (mkdtemp, recorded in the
        # data dir for its restarts): the data dir goes with tmp_path, so it goes too
        if private.parent == Path(tempfile.gettempdir()) and private.name.startswith("kioku-"):
            shutil.rmtree(private, ignore_errors=True)


@as_root
async def test_proxy_refuses_a_gateway_of_another_user(tmp_path: Path) -> None:
    """Before: the proxy sent its requests to whatever listened on the socket path."""
    # a careless data dir another user can write into (outside pytest's 0700 tmp dir)
    data = Path(tempfile.mkdtemp(prefix="kioku-open-"))
    os.chmod(data, 0o777)
    try:
        with attacker_listening(data / "gateway.sock") as capture:
            await add_and_check(data, "note that must not reach nobody")
            assert captured(capture) == b""
    finally:
        kill_daemon(data)
        shutil.rmtree(data, ignore_errors=True)


@as_root
async def test_gateway_drops_connections_from_another_user() -> None:
    """Before: the daemon answered anyone who could reach its socket."""
    data = Path(tempfile.mkdtemp(prefix="kioku-lax-"))  # outside pytest's 0700 tmp dir
    try:
        await add_and_check(data, "owner's note")  # leaves the daemon running
        paths = gateway_paths(data)
        os.chmod(data, 0o755)
        http_request = (
            b"POST /mcp HTTP/1.1\r\nHost: kioku-gateway\r\n"
            b"Content-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"
        )
        mcp_line = (
            b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":'
            b'"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}\n'
        )
        # the HTTP socket and the proxies' MCP session socket
        for sock, payload, marker in (
            (paths.socket, http_request, "HTTP/1.1"),
            (paths.session_socket, mcp_line, "jsonrpc"),
        ):
            sock.chmod(0o777)  # as if the file modes had failed
            probe = (
                "import socket,sys\n"
                "s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.settimeout(20)\n"
                "print('connected')\n"
                f"s.sendall({payload!r})\n"
                "try: print(repr(s.recv(100)))\n"
                "except OSError as e: print('closed', e)\n"
            )
            out = await asyncio.to_thread(
                subprocess.run,
                ["/usr/bin/python3", "-c", probe, str(sock)],
                user=NOBODY,
                group=NOBODY,
                capture_output=True,
                timeout=60,
            )
            answer = out.stdout.decode() + out.stderr.decode()
            assert "connected" in answer and marker not in answer, (sock.name, answer)
    finally:
        kill_daemon(data)
        shutil.rmtree(data, ignore_errors=True)


async def test_data_dir_is_private_whatever_the_umask(tmp_path: Path) -> None:
    """Before: under umask 022 the SQLite db, its WAL, logs and index were 0644 in
    0755 dirs: any local user could read every note."""
    data = tmp_path / "data"
    (data / "logs").mkdir(parents=True)
    data.chmod(0o755)
    stale = data / "logs" / "old.log"
    stale.write_text("left by an older kioku")
    stale.chmod(0o644)
    old = os.umask(0o022)
    try:
        async with held_clients([stdio_params(data)]) as (client,):
            res = await client.call_tool("add_note", {"text": "private lesson", "type": "lesson"})
            assert not res.is_error, text_of(res)
            await client.call_tool("record_add", {"type": "audit", "title": "private audit"})
            assert wait_until((data / "session_context.md").exists, 60)
            found = await client.call_tool("search_memory", {"query": "private lesson"})
            assert not found.is_error
    finally:
        os.umask(old)
        kill_daemon(data)
    seen = {p.relative_to(data).as_posix() for p in data.rglob("*")}
    assert {"kioku.sqlite3", "gateway.lock", "logs/gateway.log", "session_context.md"} <= seen
    assert any(p.startswith("index/") for p in seen)
    loose = []
    for path in [data, *data.rglob("*")]:
        st = os.lstat(path)
        if stat.S_ISLNK(st.st_mode):
            continue
        want = 0o700 if stat.S_ISDIR(st.st_mode) else 0o600
        if stat.S_IMODE(st.st_mode) & ~want:
            loose.append(f"{path.relative_to(data)} {oct(stat.S_IMODE(st.st_mode))}")
    assert not loose, loose


# -- disk full under background indexing ------------------------------------------------


def _can_mount() -> bool:
    from tests.test_faults import _can_mount as probe

    return probe()


@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() != 0 or not _can_mount(), reason="needs to mount tmpfs")
async def test_disk_full_during_indexing_keeps_the_gateway_up(tmp_path: Path) -> None:
    """Before: the edge index's mmapped writes hit SIGBUS when the disk filled while the
    background jobs indexed, killing the HTTP gateway. Now writes are refused cleanly."""
    from tests.test_faults import tmpfs

    with tmpfs(tmp_path / "fs", "256m") as fs:
        data = fs / "data"
        with http_proc(data) as gw:
            token_file = data / "http.token"
            tok = token_file.read_text().strip() if token_file.exists() else None
            async with http_client(gw.url, tok) as client:
                acked: list[str] = []
                errors: list[str] = []

                async def writer(n0: int) -> None:
                    for n in range(n0, n0 + 400):
                        text = f"note {n} " + "lorem ipsum dolor " * 300
                        res = await client.call_tool("add_note", {"text": text})
                        if res.is_error:
                            errors.append(text_of(res))
                        else:
                            acked.append(res.structured_content["id"])
                        if gw.proc.poll() is not None:
                            return

                def fill() -> None:
                    time.sleep(2)
                    subprocess.run(
                        ["dd", "if=/dev/zero", f"of={fs / 'filler'}", "bs=1M"],
                        capture_output=True,
                        check=False,
                    )

                await asyncio.gather(writer(0), writer(1000), asyncio.to_thread(fill))
                assert gw.proc.poll() is None, f"gateway died: {gw.stderr()[-1500:]}"
                assert errors and all("Traceback" not in e for e in errors)
                assert any("disk" in e.lower() for e in errors), errors[:3]
                (fs / "filler").unlink()
                print(f"\ndisk full: {len(acked)} acked, first refusal: {errors[0]}")
                res = await client.call_tool("add_note", {"text": "after freeing space"})
                assert not res.is_error, text_of(res)
                for nid in acked[:: max(1, len(acked) // 20)]:
                    assert not (await client.call_tool("get_note", {"id": nid})).is_error
            assert gw.proc.poll() is None
        os.sync()
