"""Task-queue benchmark (real Redis, real local model, qdrant-client local mode).

Prints, in one run:
1. ``add_note`` latency p50/p99: through the queue (arq and in-process) vs inline embedding;
2. ingest throughput (notes/s) with 1 and 2 arq workers, and embedder calls per 1,000 notes;
3. lag from add to semantically searchable (dense vector upserted), p50/p95, under a
   burst of ``--burst`` adds with 2 workers running.

Workers are arq ``Worker`` objects in this process sharing one AppContext (qdrant local
mode allows one owner per path), each with its own Redis connection.
Run: ``python bench/queue.py [--redis-url redis://127.0.0.1:6379/14] [--burst 1000]``.
"""

# ruff: noqa: E402
from __future__ import annotations

import sys
from pathlib import Path

# This file shares its name with the stdlib ``queue`` (which redis imports): run as a
# script, its folder would come first on sys.path and shadow it.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]

import argparse
import asyncio
import statistics
import tempfile
import time
import uuid
from collections.abc import Sequence
from typing import Any

from arq.worker import Worker
from redis.asyncio import Redis

import mcp_gateway.app as app_module
from mcp_gateway.app import AppContext, open_app
from mcp_gateway.embedders import build_embedder
from mcp_gateway.settings import KiokuSettings
from mcp_gateway.tools_notes import store_note
from workers.settings import worker_settings

TOPICS = ["deploy", "rate limits", "git rebase", "docker builds", "flaky tests", "migrations"]


class CountingEmbedder:
    """Wraps the real embedder; counts document calls."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.calls = inner, 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls += 1
        result: list[list[float]] = await self.inner.embed_documents(texts)
        return result


def text(i: int) -> str:
    topic = TOPICS[i % len(TOPICS)]
    return f"Lesson {i}: with {topic}, check the logs first and write down what fixed it."


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def settings_for(root: Path, redis_url: str | None) -> KiokuSettings:
    return KiokuSettings(
        data_dir=root / uuid.uuid4().hex[:8],
        namespace=f"bench{uuid.uuid4().hex[:8]}",
        redis_url=redis_url,
        index={"backend": "qdrant", "collection": "bench"},
    )


async def add(app: AppContext, i: int) -> str:
    fields = {"text": text(i), "type": "note", "priority": "", "domain": "", "solved_query": ""}
    return (await store_note(app, fields, app.namespaces[0])).id


async def add_latency(settings: KiokuSettings, n: int, run_jobs: bool = True) -> list[float]:
    async with open_app(settings, run_jobs=run_jobs) as app:
        for i in range(10):  # warm-up
            await add(app, i)
        out = []
        for i in range(n):
            began = time.perf_counter()
            await add(app, i)
            out.append((time.perf_counter() - began) * 1000)
        if not settings.redis_url:  # arq: no worker runs in this phase
            await app.jobs.drain()
    return out


def start_workers(settings: KiokuSettings, app: AppContext, n: int) -> list[Worker]:
    return [
        Worker(
            **worker_settings(
                settings, app=app, host=f"bench{i}", handle_signals=False, poll_delay=0.05
            )
        )
        for i in range(n)
    ]


async def run_workers(workers: list[Worker]) -> list[asyncio.Task[None]]:
    return [asyncio.create_task(w.async_run()) for w in workers]


async def stop(workers: list[Worker], tasks: list[asyncio.Task[None]]) -> None:
    for w in workers:
        await w.close()
    await asyncio.gather(*tasks, return_exceptions=True)


async def throughput(settings: KiokuSettings, counter: CountingEmbedder, n: int, k: int) -> str:
    async with open_app(settings) as app:
        for i in range(n):  # queued while no worker runs
            await add(app, i)
        counter.calls = 0
        began = time.perf_counter()
        workers = start_workers(settings, app, k)
        tasks = await run_workers(workers)
        while (await app.notes.counts())["pending_embedding"]:  # noqa: ASYNC110 - polls SQLite
            await asyncio.sleep(0.05)
        elapsed = time.perf_counter() - began
        await app.jobs.drain()
        await stop(workers, tasks)
    return f"{k} worker(s): {n / elapsed:7.1f} notes/s  ({n} notes, {counter.calls} embedder calls)"


async def lag(settings: KiokuSettings, counter: CountingEmbedder, n: int) -> str:
    async with open_app(settings) as app:
        done: dict[str, float] = {}
        upsert = app.index.upsert

        async def timed_upsert(points: Sequence[Any]) -> None:
            await upsert(points)
            now = time.perf_counter()
            done.update({p.payload["source_id"]: now for p in points if p.dense is not None})

        app.index.upsert = timed_upsert  # type: ignore[method-assign]
        workers = start_workers(settings, app, 2)
        tasks = await run_workers(workers)
        counter.calls = 0
        added: dict[str, float] = {}
        began = time.perf_counter()
        for i in range(n):
            added[await add(app, i)] = time.perf_counter()
        burst_s = time.perf_counter() - began
        while len(done) < n:  # noqa: ASYNC110 - a benchmark poll
            await asyncio.sleep(0.05)
        await app.jobs.drain()
        await stop(workers, tasks)
    lags = [(done[i] - t) * 1000 for i, t in added.items()]
    return (
        f"burst of {n} adds in {burst_s:.1f} s, 2 workers: lag to searchable "
        f"p50 {pct(lags, 0.5):.0f} ms, p95 {pct(lags, 0.95):.0f} ms; "
        f"{counter.calls} embedder calls for {n} notes"
    )


async def main(args: argparse.Namespace) -> None:
    real = build_embedder(KiokuSettings().embedder)
    await real.start()
    counter = CountingEmbedder(real)
    app_module.build_embedder = lambda _s: counter  # type: ignore[assignment]
    redis = Redis.from_url(args.redis_url)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        print(f"embedder {real.model_id}; Redis {args.redis_url}")
        for label, url, run_jobs in [
            ("arq queue", args.redis_url, True),
            ("in-process queue", None, True),
            ("inline embedding", None, False),
        ]:
            ms = await add_latency(settings_for(root, url), args.adds, run_jobs)
            print(
                f"add_note {label:17s}: p50 {statistics.median(ms):6.2f} ms  "
                f"p99 {pct(ms, 0.99):6.2f} ms  (n={len(ms)})"
            )
        for k in (1, 2):
            print(await throughput(settings_for(root, args.redis_url), counter, args.burst, k))
        print(await lag(settings_for(root, args.redis_url), counter, args.burst))
    async for key in redis.scan_iter(match="*bench*"):
        await redis.delete(key)
    await redis.aclose()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/14")
    parser.add_argument("--burst", type=int, default=1000)
    parser.add_argument("--adds", type=int, default=200)
    asyncio.run(main(parser.parse_args()))
