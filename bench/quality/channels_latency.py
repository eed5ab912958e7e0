"""New-query search latency over stdio with different ``embedder.channels``, interleaved.

One ``kioku serve --standalone`` per variant, each on its own copy of an ingested data
dir (``run.py --data-dir``; its index must hold every channel a variant names: ``kioku
reindex`` with all of them), every query of the set sent to each variant in turn, the
order rotating every query, so every variant sees the same load. Every query is new to
every server (each has its own query cache), so each call embeds the query with e5 and
each of the variant's channels. Prints the client round trip and the server side
(activity log) p50 / p95 per variant and its p50 ratio to the first.

    flock "${TMPDIR:-/tmp}/kioku-bench.lock" nice python bench/quality/channels_latency.py \\
        --data-dir DIR --data bench/quality/data --variant '[]' \\
        --variant '["static_use","minilm"]' --variant '["use","minilm"]'
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import sys
import tempfile
import time
from contextlib import AsyncExitStack
from pathlib import Path

from mcp import Client

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from metrics import percentile  # noqa: E402
from run import _server_latencies, ask, keys_of, load_jsonl, server  # noqa: E402


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--data-dir", type=Path, required=True, help="run.py's --data-dir")
    ap.add_argument("--data", type=Path, default=HERE / "data")
    ap.add_argument("--variant", action="append", required=True, help="embedder.channels JSON")
    ap.add_argument("--queries", type=int, default=300)
    args = ap.parse_args()
    queries = load_jsonl("queries.jsonl", args.data)[: args.queries]
    source = args.data_dir / args.data.name
    keys = keys_of(source)
    client_ms: list[list[float]] = [[] for _ in args.variant]
    with tempfile.TemporaryDirectory() as tmp:
        dirs = []
        for i in range(len(args.variant)):
            dirs.append(Path(tmp) / f"v{i}")
            shutil.copytree(source, dirs[-1], ignore=shutil.ignore_patterns("*.lock", "*.sock"))
        async with AsyncExitStack() as stack:
            clients = []
            for d, variant in zip(dirs, args.variant, strict=True):
                env = {"KIOKU_EMBEDDER__CHANNELS": variant, "KIOKU_SEARCH__MODE": "hybrid"}
                client = await stack.enter_async_context(Client(server(d, env)))
                await ask(client, {"qid": "warm", "query": "warm up"}, 5, keys)
                clients.append(client)
            offsets = [(d / "logs" / "activity.jsonl").stat().st_size for d in dirs]
            for n, q in enumerate(queries):
                for k in range(len(clients)):
                    i = (n + k) % len(clients)
                    started = time.perf_counter()
                    await ask(clients[i], q, 10, keys)
                    client_ms[i].append((time.perf_counter() - started) * 1000)
        server_ms = [
            _server_latencies(d / "logs" / "activity.jsonl", off)
            for d, off in zip(dirs, offsets, strict=True)
        ]
    base_c, base_s = percentile(client_ms[0], 0.5), percentile(server_ms[0], 0.5)
    for variant, c, s in zip(args.variant, client_ms, server_ms, strict=True):
        print(
            f"{variant:28s} round trip p50 {percentile(c, 0.5):6.2f} p95 {percentile(c, 0.95):6.2f}"
            f" ms ({percentile(c, 0.5) / base_c:.2f}x) | server p50 {percentile(s, 0.5):6.2f}"
            f" p95 {percentile(s, 0.95):6.2f} ms ({percentile(s, 0.5) / base_s:.2f}x)"
        )
    print(json.dumps({"queries": len(queries)}))


if __name__ == "__main__":
    asyncio.run(main())
