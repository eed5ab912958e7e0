"""Where a cached-embedding search's index call goes at 10k and 100k: each channel alone.

Opens each data dir given (``--data``; dirs ``scale_search.py --keep`` made), runs the
conversational set's questions through the search twice (the second time over the
cached embedding) and keeps the index call each cached search made. Then replays those
calls on the engine directly, in this thread (no thread hop, no payload read), every
dir and variant round robin per question so all see the same load:

- ``dense ef N``: the query's views through the graph (``view_requests``) at each
  ``--ef``; ``quantized xO`` with the shard's quantized vectors, rescored, oversampled
  ``O`` (``--quantized``; a shard without any ignores it); ``unquantized``: told to
  ignore them. Recall@10 / @limit against exact search of the same views;
- ``bm25`` / ``latent`` (``--sparse``): each sparse request alone, and with each
  ``--sparse-limit`` (the channel's top-k asked of the engine): the full request's
  top-10 / top-k kept, counted by score (numbered copies of a text tie);
- ``batch``: the whole call as the search sends it (dense at ``--batch-ef``).

    python bench/scale_channels.py --data DIR [DIR ...] [--queries 150] \
        [--ef 128 256 352] [--quantized 2] [--sparse] [--repeat 3]
        [--questions distinct --half tune|report]

``--questions distinct``: ``distinct_corpus.py``'s questions, the ``--half`` given.
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
import dataclasses
import os
import statistics
import time
from contextlib import AsyncExitStack
from typing import Any

import peers
import qdrant_edge as qe

from mcp_gateway.common.settings import KiokuSettings
from mcp_gateway.index.base import DENSE, LATENT, SPARSE, sparse_queries
from mcp_gateway.index.edge_types import build_filter, view_requests
from mcp_gateway.search.service import SearchRequest
from mcp_gateway.services.app import open_app


@dataclasses.dataclass
class Call:
    views: list[list[float]]
    sparse: list[tuple[str, Any]]  # (vector name, SparseVector)
    qfilter: Any
    limit: int


async def captured_calls(app: Any, queries: list[str]) -> list[Call]:
    """The index call of each cached-embedding search, as ``EdgeIndex`` builds it."""
    index = app.index.current
    calls: list[Call] = []
    real = app.index.search_channels

    async def keep(dense: Any, sparse: Any, flt: Any, limit: int, **kw: Any) -> Any:
        views = [dense, *kw.get("more_dense", ())] if dense is not None else []
        shard = index._shard
        census = index._census if flt.namespaces and not flt.current_only else None
        everywhere = dataclasses.replace(flt, namespaces=())
        unfiltered = census is not None and census.covered_by(shard, flt.namespaces)
        qfilter = build_filter(everywhere if unfiltered else flt)
        requests = sparse_queries(index.spec, sparse, kw.get("latent"))
        calls.append(Call([list(v) for v in views], requests, qfilter, limit))
        return await real(dense, sparse, flt, limit, **kw)

    for q in queries:  # embedded and cached
        await app.search.search(SearchRequest(query=q, top=5, namespaces=("default",)))
    app.index.search_channels = keep
    try:
        for q in queries:
            await app.search.search(SearchRequest(query=q, top=4, namespaces=("default",)))
    finally:
        app.index.search_channels = real
    return [c for c in calls if c.views]


def dense_requests(call: Call, params: qe.SearchParams, limit: int) -> list[qe.QueryRequest]:
    return view_requests(call.views, DENSE, call.qfilter, params, limit)


def sparse_request(call: Call, name: str, limit: int) -> list[qe.QueryRequest]:
    for using, vec in call.sparse:
        if using == name:
            query = qe.Query.Nearest(
                qe.SparseVector(list(vec.indices), list(vec.values)), using=name
            )
            return [
                qe.QueryRequest(limit=limit, query=query, filter=call.qfilter, with_payload=False)
            ]
    return []


def ids(found: Any) -> list[str]:
    return [str(p.id) for p in found]


def dense_ids(batch: list[Any], limit: int) -> list[str]:
    """The dense top ``limit`` of a batch of view requests (best view per point)."""
    best: dict[str, float] = {}
    for found in batch:
        for p in found:
            best[str(p.id)] = max(best.get(str(p.id), -2.0), p.score)
    return [k for k, _ in sorted(best.items(), key=lambda kv: -kv[1])][:limit]


def overlap(got: list[str], truth: list[str], k: int) -> float:
    return len(set(got[:k]) & set(truth[:k])) / max(1, len(truth[:k]))


def variants_for(args: argparse.Namespace) -> dict[str, Any]:
    """Variant label -> (call -> the requests it sends)."""
    variants: dict[str, Any] = {}
    for ef in args.ef:
        variants[f"dense ef {ef}"] = lambda c, ef=ef: dense_requests(
            c, qe.SearchParams(hnsw_ef=ef), c.limit
        )
        for over in args.quantized:
            q = qe.QuantizationSearchParams(rescore=True, oversampling=over)
            variants[f"dense ef {ef} quantized x{over}"] = lambda c, ef=ef, q=q: dense_requests(
                c, qe.SearchParams(hnsw_ef=ef, quantization=q), c.limit
            )
        if args.unquantized:
            q = qe.QuantizationSearchParams(ignore=True)
            variants[f"dense ef {ef} unquantized"] = lambda c, ef=ef, q=q: dense_requests(
                c, qe.SearchParams(hnsw_ef=ef, quantization=q), c.limit
            )
    for name, label in ((SPARSE, "bm25"), (LATENT, "latent")):
        if args.sparse:
            variants[label] = lambda c, name=name: sparse_request(c, name, c.limit)
        for k in args.sparse_limit:
            variants[f"{label} limit {k}"] = lambda c, name=name, k=k: sparse_request(c, name, k)
    ef0 = args.ef[0] if args.batch_ef is None else args.batch_ef
    variants[f"batch (dense ef {ef0})"] = lambda c: (
        dense_requests(c, qe.SearchParams(hnsw_ef=ef0), c.limit)
        + sparse_request(c, SPARSE, c.limit)
        + sparse_request(c, LATENT, c.limit)
    )
    return variants


async def main(args: argparse.Namespace) -> None:
    if args.questions == "distinct":
        sys.path.append(str(_HERE))  # peers takes this folder off sys.path again
        import distinct_corpus

        queries = distinct_corpus.question_half(args.half)[: args.queries]
    else:
        queries = peers.real_questions(5)[: args.queries]
    variants = variants_for(args)
    async with AsyncExitStack() as stack:
        sides: list[tuple[str, Any, list[Call]]] = []
        for data in args.data:
            settings = KiokuSettings(data_dir=Path(data))
            app = await stack.enter_async_context(open_app(settings, run_jobs=False))
            index = app.index.current
            info = index._shard.info()
            print(
                f"{data}: {info.points_count:,} points, {info.segments_count} segments, "
                f"graph {index.graph_points:,}; load {os.getloadavg()[0]:.1f}",
                flush=True,
            )
            sides.append(
                (
                    f"{Path(data).parent.name}/{Path(data).name}",
                    index._shard,
                    await captured_calls(app, queries),
                )
            )
        times: dict[str, list[float]] = {}
        found: dict[str, list[Any]] = {}
        for _ in range(args.repeat):  # round robin: every side and variant per question
            for i in range(len(sides[0][2])):
                for side, shard, calls in sides:
                    for label, make in variants.items():
                        requests = make(calls[i])
                        if not requests:
                            continue
                        key = f"{side}: {label}"
                        t = time.perf_counter()
                        batch = shard.query_batch(qe.QueryBatchRequest(requests))
                        times.setdefault(key, []).append((time.perf_counter() - t) * 1000)
                        if len(found.setdefault(key, [])) < len(calls):
                            found[key].append(batch)
        exact_p = qe.SearchParams(exact=True)
        truth = {
            side: [
                dense_ids(
                    shard.query_batch(qe.QueryBatchRequest(dense_requests(c, exact_p, c.limit))),
                    c.limit,
                )
                for c in calls
            ]
            for side, shard, calls in sides
        }
        n_calls, load = len(sides[0][2]), os.getloadavg()[0]
        print(f"{n_calls} cached-embedding calls x{args.repeat}; load {load:.1f}")
        print(f"{'variant':<52}{'p50':>8}{'p95':>8}   agreement @10 / @limit")
        for key, ms in times.items():
            side, label = key.split(": ", 1)
            ordered = sorted(ms)
            p95 = ordered[int(0.95 * len(ordered))]
            agree = ""
            calls = next(c for s, _, c in sides if s == side)
            if label.startswith("dense"):
                got = [dense_ids(b, c.limit) for b, c in zip(found[key], calls, strict=True)]
                agree = "recall vs exact " + score(got, truth[side])
            elif " limit " in label:
                base = f"{side}: " + label.split(" limit ")[0]
                got_s = [[p.score for p in b[0]] for b in found[key]]
                full_s = [[p.score for p in b[0]] for b in found[base]]
                agree = "kept of the full top (by score) " + tie_score(got_s, full_s)
            print(f"{key:<52}{statistics.median(ms):>8.2f}{p95:>8.2f}   {agree}")


def score(got: list[list[str]], truth: list[list[str]]) -> str:
    at10 = statistics.mean(overlap(g, t, 10) for g, t in zip(got, truth, strict=True))
    at_all = statistics.mean(overlap(g, t, len(t)) for g, t in zip(got, truth, strict=True))
    return f"{at10:.3f} / {at_all:.3f}"


def tie_score(got: list[list[float]], truth: list[list[float]]) -> str:
    """Top-10 and top-``len(got)`` kept, counted by score: numbered copies of a text tie
    in both sparse channels, and the engine breaks ties either way."""

    def kept(g: list[float], t: list[float], k: int) -> float:
        k = min(k, len(t))
        if not k:
            return 1.0
        return min(k, sum(1 for s in g[:k] if s >= t[k - 1] - 1e-6)) / k

    at10 = statistics.mean(kept(g, t, 10) for g, t in zip(got, truth, strict=True))
    at_k = statistics.mean(kept(g, t, len(g)) for g, t in zip(got, truth, strict=True))
    return f"{at10:.3f} / {at_k:.3f}"


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--data", nargs="+", required=True, help="data dirs scale_search.py --keep made"
    )
    ap.add_argument("--queries", type=int, default=150)
    ap.add_argument("--ef", type=int, nargs="+", default=[352])
    ap.add_argument("--batch-ef", type=int, default=None)
    ap.add_argument("--quantized", type=float, nargs="*", default=[], help="oversampling")
    ap.add_argument("--unquantized", action="store_true", help="also ignore quantization")
    ap.add_argument("--sparse", action="store_true", help="each sparse channel alone too")
    ap.add_argument("--sparse-limit", type=int, nargs="*", default=[])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--questions", choices=["real", "distinct"], default="real")
    ap.add_argument("--half", choices=["tune", "report", "all"], default="report")
    asyncio.run(main(ap.parse_args()))
