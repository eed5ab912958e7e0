"""Search latency at 10k and 100k memories: exact scan vs the HNSW graph the build
process makes (``rebuild/build.py``), on real e5 vectors; plus the graph's build time and
its recall@10 against exact search.

Vectors: the bundled e5 model embeds the ~1k real memories of bench/quality/data
(documents) and its queries (queries, 200 of them). A collection of N points tiles the
memories: copy k of memory i is its vector plus Gaussian noise (sigma per dimension,
0.02 by default, i.e. a noise vector of norm ~0.4 against unit vectors), renormalised --
"paraphrases" of real memories, so neighbourhoods look like real ones rather than like
random vectors (HNSW's worst case). Each point carries the payload the search path
filters on; every search uses the owner's usual filter (namespace, current only).

``--texts all --synth blend`` (real text, no tiled copies): the vectors of all three
quality sets' memories (2,399: assistant notes, conversation turns, held-out notes;
en/ja/th) and their 1,047 questions, embedded by the bundled e5 model; point k past the
real ones is a blend of two real memories, ``normalise(l * a + (1 - l) * b)`` with ``l``
uniform in [0.5, 1] and ``b`` random: a note that is mostly about ``a`` and partly about
``b``, so neighbourhoods are spread along real directions instead of 40 near-identical
copies around each real note (the tiled set's worst case for a graph's recall). Embedding
100k real notes with e5 on 2 cores would take ~1 hour; the blends are the documented
stand-in.

``--synth distinct``: no copies at all: the first N texts of ``distinct_corpus.py``'s
corpus (100k+ distinct docstring and comment paragraphs and the quality sets' memories,
each embedded by e5; ``--int8``: the ``int8_documents`` vectors) and its questions'
tuning half (``--half``: even positions tune, odd ones report).

The graph is built here, in-process, with the build process's own code and settings
(``EdgeIndex.build_graph`` with ``BUILD_OPTIMIZERS`` and ``BUILD_HNSW``); the time printed
is that build (``optimize``) alone, not the upserts.

    flock "${TMPDIR:-/tmp}/kioku-bench.lock" python bench/hnsw_scale.py [--n 10000 100000]
        [--texts all --synth blend] [--m 16 --ef-construct 128] [--ef 64 128 256 512]
"""

# ruff: noqa: E402
from __future__ import annotations

import sys
from pathlib import Path

# this folder never leads sys.path: a bench module must not shadow a library module.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]

import argparse
import json
import os
import tempfile
import time
import uuid

import anyio
import numpy as np

from mcp_gateway.common.sections import EmbedderSettings
from mcp_gateway.common.types import IndexFilter, IndexPoint, SparseVector
from mcp_gateway.embedders import build_embedder
from mcp_gateway.index.base import IndexSpec
from mcp_gateway.index.edge import EdgeIndex
from mcp_gateway.index.edge_shard import STORAGE
from mcp_gateway.rebuild.build import BUILD_HNSW, BUILD_OPTIMIZERS, BUILD_QUANTIZATION

CACHE = Path(tempfile.gettempdir()) / "kioku-hnsw-bench-vectors.npz"
FILTER = IndexFilter(namespaces=("default",), current_only=True)
EMPTY = SparseVector((), ())


SETS = {"data": ["data"], "all": ["data", "conv", "heldout"]}


async def real_vectors(queries: int, texts: str = "data") -> tuple[np.ndarray, np.ndarray]:
    cache = CACHE if texts == "data" else CACHE.with_name(f"{CACHE.stem}-{texts}.npz")
    if cache.exists():
        got = np.load(cache)
        return got["docs"], got["queries"][:queries]
    mems, qs = [], []
    for name in SETS[texts]:
        folder = _HERE / "quality" / name
        mems += [json.loads(x) for x in (folder / "memories.jsonl").read_text().splitlines()]
        qs += [json.loads(x) for x in (folder / "queries.jsonl").read_text().splitlines()]
    if texts != "data":  # every set's questions, mixed
        np.random.default_rng(3).shuffle(qs)  # type: ignore[arg-type]
    embedder = build_embedder(EmbedderSettings())
    await embedder.start()
    try:
        docs = await embedder.embed_documents([m["text"] for m in mems])
        qv = [await embedder.embed_query(q["query"]) for q in qs[: max(200, queries)]]
    finally:
        await embedder.aclose()
    np.savez(cache, docs=np.array(docs, np.float32), queries=np.array(qv, np.float32))
    return np.array(docs, np.float32), np.array(qv, np.float32)[:queries]


def blend(docs: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """Point k: the real memory k % len(docs), blended with a random other one (the
    module's docstring); the first len(docs) points are the real ones."""
    a = docs[np.arange(n) % len(docs)]
    b = docs[rng.integers(0, len(docs), n)]
    share = rng.uniform(0.5, 1.0, (n, 1)).astype(np.float32)
    mixed = share * a + (1 - share) * b
    mixed[: len(docs)] = docs[: min(n, len(docs))]
    out: np.ndarray = mixed / np.linalg.norm(mixed, axis=1, keepdims=True)
    return out


def tile(docs: np.ndarray, n: int, sigma: float, rng: np.random.Generator) -> np.ndarray:
    base = docs[np.arange(n) % len(docs)]
    noisy = base + rng.normal(0, sigma, base.shape).astype(np.float32)
    noisy[: len(docs)] = docs[: min(n, len(docs))]  # the originals themselves
    out: np.ndarray = noisy / np.linalg.norm(noisy, axis=1, keepdims=True)
    return out


async def distinct_vectors(n: int, int8: bool, half: str) -> tuple[np.ndarray, np.ndarray]:
    """The distinct corpus's first ``n`` vectors and its questions' ``half``, embedded
    as queries (cached beside the corpus)."""
    sys.path.append(str(_HERE))
    import distinct_corpus as dc

    texts = [r["text"] for r in dc.load_rows()][:n]
    have = dc.kept(int8)
    docs = np.array([have[t][0] for t in texts], np.float32)
    qs = dc.question_half(half)
    cache = dc.OUT / f"queries-{half}.npy"
    if cache.exists():
        return docs, np.load(cache)
    embedder = build_embedder(EmbedderSettings())
    await embedder.start()
    try:
        qv = np.array([await embedder.embed_query(q) for q in qs], np.float32)
    finally:
        await embedder.aclose()
    np.save(cache, qv)
    return docs, qv


LIMIT = 10  # the top asked of the index (--limit)


async def timed(
    index: EdgeIndex, qv: np.ndarray, flt: IndexFilter = FILTER
) -> tuple[list[float], list[list[str]]]:
    lat, tops = [], []
    for q in qv:
        t = time.perf_counter()
        hits, _ = await index.search(q.tolist(), EMPTY, flt, LIMIT)
        lat.append((time.perf_counter() - t) * 1000)
        tops.append([h.id for h in hits])
    return lat, tops


def pcts(lat: list[float]) -> str:
    return " / ".join(f"{np.percentile(lat, q):.2f}" for q in (50, 95, 99))


async def bench(
    n: int, docs: np.ndarray, qv: np.ndarray, args: argparse.Namespace, storage: str
) -> None:
    rng = np.random.default_rng(n)
    if args.synth == "distinct":
        vecs = docs[:n]
    else:
        vecs = blend(docs, n, rng) if args.synth == "blend" else tile(docs, n, args.sigma, rng)
    with tempfile.TemporaryDirectory() as tmp:
        spec = IndexSpec("bench", vecs.shape[1], "e5")
        hnsw = BUILD_HNSW  # what the build process uses, unless overridden
        if args.m or args.ef_construct:
            import qdrant_edge as qe

            hnsw = qe.HnswIndexConfig(
                m=args.m or BUILD_HNSW.m,
                ef_construct=args.ef_construct or BUILD_HNSW.ef_construct,
                full_scan_threshold=10_000,
            )
        index = EdgeIndex(
            spec,
            Path(tmp),
            optimizers=BUILD_OPTIMIZERS,
            hnsw=hnsw,
            dense_storage=storage,
            quantization=BUILD_QUANTIZATION,  # what the build process makes
        )
        await index.open()
        try:
            ids = [str(uuid.uuid4()) for _ in range(n)]
            source = {pid: i % len(docs) for i, pid in enumerate(ids)}  # copy -> its memory
            for start in range(0, n, 2000):
                await index.upsert(
                    [
                        IndexPoint(
                            ids[i],
                            {"kind": "note", "namespace": "default", "visible": "default"},
                            EMPTY,
                            vecs[i].tolist(),
                        )
                        for i in range(start, min(n, start + 2000))
                    ]
                )
            index._exact_below = n + 1  # exact scan (what kioku does today)
            await timed(index, qv[:20])  # warm-up
            exact_lat, exact_top = await timed(index, qv)
            t = time.perf_counter()
            await index.build_graph()
            build_s = time.perf_counter() - t
            print(f"\nN = {n:,}, {storage}: graph build (optimize) {build_s:.1f} s, hnsw {hnsw}")
            print(
                f"{f'search top-{LIMIT}':<22}{'p50 / p95 / p99 ms':>26}{'recall@10':>12}"
                f"{'memories':>10}{f'@{LIMIT}':>8}"
            )
            print(f"{'exact':<22}{pcts(exact_lat):>26}{1.0:>12.3f}{1.0:>10.3f}{1.0:>8.3f}")
            index._exact_below = 0
            for ef in args.ef:
                index._hnsw_ef = ef
                await timed(index, qv[:20])
                lat, top = await timed(index, qv, FILTER if args.filter else IndexFilter())
                recall = np.mean(
                    [
                        len(set(a[:10]) & set(b[:10])) / 10
                        for a, b in zip(top, exact_top, strict=True)
                    ]
                )
                at_limit = np.mean(
                    [len(set(a) & set(b)) / len(b) for a, b in zip(top, exact_top, strict=True)]
                )
                # the copies of one memory are interchangeable answers: the share of the
                # exact top-10's memories that the graph's top-10 also returns
                mem = np.mean(
                    [
                        len({source[x] for x in a} & {source[x] for x in b})
                        / len({source[x] for x in b})
                        for a, b in zip(top, exact_top, strict=True)
                    ]
                )
                print(
                    f"{f'HNSW ef={ef}':<22}{pcts(lat):>26}{recall:>12.3f}{mem:>10.3f}"
                    f"{at_limit:>8.3f}"
                )
        finally:
            await index.close()


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, nargs="+", default=[10_000, 100_000])
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--sigma", type=float, default=0.02)
    ap.add_argument("--ef", type=int, nargs="+", default=[64, 128, 256])
    ap.add_argument("--m", type=int, default=0, help="graph build m (0: BUILD_HNSW's)")
    ap.add_argument(
        "--ef-construct", type=int, default=0, help="graph build ef_construct (0: BUILD_HNSW's)"
    )
    ap.add_argument(
        "--no-filter", dest="filter", action="store_false", help="HNSW searches unfiltered"
    )
    ap.add_argument(
        "--storage",
        nargs="+",
        default=["turbo16"],
        choices=sorted(STORAGE),
        help="dense vector storages to compare (round 15: turbo16 ships)",
    )
    ap.add_argument("--texts", choices=sorted(SETS), default="data", help="whose memories")
    ap.add_argument(
        "--synth",
        choices=["tile", "blend", "distinct"],
        default="tile",
        help="points past the real ones; distinct: distinct_corpus.py's texts, no copies",
    )
    ap.add_argument("--int8", action="store_true", help="distinct: the int8 document vectors")
    ap.add_argument("--half", choices=["tune", "report", "all"], default="tune")
    ap.add_argument("--limit", type=int, default=10, help="the top asked (recall @10 and @it)")
    args = ap.parse_args()
    global LIMIT
    LIMIT = args.limit
    if args.synth == "distinct":
        docs, qv = await distinct_vectors(max(args.n), args.int8, args.half)
        qv = qv[: args.queries]
    else:
        docs, qv = await real_vectors(args.queries, args.texts)
    how = {"tile": f"tiled with sigma={args.sigma}", "blend": "blended in pairs"}.get(
        args.synth, "distinct texts, no copies"
    )
    whose = "the distinct corpus" if args.synth == "distinct" else args.texts
    print(f"{len(docs)} real e5 memory vectors ({whose}) {how}; {len(qv)} queries")
    print(f"load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    for n in args.n:
        for storage in args.storage:
            await bench(n, docs, qv, args, storage)


if __name__ == "__main__":
    anyio.run(main)
