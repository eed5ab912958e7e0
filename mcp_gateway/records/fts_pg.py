"""Records' full text on PostgreSQL: pg_trgm, with ``records.fts``'s query semantics.

The same parsed terms (``fts.parse_query``: user text is never syntax) are OR-ed; each
is one escaped ``ILIKE '%term%'`` per column, which the GIN trigram indexes
(``stores.schema``) serve without word boundaries, so Japanese and Thai match inside
runs of text as they do in SQLite's FTS5 trigram table. Terms shorter than 3
characters match too (a scan, as SQLite's LIKE fallback) but score 0, as there.

The score counts the long terms found, a title match worth ``weights[0]`` and a
content match ``weights[1]``: no bm25 (term rarity and length are not weighed), so the
order among equally matching records is newest first rather than SQLite's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mcp_gateway.records.fts import TRIGRAM_MIN, escape_like


def scored_rows(
    conn: Any,
    table: str,
    key: str,
    columns: Sequence[str],
    weights: Sequence[float],
    terms: Sequence[str],
    limit: int,
    *,
    where: str = "",
    params: Sequence[object] = (),
) -> dict[int, float]:
    """``key`` -> score for rows of ``table`` containing any of ``terms`` (and
    ``where``, filtered before ``limit``), best first."""
    if not terms:
        return {}
    score_parts: list[str] = []
    score_params: list[object] = []
    match_parts: list[str] = []
    match_params: list[object] = []
    for term in terms:
        pattern = f"%{escape_like(term)}%"
        for col, weight in zip(columns, weights, strict=True):
            match_parts.append(f"{col} ILIKE ? ESCAPE '\\'")
            match_params.append(pattern)
            if len(term) >= TRIGRAM_MIN:
                score_parts.append(f"CASE WHEN {col} ILIKE ? ESCAPE '\\' THEN ? ELSE 0 END")
                score_params.extend((pattern, float(weight)))
    score = " + ".join(score_parts) if score_parts else "0"
    cond = f" AND ({where})" if where else ""
    sql = (
        f"SELECT {key}, ({score})::double precision AS score FROM {table} "
        f"WHERE ({' OR '.join(match_parts)}){cond} ORDER BY score DESC, {key} DESC LIMIT ?"
    )
    rows = conn.execute(sql, (*score_params, *match_params, *params, limit))
    return {int(r[0]): float(r[1]) for r in rows}
