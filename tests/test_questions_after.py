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
from mcp_gateway.protocol.server import create_server

from .conftest import Harness, connected

CHAT = [
    "[2026-03-02 session 1] user: we're finally planning the Lisbon trip for late May",
    "[2026-03-02 session 1] assistant: Exciting! Which hotel did you book in Lisbon?",
    "[2026-03-02 session 1] user: we booked Memmo Alfama, four nights, the one with the terrace",
    "[2026-03-02 session 1] assistant: Nice choice, the terrace there has a great view.",
    "[2026-03-09 session 2] user: the last two nights we'll be in Cascais by the beach",
    "[2026-03-09 session 2] assistant: Cascais is 40 minutes by train from Cais do Sodre.",
]
QUESTION, ANSWER = CHAT[1], CHAT[2]


async def _answer(settings: KiokuSettings, on: bool, query: str) -> list[str]:
    search = settings.search.model_copy(update={"questions_after": on})
    own = settings.model_copy(update={"search": search, "data_dir": settings.data_dir / str(on)})
    apps: list = []
    server = create_server(own, on_app=apps.append)
    async with connected(server) as client:
        h = Harness(client, apps)
        for text in CHAT:
            await h.ok("add_note", text=text)
        await h.settle()
        data = await h.ok("search_memory", query=query, top=5)
    return [r["text"] for r in data["results"]]


async def test_the_turn_that_answers_comes_before_the_turn_that_asks(
    settings: KiokuSettings,
) -> None:
    """Without the rule the asking turn is the first hit, above the answering one; with
    it the asking turn goes below the answering turn and stays in the answer."""
    query = "which hotel did we book in Lisbon?"
    before = await _answer(settings, False, query)
    after = await _answer(settings, True, query)
    assert before[0] == QUESTION and before.index(ANSWER) > 0
    assert after[0] != QUESTION and after.index(ANSWER) < after.index(QUESTION)
    assert sorted(after) == sorted(before)
