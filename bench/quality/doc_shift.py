"""Round 8: the language shift on the documents too (measured, dropped).

Each memory's vector minus ``a`` times its own script's language direction (the query's
directions, ``mcp_gateway.search.calibration_vectors``), against the shipped two query views or
one; the shipped ranking (dense, latent terms, BM25) over the rebuilt channels. Prints
nDCG@10 per kind, dev and test (choose on dev). Needs ``embcache.py`` and
``latent_terms.py --single-pass`` caches (made on first use).

    python bench/quality/doc_shift.py
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))
sys.path.insert(0, str(HERE))

import latent_terms  # noqa: E402
from embcache import Cache  # noqa: E402
from latent_terms import current_of_type  # noqa: E402
from lexical_rules import by_split  # noqa: E402
from metrics import score  # noqa: E402
from tune import MODEL_IDS, channels, load  # noqa: E402

from mcp_gateway.common.sections import SearchSettings  # noqa: E402
from mcp_gateway.common.types import IndexHit  # noqa: E402
from mcp_gateway.embedders import lexical  # noqa: E402
from mcp_gateway.search.calibration import _direction, _ramp, for_model, query_script  # noqa: E402
from mcp_gateway.search.ranking import RankingParams, rank  # noqa: E402

C = load()
S = SearchSettings()
CALIB = for_model(MODEL_IDS["original"])
DIRECTION = {script: _direction(b64) for script, b64 in CALIB.directions.items()}
KEYS = [m["key"] for m in C.mems]
SCRIPTS = [query_script(m["text"]) for m in C.mems]
CACHE = Cache("original")
QUERY = {q["qid"]: CACHE.get("query", q["query"]).astype(np.float64) for q in C.queries}
DOCS = C.dmat.astype(np.float64)


def unit(x: np.ndarray) -> np.ndarray:
    out: np.ndarray = x / np.linalg.norm(x, axis=-1, keepdims=True)
    return out


def params_for(query: str) -> RankingParams:
    unspaced = lexical.unspaced_share(query)
    return RankingParams(
        thresholds=CALIB.thresholds,
        sparse_weight=S.sparse_weight * (1 - unspaced * (1 - S.unspaced_sparse_factor)),
        high_boost=S.high_boost,
        keep_margin=CALIB.keep_margin,
        high_first_margin=CALIB.high_first_margin,
        latent_weight=S.latent_weight,
        dense_weight=S.dense_weight,
        fusion=S.fusion,
        priority_rule=S.priority_rule,
        lexical_keep_ratio=S.lexical_keep_ratio,
    )


def run(doc_shift: float, views: list[float], label: str, latent: dict[str, Any]) -> None:
    docs = (
        DOCS
        if doc_shift == 0
        else unit(DOCS - doc_shift * np.stack([DIRECTION[s] for s in SCRIPTS]))
    )
    rows = []
    for q in C.queries:
        qid, direction, ramp = q["qid"], DIRECTION[query_script(q["query"])], _ramp(q["query"])
        sims = np.max([docs @ unit(QUERY[qid] - ramp * b * direction) for b in views], axis=0)
        sims = np.where(current_of_type(C, q), sims, -np.inf)
        dense = [IndexHit(KEYS[i], float(sims[i]), C.payloads[i]) for i in np.argsort(-sims)[:50]]
        sparse = channels(C, q)[1]
        chosen = rank(dense, sparse, params_for(q["query"]), 10, latent=latent[qid])
        ranked = [str(x.payload["source_id"]) for x in chosen]
        rows.append({**q, **score(ranked, set(q["relevant"]))})
    nd = by_split(rows)
    parts = []
    for split in ("dev", "test"):
        kinds = sorted(k.split(":", 1)[1] for k in nd if k.startswith(split + ":"))
        parts.append(f"{split} " + " ".join(f"{k[:5]}={nd[f'{split}:{k}']:.3f}" for k in kinds))
    print(f"{label:28s} | " + " | ".join(parts), flush=True)


def main() -> None:
    latent = latent_terms.latent_hits(C)
    run(0, [0.5, 1.0], "shipped", latent)
    for a in (0.25, 0.5, 0.75, 1.0):
        run(a, [0.5, 1.0], f"documents {a}, views .5/1", latent)
        for b in (0.5, 1.0):
            run(a, [b], f"documents {a}, view {b}", latent)


if __name__ == "__main__":
    main()
