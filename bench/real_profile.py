"""Where kioku's search time goes on real memories, in one process (no transport).

Loads N of the conversational set's turns (``peers.py --memories real``'s texts; every
vector the model's own, no noise) or N template notes, then per question (real or template,
interleaved): the query's embedding alone (``encode_query``: dense + latent terms), the
whole search (``SearchService.search``, top 5) and the same search over the now cached
embedding (top 4: a new answer). A cProfile of the cached searches names the search path's
parts. The memories' text is what differs between ``--memories real`` and ``template``.

    flock "${TMPDIR:-/tmp}/kioku-bench.lock" python bench/real_profile.py \
        [--n 2000] [--memories real] [--queries 80]
"""

# ruff: noqa: E402
from __future__ import annotations

import sys
from pathlib import Path

_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
sys.path.append(str(_HERE))

import argparse
import cProfile
import io
import os
import pstats
import tempfile
import time

import anyio
from peers import load_kioku_dir, memories, pct, queries, real_memories, real_questions

from mcp_gateway.common.settings import KiokuSettings
from mcp_gateway.search.service import SearchRequest
from mcp_gateway.services.app import open_app


def show(name: str, ms: list[float]) -> str:
    return f"{name:28s} p50 {pct(ms, 0.5):6.1f} p95 {pct(ms, 0.95):6.1f} ms"


async def profile(data_dir: Path, qs: dict[str, list[str]], top_lines: int) -> None:
    settings = KiokuSettings(data_dir=data_dir)
    async with open_app(settings, run_jobs=False) as app:
        for q in ("warm-up one", "warm-up two"):
            await app.search.search(SearchRequest(query=q, top=5))
        times: dict[str, list[float]] = {}

        def took(key: str, t: float) -> None:
            times.setdefault(key, []).append(1000 * (time.perf_counter() - t))

        prof = cProfile.Profile()
        for i in range(len(next(iter(qs.values())))):
            for name, items in qs.items():
                q = items[i]
                t = time.perf_counter()
                await app.embedder.encode_query(q + " (embedding alone)")
                took(f"{name}: embedding", t)
                t = time.perf_counter()
                await app.search.search(SearchRequest(query=q, top=5))
                took(f"{name}: search, new", t)
                t = time.perf_counter()
                prof.enable()
                await app.search.search(SearchRequest(query=q, top=4))
                prof.disable()
                took(f"{name}: search, cached emb", t)
        for key, ms in times.items():
            print(show(key, ms))
        out = io.StringIO()
        pstats.Stats(prof, stream=out).sort_stats("cumulative").print_stats(top_lines)
        print("cProfile of the cached-embedding searches (cumulative):")
        print(out.getvalue())


def main(args: argparse.Namespace) -> None:
    print(f"load {' '.join(f'{x:.1f}' for x in os.getloadavg())}; {args.memories} memories")
    texts = real_memories(args.n) if args.memories == "real" else memories(args.n, seed=args.n)
    qs = {
        "real": real_questions(seed=2)[: args.queries],
        "template": queries(seed=2)[: args.queries],
    }
    with tempfile.TemporaryDirectory(prefix="kioku-real-profile-") as tmp:
        data_dir = Path(tmp) / "kioku"
        began = time.perf_counter()
        load_kioku_dir(_HERE.parent, data_dir, texts, len(texts))
        print(f"loaded {len(texts):,} in {time.perf_counter() - began:.0f} s")
        anyio.run(profile, data_dir, qs, args.lines)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--memories", choices=["real", "template"], default="real")
    ap.add_argument("--queries", type=int, default=80)
    ap.add_argument("--lines", type=int, default=35, help="cProfile lines shown")
    main(ap.parse_args())
