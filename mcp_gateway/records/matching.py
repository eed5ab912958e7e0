"""Finding records by text: full-text candidates and lifecycle heads.

``candidates`` filters by namespace inside the FTS5 and LIKE queries (PostgreSQL: the
one pg_trgm query, ``fts_pg``), before the
candidate limit, so one tenant's records never push another's out or change how much
work its query does. ``resolve_heads`` replaces hits by their lifecycle heads with one
walk per chain under a shared step budget (``lifecycle.heads``).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from mcp_gateway.records import fts_pg, lifecycle, queries
from mcp_gateway.records.fts import FTS_TABLE, ParsedQuery, like_condition, match_rowids
from mcp_gateway.records.model import Record, RecordSearchHit

# Old versions of one head may all match: look deeper than ``limit`` before resolving.
_CANDIDATES = 1000
# bm25 column weights (title, content): a title is the record's summary.
_WEIGHTS = (2.0, 1.0)
# Steps of all head walks of one current_only search together (see lifecycle.heads).
_HEAD_BUDGET = 20_000


def candidates(
    conn: sqlite3.Connection,
    parsed: ParsedQuery,
    namespaces: Sequence[str] = (),
    dialect: str = "sqlite",
) -> dict[int, float]:
    """pk -> score: bm25 hits for long terms, then LIKE hits for short ones (score 0).

    ``namespaces`` (when given) filters inside both queries, before the candidate
    limit: another tenant's records can neither push the caller's own out of the top
    ``_CANDIDATES`` nor change how much work the query does.
    """
    marks = ",".join("?" * len(namespaces))
    if dialect == "postgres":  # one trigram-indexed query for long and short terms
        return fts_pg.scored_rows(
            conn,
            "records",
            "pk",
            ("title", "content"),
            _WEIGHTS,
            parsed.terms,
            _CANDIDATES,
            where=f"namespace IN ({marks})" if namespaces else "",
            params=list(namespaces),
        )
    match, short_terms = parsed.match_expression(), parsed.short_terms
    scored: dict[int, float] = {}
    if match:
        hits = match_rowids(
            conn,
            FTS_TABLE,
            match,
            _CANDIDATES,
            _WEIGHTS,
            content=("records", "pk"),
            where=f"c.namespace IN ({marks})" if namespaces else "",
            params=list(namespaces),
        )
        scored.update(hits)
    if short_terms:
        cond, params = like_condition(("title", "content"), short_terms)
        ns_cond = f" AND namespace IN ({marks})" if namespaces else ""
        sql = f"SELECT pk FROM records WHERE {cond}{ns_cond} ORDER BY pk DESC LIMIT ?"
        for row in conn.execute(sql, (*params, *namespaces, _CANDIDATES)):
            scored.setdefault(int(row[0]), 0.0)
    return scored


def heads_of(conn: sqlite3.Connection, ids: Sequence[str]) -> dict[str, str]:
    """Record id -> its lifecycle head's id (itself when current), under the shared
    step budget."""
    return lifecycle.heads(list(ids), queries.successors(conn), _HEAD_BUDGET)


def retired_heads(
    conn: sqlite3.Connection, ids: Sequence[str], namespaces: Sequence[str]
) -> dict[str, dict[str, str]]:
    """Retired id -> {"id", "type", "namespace"} of its head, so the unified search can
    carry old wording to the record now in force; current ids are not listed. Heads
    outside ``namespaces`` (empty: any, as in an index filter) are left out: a link
    never widens what a caller may read."""
    head_of = heads_of(conn, ids)
    heads = queries.records_by_id(conn, list(set(head_of.values())))
    allowed = set(namespaces)
    return {
        rid: {"id": h, "type": heads[h].type, "namespace": heads[h].namespace}
        for rid, h in head_of.items()
        if h != rid and h in heads and (not allowed or heads[h].namespace in allowed)
    }


def resolve_heads(
    conn: sqlite3.Connection, matched: list[tuple[Record, str, float]]
) -> list[tuple[Record, str, float]]:
    """Replace each hit by its lifecycle head; a head keeps its best-scoring match.
    Oldest first, so one walk of a chain resolves every version of it."""
    ordered = sorted(matched, key=lambda hit: hit[0].created_at)
    head_of = heads_of(conn, [r.id for r, _, _ in ordered])
    best: dict[str, tuple[str, float]] = {}  # head id -> (matched id, score)
    for rec, _, score in matched:
        head = head_of.get(rec.id)
        if head is None:
            continue
        if head not in best or score > best[head][1]:
            best[head] = (rec.id, score)
    heads = queries.records_by_id(conn, best)
    return [(heads[h], m, s) for h, (m, s) in best.items() if h in heads]


# what a hit shows of its record: the fields both models name
_HIT_FIELDS = set(RecordSearchHit.model_fields) & set(Record.model_fields)


def search_hit(rec: Record, matched_id: str, score: float, current: bool) -> RecordSearchHit:
    return RecordSearchHit(
        **rec.model_dump(include=_HIT_FIELDS),
        current=current,
        matched_id=matched_id,
        score=score,
    )
