"""Ranking metrics over one ranked list of keys and a set of relevant keys."""

from __future__ import annotations

import math
from collections.abc import Sequence


def recall_at(ranked: Sequence[str], relevant: set[str], k: int) -> float:
    return len(set(ranked[:k]) & relevant) / len(relevant) if relevant else 0.0


def reciprocal_rank(ranked: Sequence[str], relevant: set[str]) -> float:
    for i, key in enumerate(ranked, start=1):
        if key in relevant:
            return 1.0 / i
    return 0.0


def ndcg_at(ranked: Sequence[str], relevant: set[str], k: int) -> float:
    dcg = sum(1.0 / math.log2(i + 1) for i, key in enumerate(ranked[:k], 1) if key in relevant)
    ideal = sum(1.0 / math.log2(i + 1) for i in range(1, min(k, len(relevant)) + 1))
    return dcg / ideal if ideal else 0.0


def score(ranked: Sequence[str], relevant: set[str]) -> dict[str, float]:
    return {
        "R@1": recall_at(ranked, relevant, 1),
        "R@5": recall_at(ranked, relevant, 5),
        "R@10": recall_at(ranked, relevant, 10),
        "MRR": reciprocal_rank(ranked, relevant),
        "nDCG@10": ndcg_at(ranked, relevant, 10),
    }


def percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")
