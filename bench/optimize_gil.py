"""Does ``EdgeShard.optimize()`` (the HNSW build) hold the GIL when run in a thread?

Loads N 384-d points into a fresh edge shard, then runs ``optimize()`` in a worker
thread while the event loop sleeps 1 ms in a loop; prints how long the build took and
the longest the loop was blocked. A build that released the GIL would leave the loop
blocks at a few ms; one that holds it blocks the loop for the whole build.
Then times exact vs HNSW search on the optimised shard and HNSW's recall@10 against
exact search, for ``--queries`` queries drawn near the stored points.

    flock "${TMPDIR:-/tmp}/kioku-bench.lock" python bench/optimize_gil.py [--n 20000]
"""

# ruff: noqa: E402
from __future__ import annotations

import sys
from pathlib import Path

# this folder never leads sys.path: a bench module must not shadow a library module.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]

import argparse
import tempfile
import time

import anyio
import anyio.to_thread
import numpy as np
import qdrant_edge as qe


async def main(n: int, queries: int, clusters: int) -> None:
    rng = np.random.default_rng(1)
    # Clustered vectors (centres + noise) look more like embeddings of related notes than
    # uniform random ones, which are HNSW's worst case.
    centres = rng.normal(size=(clusters, 384))
    vecs = centres[rng.integers(0, clusters, n)] + rng.normal(0, 0.6, (n, 384))
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    with tempfile.TemporaryDirectory() as tmp:
        cfg = qe.EdgeConfig(
            vectors={"dense": qe.EdgeVectorParams(size=384, distance=qe.Distance.Cosine)}
        )
        shard = qe.EdgeShard.create(tmp, cfg)
        for start in range(0, n, 5000):
            points = [
                qe.Point(i, {"dense": vecs[i].tolist()}, {})
                for i in range(start, min(n, start + 5000))
            ]
            shard.update(qe.UpdateOperation.upsert_points(points))
        longest, stop = 0.0, False

        async def monitor() -> None:
            nonlocal longest
            while not stop:
                t = time.perf_counter()
                await anyio.sleep(0.001)
                longest = max(longest, time.perf_counter() - t - 0.001)

        async with anyio.create_task_group() as tg:
            tg.start_soon(monitor)
            await anyio.sleep(0.05)
            began = time.perf_counter()
            await anyio.to_thread.run_sync(shard.optimize)
            took = time.perf_counter() - began
            stop = True
        print(
            f"N={n:,}: optimize() in a thread took {took:.1f} s; "
            f"longest event-loop block {longest * 1000:.0f} ms"
        )

        qv = vecs[rng.integers(0, n, queries)] + rng.normal(0, 0.3, (queries, 384))
        exact_ms, hnsw_ms, recall = [], [], []
        for q in qv:
            q = (q / np.linalg.norm(q)).tolist()
            res = {}
            for exact in (True, False):
                t = time.perf_counter()
                request = qe.QueryRequest(
                    limit=10,
                    query=qe.Query.Nearest(q, using="dense"),
                    params=qe.SearchParams(exact=exact),
                )
                hits = shard.query(request)
                (exact_ms if exact else hnsw_ms).append((time.perf_counter() - t) * 1000)
                res[exact] = {p.id for p in hits}
            recall.append(len(res[True] & res[False]) / 10)
        shard.close()
    print(
        f"search top-10: exact p50 {np.median(exact_ms):.2f} ms, "
        f"HNSW p50 {np.median(hnsw_ms):.2f} ms, HNSW recall@10 vs exact {np.mean(recall):.3f}"
    )


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, default=20000)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--clusters", type=int, default=500)
    args = ap.parse_args()
    anyio.run(main, args.n, args.queries, args.clusters)
