"""Fresh-note quality: ranking while a burst of notes is only lexically indexed.

Simulates the index right after the newest ``--burst`` memories were added: they have
their lexical vector but no dense one yet (payload ``dense: false``), which is the
state ``add_note`` leaves them in until the embedding job runs. ``+Ns`` assumes
``--rate`` passages embedded per second in creation order (FIFO), i.e. the oldest of
the burst first. Scores dev and test with the shipped ranking (``tune.py`` channels).

``--embed-top K`` simulates embedding, during the search, the query's K best lexical hits
that are still pending (measured, not shipped: see docs/ranking.md).

    python bench/quality/fresh.py [--burst 500] [--rate 15] [--embed-top 3]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from tune import channels, evaluate, load, table  # noqa: E402

from mcp_gateway import lexical  # noqa: E402
from mcp_gateway.ranking import RankingParams  # noqa: E402
from mcp_gateway.settings import SearchSettings  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--burst", type=int, default=500)
    ap.add_argument("--rate", type=float, default=15.0)
    ap.add_argument("--embed-top", type=int, default=0)
    args = ap.parse_args()
    s = SearchSettings()
    c = load()
    params = RankingParams(
        thresholds={"*": 0.2},
        sparse_weight=s.sparse_weight,
        high_boost=s.high_boost,
        keep_margin=0.03,
    )

    def sparse_weight(query: str, p: RankingParams) -> float:
        return p.sparse_weight * (
            1 - lexical.unspaced_share(query) * (1 - s.unspaced_sparse_factor)
        )

    newest = [m["key"] for m in c.mems][-args.burst :]  # keys follow creation order
    done = int(10 * args.rate)
    for label, pending in (
        ("settled", []),
        ("+0s", newest),
        ("+10s", newest[done:]),  # oldest of the burst embedded first (FIFO)
        ("+10s lifo", newest[:-done]),  # newest first
    ):
        hits = {}
        for q in c.queries:
            pend = frozenset(pending)
            if args.embed_top:
                _, sparse = channels(c, q, pending=pend)
                found = [h.id for h in sparse if h.id in pend][: args.embed_top]
                pend -= set(found)
            hits[q["qid"]] = channels(c, q, pending=pend)
        table(evaluate(c, params, hits, sparse_weight_for=sparse_weight), label)


if __name__ == "__main__":
    main()
