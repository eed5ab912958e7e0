"""Round 14: a draft vector from the encoder's first layers for notes not embedded yet.

Right after a burst of adds, the newest notes have no dense vector until the embedding
job reaches them (``fresh.py``: +0 s test nDCG far below settled). A draft costs a
fraction of the full pass: the first ``k`` of the encoder's 12 layers, mean-pooled like
the last one, mapped into the final embedding space by a linear map (ridge regression,
with a bias) fitted on notes that are already embedded -- the older ones, exactly what
an owner has at hand. No relevance label is used: the map is fitted on (layer-k mean,
final vector) pairs, its ridge weight chosen by cosine on a held-out fifth of them.

Prints, for each ``k``: the drafts' cosine to the true vectors of the burst's notes,
and the fresh-note table (``fresh.py``'s states, latent channel on) with the burst
carrying drafts instead of nothing, beside lexical-only and settled.

    python bench/quality/early_exit.py [--layers 2 3 4 6] [--burst 500]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from embcache import CACHE, memory_document  # noqa: E402
from fresh import latent_channel, shipped_ranking  # noqa: E402
from tune import Corpus, channels, evaluate, load, table  # noqa: E402

RIDGE = (0.01, 0.1, 1.0, 10.0, 100.0)


def layer_means(texts: list[str], layers: list[int]) -> dict[int, np.ndarray]:
    """Per text, the mean of layer ``k``'s token states (windows weighted as the engine
    weights them), for each ``k`` in ``layers``; cached."""
    path = CACHE / "early_exit.npz"
    key = f"{len(texts)}:{hash(tuple(texts)) & 0xFFFFFFFF}"
    if path.exists():
        data = np.load(path)
        if str(data["key"]) == key and all(f"L{k}" in data for k in layers):
            return {k: data[f"L{k}"] for k in layers}
    import onnxruntime as ort

    from mcp_gateway.embedders.e5_onnx import OnnxE5, _mean_pool, model_path
    from mcp_gateway.graphs import e5_graph

    engine = OnnxE5(model_path("original"))
    file = engine._file
    taps = [f"L{k - 1}.x2" for k in range(1, file.layers + 1)]
    session = ort.InferenceSession(
        e5_graph.build(file, taps=taps), providers=["CPUExecutionProvider"]
    )
    sums = {k: np.zeros((len(texts), file.hidden)) for k in range(1, file.layers + 1)}
    weights = np.zeros(len(texts))
    for n, window in enumerate(engine._windows(texts, "passage: ")):
        mask = engine._mask([window])
        outputs = session.run(taps, engine._feed([window], mask))
        for k, states in enumerate(outputs, start=1):
            sums[k][window.text] += window.weight * _mean_pool(states, mask)[0]
        weights[window.text] += window.weight
        if n % 200 == 0:
            print(f"layer means: {n}", file=sys.stderr)
    means = {k: s / np.maximum(weights, 1)[:, None] for k, s in sums.items()}
    CACHE.mkdir(exist_ok=True)
    np.savez(path, key=np.array(key), **{f"L{k}": m for k, m in means.items()})
    return {k: means[k] for k in layers}


def unit(m: np.ndarray) -> np.ndarray:
    out: np.ndarray = m / np.maximum(np.linalg.norm(m, axis=1, keepdims=True), 1e-9)
    return out


def fit(x: np.ndarray, y: np.ndarray, lam: float) -> np.ndarray:
    xb = np.hstack([x, np.ones((len(x), 1))])
    reg = lam * np.eye(xb.shape[1])
    reg[-1, -1] = 0.0  # the bias is not shrunk
    w: np.ndarray = np.linalg.solve(xb.T @ xb + reg, xb.T @ y)
    return w


def apply(w: np.ndarray, x: np.ndarray) -> np.ndarray:
    return unit(np.hstack([x, np.ones((len(x), 1))]) @ w)


def choose_ridge(x: np.ndarray, y: np.ndarray) -> float:
    """The ridge weight whose fit on four fifths gives the best cosine on the last fifth."""
    cut = len(x) * 4 // 5
    scores = {
        lam: float(np.mean(np.sum(apply(fit(x[:cut], y[:cut], lam), x[cut:]) * y[cut:], 1)))
        for lam in RIDGE
    }
    return max(scores, key=lambda lam: scores[lam])


def with_drafts(c: Corpus, drafts: dict[int, np.ndarray]) -> Corpus:
    dmat = c.dmat.copy()
    for i, v in drafts.items():
        dmat[i] = v
    return Corpus(
        c.mems, c.queries, dmat, c.qvec, c.qwide, c.sparse_docs, c.idf, c.current, c.payloads
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--layers", type=int, nargs="+", default=[2, 3, 4, 6])
    ap.add_argument("--burst", type=int, default=500)
    args = ap.parse_args()
    c = load()
    params, sparse_weight = shipped_ranking()

    latent_for = latent_channel(c)
    keys = [m["key"] for m in c.mems]
    burst = frozenset(keys[-args.burst :])
    older = [i for i, k in enumerate(keys) if k not in burst]
    newest = [i for i, k in enumerate(keys) if k in burst]

    def run(corpus: Corpus, no_dense: frozenset[str], label: str) -> None:
        hits: dict[str, tuple[Any, ...]] = {}
        for q in corpus.queries:
            dense, sparse = channels(corpus, q, pending=no_dense)
            hits[q["qid"]] = (dense, sparse, latent_for(q, burst))  # the burst has no terms
        table(evaluate(corpus, params, hits, sparse_weight_for=sparse_weight), label)

    table(
        evaluate(
            c,
            params,
            {q["qid"]: (*channels(c, q), latent_for(q, frozenset())) for q in c.queries},
            sparse_weight_for=sparse_weight,
        ),
        "settled",
    )
    run(c, burst, "+0s lex")
    run(c, frozenset(), "+0s exact")  # the burst's true vectors, still without terms
    means = layer_means([memory_document(m) for m in c.mems], args.layers)
    for k in args.layers:
        x, y = means[k], c.dmat
        lam = choose_ridge(x[older], y[older])
        w = fit(x[older], y[older], lam)
        drafts = apply(w, x[newest])
        cos = np.sum(drafts * y[newest], axis=1)
        print(
            f"k={k} ridge {lam}: draft cosine to the true vector, burst: mean "
            f"{cos.mean():.3f} p10 {np.percentile(cos, 10):.3f} min {cos.min():.3f}"
        )
        run(with_drafts(c, dict(zip(newest, drafts, strict=True))), frozenset(), f"+0s L{k}")


if __name__ == "__main__":
    main()
