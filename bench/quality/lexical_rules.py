"""Rules tried (rank3, issue 13) to stop the lexical channel pulling hybrid below
dense-only on some kinds (crosslang, paraphrase, type_filter); none was kept
(bench/LOG.md, round 3). Reproduces every row of that table on ``tune.py``'s
channels: the shipped fusion with one change each.

    python bench/quality/lexical_rules.py          # one line per variant
    python bench/quality/lexical_rules.py --kinds  # plus dev/test nDCG@10 per kind

Each line: dev and test nDCG@10 overall, then the kinds where the variant is below
dense-only (difference), per split. Choose on the dev column only.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from metrics import score  # noqa: E402
from tune import MODEL_IDS, channels, load  # noqa: E402

from mcp_gateway.common.sections import SearchSettings  # noqa: E402
from mcp_gateway.common.types import IndexHit  # noqa: E402
from mcp_gateway.embedders import lexical  # noqa: E402
from mcp_gateway.search.calibration import for_model, query_script  # noqa: E402
from mcp_gateway.search.ranking import Candidate, RankingParams, _contributions, select  # noqa: E402

KINDS = ["buried", "contextual", "crosslang", "paraphrase", "superseded", "trigger", "type_filter"]
# a candidate's lexical part times factor(best dense score, its dense score, its script)
Factor = Callable[[float, float, str], float]
# the query's sparse weight times weight(dense hits, sparse hits)
Weight = Callable[[Sequence[IndexHit], Sequence[IndexHit]], float]


class Bench:
    def __init__(self) -> None:
        self.s = SearchSettings()
        self.c = load()
        self.hits = {q["qid"]: channels(self.c, q) for q in self.c.queries}
        calib = for_model(MODEL_IDS["original"])
        self.base = RankingParams(
            thresholds=calib.thresholds,
            sparse_weight=self.s.sparse_weight,
            high_boost=self.s.high_boost,
            keep_margin=calib.keep_margin,
        )
        self.script = {m["key"]: query_script(m["text"]) for m in self.c.mems}
        self.dense: dict[str, float] = {}

    def sparse_weight(self, query: str, base: float) -> float:
        unspaced = lexical.unspaced_share(query)
        return base * (1 - unspaced * (1 - self.s.unspaced_sparse_factor))

    def fuse(
        self, dense: Sequence[IndexHit], sparse: Sequence[IndexHit], p: RankingParams, f: Any
    ) -> list[Candidate]:
        """``ranking.fuse`` (settled index: no pending notes, prior 1) with a factor on
        each candidate's lexical part."""
        by_id: dict[str, Candidate] = {}
        for rank, (hit, part) in enumerate(
            zip(dense, _contributions(dense, p, p.dense_weight), strict=True), 1
        ):
            cand = by_id.setdefault(hit.id, Candidate(hit.id, dict(hit.payload)))
            cand.dense_rank, cand.distance = rank, max(0.0, 1.0 - hit.score)
            cand.score += part
        best = max((h.score for h in dense), default=0.0)
        floor = min((h.score for h in dense), default=0.0)
        for rank, (hit, part) in enumerate(
            zip(sparse, _contributions(sparse, p, p.sparse_weight), strict=True), 1
        ):
            cand = by_id.setdefault(hit.id, Candidate(hit.id, dict(hit.payload)))
            if f is not None:
                own = 1.0 - cand.distance if cand.distance is not None else floor
                part *= f(best, own, self.script[hit.id], dense)
            cand.sparse_rank, cand.sparse_score, cand.sparse_part = rank, hit.score, part
            cand.score += part
        for cand in by_id.values():
            if p.priority_rule != "first" and cand.priority == "high":
                cand.score *= p.high_boost
        return sorted(by_id.values(), key=lambda x: x.score, reverse=True)

    def run(
        self,
        *,
        factor_for: Callable[[str], Any] | None = None,
        weight: Weight | None = None,
        weight_for: Callable[[str], Weight] | None = None,
        dense_only: bool = False,
        base_weight: float | None = None,
        params: RankingParams | None = None,
    ) -> dict[str, float]:
        rows = []
        for q in self.c.queries:
            dense, sparse = self.hits[q["qid"]]
            if dense_only:
                sparse = []
            p = params or self.base
            p = replace(
                p, sparse_weight=self.sparse_weight(q["query"], base_weight or p.sparse_weight)
            )
            if weight_for is not None:
                weight = weight_for(q["query"])
            if weight is not None:
                p = replace(p, sparse_weight=p.sparse_weight * weight(dense, sparse))
            f = factor_for(q["query"]) if factor_for else None
            ranked = [
                str(x.payload["source_id"]) for x in select(self.fuse(dense, sparse, p, f), p, 10)
            ]
            rows.append({**q, **score(ranked, set(q["relevant"]))})
        return by_split(rows)


def by_split(rows: list[dict[str, Any]]) -> dict[str, float]:
    """Mean nDCG@10 per split, overall and per kind: ``{"dev:ALL": ..., "test:trigger": ...}``."""
    out: dict[str, float] = {}
    for split in ("dev", "test"):
        groups: dict[str, list[float]] = defaultdict(list)
        for r in rows:
            if r["split"] == split:
                groups["ALL"].append(r["nDCG@10"])
                groups[r["kind"]].append(r["nDCG@10"])
        out.update({f"{split}:{k}": statistics.fmean(v) for k, v in groups.items()})
    return out


def show(label: str, o: dict[str, float]) -> None:
    """One line per split of ``by_split``'s figures: ALL, then each kind."""
    for split in ("dev", "test"):
        kinds = " ".join(f"{k[:5]}={o[f'{split}:{k}']:.3f}" for k in KINDS)
        print(f"{label:30s} {split:4s} ALL={o[f'{split}:ALL']:.3f} {kinds}")


def fade(m: float) -> Callable[[float, float, str, Any], float]:
    return lambda best, own, script, dense: min(1.0, max(0.0, 1 - (best - own) / m))


def agreement(k: int, g0: float, g1: float) -> Weight:
    """Query-level: how far the sparse top-k's best dense score is below the dense top-1."""

    def weight(dense: Sequence[IndexHit], sparse: Sequence[IndexHit]) -> float:
        if not dense or not sparse:
            return 1.0
        known = {h.id: h.score for h in dense}
        near = max(known.get(h.id, dense[-1].score) for h in sparse[:k])
        return min(1.0, max(0.0, (g1 - (dense[0].score - near)) / (g1 - g0)))

    return weight


def confidence(g0: float, g1: float) -> Weight:
    """Query-level: the dense channel's own margin (top-1 minus top-2 cosine)."""

    def weight(dense: Sequence[IndexHit], sparse: Sequence[IndexHit]) -> float:
        if len(dense) < 2:
            return 1.0
        return min(1.0, max(0.0, (g1 - (dense[0].score - dense[1].score)) / (g1 - g0)))

    return weight


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--kinds", action="store_true")
    args = ap.parse_args()
    b = Bench()
    dense = b.run(dense_only=True)

    def line(label: str, o: dict[str, float]) -> None:
        below = {
            split: " ".join(
                f"{k}{o[f'{split}:{k}'] - dense[f'{split}:{k}']:+.3f}"
                for k in KINDS
                if o[f"{split}:{k}"] < dense[f"{split}:{k}"] - 1e-9
            )
            for split in ("dev", "test")
        }
        print(
            f"{label:34s} dev {o['dev:ALL']:.3f} test {o['test:ALL']:.3f} | below dense: "
            f"dev [{below['dev']}] test [{below['test']}]"
        )
        if args.kinds:
            for split in ("dev", "test"):
                print(
                    f"{'':34s} {split:4s} "
                    + " ".join(f"{k[:5]}={o[f'{split}:{k}']:.3f}" for k in KINDS)
                )

    line("dense only", dense)
    line("hybrid (shipped)", b.run())
    for k, g0, g1 in ((1, 0.0, 0.05), (3, 0.0, 0.05), (3, 0.0, 0.08), (5, 0.0, 0.03)):
        line(f"agreement k={k} {g0}-{g1}", b.run(weight=agreement(k, g0, g1)))
    for g0, g1 in ((0.0, 0.01), (0.0, 0.02), (0.0, 0.04)):
        line(f"dense confidence {g0}-{g1}", b.run(weight=confidence(g0, g1)))
    for m in (0.02, 0.025, 0.03, 0.04, 0.05, 0.08):
        line(f"fade across m={m}", b.run(factor_for=lambda q, m=m: fade(m)))
    for w in (0.4, 0.5):
        line(
            f"fade m=0.03, sparse weight {w}", b.run(factor_for=lambda q: fade(0.03), base_weight=w)
        )
    for n0 in (4, 6, 10):

        def exempt(q: str, n0: int = n0) -> Any:
            short = len(lexical.tokenize(q)) < n0
            return (lambda *a: 1.0) if short else fade(0.03)

        line(f"fade m=0.03, off below {n0} tokens", b.run(factor_for=exempt))
    for m in (0.02, 0.03, 0.05):

        def cross_script(q: str, m: float = m) -> Any:
            # fade only against the best dense hit written in another script
            def f(best: float, own: float, script: str, dense: Sequence[IndexHit]) -> float:
                other = max((h.score for h in dense if b.script[h.id] != script), default=-1.0)
                return 1.0 if other <= own else min(1.0, max(0.0, 1 - (other - own) / m))

            return f

        line(f"cross-script fade m={m}", b.run(factor_for=cross_script))
    for n0 in (0, 4, 6, 10):
        for keep in (0.0, 0.5):

            def by_query(q: str, n0: int = n0, keep: float = keep) -> Weight:
                long_enough = len(lexical.tokenize(q)) >= n0

                def weight(dense: Sequence[IndexHit], sparse: Sequence[IndexHit]) -> float:
                    other = bool(dense) and b.script[dense[0].id] != query_script(q)
                    return keep if other and long_enough else 1.0

                return weight

            line(
                f"top-1 in another script: x{keep}, >= {n0} tokens",
                b.run(weight_for=lambda q, f=by_query: f(q)),
            )
    rrf = replace(b.base, fusion="rrf", rrf_k=10.0)
    line("RRF k=10", b.run(params=rrf))
    line("RRF k=10 + agreement k=3 0-0.05", b.run(params=rrf, weight=agreement(3, 0.0, 0.05)))


if __name__ == "__main__":
    main()
