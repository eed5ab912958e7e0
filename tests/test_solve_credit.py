"""The one "retrieved, then solved" rule, and its two readers agreeing on it."""

from __future__ import annotations

from typing import Any

import pytest

from mcp_gateway.jobs.priors import usage_from_log
from mcp_gateway.jobs.solve_credit import SOLVE_WINDOW_S, SolveCredit
from mcp_gateway.ui.insights import summarise


def search(ts: float, *ids: str) -> dict[str, Any]:
    return {"ts": ts, "event": "search_memory", "result_ids": list(ids), "hits": len(ids)}


def solved(ts: float, own: str = "new") -> dict[str, Any]:
    return {"ts": ts, "event": "add_note", "id": own, "solved_query": "why did X fail"}


@pytest.mark.parametrize(
    ("log", "credits"),
    [
        ([search(0, "a", "b"), solved(60)], [["a", "b"]]),
        ([search(0, "a"), solved(SOLVE_WINDOW_S + 1)], [[]]),  # too long before
        ([search(0, "a"), solved(10), solved(20)], [["a"], []]),  # credited once
        ([search(0, "a", "new"), solved(5, own="new")], [["a"]]),  # never itself
        ([search(0, "b", "a"), search(5, "a", "c"), solved(9)], [["b", "a", "c"]]),
        ([search(0, "a"), {"ts": 5, "event": "add_note", "id": "x"}, solved(9)], [["a"]]),
    ],
)
def test_what_a_solution_credits(log: list[dict[str, Any]], credits: list[list[str]]) -> None:
    credit = SolveCredit()
    got = [c for c in (credit.feed(e) for e in log) if c is not None]
    assert got == credits


def test_the_reranking_job_and_the_browser_credit_the_same_notes() -> None:
    log = [search(0, "a", "b"), solved(60), search(100, "b"), search(4000, "c"), solved(4010)]
    usage = usage_from_log(log)
    useful = {nid for nid, use in usage.items() if use.useful}
    shown = summarise(log, days=7, now=5000)
    assert useful == {nid for s in shown.solutions for nid in s.credited} == {"a", "b", "c"}
    assert usage["b"].retrieved == 2 and usage["b"].useful == 1
