"""A note that ends in a question goes below the hits after it (``search.questions_after``).

In a conversation the turn that asks ("Which hotel did you book?") matches a question
about the fact better than the turn that answers it, and holds no answer: on the
conversational set a question turn was the first hit of many questions whose answer
was the reply a turn or two later (bench/LOG.md, "conversational: where the evidence
is lost"). Through the real search path, with and without the rule; the ordering
rule itself in ``test_ranking.py``.
"""

from __future__ import annotations

from mcp_gateway.common.settings import KiokuSettings

from .conftest import answer_after_notes

CHAT = [
    "[2026-03-02 session 1] user: we're finally planning the Lisbon trip for late May",
    "[2026-03-02 session 1] assistant: Exciting! Which hotel did you book in Lisbon?",
    "[2026-03-02 session 1] user: we booked Memmo Alfama in Lisbon, four nights",
    "[2026-03-02 session 1] assistant: Nice choice, the terrace there has a great view.",
    "[2026-03-09 session 2] user: the last two nights we'll be in Cascais by the beach",
    "[2026-03-09 session 2] assistant: Cascais is 40 minutes by train from Cais do Sodre.",
]
QUESTION, ANSWER = CHAT[1], CHAT[2]


async def test_the_turn_that_answers_comes_before_the_turn_that_asks(
    settings: KiokuSettings,
) -> None:
    """Without the rule the asking turn is the first hit, above the answering one; with
    it the asking turn goes just below the answering turn (which has over 0.8 of its
    score) and stays above the hits that score much lower."""
    query = "which hotel did we book in Lisbon?"
    before = await answer_after_notes(settings, CHAT, query, 5, questions_after=False)
    after = await answer_after_notes(settings, CHAT, query, 5, questions_after=True)
    assert before[:2] == [QUESTION, ANSWER]
    assert after[:2] == [ANSWER, QUESTION]
    assert sorted(after) == sorted(before) and after[2:] == before[2:]
