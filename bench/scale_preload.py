"""Preload a deployment's truth store with N notes as embedded ones are (bench/scale_join.py).

Adding 100k notes over HTTP and embedding them takes hours on the 2-core development
machine (~80 notes/s of adds on an idle one, the worker's embedding at 2 cores slower
still), so the large sizes of ``make bench-scale`` were never measured. This writes
them the way the owner and the worker do, through our stores' API:

- the notes: ``NoteStore.put_imported`` (the import path: one transaction a batch;
  the change feed's rows come from the notes table's triggers, as for every add);
- every vector row the shipped default stores for an embedded note: the main model's
  (``jobs.embedding._store``: dense vector and latent terms, exact, not a draft) and
  each configured channel's (``_embed_channels``: ``static_use``, and ``minilm`` under
  its int8 model id), all under the ``content_hash`` of the note's document, so a
  gateway applies them as it applies the worker's.

The vectors come from a pool of really embedded texts: the first ``pool`` notes' own
texts, embedded once with the configured embedders and cached under bench/results/
(git-ignored; keyed by the model ids and the texts). Note ``i`` past the pool gets
pool entry ``i % pool`` plus small Gaussian noise (as ``bench/peers.py`` does), so the
first ``pool`` notes -- the bench's FIRST note among them -- are really embedded, and
the rest cost the index what real ones cost: search and memory depend on counts and
sizes, not meaning. Their texts stay distinct (a marker and a ticket each), so BM25's
terms are realistic; their latent terms are the pool entry's.
"""

from __future__ import annotations

import hashlib
import json
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from ulid import ULID

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mcp_gateway.common.settings import KiokuSettings
from mcp_gateway.common.types import Note, SparseVector
from mcp_gateway.embedders import build_embedder
from mcp_gateway.embedders.channels import build_channel_embedders
from mcp_gateway.indexing.points import note_document
from mcp_gateway.stores.db import Database
from mcp_gateway.stores.notes import NoteStore
from mcp_gateway.stores.vectors import VectorStore, content_hash

RESULTS = Path(__file__).resolve().parent / "results"
NOISE = 0.02  # per dimension, relative to the vector's norm (peers.py: 0.02 on unit vectors)
BATCH = 1_000


@dataclass
class Pool:
    """The really embedded vectors: per model id, an (n, dim) float32 array; the main
    model's latent terms per text."""

    main: str
    dense: dict[str, np.ndarray]
    terms: list[SparseVector | None]

    @property
    def size(self) -> int:
        return len(self.terms)


def _cache_key(models: Sequence[str], texts: Sequence[str]) -> str:
    h = hashlib.blake2b(digest_size=8)
    for part in (*models, *texts):
        h.update(part.encode("utf-8"))
        h.update(b"\0")
    return h.hexdigest()


async def embed_pool(
    settings: KiokuSettings, texts: Sequence[str], log: Callable[[str], None] = print
) -> Pool:
    """``texts`` embedded by the configured main model (with latent terms) and every
    configured channel, as the worker embeds a note; from the cache when the same
    models embedded the same texts before."""
    main = build_embedder(settings.embedder)
    channels = build_channel_embedders(settings.embedder)
    models = [main.model_id, *(c.embedder.model_id for c in channels)]
    path = RESULTS / f"scale_pool_{_cache_key(models, texts)}.npz"
    if path.is_file():
        with np.load(path, allow_pickle=False) as z:
            meta = json.loads(str(z["meta"]))
            dense = {m: z[f"d{i}"] for i, m in enumerate(meta["models"])}
            idx, val, lens = z["t_idx"], z["t_val"], z["t_len"]
        terms: list[SparseVector | None] = []
        at = 0
        for k in lens.tolist():  # -1: the embedder made no terms for that text
            if k < 0:
                terms.append(None)
                continue
            terms.append(SparseVector(idx[at : at + k].tolist(), val[at : at + k].tolist()))
            at += k
        log(f"pool: {len(texts)} embedded texts from {path.name}")
        return Pool(meta["models"][0], dense, terms)
    started = time.monotonic()
    await main.start()
    dense, terms = {}, []
    vecs = []
    for start in range(0, len(texts), 32):
        for e in await main.encode_documents(list(texts[start : start + 32])):
            vecs.append(np.asarray(e.dense, dtype=np.float32))
            terms.append(e.terms)
    dense[main.model_id] = np.stack(vecs)
    await main.aclose()
    for ce in channels:
        await ce.embedder.start()
        vecs = []
        for start in range(0, len(texts), 32):
            vecs += await ce.embedder.embed_documents(list(texts[start : start + 32]))
        dense[ce.embedder.model_id] = np.asarray(vecs, dtype=np.float32)
        await ce.embedder.aclose()
    models = list(dense)
    # terms flattened, each text's count beside them (-1: none made)
    t_idx: list[int] = []
    t_val: list[float] = []
    for t in terms:
        if t is not None:
            t_idx += t.indices
            t_val += t.values
    t_len = [len(t.indices) if t is not None else -1 for t in terms]
    RESULTS.mkdir(parents=True, exist_ok=True)
    np.savez(
        path,
        meta=np.array(json.dumps({"models": models})),
        t_idx=np.asarray(t_idx, dtype=np.int32),
        t_val=np.asarray(t_val, dtype=np.float32),
        t_len=np.asarray(t_len, dtype=np.int64),
        **{f"d{i}": dense[m] for i, m in enumerate(models)},
    )
    log(
        f"pool: {len(texts)} texts embedded by {', '.join(models)} in "
        f"{time.monotonic() - started:.0f} s, cached in {path.name}"
    )
    return Pool(main.model_id, dense, terms)


def _vector(pool: np.ndarray, i: int, rng: np.random.Generator) -> np.ndarray:
    base = pool[i % len(pool)]
    if i < len(pool):
        return base
    norm = float(np.linalg.norm(base))
    moved = base + rng.normal(0, NOISE * norm, base.shape).astype(np.float32)
    return moved * (norm / float(np.linalg.norm(moved)))


async def preload(
    db: Database,
    pool: Pool,
    text: Callable[[int], str],
    first: int,
    last: int,
    namespace: str,
    log: Callable[[str], None] = print,
) -> float:
    """Notes ``[first, last)`` (``text(i)`` each) and their vector rows; returns notes/s."""
    notes_store, vectors = NoteStore(db), VectorStore(db)
    rng = np.random.default_rng(first)
    started = time.monotonic()
    for start in range(first, last, BATCH):
        batch: list[Note] = []
        for i in range(start, min(last, start + BATCH)):
            now = time.time()
            batch.append(
                Note(
                    id=str(ULID()),
                    text=text(i),
                    type="note",
                    namespace=namespace,
                    created_at=now,
                    updated_at=now,
                )
            )
        fresh, inserted, _ = await db.transaction(
            lambda c, b=batch: notes_store.put_imported(c, b, {}, set())
        )
        if inserted != len(batch) or len(fresh) != len(batch):
            raise RuntimeError(f"preload: {inserted} of {len(batch)} notes stored")
        hashes = [content_hash(note_document(n)) for n in batch]
        # channels first, then the main model: the worker's order (_embed_channels)
        for model, array in pool.dense.items():
            if model == pool.main:
                continue
            rows = [
                (n.id, h, _vector(array, i, rng).tolist())
                for i, n, h in zip(range(start, start + len(batch)), batch, hashes, strict=True)
            ]
            await vectors.put("note", model, rows)
        main = pool.dense[pool.main]
        rows4 = [
            (n.id, h, _vector(main, i, rng).tolist(), pool.terms[i % pool.size])
            for i, n, h in zip(range(start, start + len(batch)), batch, hashes, strict=True)
        ]
        await vectors.put("note", pool.main, rows4)
        done = start + len(batch)
        if (done - first) % 10_000 == 0 or done == last:
            rate = (done - first) / (time.monotonic() - started)
            log(f"preload: {done:,} notes in the truth store ({rate:.0f}/s)")
    return (last - first) / max(time.monotonic() - started, 1e-9)


async def _main() -> None:
    """Embed and cache the pool alone (``--pool N``): a step the bench would take
    first, done ahead of it."""
    import argparse
    import os
    import tempfile

    from bench.scale_join import bench_settings, note_text

    ap = argparse.ArgumentParser()
    ap.add_argument("--pool", type=int, default=2000)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as root:
        settings = bench_settings(Path(root))
        pool = await embed_pool(settings, [note_text(i) for i in range(args.pool)])
        print({m: a.shape for m, a in pool.dense.items()}, os.getloadavg())


if __name__ == "__main__":
    import asyncio

    asyncio.run(_main())
