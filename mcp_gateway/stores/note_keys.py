"""A note's dedup key: ``content_hash``, sha256 of the text with whitespace runs collapsed.

Two notes are the same note when their normalised texts match (the hash only finds
the candidates), with the same type and namespace.
"""

from __future__ import annotations

import hashlib
import sqlite3
import unicodedata


def normalised(text: str) -> str:
    """The text two notes must share to be the same note: NFC, whitespace runs as one
    space (a re-sent note often differs only in line breaks or trailing spaces)."""
    return " ".join(unicodedata.normalize("NFC", text).split())


def text_key(text: str) -> str:
    return hashlib.sha256(normalised(text).encode("utf-8")).hexdigest()


def backfill(conn: sqlite3.Connection) -> None:
    rows = conn.execute("SELECT id, text FROM notes WHERE content_hash IS NULL").fetchall()
    if rows:
        conn.executemany(
            "UPDATE notes SET content_hash = ? WHERE id = ?",
            [(text_key(r["text"]), r["id"]) for r in rows],
        )
