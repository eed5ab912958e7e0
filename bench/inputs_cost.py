"""What the typed inputs cost per call: ``NoteFields(...).checked(rules)`` beside the same
checks called directly (the path before the model), and building a ``NoteQuery``.

    python bench/inputs_cost.py [--n 20000]

Prints p50/p95/p99 in microseconds and the p50 ratio model/direct.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

from mcp_gateway.common.inputs import NoteFields, NoteQuery, NoteRules
from mcp_gateway.common.sections import NoteSettings
from mcp_gateway.common.validation import PRIORITIES, choice, clean_text, label

RULES = NoteRules.of(NoteSettings())
TEXT = "Lesson: with docker builds, check the logs first and write down what fixed it. " * 3


def direct() -> dict[str, str]:
    limit = RULES.max_text_bytes
    return {
        "text": clean_text(TEXT, "text", limit),
        "type": choice("lesson", "type", RULES.types),
        "priority": choice("high", "priority", PRIORITIES),
        "domain": label("git", "domain", 64).lower(),
        "solved_query": clean_text("", "solved_query", limit, required=False),
    }


def model() -> NoteFields:
    return NoteFields(text=TEXT, type="lesson", priority="high", domain="git").checked(RULES)


def query() -> NoteQuery:
    return NoteQuery(query="how do I deploy", top=5)


def timed(fn: Callable[[], object], n: int) -> tuple[float, float, float]:
    out = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t) * 1e6)
    out.sort()
    return out[n // 2], out[int(n * 0.95)], out[int(n * 0.99)]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=20_000)
    n = parser.parse_args().n
    cases = {"direct": direct, "model": model, "query": query}
    for fn in cases.values():  # warm
        timed(fn, n // 10)
    rows = {name: timed(fn, n) for name, fn in cases.items()}
    for name, (p50, p95, p99) in rows.items():
        print(f"{name:7s} p50 {p50:6.1f}  p95 {p95:6.1f}  p99 {p99:7.1f} us")
    print(f"p50 ratio model/direct: {rows['model'][0] / rows['direct'][0]:.2f}")


if __name__ == "__main__":
    main()
