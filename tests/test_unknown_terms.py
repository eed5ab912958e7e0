"""The unknown-terms signal of an honest "nothing matches" (``search/match.py``).

A near-domain question names what no memory holds (Unity, COBOL, a piano teacher): the
share of its IDF mass no memory holds lowers its strength. The share counts only what
the searcher may read (its namespaces, current memories): a word only another tenant's
memories hold must be as unknown as a word nobody wrote, or whether an answer is weak
would tell one tenant about another's words. On every index backend (the embedded
engine, and a Qdrant server's client in its local mode). The MCP door's test is in
``test_no_match.py``.
"""

from __future__ import annotations

import itertools

import pytest

from mcp_gateway.common.types import IndexFilter
from mcp_gateway.index.base import Index
from mcp_gateway.indexing.lexical import term_id
from mcp_gateway.search.match import (
    Bars,
    Signals,
    judge,
    name_terms,
    unknown_share,
    unknown_terms,
    wants_unknown,
)

from .test_index_contract import backend, index, point  # noqa: F401 (fixtures)

# a search's filter (``unknown_share`` reads current memories only, whatever it is given)
ALICE = IndexFilter(namespaces=("alice",))
BOTH = IndexFilter(namespaces=("alice", "bob"))
CURRENT = IndexFilter(namespaces=("alice",), current_only=True)
LATIN = {"latin"}  # the scripts of the search's hits
# (each call passes min_memories=0: these stores hold a few memories, under the size at
# which a search reads the share; ``test_a_small_store_is_not_judged_by_it`` below)


async def _store(index: Index) -> None:  # noqa: F811
    await index.upsert(
        [
            point("a1", "the game jam runs on Godot this year", namespace="alice", visible="alice"),
            point(
                "a2", "Godot exports the jam build to the web", namespace="alice", visible="alice"
            ),
            point("b1", "our Unity licence renews in March", namespace="bob", visible="bob"),
            # alice's, but retired: not a memory she can be answered from
            point("a3", "we tried Unreal once", namespace="alice", visible="", current=False),
        ]
    )


async def test_a_word_only_another_tenant_holds_counts_as_unknown(index: Index) -> None:  # noqa: F811
    await _store(index)
    unity, godot, unreal = (term_id(w) for w in ("unity", "godot", "unreal"))
    assert await index.term_counts([unity, godot, unreal], CURRENT, 8) == ([0, 2, 0], 2)
    assert await index.term_counts([unity, godot, unreal], ALICE, 8) == ([0, 2, 1], 3)
    assert await index.term_counts([unity], BOTH, 8) == ([1], 4)
    assert await index.term_counts([godot], CURRENT, 1) == ([1], 2)  # read up to the cap only
    mine = await unknown_share(index, "Unity Godot", ALICE, LATIN, 0)
    assert mine is not None and 0.5 < mine < 1.0  # the unknown term is the rarer: it weighs more
    assert await unknown_share(index, "Unity Godot", BOTH, LATIN, 0) == 0.0
    assert await unknown_share(index, "Unreal jam", ALICE, LATIN, 0) == pytest.approx(
        await unknown_share(index, "Unity jam", ALICE, LATIN, 0)
    )  # a retired memory's word is as unknown as a word nobody wrote
    assert await unknown_share(index, "", ALICE, LATIN, 0) is None


async def test_a_script_the_nearest_memories_are_not_written_in_does_not_count(
    index: Index,  # noqa: F811
) -> None:
    """Alice's memories are English: a Thai question's trigrams say nothing about what
    she holds; its Latin words still do. Where her nearest memories are Thai, they do."""
    await _store(index)
    assert await unknown_share(index, "เกม Godot ส่งออกไปเว็บได้ไหม", ALICE, LATIN, 0) == 0.0
    thai_unity = await unknown_share(index, "ใบอนุญาต Unity Godot หมดเมื่อไหร่", ALICE, LATIN, 0)
    assert thai_unity == await unknown_share(index, "Unity Godot", ALICE, LATIN, 0)
    assert await unknown_share(index, "ใบอนุญาตหมดเมื่อไหร่", ALICE, LATIN, 0) is None
    assert await unknown_share(index, "ใบอนุญาตหมดเมื่อไหร่", ALICE, {"latin", "thai"}, 0) == 1.0
    assert await unknown_share(index, "COBOL copybook", ALICE, LATIN, 0) == 1.0


def test_the_share_is_read_only_where_it_can_change_the_answer() -> None:
    """``wants_unknown`` skips the read where the judgement is the same whatever the
    share (0 to 1): judging with the share read only then equals judging with it always
    read."""
    bars = Bars(bar=0.81, weights={"minilm": 0.18}, unknown=0.06)
    dense = [0.70, 0.80, 0.809, 0.81, 0.83, 0.869, 0.87, 0.95]
    for d, mini, share, exact in itertools.product(
        dense, [0.2, 0.4, 0.6], [0.0, 0.3, 1.0], [False, True]
    ):
        sig = Signals(dense=d, channels={"minilm": mini}, exact=exact)
        always = judge(Signals(d, {"minilm": mini}, exact, share), bars, True)
        lazy = (
            judge(Signals(d, {"minilm": mini}, exact, share), bars, True)
            if wants_unknown(sig, bars, True)
            else judge(sig, bars, True)
        )
        assert lazy == always, (d, mini, share, exact)
    # the band is read: a share there turns a strong answer weak
    sig = Signals(dense=0.83, channels={"minilm": 0.4})
    assert wants_unknown(sig, bars, True) and judge(sig, bars, True) == "strong"
    assert judge(Signals(0.83, {"minilm": 0.4}, False, 1.0), bars, True) == "weak"
    assert not wants_unknown(sig, Bars(bar=0.81), True)  # bars without the signal: no read


@pytest.mark.parametrize("answered", [False])
def test_no_read_without_an_answer(answered: bool) -> None:
    bars = Bars(bar=0.81, unknown=0.06)
    assert not wants_unknown(Signals(dense=0.83), bars, answered)


async def test_a_small_store_is_not_judged_by_it(index: Index) -> None:  # noqa: F811
    """In a store of a few memories a question's common words are missing as often as
    its rare ones: the share is not read there (a paraphrase over ten notes lost its
    answer to it, tests/test_learning.py)."""
    await _store(index)
    assert await unknown_share(index, "COBOL copybook", ALICE, LATIN) is None
    assert await unknown_share(index, "COBOL copybook", ALICE, LATIN, 2) == 1.0


def test_names_are_words_written_as_names_inside_a_sentence() -> None:
    """A capitalised Latin word that does not start a sentence, not identifier-shaped;
    beside Thai or Japanese letters any capitalised Latin word."""
    named = {
        "which Unreal Engine version do we use": {"unreal", "engine"},
        "Which version do we use": set(),
        "how do I pin the version": set(),
        "the build failed. Then TestFlight rejected it": {"testflight"},
        "is settings.py or config_v2 read first": set(),
        "TestFlightに上げる前の署名手順": {"testflight"},
        "ต้องเซ็นแอป iOS อย่างไร": {"ios"},
    }
    for query, words in named.items():
        assert name_terms(query) == {term_id(w) for w in words}, query


async def test_a_name_no_memory_in_scope_holds_is_unknown(index: Index) -> None:  # noqa: F811
    """``unknown_terms`` reads the names' document frequencies with the rest, in the
    search's own filter: a name only another tenant's memories hold, or only a retired
    one, is unknown."""
    await _store(index)
    for query, named in (
        ("is the Godot export ready", False),
        ("is the Unity export ready", True),
        ("is the Unreal export ready", True),
        ("is the unity export ready", False),  # not written as a name: the share alone
    ):
        found = await unknown_terms(index, query, ALICE, LATIN, 0)
        assert found is not None and found.named is named, query
