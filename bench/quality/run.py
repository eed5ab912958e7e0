"""Retrieval-quality benchmark: drives the real server over MCP (stdio).

1. Ingests ``data/memories.jsonl`` oldest first into a fresh data dir (notes with
   ``add_note``'s server path, records with ``record_add`` and their links) and waits
   until every note and record has its dense vector, drafts embedded exactly.
2. For each search mode (the single-signal baselines ``lexical`` and ``dense``, and the
   shipped ``hybrid``), starts ``kioku serve`` over stdio on that data dir, sends every
   query of ``data/queries.jsonl`` through ``search_memory`` and scores the ranked ids.
3. Prints recall@1/5/10, MRR and nDCG@10 overall and per query kind, plus search
   latency p50/p95 (client round trip over stdio, and server side from the activity log).

    python bench/quality/run.py [--modes lexical dense hybrid] [--set search.rrf_k=20 ...]
    python bench/quality/run.py --data bench/quality/heldout   # the held-out set (test only)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from mcp import Client, StdioServerParameters

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))
sys.path.insert(0, str(HERE))

from metrics import percentile, score  # noqa: E402

from mcp_gateway.access import settings_scope  # noqa: E402
from mcp_gateway.app import open_app  # noqa: E402
from mcp_gateway.services import Services  # noqa: E402
from mcp_gateway.settings import KiokuSettings  # noqa: E402

KIOKU = str(Path(sys.executable).with_name("kioku"))
METRICS = ("R@1", "R@5", "R@10", "MRR", "nDCG@10")


def load_jsonl(name: str, folder: Path = HERE / "data") -> list[dict[str, Any]]:
    with (folder / name).open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


async def ingest(data_dir: Path, memories: list[dict[str, Any]]) -> dict[str, str]:
    """Add every memory oldest first; return server id -> benchmark key."""
    settings = KiokuSettings(data_dir=data_dir)
    ns = settings_scope(settings)
    ids: dict[str, str] = {}  # key -> server id
    ordered = sorted(memories, key=lambda m: (-float(m["age_days"]), m["key"]))
    async with open_app(settings) as app:
        services = Services.over(app)
        for mem in ordered:
            if mem["kind"] == "note":
                note = await services.notes.store(
                    {
                        "text": mem["text"],
                        "type": mem["type"],
                        "priority": mem.get("priority", ""),
                        "domain": mem.get("domain", ""),
                        "solved_query": "",
                    },
                    ns.write,
                )
                ids[mem["key"]] = note.id
            else:
                links = [link(spec, ids) for spec in mem.get("links", [])]
                added = await services.records.add(
                    ns, type=mem["type"], title=mem["title"], content=mem["text"], links=links
                )
                ids[mem["key"]] = added.record.id
        await app.settle()
        # a bulk load is a backlog: drafted first (jobs/embedding.py), embedded exactly
        # once reconcile finds the drafts, as the owner's periodic pass does
        while (await app.reconcile()).drafts:
            await app.settle()
        counts = await app.notes.counts()
        assert counts["pending_embedding"] == 0, counts
    return {server_id: key for key, server_id in ids.items()}


def link(spec: str, ids: dict[str, str]) -> str:
    relation, target = spec.split(":", 1)
    return f"{relation}:{ids[target]}"


def server(data_dir: Path, overrides: dict[str, str]) -> StdioServerParameters:
    """``kioku serve --standalone`` on ``data_dir``, with only ``overrides`` for settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("KIOKU_")}
    env.update({"KIOKU_DATA_DIR": str(data_dir), "KIOKU_LOG_LEVEL": "WARNING", **overrides})
    return StdioServerParameters(command=KIOKU, args=["serve", "--standalone"], env=env)


async def ask(client: Client, q: dict[str, Any], top: int, keys: dict[str, str]) -> list[str]:
    """``q`` through ``search_memory``; the ranked ids as benchmark keys (``keys``)."""
    args: dict[str, Any] = {"query": q["query"], "top": top}
    for field in ("type", "domain"):
        if q.get(field):
            args[field] = q[field]
    res = await client.call_tool("search_memory", args)
    if res.is_error:
        raise RuntimeError(f"{q['qid']}: {res.content[0].text}")  # type: ignore[union-attr]
    return [keys.get(r["id"], r["id"]) for r in res.structured_content["results"]]


async def run_mode(
    data_dir: Path,
    mode: str,
    queries: list[dict[str, Any]],
    keys: dict[str, str],
    overrides: dict[str, str],
    top: int,
) -> dict[str, Any]:
    params = server(data_dir, {"KIOKU_SEARCH__MODE": mode, **overrides})
    per_query: list[dict[str, Any]] = []
    client_ms: list[float] = []
    log_path = data_dir / "logs" / "activity.jsonl"
    log_offset = log_path.stat().st_size if log_path.exists() else 0
    async with Client(params) as client:
        for q in queries:
            started = time.perf_counter()
            ranked = await ask(client, q, top, keys)
            client_ms.append((time.perf_counter() - started) * 1000)
            per_query.append(
                {
                    "qid": q["qid"],
                    "kind": q["kind"],
                    "lang": q["lang"],
                    "split": q["split"],
                    **score(ranked, set(q["relevant"])),
                    "ranked": ranked,  # all `--top` of them (use_channel.py fuses deeper)
                }
            )
    server_ms = _server_latencies(log_path, log_offset)
    return {"mode": mode, "queries": per_query, "client_ms": client_ms, "server_ms": server_ms}


def _server_latencies(path: Path, offset: int) -> list[float]:
    with path.open(encoding="utf-8") as fh:
        fh.seek(offset)
        return [e["latency_ms"] for e in map(json.loads, fh) if e.get("event") == "search_memory"]


def aggregate(rows: list[dict[str, Any]]) -> dict[str, float]:
    return {m: statistics.fmean(r[m] for r in rows) for m in METRICS}


def print_report(results: list[dict[str, Any]]) -> None:
    """One table per split (dev: tuned on; test: held out), every mode side by side."""
    queries = results[0]["queries"]
    kinds = sorted({r["kind"] for r in queries})
    for split in ("dev", "test"):
        print(f"== {split} ==")
        header = f"{'group':18s} {'mode':8s} " + " ".join(f"{m:>8s}" for m in METRICS)
        print(header)
        print("-" * len(header))
        for group in ["ALL", *kinds, "lang:en", "lang:ja", "lang:th"]:
            for res in results:
                rows = [r for r in res["queries"] if r["split"] == split]
                if group.startswith("lang:"):
                    rows = [r for r in rows if r["lang"] == group[5:]]
                elif group != "ALL":
                    rows = [r for r in rows if r["kind"] == group]
                if not rows:
                    continue
                agg = aggregate(rows)
                label = f"{group} ({len(rows)})" if res is results[0] else ""
                print(
                    f"{label:18s} {res['mode']:8s} " + " ".join(f"{agg[m]:8.3f}" for m in METRICS)
                )
        print()
    for res in results:
        c, s = res["client_ms"], res["server_ms"]
        print(
            f"latency {res['mode']:8s} stdio round trip p50 {percentile(c, 0.5):6.2f} "
            f"p95 {percentile(c, 0.95):6.2f} ms | server side p50 {percentile(s, 0.5):6.2f} "
            f"p95 {percentile(s, 0.95):6.2f} ms"
        )


def parse_overrides(pairs: list[str]) -> dict[str, str]:
    out = {}
    for pair in pairs:
        key, value = pair.split("=", 1)
        out["KIOKU_" + key.upper().replace(".", "__")] = value
    return out


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--modes", nargs="+", default=["lexical", "dense", "hybrid"])
    ap.add_argument(
        "--set",
        nargs="*",
        default=[],
        metavar="SECTION.KEY=VALUE",
        help="settings for every mode, e.g. search.rrf_k=20",
    )
    ap.add_argument("--top", type=int, default=10)
    ap.add_argument("--data-dir", type=Path, help="reuse an ingested data dir")
    ap.add_argument("--out", type=Path, help="write per-query results as JSON")
    ap.add_argument(
        "--data",
        type=Path,
        default=HERE / "data",
        help="folder with memories.jsonl and queries.jsonl (heldout/: never tuned on)",
    )
    args = ap.parse_args()

    memories = load_jsonl("memories.jsonl", args.data)
    queries = load_jsonl("queries.jsonl", args.data)
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = args.data_dir or Path(tmp) / "data"
        keys_file = data_dir / "bench-keys.json"
        if keys_file.exists():
            keys = json.loads(keys_file.read_text())
        else:
            started = time.perf_counter()
            keys = await ingest(data_dir, memories)
            keys_file.write_text(json.dumps(keys))
            print(
                f"ingested {len(memories)} memories in {time.perf_counter() - started:.0f} s",
                file=sys.stderr,
            )
        overrides = parse_overrides(args.set)
        results = [
            await run_mode(data_dir, mode, queries, keys, overrides, args.top)
            for mode in args.modes
        ]
    print(
        f"{len(queries)} queries, {len(memories)} memories, top={args.top}, "
        f"overrides={args.set or 'none'}\n"
    )
    print_report(results)
    if args.out:
        args.out.write_text(json.dumps(results, ensure_ascii=False, indent=1))


if __name__ == "__main__":
    asyncio.run(main())
