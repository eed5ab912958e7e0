"""An editor's first search after a cold start (issue 48, item 2): what the owner's
start no longer does on the way to it, and that the search is still answered.

- The owner's module does not import the memory browser (``mcp_gateway.ui``) nor the
  HTTP door's grant gate: they load in a thread once the stores are open
  (``owner.LATER``), and ``/ui`` is still served afterwards; nor YAML (imports of
  Markdown with front matter load it).
- e5's piece index is read back from the graph cache, not rebuilt at every start
  (``e5_pieces.cached``), and equals the built one.
- The e5 engine makes only the query's sessions at its start; the exact graph's, which
  only passages run, is made at the first passage, whose vector is unchanged.

Times are measured by ``bench/startup.py`` (bench/LOG.md), never asserted here.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest

from mcp_gateway.embedders import e5_pieces, e5_tokenizer
from mcp_gateway.embedders.e5_onnx import OnnxE5, model_path
from mcp_gateway.graphs import e5_file, e5_int8, e5_latent
from tests.realproc import gateway_paths, kill_daemon, stdio_client

TEXTS = [
    "deploy keys rotation",
    "Ünïcödé naïve café 東京タワーは高い ภาษาไทย",
    "def foo_bar(x): return x**2  # squared",
    "the staging database resets every night at 02:00 UTC " * 30,
]


def test_the_owner_module_leaves_what_a_first_search_does_not_use_for_later() -> None:
    """Before: importing the owner imported the UI's pages and templates, seconds of an
    editor's cold start spent on modules its first search never uses."""
    later = ("mcp_gateway.ui", "mcp_gateway.protocol.grant_gate", "yaml")
    code = f"import sys, mcp_gateway.daemon.owner\nprint([m for m in {later} if m in sys.modules])"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert out.stdout.strip() == "[]"


@pytest.fixture
def e5_vocab(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Any]:
    """e5's model file and vocabulary, with a graph cache of the test's own."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    model = model_path("original")
    return model, e5_file.load(model).vocab


def test_the_piece_index_is_read_back_from_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, e5_vocab: tuple[Path, Any]
) -> None:
    model, vocab = e5_vocab
    built = e5_pieces.cached(vocab, model)  # an empty cache: built, and kept
    kept = list((tmp_path / "cache" / "kioku" / "graphs").glob("pieces-*.npz"))
    assert len(kept) == 1

    def no_build(self: e5_pieces.PieceIndex, vocab: object) -> None:
        raise AssertionError("built again although the cache holds it")

    with monkeypatch.context() as m:
        m.setattr(e5_pieces.PieceIndex, "_build", no_build)
        read = e5_pieces.cached(vocab, model)
    fresh = e5_pieces.PieceIndex(vocab)
    for name, array in fresh.arrays().items():
        assert np.array_equal(read.arrays()[name], array), name
        assert np.array_equal(built.arrays()[name], array), name
    ours = e5_tokenizer.UnigramTokenizer(vocab, read)
    theirs = e5_tokenizer.UnigramTokenizer(vocab)
    for text in TEXTS:
        assert ours.encode(text) == theirs.encode(text)


def test_a_damaged_cached_piece_index_is_built_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, e5_vocab: tuple[Path, Any]
) -> None:
    model, vocab = e5_vocab
    e5_pieces.cached(vocab, model)
    (kept,) = (tmp_path / "cache" / "kioku" / "graphs").glob("pieces-*.npz")
    fresh = e5_pieces.PieceIndex(vocab).arrays()
    damages = (
        b"not an npz",
        _npz(fresh, ids=fresh["ids"][:10]),  # cut short
        _npz(fresh, ids=fresh["ids"] + np.int32(len(vocab))),  # ids past the vocabulary
        _npz({k: v for k, v in fresh.items() if k != "bits"}),  # one array missing
    )
    for damage in damages:
        kept.write_bytes(damage)
        again = e5_pieces.cached(vocab, model).arrays()
        for name, array in fresh.items():
            assert np.array_equal(again[name], array), name


def test_the_engine_makes_the_passage_graph_at_its_first_passage() -> None:
    def engine() -> OnnxE5:
        return OnnxE5(
            model_path("original"),
            sae=e5_latent.sae_path(),
            int8_queries=e5_int8.stats_path("original"),
        )

    lazy, eager = engine(), engine()
    lazy.warm(1, passages=False)
    eager.warm(1)
    assert {graph for graph, _ in lazy._sessions} == {"int8", "sae"}
    assert {graph for graph, _ in eager._sessions} == {"int8", "sae", "encoder"}
    query = lazy.encode(["deploy keys rotation"], "query: ", 1, terms=True)
    assert {graph for graph, _ in lazy._sessions} == {"int8", "sae"}
    passage = lazy.encode(TEXTS, "passage: ", 1, terms=True)
    assert {graph for graph, _ in lazy._sessions} == {"int8", "sae", "encoder"}
    for got, want in (
        (query, eager.encode(["deploy keys rotation"], "query: ", 1, terms=True)),
        (passage, eager.encode(TEXTS, "passage: ", 1, terms=True)),
    ):
        assert np.array_equal(got[0], want[0])
        assert got[1] == want[1]


def _npz(arrays: dict[str, np.ndarray], **changed: np.ndarray) -> bytes:
    import io

    out = io.BytesIO()
    np.savez(out, **{**arrays, **changed})  # type: ignore[arg-type]  # the stub reads a name as allow_pickle
    return out.getvalue()


# slow: a daemon's cold start (model loads)
@pytest.mark.slow
async def test_the_first_search_after_a_cold_start_is_answered(tmp_path: Path) -> None:
    """Through the real door: ``kioku serve`` on stdio, the MCP SDK's client, a daemon
    started cold by its proxy. The first search is answered from the settled store,
    and the memory browser, loaded after the stores opened, is on the owner socket."""
    data = tmp_path / "data"
    try:
        async with stdio_client(data) as client:
            added = await client.call_tool("add_note", {"text": "Deploy keys rotate every 90 days"})
            assert not added.is_error
        kill_daemon(data)
        async with stdio_client(data) as client:  # a cold start: no daemon runs
            found = await client.call_tool("search_memory", {"query": "deploy key rotation"})
            assert not found.is_error
            assert "every 90 days" in found.content[0].text  # type: ignore[union-attr]
            socket = str(gateway_paths(data).socket)
            transport = httpx.AsyncHTTPTransport(uds=socket, retries=0)
            async with httpx.AsyncClient(transport=transport, base_url="http://kioku") as http:
                page = await http.get("/ui/login")
            # the sign-in form: without the UI mounted, the owner's MCP route refuses it
            assert page.status_code == 200, page.text
            assert page.headers["content-type"].startswith("text/html")
    finally:
        kill_daemon(data)
