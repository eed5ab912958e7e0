"""Learned keys: the questions a memory answered, kept as extra ways to find it.

When the assistant says it used a memory (``used=[ids]`` on ``search_memory`` or
``add_note``), the question of the search that showed it becomes a *key* of that memory
in the caller's namespace: the question's text and its query vector. Searches of that
namespace match their query against its keys beside the index (``search.learned_keys``),
so the next rewording of the same need finds the memory.

Bounds (a confused or hostile client cannot flood the store): at most
``MAX_PER_NOTE`` keys per memory and namespace and ``MAX_PER_NAMESPACE`` per namespace,
the least recently confirmed dropped first. ``version`` moves on every write, so a
search's cached keys and cached answers know they are stale. The table is declared with
the rest of the schema (``stores.schema``, ``learned_keys``).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from mcp_gateway.stores.db import Database

MAX_PER_NOTE = 8
MAX_PER_NAMESPACE = 2000


@dataclass(frozen=True, slots=True)
class LearnedKey:
    namespace: str
    note_id: str
    question: str
    created_at: float
    used_at: float
    uses: int


@dataclass(frozen=True, slots=True)
class KeyMatrix:
    """One namespace's keys of one model, ready to score: row i is ``note_ids[i]``'s
    unit-length question vector, ``used_at[i]`` when it was last confirmed."""

    note_ids: tuple[str, ...]
    questions: tuple[str, ...]
    vectors: np.ndarray  # (n, dim) float32
    used_at: np.ndarray  # (n,) float64


EMPTY = KeyMatrix((), (), np.zeros((0, 0), np.float32), np.zeros(0))


class LearnedKeyStore:
    def __init__(self, db: Database) -> None:
        self.db = db
        # moves on every write by this process (the owner is the only writer of a data
        # dir; gateways sharing one store see each other's keys after a restart)
        self.version = 0

    async def add(
        self,
        namespace: str,
        note_id: str,
        question: str,
        model: str,
        vector: Sequence[float],
        now: float | None = None,
    ) -> None:
        """Keep ``question`` as a key of ``note_id`` in ``namespace`` (a repeat confirms
        it: ``uses`` + 1, ``used_at`` now), then apply the bounds."""
        at = time.time() if now is None else now
        unit = np.asarray(vector, dtype=np.float32)
        unit = unit / (float(np.linalg.norm(unit)) or 1.0)
        blob = unit.tobytes()

        def write(conn: Any) -> None:  # sqlite3 or the PostgreSQL adapter: same calls
            conn.execute(
                "INSERT INTO learned_keys(namespace, note_id, question, model, vector, "
                "created_at, used_at, uses) VALUES (?, ?, ?, ?, ?, ?, ?, 1) "
                "ON CONFLICT(namespace, note_id, question) DO UPDATE SET "
                "used_at = excluded.used_at, uses = learned_keys.uses + 1, "
                "model = excluded.model, vector = excluded.vector",
                (namespace, note_id, question, model, blob, at, at),
            )
            _trim(conn, namespace, note_id)

        await self.db.transaction(write)
        self.version += 1

    async def remove(self, namespace: str, note_id: str, question: str) -> bool:
        """Forget one key; False when there was none."""

        def write(conn: Any) -> int:
            cur = conn.execute(
                "DELETE FROM learned_keys WHERE namespace = ? AND note_id = ? AND question = ?",
                (namespace, note_id, question),
            )
            return int(cur.rowcount or 0)

        removed = await self.db.transaction(write)
        self.version += 1
        return removed > 0

    async def of_note(self, note_id: str, namespaces: Sequence[str]) -> list[LearnedKey]:
        """The keys of ``note_id`` held in ``namespaces`` (a caller's readable ones),
        most recently confirmed first."""
        if not namespaces:
            return []
        marks = ",".join("?" * len(namespaces))
        rows = await self.db.fetchall(
            "SELECT namespace, note_id, question, created_at, used_at, uses FROM learned_keys "
            f"WHERE note_id = ? AND namespace IN ({marks}) ORDER BY used_at DESC",
            (note_id, *namespaces),
        )
        return [_key(r) for r in rows]

    async def newest(self, namespaces: Sequence[str], limit: int = 50) -> list[LearnedKey]:
        if not namespaces:
            return []
        marks = ",".join("?" * len(namespaces))
        rows = await self.db.fetchall(
            "SELECT namespace, note_id, question, created_at, used_at, uses FROM learned_keys "
            f"WHERE namespace IN ({marks}) ORDER BY used_at DESC LIMIT ?",
            (*namespaces, limit),
        )
        return [_key(r) for r in rows]

    async def matrix(self, namespace: str, model: str) -> KeyMatrix:
        rows = await self.db.fetchall(
            "SELECT note_id, question, vector, used_at FROM learned_keys "
            "WHERE namespace = ? AND model = ? ORDER BY note_id, question",
            (namespace, model),
        )
        if not rows:
            return EMPTY
        vectors = np.stack([np.frombuffer(bytes(r["vector"]), dtype=np.float32) for r in rows])
        return KeyMatrix(
            tuple(str(r["note_id"]) for r in rows),
            tuple(str(r["question"]) for r in rows),
            vectors,
            np.asarray([float(r["used_at"]) for r in rows]),
        )


def _key(row: Any) -> LearnedKey:
    """A row of sqlite3 or of the PostgreSQL adapter: both index by name."""
    return LearnedKey(
        namespace=str(row["namespace"]),
        note_id=str(row["note_id"]),
        question=str(row["question"]),
        created_at=float(row["created_at"]),
        used_at=float(row["used_at"]),
        uses=int(row["uses"]),
    )


def _trim(conn: Any, namespace: str, note_id: str) -> None:
    """The bounds: the least recently confirmed keys past them go."""
    conn.execute(
        "DELETE FROM learned_keys WHERE namespace = ? AND note_id = ? AND question NOT IN ("
        "SELECT question FROM learned_keys WHERE namespace = ? AND note_id = ? "
        "ORDER BY used_at DESC, question LIMIT ?)",
        (namespace, note_id, namespace, note_id, MAX_PER_NOTE),
    )
    conn.execute(
        "DELETE FROM learned_keys WHERE namespace = ? AND used_at < ("
        "SELECT COALESCE(MIN(used_at), 0) FROM (SELECT used_at FROM learned_keys "
        "WHERE namespace = ? ORDER BY used_at DESC LIMIT ?) AS kept)",
        (namespace, namespace, MAX_PER_NAMESPACE),
    )
