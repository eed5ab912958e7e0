"""A real Redis for tests: always a private ``redis-server`` started for the session on a
free loopback port (no persistence), never the user's server: tests FLUSHDB their db,
which is only safe on a server nobody else uses. Stopped when the session ends.

Each test gets its own logical db (1..15, round robin, flushed before and after use) and
a unique namespace (queue name and key prefix).

Import the fixtures into a test module: ``from tests.redis_server import redis_db``.
"""

from __future__ import annotations

import itertools
import shutil
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator

import pytest
from redis import Redis
from redis.asyncio import Redis as AsyncRedis

_DBS = itertools.cycle(range(1, 16))


def _answers(port: int) -> bool:
    try:
        return bool(Redis(port=port, socket_connect_timeout=0.5).ping())
    except Exception:
        return False


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_private_server() -> tuple[subprocess.Popen[bytes], int]:
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.fail("redis-server is not installed (apt-get install redis-server); .ci/run does")
    port = _free_port()
    proc = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly",
         "no", "--daemonize", "no"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    deadline = time.monotonic() + 10
    while not _answers(port):
        if time.monotonic() > deadline or proc.poll() is not None:
            proc.kill()
            proc.wait(timeout=10)
            raise RuntimeError("redis-server did not start")
        time.sleep(0.05)
    return proc, port


@pytest.fixture(scope="session")
def redis_base_url() -> Iterator[str]:
    proc, port = start_private_server()
    try:
        yield f"redis://127.0.0.1:{port}"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


def _flush(url: str) -> None:
    client = Redis.from_url(url)
    try:
        client.flushdb()
    finally:
        client.close()


class RedisDb:
    def __init__(self, base_url: str, db: int, namespace: str) -> None:
        self.base_url, self.db, self.namespace = base_url, db, namespace

    @property
    def url(self) -> str:
        return f"{self.base_url}/{self.db}"

    def client(self) -> AsyncRedis:
        return AsyncRedis.from_url(self.url)

    async def flush(self) -> None:
        """FLUSHDB (the crash scenario): the db is this test's alone, on a private server."""
        client = self.client()
        try:
            await client.flushdb()
        finally:
            await client.aclose()


@pytest.fixture
def redis_db(redis_base_url: str) -> Iterator[RedisDb]:
    handle = RedisDb(redis_base_url, next(_DBS), f"t{uuid.uuid4().hex[:10]}")
    _flush(handle.url)
    try:
        yield handle
    finally:
        _flush(handle.url)
