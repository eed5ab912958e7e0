"""How well a search matched: "strong", "weak" or "none" (an honest "nothing matches").

A ranking always has a first hit, however unrelated: "sourdough bread recipe" over a
store of coding notes answered five of them in the normal format. The answer says
when no memory is close enough: ``match`` is "none" when nothing came back, "weak" when
the search's evidence is below the calibrated bar, and then only the ``WEAK_SHOWN``
closest hits are shown, tagged ``[WEAK]``.

The evidence (``Signals``) is what the search already holds, so judging costs nothing:
the best dense cosine among the hits of the main model (its query views), of each
further dense channel over the memories it reads, and whether a memory alone holds an
identifier of the query (``exact_terms``: that names the memory). The main model's best
cosine is the strongest single signal measured (its distance from the k-th hit, the
best BM25 score, a z-score over the 50 hits: each flagged far fewer out-of-scope
questions at the same cost); MiniLM's cosine, where it reads the query, adds the most
beside it. Cosines are not comparable across models or channel sets, so the bars live
in ``BARS``, one entry per embedding model and set of further channels; a configuration
without an entry judges every answer "strong", as before.

One signal is read for the judgement alone: ``unknown``, the share of the query's IDF
mass (over its lexical terms: the lexical index's own tokens, words, kana/Han bigrams,
Thai trigrams) that no memory within the search's filter holds. A near-domain question
names what no memory holds (SAP, COBOL, a piano teacher) while its cosines sit with
answerable paraphrases'. It costs one index round trip (a single-term look-up per term,
at most ``DF_CAP`` hits each, and a count), so it is read only where it can change
the answer: a search whose strength lies within ``Bars.unknown`` above the bar
(``wants_unknown``). Only points the searcher's own filter lets through are counted
(its namespaces, current memories), so the share says nothing about another tenant's
words. The same read says whether a word the query writes as a name (``name_terms``:
"Tableau", "TestFlight") is among them: ``Bars.named`` more off the strength.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal, Protocol

from mcp_gateway.common.types import IndexFilter, IndexHit
from mcp_gateway.indexing.lexical import compounds, term_id, terms_by_script, word_token

Match = Literal["strong", "weak", "none"]
WEAK_TAG = "[WEAK]"
WEAK_SHOWN = 3  # a weak answer shows at most this many of the closest hits


@dataclass(frozen=True, slots=True)
class Signals:
    """One search's evidence that something matched (cosines: higher is closer)."""

    dense: float | None = None  # the main model's best cosine (None: no dense hit)
    channels: Mapping[str, float] = field(default_factory=dict)  # further channels' best
    exact: bool = False  # a memory alone holds an identifier of the query
    # the share of the query's IDF mass no memory in scope holds (None: not read)
    unknown: float | None = None
    # whether the query names something no memory in scope holds (None: not read)
    named: bool | None = None


# a further channel's best cosine counts as its distance from this (its unrelated
# questions' best hits sit at ~0.25-0.35, answered ones at ~0.5, on both dev sets)
CENTRE = 0.4


@dataclass(frozen=True, slots=True)
class Bars:
    """A search is a strong match when its ``strength`` reaches ``bar``: the main
    model's best cosine plus, for each further channel that has evidence (MiniLM
    abstains on Japanese and Thai), ``weights[name]`` x (its best cosine - ``CENTRE``),
    minus ``unknown`` x the share of the query's IDF mass no memory holds, and minus
    ``named`` where it names something no memory holds (each where read)."""

    bar: float
    weights: Mapping[str, float] = field(default_factory=dict)
    unknown: float = 0.0
    named: float = 0.0

    def strength(self, sig: Signals) -> float:
        extra = sum(
            w * (sig.channels[n] - CENTRE) for n, w in self.weights.items() if n in sig.channels
        )
        penalty = self.unknown * sig.unknown if sig.unknown is not None else 0.0
        if sig.named:
            penalty += self.named
        return (sig.dense or 0.0) + extra - penalty


_E5 = "local/multilingual-e5-small-q4"
# (model id, the further channels, sorted) -> bars, chosen on the dev splits by
# ``bench/quality/nomatch.py`` (the most out-of-scope questions flagged with at most
# 2 % of either set's answerable questions and 7 % of either set's paraphrases; MiniLM
# on its shipped int8 kernels); its test figures are in docs/ranking.md. Channels off:
# chosen before the unknown-names term (round 27), which it does not use.
BARS: dict[tuple[str, tuple[str, ...]], Bars] = {
    (_E5, ()): Bars(bar=0.8276, unknown=0.02),
    (_E5, ("minilm", "static_use")): Bars(
        bar=0.8094, weights={"minilm": 0.18, "static_use": 0.02}, unknown=0.06, named=0.01
    ),
}


def bars_for(model_id: str, channels: Collection[str]) -> Bars | None:
    return BARS.get((model_id, tuple(sorted(channels))))


def signals(
    dense: Sequence[Sequence[IndexHit]],
    channels: Mapping[str, Sequence[IndexHit]],
    reads: Mapping[str, Collection[str] | None],
    exact: bool,
) -> Signals:
    """The best cosine of each channel over the current memories it can read. Every hit
    list comes best first (the index's order), so each read stops at its first
    current hit: ~1 us, not a pass over every hit. ``dense``: the main model's lists
    (its hits, and the fast pool's, whose cosines are mapped onto its scale)."""
    tops = [s for hits in dense if (s := _first(hits, None)) is not None]
    best = {n: s for n, hits in channels.items() if (s := _first(hits, reads.get(n))) is not None}
    return Signals(dense=max(tops, default=None), channels=best, exact=exact)


def _first(hits: Sequence[IndexHit], can: Collection[str] | None) -> float | None:
    for h in hits:
        if h.payload.get("current") is not False and (
            can is None or h.payload.get("script", "latin") in can
        ):
            return h.score
    return None


def judge(sig: Signals, bars: Bars | None, answered: bool) -> Match:
    """ "none" without an answer; "strong" where the evidence reaches the bar, a memory
    alone holds an identifier of the query, or there is nothing to judge on (no bars for
    this configuration, no dense hit); "weak" otherwise."""
    if not answered:
        return "none"
    if bars is None or sig.exact or sig.dense is None:
        return "strong"  # nothing to judge on (lexical only while the embedder is down)
    return "strong" if bars.strength(sig) >= bars.bar else "weak"


def wants_unknown(sig: Signals, bars: Bars | None, answered: bool) -> bool:
    """Whether the unknown terms can change this judgement: the strength without them
    reaches the bar, by less than the most they can take off (a share is at most 1).
    Elsewhere the answer is the same without the read."""
    most = 0.0 if bars is None else bars.unknown + bars.named
    if bars is None or not most or not answered or sig.exact or sig.dense is None:
        return False
    return bars.bar <= bars.strength(replace(sig, unknown=None, named=None)) < bars.bar + most


# the terms read per query at most (a long query's lowest term ids: a sample of its
# words that does not depend on their order)
MAX_TERMS = 64
# a term's document frequency is read up to this many holders: beyond it a term is
# common here, its IDF small either way (8 flagged as many dev questions as the exact
# count, bench/LOG.md, and bounds the read)
DF_CAP = 8
# below this many current memories in scope the share is not read: a word's absence
# says little in a small store (a question's common words are missing from ten
# memories as often as its rare ones), and the weight was calibrated on stores of
# 264-1,038 memories. A paraphrase over a 10-note store lost its answer to it.
MIN_MEMORIES = 200


class TermReader(Protocol):
    async def term_counts(
        self, terms: Sequence[int], flt: IndexFilter, cap: int
    ) -> tuple[list[int], int]: ...


@dataclass(frozen=True, slots=True)
class Unknown:
    share: float  # of the query's IDF mass, held by no memory in scope
    named: bool  # a word of it written as a name (``name_terms``) no memory holds


_SENTENCE_END = re.compile(r"[.?!:;。？！]$")
_NOT_A_NAME = re.compile(r"[\d._/]")  # an identifier, a version, a path: exact_terms'


def name_terms(query: str) -> set[int]:
    """The term ids of the query's words written as names: a Latin word with a capital
    letter that does not start a sentence ("Tableau", "TestFlight", "SAP"; in Japanese or
    Thai text every Latin word is inside a sentence), of two letters or more (not "I"),
    not identifier-shaped (digits, dots, underscores, slashes: ``exact_terms`` finds
    those). A question that names what
    no memory holds is not about this store; a paraphrase rewords with common words."""
    out: set[int] = set()
    starts = True
    # in Thai or Japanese text a Latin word's capital never marks a sentence's start
    inside = any(ord(c) >= 0x0E00 for c in query)
    for raw in query.split():
        if not any(c.isupper() for c in raw):  # most words: no name, no tokenizing
            starts = bool(_SENTENCE_END.search(raw))
            continue
        for word in compounds(raw):
            if (inside or not starts) and any(c.isupper() for c in word):
                if len(word) > 1 and not _NOT_A_NAME.search(word):  # not "I"
                    out.add(term_id(word_token(word)))
            starts = False
        if _SENTENCE_END.search(raw):
            starts = True
    return out


async def unknown_share(
    index: TermReader,
    query: str,
    flt: IndexFilter,
    written: Collection[str],
    min_memories: int = MIN_MEMORIES,
) -> float | None:
    """``unknown_terms``' share alone."""
    found = await unknown_terms(index, query, flt, written, min_memories)
    return None if found is None else found.share


async def unknown_terms(
    index: TermReader,
    query: str,
    flt: IndexFilter,
    written: Collection[str],
    min_memories: int = MIN_MEMORIES,
) -> Unknown | None:
    """The share of the query's IDF mass (BM25's IDF over the current memories within
    ``flt``, each term's document frequency read up to ``DF_CAP``) that none of them
    holds, and whether one of its names (``name_terms``) is such a term; None without
    terms to judge, or with fewer than ``min_memories`` current
    memories within ``flt``. ``flt`` is the search's own (the searcher's
    namespaces and filters).

    Only the terms of scripts ``written`` count: the scripts of the search's own hits
    ("latin", "cjk", "thai"), the memories nearest the query. A Thai question over
    memories written in English holds none of its Thai trigrams, and that says which
    language they are written in, not that it names anything unknown (a cross-language
    question has an answer as often as any other); its Latin words still count."""
    groups = terms_by_script(query)
    held = set().union(*(ids for g, ids in groups.items() if g in written))
    names = name_terms(query) & held  # among the terms the share weighs, never beside
    terms = sorted(names) + sorted(held - names)  # the names first: never cut
    terms = terms[:MAX_TERMS]
    if not terms:
        return None
    scope = replace(flt, current_only=True)
    counts, total = await index.term_counts(terms, scope, DF_CAP)
    if total < min_memories:
        return None
    n = max(total, max(counts))
    idf = [math.log(1.0 + (n - df + 0.5) / (df + 0.5)) for df in counts]
    share = sum(w for w, df in zip(idf, counts, strict=True) if df == 0) / sum(idf)
    named = any(df == 0 for t, df in zip(terms, counts, strict=True) if t in names)
    return Unknown(share=share, named=named)
