"""The ``static_use`` channel: a packaged static table taught by USE, fused as a further
dense channel (``embedders/static_channels.py``).

Real stores and models throughout: SQLite, the embedded Qdrant engine, the bundled e5
model and the packaged tables.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np

from mcp_gateway.embedders import static
from mcp_gateway.embedders.static_channels import TABLES
from mcp_gateway.search.service import SearchRequest
from mcp_gateway.services.app import open_app
from tests.test_channels import settings_for
from tests.test_reindex import add_notes
from training.static_train import TrainRecipe

# the files as built (bench/static_train.py; bench/LOG.md, "ranking: static channels
# taught by USE and MiniLM"): a rebuilt table needs a new model id in TABLES, or
# vectors of two tables would mix in one index
SHA256 = {
    "static_use.npy": "2dd30b805eff6796786c6de6f951d6aece1172d742ba064b7be7a5f2f7267ad0",
    "static_use.npz": "6129260cef694cd5cb809f9dcb24758876195310d4df760ad1e1426aabc4ed5c",
}

NOTES = [
    "Never paste production customer data into a chat, an issue or a prompt: mask the row first.",
    "Debug builds print the request headers to the console.",
    "A public ticket needs a reproduction and the version number.",
    "大量の UPDATE は 1,000 件ずつに分けてコミットする。一度に流すとレプリカの遅延が数分に伸びる。",
    "The replica is rebuilt from the nightly snapshot after a failover.",
    "外部APIの一覧取得は next_cursor が空になるまで回すこと。"
    "page=1〜10 と決め打ちすると件数が足りない。",
    "The report totals are computed nightly from the warehouse.",
    "เครื่องพิมพ์ชั้นสามกระดาษติดทุกครั้งที่ใช้กระดาษมัน",
    "Paper for the office printer is ordered by facilities every quarter.",
    "แจ้งลาป่วยผ่านระบบ HR ก่อนเก้าโมงเช้า",
    "Vacation requests need two weeks' notice in the HR portal.",
    "The cache is warmed after each deploy by a cron job.",
]
# other words for the first note: e5 and the words alone leave it out
QUERY = "sharing a real person's phone number in a public bug report while debugging"


def test_the_shipped_table_is_the_recorded_build() -> None:
    """The files are the recorded build; the meta names USE as the teacher, the chosen
    recipe and the fast-first table's corpus; rows no training text holds are the
    fast-first table's bytes (the same pieces, the same ids)."""
    _, rows_file, meta_file = TABLES["static_use"]
    for path in (rows_file, meta_file):
        assert hashlib.sha256(path.read_bytes()).hexdigest() == SHA256[path.name]
    meta, base = np.load(meta_file), np.load(static.META_FILE)
    assert "USE v3" in str(meta["train_teacher"])
    recipe = TrainRecipe()
    assert float(meta["train_l2"]) == recipe.l2 and float(meta["train_lr"]) == recipe.lr
    assert int(meta["train_epochs"]) == recipe.epochs and str(meta["train_centre"]) == "corpus"
    assert str(meta["train_corpus_hash"]) == str(base["train_corpus_hash"])
    assert str(meta["train_texts"]) == str(base["train_texts"])
    np.testing.assert_array_equal(meta["ids"], base["ids"])
    kept = ~meta["trained"]
    assert 0 < meta["trained"].sum() < len(kept)
    rows = np.load(rows_file, mmap_mode="r")
    shipped = np.load(static.ROWS_FILE, mmap_mode="r")
    np.testing.assert_array_equal(rows[kept], shipped[kept])
    assert meta["components"].shape == (512, 128)  # USE's space into the table's


async def test_search_finds_what_only_the_static_channel_reads(tmp_path: Path) -> None:
    """Through the real search path: the reworded note is among the results with the
    channel and not without it; the note's vector came with its first point."""
    found: dict[bool, list[int]] = {}
    for on in (False, True):
        settings = settings_for(tmp_path / str(on), ["static_use"] if on else [])
        async with open_app(settings) as app:
            ids = await add_notes(app, NOTES)
            await app.settle()
            if on:
                model = TABLES["static_use"][0]
                vectors = await app.vectors.get("note", model, ids)
                assert set(vectors) == set(ids) and all(
                    len(v.vector) == 128 for v in vectors.values()
                )
            response = await app.search.search(SearchRequest(QUERY, namespaces=("default",)))
            found[on] = [ids.index(r.id) for r in response.results]
    assert 0 not in found[False]
    assert 0 in found[True]
