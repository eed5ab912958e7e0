"""Tables for lifecycle records (module "records" in ``schema_versions``)."""

from __future__ import annotations

from mcp_gateway.records.fts import fts_schema, fts_triggers
from mcp_gateway.stores.db import register_migration

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

# v3: numbers per namespace, so that a tenant's ids do not count another's records
# (issue 10). ``UNIQUE (type, project, seq)`` becomes per namespace, which SQLite can
# only do by rebuilding the table (same pk: the FTS rows stay valid; its triggers are
# recreated). Ids stay unique: the "default" namespace keeps AUDIT-MEM-001 and continues
# after the old shared counter; other namespaces add their tag (AUDIT-MEM-001.ALICE).
_V3 = """
CREATE TABLE records_v3 (
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
    namespace TEXT NOT NULL DEFAULT 'default',
    UNIQUE (namespace, type, project, seq)
);
INSERT INTO records_v3 (pk, id, type, project, seq, title, content, status, action_state,
                        created_at, updated_at, namespace)
SELECT pk, id, type, project, seq, title, content, status, action_state,
       created_at, updated_at, namespace FROM records;
DROP TABLE records;
ALTER TABLE records_v3 RENAME TO records;
CREATE INDEX records_updated ON records(updated_at);
CREATE INDEX records_type_state ON records(type, action_state);
CREATE INDEX records_namespace ON records(namespace, type);
CREATE TABLE record_sequences_v3 (
    namespace TEXT NOT NULL,
    type TEXT NOT NULL,
    project TEXT NOT NULL,
    last_seq INTEGER NOT NULL,
    PRIMARY KEY (namespace, type, project)
);
INSERT INTO record_sequences_v3 (namespace, type, project, last_seq)
SELECT namespace, type, project, MAX(seq) FROM records GROUP BY namespace, type, project;
INSERT INTO record_sequences_v3 (namespace, type, project, last_seq)
SELECT 'default', type, project, last_seq FROM record_sequences WHERE 1
ON CONFLICT (namespace, type, project) DO UPDATE SET last_seq = MAX(last_seq, excluded.last_seq);
DROP TABLE record_sequences;
ALTER TABLE record_sequences_v3 RENAME TO record_sequences;
CREATE TABLE record_namespace_tags (namespace TEXT PRIMARY KEY, tag TEXT NOT NULL UNIQUE);
""" + fts_triggers(FTS_TABLE, "records", "pk", ("title", "content"))
register_migration("records", 3, _V3)
