"""Could a model-free vector stand in for a note the model has not read yet?

Ranks every memory by one channel alone and prints test nDCG@10 per kind:
- ``bm25``: the shipped lexical channel;
- ``input``: the mean of the model's input word embeddings of the text's tokens;
- ``distilled``: the mean of each token's own model output (``[bos, token, eos]``
  through the encoder once, a model2vec-style table for the corpus' tokens);
each static vector plain or idf-weighted, centred on the corpus mean. The question
(bench/LOG.md, round 6): do they find cross-language and paraphrase memories that
BM25 cannot, cheaply enough to compute at ``add_note``'s acknowledgement?

    python bench/quality/static_channel.py
"""

from __future__ import annotations

import collections
import math
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))
sys.path.insert(0, str(HERE))

from embcache import load_jsonl, memory_document  # noqa: E402
from metrics import score  # noqa: E402

from mcp_gateway.embedders import lexical, local  # noqa: E402

MEMS, QUERIES = load_jsonl("memories.jsonl"), load_jsonl("queries.jsonl")
KEYS = [m["key"] for m in MEMS]


def report(label: str, rank: Callable[[int], list[str]]) -> None:
    rows: dict[str, list[float]] = collections.defaultdict(list)
    for i, q in enumerate(QUERIES):
        if q["split"] != "test":
            continue
        s = score(rank(i), set(q["relevant"]))["nDCG@10"]
        rows[q["kind"]].append(s)
        rows["ALL"].append(s)
    print(label, {k: round(float(np.mean(v)), 3) for k, v in sorted(rows.items())})


def static_ranker(
    doc_rows: list[np.ndarray],
    query_rows: list[np.ndarray],
    weights: Callable[[list[int]], np.ndarray],
    doc_tokens: list[list[int]],
    query_tokens: list[list[int]],
) -> Callable[[int], list[str]]:
    def bag(rows: np.ndarray, tokens: list[int]) -> np.ndarray:
        w = weights(tokens)
        return (rows * w[:, None]).sum(0) / max(w.sum(), 1e-9)

    docs = np.stack([bag(r, t) for r, t in zip(doc_rows, doc_tokens, strict=True)])
    mean = docs.mean(0)
    docs = docs - mean
    docs /= np.linalg.norm(docs, axis=1, keepdims=True) + 1e-9

    def rank(i: int) -> list[str]:
        v = bag(query_rows[i], query_tokens[i]) - mean
        v /= np.linalg.norm(v) + 1e-9
        return [KEYS[j] for j in np.argsort(-(docs @ v))[:10]]

    return rank


def main() -> None:
    engine = local._onnx_engine("original", True, False, False)
    tok, weights_file = engine._tokenizer, engine._file
    doc_tokens = [tok.encode("passage: " + memory_document(m)) for m in MEMS]
    query_tokens = [tok.encode("query: " + q["query"]) for q in QUERIES]
    n = len(doc_tokens)
    df = collections.Counter(t for ts in doc_tokens for t in set(ts))
    schemes: dict[str, Callable[[list[int]], np.ndarray]] = {
        "mean": lambda ts: np.ones(len(ts)),
        "idf": lambda ts: np.array([math.log(1 + n / (1 + df.get(t, 0))) for t in ts]),
    }

    def input_rows(ts: list[int]) -> np.ndarray:
        return weights_file.word_rows(np.array([ts], np.int64))[0].astype(np.float64)

    vocab = sorted({t for ts in doc_tokens + query_tokens for t in ts})
    session, table = engine._session(2), {}
    for a in range(0, len(vocab), 256):
        chunk = vocab[a : a + 256]
        windows = [_Window([tok.bos, t, tok.eos]) for t in chunk]
        hidden = engine._hidden(session, windows, np.ones((len(chunk), 3), np.float32))
        table.update(
            {t: row.astype(np.float64) for t, row in zip(chunk, hidden[:, 1], strict=True)}
        )

    def distilled_rows(ts: list[int]) -> np.ndarray:
        return np.stack([table[t] for t in ts])

    for name, rows_of in (("input", input_rows), ("distilled", distilled_rows)):
        d_rows, q_rows = [rows_of(t) for t in doc_tokens], [rows_of(t) for t in query_tokens]
        for scheme, w in schemes.items():
            report(f"{name} {scheme}", static_ranker(d_rows, q_rows, w, doc_tokens, query_tokens))

    sparse = [lexical.sparse_document(memory_document(m)) for m in MEMS]
    docs = [dict(zip(sv.indices, sv.values, strict=True)) for sv in sparse]
    dfl = collections.Counter(t for sv in sparse for t in sv.indices)
    idf = {t: math.log(1 + (n - c + 0.5) / (c + 0.5)) for t, c in dfl.items()}

    def bm25(i: int) -> list[str]:
        sq = lexical.sparse_query(QUERIES[i]["query"])
        terms = list(zip(sq.indices, sq.values, strict=True))
        scores = np.array([sum(idf.get(t, 0) * w * d.get(t, 0) for t, w in terms) for d in docs])
        return [KEYS[j] for j in np.argsort(-scores)[:10] if scores[j] > 0]

    report("bm25", bm25)


class _Window:
    """The one field ``OnnxE5._hidden`` reads of a window."""

    def __init__(self, ids: list[int]) -> None:
        self.ids = ids


if __name__ == "__main__":
    main()
