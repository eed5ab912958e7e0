"""What embedding fresh notes during a search costs (``mcp_gateway/search/fresh.py``).

In one process (in-process jobs, edge index): the 1,038 ``bench/quality`` memories with
their cached vectors (``bench/quality/embcache.py``; nothing is embedded to load them),
then new-query searches (the query cache cleared before each) in two states,
interleaved in rounds so that machine drift hits both alike:

- ``settled``: every memory has its dense vector;
- ``pending``: the newest ``--burst`` memories are only lexically indexed, as right
  after a burst of adds; after each search whatever it embedded is made pending again
  (outside the timing), so every search meets the same state.

Prints p50/p95 server-side search latency per state, how many notes a search embedded,
and the learnt cost per byte. ``--busy N`` runs N CPU-bound processes meanwhile.

    flock "${TMPDIR:-/tmp}/kioku-bench.lock" python bench/fresh_latency.py [--busy 2]
"""

# ruff: noqa: E402
from __future__ import annotations

import sys
from pathlib import Path

_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
sys.path.insert(0, str(_HERE / "quality"))

import argparse
import os
import statistics
import subprocess
import tempfile
import time

import anyio
from embcache import Cache, load_jsonl, memory_document

from mcp_gateway.common.inputs import NoteFields
from mcp_gateway.common.settings import KiokuSettings
from mcp_gateway.common.types import Note
from mcp_gateway.embedders.cache import CachedQueryEmbedder
from mcp_gateway.indexing.points import note_document
from mcp_gateway.search.service import SearchRequest
from mcp_gateway.services.app import AppContext, open_app
from mcp_gateway.stores.vectors import content_hash


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


CACHE = Cache("original")


def cached(note: Note) -> list[float]:
    vector: list[float] = CACHE.get("passage", note_document(note)).tolist()
    return vector


async def load(app: AppContext) -> list[Note]:
    """Every memory as a note, with its cached passage vector; nothing is embedded."""
    notes: list[Note] = []
    for m in load_jsonl("memories.jsonl"):
        note, _ = await app.notes.add_or_existing(
            NoteFields(
                text=memory_document(m), type="knowledge" if m["kind"] == "record" else m["type"]
            )
        )
        notes.append(note)
    rows = [(n.id, content_hash(note_document(n)), cached(n)) for n in notes]
    await app.vectors.put("note", app.embedder.model_id, rows)
    await app.indexer.put_notes(notes)
    return notes


async def make_pending(app: AppContext, notes: list[Note]) -> None:
    await app.applier.apply_pending()  # nothing half-applied may land after this
    await app.vectors.forget("note", [n.id for n in notes])
    for note in notes:
        await app.indexer.put_lexical(note)


async def search(app: AppContext, query: str) -> float:
    if isinstance(app.embedder, CachedQueryEmbedder):
        app.embedder.clear()  # a new query each time: its embedding is part of the cost
    began = time.perf_counter()
    await app.search.search(SearchRequest(query=query, top=10))
    return (time.perf_counter() - began) * 1000


async def main(args: argparse.Namespace) -> None:
    queries = [q["query"] for q in load_jsonl("queries.jsonl")][:: args.every]
    with tempfile.TemporaryDirectory() as tmp:
        # no periodic reconcile: it would queue the pending notes for the embedding job
        search = {"fresh_top": args.top, "fresh_budget_ms": args.budget_ms}
        settings = KiokuSettings(
            data_dir=Path(tmp),
            redis_url=None,
            queue={"reconcile_every_s": 10**6},
            search={k: v for k, v in search.items() if v is not None},
        )
        async with open_app(settings) as app:
            await app.reconciled.wait()  # the start-up pass, over an empty store
            await run(app, queries, args)


async def run(app: AppContext, queries: list[str], args: argparse.Namespace) -> None:
    notes = await load(app)
    burst = notes[-args.burst :]
    fresh = app.search.fresh
    assert fresh is not None
    times: dict[str, list[float]] = {"settled": [], "pending": []}
    embedded: list[int] = []
    for _ in range(3):  # warm the engine and the stores
        await search(app, "warm up")
    chunk = max(1, len(queries) // args.rounds)
    for r in range(args.rounds):
        part = queries[r * chunk : (r + 1) * chunk]
        for q in part:
            times["settled"].append(await search(app, q))
        await make_pending(app, burst)
        by_id = {n.id: n for n in burst}
        for q in part:
            before = fresh.embedded
            last = await app.vectors.last_seq()
            times["pending"].append(await search(app, q))
            embedded.append(fresh.embedded - before)
            written = await app.vectors.since(app.embedder.model_id, last)
            await make_pending(app, [by_id[v.source_id] for v in written])
        # back to settled for the next round: the vectors of the burst, from the cache
        await app.vectors.put(
            "note",
            app.embedder.model_id,
            [(n.id, content_hash(note_document(n)), cached(n)) for n in burst],
        )
        await app.applier.apply_pending()
    print(
        f"load {os.getloadavg()[0]:.1f}, busy processes {args.busy}, "
        f"fresh limits {fresh.limits}, learnt {fresh.ms_per_byte:.3f} ms/byte"
    )
    for state, values in times.items():
        print(
            f"{state:8s} search p50 {pct(values, 0.5):6.1f} ms  p95 {pct(values, 0.95):6.1f} ms"
            f"  (n={len(values)})"
        )
    print(
        f"pending: notes embedded per search mean {statistics.fmean(embedded):.2f}, "
        f"searches that embedded {sum(1 for e in embedded if e) / len(embedded):.2f}"
    )


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--burst", type=int, default=500)
    ap.add_argument("--every", type=int, default=4, help="every Nth query of queries.jsonl")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--busy", type=int, default=0)
    ap.add_argument("--top", type=int, help="search.fresh_top (default: the setting's)")
    ap.add_argument("--budget-ms", type=float, help="search.fresh_budget_ms")
    parsed = ap.parse_args()
    hog = [sys.executable, "-c", "while True: pass"]
    hogs = [subprocess.Popen(hog) for _ in range(parsed.busy)]
    try:
        anyio.run(main, parsed)
    finally:
        for proc in hogs:
            proc.kill()
