"""The job contract both runners honour: enqueue with dedup, singletons, retries.

``JobQueue.enqueue(name, *args, job_id=...)`` has arq's semantics: it returns False
(and does nothing) while a job with that id is queued or running; ids are freed as
soon as a job ends (functions are registered with ``keep_result=0``).

Singletons (export, tune) use the generation pattern with a lock (``coordination``):
at most one run at a time, and every request is followed by a run that sees it.
Per-note jobs are idempotent: point ids derive from note ids.

Failures: transient ones (embedder, index or Redis briefly down) raise ``Retry`` with
exponential back-off; after ``queue.max_tries`` (or any permanent error) the failure
is logged with its key and stored in SQLite (``failures``), visible in ``kioku stats``.
"""

from __future__ import annotations

import logging
import sys
import uuid
from collections.abc import Awaitable, Callable
from typing import Any, NoReturn

from mcp_gateway.common.errors import EmbedderUnavailable, StoreUnavailable
from mcp_gateway.queue import failures
from mcp_gateway.queue.coordination import Coordinator
from mcp_gateway.queue.run import JobQueue, JobRun, Retry

log = logging.getLogger(__name__)

EXPORT = "export"
TUNE = "tune"
SINGLETONS = (EXPORT, TUNE)
MAX_BACKOFF_S = 60.0

TRANSIENT: tuple[type[BaseException], ...] = (
    EmbedderUnavailable,
    StoreUnavailable,
    ConnectionError,
    TimeoutError,
)


def backoff_s(run: JobRun, attempt: int) -> float:
    return min(run.retry_base_s * 2 ** max(attempt - 1, 0), MAX_BACKOFF_S)


def is_transient(exc: BaseException) -> bool:
    """``TRANSIENT``, and Redis briefly down. Redis's errors are looked up only where
    redis is imported (the arq runner): no other process can meet one, and the
    embedded owner does not import it (``run.Retry``)."""
    if isinstance(exc, TRANSIENT):
        return True
    redis = sys.modules.get("redis.exceptions")
    return redis is not None and isinstance(exc, (redis.ConnectionError, redis.TimeoutError))


async def give_up(run: JobRun, job: str, key: str, exc: BaseException, tries: int) -> None:
    log.error("job %s failed permanently for %s after %d tries: %r", job, key, tries, exc)
    try:
        await failures.record(run.context.db, job, key, exc, tries)
    except Exception:  # the failure log must not hide the failure itself
        log.exception("could not store the failure of %s %s", job, key)


async def retry_or_fail(run: JobRun, job: str, key: str, exc: Exception) -> NoReturn:
    """Per-job retry policy: ``Retry`` while transient and tries remain, else record."""
    tries = run.attempt
    limit = run.context.settings.queue.max_tries
    if is_transient(exc) and tries < limit:
        delay = backoff_s(run, tries)
        log.warning(
            "job %s for %s: %s; retry %d in %.2f s", job, key, exc, tries, delay, exc_info=False
        )
        raise Retry(delay) from exc
    await give_up(run, job, key, exc, tries)
    raise exc


async def request_singleton(coord: Coordinator, queue: JobQueue, name: str) -> bool:
    """Ask for one more run of ``name`` that will see everything recorded before now."""
    generation = await coord.generation(name)
    return await queue.enqueue(name, job_id=f"{name}:{generation}")


async def run_singleton(run: JobRun, name: str, body: Callable[[JobRun], Awaitable[Any]]) -> Any:
    """Run ``body`` under the singleton lock, after advancing the generation."""
    coord, _queue = run.follow_ups()
    token = uuid.uuid4().hex
    ttl_ms = int(run.context.settings.queue.job_timeout_s * 1000 + 5_000)
    if not await coord.acquire(name, token, ttl_ms):
        raise Retry(run.lock_poll_s)
    try:
        await coord.advance(name)
        result = await body(run)
    except Exception as exc:
        await _singleton_failed(run, coord, name, exc)
    finally:
        await coord.release(name, token)
    await coord.clear_failures(name)
    return result


async def _singleton_failed(run: JobRun, coord: Coordinator, name: str, exc: Exception) -> NoReturn:
    # job_try also counts lock-busy retries, so singletons count their own failures.
    failures_so_far = await coord.count_failure(name)
    if is_transient(exc) and failures_so_far < run.context.settings.queue.max_tries:
        delay = backoff_s(run, failures_so_far)
        log.warning("singleton %s: %s; retry in %.2f s", name, exc, delay)
        raise Retry(delay) from exc
    await coord.clear_failures(name)
    await give_up(run, name, name, exc, failures_so_far)
    raise exc
