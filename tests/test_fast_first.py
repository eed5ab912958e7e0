"""Fast first vector: a pending note is found by meaning before e5 has read it.

Real stores, the real bundled model and the packaged static table, the real embedded
Qdrant engine. The embedding job is held at its embedder (``GatedEmbedder``: the
document lane waits on a gate), the state a burst of adds leaves notes in.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import mcp_gateway.services.app as app_module
from mcp_gateway.common.access import settings_scope
from mcp_gateway.common.inputs import NoteFields, NoteQuery
from mcp_gateway.common.settings import KiokuSettings
from mcp_gateway.common.types import IndexFilter, IndexHit, IndexPoint, SparseVector, point_id
from mcp_gateway.embedders import static
from mcp_gateway.index.fast_pool import FastPool
from mcp_gateway.search import fast_first
from mcp_gateway.search.ranking import RankingParams, fuse
from mcp_gateway.services.app import AppContext, open_app
from mcp_gateway.services.import_check import Limits
from mcp_gateway.services.import_files import parse_markdown_folder
from mcp_gateway.services.notes import NoteService
from mcp_gateway.services.transfer import TransferService

from .test_feed import shared_settings
from .test_feed import shared_url as shared_url  # a fixture
from .test_fresh_notes import GatedEmbedder, add, gated_app

# the pool beside e5 alone: the default channels find a pending note by their own
# vectors written at the add (tests/test_default_channels.py, test_static_channels.py)
POOL_ONLY: dict[str, Any] = {"channels": []}

PRINTER = "The printer on floor three jams whenever glossy paper is used."
PARAPHRASE = "copier gets stuck with shiny sheets"  # no word in common
# the pair's pool cosine (the query's e5 vector projected, against the note's static
# vector) is ~0.25, under the shipped floor (fast_first.LEAST_COSINE: 0.4, chosen so that
# few pending notes cost nothing; the other notes score <= 0.08): the tests that follow
# the pool's path lower the floor, so what they check is the path, not the floor


@pytest.fixture
def low_floor(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fast_first, "LEAST_COSINE", 0.15)


OTHERS = [
    "Use connection pooling for the postgres client in the billing service",
    "The frontend build uses vite and outputs to dist/",
    "Timezone bugs: store timestamps in UTC and convert at the edge",
    "Docker images use multi-stage builds to stay small",
]


async def printer_pending(service: NoteService, app: AppContext, embedder: GatedEmbedder) -> str:
    """The printer note added and written to the index while the job holds the note
    before it: pending, its fast vector pooled. Its id."""
    await add(service, app, OTHERS[0])
    await asyncio.wait_for(embedder.waiting.wait(), 60)
    wanted = await add(service, app, PRINTER)
    await app.writes.caught_up(app.namespaces)
    return wanted


async def test_a_pending_note_is_found_by_meaning_until_its_vector_lands(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, low_floor: None
) -> None:
    embedder = GatedEmbedder()
    # fresh_top 0: no search embeds a pending hit itself (the paraphrase has no lexical
    # hit anyway); what finds the note is its fast vector
    async with gated_app(
        tmp_path, monkeypatch, embedder, fresh_top=0, fast_first=True, **POOL_ONLY
    ) as app:
        service = NoteService(app)
        first = await add(service, app, OTHERS[0])
        await asyncio.wait_for(embedder.waiting.wait(), 60)  # the job holds the first
        for text in OTHERS[1:]:
            await add(service, app, text)
        wanted = await add(service, app, PRINTER)
        scope = settings_scope(app.settings)
        response = await service.search(scope, NoteQuery(query=PARAPHRASE, top=3))
        assert response.results and response.results[0].id == wanted
        pid = point_id("note", wanted)
        assert await app.index.present([pid]) == {pid: False}  # no dense vector yet
        assert embedder.now == []
        assert app.index.fast_pool is not None and pid in app.index.fast_pool

        embedder.gate.set()
        await asyncio.wait_for(app.settle(), 120)
        assert await app.index.present([pid, point_id("note", first)]) == {
            pid: True,
            point_id("note", first): True,
        }
        assert len(app.index.fast_pool) == 0  # every note has its dense vector now


async def test_the_pool_is_rebuilt_from_the_store_for_notes_still_pending(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, low_floor: None
) -> None:
    """What ``open_app`` does for the notes an earlier process left pending: their
    index points are there (lexical-only), the pool is empty until rebuilt."""
    embedder = GatedEmbedder()
    async with gated_app(
        tmp_path, monkeypatch, embedder, fresh_top=0, fast_first=True, **POOL_ONLY
    ) as app:
        service = NoteService(app)
        wanted = await printer_pending(service, app, embedder)
        pool = app.index.fast_pool
        assert pool is not None
        pool.clear()  # as a new process finds it
        scope = settings_scope(app.settings)
        response = await service.search(scope, NoteQuery(query=PARAPHRASE, top=3))
        assert wanted not in [r.id for r in response.results]

        assert await fast_first.rebuild(app.index, app.notes) == 2
        assert point_id("note", wanted) in pool
        response = await service.search(scope, NoteQuery(query=PARAPHRASE, top=3))
        assert response.results[0].id == wanted


async def test_an_import_pools_its_notes_static_vectors_after_it_returns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, low_floor: None
) -> None:
    """The import's call writes lexical points only; the static vectors follow in the
    background, and the imported notes are then found by meaning while still pending."""
    embedder = GatedEmbedder()
    async with gated_app(
        tmp_path, monkeypatch, embedder, fresh_top=0, fast_first=True, **POOL_ONLY
    ) as app:
        folder = tmp_path / "notes"
        folder.mkdir()
        for i, text in enumerate([*OTHERS, PRINTER]):
            (folder / f"n{i}.md").write_text(text, "utf-8")
        items = parse_markdown_folder(folder, Limits.of(app.settings)).items
        pool = app.index.fast_pool
        assert pool is not None
        await app.reconciled.wait()  # its start-up pass pools what it finds pending
        await TransferService(app).import_items(items)
        assert len(pool) == 0  # nothing computed in the call (no await since it returned)

        for _ in range(6000):  # the background pools them one after another
            if len(pool) == len(items):
                break
            await asyncio.sleep(0.01)
        assert len(pool) == len(items)
        scope = settings_scope(app.settings)
        response = await NoteService(app).search(scope, NoteQuery(query=PARAPHRASE, top=3))
        assert response.results and response.results[0].text == PRINTER
        assert embedder.now == []  # still pending: found by its static vector


async def test_off_means_no_pool(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, low_floor: None
) -> None:
    embedder = GatedEmbedder()
    async with gated_app(tmp_path, monkeypatch, embedder, fast_first=False, **POOL_ONLY) as app:
        assert app.index.fast_pool is None
        assert not static.enabled()
        service = NoteService(app)
        await add(service, app, OTHERS[0])
        await asyncio.wait_for(embedder.waiting.wait(), 60)
        wanted = await add(service, app, PRINTER)
        scope = settings_scope(app.settings)
        response = await service.search(scope, NoteQuery(query=PARAPHRASE, top=3))
        assert wanted not in [r.id for r in response.results]


def test_the_static_vector_reads_the_packaged_table() -> None:
    model = static.StaticEmbedder.packaged()
    vecs = model.encode([PRINTER, PARAPHRASE, OTHERS[2], ""])
    assert vecs.shape == (4, static.dimension())
    np.testing.assert_allclose(np.linalg.norm(vecs[:3], axis=1), 1.0, atol=1e-5)
    assert not vecs[3].any()  # no token, no vector
    sims = vecs[:3] @ vecs[1]
    assert sims[0] > sims[2]  # the paraphrase is nearer its note than an unrelated one


def test_the_static_vector_reads_japanese_and_thai() -> None:
    """The table is e5's own: its pieces cover kana, kanji and Thai, so a note in
    either script gets a vector of its own, nearer a rewording than an unrelated note."""
    model = static.StaticEmbedder.packaged()
    for note, reworded, other in (
        (
            "3階のプリンターは光沢紙を使うと紙詰まりする",
            "プリンターの紙詰まり",
            "タイムゾーンはUTCで保存する",
        ),
        ("เครื่องพิมพ์ชั้นสามกระดาษติดเมื่อใช้กระดาษมัน", "เครื่องพิมพ์กระดาษติด", "เก็บเวลาเป็น UTC เสมอ"),
    ):
        vecs = model.encode([note, reworded, other])
        assert all(len(model.pieces(t)) for t in (note, reworded, other))
        sims = vecs @ vecs[1]
        assert sims[0] > sims[2]


def test_the_shipped_table_is_the_installed_models_own() -> None:
    """The table holds exactly the pieces the distillation recipe keeps; a sample of the
    rows training left alone (``trained`` false: pieces no training text holds) recomputed
    from the installed e5 model (``static_build``) equals the shipped rows within their
    int8 quantisation, and a sample of the trained ones does not; the meta names the
    training recipe: the file cannot drift from the model silently."""
    from training.static_build import RECIPE, PieceRunner, kept_pieces
    from training.static_train import TrainRecipe

    meta = np.load(static.META_FILE)
    rows = np.load(static.ROWS_FILE, mmap_mode="r")
    runner = PieceRunner()
    assert str(meta["prefix"]) == RECIPE.prefix and rows.shape[1] == RECIPE.dims
    np.testing.assert_array_equal(meta["ids"], kept_pieces(runner.model, RECIPE.latin, RECIPE.han))
    trained = meta["trained"]
    assert trained.dtype == bool and trained.shape == (len(rows),)
    assert 0 < trained.sum() < len(rows)
    recipe = TrainRecipe()
    assert float(meta["train_l2"]) == recipe.l2 and float(meta["train_lr"]) == recipe.lr
    assert str(meta["train_centre"]) == recipe.centre and meta["centre"].shape == (384,)
    rng = np.random.default_rng(7)
    left = rng.choice(np.flatnonzero(~trained), 48, replace=False)
    moved = rng.choice(np.flatnonzero(trained), 8, replace=False)
    sample = np.concatenate([left, moved])
    raw = runner.piece_rows(meta["ids"][sample].tolist(), RECIPE.prefix, RECIPE.state)
    recomputed = (raw - meta["mean"]) @ meta["components"]
    shipped = rows[sample].astype(np.float32) * meta["quant"][sample, None]
    step = meta["quant"][sample, None]
    # half a quantisation step, and some for the graph's arithmetic: another CPU's
    # kernels (AVX2 against AVX-512) move an untrained row by up to ~2 % of its largest
    # value, where training moved every trained row by 10 % or more
    close = (np.abs(recomputed - shipped) <= 0.5 * step + 3e-2 * np.abs(recomputed).max()).all(
        axis=1
    )
    assert close[:48].all() and not close[48:].any()


def test_the_pool_filters_and_abstains() -> None:
    pool = FastPool(4)

    def point(pid: str, vec: list[float], dense: bool = False, **payload: object) -> IndexPoint:
        return IndexPoint(
            pid,
            {"type": "note", "namespace": "a", "visible": "a", "dense": dense, **payload},
            SparseVector([], []),
            dense=[1.0] * 4 if dense else None,
            fast=vec,
        )

    pool.write(
        [
            point("n1", [1, 0, 0, 0]),
            point("n2", [0.9, 0.1, 0, 0], type="lesson"),
            point("n3", [1, 0, 0, 0], script="cjk"),
            point("n4", [1, 0, 0, 0], namespace="b", visible="b"),
        ]
    )
    q = [1.0, 0, 0, 0]
    flt = IndexFilter(namespaces=("a",), current_only=True)
    assert [h.id for h in pool.search(q, flt, 10, frozenset({"latin"}))] == ["n1", "n2"]
    assert [h.id for h in pool.search(q, IndexFilter(types=("lesson",)), 10)] == ["n2"]
    pool.write([point("n1", [1, 0, 0, 0], dense=True)])  # its dense vector landed
    pool.discard(["n2"])
    assert "n1" not in pool and "n2" not in pool
    assert sorted(h.id for h in pool.search(q, IndexFilter(), 10)) == ["n3", "n4"]


def test_an_idle_pool_lets_the_static_model_go() -> None:
    pool = FastPool(4)
    assert pool.empty_for() >= 0.0
    pool.write([IndexPoint("n1", {"dense": False}, SparseVector([], []), fast=[1, 0, 0, 0])])
    assert pool.empty_for() == 0.0  # something pending: the model stays
    pool.discard(["n1"])
    assert pool.empty_for() >= 0.0
    was = static.enabled()
    static.enable(True)
    try:
        static.shared()
        assert static.release() is True
        assert static.release() is False  # nothing loaded now
        assert static.vector(PRINTER) is not None  # the next pending note loads it again
    finally:
        static.enable(was)


async def test_each_gateway_pools_what_its_feed_brings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shared_url: str, low_floor: None
) -> None:
    """Several gateways on one truth store: a note added on one is pending on the other
    too, and found there by meaning (its change feed writes the point, the pool follows)."""
    held: list[GatedEmbedder] = []

    def gated(_settings: object) -> GatedEmbedder:
        held.append(GatedEmbedder())
        return held[-1]

    def settings(name: str) -> KiokuSettings:
        # nothing embeds a pending note but the (held) job: no prefetch, no fresh pass
        s = shared_settings(tmp_path, name, shared_url)
        search = s.search.model_copy(
            update={"prefetch_budget_ms": 0, "fresh_top": 0, "fast_first": True}
        )
        embedder = s.embedder.model_copy(update=POOL_ONLY)
        return s.model_copy(update={"search": search, "embedder": embedder})

    monkeypatch.setattr(app_module, "build_embedder", gated)
    try:
        async with open_app(settings("a")) as a, open_app(settings("b")) as b:
            scope = settings_scope(a.settings)
            for text in OTHERS:
                await NoteService(a).add(scope, NoteFields(text=text))
            added = await NoteService(a).add(scope, NoteFields(text=PRINTER))
            found = await NoteService(b).search(scope, NoteQuery(query=PARAPHRASE, top=3))
            assert found.results and found.results[0].id == added.id
            pid = point_id("note", added.id)
            assert b.index.fast_pool is not None and pid in b.index.fast_pool
            for embedder in held:
                embedder.gate.set()
    finally:
        for embedder in held:
            embedder.gate.set()


async def test_a_pool_hit_under_the_floor_is_no_hit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the shipped floor the paraphrase (pool cosine ~0.25) finds nothing in the
    pool; a near rewording (~0.63) does. The query's e5 vector, projected, scores the
    pool; with another dense model the query's static vector does (~0.75 for it)."""
    embedder = GatedEmbedder()
    async with gated_app(
        tmp_path, monkeypatch, embedder, fresh_top=0, fast_first=True, **POOL_ONLY
    ) as app:
        service = NoteService(app)
        wanted = await printer_pending(service, app, embedder)
        finder = fast_first.FastFirst(app.index, app.settings.search, app.embedder.model_id)
        assert finder.projection is not None
        para = await app.embedder.embed_query(PARAPHRASE)
        assert await finder.hits(PARAPHRASE, IndexFilter(), para) == []
        text = "printer jams on glossy paper"
        near = await finder.hits(text, IndexFilter(), await app.embedder.embed_query(text))
        assert [h.id for h in near] == [point_id("note", wanted)]
        mapped = fast_first.E5_AT_ZERO + fast_first.E5_PER_COSINE * 0.63
        assert near[0].score == pytest.approx(mapped, abs=0.01)
        other = fast_first.FastFirst(app.index, app.settings.search, "ollama/other-model")
        assert other.projection is None and other.projected(para) is None
        by_static = await other.hits(text, IndexFilter(), await app.embedder.embed_query(text))
        mapped = fast_first.E5_AT_ZERO + fast_first.E5_PER_COSINE * 0.75
        assert [h.id for h in by_static] == [point_id("note", wanted)]
        assert by_static[0].score == pytest.approx(mapped, abs=0.01)
        assert finder.projected([0.1] * 8) is None  # a vector of another width


def test_a_pool_hit_only_adds_to_a_pending_note() -> None:
    params = RankingParams()
    dense = [IndexHit("d1", 0.85, {"dense": True}), IndexHit("d2", 0.80, {"dense": True})]
    sparse = [IndexHit("p1", 5.0, {"dense": False}), IndexHit("d1", 1.0, {"dense": True})]
    before = {c.point_id: c.score for c in fuse(dense, sparse, params)}
    fast = [IndexHit("p1", 0.78, {"dense": False}), IndexHit("p2", 0.84, {"dense": False})]
    after = {c.point_id: c.score for c in fuse(dense, sparse, params, fast=fast)}
    assert after["p1"] >= before["p1"]  # a strong lexical match keeps its score
    assert "p2" not in before and after["p2"] > 0  # found by its fast vector alone
    assert (after["d1"], after["d2"]) == (before["d1"], before["d2"])  # indexed: untouched
    # a note embedded meanwhile (a search's own fresh pass) keeps its real dense score
    embedded = [*dense, IndexHit("p2", 0.90, {"dense": True})]
    both = {c.point_id: c for c in fuse(embedded, sparse, params, fast=fast)}
    assert both["p2"].fast_part == 0.0
