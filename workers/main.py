"""``python -m workers`` (what ``kioku worker`` runs): an arq worker until stopped."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import socket
import sys

from arq.connections import RedisSettings, create_pool
from arq.worker import Worker

from mcp_gateway.common import compat
from mcp_gateway.common.settings import KiokuSettings, load_settings
from mcp_gateway.queue.scheduler import QueueNames

log = logging.getLogger(__name__)

NO_REDIS = "kioku worker needs KIOKU_REDIS_URL; the embedded default runs jobs inside `kioku serve`"


def run_worker(settings: KiokuSettings, burst: bool = False, check: bool = False) -> int:
    """Run an arq worker until stopped (``burst``: until the queue is empty).

    ``check``: exit 0 if a worker of this host (container) that is still running
    recorded its health in the last interval (``check_health``).
    """
    if not settings.redis_url:
        print(f"kioku: {NO_REDIS}", file=sys.stderr)
        return 2
    if check:
        return asyncio.run(check_health(settings, socket.gethostname()))
    return asyncio.run(_run(settings, burst))


async def check_health(settings: KiokuSettings, host: str) -> int:
    """0 if a live worker of ``host`` recorded its health in the last interval, else 1.

    Each worker has its own key (``QueueNames.health_key``: host and pid), so a worker
    that stops beside another (two on one machine, a replica scaled down) takes only
    its own key away. Live means its pid runs in this pid namespace: in a container, the
    container's own worker; a key left by a SIGKILLed worker (it expires after one
    interval) does not count."""
    prefix = QueueNames.for_settings(settings).health_prefix(host)
    assert settings.redis_url
    pool = await create_pool(RedisSettings.from_dsn(settings.redis_url))
    try:
        async for key in pool.scan_iter(match=f"{prefix}*"):
            name = key.decode() if isinstance(key, bytes) else str(key)
            pid = name[len(prefix) :]
            if not (pid.isdigit() and _running(int(pid))):
                continue
            data = await pool.get(key)
            if data:
                log.info("health check successful (pid %s): %s", pid, data.decode())
                return 0
    finally:
        await pool.aclose(close_connection_pool=True)
    log.warning("health check failed: no running worker of %s recorded its health", host)
    return 1


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process: running
    return True


async def _run(settings: KiokuSettings, burst: bool) -> int:
    # until arq's handler takes over (the Worker installs it), a SIGTERM is noted here
    early = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, early.set)
    from workers.settings import worker_settings

    worker = Worker(**worker_settings(settings, burst=burst))  # handles SIGINT/SIGTERM
    if early.is_set():
        log.info("worker stopped by SIGTERM before it started; no job taken")
        return 0
    try:
        await worker.async_run()
    except asyncio.CancelledError:
        log.info("worker stopped by signal; the jobs it was running are retried")
    finally:
        await compat.drop_unstarted_jobs(worker)  # else close() raises their cancellation
        await worker.close()
    log.info(
        "worker done: %d complete, %d failed, %d retried",
        worker.jobs_complete,
        worker.jobs_failed,
        worker.jobs_retried,
    )
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="kioku worker", description=__doc__)
    parser.add_argument("--burst", action="store_true", help="exit when the queue is empty")
    parser.add_argument("--check", action="store_true", help="health check exit code")
    args = parser.parse_args(argv)
    try:
        settings = load_settings()
    except Exception as exc:  # pydantic ValidationError: show it, not a traceback
        print(f"kioku: invalid settings: {exc}", file=sys.stderr)
        return 2
    logging.basicConfig(
        level=settings.log_level.upper(),
        stream=sys.stderr,
        format="%(asctime)s %(process)d %(levelname)s %(name)s: %(message)s",
    )
    try:
        code = run_worker(settings, burst=args.burst, check=args.check)
    except KeyboardInterrupt:
        code = 130
    from mcp_gateway.embedders.lanes import exit_if_busy

    exit_if_busy(code)  # a batch cut short by SIGTERM is redone (reconcile), not waited for
    return code
