"""Faults on real processes: SIGKILL during bursts, index deleted, read-only data dir,
disk full, embedder down or slow. After each: every acknowledged note is present and
searchable, and nothing was duplicated."""

from __future__ import annotations

import asyncio
import contextlib
import json
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import uvicorn
from mcp import Client
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from tests.http_server import http_client
from tests.realproc import (
    KIOKU,
    authed,
    db_rows,
    free_port,
    held_clients,
    integrity,
    kill_daemon,
    kioku_env,
    letters,
    stdio_params,
    text_of,
)
from tests.realproc import http_proc as gateway
from tests.test_embedders_ollama import fake_vector

pytestmark = pytest.mark.slow


async def burst(
    client: Client, acked: dict[str, str], prefix: str, stop: asyncio.Event, enough: asyncio.Event
) -> None:
    """Add notes until the gateway dies; record only acknowledged ones."""
    n = 0
    while not stop.is_set():
        word = f"{prefix}{letters(n)}"
        n += 1
        try:
            res = await asyncio.wait_for(
                client.call_tool("add_note", {"text": f"burst {word}"}), 30
            )
        except Exception:
            return  # the gateway died mid-request: not acknowledged
        if res.is_error:
            return
        acked[res.structured_content["id"]] = word
        if len(acked) >= 30:
            enough.set()


async def assert_all_present(client: Client, acked: dict[str, str]) -> None:
    for nid, word in acked.items():
        res = await client.call_tool("get_note", {"id": nid})
        assert not res.is_error, res.content
        found = await client.call_tool("search_memory", {"query": word, "top": 5})
        assert nid in {r["id"] for r in found.structured_content["results"]}, word


def assert_no_duplicates(data: Path, acked: dict[str, str]) -> None:
    rows = db_rows(data, "SELECT text, count(*) FROM notes GROUP BY text HAVING count(*) > 1")
    assert rows == []
    stored = {r[0] for r in db_rows(data, "SELECT id FROM notes")}
    assert set(acked) <= stored
    assert integrity(data) == "ok"


async def test_sigkill_http_gateway_during_burst(tmp_path: Path) -> None:
    data, stop, enough = tmp_path / "data", asyncio.Event(), asyncio.Event()
    acked: dict[str, str] = {}
    with gateway(data) as gw:
        async with held_clients([authed(gw.url, gw.token) for _ in range(3)]) as clients:
            tasks = [
                asyncio.create_task(burst(c, acked, f"k{i}", stop, enough))
                for i, c in enumerate(clients)
            ]
            await asyncio.wait_for(enough.wait(), 120)
            gw.proc.send_signal(signal.SIGKILL)
            await asyncio.to_thread(gw.proc.wait, 30)
            stop.set()
            await asyncio.wait_for(asyncio.gather(*tasks), 60)
    print(f"\n{len(acked)} notes acknowledged before SIGKILL")
    with gateway(data) as gw2:
        async with http_client(gw2.url, gw2.token) as client:
            await assert_all_present(client, acked)
    assert_no_duplicates(data, acked)


async def test_sigkill_local_daemon_during_burst(tmp_path: Path) -> None:
    data, stop, enough = tmp_path / "data", asyncio.Event(), asyncio.Event()
    acked: dict[str, str] = {}
    params = stdio_params(data)
    try:
        async with held_clients([params, params]) as clients:
            tasks = [
                asyncio.create_task(burst(c, acked, f"d{i}", stop, enough))
                for i, c in enumerate(clients)
            ]
            await asyncio.wait_for(enough.wait(), 120)
            await asyncio.to_thread(kill_daemon, data)
            stop.set()
            await asyncio.wait_for(asyncio.gather(*tasks), 60)
            # The in-flight call failed cleanly; the next one respawns the daemon.
            await assert_all_present(clients[0], acked)
        assert_no_duplicates(data, acked)
    finally:
        kill_daemon(data)


def _leaf_message(exc: BaseException) -> str:
    while isinstance(exc, BaseExceptionGroup):
        exc = exc.exceptions[0]
    return str(exc)


def _sh(*cmd: str) -> None:
    subprocess.run(cmd, capture_output=True, check=cmd[0] != "dd")  # dd ends on ENOSPC


def _kioku(data: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [KIOKU, *args], env=kioku_env(data, **env), capture_output=True, text=True, timeout=300
    )


async def test_index_deleted_then_reindexed(tmp_path: Path) -> None:
    data, acked = tmp_path / "data", {}
    with gateway(data) as gw:
        async with http_client(gw.url, gw.token) as client:
            for n in range(10):
                res = await client.call_tool("add_note", {"text": f"index loss {letters(n)}"})
                acked[res.structured_content["id"]] = letters(n)
            rec = await client.call_tool("record_add", {"type": "decision", "title": "keep wal"})
            assert not rec.is_error
    shutil.rmtree(data / "index")

    stats = await asyncio.to_thread(_kioku, data, "stats", "--json")
    assert stats.returncode == 0, stats.stderr
    index = json.loads(stats.stdout)["index"]
    assert (index["points"], index["expected_points"]) == (0, 11)  # a clear state

    reindex = await asyncio.to_thread(_kioku, data, "reindex")
    assert reindex.returncode == 0, reindex.stderr
    assert "reindexed 10 notes and 1 records" in reindex.stdout
    with gateway(data) as gw:
        async with http_client(gw.url, gw.token) as client:
            await assert_all_present(client, acked)
            found = await client.call_tool("search_memory", {"query": "keep wal decision"})
            assert "keep wal" in text_of(found)
    assert_no_duplicates(data, acked)


# -- a real read-only / full filesystem: tmpfs (root may mount it here) ---------------


def _can_mount() -> bool:
    probe = Path("/tmp") / f"kioku-mount-probe-{time.monotonic_ns()}"
    probe.mkdir()
    try:
        ok = (
            subprocess.run(
                ["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(probe)], capture_output=True
            ).returncode
            == 0
        )
        if ok:
            subprocess.run(["umount", str(probe)], check=False)
        return ok
    except OSError:
        return False
    finally:
        probe.rmdir()


needs_mount = pytest.mark.skipif(not _can_mount(), reason="needs permission to mount tmpfs")


@contextlib.contextmanager
def tmpfs(path: Path, size: str) -> Iterator[Path]:
    path.mkdir(parents=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)], check=True)
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


@needs_mount
async def test_read_only_data_dir(tmp_path: Path) -> None:
    with tmpfs(tmp_path / "fs", "256m") as fs:
        data, acked = fs / "data", {}
        with gateway(data) as gw:
            async with http_client(gw.url, gw.token) as client:
                for n in range(5):
                    res = await client.call_tool("add_note", {"text": f"ro {letters(n)}"})
                    acked[res.structured_content["id"]] = letters(n)
        before = db_rows(data, "SELECT count(*) FROM notes")
        # A real read-only filesystem: root cannot write to it either (EROFS).
        await asyncio.to_thread(_sh, "mount", "-o", "remount,ro", str(fs))
        with pytest.raises(RuntimeError) as failed:
            with gateway(data):
                pass
        # Exit code 3 and the reason, as the last line of a uvicorn lifespan traceback
        # (see docs/reliability.md: a pre-flight open in serve() would make it one line).
        assert "read-only file system" in str(failed.value).lower()
        # stdio: the proxy answers with one clean JSON-RPC error, no traceback.
        with pytest.raises(Exception) as refused:
            async with held_clients([stdio_params(data)]):
                pass
        reason = _leaf_message(refused.value)
        assert "writable" in reason and "Traceback" not in reason, reason
        add = await asyncio.to_thread(_kioku, data, "add", "must not be stored")
        assert add.returncode != 0 and "Traceback" not in add.stderr
        await asyncio.to_thread(_sh, "mount", "-o", "remount,rw", str(fs))
        assert integrity(data) == "ok"
        assert db_rows(data, "SELECT count(*) FROM notes") == before
        with gateway(data) as gw:
            async with http_client(gw.url, gw.token) as client:
                await assert_all_present(client, acked)


@needs_mount
async def test_disk_full_then_freed(tmp_path: Path) -> None:
    with tmpfs(tmp_path / "fs", "96m") as fs:
        data, acked, errors = fs / "data", {}, []
        with gateway(data) as gw:
            async with http_client(gw.url, gw.token) as client:
                ok = await client.call_tool("add_note", {"text": "before full"})
                acked[ok.structured_content["id"]] = "before full"
                filler = fs / "filler"
                await asyncio.to_thread(_sh, "dd", "if=/dev/zero", f"of={filler}", "bs=64k")
                for n in range(40):  # bounded: the WAL reuses freed pages for a while
                    big = f"full {letters(n)} " + "x" * 30_000
                    res = await client.call_tool("add_note", {"text": big})
                    if res.is_error:
                        errors.append(text_of(res))
                        break
                    acked[res.structured_content["id"]] = letters(n)
                assert errors, "the disk never filled"
                assert "Traceback" not in errors[0]
                clear = "full" in errors[0].lower() or "disk" in errors[0].lower()
                server_log = [ln for ln in gw.stderr().splitlines() if "Error:" in ln][-3:]
                filler.unlink()
                res = await client.call_tool("add_note", {"text": "after freeing space"})
                assert not res.is_error, text_of(res)
                acked[res.structured_content["id"]] = "after freeing space"
                for nid in acked:
                    assert not (await client.call_tool("get_note", {"id": nid})).is_error
            assert gw.proc.poll() is None, "the gateway died on a full disk"
        print(f"\ndisk full error: {errors[0]}\nserver log: {server_log}")
        assert integrity(data) == "ok"
        assert_no_duplicates(data, acked)
        # ENOSPC surfaces as "database or disk is full" or, on the WAL, "disk I/O error"
        assert clear, f"unclear disk-full message: {errors[0]}"


# -- embedder down or slow ------------------------------------------------------------


class Stub:
    """Ollama's /api/embed on a fixed port; can be stopped, restarted and slowed."""

    def __init__(self) -> None:
        self.port, self.delay = free_port(), 0.0
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None

    async def embed(self, request: Request) -> JSONResponse:
        body = await request.json()
        if self.delay:
            await asyncio.sleep(self.delay)
        inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
        return JSONResponse(
            {"model": body["model"], "embeddings": [fake_vector(t) for t in inputs]}
        )

    def start(self) -> None:
        app = Starlette(routes=[Route("/api/embed", self.embed, methods=["POST"])])
        cfg = uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning")
        self._server = uvicorn.Server(cfg)
        self._thread = threading.Thread(target=self._server.run, daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            assert time.monotonic() < deadline
            time.sleep(0.02)

    def stop(self) -> None:
        if self._server is not None and self._thread is not None:
            self._server.should_exit = True
            self._thread.join(10)
            self._server = None


def ollama_env(stub: Stub) -> dict[str, str]:
    return {
        "KIOKU_EMBEDDER__PROVIDER": "ollama",
        "KIOKU_EMBEDDER__OLLAMA_HOST": f"http://127.0.0.1:{stub.port}",
        "KIOKU_EMBEDDER__TIMEOUT_S": "0.5",
    }


def _pending(data: Path) -> int:
    return int(db_rows(data, "SELECT count(*) FROM notes WHERE embedded_model IS NULL")[0][0])


async def _wait_embedded(data: Path, within_s: float) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if _pending(data) == 0:
            return True
        await asyncio.sleep(0.25)
    return False


@pytest.mark.parametrize("fault", ["down", "slow"])
async def test_embedder_down_or_slow_then_back(tmp_path: Path, fault: str) -> None:
    data, stub, acked = tmp_path / "data", Stub(), {}
    stub.start()
    env = ollama_env(stub)
    try:
        with gateway(data, **env) as gw:  # type: ignore[arg-type]
            async with http_client(gw.url, gw.token) as client:
                if fault == "down":
                    stub.stop()
                else:
                    stub.delay = 2.0
                for n in range(5):
                    res = await client.call_tool("add_note", {"text": f"emb {letters(n)}"})
                    assert not res.is_error, text_of(res)  # still acknowledged
                    acked[res.structured_content["id"]] = letters(n)
                for nid, word in acked.items():  # lexical search still finds them
                    found = await client.call_tool("search_memory", {"query": word})
                    assert not found.is_error, (text_of(found), gw.stderr()[-3000:])
                    assert nid in {r["id"] for r in found.structured_content["results"]}
                assert _pending(data) > 0
                if fault == "down":
                    stub.start()
                else:
                    stub.delay = 0.0
                # Indexing catches up (job retries / reconcile), no restart needed.
                caught_up = await _wait_embedded(data, 90)
                assert caught_up, f"{_pending(data)} notes still not embedded"
                await assert_all_present(client, acked)
        assert_no_duplicates(data, acked)
    finally:
        stub.stop()


async def test_gateway_starts_while_the_embedder_is_down(tmp_path: Path) -> None:
    data, stub, acked = tmp_path / "data", Stub(), {}
    stub.start()
    env = ollama_env(stub)
    try:
        with gateway(data, **env) as gw:  # type: ignore[arg-type]
            async with http_client(gw.url, gw.token) as client:
                res = await client.call_tool("add_note", {"text": "first note, embedder up"})
                acked[res.structured_content["id"]] = "first"
        stub.stop()
        with gateway(data, **env) as gw:  # type: ignore[arg-type]  # Ollama is down now
            async with http_client(gw.url, gw.token) as client:
                for n in range(3):
                    res = await client.call_tool("add_note", {"text": f"down {letters(n)}"})
                    assert not res.is_error, text_of(res)
                    acked[res.structured_content["id"]] = letters(n)
                found = await client.call_tool("search_memory", {"query": letters(0)})
                assert not found.is_error, text_of(found)
                stub.start()
                assert await _wait_embedded(data, 90), f"{_pending(data)} still pending"
                await assert_all_present(client, acked)
        assert_no_duplicates(data, acked)
    finally:
        stub.stop()
