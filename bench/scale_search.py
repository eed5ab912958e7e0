"""The whole search at 10k and 100k memories, in the owner's process, as it ships.

For each size: a fresh data dir loaded with N short memories (``peers.py``'s texts and
loader: the model embeds a pool of 500, the rest reuse them with small noise; at or
above ``index.exact_search_below`` it has ``kioku reindex``'s build process make the HNSW
graph, as the owner's graph watcher does by itself), opened as the owner opens it.
Then, in-process
(``SearchService.search``, the daemon's work without the stdio hops): new queries
(each embedded), and the same queries with another ``top`` (a new answer over a cached
embedding). p50 / p95 / p99 ms and each size's ratio to the first.

Issue 12 asks for a search at 100k within 2x of 10k. ``--texts real``: the memories are
the quality sets' real ones (``ingest.real_texts``: numbered copies past their 2,135, so
the lexical channels' postings grow as a real store's do) and the questions the
conversational set's hand-written ones (``peers.real_questions``); the dense vectors are
still the pool's (500 embedded, the rest reused with noise: near-copies, close to random
vectors for the graph). ``--blend`` (with ``--keep``): every distinct memory embedded
and each numbered copy's vector a blend of its memory's and another memory's, the
spread of real text (``hnsw_scale.py --synth blend``). ``--phases`` also prints where a
cached-embedding search's time goes (the index call, the rest); ``bench/scale_channels.py``
splits the index call by channel.

    flock "${TMPDIR:-/tmp}/kioku-bench.lock" python bench/scale_search.py \\
        [--sizes 10000 100000] [--queries 150] [--texts real --keep DIR [--blend]]
"""

# ruff: noqa: E402
from __future__ import annotations

import sys
from pathlib import Path

# this folder never leads sys.path: a bench module must not shadow a library module.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
sys.path.append(str(_HERE))

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from typing import Any

import peers

sys.path.append(str(_HERE))  # peers takes this folder off sys.path again
from ingest import real_texts

from mcp_gateway.common.settings import KiokuSettings
from mcp_gateway.search.service import SearchRequest
from mcp_gateway.services.app import open_app


def pcts(ms: list[float]) -> str:
    ordered = sorted(ms)
    at = [ordered[min(len(ordered) - 1, int(q * len(ordered)))] for q in (0.5, 0.95, 0.99)]
    return " / ".join(f"{v:.2f}" for v in at)


async def measure(
    data: Path,
    n: int,
    queries: list[str],
    texts: str = "template",
    phases: bool = False,
    recall: bool = False,
) -> dict[str, list[float]]:
    if texts != "kept":
        await measure_load(data, n, texts)
    settings = KiokuSettings(data_dir=data)
    async with open_app(settings, run_jobs=False) as app:
        graph = getattr(app.index.current, "graph_points", 0)
        print(f"  {n:,} memories, HNSW graph over {graph:,} points")
        scope = ("default",)
        times: dict[str, list[float]] = {"new query": [], "cached embedding": []}
        index_ms: list[float] = []
        real_call = app.index.search_channels

        async def timed_call(*a: object, **kw: object) -> object:
            t = time.perf_counter()
            try:
                return await real_call(*a, **kw)  # type: ignore[arg-type]
            finally:
                index_ms.append((time.perf_counter() - t) * 1000)

        reads_ms: list[float] = []
        if phases:
            app.index.search_channels = timed_call  # type: ignore[method-assign]
            edge_cache = cache_module()
            real_read = edge_cache.PayloadCache.read

            def timed_read(self: Any, shard: Any, ids: Any) -> Any:
                t = time.perf_counter()
                try:
                    return real_read(self, shard, ids)
                finally:
                    reads_ms.append((time.perf_counter() - t) * 1000)

            edge_cache.PayloadCache.read = timed_read  # type: ignore[method-assign]
        for label, top in (("new query", 5), ("cached embedding", 4)):
            index_ms.clear()
            reads_ms.clear()
            for q in queries:
                t = time.perf_counter()
                await app.search.search(SearchRequest(query=q, top=top, namespaces=scope))
                times[label].append((time.perf_counter() - t) * 1000)
            if phases:
                print(
                    f"  {label}: index calls {len(index_ms)} for {len(queries)} searches, "
                    f"p50 {statistics.median(index_ms):.2f} ms, "
                    f"{sum(index_ms) / len(queries):.2f} ms a search in all; its payload "
                    f"reads p50 {statistics.median(reads_ms):.2f} ms"
                )
        if phases:
            edge_cache.PayloadCache.read = real_read  # type: ignore[method-assign]
            index = app.index.current
            if hasattr(index, "_payloads"):
                mb = await cache_mb(app, queries)
                kept = len(index._payloads._kept["payloads"])
                print(f"  payload cache: {mb:.1f} MB for {kept:,} payloads")
        if recall:
            print(f"  dense channel vs exact search: {await dense_recall(app, queries, n)}")
        return times


async def main(args: argparse.Namespace) -> None:
    pool = peers.real_questions(5) if args.texts == "real" else peers.queries(5)
    queries = pool[: args.queries]
    results: dict[int, dict[str, list[float]]] = {}
    print(f"load {os.getloadavg()[0]:.1f}; {args.texts} texts", flush=True)
    for n in args.sizes:
        if args.keep:  # a data dir kept between runs: loaded once, searched again
            data = Path(args.keep) / f"{args.texts}-{n}{'-blend' if args.blend else ''}"
            if not data.exists():
                await measure_load(data, n, args.texts, args.blend)
            results[n] = await measure(data, n, queries, "kept", args.phases, args.recall)
        else:
            with tempfile.TemporaryDirectory() as tmp:
                results[n] = await measure(
                    Path(tmp) / "data", n, queries, args.texts, args.phases, args.recall
                )
        print(f"  load {os.getloadavg()[0]:.1f}", flush=True)
    first = args.sizes[0]
    print(f"\nin-process search, {len(queries)} queries, ms p50 / p95 / p99 (ratio of p50)")
    for n, times in results.items():
        for label, ms in times.items():
            ratio = statistics.median(ms) / statistics.median(results[first][label])
            print(f"{n:>8,} {label:<17}{pcts(ms):>24}   x{ratio:.2f}")


DISTINCT = 2_135  # the quality sets' memories: ``real_texts`` numbers copies past them


def cache_module() -> Any:
    """The module of the index's payload cache (``edge_types`` in older trees, when
    this bench runs against an older tree)."""
    import importlib

    try:
        return importlib.import_module("mcp_gateway.index.edge_cache")
    except ImportError:
        return importlib.import_module("mcp_gateway.index.edge_types")


async def cache_mb(app: Any, queries: list[str]) -> float:
    """MB the index's payload cache holds once the searches over ``queries`` have run:
    emptied, filled again by them under tracemalloc, then what its module allocated
    and still holds (the payloads, their ids, the cache's own table)."""
    import tracemalloc

    edge_cache = cache_module()
    app.index.current._payloads.changed()
    tracemalloc.start()
    try:
        for q in queries:  # another top: not answered from the answer cache
            await app.search.search(SearchRequest(query=q, top=3, namespaces=("default",)))
        only = [tracemalloc.Filter(True, edge_cache.__file__)]
        stats = tracemalloc.take_snapshot().filter_traces(only).statistics("filename")
        return sum(stat.size for stat in stats) / 1e6
    finally:
        tracemalloc.stop()


async def dense_recall(app: Any, queries: list[str], n: int) -> str:
    """The dense channel's top-10 and top-50 (the search's candidate depth) as the
    search asks for it (every view of the query, each note by its best view) against
    exact search, with the search's filter."""
    from mcp_gateway.common.types import IndexFilter, SparseVector

    index = app.index.current
    flt = IndexFilter(namespaces=("default",), current_only=True)
    at10: list[float] = []
    at50: list[float] = []
    exact_below = index._exact_below
    for q in queries:
        cached = app.search.vectors.cached(q)
        if cached is None:
            continue
        view, more = cached[0][0], cached[0][1:]
        none = SparseVector([], [])
        got = await index.search_channels(view, none, flt, 50, more_dense=more)
        index._exact_below = n + 1
        try:
            exact = await index.search_channels(view, none, flt, 50, more_dense=more)
        finally:
            index._exact_below = exact_below
        found, truth = [h.id for h in got.dense], [h.id for h in exact.dense]
        at10.append(len(set(found[:10]) & set(truth[:10])) / max(1, len(truth[:10])))
        at50.append(len(set(found) & set(truth)) / max(1, len(truth)))
    return (
        f"recall@10 {statistics.mean(at10):.3f}, @50 {statistics.mean(at50):.3f} "
        f"({len(at10)} queries)"
    )


async def measure_load(data: Path, n: int, texts: str, blend: bool = False) -> None:
    if texts == "real" and blend:  # every distinct memory embedded, the rest blends
        await peers._load_kioku(data, real_texts(n), min(n, DISTINCT), blend=True)
    elif texts == "real":
        await peers._load_kioku(data, real_texts(n), 500)
    else:
        await peers._load_kioku(data, peers.memories(n, 1), 500)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    ap.add_argument("--queries", type=int, default=150)
    ap.add_argument("--texts", choices=["template", "real"], default="template")
    ap.add_argument("--phases", action="store_true", help="time the index calls too")
    ap.add_argument(
        "--recall", action="store_true", help="the dense channel's recall@10/@50 vs exact"
    )
    ap.add_argument("--keep", default="", help="a folder to keep the loaded data dirs in")
    ap.add_argument(
        "--blend",
        action="store_true",
        help="with --texts real --keep: every distinct memory embedded, each copy's vector "
        "a blend of its memory's and another's (not noise around 500 vectors)",
    )
    asyncio.run(main(ap.parse_args()))
