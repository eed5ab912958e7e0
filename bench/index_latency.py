"""Index latency: qdrant-edge vs qdrant-client local mode, side by side.

Loads N points (384-d random unit vectors + sparse vectors of synthetic text) into both
backends, each in a fresh temporary directory, and prints upsert throughput and
``search()`` latency (both channels in one call) unfiltered and with a type filter.

    python bench/index_latency.py                 # N = 1000 10000
    python bench/index_latency.py --n 100000 --local-max 10000

Random vectors are the worst case for HNSW, but every size here below
``exact_search_below`` is searched exactly anyway; edge builds no HNSW unless optimised.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
import uuid
from pathlib import Path

import numpy as np

from mcp_gateway.common.types import IndexFilter, IndexPoint
from mcp_gateway.index.base import Index, IndexSpec
from mcp_gateway.index.edge import EdgeIndex
from mcp_gateway.index.qdrant import open_qdrant_index
from mcp_gateway.indexing.lexical import sparse_document, sparse_query

TYPES = ("note", "lesson", "conclusion", "knowledge", "profile", "checkpoint")


def make_vocab(rng: np.random.Generator, size: int = 5000) -> list[str]:
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    return ["".join(rng.choice(letters, rng.integers(3, 10))) for _ in range(size)]


def make_texts(rng: np.random.Generator, vocab: list[str], n: int, lo: int, hi: int) -> list[str]:
    # Zipf-like word frequencies, as in real prose: a few very common terms, a long tail.
    ranks = np.arange(1, len(vocab) + 1)
    probs = 1.0 / ranks
    probs /= probs.sum()
    return [
        " ".join(vocab[i] for i in rng.choice(len(vocab), rng.integers(lo, hi), p=probs))
        for _ in range(n)
    ]


def unit_vectors(rng: np.random.Generator, n: int, dim: int) -> np.ndarray:
    v = rng.standard_normal((n, dim)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def pct(samples: list[float], q: float) -> float:
    return float(np.percentile(np.array(samples) * 1000.0, q))


async def run_backend(
    index: Index,
    points: list[IndexPoint],
    queries: list[tuple[list[float], str]],
    batch: int,
) -> dict[str, float]:
    t0 = time.perf_counter()
    for i in range(0, len(points), batch):
        await index.upsert(points[i : i + batch])
    upsert_s = time.perf_counter() - t0
    out = {"upsert pts/s": len(points) / upsert_s}
    for label, flt in (("", IndexFilter()), (" type", IndexFilter(types=("lesson",)))):
        lat: list[float] = []
        for dense, text in queries:
            t = time.perf_counter()
            await index.search(dense, sparse_query(text), flt, 10)
            lat.append(time.perf_counter() - t)
        for q in (50, 95, 99):
            out[f"search{label} p{q} ms"] = pct(lat, q)
    return out


async def bench_size(n: int, args: argparse.Namespace) -> dict[str, dict[str, float]]:
    rng = np.random.default_rng(n)
    vocab = make_vocab(rng)
    texts = make_texts(rng, vocab, n, 20, 80)
    vecs = unit_vectors(rng, n, args.dim)
    points = [
        IndexPoint(
            id=str(uuid.uuid4()),
            payload={"kind": "note", "type": TYPES[i % len(TYPES)], "namespace": "default"},
            sparse=sparse_document(texts[i]),
            dense=vecs[i].tolist(),
        )
        for i in range(n)
    ]
    qvecs = unit_vectors(rng, args.queries, args.dim)
    qtexts = make_texts(rng, vocab, args.queries, 2, 6)
    queries = [(qvecs[i].tolist(), qtexts[i]) for i in range(args.queries)]
    results: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        spec = IndexSpec(collection="bench", dim=args.dim, model_id="random")
        edge = EdgeIndex(spec, Path(tmp) / "edge", exact_search_below=args.exact_below)
        await edge.open()
        try:
            results["edge"] = await run_backend(edge, points, queries, args.batch)
        finally:
            await edge.close()
        if n <= args.local_max:
            local = await open_qdrant_index(spec, None, Path(tmp) / "local", None)
            try:
                results["local"] = await run_backend(local, points, queries, args.batch)
            finally:
                await local.close()
    return results


def print_table(n: int, res: dict[str, dict[str, float]]) -> None:
    edge, local = res["edge"], res.get("local")
    print(f"\nN = {n}")
    print(f"{'metric':<24}{'edge':>12}{'local':>12}{'edge/local':>12}")
    for key, e in edge.items():
        loc = f"{local[key]:12.2f}" if local else f"{'skipped':>12}"
        ratio = f"{e / local[key]:12.3f}" if local else f"{'':>12}"
        print(f"{key:<24}{e:12.2f}{loc}{ratio}")


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, nargs="+", default=[1000, 10000])
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--dim", type=int, default=384)
    ap.add_argument("--batch", type=int, default=256, help="points per upsert call")
    ap.add_argument("--exact-below", type=int, default=20_000)
    ap.add_argument(
        "--local-max", type=int, default=10_000, help="skip qdrant-client local mode above this N"
    )
    args = ap.parse_args()
    print(
        f"dim={args.dim} queries={args.queries} batch={args.batch} top=10; "
        "search = dense + sparse in one call; type filter keeps 1/6 of points"
    )
    for n in args.n:
        print_table(n, await bench_size(n, args))


if __name__ == "__main__":
    asyncio.run(main())
