"""The int8 graph (``e5_int8``) against the exact graph, on the same weights: queries, and
passages where ``int8_passages`` (``embedder.int8_documents``) puts them on it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from mcp_gateway.embedders import local
from mcp_gateway.embedders.e5_onnx import OnnxE5, model_path
from mcp_gateway.graphs import e5_int8

DATA = Path(__file__).resolve().parent.parent / "bench" / "quality" / "data"
# Each vector within CLOSE of the exact one, and the texts of a test within CLOSE_MEAN on
# average. Measured on all 476 benchmark queries: on a CPU with int8 dot products
# (AVX-512 VNNI) >= 0.99957, mean 0.99974; on one with AVX2 only (round 10, an AMD
# EPYC), where onnxruntime's u8s8 kernel sums pairs of products in 16 bits and can
# saturate, >= 0.9951, 1st percentile 0.9990, mean 0.99952 (300 passages: >= 0.9963,
# mean 0.99946). Ranking did not move (run of record on that CPU, int8 queries on / off:
# hybrid test nDCG@10 0.785 / 0.783). A wrong scale or layer gives cosines far below.
CLOSE = 0.995
CLOSE_MEAN = 0.9993


@pytest.fixture(scope="module")
def exact() -> OnnxE5:
    return OnnxE5(model_path("original"))


@pytest.fixture(scope="module")
def fast() -> OnnxE5:
    engine = OnnxE5(model_path("original"), int8_queries=e5_int8.stats_path("original"))
    assert engine.int8_queries
    return engine


def queries_by_language() -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for line in (DATA / "queries.jsonl").open(encoding="utf-8"):
        q = json.loads(line)
        out.setdefault(q["lang"], []).append(q["query"])
    return out


def test_queries_stay_within_a_cosine_of_the_exact_graph_in_every_language(
    exact: OnnxE5, fast: OnnxE5
) -> None:
    by_lang = queries_by_language()
    assert set(by_lang) == {"en", "ja", "th"}
    for lang, texts in by_lang.items():
        cosines = []
        for text in texts[::12]:
            exact_vec, fast_vec = exact.query(text, 1), fast.query(text, 1)
            cosines.append(float(exact_vec @ fast_vec))
            assert cosines[-1] >= CLOSE, (lang, text)
            # and it is another computation, not the exact graph again
            assert not np.array_equal(exact_vec, fast_vec)
        assert np.mean(cosines) >= CLOSE_MEAN, (lang, cosines)


PASSAGES = [
    "the deploy needs the migration first",
    "デプロイ前にマイグレーションを必ず実行すること。順番を間違えると本番が止まる。",
    "ดีพลอยหลังไมเกรตเสมอ ไม่อย่างนั้น production จะล่ม",
    "Retry-After: 120 -- the billing API answers HTTP 429 above 10 requests a second",
]


def test_passages_run_the_exact_graph_unless_asked(exact: OnnxE5, fast: OnnxE5) -> None:
    assert not fast.int8_passages
    np.testing.assert_array_equal(fast.passage(PASSAGES, 1), exact.passage(PASSAGES, 1))


def test_int8_passages_stay_within_a_cosine_of_the_exact_graph(exact: OnnxE5) -> None:
    both = OnnxE5(
        model_path("original"), int8_queries=e5_int8.stats_path("original"), int8_passages=True
    )
    assert both.int8_passages and "encoder" not in both._graphs  # nobody runs it: not built
    batch = both.passage(PASSAGES, 1)
    cosines = []
    for text, want, got in zip(PASSAGES, exact.passage(PASSAGES, 1), batch, strict=True):
        cosines.append(float(want @ got))
        assert cosines[-1] >= CLOSE, text
        assert not np.array_equal(want, got)
    assert np.mean(cosines) >= CLOSE_MEAN, cosines
    # a text's vector does not depend on its batch mates (the activations' scale is per
    # tensor): the job's batches and a search's single fresh note store the same vector
    alone = np.stack([both.passage([t], 1)[0] for t in PASSAGES])
    np.testing.assert_array_equal(batch, alone)


def test_without_a_calibration_file_queries_use_the_exact_graph(
    tmp_path: Path, exact: OnnxE5
) -> None:
    engine = OnnxE5(model_path("original"), int8_queries=tmp_path / "missing.npz")
    assert not engine.int8_queries
    text = "why did the nightly build fail"
    np.testing.assert_array_equal(engine.query(text, 1), exact.query(text, 1))


def test_a_calibration_for_another_model_shape_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "other.npz"
    arrays: dict[str, Any] = {"L0.qkv": np.ones(128, np.float16)}
    np.savez(path, **arrays)
    assert not OnnxE5(model_path("original"), int8_queries=path).int8_queries


def test_both_variants_ship_a_calibration() -> None:
    for variant in ("original", "enpt"):
        engine = OnnxE5(model_path(variant), int8_queries=e5_int8.stats_path(variant))
        assert engine.int8_queries, variant


async def test_the_settings_turn_it_off() -> None:
    local._onnx_engine.cache_clear()
    try:
        on = local.LocalEmbedder(int8_documents=True)
        off = local.LocalEmbedder(int8_queries=False, int8_documents=True)
        exact_documents = local.LocalEmbedder()  # the default
        for embedder in (on, off, exact_documents):
            await embedder.start()
        assert on._model.int8_queries and on._model.int8_passages
        assert not off._model.int8_queries and not off._model.int8_passages
        assert exact_documents._model.int8_queries and not exact_documents._model.int8_passages
        text = "ข้อผิดพลาดนี้เกิดจาก redis ไม่ได้เปิดอยู่"
        a, b = await on.embed_query(text), await off.embed_query(text)
        assert CLOSE <= float(np.dot(a, b)) < 1.0
        assert await exact_documents.embed_query(text) == a
        (c,), (d,) = await on.embed_documents([text]), await off.embed_documents([text])
        assert CLOSE <= float(np.dot(c, d)) < 1.0
        assert await exact_documents.embed_documents([text]) == [d]
        # one index for all three: the vectors differ within the int8 graph's error
        assert on.model_id == off.model_id == exact_documents.model_id
        for embedder in (on, off, exact_documents):
            await embedder.aclose()
    finally:
        local._onnx_engine.cache_clear()
