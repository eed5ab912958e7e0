"""Which records a caller's scope may reach: the one access check of the record store,
worded the same for an unknown id and another namespace's id (``unseen``)."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

from mcp_gateway.common.access import Scope, unseen
from mcp_gateway.common.errors import NotFound
from mcp_gateway.records import queries
from mcp_gateway.records.model import Edge, Record

# Links that only point at a record; every other relation changes the target's state
# or what its readers see (superseded, duplicated, resolved, verified, contradicted),
# so it needs write access to the target's namespace.
READ_ONLY_RELATIONS = frozenset({"references"})


def require(conn: sqlite3.Connection, rid: str, scope: Scope | None, *, write: bool) -> Record:
    """The record, if the caller's scope may read (or write) it; else NotFound, worded
    the same for an unknown id and another namespace's id (``unseen``)."""
    try:
        rec = queries.get_record(conn, rid)
    except NotFound:
        raise unseen(f"record {rid!r}", "record") from None
    if scope is not None:
        if write:
            scope.require_write(rec.namespace, f"record {rid!r}", "record")
        else:
            scope.require_read(rec.namespace, f"record {rid!r}", "record")
    return rec


def visible_edges(
    conn: sqlite3.Connection, rid: str, edges: list[Edge], scope: Scope | None
) -> tuple[list[Edge], Callable[[str], bool] | None]:
    """The edges whose other end the caller may read, and that test itself: another
    tenant's record ids never appear in a view (e.g. one that references yours)."""
    if scope is None:
        return edges, None
    namespaces: dict[str, str] = {}

    def visible(other: str) -> bool:
        if other not in namespaces:
            found = queries.records_by_id(conn, [other]).get(other)
            namespaces[other] = found.namespace if found else ""
        return scope.can_read(namespaces[other])

    kept = [e for e in edges if visible(e.target if e.source == rid else e.source)]
    return kept, visible
