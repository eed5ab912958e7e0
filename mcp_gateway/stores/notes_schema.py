"""The ``notes`` and ``note_history`` tables, SQLite and PostgreSQL (``NoteStore`` owns
them; ``db.register_migration`` applies these on open)."""

from __future__ import annotations

from mcp_gateway.stores.db import register_migration

register_migration(
    "notes",
    1,
    """
    CREATE TABLE notes (
        id TEXT PRIMARY KEY,
        text TEXT NOT NULL,
        type TEXT NOT NULL,
        priority TEXT NOT NULL DEFAULT '',
        domain TEXT NOT NULL DEFAULT '',
        solved_query TEXT NOT NULL DEFAULT '',
        namespace TEXT NOT NULL DEFAULT 'default',
        created_at REAL NOT NULL,
        updated_at REAL NOT NULL,
        deleted INTEGER NOT NULL DEFAULT 0,
        embedded_model TEXT
    );
    CREATE INDEX notes_recent ON notes(namespace, type, deleted, created_at DESC);
    CREATE INDEX notes_pending ON notes(embedded_model, deleted);
    CREATE TABLE note_history (
        note_id TEXT NOT NULL,
        changed_at REAL NOT NULL,
        field TEXT NOT NULL,
        old_value TEXT,
        new_value TEXT
    );
    CREATE INDEX note_history_note ON note_history(note_id, changed_at);
    """,
)

register_migration(
    "notes_dedup",
    1,
    """
    ALTER TABLE notes ADD COLUMN content_hash TEXT;
    CREATE INDEX notes_content ON notes(namespace, type, content_hash) WHERE deleted = 0;
    -- rows written before this migration; filled in by the first add (note_keys.backfill)
    CREATE INDEX notes_unhashed ON notes(id) WHERE content_hash IS NULL;
    """,
)

register_migration(
    "notes_order",
    1,
    # Every search's recency read orders by (created_at, id): with id in the index too,
    # SQLite walks each (namespace, type) run newest first and stops at the limit,
    # instead of sorting every lesson and conclusion (10k notes: 2.0 -> 0.15 ms a read,
    # bench/LOG.md).
    """
    DROP INDEX IF EXISTS notes_recent;
    CREATE INDEX notes_recent ON notes(namespace, type, deleted, created_at DESC, id DESC);
    """,
)

# PostgreSQL starts at the schema the three SQLite migrations above reach together. Ids
# compare byte by byte (COLLATE "C"), as in SQLite and Python, whatever the database's
# collation: id order pages and merges the same on both backends.
register_migration(
    "notes",
    1,
    """
    CREATE TABLE notes (
        id TEXT COLLATE "C" PRIMARY KEY,
        text TEXT NOT NULL,
        type TEXT NOT NULL,
        priority TEXT NOT NULL DEFAULT '',
        domain TEXT NOT NULL DEFAULT '',
        solved_query TEXT NOT NULL DEFAULT '',
        namespace TEXT NOT NULL DEFAULT 'default',
        created_at DOUBLE PRECISION NOT NULL,
        updated_at DOUBLE PRECISION NOT NULL,
        deleted INTEGER NOT NULL DEFAULT 0,
        embedded_model TEXT,
        content_hash TEXT
    );
    CREATE INDEX notes_recent ON notes(namespace, type, deleted, created_at DESC, id DESC);
    CREATE INDEX notes_pending ON notes(embedded_model, deleted);
    CREATE INDEX notes_content ON notes(namespace, type, content_hash) WHERE deleted = 0;
    CREATE INDEX notes_unhashed ON notes(id) WHERE content_hash IS NULL;
    CREATE TABLE note_history (
        note_id TEXT NOT NULL,
        changed_at DOUBLE PRECISION NOT NULL,
        field TEXT NOT NULL,
        old_value TEXT,
        new_value TEXT
    );
    CREATE INDEX note_history_note ON note_history(note_id, changed_at);
    """,
    dialect="postgres",
)
