"""An honest "nothing matches" (``search/match.py``), through the MCP door.

Issue 45: "sourdough bread recipe with rye flour" over a store of coding notes got
five unrelated notes in the normal format (and an unrelated [RECENT] lesson). Now an
answer whose best evidence is below the calibrated bars says so in its first line
and in ``match``, shows at most the few closest, tagged [WEAK], and no [RECENT]; a
question the store answers still gets its normal answer. The bars themselves are
calibrated on the bench sets (``bench/quality/nomatch.py``).
"""

from __future__ import annotations

from mcp_gateway.search.match import WEAK_SHOWN, WEAK_TAG

from .conftest import Harness
from .test_priority_relevance import _store

OUT_OF_SCOPE = [
    "sourdough bread recipe with rye flour",
    "who won the football world cup in 2018",
    "best hiking trails near Kyoto in autumn",
    "ライ麦粉を使ったパンのレシピを教えて",
    "サッカーのワールドカップで優勝した国は",
    "สูตรขนมปังโฮลวีตทำอย่างไร",
    "ทีมไหนชนะฟุตบอลโลกปี 2018",
]
ANSWERED = {
    "docker image build takes forever": "docker",
    "spreadsheet shows mojibake when opening our export": "csv",
    "pods keep getting killed": "oom",
    "which Xcode version builds the iOS app": "xcode",
    "where do the database fixtures for tests live": "pytest",
    "Dockerのイメージのビルドがとても遅い": "docker",
    "พ็อดของ Kubernetes ถูกฆ่าเพราะหน่วยความจำไม่พอ": "oom",
}


async def test_a_question_no_memory_answers_says_so_first(harness: Harness) -> None:
    names = await _store(harness)
    for query in OUT_OF_SCOPE:
        res = await harness.call("search_memory", query=query, top=5)
        assert not res.is_error
        data = res.structured_content
        assert data["match"] in ("weak", "none"), (query, data["match"])
        first = res.content[0].text.splitlines()[0]
        assert first.startswith(f'No strong match for "{query}"'), first
        assert len(data["results"]) <= WEAK_SHOWN and not data["recent"]
        assert all(WEAK_TAG in r["tags"] for r in data["results"])
        assert (data["match"] == "none") == (not data["results"])
    for query, answer in ANSWERED.items():
        res = await harness.call("search_memory", query=query, top=5)
        data = res.structured_content
        assert data["match"] == "strong", query
        assert names[data["results"][0]["id"]] == answer, query
        assert not res.content[0].text.startswith("No strong match")
        assert not any(WEAK_TAG in r["tags"] for r in data["results"])
    # the activity log keeps the level, so "Is it helping?" counts these as misses
    harness.app.activity.flush()
    logged = {
        e["query"]: e.get("match")
        for e in harness.app.activity.read_sync()
        if e.get("event") == "search_memory"
    }
    assert all(logged[q] in ("weak", "none") for q in OUT_OF_SCOPE)
    assert all(logged[q] == "strong" for q in ANSWERED)
