"""Server-side search and add latency at N notes: embedded default vs qdrant-client local.

Loads N synthetic notes (texts from templates, ``data/note_templates.json``; dense
vectors from the real embedder for a pool of distinct texts, reused with small noise
beyond the pool so 100k loads in minutes, not hours), then times
``SearchService.search`` (the whole search path: query embedding, one index round
trip, one SQLite read, ranking) and ``add_note``'s server path. Both backends run in
the same process, one after the other.

    python bench/latency.py --sizes 1000 10000 [--local-max 10000] [--queries 300]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import sys
import time
from pathlib import Path

import numpy as np
from ulid import ULID

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from harness import add, local, summary, templates, timed_searches  # noqa: E402

from mcp_gateway.common.types import Note  # noqa: E402
from mcp_gateway.indexing.points import note_point  # noqa: E402
from mcp_gateway.services.app import AppContext  # noqa: E402

WORDS = templates("latency")
TYPES = WORDS["types"]


def text_for(i: int, rng: random.Random) -> str:
    subject, verb, object = (rng.choice(WORDS[k]) for k in ("subjects", "verbs", "objects"))
    return f"{subject} {verb} {object} (#{i})"


async def load(app: AppContext, n: int, pool: np.ndarray, rng: random.Random) -> float:
    started = time.perf_counter()
    noise = np.random.default_rng(7)
    now = time.time()
    for start in range(0, n, 2000):
        notes, points = [], []
        for i in range(start, min(n, start + 2000)):
            base = pool[i % len(pool)] + noise.normal(0, 0.02, pool.shape[1])
            vec = (base / np.linalg.norm(base)).astype(np.float32)
            ts = now - (n - i)
            note = Note(
                id=str(ULID()),
                text=text_for(i, rng),
                type=TYPES[i % 5],
                created_at=ts,
                updated_at=ts,
                embedded_model=app.embedder.model_id,
            )
            notes.append(note)
            points.append(note_point(note, vec.tolist()))
        await app.db.transaction(
            lambda c, notes=notes: c.executemany(
                "INSERT INTO notes (id, text, type, priority, domain, solved_query, namespace, "
                "created_at, updated_at, deleted, embedded_model) VALUES (?,?,?,?,?,?,?,?,?,0,?)",
                [
                    (
                        x.id,
                        x.text,
                        x.type,
                        x.priority,
                        x.domain,
                        x.solved_query,
                        x.namespace,
                        x.created_at,
                        x.updated_at,
                        x.embedded_model,
                    )
                    for x in notes
                ],
            )
        )
        await app.index.upsert(points)
    return n / (time.perf_counter() - started)


async def time_adds(app: AppContext, count: int, rng: random.Random) -> list[float]:
    out = []
    for i in range(count):
        text = text_for(10**7 + i, rng)
        t = time.perf_counter()
        await add(app, text, app.settings.namespace)
        out.append((time.perf_counter() - t) * 1000)
    await app.settle()
    return out


async def run_backend(backend: str, n: int, pool: np.ndarray, args: argparse.Namespace) -> dict:
    rng = random.Random(n)
    async with local(run_jobs=not args.inline_add, index={"backend": backend}) as app:
        rate = await load(app, n, pool, rng)
        uncached = [text_for(10**6 + i, rng) for i in range(args.queries)]
        cold = await timed_searches(app, uncached)
        warm = await timed_searches(app, uncached)  # same queries: embedding cached
        adds = await time_adds(app, args.adds, rng)
    return {"load": rate, "cold": cold, "warm": warm, "adds": adds}


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    ap.add_argument(
        "--local-max",
        type=int,
        default=10000,
        help="skip qdrant-client local mode above this N (it is O(N) per query)",
    )
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--adds", type=int, default=200)
    ap.add_argument("--pool", type=int, default=500, help="distinct embedded texts")
    ap.add_argument("--inline-add", action="store_true", help="embed inside add_note")
    args = ap.parse_args()

    from mcp_gateway.common.sections import EmbedderSettings
    from mcp_gateway.embedders import build_embedder

    embedder = build_embedder(EmbedderSettings())
    await embedder.start()
    rng = random.Random(1)
    pool = np.array(await embedder.embed_documents([text_for(i, rng) for i in range(args.pool)]))
    await embedder.aclose()

    print(
        f"embedder {embedder.model_id}; server-side timings; add mode: "
        f"{'inline embedding' if args.inline_add else 'jobs (in-process runner)'}"
    )
    for n in args.sizes:
        results = {"edge": await run_backend("edge", n, pool, args)}
        if n <= args.local_max:
            results["qdrant-local"] = await run_backend("qdrant", n, pool, args)
        print(f"\n== N = {n:,} notes ==")
        for name, r in results.items():
            print(f"{name:13s} load {r['load']:8.0f} notes/s")
            print(f"{name:13s} search, new query   {summary(r['cold'])}")
            print(f"{name:13s} search, cached emb. {summary(r['warm'])}")
            print(f"{name:13s} add_note            {summary(r['adds'])}")
        if "qdrant-local" in results:
            e, q = results["edge"], results["qdrant-local"]
            ratio = statistics.median(q["warm"]) / statistics.median(e["warm"])
            print(f"ratio qdrant-local / edge, cached search p50: {ratio:.1f}x")


if __name__ == "__main__":
    asyncio.run(main())
