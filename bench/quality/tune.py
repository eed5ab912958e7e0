"""Offline ranking experiments: the server's ranking code over cached channel hits.

``run.py`` is the measurement of record (real server, MCP stdio). This module rebuilds
the two channels the index returns -- dense top-N by cosine (the embedded engine
searches exactly below 20k points, so numpy gives the same hits) and sparse top-N by
BM25 with Qdrant's IDF -- from cached vectors (``embcache.py``), then runs
``mcp_gateway.search.ranking`` on them, so a ranking variant is scored on dev in a second.

    from tune import load, channels, evaluate, table   # (bench/quality on sys.path)
    c = load(); hits = {q["qid"]: channels(c, q) for q in c.queries}
    table(evaluate(c, RankingParams(keep_margin=0.03), hits), "variant")
"""

from __future__ import annotations

import math
import statistics
import sys
from collections import Counter, defaultdict
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))
sys.path.insert(0, str(HERE))

from embcache import Cache, load_jsonl, memory_document  # noqa: E402
from metrics import score  # noqa: E402

from mcp_gateway.common.types import IndexHit  # noqa: E402
from mcp_gateway.indexing import lexical  # noqa: E402
from mcp_gateway.records.lifecycle import replaced_by_edge  # noqa: E402
from mcp_gateway.search.calibration import for_model, shift_views  # noqa: E402
from mcp_gateway.search.ranking import RankingParams, fuse, select  # noqa: E402

METRICS = ("R@1", "R@5", "R@10", "MRR", "nDCG@10")


@dataclass
class Corpus:
    mems: list[dict[str, Any]]
    queries: list[dict[str, Any]]
    dmat: np.ndarray  # memories x dim
    qvec: dict[str, np.ndarray]
    qwide: dict[str, np.ndarray]  # the wider-shifted view (empty: one view)
    sparse_docs: list[dict[int, float]]
    idf: dict[int, float]
    current: np.ndarray  # bool per memory: not retired (superseded or a duplicate)
    payloads: list[dict[str, Any]]


MODEL_IDS = {
    "original": "local/multilingual-e5-small-q4",
    "enpt": "local/multilingual-e5-small-q4-enpt",
}


def load(
    variant: str = "original", shift: float | None = None, wide: float | None = None
) -> Corpus:
    """``shift``/``wide``: the language-shift weights of the two query views (None: the
    model's calibrated values; wide 0: one view)."""
    mems, queries = load_jsonl("memories.jsonl"), load_jsonl("queries.jsonl")
    cache = Cache(variant)
    docs = [memory_document(m) for m in mems]
    dmat = np.stack([cache.get("passage", d) for d in docs])
    calib = for_model(MODEL_IDS[variant])
    weight = calib.language_shift if shift is None else shift
    wide_w = calib.wide_shift if wide is None else wide
    qvec, qwide = {}, {}
    for q in queries:
        views = shift_views(cache.get("query", q["query"]), q["query"], calib, weight, wide_w)
        qvec[q["qid"]] = np.array(views[0])
        if len(views) > 1:
            qwide[q["qid"]] = np.array(views[1])
    sparse_docs = []
    df: Counter[int] = Counter()
    for d in docs:
        sv = lexical.sparse_document(d)
        sparse_docs.append(dict(zip(sv.indices, sv.values, strict=True)))
        df.update(sv.indices)
    n = len(docs)
    idf = {t: math.log(1 + (n - c + 0.5) / (c + 0.5)) for t, c in df.items()}
    # before round 10 "A duplicates C" retired C, the canonical record, unlike the server
    retired = replaced_by(mems)
    current = np.array([m["key"] not in retired for m in mems])
    payloads = [
        {
            "kind": m["kind"],
            "source_id": m["key"],
            "type": m["type"],
            "priority": m.get("priority", ""),
            "domain": m.get("domain", ""),
            "dense": True,
        }
        for m in mems
    ]
    return Corpus(mems, queries, dmat, qvec, qwide, sparse_docs, idf, current, payloads)


def replaced_by(mems: list[dict[str, Any]]) -> dict[str, str]:
    """Retired key -> the key that replaced it, read from the links as the server reads
    them (``records.lifecycle.replaced_by_edge``)."""
    out: dict[str, str] = {}
    for m in mems:
        for link in m.get("links", []):
            relation, _, target = link.partition(":")
            if edge := replaced_by_edge(m["key"], relation, target):
                out[edge[0]] = edge[1]
    return out


def channels(
    c: Corpus, q: dict[str, Any], limit: int = 50, pending: frozenset[str] = frozenset()
) -> tuple[list[IndexHit], list[IndexHit]]:
    """Dense and sparse top-``limit`` as the index returns them (filters applied);
    memories in ``pending`` have no dense vector yet (a burst not embedded)."""
    mask = c.current.copy()
    if q.get("type"):
        mask &= np.array([m["type"] == q["type"] for m in c.mems])
    if pending:
        dmask = mask & np.array([m["key"] not in pending for m in c.mems])
    else:
        dmask = mask
    sims = c.dmat @ c.qvec[q["qid"]]
    if q["qid"] in c.qwide:  # a memory's dense score: its best over the query's views
        sims = np.maximum(sims, c.dmat @ c.qwide[q["qid"]])
    sims = np.where(dmask, sims, -np.inf)
    order = np.argsort(-sims)[:limit]
    dense = [
        IndexHit(c.mems[i]["key"], float(sims[i]), _payload(c, i, pending))
        for i in order
        if np.isfinite(sims[i])
    ]
    qterms = set(lexical.sparse_query(q["query"]).indices)
    sc = []
    for i, doc in enumerate(c.sparse_docs):
        if not mask[i]:
            continue
        s = sum(c.idf.get(t, 0.0) * doc[t] for t in qterms if t in doc)
        if s > 0:
            sc.append((s, i))
    sc.sort(key=lambda x: -x[0])
    sparse = [IndexHit(c.mems[i]["key"], s, _payload(c, i, pending)) for s, i in sc[:limit]]
    return dense, sparse


def _payload(c: Corpus, i: int, pending: frozenset[str]) -> dict[str, Any]:
    p = c.payloads[i]
    return {**p, "dense": False} if p["source_id"] in pending else p


def evaluate(
    c: Corpus,
    params: RankingParams,
    hits: dict[str, tuple[list[IndexHit], ...]],
    top: int = 10,
    sparse_weight_for=None,
) -> list[dict[str, Any]]:
    rows = []
    for q in c.queries:
        dense, sparse, *more = hits[q["qid"]]  # a third list: latent-term hits
        p = params
        if sparse_weight_for is not None:
            p = replace(params, sparse_weight=sparse_weight_for(q["query"], params))
        chosen = select(fuse(dense, sparse, p, more[0] if more else None), p, top, ())
        ranked = [str(x.payload["source_id"]) for x in chosen]
        rows.append({**q, **score(ranked, set(q["relevant"])), "ranked": ranked})
    return rows


def table(rows: list[dict[str, Any]], label: str) -> dict[str, float]:
    out = {}
    for split in ("dev", "test"):
        sel = [r for r in rows if r.get("split", "dev") == split]
        if not sel:
            continue
        groups = defaultdict(list)
        for r in sel:
            groups["ALL"].append(r)
            groups[r["kind"]].append(r)
        line = [f"{label:10s} {split:4s}"]
        for g in sorted(groups, key=lambda g: (g != "ALL", g)):
            nd = statistics.fmean(r["nDCG@10"] for r in groups[g])
            out[f"{split}:{g}"] = nd
            line.append(f"{g[:6]}={nd:.3f}")
        print(" ".join(line))
    return out
