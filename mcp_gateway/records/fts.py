"""Safe full-text queries over an FTS5 ``trigram`` table (generic: table names passed in).

User text never reaches the FTS5 query parser as syntax. Each term is double-quoted
(internal quotes doubled), so ``*``, ``-``, ``:``, ``NEAR``, parentheses and operators
are plain characters; terms are OR-ed and ranked by ``bm25``. The trigram tokenizer
works without word boundaries (Japanese, Thai) but cannot match fewer than 3
characters, so shorter terms are searched with an escaped ``LIKE`` instead.
"""

from __future__ import annotations

import sqlite3
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

from mcp_gateway.common.errors import InvalidInput

# the records' trigram FTS5 table (``stores.schema``: records v1, its triggers again at v3)
FTS_TABLE = "records_fts"
TRIGRAM_MIN = 3
# Punctuation trimmed from term edges: quoting and grouping around a word is noise.
_EDGE_PUNCT = "\"'`*()[]{}<>^:;,.!?+-=~|/\\#@$%&"
# Written as operators between other terms, these mean nothing in an OR-ed query.
_OPERATORS = frozenset({"AND", "OR", "NOT", "NEAR"})


@dataclass(frozen=True, slots=True)
class ParsedQuery:
    terms: tuple[str, ...]

    @property
    def long_terms(self) -> tuple[str, ...]:
        return tuple(t for t in self.terms if len(t) >= TRIGRAM_MIN)

    @property
    def short_terms(self) -> tuple[str, ...]:
        return tuple(t for t in self.terms if len(t) < TRIGRAM_MIN)

    def match_expression(self) -> str | None:
        """The MATCH string for the long terms, or None when there are none."""
        long_terms = self.long_terms
        return " OR ".join(quote_term(t) for t in long_terms) if long_terms else None


def quote_term(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'


def _clean(token: str) -> str:
    # Control characters (NUL included) could end the FTS string early; lone
    # surrogates cannot be encoded. Everything else is literal inside quotes.
    kept = "".join(ch for ch in token if unicodedata.category(ch) not in ("Cc", "Cs"))
    return kept.strip(_EDGE_PUNCT)


def parse_query(query: str, *, max_chars: int = 4000, max_terms: int = 32) -> ParsedQuery:
    """Split ``query`` into sanitised, de-duplicated terms; InvalidInput when none remain."""
    if len(query) > max_chars:
        raise InvalidInput(f"the query is {len(query)} characters; the limit is {max_chars}")
    try:
        query.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidInput("the query is not valid Unicode text (lone surrogate)") from exc
    # stored titles and contents are NFC (validation.clean_text): a query must be too, or
    # a CJK compatibility ideograph (U+F900 -> U+8C48) never matches its own text
    query = unicodedata.normalize("NFC", query)
    terms: list[str] = []
    for token in query.split():
        term = _clean(token)
        if term and term.casefold() not in {t.casefold() for t in terms}:
            terms.append(term)
    meaningful = [t for t in terms if t not in _OPERATORS]
    terms = meaningful or terms  # a query of only "OR" searches for the word itself
    if not terms:
        raise InvalidInput(
            "the query has no searchable text after removing punctuation and operators; "
            "give one or more words"
        )
    return ParsedQuery(tuple(terms[:max_terms]))


def escape_like(term: str) -> str:
    return term.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def like_condition(columns: Sequence[str], terms: Sequence[str]) -> tuple[str, list[str]]:
    """An OR of ``col LIKE '%term%'`` for every column and term, with its parameters."""
    parts: list[str] = []
    params: list[str] = []
    for term in terms:
        for col in columns:
            parts.append(f"{col} LIKE ? ESCAPE '\\'")
            params.append(f"%{escape_like(term)}%")
    return "(" + " OR ".join(parts) + ")", params


def match_rowids(
    conn: sqlite3.Connection,
    fts_table: str,
    match: str,
    limit: int,
    weights: Sequence[float] = (),
    *,
    content: tuple[str, str] | None = None,
    where: str = "",
    params: Sequence[object] = (),
) -> list[tuple[int, float]]:
    """(rowid, score) pairs for ``match``, best first; score = -bm25 (higher is better).

    ``weights`` are per-column bm25 weights in column order (e.g. titles count double).
    ``content`` = (table, rowid column) joins the content table so that ``where`` (on
    its columns, alias ``c``) filters inside the query, before ``limit``: rows the
    caller may not see never take a place among the top ``limit``.
    """
    args = "".join(f", {float(w)}" for w in weights)
    join = f" JOIN {content[0]} c ON c.{content[1]} = {fts_table}.rowid" if content else ""
    cond = f" AND ({where})" if where else ""
    sql = (
        f"SELECT {fts_table}.rowid, bm25({fts_table}{args}) AS rank FROM {fts_table}{join} "
        f"WHERE {fts_table} MATCH ?{cond} ORDER BY rank LIMIT ?"
    )
    rows = conn.execute(sql, (match, *params, limit))
    return [(int(r[0]), -float(r[1])) for r in rows]
