"""Truth-store latency, SQLite vs PostgreSQL side by side: the store calls on the add and
search paths (no model, no index, no MCP: what the backend alone costs a call).

Per backend, interleaved op by op (A then B, B then A): ``NoteStore.add`` (a dedup
lookup and an insert in one write transaction), ``NoteStore.get_many`` of 10 ids and
``NoteStore.recent`` (what a search reads back), ``RecordStore.add`` and
``RecordStore.search`` over N records of English, Japanese and Thai text (FTS5 trigram
vs pg_trgm). PostgreSQL is the machine's server on 127.0.0.1:5432, in a database this
script creates (``kioku_bench_<random>``) and drops.

    python bench/pg_store.py [--records 3000] [--ops 200]
"""

# ruff: noqa: E402
from __future__ import annotations

import sys
from pathlib import Path

_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]

import argparse
import asyncio
import random
import statistics
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable

import psycopg

from mcp_gateway.common.inputs import NoteFields, RecordFields
from mcp_gateway.records import RecordStore
from mcp_gateway.stores.db import Database
from mcp_gateway.stores.notes import NoteStore

ADMIN = "postgresql://postgres@127.0.0.1:5432/postgres"
EN = "index write crash fsync rename billing cursor pagination deploy staging rollback".split()
JA = ["本番環境", "デプロイ", "ステージング", "確認する", "索引", "書き込み", "障害", "復旧"]
TH = ["ตรวจสอบ", "สคริปต์", "ย้ายข้อมูล", "ก่อนปล่อย", "เวอร์ชันใหม่", "ฐานข้อมูล", "ล่ม", "กู้คืน"]
QUERIES = {"en": "fsync rename", "ja": "ステージング 確認", "th": "ย้ายข้อมูล"}


def text(rng: random.Random) -> str:
    words = rng.choice([EN, JA, TH])
    sep = " " if words is EN else ""
    return sep.join(rng.choice(words) for _ in range(rng.randint(6, 14)))


def pct(xs: list[float]) -> str:
    q = statistics.quantiles(xs, n=100)
    return f"p50 {q[49]:.2f}  p95 {q[94]:.2f}  p99 {q[98]:.2f} ms"


async def timed(fn: Callable[[], Awaitable[object]]) -> float:
    t = time.perf_counter()
    await fn()
    return (time.perf_counter() - t) * 1000


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=3000)
    ap.add_argument("--ops", type=int, default=200)
    args = ap.parse_args()
    name = f"kioku_bench_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(ADMIN, autocommit=True) as c:
        c.execute(f'CREATE DATABASE "{name}"')
    try:
        with tempfile.TemporaryDirectory() as tmp:
            dbs = {
                "sqlite": Database(Path(tmp) / "k.sqlite3"),
                "postgres": Database(f"postgresql://postgres@127.0.0.1:5432/{name}"),
            }
            for db in dbs.values():
                await db.open()
            rng = random.Random(7)
            records = {k: RecordStore(db, "MEM") for k, db in dbs.items()}
            seed = [text(rng) for _ in range(args.records)]
            for k, store in records.items():
                for i, t in enumerate(seed):
                    # spread over types: an add compares titles within its type
                    await store.add(
                        RecordFields(
                            type=("knowledge", "decision", "audit")[i % 3], title=t[:150], content=t
                        )
                    )
                print(f"{k}: {args.records} records loaded", file=sys.stderr)
            notes = {k: NoteStore(db) for k, db in dbs.items()}
            ids: dict[str, list[str]] = {k: [] for k in dbs}
            times: dict[tuple[str, str], list[float]] = {}
            order = list(dbs)
            for i in range(args.ops):
                order.reverse()
                body = f"{text(rng)} {i}"
                for k in order:
                    ops: dict[str, Callable[[], Awaitable[object]]] = {
                        "note add": lambda k=k, body=body: _add(notes[k], body, ids[k]),
                        "note get_many(10)": lambda k=k: notes[k].get_many(ids[k][-10:]),
                        "note recent(3)": lambda k=k: notes[k].recent(
                            ["lesson", "knowledge"], namespaces=["default"]
                        ),
                        "record add": lambda k=k, body=body: records[k].add(
                            RecordFields(type="fix", title=body[:100], content=body)
                        ),
                        **{
                            f"record search {lang}": (
                                lambda k=k, q=q: records[k].search(q, limit=10)
                            )
                            for lang, q in QUERIES.items()
                        },
                    }
                    for op, fn in ops.items():
                        times.setdefault((op, k), []).append(await timed(fn))
            for db in dbs.values():
                await db.close()
    finally:
        with psycopg.connect(ADMIN, autocommit=True) as c:
            c.execute(f'DROP DATABASE "{name}" WITH (FORCE)')
    print(f"records {args.records}, ops {args.ops} (interleaved), ms per call")
    for op in dict.fromkeys(o for o, _ in times):
        s, p = times[(op, "sqlite")], times[(op, "postgres")]
        ratio = statistics.median(p) / statistics.median(s)
        print(f"{op:22s} sqlite {pct(s)} | postgres {pct(p)} | p50 ratio pg/sqlite {ratio:.1f}")


async def _add(store: NoteStore, body: str, ids: list[str]) -> None:
    ids.append((await store.add(NoteFields(text=body, type="knowledge"))).id)


if __name__ == "__main__":
    asyncio.run(main())
