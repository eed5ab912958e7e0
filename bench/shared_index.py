"""One Qdrant collection shared by two gateways: index writes per change, the search
wait after an add, and what a point costs the server (issue 50, item 4).

    python bench/shared_index.py [--notes 120]
    KIOKU_SRC=/path/to/other/checkout python bench/shared_index.py   # its mcp_gateway

Two gateway apps in one process (the real model, in-process jobs, no Redis) on a fresh
PostgreSQL database (``tests/pg_server.py``), both with ``qdrant_url``: the "server" is
one qdrant-client local-mode instance in memory, each gateway's client a link to it
that counts the points it writes (the stand-in of ``tests/test_shared_index.py``, which
says why). Adds real memories (the quality sets', en/ja/th) alternately on A and B;
right after each add, searches the same gateway for the note's marker word and times
that search (a non-writer's includes its wait for the writer). Then settles both and
reports: points written through each link per note, against the feed entries made for
the notes (each change and vector row as made, logged by triggers of the bench's own);
search-after-add p50/p95 per gateway; and, from the collection itself, the bytes a point
holds (named dense vectors x 4 bytes, sparse entries x 8, payload as JSON), from which
docs/scale.md's capacity rows are computed. ``KIOKU_SRC`` runs another checkout's code
(main's, for the baseline) under the same script.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
if os.environ.get("KIOKU_SRC"):
    sys.path.insert(0, os.environ["KIOKU_SRC"])

import argparse
import asyncio
import json
import statistics
import tempfile
import time
import uuid
from collections import Counter
from contextlib import AsyncExitStack
from typing import Any

from qdrant_client import AsyncQdrantClient

import mcp_gateway
from mcp_gateway.common.access import settings_scope
from mcp_gateway.common.inputs import NoteFields, NoteQuery
from mcp_gateway.common.sections import IndexSettings, QueueSettings
from mcp_gateway.common.settings import KiokuSettings
from mcp_gateway.index import qdrant as qdrant_module
from mcp_gateway.services.app import open_app
from mcp_gateway.services.notes import NoteService
from tests.pg_server import ScratchDatabase, feed_log

URL = "http://qdrant.bench:6333"
HERE = Path(__file__).resolve().parent


class Link:
    def __init__(self, server: AsyncQdrantClient) -> None:
        self.server = server
        self.written: Counter[str] = Counter()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.server, name)

    async def upsert(self, collection_name: str, points: Any, **kw: Any) -> Any:
        self.written.update(str(p.id) for p in points)
        return await self.server.upsert(collection_name, points, **kw)

    async def close(self) -> None:
        pass


def memories(n: int) -> list[str]:
    out: list[str] = []
    for name in ("conv", "data"):
        with open(HERE / "quality" / name / "memories.jsonl", encoding="utf-8") as f:
            out += [json.loads(line)["text"] for line in f if line.strip()]
    return out[:n]


def feed_entries(url: str) -> int:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT (SELECT COUNT(*) FROM log_changes) + (SELECT COUNT(*) FROM log_vectors)"
        ).fetchone()
    return int(row[0]) if row else 0


async def point_bytes(server: AsyncQdrantClient, collection: str) -> dict[str, float]:
    points, _ = await server.scroll(collection, limit=10_000, with_payload=True, with_vectors=True)
    dense: list[int] = []
    sparse: list[int] = []
    payload: list[int] = []
    names: Counter[str] = Counter()
    for p in points:
        d = s = 0
        for name, vec in (p.vector or {}).items():  # type: ignore[union-attr]
            if isinstance(vec, list):
                d += 4 * len(vec)
                names[f"{name}:{len(vec)}"] += 1
            else:
                s += 8 * len(vec.indices)
                names[f"{name}:sparse"] += 1
        dense.append(d)
        sparse.append(s)
        payload.append(len(json.dumps(p.payload, ensure_ascii=False).encode()))
    n = max(1, len(points))
    print("  named vectors (points having each):", dict(names))
    return {
        "points": len(points),
        "dense_B": sum(dense) / n,
        "sparse_B": sum(sparse) / n,
        "payload_B": sum(payload) / n,
    }


def quantiles(xs: list[float]) -> str:
    if not xs:
        return "-"
    xs = sorted(xs)
    p95 = xs[min(len(xs) - 1, round(0.95 * (len(xs) - 1)))]
    return f"p50 {statistics.median(xs) * 1000:.0f} ms, p95 {p95 * 1000:.0f} ms (n={len(xs)})"


async def run(n: int) -> None:
    print(f"code: {Path(mcp_gateway.__file__).parent}  load: {os.getloadavg()}")
    server = AsyncQdrantClient(location=":memory:")
    links: list[Link] = []

    def connect(url: str | None = None, **_: Any) -> Link:
        links.append(Link(server))
        return links[-1]

    qdrant_module.AsyncQdrantClient = connect  # type: ignore[misc,assignment]
    pg = ScratchDatabase()
    collection = f"b_{uuid.uuid4().hex[:10]}"
    try:
        url = pg.new_schema()
        with tempfile.TemporaryDirectory() as tmp:

            def settings(name: str) -> KiokuSettings:
                return KiokuSettings(
                    data_dir=Path(tmp) / name,
                    database_url=url,
                    redis_url=None,
                    qdrant_url=URL,
                    index=IndexSettings(backend="qdrant", collection=collection),
                    queue=QueueSettings(reconcile_every_s=3600),
                )

            async with AsyncExitStack() as stack:
                a = await stack.enter_async_context(open_app(settings("a")))
                await asyncio.sleep(1.0)  # alone: it takes the writer lease, if any
                b = await stack.enter_async_context(open_app(settings("b")))
                await a.reconciled.wait()
                await b.reconciled.wait()
                feed_log(url)
                scope = settings_scope(a.settings)
                waits: dict[str, list[float]] = {"A": [], "B": []}
                found = {"A": 0, "B": 0}
                texts = memories(n)
                started = time.perf_counter()
                for i, text in enumerate(texts):
                    name, app = ("B", b) if i % 2 == 0 else ("A", a)
                    marker = f"zq{i:04d}marker"
                    note = await NoteService(app).add(
                        scope, NoteFields(text=f"{text} {marker}", type="note")
                    )
                    t0 = time.perf_counter()
                    res = await NoteService(app).search(scope, NoteQuery(query=marker))
                    waits[name].append(time.perf_counter() - t0)
                    found[name] += note.id in [r.id for r in res.results]
                added_s = time.perf_counter() - started
                t0 = time.perf_counter()
                await a.settle()
                await b.settle()
                await a.settle()
                settle_s = time.perf_counter() - t0
                entries = feed_entries(url)
                la, lb = links[0], links[1]
                wa, wb = sum(la.written.values()), sum(lb.written.values())
                print(
                    f"notes: {n} added + searched in {added_s:.1f} s, settled in {settle_s:.1f} s"
                )
                print(f"feed entries (changes + vector rows as made): {entries}")
                print(
                    f"points written: A {wa}, B {wb}, total {wa + wb}: "
                    f"{(wa + wb) / n:.2f} a note, {(wa + wb) / max(1, entries):.2f} a feed entry"
                )
                print(
                    f"found right after the add: A {found['A']}/{len(waits['A'])}, "
                    f"B {found['B']}/{len(waits['B'])}"
                )
                print(f"search after add on A: {quantiles(waits['A'])}")
                print(f"search after add on B: {quantiles(waits['B'])}")
                sizes = await point_bytes(server, collection)
                print("bytes a point (mean):", {k: round(v) for k, v in sizes.items()})
                # a gateway that starts on this deployment: open to first answer
                t0 = time.perf_counter()
                async with open_app(settings("c")) as c:
                    opened = time.perf_counter() - t0
                    await NoteService(c).search(scope, NoteQuery(query="zq0001marker"))
                    print(
                        f"a third gateway: open {opened:.1f} s, first search answered "
                        f"{time.perf_counter() - t0:.1f} s after its start"
                    )
    finally:
        pg.drop()
        await server.close()
    print(f"load after: {os.getloadavg()}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notes", type=int, default=120)
    asyncio.run(run(parser.parse_args().notes))


if __name__ == "__main__":
    main()
