"""``python -m workers`` (what ``kioku worker`` runs): an arq worker until stopped."""

from __future__ import annotations

import argparse
import asyncio
import logging
import socket
import sys

from arq.connections import RedisSettings
from arq.worker import Worker, async_check_health

from mcp_gateway.jobs.scheduler import QueueNames
from mcp_gateway.settings import KiokuSettings, load_settings

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
        return run_worker(settings, burst=args.burst, check=args.check)
    except KeyboardInterrupt:
        return 130
