"""Late interaction (ColBERT-style MaxSim over e5's own token states) as a re-ranker.

Round 9, measured and dropped (bench/LOG.md): a query's MaxSim score for a memory is
the mean over the query's tokens of the best cosine with any of the memory's tokens,
both from the shipped engine's pass (with the e5 prefix; prefix and <s>/</s> not kept).
Printed per kind, dev and test: dense only, the shipped hybrid (dense, BM25, latent
terms), MaxSim alone over every memory, and the hybrid's top candidates re-scored with
MaxSim beside their fused score at a few weights (chosen on the dev line only).

Token states are cached under ``.cache/`` (about 20 s on 2 cores the first time).

    python bench/quality/late_interaction.py
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from embcache import CACHE, load_jsonl, memory_document  # noqa: E402
from latent_terms import current_of_type, latent_hits  # noqa: E402
from lexical_rules import Bench, by_split, show  # noqa: E402
from metrics import score  # noqa: E402

from mcp_gateway.search.ranking import fuse, select  # noqa: E402

PATH = CACHE / "token-states.npz"


def token_states() -> dict[str, np.ndarray]:
    """key or qid -> its unit-length token states [tokens, dim] (float16)."""
    if PATH.exists():
        data = np.load(PATH)
        return {k: data[k] for k in data.files}
    from mcp_gateway.embedders.e5_onnx import OnnxE5, model_path

    engine = OnnxE5(model_path("original"))
    items = [(m["key"], memory_document(m), "passage: ") for m in load_jsonl("memories.jsonl")]
    items += [(q["qid"], q["query"], "query: ") for q in load_jsonl("queries.jsonl")]
    out: dict[str, np.ndarray] = {}
    for key, text, prefix in items:
        found: list[list[np.ndarray]] = [[]]
        engine._embed([text], prefix, 2, found)  # every window's states of the one text
        states = np.concatenate(found[0]).astype(np.float32)
        states /= np.maximum(np.linalg.norm(states, axis=1, keepdims=True), 1e-6)
        out[key] = states.astype(np.float16)
    CACHE.mkdir(exist_ok=True)
    np.savez_compressed(PATH, **out)
    return out


class Experiment:
    def __init__(self) -> None:
        self.b = Bench()
        self.states = {k: v.astype(np.float32) for k, v in token_states().items()}
        self.keys = [m["key"] for m in self.b.c.mems]
        self.latent = latent_hits(self.b.c)

    def maxsim(self, qid: str, key: str) -> float:
        return float((self.states[qid] @ self.states[key].T).max(axis=1).mean())

    def alone(self) -> dict[str, float]:
        rows = []
        for q in self.b.c.queries:
            mask = current_of_type(self.b.c, q)
            scored = sorted(
                ((self.maxsim(q["qid"], k), k) for i, k in enumerate(self.keys) if mask[i]),
                reverse=True,
            )
            rows.append({**q, **score([k for _, k in scored[:10]], set(q["relevant"]))})
        return by_split(rows)

    def rescored(self, weight: float, depth: int = 30) -> dict[str, float]:
        """The shipped fusion, then its top ``depth`` candidates get ``weight`` x their
        MaxSim z-score (within those candidates) added before the shipped selection."""
        rows = []
        for q in self.b.c.queries:
            dense, sparse = self.b.hits[q["qid"]]
            base = self.b.base
            p = replace(base, sparse_weight=self.b.sparse_weight(q["query"], base.sparse_weight))
            cands = sorted(fuse(dense, sparse, p, self.latent[q["qid"]]), key=lambda c: -c.score)
            if weight:
                top = cands[:depth]
                ms = np.array([self.maxsim(q["qid"], str(c.payload["source_id"])) for c in top])
                for cand, z in zip(top, (ms - ms.mean()) / (ms.std() + 1e-6), strict=True):
                    cand.score += weight * float(z)
                cands.sort(key=lambda c: -c.score)
            ranked = [str(x.payload["source_id"]) for x in select(cands, p, 10)]
            rows.append({**q, **score(ranked, set(q["relevant"]))})
        return by_split(rows)


def main() -> None:
    x = Experiment()
    show("dense only", x.b.run(dense_only=True))
    show("hybrid (shipped)", x.rescored(0.0))
    show("MaxSim alone", x.alone())
    for weight in (0.02, 0.05, 0.1, 0.2):
        show(f"hybrid, top 30 + {weight} x z", x.rescored(weight))


if __name__ == "__main__":
    main()
