"""A sealed index against the plain one it was built from: the same top-10 lists, and
search latency side by side (``index.seal_every``, ``index/edge_graph.py``).

    flock "${TMPDIR:-/tmp}/kioku-bench.lock" python bench/seal_ranking.py \
        [--data bench/quality/data ...] [--data-dir DIR] [--rounds 2]

For each quality set: ingests it as ``bench/quality/run.py`` does (its data dir reused
when ``--data-dir`` holds one), copies the data dir, seals the copy (the build process,
as the owner's check starts it), then starts ``kioku serve --standalone`` on each (the
answer cache off) and sends every query to both, alternating which goes first, each
``--rounds`` times (after the first, the query's embedding is cached: the search alone).
Prints per set: queries whose top-10 differ (ids in order), then the stdio round trip
p50 / p95 per side and round, and the ratio sealed / plain.

``--pair PLAIN SEALED``: two data dirs holding the same texts (``bench/owner_memory.py
--keep`` on main and on this tree: its notes are copies of the quality set's), served
with seals and graph checks off, the generated set's queries sent to both as above; the
top-10 compared by text.
"""

# ruff: noqa: E402
from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE / "quality"))
sys.path.append(str(HERE))

import argparse
import asyncio
import json
import os
import shutil
import sqlite3
import tempfile
import time
from contextlib import AsyncExitStack
from typing import Any

from harness import local, serve_env, serve_params
from mcp import Client
from metrics import percentile
from run import ask, run_set

from mcp_gateway.services import Services

SERVE = {
    "KIOKU_SEARCH__MODE": "hybrid",
    "KIOKU_SEARCH__ANSWER_CACHE_SIZE": "0",
    # each side stays as it is while measured
    "KIOKU_INDEX__SEAL_EVERY": "0",
    "KIOKU_INDEX__GRAPH_CHECK_S": "0",
}


async def seal(data_dir: Path) -> dict[str, Any]:
    async with local(data_dir, run_jobs=False) as app:
        began = time.perf_counter()
        status = await Services.over(app).rebuild.rebuild(outside=True)
        if status.state != "done":
            raise SystemExit(f"{data_dir}: the seal failed: {status.message}")
        return {
            "seconds": round(time.perf_counter() - began, 1),
            "collection": app.index.spec.collection,
            "sealed": getattr(app.index.current, "sealed_points", 0),
            "points": await app.index.count(),
        }


async def side_by_side(
    plain: Path, sealed: Path, queries: list[dict[str, Any]], keys: dict[str, str], rounds: int
) -> tuple[int, list[str], dict[str, list[list[float]]]]:
    """(queries compared, qids whose top-10 differ, ms per side per round)."""
    ms: dict[str, list[list[float]]] = {"plain": [], "sealed": []}
    differ: list[str] = []
    async with AsyncExitStack() as stack:
        clients = {
            name: await stack.enter_async_context(
                Client(serve_params(serve_env(d, settings=SERVE), standalone=True))
            )
            for name, d in (("plain", plain), ("sealed", sealed))
        }
        for r in range(rounds):
            for side in ms.values():
                side.append([])
            for i, q in enumerate(queries):
                order = ["plain", "sealed"] if (i + r) % 2 == 0 else ["sealed", "plain"]
                got = {}
                for name in order:
                    began = time.perf_counter()
                    got[name] = await ask(clients[name], q, 10, keys)
                    ms[name][-1].append((time.perf_counter() - began) * 1000)
                if r == 0 and got["plain"] != got["sealed"]:
                    differ.append(q["qid"])
    return len(queries), differ, ms


def texts_by_id(data_dir: Path) -> dict[str, str]:
    conn = sqlite3.connect(f"file:{data_dir / 'kioku.sqlite3'}?mode=ro", uri=True)
    try:
        return dict(conn.execute("SELECT id, text FROM notes").fetchall())
    finally:
        conn.close()


async def pair(plain: Path, sealed: Path, rounds: int) -> None:
    queries = [json.loads(x) for x in (HERE / "quality" / "data" / "queries.jsonl").open()]
    keys = {**texts_by_id(plain), **texts_by_id(sealed)}  # ranked ids as texts
    n, differ, ms = await side_by_side(plain, sealed, queries, keys, rounds)
    report(f"{plain.name} / {sealed.name}", {}, n, differ, ms, rounds)


def report(
    name: str, sealed: dict[str, Any], n: int, differ: list[str], ms: dict[str, Any], rounds: int
) -> None:
    print(f"\n{name}: sealed {sealed}; top-10 differ for {len(differ)} of {n}: {differ}")
    for r in range(rounds):
        p, s = ms["plain"][r], ms["sealed"][r]
        print(
            f"  round {r + 1}: plain p50 {percentile(p, 0.5):.2f} p95 {percentile(p, 0.95):.2f}"
            f" | sealed p50 {percentile(s, 0.5):.2f} p95 {percentile(s, 0.95):.2f} ms"
            f" | ratio p50 {percentile(s, 0.5) / percentile(p, 0.5):.3f}"
        )


async def main(args: argparse.Namespace) -> None:
    root = args.data_dir or Path(tempfile.mkdtemp(prefix="kioku-seal-"))
    print(f"load {os.getloadavg()[0]:.1f} at the start")
    if args.pair:
        await pair(args.pair[0], args.pair[1], args.rounds)
        print(f"load {os.getloadavg()[0]:.1f} at the end")
        return
    for folder in args.data:
        data_dir = root / folder.name
        data_dir.mkdir(parents=True, exist_ok=True)
        _, queries, _ = await run_set(folder, data_dir, [], {}, 10)
        keys = json.loads((data_dir / "bench-keys.json").read_text())
        copy = root / f"{folder.name}-sealed"
        shutil.rmtree(copy, ignore_errors=True)
        shutil.copytree(data_dir, copy)
        sealed = await seal(copy)
        n, differ, ms = await side_by_side(data_dir, copy, queries, keys, args.rounds)
        report(folder.name, sealed, n, differ, ms, args.rounds)
    print(f"load {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sets = [HERE / "quality" / "data", HERE / "quality" / "conv"]
    ap.add_argument("--data", type=Path, nargs="+", default=sets)
    ap.add_argument("--data-dir", type=Path, default=None)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--pair", type=Path, nargs=2, metavar=("PLAIN", "SEALED"), default=None)
    asyncio.run(main(ap.parse_args()))
