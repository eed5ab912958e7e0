"""Connection-level reads and writes for records (run inside ``Database`` threads).

Every function takes the open ``sqlite3.Connection``; callers choose the transaction.
"""

from __future__ import annotations

import json
import re
import sqlite3
import unicodedata
from collections.abc import Callable, Iterable, Sequence

from mcp_gateway.common.errors import Conflict, NotFound
from mcp_gateway.common.validation import storable_id
from mcp_gateway.records import lifecycle
from mcp_gateway.records.fts import escape_like
from mcp_gateway.records.model import Edge, HistoryEntry, Lifecycle, Record, RecordGraph

_RECORD_COLS = (
    "id, type, project, seq, title, content, status, action_state, created_at, updated_at, "
    "namespace"
)


def to_record(row: sqlite3.Row) -> Record:
    return Record(**{k: row[k] for k in row.keys() if k != "pk"})


def get_record(conn: sqlite3.Connection, record_id: str) -> Record:
    if not storable_id(record_id):  # the same answer as an unknown id, on every store
        raise NotFound(f"no record {record_id!r}", kind="record")
    row = conn.execute(f"SELECT {_RECORD_COLS} FROM records WHERE id = ?", (record_id,)).fetchone()
    if row is None:
        raise NotFound(f"no record {record_id!r}", kind="record")
    return to_record(row)


def records_by_pk(conn: sqlite3.Connection, pks: Sequence[int]) -> dict[int, Record]:
    out: dict[int, Record] = {}
    for chunk in _chunks(list(pks), 500):
        marks = ",".join("?" * len(chunk))
        sql = f"SELECT pk, {_RECORD_COLS} FROM records WHERE pk IN ({marks})"
        out.update({int(r["pk"]): to_record(r) for r in conn.execute(sql, chunk)})
    return out


def records_by_id(conn: sqlite3.Connection, ids: Iterable[str]) -> dict[str, Record]:
    out: dict[str, Record] = {}
    for chunk in _chunks(list(dict.fromkeys(ids)), 500):
        marks = ",".join("?" * len(chunk))
        sql = f"SELECT {_RECORD_COLS} FROM records WHERE id IN ({marks})"
        out.update({r["id"]: to_record(r) for r in conn.execute(sql, chunk)})
    return out


def select_records(conn: sqlite3.Connection, where: str, params: Sequence[object]) -> list[Record]:
    sql = f"SELECT {_RECORD_COLS} FROM records WHERE {where}"
    return [to_record(r) for r in conn.execute(sql, tuple(params))]


def _chunks(items: list[object], size: int) -> Iterable[list[object]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


# -- writes ----------------------------------------------------------------------------
DEFAULT_NAMESPACE = "default"


def next_seq(conn: sqlite3.Connection, rtype: str, project: str, namespace: str) -> int:
    """The namespace's next number for (type, project): one counter per namespace, so
    an id never reveals how many records other tenants wrote."""
    # Same BEGIN IMMEDIATE transaction as the insert: concurrent adds cannot collide.
    row = conn.execute(
        "INSERT INTO record_sequences(namespace, type, project, last_seq) VALUES (?, ?, ?, 1) "
        "ON CONFLICT(namespace, type, project) "
        "DO UPDATE SET last_seq = record_sequences.last_seq + 1 "
        "RETURNING last_seq",
        (namespace, rtype, project),
    ).fetchone()
    return int(row[0])


def namespace_tag(conn: sqlite3.Connection, namespace: str) -> str:
    """The id suffix of ``namespace`` ("" for the default one), unique and stable:
    assigned on its first record (letters/digits of the name, plus a number if taken)."""
    if namespace == DEFAULT_NAMESPACE:
        return ""
    row = conn.execute(
        "SELECT tag FROM record_namespace_tags WHERE namespace = ?", (namespace,)
    ).fetchone()
    if row is not None:
        return str(row[0])
    base = re.sub(r"[^A-Z0-9]", "", namespace.upper())[:12] or "NS"
    tag, n = base, 1
    while conn.execute("SELECT 1 FROM record_namespace_tags WHERE tag = ?", (tag,)).fetchone():
        n += 1
        tag = f"{base}{n}"
    conn.execute(
        "INSERT INTO record_namespace_tags(namespace, tag) VALUES (?, ?)", (namespace, tag)
    )
    return tag


def record_id_for(rtype: str, project: str, seq: int, tag: str) -> str:
    """AUDIT-MEM-001 in the default namespace, AUDIT-MEM-001.ALICE in namespace alice."""
    base = f"{rtype.upper()}-{project}-{seq:03d}"
    return f"{base}.{tag}" if tag else base


def insert_record(conn: sqlite3.Connection, rec: Record) -> None:
    conn.execute(
        f"INSERT INTO records({_RECORD_COLS}) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
        (
            rec.id,
            rec.type,
            rec.project,
            rec.seq,
            rec.title,
            rec.content,
            rec.status,
            rec.action_state,
            rec.created_at,
            rec.updated_at,
            rec.namespace,
        ),
    )
    initial = rec.model_dump(include={"type", "title", "content", "status", "action_state"})
    add_history(
        conn, rec.id, "created", None, json.dumps(initial, ensure_ascii=False), rec.created_at
    )


def add_history(
    conn: sqlite3.Connection, rid: str, field: str, old: str | None, new: str | None, at: float
) -> HistoryEntry:
    conn.execute(
        "INSERT INTO record_history(record_id, field, old_value, new_value, at) VALUES (?,?,?,?,?)",
        (rid, field, old, new, at),
    )
    return HistoryEntry(record_id=rid, field=field, old_value=old, new_value=new, at=at)


def set_field(conn: sqlite3.Connection, rid: str, field: str, value: str, at: float) -> None:
    # ``field`` comes from a fixed whitelist in the store, never from the caller.
    conn.execute(f"UPDATE records SET {field} = ?, updated_at = ? WHERE id = ?", (value, at, rid))


def find_repeat(
    conn: sqlite3.Connection, rtype: str, title: str, content: str, namespace: str
) -> Record | None:
    """The oldest current record of ``rtype`` in ``namespace`` with this title and content
    (whitespace runs as one space), if any: the one an exact repeat refers to."""
    where, params = current_filter([rtype], [], [namespace])
    # titles first (short), the content only of those whose title matches
    want = _squeezed(title)
    # stored titles are NFC (validation.clean_text), so a repeat's title contains the
    # longest word of this one: only those titles are read (not every record of the
    # type, which on PostgreSQL crossed the network on each add; a trigram index there)
    longest = max(want.split(), key=len, default="")
    if longest:
        where = f"{where} AND title LIKE ? ESCAPE '\\'"
        params = [*params, f"%{escape_like(longest)}%"]
    rows = conn.execute(f"SELECT pk, title FROM records WHERE {where} ORDER BY pk", params)
    pks = [int(r["pk"]) for r in rows if _squeezed(r["title"]) == want]
    found = records_by_pk(conn, pks) if pks else {}
    want = _squeezed(content)
    return next((found[pk] for pk in pks if _squeezed(found[pk].content) == want), None)


def _squeezed(text: str) -> str:
    return " ".join(unicodedata.normalize("NFC", text).split())


def has_edge(conn: sqlite3.Connection, source: str, relation: str, target: str) -> bool:
    row = conn.execute(
        "SELECT 1 FROM record_edges WHERE source = ? AND relation = ? AND target = ?",
        (source, relation, target),
    ).fetchone()
    return row is not None


def insert_edge(
    conn: sqlite3.Connection, source: str, relation: str, target: str, at: float
) -> Edge:
    """Check and insert one edge; raises before writing anything on a refusal."""
    if source == target:
        raise Conflict(f"a record cannot {relation} itself ({source})")
    get_record(conn, target)
    if has_edge(conn, source, relation, target):
        raise Conflict(f"the edge {source} {relation} {target} already exists")
    if lifecycle.creates_cycle(source, relation, target, successors(conn)):
        raise Conflict(
            f"{source} {relation} {target} would make a supersedes/duplicates cycle; "
            "a replaced record must lead to one current record"
        )
    conn.execute(
        "INSERT INTO record_edges(source, relation, target, created_at) VALUES (?,?,?,?)",
        (source, relation, target, at),
    )
    add_history(conn, source, "link", None, f"{relation}:{target}", at)
    return Edge.model_validate(
        {"source": source, "relation": relation, "target": target, "created_at": at}
    )


# -- lifecycle reads -------------------------------------------------------------------
def successors(conn: sqlite3.Connection) -> lifecycle.Successors:
    """Replaced-by successors of a record, newest record first."""

    def replaced_by(rid: str) -> list[str]:
        rows = conn.execute(
            "SELECT e.source AS nxt, r.created_at, r.pk FROM record_edges e "
            "JOIN records r ON r.id = e.source WHERE e.relation = 'supersedes' AND e.target = ? "
            "UNION ALL "
            "SELECT e.target, r.created_at, r.pk FROM record_edges e "
            "JOIN records r ON r.id = e.target WHERE e.relation = 'duplicates' AND e.source = ? "
            "ORDER BY 2 DESC, 3 DESC",
            (rid, rid),
        )
        return [row[0] for row in rows]

    return replaced_by


def edges_touching(conn: sqlite3.Connection, rid: str) -> list[Edge]:
    rows = conn.execute(
        "SELECT source, relation, target, created_at FROM record_edges "
        "WHERE source = ? OR target = ? ORDER BY created_at, source, target",
        (rid, rid),
    )
    return [Edge(**dict(r)) for r in rows]


def history(conn: sqlite3.Connection, rid: str) -> list[HistoryEntry]:
    rows = conn.execute(
        "SELECT record_id, field, old_value, new_value, at FROM record_history "
        "WHERE record_id = ? ORDER BY n",
        (rid,),
    )
    return [HistoryEntry(**dict(r)) for r in rows]


_OUT = {
    "supersedes": "supersedes",
    "duplicates": "duplicates",
    "resolves": "resolves",
    "verifies": "verifies",
    "contradicts": "contradicts",
    "references": "references",
}
_IN = {
    "supersedes": "superseded_by",
    "duplicates": "duplicated_by",
    "resolves": "resolved_by",
    "verifies": "verified_by",
    "contradicts": "contradicted_by",
    "references": "referenced_by",
}


def lifecycle_of(
    conn: sqlite3.Connection,
    rid: str,
    edges: list[Edge],
    visible: Callable[[str], bool] | None = None,
) -> Lifecycle:
    """The record's relations from ``edges``; ``visible`` hides records of namespaces
    the caller cannot read (from the verifications too)."""
    lists: dict[str, list[str]] = {name: [] for name in (*_OUT.values(), *_IN.values())}
    for e in edges:
        if e.source == rid:
            lists[_OUT[e.relation]].append(e.target)
        if e.target == rid:
            lists[_IN[e.relation]].append(e.source)
    path = lifecycle.head_path(rid, successors(conn))
    verifications = {
        fix: [v for v in incoming(conn, fix, "verifies") if visible is None or visible(v)]
        for fix in lists["resolved_by"]
    }
    return Lifecycle(
        current=len(path) == 1,
        head=path[-1],
        head_path=path,
        fix_verifications=verifications,
        **lists,
    )


def incoming(conn: sqlite3.Connection, rid: str, relation: str) -> list[str]:
    rows = conn.execute(
        "SELECT source FROM record_edges WHERE target = ? AND relation = ? ORDER BY created_at",
        (rid, relation),
    )
    return [r[0] for r in rows]


def connected(conn: sqlite3.Connection, rid: str, max_nodes: int) -> RecordGraph:
    """The records linked to ``rid`` by any edge, breadth first, up to ``max_nodes``."""
    get_record(conn, rid)
    seen, queue, edges = {rid}, [rid], dict[tuple[str, str, str], Edge]()
    truncated = False
    while queue:
        for e in edges_touching(conn, queue.pop(0)):
            edges[(e.source, e.relation, e.target)] = e
            for node in (e.source, e.target):
                if node in seen:
                    continue
                if len(seen) >= max_nodes:
                    truncated = True
                    continue
                seen.add(node)
                queue.append(node)
    kept = [e for e in edges.values() if e.source in seen and e.target in seen]
    return RecordGraph(root=rid, records=records_by_id(conn, seen), edges=kept, truncated=truncated)


def current_filter(
    types: list[str], states: list[str], namespaces: list[str] | None = None
) -> tuple[str, list[object]]:
    """SQL for "current" (neither superseded nor a duplicate), narrowed to the given
    types, action states and namespaces (each ignored when empty)."""
    clauses = [
        "NOT EXISTS (SELECT 1 FROM record_edges e WHERE e.relation = 'supersedes' "
        "AND e.target = records.id)",
        "NOT EXISTS (SELECT 1 FROM record_edges e WHERE e.relation = 'duplicates' "
        "AND e.source = records.id)",
    ]
    params: list[object] = []
    for col, values in (("type", types), ("action_state", states), ("namespace", namespaces)):
        if values:
            clauses.append(f"{col} IN ({','.join('?' * len(values))})")
            params.extend(values)
    return " AND ".join(clauses), params


# A fix counts as verified by a verification that verifies it and was not rejected.
_VERIFIED = (
    "EXISTS (SELECT 1 FROM record_edges ve JOIN records vr ON vr.id = ve.source "
    "WHERE ve.relation = 'verifies' AND ve.target = {fix} AND vr.status != 'rejected')"
)
# Open work: what still needs doing. A verified fix is done, and so is an audit that a
# verified fix resolves -- the edges say so, whatever the stored action_state still is.
OPEN_WORK_FILTER = (
    "NOT (records.type = 'fix' AND " + _VERIFIED.format(fix="records.id") + ") "
    "AND NOT (records.type = 'audit' AND EXISTS (SELECT 1 FROM record_edges re "
    "WHERE re.relation = 'resolves' AND re.target = records.id AND "
    + _VERIFIED.format(fix="re.source")
    + "))"
)
