"""Exact tokens: an identifier that occurs in one memory pins that memory first.

An identifier, error code, hash or ticket id in a query names one thing. When the
searchable set (the caller's namespaces and filters, current memories) holds exactly
one memory with that token, that memory is the answer, whatever the semantic channels
say: near-identical notes ("Incident N: the pool ran out, marker zq7c660f688e") are
all equally close to the query in the dense space, and fusing the dense ranks in
drowned the one BM25 match (issue 30: 192 of 400 markers missed at top 5).

Only token-like words qualify (a digit, inner capitals, or a joiner ``_ - .``
between letters/digits): an ordinary word that happens to occur once ("glossy") is a
topic word, and pinning on it would override better paraphrase matches. A token held
by two or more memories pins nothing: it no longer names one thing.
"""

from __future__ import annotations

from .lexical import compounds, term_id

# At most this many tokens are checked per query (one small index call each).
MAX_TERMS = 4
# Shorter tokens are counts and versions ("v2", "18"), not identifiers.
MIN_CHARS = 3


def _token_like(word: str) -> bool:
    if len(word) < MIN_CHARS:
        return False
    if any(ch in "_-." for ch in word) or any(ch.isdigit() for ch in word):
        return True
    # camelCase (getUserName, iOS): an inner capital beside lower case. A capitalised
    # first letter is a sentence's, and an all-caps acronym (API, HTTPS) a topic word.
    return any(ch.isupper() for ch in word[1:]) and any(ch.islower() for ch in word)


def identifier_terms(query: str) -> list[tuple[str, int]]:
    """The query's token-like words (casefolded) and their lexical term ids, in query
    order, without repeats, at most ``MAX_TERMS``."""
    out: list[tuple[str, int]] = []
    seen: set[str] = set()
    for word in compounds(query):
        if not _token_like(word):
            continue
        token = word.casefold()
        if token not in seen:
            seen.add(token)
            out.append((token, term_id(token)))
            if len(out) == MAX_TERMS:
                break
    return out
