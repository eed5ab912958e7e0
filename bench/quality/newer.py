"""A newer note that says nearly what an older one says comes first (``reorder.newer_first``).

Round 11. Notes have no ``supersedes`` edge: when a fact changes (Node 18 -> 20, npm ->
pnpm), the assistant writes a new note and the old one stays live; both match a question
about the fact and the older often ranks first. ``outdated`` queries (variant
``replaced``) ask for the current state: only the newer note is relevant. Their
``control`` variant asks for an older note's own fact while a newer note on the same
topic (a different fact, still valid) is a distractor: a blunt "newer first" loses
there. Printed per kind on dev and test, over the shipped path (retired records carried
to their heads); choose on the dev lines only.

    python bench/quality/newer.py
"""

from __future__ import annotations

import statistics
import sys
import time
from collections import defaultdict
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from metrics import score  # noqa: E402
from redirect import Experiment  # noqa: E402

from mcp_gateway.search.ranking import fuse, select  # noqa: E402
from mcp_gateway.search.reorder import carry_to_heads, newer_first  # noqa: E402

DAY = 86_400.0


class Newer(Experiment):
    def __init__(self) -> None:
        super().__init__()
        now = time.time()
        c = self.all
        created = {m["key"]: now - float(m["age_days"]) * DAY for m in c.mems}
        for payloads in (c.payloads, self.b.c.payloads):
            for p in payloads:
                p["created_at"] = created[p["source_id"]]
        self.vectors = {m["key"]: c.dmat[i] for i, m in enumerate(c.mems)}

    def rows(self, similarity: float | None, ratio: float = 0.0) -> list[dict[str, Any]]:
        out = []
        for q in self.b.c.queries:
            base = self.b.base
            p = replace(base, sparse_weight=self.b.sparse_weight(q["query"], base.sparse_weight))
            dense, sparse = self.all_hits[q["qid"]]
            cands = fuse(dense, sparse, p, self.all_latent[q["qid"]])
            chosen = select(carry_to_heads(cands, self.heads_for(q), 1.0), p, 10)
            if similarity is not None:
                vecs = {c.point_id: self.vectors[c.point_id] for c in chosen}
                chosen = newer_first(chosen, vecs, similarity, ratio)
            ranked = [str(x.payload["source_id"]) for x in chosen]
            out.append({**q, **score(ranked, set(q["relevant"]))})
        return out


def group(row: dict[str, Any]) -> str:
    return f"{row['kind']}:{row['variant']}" if row.get("variant") else row["kind"]


def show(label: str, rows: list[dict[str, Any]]) -> None:
    for split in ("dev", "test"):
        groups: dict[str, list[float]] = defaultdict(list)
        for r in rows:
            if r["split"] == split:
                groups["ALL"].append(r["nDCG@10"])
                groups[group(r)].append(r["nDCG@10"])
        cells = " ".join(f"{k[:16]}={statistics.fmean(v):.3f}" for k, v in sorted(groups.items()))
        print(f"{label:22s} {split:4s} {cells}", flush=True)


def pair_cosines(x: Newer) -> None:
    """How alike the notes of a pair are, beside same-type neighbours (dev only)."""
    for variant in ("replaced", "control"):
        sims = []
        for q in x.b.c.queries:
            if q.get("variant") != variant or q["split"] != "dev" or "outdated_pair" not in q:
                continue
            a, b = q["relevant"][0], q["outdated_pair"]
            if a in x.vectors and b in x.vectors:
                sims.append(float(np.dot(x.vectors[a], x.vectors[b])))
        if sims:
            mid = statistics.median(sims)
            print(f"dev {variant} pair cosine: {min(sims):.3f} / {mid:.3f} / {max(sims):.3f}")


def main() -> None:
    x = Newer()
    pair_cosines(x)
    show("shipped", x.rows(None))
    for similarity in (0.86, 0.88, 0.90, 0.92, 0.94):
        for ratio in (0.0, 0.5, 0.8):
            show(f"newer s={similarity} r={ratio}", x.rows(similarity, ratio))


if __name__ == "__main__":
    main()
