"""Run ``kioku serve --http`` as a real subprocess and connect clients to it."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

KIOKU = str(Path(sys.executable).with_name("kioku"))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def kioku_env(data_dir: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KIOKU_")}
    # A shared-gateway daemon a test leaves behind idles out in seconds, not 15 min
    # (conftest also kills any still running when the session ends).
    env.update(
        {
            "KIOKU_DATA_DIR": str(data_dir),
            "KIOKU_LOG_LEVEL": "WARNING",
            "KIOKU_LOCAL_GATEWAY__IDLE_EXIT_S": "20",
            **extra,
        }
    )
    return env


@contextmanager
def http_gateway(data_dir: Path, **env: str) -> Iterator[str]:
    """Start the gateway, wait until it accepts connections, yield its /mcp URL."""
    port = free_port()
    proc = subprocess.Popen(
        [KIOKU, "serve", "--http", "--port", str(port)],
        env=kioku_env(data_dir, **env),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise RuntimeError(f"gateway exited: {proc.stderr.read().decode()[-2000:]}")  # type: ignore[union-attr]
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.1)
        else:
            raise RuntimeError("gateway did not start within 60 s")
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.kill()
        proc.wait(timeout=30)


@asynccontextmanager
async def http_client(url: str, token: str | None) -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    http = httpx2.AsyncClient(headers=headers, timeout=60)
    async with http, Client(streamable_http_client(url, http_client=http)) as client:
        yield client
