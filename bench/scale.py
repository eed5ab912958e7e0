"""One gateway against two on the same truth store, and the change feed's lag.

Real ``kioku serve --http`` processes (each its own data dir and embedded index, jobs
in-process: no Redis, no workers), sharing one truth store: a PostgreSQL cluster of the
bench's own (``initdb`` on a free port; ``--backend postgres``, the default) or one
SQLite file (``--backend sqlite``). Prints:

1. load: ``--clients`` MCP clients for ``--seconds``, each alternating ``add_note`` and
   ``search_memory``, all on one gateway, then spread over two; adds/s, searches/s, and
   p50/p99 of both calls;
2. feed lag, idle: a note added on gateway 1, then the time until gateway 2's *own*
   follower has applied it (its cursor in the truth store passes the note's change; no
   search asks it to catch up), and until gateway 2 has applied the note's dense vector
   (semantically searchable there: embedding on gateway 1 included); p50/p95. The
   semantic lag is split in two: ack to the vector stored (embedding, on gateway 1's
   in-process jobs) and stored to applied on gateway 2 (the vector feed);
   ``--loaded-samples N`` probes again while ``--clients`` keep both gateways busy
   (``--load-one``: gateway 1 only, so gateway 2 follows by polling alone).

3. ``--feed-cost``: what the feed's triggers cost the embedded default's add (the
   store's own add, no model), interleaved A/B on two fresh SQLite files, one with the
   triggers dropped; p50/p95/p99 and the ratio.

Run: ``python bench/scale.py [--backend postgres|sqlite] [--clients 8] [--seconds 20]``
or ``python bench/scale.py --feed-cost [--adds 3000]``.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import argparse
import asyncio
import contextlib
import statistics
import tempfile
import time
from collections.abc import Iterator

from harness import pct
from mcp import Client

from mcp_gateway.common.inputs import NoteFields
from mcp_gateway.stores.db import Database
from tests.cluster import TOKEN, Deployment, Proc, hosts, throwaway_postgres
from tests.http_server import http_client

TOPICS = ["deploys", "rate limits", "git rebase", "docker builds", "flaky tests", "migrations"]


@contextlib.contextmanager
def store(backend: str, root: Path) -> Iterator[str]:
    if backend == "postgres":
        with throwaway_postgres() as pg:
            yield pg.url
    else:
        yield f"sqlite:///{root / 'kioku.sqlite3'}"


async def client_loop(
    url: str, n: int, until: float, lat: dict[str, list[float]], stop: asyncio.Event | None = None
) -> None:
    async with http_client(url, TOKEN) as client:
        i = 0
        while time.monotonic() < until and not (stop and stop.is_set()):
            i += 1
            topic = TOPICS[(n + i) % len(TOPICS)]
            for tool, args in (
                ("add_note", {"text": f"client {n} note {i}: a lesson about {topic}"}),
                ("search_memory", {"query": f"what do we know about {topic}"}),
            ):
                started = time.perf_counter()
                out = await client.call_tool(tool, args)
                if out.is_error:
                    lat.setdefault("errors", []).append(1.0)
                    continue
                lat.setdefault(tool, []).append((time.perf_counter() - started) * 1000)


async def load(
    gateways: list[Proc], clients: int, seconds: float, stop: asyncio.Event | None = None
) -> dict[str, float]:
    lat: dict[str, list[float]] = {}
    started = time.monotonic()
    until = started + seconds
    await asyncio.gather(
        *(client_loop(gateways[n % len(gateways)].url, n, until, lat, stop) for n in range(clients))
    )
    seconds = time.monotonic() - started
    adds, searches = lat.get("add_note", []), lat.get("search_memory", [])
    return {
        "adds/s": len(adds) / seconds,
        "searches/s": len(searches) / seconds,
        "add p50": pct(adds, 0.5),
        "add p99": pct(adds, 0.99),
        "search p50": pct(searches, 0.5),
        "search p99": pct(searches, 0.99),
        "errors": len(lat.get("errors", [])),
    }


async def cursor_of(db: Database, data_dir: Path, key: str) -> int:
    gid = bytes.fromhex((data_dir / "gateway.id").read_text().strip())[:6].hex()
    return int(float(await db.get_meta(f"{key}@{gid}") or 0))


async def lag(db: Database, a: Client, b_dir: Path, samples: int) -> dict[str, list[float]]:
    """ms from gateway 1's ack until gateway 2 applied the note, then its vector."""
    out: dict[str, list[float]] = {"feed": [], "semantic": [], "embedded": [], "vector feed": []}
    for i in range(samples):
        text = f"lag probe {i}: {TOPICS[i % len(TOPICS)]} need a careful rollout plan"
        res = await a.call_tool("add_note", {"text": text})
        acked = time.perf_counter()
        note_id = (res.structured_content or {})["id"]
        feed_done = vec_done = stored = None
        while vec_done is None:
            rows = await db.fetchall(
                "SELECT (SELECT seq FROM changes WHERE kind = 'note' AND source_id = ?) AS c, "
                "(SELECT MAX(seq) FROM vectors WHERE kind = 'note' AND source_id = ?) AS v",
                (note_id, note_id),
            )
            c, v = rows[0]["c"], rows[0]["v"]
            now = time.perf_counter()
            if feed_done is None and c is not None:
                if await cursor_of(db, b_dir, "index.feed_seq") >= int(c):
                    feed_done = now
            if v is not None and stored is None:
                stored = now
            if v is not None and await cursor_of(db, b_dir, "index.applied_seq") >= int(v):
                vec_done = now
                feed_done = feed_done or now
            await asyncio.sleep(0.01)
        out["feed"].append((feed_done - acked) * 1000)
        out["semantic"].append((vec_done - acked) * 1000)
        assert stored is not None
        out["embedded"].append((stored - acked) * 1000)
        out["vector feed"].append((vec_done - stored) * 1000)
        await asyncio.sleep(0.3)  # idle between probes
    return out


def show_lag(when: str, got: dict[str, list[float]]) -> None:
    for kind, values in got.items():
        show(
            f"lag {when} {kind}",
            {
                "p50 ms": statistics.median(values),
                "p95 ms": pct(values, 0.95),
                "max ms": max(values),
                "n": float(len(values)),
            },
        )


def show(name: str, figures: dict[str, float]) -> None:
    cells = "  ".join(
        f"{k} {v:8.3f}" if isinstance(v, float) else f"{k} {v}" for k, v in figures.items()
    )
    print(f"{name:13s} {cells}", flush=True)


async def feed_cost(adds: int) -> None:
    from mcp_gateway.stores.notes import NoteStore
    from mcp_gateway.stores.schema import TRIGGERS

    root = Path(tempfile.mkdtemp(prefix="kioku-feedcost-"))
    dbs = {"with feed": Database(root / "a.sqlite3"), "without": Database(root / "b.sqlite3")}
    for db in dbs.values():
        await db.open()
    for name in TRIGGERS:
        await dbs["without"].transaction(lambda c, n=name: c.execute(f"DROP TRIGGER {n}"))
    stores = {k: NoteStore(db) for k, db in dbs.items()}
    lat: dict[str, list[float]] = {k: [] for k in dbs}
    for i in range(adds):
        order = list(stores.items()) if i % 2 else list(reversed(stores.items()))
        for name, notes in order:
            started = time.perf_counter()
            await notes.add(
                NoteFields(text=f"note {i}: {TOPICS[i % len(TOPICS)]} " * 8, type="note")
            )
            lat[name].append((time.perf_counter() - started) * 1000)
    for name, values in lat.items():
        figures = {q: pct(values, v) for q, v in (("p50", 0.5), ("p95", 0.95), ("p99", 0.99))}
        show(f"add {name}", {f"{k} ms": round(v, 3) for k, v in figures.items()})
    ratio = statistics.median(lat["with feed"]) / statistics.median(lat["without"])
    print(f"p50 ratio with/without the feed: {ratio:.3f}")
    for db in dbs.values():
        await db.close()


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--backend", choices=["postgres", "sqlite"], default="postgres")
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--lag-samples", type=int, default=30)
    ap.add_argument("--feed-cost", action="store_true")
    ap.add_argument("--adds", type=int, default=3000)
    ap.add_argument("--loaded-samples", type=int, default=0)
    ap.add_argument("--only-two", action="store_true", help="skip the one-gateway run")
    ap.add_argument("--load-one", action="store_true", help="loaded probes: clients on gw1")
    args = ap.parse_args()
    if args.feed_cost:
        await feed_cost(args.adds)
        return
    root = Path(tempfile.mkdtemp(prefix="kioku-scale-"))
    print(f"backend={args.backend} clients={args.clients} seconds={args.seconds}")
    for n in (2,) if args.only_two else (1, 2):
        with store(args.backend, root / f"run{n}") as url, hosts(n, netns=False) as hs:
            (root / f"run{n}").mkdir(parents=True, exist_ok=True)
            deployment = Deployment(root / f"run{n}", url, None, "default")
            try:
                gws = [deployment.gateway(f"gw{i + 1}", h) for i, h in enumerate(hs)]
                await load(gws, 2, 3)  # warm-up: models loaded, first embeddings done
                show(f"{n} gateway(s)", await load(gws, args.clients, args.seconds))
                if n == 2:
                    sqlite_file = root / "run2" / "kioku.sqlite3"
                    db = Database(url if args.backend == "postgres" else sqlite_file)
                    await db.open()
                    b_dir = root / "run2/gw2/data"
                    try:
                        async with http_client(gws[0].url, TOKEN) as a:
                            show_lag("idle", await lag(db, a, b_dir, args.lag_samples))
                            if args.loaded_samples:
                                stop = asyncio.Event()
                                # --load-one: the clients on gateway 1 only, so gateway
                                # 2 follows by its own polling (no search pulls the feed)
                                on = gws[:1] if args.load_one else gws
                                busy = asyncio.create_task(load(on, args.clients, 3600, stop))
                                await asyncio.sleep(3)  # the load is on
                                got = await lag(db, a, b_dir, args.loaded_samples)
                                stop.set()
                                show("loaded", await busy)
                                show_lag("loaded", got)
                    finally:
                        await db.close()
            finally:
                deployment.close()


if __name__ == "__main__":
    asyncio.run(main())
