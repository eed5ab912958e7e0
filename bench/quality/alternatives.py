"""Does ``search_memory(alternatives=[...])`` pay? Each query with and without the
other phrasing an assistant would add, in-process on an ingested data dir.

The phrasings (``alternatives/<set>.tsv``: qid, TAB, one phrasing) were written for
issue 30 as an assistant would write them, from the query alone, never looking at
the memories or the answers: the same question in another language (English ->
Japanese, Japanese/Thai -> English), sometimes with the usual name of the technique.
Prints nDCG@10 per split and kind, without -> with, and a paired bootstrap 95 %
interval of the change.

    python bench/quality/run.py --modes hybrid --data-dir DIR    # ingest once
    python bench/quality/alternatives.py --data bench/quality/data --data-dir DIR \\
        --phrasings bench/quality/alternatives/data.tsv
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))
sys.path.insert(0, str(HERE))

from metrics import ndcg_at  # noqa: E402

from mcp_gateway.common.settings import KiokuSettings  # noqa: E402
from mcp_gateway.search.service import SearchRequest  # noqa: E402
from mcp_gateway.services.app import open_app  # noqa: E402


def bootstrap(deltas: list[float], rounds: int = 2000, seed: int = 7) -> tuple[float, float]:
    rng = random.Random(seed)
    means = sorted(statistics.fmean(rng.choices(deltas, k=len(deltas))) for _ in range(rounds))
    return means[int(0.025 * rounds)], means[int(0.975 * rounds)]


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--data", type=Path, required=True, help="folder with queries.jsonl")
    ap.add_argument("--data-dir", type=Path, required=True, help="run.py's ingested data dir")
    ap.add_argument("--phrasings", type=Path, required=True)
    args = ap.parse_args()
    with (args.data / "queries.jsonl").open(encoding="utf-8") as fh:
        queries = [json.loads(line) for line in fh if line.strip()]
    with args.phrasings.open(encoding="utf-8") as fh:
        phrasings = dict(line.rstrip("\n").split("\t", 1) for line in fh if line.strip())
    keys = json.loads((args.data_dir / "bench-keys.json").read_text())  # server id -> key
    settings = KiokuSettings(data_dir=args.data_dir)
    settings.search.answer_cache_size = 0
    rows: list[tuple[str, str, float, float]] = []
    async with open_app(settings, run_jobs=False) as app:
        for q in queries:
            if q["qid"] not in phrasings:
                continue
            base = {"type": q.get("type", ""), "domain": q.get("domain", ""), "top": 10}
            alone = await app.search.search(SearchRequest(q["query"], **base))
            helped = await app.search.search(
                SearchRequest(q["query"], alternatives=(phrasings[q["qid"]],), **base)
            )
            relevant = set(q["relevant"])
            rows.append(
                (
                    q["split"],
                    q["kind"],
                    ndcg_at([keys.get(r.id, r.id) for r in alone.results], relevant, 10),
                    ndcg_at([keys.get(r.id, r.id) for r in helped.results], relevant, 10),
                )
            )
    for split in ("dev", "test"):
        for kind in ["ALL", *sorted({r[1] for r in rows})]:
            sel = [r for r in rows if r[0] == split and kind in ("ALL", r[1])]
            if not sel:
                continue
            before, after = (statistics.fmean(r[i] for r in sel) for i in (2, 3))
            lo, hi = bootstrap([r[3] - r[2] for r in sel])
            print(
                f"{split:5s} {kind:16s} {len(sel):4d} {before:.3f} -> {after:.3f} "
                f"{after - before:+.3f} [{lo:+.3f}, {hi:+.3f}]"
            )


if __name__ == "__main__":
    asyncio.run(main())
