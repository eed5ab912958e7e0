"""The truth store's schema: one ordered list of steps per dialect.

``sqlite.STEPS`` and ``postgres.STEPS`` (the two modules here) are every table, index and
trigger kioku keeps, in the order they are applied. A step is ``(module, version, sql)``:
a database records, per module, the last version it applied (``schema_versions``), and
on open ``Database`` (``stores.db``, the one place that applies them) applies, in list
order, each step whose version is above its module's (on SQLite each in one
transaction; on PostgreSQL under an advisory lock, so one process migrates). The module
names are those older databases recorded, which is why ``zz_changes`` keeps its name. A
PostgreSQL database starts at the current schema (its own version numbers: it has no
SQLite history to replay).

To add a table: append ``Step("new_table", 1, "CREATE TABLE new_table (...);")`` at the
end of both lists (each in its dialect's types: REAL / DOUBLE PRECISION, BLOB / BYTEA,
TEXT COLLATE "C" for ids on PostgreSQL). To change one: append ``Step(module, n + 1,
...)`` to the SQLite list, and on PostgreSQL a step of its own (or the change folded into
a new module's step). Never edit a step a released database may have applied.
``tests/test_schema.py`` checks that a fresh database and one upgraded from an earlier
schema end the same, on both dialects.
"""

from __future__ import annotations

from typing import Literal, NamedTuple

Dialect = Literal["sqlite", "postgres"]

# The change feed's triggers (``stores.changes``): a write of the columns a point is built
# from (``indexing.points``) moves the item's row; a record's edges supersede it. A later
# step that rebuilds notes, records or record_edges must recreate its triggers
# (``services.app`` and ``tests/test_feed.py`` check every one exists).
TRIGGERS = (
    "changes_note_insert",
    "changes_note_update",
    "changes_note_delete",
    "changes_record_insert",
    "changes_record_update",
    "changes_edge_insert",
    "changes_edge_delete",
)
NOTE_COLUMNS = "text, type, priority, domain, solved_query, namespace, deleted"
RECORD_COLUMNS = "title, content, status, type, namespace"


class Step(NamedTuple):
    module: str
    version: int
    sql: str
