"""``kioku worker`` as a real process: health check, and the crash scenario.

Crash scenario (real Redis, real model, qdrant-client local mode): notes are
acknowledged by the gateway, a worker is SIGKILLed mid-burst, Redis is flushed (all
queued jobs gone); a fresh ``kioku worker --burst`` reconciles at start-up from SQLite,
and every acknowledged note ends up indexed with a dense vector and searchable.
The test process closes its own app before any worker starts: local mode allows one
owner of the index path.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from mcp_gateway.app import open_app
from mcp_gateway.db import Database
from mcp_gateway.search import SearchRequest
from mcp_gateway.settings import KiokuSettings
from mcp_gateway.tools_notes import store_note
from mcp_gateway.types import point_id
from tests.redis_server import RedisDb, redis_base_url, redis_db  # noqa: F401
from workers.main import NO_REDIS, run_worker

N = 400
TOPICS = ["deploy", "database", "rate limits", "git history", "docker images", "tests"]


def worker_env(settings: KiokuSettings) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        KIOKU_CONFIG=str(settings.data_dir / "absent.toml"),
        KIOKU_DATA_DIR=str(settings.data_dir),
        KIOKU_REDIS_URL=str(settings.redis_url),
        KIOKU_NAMESPACE=settings.namespace,
        KIOKU_INDEX__BACKEND="qdrant",
        KIOKU_INDEX__COLLECTION=settings.index.collection,
        KIOKU_LOG_LEVEL="INFO",
    )
    return env


def kioku(*args: str) -> list[str]:
    return [sys.executable, "-m", "mcp_gateway.cli", *args]


def make_settings(tmp_path: Path, redis: RedisDb) -> KiokuSettings:
    return KiokuSettings(
        data_dir=tmp_path / "data",
        namespace=redis.namespace,
        redis_url=redis.url,
        index={"backend": "qdrant", "collection": f"w{uuid.uuid4().hex[:10]}"},
    )


async def pending(settings: KiokuSettings) -> int:
    db = Database(settings.db_path)
    await db.open()
    try:
        rows = await db.fetchall(
            "SELECT COUNT(*) AS n FROM notes WHERE deleted = 0 AND embedded_model IS NULL"
        )
        return int(rows[0]["n"])
    finally:
        await db.close()


def test_worker_without_redis_url_explains(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    settings = KiokuSettings(data_dir=tmp_path, redis_url=None)
    assert run_worker(settings, burst=True, check=False) == 2
    assert NO_REDIS in capsys.readouterr().err


@pytest.mark.slow
async def test_sigkill_and_flush_lose_no_acknowledged_note(
    tmp_path: Path,
    redis_db: RedisDb,  # noqa: F811 - the fixture imported above
) -> None:
    settings = make_settings(tmp_path, redis_db)
    env = worker_env(settings)
    async with open_app(settings) as app:
        ids = []
        for i in range(N):
            topic = TOPICS[i % len(TOPICS)]
            text = f"note {i}: what we learned about {topic}. " * 4
            fields = {
                "text": text,
                "type": "knowledge",
                "priority": "",
                "domain": "",
                "solved_query": "",
            }
            ids.append((await store_note(app, fields, app.namespaces[0])).id)
    assert await pending(settings) == N

    log = (tmp_path / "worker1.log").open("wb")
    worker = subprocess.Popen(  # noqa: ASYNC220 - starting it does not block
        kioku("worker"), env=env, stdout=log, stderr=subprocess.STDOUT
    )
    try:
        deadline = time.monotonic() + 120
        while await pending(settings) > N - 32:  # at least one batch embedded
            assert worker.poll() is None, (tmp_path / "worker1.log").read_text()
            assert time.monotonic() < deadline, "the worker embedded nothing"
            await asyncio.sleep(0.02)
    finally:
        worker.send_signal(signal.SIGKILL)
        worker.wait(timeout=30)
    left = await pending(settings)
    assert 0 < left < N, "the kill should land mid-burst"
    # the killed worker's health sentinel outlives it by one interval (30 s)
    check = await asyncio.to_thread(subprocess.run, kioku("worker", "--check"), env=env, timeout=60)
    assert check.returncode == 0

    await redis_db.flush()  # every queued job is gone
    burst = await asyncio.to_thread(
        subprocess.run,
        kioku("worker", "--burst"),
        env=env,
        timeout=400,
        capture_output=True,
        text=True,
    )
    assert burst.returncode == 0, burst.stderr[-3000:]

    assert await pending(settings) == 0
    async with open_app(settings, run_jobs=False) as app:
        present = await app.index.present([point_id("note", n) for n in ids])
        assert all(present.get(point_id("note", n)) for n in ids)
        found = await app.search.search(
            SearchRequest("lessons about container builds", namespaces=app.namespaces)
        )
        assert found.dense_available and found.results
