"""Retired records hand their evidence to their lifecycle heads (``reorder.carry_to_heads``).

Round 10. The index used to drop superseded and duplicate records from every search
(``current_only``), so a query in the old wording of a changed decision ("are deploys
only on Tuesday and Thursday?") had to find the decision now in force on its own. Here
the channels run over every record, and each retired record that they return is
replaced by its head at ``factor`` x its fused score (``record_search(current_only)``
has always resolved old wording to the head this way). Printed per kind, dev and test;
choose ``factor`` on the dev line only.

    python bench/quality/redirect.py
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from latent_terms import latent_hits  # noqa: E402
from lexical_rules import Bench, by_split, show  # noqa: E402
from metrics import score  # noqa: E402
from tune import Corpus, channels, replaced_by  # noqa: E402

from mcp_gateway.records.lifecycle import heads  # noqa: E402
from mcp_gateway.search.ranking import fuse, select  # noqa: E402
from mcp_gateway.search.reorder import Head, carry_to_heads  # noqa: E402


def head_of(c: Corpus) -> dict[str, str]:
    """Every memory's lifecycle head, by the server's own walk (``lifecycle.heads``)."""
    nxt = replaced_by(c.mems)
    return heads([m["key"] for m in c.mems], lambda key: [nxt[key]] if key in nxt else [])


def with_retired(c: Corpus) -> Corpus:
    """The corpus with every record searchable, retired ones marked ``current: false``."""
    payloads = [{**p, "current": bool(cur)} for p, cur in zip(c.payloads, c.current, strict=True)]
    return replace(c, current=np.ones_like(c.current), payloads=payloads)


class Experiment:
    def __init__(self) -> None:
        self.b = Bench()
        self.latent = latent_hits(self.b.c)
        self.all = with_retired(self.b.c)
        self.all_hits = {q["qid"]: channels(self.all, q) for q in self.all.queries}
        self.all_latent = latent_hits(self.all)
        heads = head_of(self.b.c)
        payload = {p["source_id"]: p for p in self.all.payloads}
        self.heads = {k: Head(h, payload[h]) for k, h in heads.items()}

    def run(self, factor: float | None) -> dict[str, float]:
        """``None``: the shipped path (retired records filtered out in the index)."""
        rows = []
        for q in self.b.c.queries:
            base = self.b.base
            p = replace(base, sparse_weight=self.b.sparse_weight(q["query"], base.sparse_weight))
            if factor is None:
                dense, sparse = self.b.hits[q["qid"]]
                cands = fuse(dense, sparse, p, self.latent[q["qid"]])
            else:
                dense, sparse = self.all_hits[q["qid"]]
                cands = fuse(dense, sparse, p, self.all_latent[q["qid"]])
                cands = carry_to_heads(cands, self.heads_for(q), factor)
            ranked = [str(x.payload["source_id"]) for x in select(cands, p, 10)]
            rows.append({**q, **score(ranked, set(q["relevant"]))})
        return by_split(rows)

    def heads_for(self, q: dict[str, Any]) -> dict[str, Head]:
        """A head of another type than the query's filter is out of its reach."""
        want = q.get("type")
        return {k: h for k, h in self.heads.items() if not want or h.payload["type"] == want}


def main() -> None:
    x = Experiment()
    show("dense only", x.b.run(dense_only=True))
    show("hybrid (shipped)", x.run(None))
    for factor in (1.0, 0.9, 0.8, 0.7, 0.5):
        show(f"carry to heads x{factor}", x.run(factor))


if __name__ == "__main__":
    main()
