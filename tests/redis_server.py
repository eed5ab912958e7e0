"""A real Redis for tests: the one on 127.0.0.1:6379 if it answers, else a private
``redis-server`` started for the session (no persistence). Each test claims a free
logical db and a unique namespace (queue name and key prefix), and cleans up after.

Import the fixtures into a test module: ``from tests.redis_server import redis_db``.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator

import pytest
from redis import Redis
from redis.asyncio import Redis as AsyncRedis

DEFAULT_PORT = 6379
CLAIM_KEY = "kioku:test:claim"
CLAIM_TTL_S = 1800


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
        pytest.skip("no Redis on 6379 and no redis-server binary to start one")
    port = _free_port()
    proc = subprocess.Popen(
        [binary, "--port", str(port), "--save", "", "--appendonly", "no", "--daemonize", "no"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 10
    while not _answers(port):
        if time.monotonic() > deadline or proc.poll() is not None:
            proc.kill()
            raise RuntimeError("redis-server did not start")
        time.sleep(0.05)
    return proc, port


@pytest.fixture(scope="session")
def redis_base_url() -> Iterator[str]:
    if _answers(DEFAULT_PORT):
        yield f"redis://127.0.0.1:{DEFAULT_PORT}"
        return
    proc, port = start_private_server()
    try:
        yield f"redis://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def claim_db(base_url: str, token: str) -> int:
    """Claim a logical db (1..15) no other test process is using."""
    for db in range(1, 16):
        client = Redis.from_url(f"{base_url}/{db}")
        try:
            if client.set(CLAIM_KEY, token, nx=True, ex=CLAIM_TTL_S):
                return db
        finally:
            client.close()
    pytest.skip("every Redis test db is claimed by other test runs")


def release_db(base_url: str, db: int, token: str, namespace: str) -> None:
    client = Redis.from_url(f"{base_url}/{db}")
    try:
        for pattern in (f"kioku:{namespace}:*", f"arq:*kioku:{namespace}:*"):
            keys = list(client.scan_iter(match=pattern, count=1000))
            if keys:
                client.delete(*keys)
        if client.get(CLAIM_KEY) == token.encode():
            client.delete(CLAIM_KEY)
    finally:
        client.close()


class RedisDb:
    def __init__(self, base_url: str, db: int, namespace: str, token: str) -> None:
        self.base_url, self.db, self.namespace, self.token = base_url, db, namespace, token

    @property
    def url(self) -> str:
        return f"{self.base_url}/{self.db}"

    def client(self) -> AsyncRedis:
        return AsyncRedis.from_url(self.url)

    async def flush(self) -> None:
        """FLUSHDB (the crash scenario), keeping this test's claim on the db."""
        client = self.client()
        try:
            await client.flushdb()
            await client.set(CLAIM_KEY, self.token, ex=CLAIM_TTL_S)
        finally:
            await client.aclose()


@pytest.fixture
def redis_db(redis_base_url: str) -> Iterator[RedisDb]:
    token = uuid.uuid4().hex
    db = claim_db(redis_base_url, token)
    handle = RedisDb(redis_base_url, db, f"t{token[:10]}", token)
    try:
        yield handle
    finally:
        release_db(redis_base_url, db, token, handle.namespace)
