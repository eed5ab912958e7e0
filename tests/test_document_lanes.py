"""Document lanes sharing a batch (``embedder.document_lanes``), their threads' nice value
(``embedder.document_nice``) and drafts with latent terms, on the real onnx engine."""

from __future__ import annotations

import os
import sys
import threading
from typing import Any

import numpy as np
import pytest

from mcp_gateway.embedders import local

TEXTS = [
    "Deploys to staging need the VPN; the runbook lives in docs/deploy.md.",
    "The user prefers pytest -q and short commit messages.",
    "レート制限に当たったら指数バックオフで再試行する。",
    "ทดสอบที่ไม่เสถียรให้รันซ้ำด้วย --count 3 ก่อนแก้",
    # past one window (510 tokens): two windows; the properties need two, and each
    # window is one more pass of the model (400 repeats made 8, ~4x the time)
    " ".join(f"word{i} of a long note past one window" for i in range(80)),
    "Migrations run before the app starts; never edit an applied one.",
    "Docker builds cache the dependency layer when the lock file is copied first.",
]


async def test_two_lanes_give_each_text_the_vector_one_lane_gives_it() -> None:
    one = local.LocalEmbedder(engine="onnx", document_lanes=1)
    two = local.LocalEmbedder(engine="onnx", document_lanes=2)
    await one.start()
    await two.start()
    engine = two._model
    threads_seen: set[int] = set()

    class Spy:
        dim = engine.dim
        has_terms = engine.has_terms
        makes_drafts = engine.makes_drafts

        def encode(self, texts: list[str], prefix: str, threads: int, **kw: Any) -> Any:
            threads_seen.add(threading.get_ident())
            return engine.encode(texts, prefix, threads, **kw)

    two._model = Spy()
    try:
        for draft in (False, True):
            want = await one.encode_documents(TEXTS, draft=draft)
            got = await two.encode_documents(TEXTS, draft=draft)
            assert len(got) == len(TEXTS)
            for a, b in zip(want, got, strict=True):
                assert np.allclose(a.dense, b.dense, atol=1e-6)
                assert a.terms == b.terms
        # every text went to some lane, and both lanes' threads took texts
        assert len(threads_seen) == 2 and threading.get_ident() not in threads_seen
    finally:
        await one.aclose()
        await two.aclose()


async def test_a_draft_carries_latent_terms_as_the_exact_pass_does() -> None:
    emb = local.LocalEmbedder(engine="onnx")
    await emb.start()
    try:
        assert emb.makes_drafts and emb.latent_terms
        (draft,) = await emb.encode_documents(TEXTS[:1], draft=True)
        (exact,) = await emb.encode_documents(TEXTS[:1])
        assert draft.terms is not None and len(draft.terms.indices) > 0
        assert exact.terms is not None and len(exact.terms.indices) > 0
        # a search's fresh-note embedding (the query lane) is never a draft: terms too
        (now,) = await emb.encode_documents(TEXTS[:1], now=True)
        assert now.terms is not None and now.dense == pytest.approx(exact.dense, abs=1e-6)
    finally:
        await emb.aclose()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a thread's nice is Linux's")
async def test_document_lanes_run_at_the_nice_asked_and_queries_at_the_process_nice() -> None:
    emb = local.LocalEmbedder(engine="onnx", document_lanes=2, document_nice=5)
    await emb.start()
    engine = emb._model
    seen: dict[str, set[int]] = {"query": set(), "documents": set()}

    class Spy:
        dim = engine.dim
        has_terms = engine.has_terms
        makes_drafts = engine.makes_drafts

        def encode(self, texts: list[str], prefix: str, threads: int, **kw: Any) -> Any:
            lane = "query" if prefix == "query: " else "documents"
            tid = threading.get_native_id()
            seen[lane].add(os.getpriority(os.PRIO_PROCESS, tid))
            return engine.encode(texts, prefix, threads, **kw)

    emb._model = Spy()
    base = os.getpriority(os.PRIO_PROCESS, 0)
    try:
        await emb.encode_documents(TEXTS)
        await emb.embed_query("how do deploys reach staging?")
        assert seen["documents"] == {min(19, base + 5)}
        assert seen["query"] == {base}
    finally:
        await emb.aclose()


async def test_a_draft_reads_a_long_text_s_first_window_and_the_exact_pass_all_of_it() -> None:
    emb = local.LocalEmbedder(engine="onnx")
    await emb.start()
    try:
        long = TEXTS[4]  # past one window
        longer = long + " and then an unrelated ending about rate limits and retries" * 20
        a, b = await emb.encode_documents([long, longer], draft=True)
        assert np.allclose(a.dense, b.dense, atol=1e-6)  # the same first 510 tokens
        x, y = await emb.encode_documents([long, longer])
        assert float(np.dot(x.dense, y.dense)) < 0.9999  # the ending counts when exact
    finally:
        await emb.aclose()
