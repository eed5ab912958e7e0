"""``make bench-scale``: a team's deployment at growing sizes -- ingest, memory, join.

    python bench/scale_join.py [--sizes 2000,10000] [--baseline]
    python bench/scale_join.py --preload --sizes 50000 [--http 2000] [--pool 2000]

PostgreSQL (a database of its own on the machine's server, ``tests/pg_server.py``,
dropped after), a private Redis, one ``kioku worker`` and real ``kioku serve --http``
gateways. Notes go to gateway A over HTTP from one client (distinct texts, en/ja/th);
at each size, once the worker has embedded them all and A has published an index
snapshot that covers them, a gateway B starts on an empty data dir (a new host) and is
searched until it answers (searches are refused while it joins), then until it finds
the first note by a reworded question (semantic), the last by its marker and one in
the middle. Prints, per size, the issue's table beside main's figures (issue 50,
measured on main 1b610e3 on this machine): A's ingest rate, resident memory (RSS) of
A, the worker and B, B's time to answer and to find everything, B's search p50 over
HTTP (30 new questions after the join), B's snapshot load as its log reports it, and
the load average. ``--baseline``: a second B per size with snapshots off
(``index.snapshot_every_s=0``: main's way in, the index built from the feed).

``--preload`` (the large sizes: 50k notes over HTTP and the worker's embedding take an
hour or more on this 2-core machine): all but the last ``--http`` notes of a size are
written into the truth store through the stores, as embedded notes are, with vectors
from a pool of really embedded texts (``bench/scale_preload.py``); A starts after that
and builds its index from the feed, as a new owner would, and publishes a snapshot;
then the last ``--http`` notes go over HTTP (the ingest rate at that size) and are
embedded by the worker. The FIRST note (the reworded question's) is in the pool: B
must find a really embedded preloaded note by meaning, the middle one (preloaded, a
pooled vector with noise) by its marker, the last (over HTTP) by its marker.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import argparse
import asyncio
import contextlib
import os
import re
import shutil
import signal
import statistics
import tempfile
import time

from bench.scale_preload import NOISE, embed_pool, preload
from mcp_gateway.common.settings import KiokuSettings, load_settings
from mcp_gateway.embedders.channels import configured_channels
from mcp_gateway.stores.db import Database
from tests.cluster import KIOKU, TOKEN, Deployment, Host, Proc, free_port, redis_server
from tests.http_server import http_client
from tests.pg_server import ScratchDatabase

# issue 50, main 1b610e3: notes -> (ingest/s, A MB, B answers s, B finds all s, B MB)
MAIN = {
    3_000: (86, 276, 8.5, 8.9, 331),
    10_000: (83, 326, 20.1, 20.4, 410),
    50_000: (68, 901, 33.6, 181.5, 681),
}
# A publishes when the feed moved this far since its last snapshot: B joins from a
# snapshot at most this many changes old, and catches up the rest from the feed
STALE = 500
FIRST = "The staging database is restored from the nightly backup every Monday at 03:00 UTC"
REWORDED = "which day is the staging DB refreshed from the nightly backups"
TOPICS = [
    "deploy the billing service with a canary first",
    "rotate the API keys before the audit",
    "the flaky integration test waits on a port",
    "デプロイの前にマイグレーションを確認する",
    "キャッシュの有効期限を短くした理由",
    "ก่อนดีพลอยต้องตรวจสอบการย้ายข้อมูล",
    "แคชหมดอายุเร็วเกินไปในวันจันทร์",
    "git rebase onto main after the release branch is cut",
    "the queue worker retries three times with backoff",
    "profiling showed the JSON encoder dominating the request",
]


# new questions for the latency sample: none asked before, so none is cached
QUESTIONS = [
    "how do we roll out billing changes safely",
    "マイグレーションはいつ確認する",
    "ทำไมแคชหมดอายุเร็ว",
    "which test waits on a port",
    "what made the request slow",
]


def note_text(i: int) -> str:
    if i == 0:
        return FIRST
    return f"{TOPICS[i % len(TOPICS)]} (case {i}, ticket T{i * 7919 % 100003}) marker{i:06d}q"


def rss_mb(proc: Proc) -> float:
    if proc.proc is None:
        return float("nan")
    try:
        for line in Path(f"/proc/{proc.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


async def ingest(url: str, first: int, last: int) -> float:
    """Notes [first, last) over one HTTP session, one at a time; returns notes/s."""
    started = time.monotonic()
    async with http_client(url, TOKEN) as client:
        for i in range(first, last):
            out = await client.call_tool("add_note", {"text": note_text(i), "type": "note"})
            if out.is_error:
                raise RuntimeError(f"add {i} failed: {out.content}")
    return (last - first) / (time.monotonic() - started)


async def wait_embedded(db: Database, n: int, models: int, timeout_s: float) -> float:
    """Until each of the ``models`` (the main one and every channel) has a vector row
    for ``n`` notes: the fast channel's rows come with the add, the others with the
    worker's job."""
    started = time.monotonic()
    while True:
        rows = await db.fetchall(
            "SELECT model, COUNT(*) AS n FROM vectors WHERE kind = 'note' GROUP BY model"
        )
        counts = sorted(int(r["n"]) for r in rows)
        if len(counts) >= models and counts[0] >= n:
            return time.monotonic() - started
        if time.monotonic() - started > timeout_s:
            raise RuntimeError(f"only {counts} of {n} notes embedded")
        await asyncio.sleep(1.0)


async def wait_snapshot(db: Database, points: int, timeout_s: float) -> int:
    started = time.monotonic()
    while True:
        rows = await db.fetchall(
            "SELECT points FROM index_snapshots WHERE complete = 1 ORDER BY id DESC LIMIT 1"
        )
        if rows and int(rows[0]["points"]) >= points:
            return int(rows[0]["points"])
        if time.monotonic() - started > timeout_s:
            return int(rows[0]["points"]) if rows else 0
        await asyncio.sleep(1.0)


async def join(b: Proc, n: int, timeout_s: float) -> dict[str, float]:
    """Seconds from B's start until it answers, and until it finds the first note by a
    reworded question, the middle and the last note by their markers; then the p50 of
    30 new questions."""
    started = time.monotonic()
    wanted = {REWORDED: FIRST, f"marker{n - 1:06d}q": None, f"marker{n // 2:06d}q": None}
    answered = None
    while True:
        try:
            with contextlib.suppress(OSError):
                async with http_client(b.url, TOKEN) as client:
                    while wanted:
                        for query, text in list(wanted.items()):
                            out = await client.call_tool(
                                "search_memory", {"query": query, "top": 10}
                            )
                            if out.is_error:
                                await asyncio.sleep(0.2)
                                break
                            answered = answered or time.monotonic() - started
                            found = [r["text"] for r in (out.structured_content or {})["results"]]
                            target = text or next((t for t in found if query in t), None)
                            if target in found:
                                del wanted[query]
                        if time.monotonic() - started > timeout_s:
                            raise RuntimeError(f"B did not find {list(wanted)}")
                    everything = time.monotonic() - started
                    lat = []
                    for q in range(30):
                        query = f"{QUESTIONS[q % len(QUESTIONS)]} (case {q * 37})"
                        t0 = time.perf_counter()
                        await client.call_tool("search_memory", {"query": query, "top": 10})
                        lat.append((time.perf_counter() - t0) * 1000)
                    return {
                        "answers": answered or everything,
                        "finds": everything,
                        "p50": statistics.median(lat),
                    }
        except Exception as exc:  # not listening yet, or the session broke: again
            if isinstance(exc, (RuntimeError, IndexError, KeyError, TypeError)):
                raise
        if time.monotonic() - started > timeout_s:
            raise RuntimeError(f"B never answered: {b.tail()}")
        await asyncio.sleep(0.2)


def snapshot_load_s(b: Proc) -> str:
    found = re.findall(r"loaded index snapshot .*? in ([0-9.]+) s", b.tail(2_000_000))
    joined = re.findall(r"index current: joined in ([0-9.]+) s", b.tail(2_000_000))
    load = f"{found[-1]} s" if found else "none"
    return f"snapshot load {load}, current after {joined[-1] if joined else '?'} s"


def gateway(dep: Deployment, name: str, host: Host, **env: str) -> Proc:
    e = dep._env(name, host)
    e.update(KIOKU_LOG_LEVEL="INFO", **env)
    port = free_port()
    argv = [KIOKU, "serve", "--http", "--host", host.addr, "--port", str(port)]
    proc = Proc(name, host, argv, e, dep.root / f"{name}.log", port)
    dep.procs.append(proc)
    return proc


def start_a(dep: Deployment, host: Host) -> Proc:
    env = {
        "KIOKU_INDEX__SNAPSHOT_EVERY_S": "5",
        "KIOKU_INDEX__SNAPSHOT_MIN_CHANGES": str(STALE),
    }
    return gateway(dep, "a", host, **env).start()


def start_worker(dep: Deployment, host: Host, root: Path) -> Proc:
    worker = Proc("worker", host, [KIOKU, "worker"], dep._env("worker", host), root / "worker.log")
    dep.procs.append(worker)
    return worker.start()


def bench_settings(root: Path) -> KiokuSettings:
    """The settings every process of the deployment runs with (an empty config file,
    no ``KIOKU_*`` of the caller's): the embedders the preload's pool must match."""
    for key in [k for k in os.environ if k.startswith("KIOKU_")]:
        del os.environ[key]
    empty = root / "bench.toml"
    empty.write_text("", encoding="utf-8")
    os.environ["KIOKU_CONFIG"] = str(empty)
    return load_settings()


def join_lines(b: Proc) -> str:
    """B's log lines on its way in: the snapshot's load, the catch-up, reconcile."""
    keep = ("snapshot", "index current", "reconcil", "catch", "behind", "ready", "listening")
    lines = [ln for ln in b.tail(2_000_000).splitlines() if any(k in ln for k in keep)]
    return "\n".join(f"  {b.name}: {ln}" for ln in lines[:40])


def load() -> str:
    return " / ".join(f"{x:.1f}" for x in os.getloadavg())


def log(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


async def main() -> None:
    # a SIGTERM ends the run through the finally blocks: processes stopped, database dropped
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="2000,10000")
    ap.add_argument("--baseline", action="store_true", help="also a B with snapshots off")
    ap.add_argument("--timeout", type=float, default=1800)
    ap.add_argument(
        "--preload",
        action="store_true",
        help="write all but the last --http notes of each size into the truth store "
        "through the stores (bench/scale_preload.py) instead of over HTTP",
    )
    ap.add_argument("--http", type=int, default=2000, help="with --preload: notes over HTTP")
    ap.add_argument("--pool", type=int, default=2000, help="with --preload: embedded texts")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    host = Host("", "127.0.0.1", "127.0.0.1")
    pg = ScratchDatabase()
    root = Path(tempfile.mkdtemp(prefix="kioku-bench-scale-"))
    rows: list[str] = []
    settings = bench_settings(root)
    models = 1 + len(configured_channels(settings.embedder))
    pool = None
    if args.preload:
        pool = await embed_pool(settings, [note_text(i) for i in range(args.pool)], log)
        log(
            f"preload: notes past the first {args.pool} carry a pooled text's vectors with "
            f"noise ({NOISE} of the norm a dimension): search cost depends on counts, not "
            "meaning; their texts (markers) are their own"
        )
    try:
        schema_url = pg.new_schema()
        with redis_server(["127.0.0.1"]) as redis_port:
            dep = Deployment(root, schema_url, redis_port, "default")
            try:
                db = Database(schema_url)
                await db.open()
                a = worker = None
                done = 0
                for n in sizes:
                    built = ""
                    if pool is not None and n - args.http > done:
                        rate_pre = await preload(
                            db, pool, note_text, done, n - args.http, dep.namespace, log
                        )
                        done = n - args.http
                        built = f"preloaded {done:,} at {rate_pre:.0f}/s"
                    if a is None or worker is None:
                        a, worker = start_a(dep, host), start_worker(dep, host, root)
                        if done:  # A builds its index from the feed, as a new owner does
                            t0 = time.monotonic()
                            await wait_snapshot(db, done - STALE, args.timeout)
                            built += f"; A built + published in {time.monotonic() - t0:.0f} s"
                    rate = await ingest(a.url, done, n)
                    done = n
                    embed_s = await wait_embedded(db, n, models, args.timeout)
                    snap = await wait_snapshot(db, n - STALE, args.timeout)
                    variants: list[tuple[str, dict[str, str]]] = [("snapshot", {})]
                    if args.baseline:
                        variants.append(("from feed", {"KIOKU_INDEX__SNAPSHOT_EVERY_S": "0"}))
                    for label, env in variants:
                        b = gateway(dep, f"b{n}{'f' if env else ''}", host, **env)
                        b.port, port = 0, b.port
                        b.start()
                        b.port = port
                        r = await join(b, n, args.timeout)
                        row = (
                            f"| {n:,} | {rate:.0f}/s | {rss_mb(a):.0f} MB | "
                            f"{rss_mb(worker):.0f} MB | "
                            f"{r['answers']:.1f} s | {r['finds']:.1f} s | {rss_mb(b):.0f} MB | "
                            f"{r['p50']:.0f} ms | {label}: {snapshot_load_s(b)}; embedding tail "
                            f"{embed_s:.0f} s; snapshot {snap} points"
                            f"{'; ' + built if built else ''} | {load()} |"
                        )
                        print(row, flush=True)
                        rows.append(row)
                        log(join_lines(b))
                        b.kill()
                await db.close()
            finally:
                dep.close()
    finally:
        pg.drop()
        shutil.rmtree(root, ignore_errors=True)
    print()
    print(
        "| notes | A's ingest over HTTP | A resident | worker resident | B answers | "
        "B finds everything | B resident | B search p50 | how B joined | load 1/5/15 |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for row in rows:
        print(row)
    print()
    print("main 1b610e3 (issue 50): | notes | ingest | A | B answers | B finds everything | B |")
    for n, (rate, a_mb, ans, finds, b_mb) in MAIN.items():
        print(f"| {n:,} | {rate}/s | {a_mb} MB | {ans} s | {finds} s | {b_mb} MB |")


if __name__ == "__main__":
    asyncio.run(main())
