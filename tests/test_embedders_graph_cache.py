"""The e5 graphs are built once, by a child process, into a private cache; every later
engine loads its sessions from the files (``graphs/cache.py``)."""

from __future__ import annotations

import os
import shutil
import stat
import sys
import time
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest

from mcp_gateway.embedders import e5_onnx
from mcp_gateway.graphs import cache as graph_cache
from mcp_gateway.graphs import e5_file, e5_graph, e5_latent


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    return graph_cache.cache_dir()


def test_a_graph_is_built_once_into_a_private_file(cache: Path) -> None:
    model = e5_onnx.model_path("original")
    first = graph_cache.graph_file("exact", [model])
    assert first.parent == cache and first.exists()
    assert stat.S_IMODE(cache.stat().st_mode) == 0o700
    assert stat.S_IMODE(first.stat().st_mode) == 0o600
    built = first.stat().st_ino
    again = graph_cache.graph_file("exact", [model])
    assert again == first and again.stat().st_ino == built  # not rebuilt (a rebuild replaces)
    assert [p.name for p in cache.iterdir()] == [first.name]  # no temporary left behind


def test_the_cached_graph_is_the_graph_the_engine_builds(cache: Path) -> None:
    model = e5_onnx.model_path("original")
    path = graph_cache.graph_file("exact", [model])
    assert path.read_bytes() == e5_graph.build(e5_file.load(model))
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    assert [i.name for i in session.get_inputs()] == ["emb", "mask"]


def test_another_input_is_another_file(cache: Path, tmp_path: Path) -> None:
    model = e5_onnx.model_path("original")
    copy = tmp_path / "copy.bin"
    shutil.copy(model, copy)
    assert graph_cache.digest("exact", [model]) != graph_cache.digest("exact", [copy])
    assert graph_cache.digest("exact", [model]) != graph_cache.digest("int8", [model])


def test_without_a_child_the_graph_is_built_here(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "executable", str(cache / "no-such-python"))
    sae = e5_latent.sae_path()
    path = graph_cache.graph_file("sae", [sae])
    assert path.exists() and path.stat().st_size > 1_000_000


def test_an_engine_on_cached_graphs_embeds_as_before(cache: Path) -> None:
    engine = e5_onnx.OnnxE5(e5_onnx.model_path("original"))
    assert {Path(str(p)).parent for p in engine._graphs.values()} == {cache}
    fresh = ort.InferenceSession(
        e5_graph.build(e5_file.load(e5_onnx.model_path("original"))),
        providers=["CPUExecutionProvider"],
    )
    windows = engine._windows(["git rebase rewrites history"], "query: ")
    feed = engine._feed(windows, engine._mask(windows))
    expected = fresh.run(None, feed)[0]
    got = engine._session(1, "encoder").run(None, feed)[0]
    np.testing.assert_allclose(got, expected, rtol=0, atol=0)


def test_a_home_without_a_writable_cache_still_embeds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocked = tmp_path / "not-a-dir"
    blocked.write_text("a file where the cache folder would go")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocked))
    source = graph_cache.graph_source("sae", [e5_latent.sae_path()])
    assert isinstance(source, bytes) and len(source) > 1_000_000


def test_a_build_removes_its_kinds_graphs_unused_for_a_month(cache: Path) -> None:
    cache.mkdir(mode=0o700, parents=True)
    month = graph_cache.STALE_DAYS * 86400
    old_exact, recent_exact, old_sae = (
        cache / n for n in ("exact-0.onnx", "exact-1.onnx", "sae-0.onnx")
    )
    for path in (old_exact, recent_exact, old_sae):
        path.write_bytes(b"graph")
    for path in (old_exact, old_sae):
        os.utime(path, (time.time() - month - 60,) * 2)
    os.utime(recent_exact, (time.time() - month + 3600,) * 2)
    built = graph_cache.graph_file("exact", [e5_onnx.model_path("original")])
    assert sorted(p.name for p in cache.iterdir()) == sorted(
        [built.name, recent_exact.name, old_sae.name]  # another kind is not this build's
    )


def test_loading_a_graph_marks_it_used(cache: Path) -> None:
    model = e5_onnx.model_path("original")
    path = graph_cache.graph_file("exact", [model])
    long_ago = time.time() - 2 * graph_cache.STALE_DAYS * 86400
    os.utime(path, (long_ago, long_ago))
    graph_cache.graph_file("exact", [model])
    assert path.stat().st_mtime > time.time() - 60
