"""Exact tokens: an identifier that occurs in one memory pins that memory first.

An identifier, error code, hash or ticket id in a query names one thing. When the
searchable set (the caller's namespaces and filters, current memories) holds exactly
one memory with that token, that memory is the answer, whatever the semantic channels
say: near-identical notes ("Incident N: the pool ran out, marker zq7c660f688e") are
all equally close to the query in the dense space, and fusing the dense ranks in
drowned the one BM25 match (issue 30: 192 of 400 markers missed at top 5).

Token-like words qualify (a digit, inner capitals, or a joiner ``_ - .`` between
letters/digits), and so do names: a plain word no dictionary holds and no language
spells so (``zqzwkdriqyaf``, ``qdrant``: ``word_prior.is_name``), in any case. An
ordinary word that happens to occur once ("glossy", "forever", "sourdough") is a topic
word, and pinning on it would override better paraphrase matches. A token held by two
or more memories pins nothing: it no longer names one thing.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import replace

from mcp_gateway.common.types import IndexFilter, IndexHit, SparseVector
from mcp_gateway.embedders.word_prior import is_name
from mcp_gateway.index.live import LiveIndex
from mcp_gateway.indexing.lexical import compounds, term_id, word_token

# At most this many tokens are checked per query (one small index call each).
MAX_TERMS = 4
# Shorter tokens are counts and versions ("v2", "18"), not identifiers.
MIN_CHARS = 3


def token_like(word: str) -> bool:
    """An identifier, code or hash rather than a word (measured on the bench sets'
    queries, bench/LOG.md): ``ERR_POOL_42``, ``v1.2.3``, ``tok-4411``, ``429``,
    ``zq7c660f688e``, ``getUserName``; not ``third-party``, ``9am``, ``JavaScript``."""
    if len(word) < MIN_CHARS:
        return False
    if "_" in word or "." in word:
        return True
    digits = sum(ch.isdigit() for ch in word)
    if digits:
        # a code (429, 5432) or letters and digits mixed (e1234, zq7c66...); short
        # quantities (9am, 30k) are not
        return digits == len(word.replace("-", "")) or len(word) >= 4
    if "-" in word:  # hyphenated words (third-party, north-facing) are English
        return False
    # camelCase with two humps or more (getUserName, useAuthToken); one hump is most
    # often a product name (JavaScript, MacBook, iPhone), all caps an acronym
    humps = sum(1 for a, b in itertools.pairwise(word) if a.islower() and b.isupper())
    return humps >= 2


def identifier_terms(query: str, names: bool = True) -> list[tuple[str, int]]:
    """The query's token-like words and names, as the lexical channel indexes them
    (casefolded; a name as ``tokenize`` gives it whole), with their term ids: identifiers
    first, then names (``names``), each in query order, without repeats, at most
    ``MAX_TERMS``."""
    out: list[tuple[str, int]] = []
    seen: set[str] = set()
    words = compounds(query)
    tokens = [w.casefold() for w in words if token_like(w)]
    if names:
        tokens += [word_token(w) for w in words if not token_like(w) and is_name(w)]
    for token in tokens:
        if token not in seen:
            seen.add(token)
            out.append((token, term_id(token)))
            if len(out) == MAX_TERMS:
                break
    return out


# Words of a query looked up one by one for ``plain_terms`` (record_search's floor).
MAX_WORDS = 8


def plain_terms(query: str) -> list[tuple[str, int]]:
    """Every spaced-script word of the query of ``MIN_CHARS`` or more, as the lexical
    channel indexes it whole, with its term id, in query order, without repeats, at
    most ``MAX_WORDS``: a word one memory alone holds is no common word *there*, and a
    match on it is evidence beyond the query's common words (``by_meaning``)."""
    out: list[tuple[str, int]] = []
    for word in compounds(query):
        if len(word) < MIN_CHARS:
            continue
        token = word_token(word) if word.isalnum() else word.casefold()
        if token not in (t for t, _ in out):
            out.append((token, term_id(token)))
            if len(out) == MAX_WORDS:
                break
    return out


Held = dict[str, tuple[IndexHit, int]]


async def holders(index: LiveIndex, terms: Sequence[tuple[str, int]], flt: IndexFilter) -> Held:
    """Point id -> (its lexical hit, how many of ``terms`` only it holds) for each current
    memory within ``flt`` that alone holds a term: one sparse request per term, two hits."""
    only = replace(flt, current_only=True)
    held: Held = {}
    for _token, term in terms:
        found = await index.search_channels(None, SparseVector([term], [1.0]), only, 2)
        if len(found.sparse) == 1:
            hit = found.sparse[0]
            held[hit.id] = (hit, held[hit.id][1] + 1 if hit.id in held else 1)
    return held
