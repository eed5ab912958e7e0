"""Fresh-note quality through the real server: searches right after a burst of adds.

``fresh.py`` simulates the state after a burst (nothing of it embedded: a lower bound).
This drives what an assistant meets. The older memories are ingested and settled
once (``run.py``'s loader). Then, round after round, on a fresh copy of that data dir:

1. start ``kioku serve --standalone`` over stdio;
2. add the newest ``--burst`` memories through ``add_note`` / ``record_add``, one
   call after another, as fast as the server acknowledges them;
3. at once (``+0s``) or ``--wait`` seconds after the last acknowledgement, send the
   round's slice of queries through ``search_memory``.

Meanwhile the server does what it does in use: the embedding job, the owner's prefetch,
and the search's own embedding of the pending notes it meets. Every query is asked in
every state, so the table compares like with like. The query slices rotate so no query
is always the first after a burst. ``settled`` is ``run.py``'s hybrid run over every
memory ingested and embedded, in the same session.

    python bench/quality/fresh_server.py [--burst 500] [--slice 24] [--waits 0 10]
                                         [--data bench/quality/data] [--no-settled]
                                         [--set embedder.int8_documents=true ...]
                                         [--toggle search.fast_first] [--split test]
                                         [--max-rounds 6]

``--toggle`` runs every round twice, the setting false then true, on the same copy of
the settled data dir: an interleaved A/B in one invocation.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from contextlib import closing
from pathlib import Path
from typing import Any

from mcp import Client

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))
sys.path.insert(0, str(HERE))

from metrics import percentile, score  # noqa: E402
from run import ask, ingest, link, load_jsonl, parse_overrides, run_mode, server  # noqa: E402


def ordered(memories: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Creation order, as ``run.ingest`` adds them."""
    return sorted(memories, key=lambda m: (-float(m["age_days"]), m["key"]))


async def add_burst(client: Client, burst: list[dict[str, Any]], ids: dict[str, str]) -> None:
    """Add each memory through its tool; ``ids`` maps benchmark keys to server ids."""
    for mem in burst:
        if mem["kind"] == "note":
            args: dict[str, Any] = {"text": mem["text"], "type": mem["type"]}
            for field in ("priority", "domain"):
                if mem.get(field):
                    args[field] = mem[field]
            res = await client.call_tool("add_note", args)
            new_id = res.structured_content["id"] if not res.is_error else None
        else:
            links = [link(spec, ids) for spec in mem.get("links", [])]
            res = await client.call_tool(
                "record_add",
                {
                    "type": mem["type"],
                    "title": mem["title"],
                    "content": mem["text"],
                    "links": links,
                },
            )
            new_id = res.structured_content["record"]["id"] if not res.is_error else None
        if new_id is None:
            raise RuntimeError(f"{mem['key']}: {res.content[0].text}")  # type: ignore[union-attr]
        ids[mem["key"]] = new_id


async def one_round(
    base: Path,
    work: Path,
    keys: dict[str, str],
    burst: list[dict[str, Any]],
    queries: list[dict[str, Any]],
    wait: float,
    overrides: dict[str, str],
) -> list[dict[str, Any]]:
    """One burst on a copy of ``base``, then ``queries`` ``wait`` seconds later."""
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(base, work)
    params = server(work, overrides)
    ids = {key: server_id for server_id, key in keys.items()}
    rows = []
    async with Client(params) as client:
        started = time.perf_counter()
        await add_burst(client, burst, ids)
        acked = time.perf_counter()
        pending_at_ack, _ = burst_state(work)
        if wait > 0:
            await asyncio.sleep(wait)
        back = {server_id: key for key, server_id in ids.items()}
        for q in queries:
            asked = time.perf_counter() - acked
            ranked = await ask(client, q, 10, back)
            rows.append(
                {
                    **q,
                    **score(ranked, set(q["relevant"])),
                    "asked_s": asked,
                    "burst_s": acked - started,
                }
            )
        pending_after, drafted = burst_state(work)
    for row in rows:
        row.update(pending_at_ack=pending_at_ack, pending_after=pending_after, drafts=drafted)
    return rows


def burst_state(data_dir: Path) -> tuple[int, int]:
    """(notes not embedded yet, vectors from the draft pass), read beside the server
    (SQLite in WAL mode)."""
    uri = f"file:{data_dir / 'kioku.sqlite3'}?mode=ro"
    with closing(sqlite3.connect(uri, uri=True)) as conn:
        pending = "SELECT COUNT(*) FROM notes WHERE embedded_model IS NULL AND deleted = 0"
        drafted = "SELECT COUNT(*) FROM vectors WHERE draft = 1"
        return int(conn.execute(pending).fetchone()[0]), int(conn.execute(drafted).fetchone()[0])


def report(label: str, rows: list[dict[str, Any]]) -> None:
    for split in ("dev", "test"):
        sel = [r for r in rows if r["split"] == split]
        if not sel:
            continue
        kinds = sorted({r["kind"] for r in sel})
        parts = [f"ALL={statistics.fmean(r['nDCG@10'] for r in sel):.3f}"]
        for kind in kinds:
            nd = statistics.fmean(r["nDCG@10"] for r in sel if r["kind"] == kind)
            parts.append(f"{kind[:6]}={nd:.3f}")
        print(f"{label:10s} {split:4s} " + " ".join(parts))
    asked = [r["asked_s"] for r in rows]
    bursts = [r["burst_s"] for r in rows]
    at_ack = statistics.median(r.get("pending_at_ack", 0) for r in rows)
    after = statistics.median(r.get("pending_after", 0) for r in rows)
    drafted = statistics.median(r.get("drafts", 0) for r in rows)
    print(
        f"{'':10s} asked {percentile(asked, 0.5):.1f} s (p90 {percentile(asked, 0.9):.1f}) "
        f"after the last ack; the burst took {statistics.median(bursts):.1f} s; notes "
        f"pending at the last ack {at_ack:.0f}, after the round's searches {after:.0f} "
        f"({drafted:.0f} drafts then)"
    )


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--burst", type=int, default=500)
    ap.add_argument("--slice", type=int, default=24, help="queries asked after each burst")
    ap.add_argument("--waits", type=float, nargs="+", default=[0.0, 10.0])
    ap.add_argument("--data", type=Path, default=HERE / "data")
    ap.add_argument("--out", type=Path, help="write per-query rows as JSON")
    ap.add_argument(
        "--set", nargs="*", default=[], metavar="SECTION.KEY=VALUE", help="server settings"
    )
    ap.add_argument("--no-settled", action="store_true", help="skip the settled reference")
    ap.add_argument(
        "--toggle",
        metavar="SECTION.KEY",
        help="a boolean setting: each round runs with it off, then on (interleaved A/B)",
    )
    ap.add_argument("--split", help="only this split's queries (dev or test)")
    ap.add_argument("--max-rounds", type=int, default=0, help="at most this many slices")
    args = ap.parse_args()
    memories = ordered(load_jsonl("memories.jsonl", args.data))
    queries = load_jsonl("queries.jsonl", args.data)
    if args.split:
        queries = [q for q in queries if q["split"] == args.split]
    older, burst = memories[: -args.burst], memories[-args.burst :]
    slices = [queries[i : i + args.slice] for i in range(0, len(queries), args.slice)]
    if args.max_rounds:
        slices = slices[: args.max_rounds]
        queries = [q for part in slices for q in part]
    results: dict[str, list[dict[str, Any]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        base, work = Path(tmp) / "base", Path(tmp) / "work"
        started = time.perf_counter()
        keys = await ingest(base, older)
        print(
            f"{len(older)} older memories settled in {time.perf_counter() - started:.0f} s",
            file=sys.stderr,
        )
        overrides = parse_overrides(args.set)
        if not args.no_settled:
            full = Path(tmp) / "full"
            full_keys = await ingest(full, memories)
            settled = await run_mode(full, "hybrid", queries, full_keys, overrides, 10)
            results["settled"] = [
                {**q, **r, "asked_s": 0.0, "burst_s": 0.0}
                for q, r in zip(queries, settled["queries"], strict=True)
            ]
        arms = [("", overrides)]
        if args.toggle:
            key = parse_overrides([f"{args.toggle}=x"]).popitem()[0]
            arms = [(f" {v}", {**overrides, key: v}) for v in ("false", "true")]
        for wait in args.waits:
            for n, part in enumerate(slices):
                for arm, settings in arms:
                    label = f"+{wait:g}s{arm}"
                    results.setdefault(label, [])
                    results[label] += await one_round(base, work, keys, burst, part, wait, settings)
                    print(f"{label}: round {n + 1}/{len(slices)}", file=sys.stderr)
    print(
        f"{len(queries)} queries; the newest {args.burst} of {len(memories)} memories "
        "added as a burst"
    )
    for label, rows in results.items():
        report(label, rows)
    if args.out:
        args.out.write_text(json.dumps(results, ensure_ascii=False, indent=1))


if __name__ == "__main__":
    asyncio.run(main())
