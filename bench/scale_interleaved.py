"""The whole search on several kept data dirs at once, interleaved per question.

``scale_search.py`` times one size after the other, a phase of 150 searches each: on a
shared machine a burst of load lands on one phase and moves a 100k / 10k ratio by 2x.
Here every data dir given (``--data``; dirs ``scale_search.py --keep`` made, e.g. 10k,
100k, and 100k built another way) is open in this process, and each question goes to
every dir in turn (the order rotating): first as a new query (each dir's search embeds
it), then ``--repeat`` times over the cached embedding (another ``top`` each time: a
new answer, not the answer cache). p50 / p95 per dir and phase, and each dir's ratio
to the first. ``--warm N``: N other questions through every dir before any is timed.

    python bench/scale_interleaved.py --data DIR10K DIR100K [DIR100K_OTHER] \\
        [--queries 150] [--repeat 3] [--warm 150] [--questions distinct]

``--questions distinct``: ``distinct_corpus.py``'s reporting half (real questions and
ones written from corpus paragraphs), the warm-up from its tuning half.
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
import time
from contextlib import AsyncExitStack
from typing import Any

import peers

from mcp_gateway.common.settings import KiokuSettings
from mcp_gateway.search.service import SearchRequest
from mcp_gateway.services.app import open_app


def pcts(ms: list[float]) -> tuple[float, float]:
    ordered = sorted(ms)
    return statistics.median(ms), ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]


async def main(args: argparse.Namespace) -> None:
    if args.questions == "distinct":
        sys.path.append(str(_HERE))  # peers takes this folder off sys.path again
        import distinct_corpus

        queries = distinct_corpus.question_half("report")[: args.queries]
        warm = distinct_corpus.question_half("tune")[: args.warm]
    else:
        queries = peers.real_questions(5)[: args.queries]
        warm = peers.real_questions(5)[args.queries : args.queries + args.warm]
    async with AsyncExitStack() as stack:
        apps: list[tuple[str, Any]] = []
        for data in args.data:
            app = await stack.enter_async_context(
                open_app(KiokuSettings(data_dir=Path(data)), run_jobs=False)
            )
            apps.append((f"{Path(data).parent.name}/{Path(data).name}", app))
        # --warm: other questions first, every dir (pages a search reads made resident)
        for q in warm:
            for _, app in apps:
                await app.search.search(SearchRequest(query=q, top=5, namespaces=("default",)))
        print(f"load {os.getloadavg()[0]:.1f}; {len(warm)} questions to warm up", flush=True)
        times: dict[tuple[str, str], list[float]] = {}
        scope = ("default",)

        async def timed(label: str, phase: str, app: Any, q: str, top: int) -> None:
            t = time.perf_counter()
            await app.search.search(SearchRequest(query=q, top=top, namespaces=scope))
            times.setdefault((label, phase), []).append((time.perf_counter() - t) * 1000)

        for i, q in enumerate(queries):
            order = apps[i % len(apps) :] + apps[: i % len(apps)]
            for label, app in order:
                await timed(label, "new query", app, q, 5)
            for rep in range(args.repeat):
                for label, app in order:
                    await timed(label, "cached embedding", app, q, 4 - rep % 4)
        print(f"load {os.getloadavg()[0]:.1f}; {len(queries)} questions, ms p50 / p95")
        first = apps[0][0]
        for phase in ("new query", "cached embedding"):
            base = statistics.median(times[(first, phase)])
            for label, _ in apps:
                p50, p95 = pcts(times[(label, phase)])
                print(f"  {phase:<17}{label:<44}{p50:>8.2f} / {p95:<8.2f} x{p50 / base:.2f}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--data", nargs="+", required=True, help="data dirs scale_search.py --keep made"
    )
    ap.add_argument("--queries", type=int, default=150)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--warm", type=int, default=0, help="other questions searched first")
    ap.add_argument("--questions", choices=["real", "distinct"], default="real")
    asyncio.run(main(ap.parse_args()))
