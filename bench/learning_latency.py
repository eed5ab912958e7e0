"""What the learned keys cost a search, side by side in one process (issue 49).

On an ingested data dir (``bench/quality/learning.py --data-dir``'s ``data``), the
namespace gets ``--keys`` learned keys (the set's own queries as questions, each
pointing at one of its relevant memories, repeated with a suffix to reach the count);
then every query is searched twice per round, learned keys on and off, in alternating
order, with the answer cache off and the query's embedding cached (the whole search
path but the model: where a fixed cost shows most). Prints p50 / p95 in ms and their
ratio (on / off).

    python bench/learning_latency.py --data-dir DATA_DIR --keys 2000
"""

# ruff: noqa: E402
from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from harness import pct

from mcp_gateway.common.access import settings_scope
from mcp_gateway.common.settings import KiokuSettings
from mcp_gateway.search.request import SearchRequest
from mcp_gateway.services.app import open_app


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--data-dir", type=Path, required=True)
    ap.add_argument("--queries", type=Path, default=ROOT / "bench/quality/data/queries.jsonl")
    ap.add_argument("--keys", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    with args.queries.open(encoding="utf-8") as fh:
        queries = [json.loads(line) for line in fh if line.strip()]
    ids = {v: k for k, v in json.loads((args.data_dir / "bench-keys.json").read_text()).items()}
    settings = KiokuSettings(data_dir=args.data_dir)
    settings.search.answer_cache_size = 0
    scope = settings_scope(settings)
    async with open_app(settings, run_jobs=False) as app:
        learned = app.search.learned
        assert learned is not None
        await app.db.transaction(lambda c: c.execute("DELETE FROM learned_keys"))
        made = 0
        while made < args.keys:
            for q in queries:
                if made >= args.keys:
                    break
                views = (await app.search.vectors.embed(q["query"]))[0]
                note = ids.get(q["relevant"][0])
                if views and note:
                    question = q["query"] + ("" if made < len(queries) else f" #{made}")
                    await learned.store.add(scope.write, note, question, learned.model_id, views[0])
                    made += 1
        times: dict[bool, list[float]] = {True: [], False: []}
        spent: list[float] = []  # the learned keys' own step (lift), per search with keys on
        lift = learned.lift

        async def timed_lift(*a: object, **kw: object) -> object:
            started = time.perf_counter()
            try:
                return await lift(*a, **kw)  # type: ignore[arg-type]
            finally:
                spent.append((time.perf_counter() - started) * 1000)

        learned.lift = timed_lift  # type: ignore[method-assign,assignment]
        for r in range(args.rounds):
            for i, q in enumerate(queries):
                req = SearchRequest(query=q["query"], top=5, namespaces=scope.read)
                order = (True, False) if (i + r) % 2 else (False, True)
                for keys_on in order:
                    app.search.settings.learned_keys = keys_on
                    started = time.perf_counter()
                    await app.search.search(req)
                    if r:  # the first round warms the embedding cache and the keys
                        times[keys_on].append((time.perf_counter() - started) * 1000)
        await app.db.transaction(lambda c: c.execute("DELETE FROM learned_keys"))
    for q in (0.5, 0.95):
        on, off = pct(times[True], q), pct(times[False], q)
        print(f"p{int(q * 100)}: keys on {on:.2f} ms, off {off:.2f} ms, ratio {on / off:.3f}")
    print(f"mean on/off {statistics.fmean(times[True]) / statistics.fmean(times[False]):.3f}")
    print(f"{made} keys, {len(times[True])} searches each")
    print(f"the keys' own step: p50 {pct(spent, 0.5):.3f} ms, p95 {pct(spent, 0.95):.3f} ms")


if __name__ == "__main__":
    asyncio.run(main())
