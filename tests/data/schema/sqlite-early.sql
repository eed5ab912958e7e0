-- sqlite-early: the statements kioku 1b610e3 applied to a new SQLite database, in its order,
-- and one row in each of its main tables (tests/test_schema.py restores it, then opens it)
CREATE TABLE IF NOT EXISTS schema_versions (module TEXT PRIMARY KEY, version INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
-- leases v1
CREATE TABLE leases (
        name TEXT PRIMARY KEY,
        holder TEXT NOT NULL,
        expires_at REAL NOT NULL
    );
INSERT OR REPLACE INTO schema_versions(module, version) VALUES ('leases', 1);
-- note_priors v1
CREATE TABLE note_priors (
        note_id TEXT PRIMARY KEY,
        prior REAL NOT NULL,
        updated_at REAL NOT NULL
    );
INSERT OR REPLACE INTO schema_versions(module, version) VALUES ('note_priors', 1);
-- notes v1
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
INSERT OR REPLACE INTO schema_versions(module, version) VALUES ('notes', 1);
-- records v1
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

CREATE VIRTUAL TABLE records_fts USING fts5(
    title, content, content='records', content_rowid='pk', tokenize='trigram'
);

CREATE TRIGGER records_fts_ai AFTER INSERT ON records BEGIN
    INSERT INTO records_fts(rowid, title, content) VALUES (new.pk, new.title, new.content);
END;
CREATE TRIGGER records_fts_ad AFTER DELETE ON records BEGIN
    INSERT INTO records_fts(records_fts, rowid, title, content)
    VALUES ('delete', old.pk, old.title, old.content);
END;
CREATE TRIGGER records_fts_au AFTER UPDATE OF title, content ON records BEGIN
    INSERT INTO records_fts(records_fts, rowid, title, content)
    VALUES ('delete', old.pk, old.title, old.content);
    INSERT INTO records_fts(rowid, title, content) VALUES (new.pk, new.title, new.content);
END;
INSERT OR REPLACE INTO schema_versions(module, version) VALUES ('records', 1);
-- vectors v1
CREATE TABLE vectors (
        kind TEXT NOT NULL,
        source_id TEXT NOT NULL,
        model TEXT NOT NULL,
        content_hash TEXT NOT NULL,
        dim INTEGER NOT NULL,
        vector BLOB NOT NULL,
        seq INTEGER NOT NULL,
        created_at REAL NOT NULL,
        PRIMARY KEY (kind, source_id, model)
    );
    CREATE INDEX vectors_seq ON vectors(model, seq);
    CREATE TABLE vector_seq (id INTEGER PRIMARY KEY CHECK (id = 1), last INTEGER NOT NULL);
    INSERT INTO vector_seq VALUES (1, 0);
INSERT OR REPLACE INTO schema_versions(module, version) VALUES ('vectors', 1);
INSERT INTO notes(id, text, type, created_at, updated_at) VALUES ('x-id', 'x-text', 'x-type', 1.5, 1.5);
INSERT INTO records(id, type, project, seq, title, status, action_state, created_at, updated_at) VALUES ('x-id', 'x-type', 'x-project', 1, 'x-title', 'x-status', 'x-action_state', 1.5, 1.5);
INSERT INTO vectors(kind, source_id, model, content_hash, dim, vector, seq, created_at) VALUES ('x-kind', 'x-source_id', 'x-model', 'x-content_hash', 1, x'00', 1, 1.5);
INSERT INTO note_priors(note_id, prior, updated_at) VALUES ('x-note_id', 1.5, 1.5);
INSERT INTO leases(name, holder, expires_at) VALUES ('x-name', 'x-holder', 1.5);
