"""The SQLite schema, in the order it is applied (see ``stores.schema``).

Some steps are migrations of a table an earlier step made (``notes_dedup``, records v3:
SQLite rebuilds a table to change its columns), kept as they were written: older
databases applied them, fresh ones replay them to reach the same schema.
"""

from __future__ import annotations

from mcp_gateway.stores.schema import NOTE_COLUMNS, RECORD_COLUMNS, TRIGGERS, Step


def _fts(table: str, content: str, rowid: str, columns: tuple[str, ...]) -> str:
    """An external-content trigram FTS5 table kept in sync by triggers (in the writer's
    transaction, so the index never disagrees with the rows it mirrors)."""
    return f"""
CREATE VIRTUAL TABLE {table} USING fts5(
    {", ".join(columns)}, content='{content}', content_rowid='{rowid}', tokenize='trigram'
);
""" + _fts_triggers(table, content, rowid, columns)


def _fts_triggers(table: str, content: str, rowid: str, columns: tuple[str, ...]) -> str:
    """The triggers of ``_fts`` alone (a rebuilt content table needs them again)."""
    cols = ", ".join(columns)
    new = ", ".join(f"new.{c}" for c in columns)
    old = ", ".join(f"old.{c}" for c in columns)
    return f"""
CREATE TRIGGER {table}_ai AFTER INSERT ON {content} BEGIN
    INSERT INTO {table}(rowid, {cols}) VALUES (new.{rowid}, {new});
END;
CREATE TRIGGER {table}_ad AFTER DELETE ON {content} BEGIN
    INSERT INTO {table}({table}, rowid, {cols})
    VALUES ('delete', old.{rowid}, {old});
END;
CREATE TRIGGER {table}_au AFTER UPDATE OF {cols} ON {content} BEGIN
    INSERT INTO {table}({table}, rowid, {cols})
    VALUES ('delete', old.{rowid}, {old});
    INSERT INTO {table}(rowid, {cols}) VALUES (new.{rowid}, {new});
END;
"""


# a change-feed row for ``{kind}``/``{sid}`` at the counter's new value (``stores.changes``)
_BUMP = """
    UPDATE change_seq SET last = last + 1 WHERE id = 1;
    INSERT INTO changes(kind, source_id, seq) SELECT '{kind}', {sid}, last FROM change_seq
    WHERE id = 1 ON CONFLICT(kind, source_id) DO UPDATE SET seq = excluded.seq;
"""


def _trigger(name: str, event: str, table: str, kind: str, *sids: str) -> str:
    body = "".join(_BUMP.format(kind=kind, sid=sid) for sid in sids)
    return f"CREATE TRIGGER {name} AFTER {event} ON {table} BEGIN{body}END;\n"


# fmt: off
STEPS: tuple[Step, ...] = (
    # activity_log v1 (stores.activity)
    # a SQLite file that several gateways share (``database_url=sqlite:///...``) holds it too
    Step("activity_log", 1, """
    CREATE TABLE activity_log (n INTEGER PRIMARY KEY, ts REAL NOT NULL, entry TEXT NOT NULL);
    CREATE INDEX activity_log_ts ON activity_log(ts);
    """),
    # leases v1 (stores.leases)
    Step("leases", 1, """
    CREATE TABLE leases (
        name TEXT PRIMARY KEY,
        holder TEXT NOT NULL,
        expires_at REAL NOT NULL
    );
    """),
    # note_priors v1 (indexing.note_priors)
    Step("note_priors", 1, """
    CREATE TABLE note_priors (
        note_id TEXT PRIMARY KEY,
        prior REAL NOT NULL,
        updated_at REAL NOT NULL
    );
    """),
    # note_priors v2 (indexing.note_priors)
    # Reset priors are kept as 1.0 rows (not deleted), so the owner sees every change.
    Step("note_priors", 2, """CREATE INDEX note_priors_updated ON note_priors(updated_at);"""),
    # notes v1 (stores.notes)
    Step("notes", 1, """
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
    """),
    # notes_dedup v1 (stores.notes (note_keys))
    Step("notes_dedup", 1, """
    ALTER TABLE notes ADD COLUMN content_hash TEXT;
    CREATE INDEX notes_content ON notes(namespace, type, content_hash) WHERE deleted = 0;
    -- rows written before this migration; filled in by the first add (note_keys.backfill)
    CREATE INDEX notes_unhashed ON notes(id) WHERE content_hash IS NULL;
    """),
    # notes_order v1 (stores.notes)
    # Every search's recency read orders by (created_at, id): with id in the index too,
    # SQLite walks each (namespace, type) run newest first and stops at the limit,
    # instead of sorting every lesson and conclusion (10k notes: 2.0 -> 0.15 ms a read,
    # bench/LOG.md).
    Step("notes_order", 1, """
    DROP INDEX IF EXISTS notes_recent;
    CREATE INDEX notes_recent ON notes(namespace, type, deleted, created_at DESC, id DESC);
    """),
    # records v1 (records)
    Step("records", 1, """
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
""" + _fts("records_fts", "records", "pk", ("title", "content"))),
    # records v2 (records)
    Step("records", 2, """ALTER TABLE records ADD COLUMN namespace TEXT NOT NULL DEFAULT 'default';
CREATE INDEX records_namespace ON records(namespace, type);"""),
    # records v3 (records)
    Step("records", 3, """
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
""" + _fts_triggers("records_fts", "records", "pk", ("title", "content"))),
    # ui_signins v1 (stores.signins)
    Step("ui_signins", 1, """
    CREATE TABLE ui_secret (id INTEGER PRIMARY KEY CHECK (id = 1), secret TEXT NOT NULL);
    CREATE TABLE ui_used_codes (nonce TEXT PRIMARY KEY, expires REAL NOT NULL);
    CREATE TABLE ui_revoked_sessions (sid TEXT PRIMARY KEY, expires REAL NOT NULL);
"""),
    # vectors v1 (stores.vectors)
    Step("vectors", 1, """
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
    """),
    # vectors v2 (stores.vectors)
    # the partial index keeps reconcile's "which vectors lack terms" read proportional to
    # the rows that do, not a scan of every vector each pass
    Step("vectors", 2, """
    ALTER TABLE vectors ADD COLUMN terms BLOB;
    CREATE INDEX vectors_without_terms ON vectors(model) WHERE terms IS NULL;
    """),
    # vectors v3 (stores.vectors)
    # partial, like the one above: reconcile asks for drafts every pass
    Step("vectors", 3, """
    ALTER TABLE vectors ADD COLUMN draft INTEGER NOT NULL DEFAULT 0;
    CREATE INDEX vectors_drafts ON vectors(model) WHERE draft = 1;
    """),
    # zz_changes v1 (stores.changes)
    # The change feed's triggers (``stores.changes``): one row per item, moved to a new seq by
    # every write of the columns its point is built from, in the writer's transaction. A
    # later step that rebuilds notes, records or record_edges must recreate its triggers
    # (``changes.TRIGGERS``; ``tests/test_feed.py`` checks every one exists).
    Step("zz_changes", 1, """
    CREATE TABLE changes (
        kind TEXT NOT NULL,
        source_id TEXT NOT NULL,
        seq INTEGER NOT NULL,
        PRIMARY KEY (kind, source_id)
    );
    CREATE INDEX changes_seq ON changes(seq);
    CREATE TABLE change_seq (id INTEGER PRIMARY KEY CHECK (id = 1), last INTEGER NOT NULL);
    INSERT INTO change_seq VALUES (1, 0);
    """
    + _trigger(TRIGGERS[0], "INSERT", "notes", "note", "NEW.id")
    + _trigger(TRIGGERS[1], f"UPDATE OF {NOTE_COLUMNS}", "notes", "note", "NEW.id")
    + _trigger(TRIGGERS[2], "DELETE", "notes", "note", "OLD.id")
    + _trigger(TRIGGERS[3], "INSERT", "records", "record", "NEW.id")
    + _trigger(TRIGGERS[4], f"UPDATE OF {RECORD_COLUMNS}", "records", "record", "NEW.id")
    + _trigger(TRIGGERS[5], "INSERT", "record_edges", "record", "NEW.source", "NEW.target")
    + _trigger(TRIGGERS[6], "DELETE", "record_edges", "record", "OLD.source", "OLD.target")),
    # job_failures v1 (queue.failures)
    # Created on first use before this list existed, hence IF NOT EXISTS.
    Step("job_failures", 1, """
CREATE TABLE IF NOT EXISTS job_failures (
    job TEXT NOT NULL,
    key TEXT NOT NULL,
    error TEXT NOT NULL,
    tries INTEGER NOT NULL,
    count INTEGER NOT NULL DEFAULT 1,
    first_at REAL NOT NULL,
    last_at REAL NOT NULL,
    PRIMARY KEY (job, key)
)
"""),
    # index_snapshots v1 (stores.snapshots)
    Step("index_snapshots", 1, """
    CREATE TABLE index_snapshots (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        collection TEXT NOT NULL,
        model TEXT NOT NULL,
        cursors TEXT NOT NULL,
        change_seq INTEGER NOT NULL,
        points INTEGER NOT NULL,
        bytes INTEGER NOT NULL DEFAULT 0,
        chunks INTEGER NOT NULL DEFAULT 0,
        complete INTEGER NOT NULL DEFAULT 0,
        created_at REAL NOT NULL,
        gateway TEXT NOT NULL
    );
    CREATE TABLE index_snapshot_chunks (
        snapshot_id INTEGER NOT NULL,
        n INTEGER NOT NULL,
        data BLOB NOT NULL,
        PRIMARY KEY (snapshot_id, n)
    );
    """),
    # learned_keys v1 (stores.learned_keys): the questions a memory answered
    Step("learned_keys", 1, """
    CREATE TABLE learned_keys (
        namespace TEXT NOT NULL,
        note_id TEXT NOT NULL,
        question TEXT NOT NULL,
        model TEXT NOT NULL,
        vector BLOB NOT NULL,
        created_at REAL NOT NULL,
        used_at REAL NOT NULL,
        uses INTEGER NOT NULL,
        PRIMARY KEY (namespace, note_id, question)
    );
    CREATE INDEX learned_keys_note ON learned_keys(note_id);
    CREATE INDEX learned_keys_used ON learned_keys(namespace, used_at);
    """),
)
# fmt: on
