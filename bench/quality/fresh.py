"""Fresh-note quality: ranking while a burst of notes is only lexically indexed.

Simulates the index right after the newest ``--burst`` memories were added: they have
their lexical vector but no dense one yet (payload ``dense: false``), which is the
state ``add_note`` leaves them in until the embedding job runs. ``+Ns`` assumes
``--rate`` passages embedded per second in creation order (FIFO), i.e. the oldest of
the burst first. Scores dev and test with the shipped ranking (``tune.py`` channels).

The search embeds its best pending lexical hits itself (``mcp_gateway/search/fresh.py``):
simulated with the shipped rule (``choose``: at most ``--top`` hits, each at most
``--max-bytes``, predicted within ``--budget-ms`` at ``--ms-per-byte``), each query
seeing the burst state afresh (what earlier searches embedded is not carried over, so
this is a lower bound). ``--top 0`` is the lexical-only behaviour before it.

``--burst-s S`` (round 6): +0 s after a burst that took S seconds to add -- a client
adding one note after another over MCP at the measured ack (~6.7 ms: 500 in 3.4 s) while
the jobs embed ``--rate`` a second -- instead of one that arrived all at once.

    python bench/quality/fresh.py [--burst 500] [--rate 21] [--top 3] [--budget-ms 60]
                                  [--burst-s 3.4]
                                  [--prefetch-rate 17 --rate 33 --rate-alone 48]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from embcache import memory_document  # noqa: E402
from tune import MODEL_IDS, channels, evaluate, load, table  # noqa: E402

from mcp_gateway.common.sections import SearchSettings  # noqa: E402
from mcp_gateway.indexing import lexical  # noqa: E402
from mcp_gateway.search.calibration import for_model  # noqa: E402
from mcp_gateway.search.fresh import PRIOR_MS_PER_BYTE, FreshLimits, choose  # noqa: E402
from mcp_gateway.search.ranking import RankingParams  # noqa: E402


def main() -> None:
    s = SearchSettings()
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--burst", type=int, default=500)
    ap.add_argument("--rate", type=float, default=21.0, help="job passages per second")
    ap.add_argument("--top", type=int, default=s.fresh_top)
    ap.add_argument("--max-bytes", type=int, default=s.fresh_max_bytes)
    ap.add_argument("--budget-ms", type=float, default=s.fresh_budget_ms)
    ap.add_argument("--ms-per-byte", type=float, default=PRIOR_MS_PER_BYTE)
    ap.add_argument(
        "--burst-s",
        type=float,
        default=0.0,
        help="also score +0 s after a burst that took this long to add (the jobs embed "
        "--rate a second meanwhile, oldest first), e.g. --burst * the add ack",
    )
    ap.add_argument(
        "--prefetch-rate",
        type=float,
        default=0.0,
        help="also score +2 s / +5 s with the owner's prefetch embedding this many a second "
        "newest first while the job embeds --rate oldest first (against --rate-alone for "
        "the job without it), e.g. the rates bench/ingest.py measured",
    )
    ap.add_argument("--rate-alone", type=float, default=21.0, help="job rate without prefetch")
    args = ap.parse_args()
    limits = FreshLimits(args.top, args.max_bytes, args.budget_ms)
    c = load()
    size = {m["key"]: len(memory_document(m).encode()) for m in c.mems}
    params, sparse_weight = shipped_ranking()

    newest = [m["key"] for m in c.mems][-args.burst :]  # keys follow creation order
    done = int(10 * args.rate)
    print(f"{limits}, {args.ms_per_byte} ms/byte, job {args.rate}/s")
    states = [
        ("settled", []),
        ("+0s", newest),
        ("+10s", newest[done:]),  # oldest of the burst embedded first (FIFO)
        ("+10s lifo", newest[:-done]),  # newest first
    ]
    if args.prefetch_rate > 0:  # round 7: the owner's prefetch, newest first, beside the job
        for secs in (2, 5):
            fifo, lifo = int(secs * args.rate), int(secs * args.prefetch_rate)
            states.append((f"+{secs}s job only", newest[int(secs * args.rate_alone) :]))
            states.append((f"+{secs}s job+prefetch", newest[fifo : len(newest) - lifo]))
    if args.burst_s > 0:
        during = min(len(newest), int(args.burst_s * args.rate))
        states.insert(2, (f"+0s after a {args.burst_s:g} s burst", newest[during:]))
    for label, pending in states:
        hits, embedded = {}, []
        for q in c.queries:
            pend = frozenset(pending)
            if limits.top and pend:
                _, sparse = channels(c, q, pending=pend)
                met = [h.id for h in sparse if h.id in pend][: limits.top]
                picked = choose([size[k] for k in met], limits, args.ms_per_byte)
                pend -= {met[i] for i in picked}
                embedded.append(len(picked))
            hits[q["qid"]] = channels(c, q, pending=pend)
        table(evaluate(c, params, hits, sparse_weight_for=sparse_weight), label)
        if embedded:
            print(f"  notes embedded per search: mean {statistics.fmean(embedded):.2f}")


def shipped_ranking() -> tuple[RankingParams, Callable[[str, RankingParams], float]]:
    """The server's ranking parameters for the bundled e5, and its sparse weight for a
    query (lower for unspaced scripts)."""
    s = SearchSettings()
    calib = for_model(MODEL_IDS["original"])
    params = RankingParams(
        thresholds=calib.thresholds,
        sparse_weight=s.sparse_weight,
        latent_weight=s.latent_weight,
        high_boost=s.high_boost,
        keep_margin=calib.keep_margin,
    )

    def sparse_weight(query: str, p: RankingParams) -> float:
        return p.sparse_weight * (
            1 - lexical.unspaced_share(query) * (1 - s.unspaced_sparse_factor)
        )

    return params, sparse_weight


if __name__ == "__main__":
    main()
