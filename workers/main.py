"""Entry points used by the CLI: ``kioku worker``, the queue part of ``kioku stats``,
and the Redis line of ``kioku doctor``."""

from __future__ import annotations

import asyncio
import logging
import socket
import sys
from typing import Any

from arq.connections import RedisSettings, create_pool
from arq.worker import Worker, async_check_health

from mcp_gateway.db import Database
from mcp_gateway.settings import KiokuSettings

from . import failures
from .arq_runner import open_pool, queue_counts
from .scheduler import QueueNames

log = logging.getLogger(__name__)

NO_REDIS = "kioku worker needs KIOKU_REDIS_URL; the embedded default runs jobs inside `kioku serve`"


def run_worker(settings: KiokuSettings, burst: bool = False, check: bool = False) -> int:
    """Run an arq worker until stopped (``burst``: until the queue is empty).

    ``check``: exit 0 if this host's worker recorded its health in the last interval.
    """
    if not settings.redis_url:
        print(f"kioku: {NO_REDIS}", file=sys.stderr)
        return 2
    names = QueueNames.for_settings(settings)
    if check:
        return asyncio.run(
            async_check_health(
                RedisSettings.from_dsn(settings.redis_url),
                names.health_key(socket.gethostname()),
                names.queue,
            )
        )
    return asyncio.run(_run(settings, burst))


async def _run(settings: KiokuSettings, burst: bool) -> int:
    from .settings import worker_settings

    worker = Worker(**worker_settings(settings, burst=burst))  # handles SIGINT/SIGTERM
    try:
        await worker.async_run()
    except asyncio.CancelledError:
        log.info("worker stopped by signal")
    finally:
        await worker.close()
    log.info(
        "worker done: %d complete, %d failed, %d retried",
        worker.jobs_complete,
        worker.jobs_failed,
        worker.jobs_retried,
    )
    return 0


async def queue_stats(settings: KiokuSettings) -> dict[str, Any]:
    """Runner, queue depth (Redis mode) and permanent failures (from SQLite)."""
    out: dict[str, Any] = {"runner": "arq" if settings.redis_url else "in-process"}
    if settings.redis_url:
        names = QueueNames.for_settings(settings)
        try:
            pool = await open_pool(settings.redis_url, names)
        except Exception as exc:  # stats must still show the rest
            out["redis_error"] = str(exc)
        else:
            try:
                out.update(await queue_counts(pool, names))
            finally:
                await pool.aclose(close_connection_pool=True)
    db = Database(settings.db_path)
    await db.open()
    try:
        out["failures"] = await failures.summary(db)
    finally:
        await db.close()
    return out


async def check_redis(settings: KiokuSettings) -> tuple[bool, str]:
    if not settings.redis_url:
        return False, "KIOKU_REDIS_URL is not set"
    names = QueueNames.for_settings(settings)
    try:
        pool = await create_pool(RedisSettings.from_dsn(settings.redis_url))
    except Exception as exc:
        return False, f"cannot connect to {settings.redis_url}: {exc}"
    try:
        info = await pool.info("server")
        workers = [k async for k in pool.scan_iter(match=f"{names.queue}:health-check:*")]
        detail = (
            f"redis {info.get('redis_version', '?')} at {settings.redis_url}, "
            f"{len(workers)} live worker(s) on {names.queue}"
        )
        return True, detail
    except Exception as exc:
        return False, f"redis at {settings.redis_url} failed: {exc}"
    finally:
        await pool.aclose(close_connection_pool=True)
