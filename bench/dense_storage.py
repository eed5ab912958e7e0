"""How the embedded engine stores dense vectors, and what each storage costs a search.

A bare qdrant-edge shard per storage (``float32``, ``float16``, ``turbo16``, ``turbo8``)
holding the same N points: the bundled e5 model's real vectors of bench/quality's
memories and queries (its embedding cache; ``bench/quality/embcache.py`` fills it),
tiled to N with Gaussian noise (sigma 0.02 per dimension) and renormalised. Each query
(a real vector plus a little noise) runs as the search path runs it over a cached
embedding: two exact dense views in one ``query_batch``, top 50, no payload. Printed per
storage: p50 / p95 of that call, recall@10 and @50 of the first view against float32,
and the largest score difference from float32 on the points both returned (the ranking's
thresholds and fusion read scores, not only the order). Storages run interleaved query
by query, so machine noise falls on all of them alike.

    flock "${TMPDIR:-/tmp}/kioku-bench.lock" python bench/dense_storage.py [--n 10000]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import uuid
from pathlib import Path

import numpy as np
import qdrant_edge as qe

from mcp_gateway.index.edge_types import int_id

CACHE = Path(__file__).resolve().parent / "quality" / ".cache" / "vectors-original.npz"
STORAGES = {
    "float32": qe.VectorStorageDatatype.Float32,
    "float16": qe.VectorStorageDatatype.Float16,
    "turbo16": qe.VectorStorageDatatype.Turbo16,
    "turbo8": qe.VectorStorageDatatype.Turbo8,
}


def unit(m: np.ndarray) -> np.ndarray:
    out: np.ndarray = (m / np.linalg.norm(m, axis=1, keepdims=True)).astype(np.float32)
    return out


def shard(root: Path, storage: str, points: np.ndarray) -> qe.EdgeShard:
    params = qe.EdgeVectorParams(
        size=points.shape[1], distance=qe.Distance.Cosine, datatype=STORAGES[storage]
    )
    s = qe.EdgeShard.create(str(root / storage), qe.EdgeConfig(vectors={"dense": params}))
    for start in range(0, len(points), 1000):
        batch = range(start, min(len(points), start + 1000))
        s.update(
            qe.UpdateOperation.upsert_points(
                [qe.Point(uuid.UUID(int=i + 1), {"dense": points[i].tolist()}, {}) for i in batch]
            )
        )
    return s


def search(s: qe.EdgeShard, q: np.ndarray) -> tuple[float, dict[int, float]]:
    requests = [
        qe.QueryRequest(
            limit=50,
            query=qe.Query.Nearest(q.tolist(), using="dense"),
            with_payload=False,
            params=qe.SearchParams(exact=True),
        )
        for _ in range(2)  # the search path's two query views
    ]
    t = time.perf_counter()
    found = s.query_batch(qe.QueryBatchRequest(requests))
    ms = (time.perf_counter() - t) * 1000
    return ms, {int_id(p.id): p.score for p in found[0]}


def top(scores: dict[int, float], k: int) -> set[int]:
    return set(sorted(scores, key=lambda i: scores[i], reverse=True)[:k])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    data = np.load(CACHE)
    real = np.stack([data[k] for k in data.files]).astype(np.float32)
    rng = np.random.default_rng(3)
    points = real[rng.integers(0, len(real), args.n)]
    points = unit(points + rng.normal(scale=0.02, size=points.shape).astype(np.float32))
    points[: min(len(real), args.n)] = real[: args.n]
    queries = real[rng.integers(0, len(real), args.queries)]
    queries = unit(queries + rng.normal(scale=0.03, size=queries.shape).astype(np.float32))
    with tempfile.TemporaryDirectory() as tmp:
        shards = {name: shard(Path(tmp), name, points) for name in STORAGES}
        times: dict[str, list[float]] = {name: [] for name in STORAGES}
        found: dict[str, list[dict[int, float]]] = {name: [] for name in STORAGES}
        for r in range(args.rounds):
            for q in queries:
                for name, s in shards.items():
                    ms, scores = search(s, q)
                    times[name].append(ms)
                    if r == 0:
                        found[name].append(scores)
        for s in shards.values():
            s.close()
    print(f"{args.n} real e5 vectors (tiled), {args.queries} queries x {args.rounds}, two views")
    print(f"{'storage':<9}{'p50 / p95 ms':>16}{'ratio':>7}{'R@10':>8}{'R@50':>8}{'max |ds|':>11}")
    base = statistics.median(times["float32"])
    for name in STORAGES:
        pairs = list(zip(found["float32"], found[name], strict=True))
        r10 = np.mean([len(top(a, 10) & top(b, 10)) / 10 for a, b in pairs])
        r50 = np.mean([len(set(a) & set(b)) / 50 for a, b in pairs])
        err = max(abs(a[i] - b[i]) for a, b in pairs for i in a.keys() & b.keys())
        p50, p95 = statistics.median(times[name]), float(np.percentile(times[name], 95))
        print(
            f"{name:<9}{f'{p50:.2f} / {p95:.2f}':>16}{p50 / base:>7.2f}"
            f"{r10:>8.3f}{r50:>8.3f}{err:>11.1e}"
        )


if __name__ == "__main__":
    main()
