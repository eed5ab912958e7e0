"""Tables for lifecycle records (module "records" in ``schema_versions``)."""

from __future__ import annotations

from ..db import register_migration
from .fts import fts_schema

FTS_TABLE = "records_fts"

# ``pk`` is the FTS rowid; ``id`` is the citable id. ``record_sequences`` hands out
# numbers so that an id is never reused, even if a row were ever deleted.
_V1 = """
CREATE TABLE records (
    pk INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    type TEXT NOT NULL,
    project TEXT NOT NULL,
    seq INTEGER NOT NULL,
    title TEXT NOT NULL,
    content TEXT NOT NULL DEFAULT '',
    status TEXT NOT NULL,
    action_state TEXT NOT NULL,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    UNIQUE (type, project, seq)
);
CREATE INDEX records_updated ON records(updated_at);
CREATE INDEX records_type_state ON records(type, action_state);
CREATE TABLE record_sequences (
    type TEXT NOT NULL,
    project TEXT NOT NULL,
    last_seq INTEGER NOT NULL,
    PRIMARY KEY (type, project)
);
CREATE TABLE record_edges (
    source TEXT NOT NULL REFERENCES records(id),
    relation TEXT NOT NULL,
    target TEXT NOT NULL REFERENCES records(id),
    created_at REAL NOT NULL,
    PRIMARY KEY (source, relation, target)
) WITHOUT ROWID;
CREATE INDEX record_edges_target ON record_edges(target, relation);
CREATE INDEX record_edges_created ON record_edges(created_at);
CREATE TABLE record_history (
    n INTEGER PRIMARY KEY AUTOINCREMENT,
    record_id TEXT NOT NULL REFERENCES records(id),
    field TEXT NOT NULL,
    old_value TEXT,
    new_value TEXT,
    at REAL NOT NULL
);
CREATE INDEX record_history_record ON record_history(record_id, n);
""" + fts_schema(FTS_TABLE, "records", "pk", ("title", "content"))

register_migration("records", 1, _V1)

# v2: every record belongs to a namespace (a person's own, a team's), like notes.
register_migration(
    "records",
    2,
    "ALTER TABLE records ADD COLUMN namespace TEXT NOT NULL DEFAULT 'default';\n"
    "CREATE INDEX records_namespace ON records(namespace, type);",
)
