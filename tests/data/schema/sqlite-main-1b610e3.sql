-- sqlite-main-1b610e3: the statements kioku 1b610e3 applied to a new SQLite database, in its order,
-- and one row in each of its main tables (tests/test_schema.py restores it, then opens it)
CREATE TABLE IF NOT EXISTS schema_versions (module TEXT PRIMARY KEY, version INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
-- activity_log v1
CREATE TABLE activity_log (n INTEGER PRIMARY KEY, ts REAL NOT NULL, entry TEXT NOT NULL);
    CREATE INDEX activity_log_ts ON activity_log(ts);
INSERT OR REPLACE INTO schema_versions(module, version) VALUES ('activity_log', 1);
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
-- note_priors v2
CREATE INDEX note_priors_updated ON note_priors(updated_at);
INSERT OR REPLACE INTO schema_versions(module, version) VALUES ('note_priors', 2);
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
-- notes_dedup v1
ALTER TABLE notes ADD COLUMN content_hash TEXT;
    CREATE INDEX notes_content ON notes(namespace, type, content_hash) WHERE deleted = 0;
    -- rows written before this migration; filled in by the first add (note_keys.backfill)
    CREATE INDEX notes_unhashed ON notes(id) WHERE content_hash IS NULL;
INSERT OR REPLACE INTO schema_versions(module, version) VALUES ('notes_dedup', 1);
-- notes_order v1
DROP INDEX IF EXISTS notes_recent;
    CREATE INDEX notes_recent ON notes(namespace, type, deleted, created_at DESC, id DESC);
INSERT OR REPLACE INTO schema_versions(module, version) VALUES ('notes_order', 1);
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
-- records v2
ALTER TABLE records ADD COLUMN namespace TEXT NOT NULL DEFAULT 'default';
CREATE INDEX records_namespace ON records(namespace, type);
INSERT OR REPLACE INTO schema_versions(module, version) VALUES ('records', 2);
-- records v3
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
INSERT OR REPLACE INTO schema_versions(module, version) VALUES ('records', 3);
-- ui_signins v1
CREATE TABLE ui_secret (id INTEGER PRIMARY KEY CHECK (id = 1), secret TEXT NOT NULL);
    CREATE TABLE ui_used_codes (nonce TEXT PRIMARY KEY, expires REAL NOT NULL);
    CREATE TABLE ui_revoked_sessions (sid TEXT PRIMARY KEY, expires REAL NOT NULL);
INSERT OR REPLACE INTO schema_versions(module, version) VALUES ('ui_signins', 1);
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
-- vectors v2
ALTER TABLE vectors ADD COLUMN terms BLOB;
    CREATE INDEX vectors_without_terms ON vectors(model) WHERE terms IS NULL;
INSERT OR REPLACE INTO schema_versions(module, version) VALUES ('vectors', 2);
-- vectors v3
ALTER TABLE vectors ADD COLUMN draft INTEGER NOT NULL DEFAULT 0;
    CREATE INDEX vectors_drafts ON vectors(model) WHERE draft = 1;
INSERT OR REPLACE INTO schema_versions(module, version) VALUES ('vectors', 3);
-- zz_changes v1
CREATE TABLE changes (
        kind TEXT NOT NULL,
        source_id TEXT NOT NULL,
        seq INTEGER NOT NULL,
        PRIMARY KEY (kind, source_id)
    );
    CREATE INDEX changes_seq ON changes(seq);
    CREATE TABLE change_seq (id INTEGER PRIMARY KEY CHECK (id = 1), last INTEGER NOT NULL);
    INSERT INTO change_seq VALUES (1, 0);
    CREATE TRIGGER changes_note_insert AFTER INSERT ON notes BEGIN
    UPDATE change_seq SET last = last + 1 WHERE id = 1;
    INSERT INTO changes(kind, source_id, seq) SELECT 'note', NEW.id, last FROM change_seq
    WHERE id = 1 ON CONFLICT(kind, source_id) DO UPDATE SET seq = excluded.seq;
END;
CREATE TRIGGER changes_note_update AFTER UPDATE OF text, type, priority, domain, solved_query, namespace, deleted ON notes BEGIN
    UPDATE change_seq SET last = last + 1 WHERE id = 1;
    INSERT INTO changes(kind, source_id, seq) SELECT 'note', NEW.id, last FROM change_seq
    WHERE id = 1 ON CONFLICT(kind, source_id) DO UPDATE SET seq = excluded.seq;
END;
CREATE TRIGGER changes_note_delete AFTER DELETE ON notes BEGIN
    UPDATE change_seq SET last = last + 1 WHERE id = 1;
    INSERT INTO changes(kind, source_id, seq) SELECT 'note', OLD.id, last FROM change_seq
    WHERE id = 1 ON CONFLICT(kind, source_id) DO UPDATE SET seq = excluded.seq;
END;
CREATE TRIGGER changes_record_insert AFTER INSERT ON records BEGIN
    UPDATE change_seq SET last = last + 1 WHERE id = 1;
    INSERT INTO changes(kind, source_id, seq) SELECT 'record', NEW.id, last FROM change_seq
    WHERE id = 1 ON CONFLICT(kind, source_id) DO UPDATE SET seq = excluded.seq;
END;
CREATE TRIGGER changes_record_update AFTER UPDATE OF title, content, status, type, namespace ON records BEGIN
    UPDATE change_seq SET last = last + 1 WHERE id = 1;
    INSERT INTO changes(kind, source_id, seq) SELECT 'record', NEW.id, last FROM change_seq
    WHERE id = 1 ON CONFLICT(kind, source_id) DO UPDATE SET seq = excluded.seq;
END;
CREATE TRIGGER changes_edge_insert AFTER INSERT ON record_edges BEGIN
    UPDATE change_seq SET last = last + 1 WHERE id = 1;
    INSERT INTO changes(kind, source_id, seq) SELECT 'record', NEW.source, last FROM change_seq
    WHERE id = 1 ON CONFLICT(kind, source_id) DO UPDATE SET seq = excluded.seq;

    UPDATE change_seq SET last = last + 1 WHERE id = 1;
    INSERT INTO changes(kind, source_id, seq) SELECT 'record', NEW.target, last FROM change_seq
    WHERE id = 1 ON CONFLICT(kind, source_id) DO UPDATE SET seq = excluded.seq;
END;
CREATE TRIGGER changes_edge_delete AFTER DELETE ON record_edges BEGIN
    UPDATE change_seq SET last = last + 1 WHERE id = 1;
    INSERT INTO changes(kind, source_id, seq) SELECT 'record', OLD.source, last FROM change_seq
    WHERE id = 1 ON CONFLICT(kind, source_id) DO UPDATE SET seq = excluded.seq;

    UPDATE change_seq SET last = last + 1 WHERE id = 1;
    INSERT INTO changes(kind, source_id, seq) SELECT 'record', OLD.target, last FROM change_seq
    WHERE id = 1 ON CONFLICT(kind, source_id) DO UPDATE SET seq = excluded.seq;
END;
INSERT OR REPLACE INTO schema_versions(module, version) VALUES ('zz_changes', 1);
-- job_failures, made by the job runners at start
CREATE TABLE IF NOT EXISTS job_failures (
    job TEXT NOT NULL,
    key TEXT NOT NULL,
    error TEXT NOT NULL,
    tries INTEGER NOT NULL,
    count INTEGER NOT NULL DEFAULT 1,
    first_at REAL NOT NULL,
    last_at REAL NOT NULL,
    PRIMARY KEY (job, key)
);
INSERT INTO notes(id, text, type, created_at, updated_at) VALUES ('x-id', 'x-text', 'x-type', 1.5, 1.5);
INSERT INTO records(id, type, project, seq, title, status, action_state, created_at, updated_at) VALUES ('x-id', 'x-type', 'x-project', 1, 'x-title', 'x-status', 'x-action_state', 1.5, 1.5);
INSERT INTO vectors(kind, source_id, model, content_hash, dim, vector, seq, created_at) VALUES ('x-kind', 'x-source_id', 'x-model', 'x-content_hash', 1, x'00', 1, 1.5);
INSERT INTO note_priors(note_id, prior, updated_at) VALUES ('x-note_id', 1.5, 1.5);
INSERT INTO leases(name, holder, expires_at) VALUES ('x-name', 'x-holder', 1.5);
