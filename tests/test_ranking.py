"""Ranking rules on hand-made channel results (the rules, not the retrieval)."""

from __future__ import annotations

from typing import Any

from mcp_gateway.ranking import RankingParams, fuse, select
from mcp_gateway.types import IndexHit


def hit(pid: str, score: float, **payload: Any) -> IndexHit:
    return IndexHit(pid, score, {"type": "note", "priority": "", "dense": True, **payload})


def ids(cands: list[Any]) -> list[str]:
    return [c.point_id for c in cands]


def test_dbsf_prefers_the_hit_both_channels_agree_on() -> None:
    dense = [hit("a", 0.90), hit("b", 0.89), hit("c", 0.80)]
    sparse = [hit("b", 7.0), hit("c", 1.0)]
    assert ids(fuse(dense, sparse, RankingParams()))[0] == "b"


def test_single_lexical_hit_is_that_channels_best() -> None:
    fused = fuse([], [hit("only", 3.2)], RankingParams())
    assert fused[0].score > 0.0


def test_not_yet_embedded_note_competes_on_lexical_evidence() -> None:
    dense = [hit(f"d{i}", 0.9 - i * 0.01) for i in range(5)]
    sparse = [hit("fresh", 9.0, dense=False), hit("d4", 1.0)]
    fused = fuse(dense, sparse, RankingParams())
    assert ids(fused)[0] == "fresh"


def test_far_high_priority_is_boosted_but_does_not_jump() -> None:
    params = RankingParams(thresholds={"*": 0.5})
    dense = [hit("near", 0.95), hit("high", 0.70, priority="high")]
    chosen = select(fuse(dense, [], params), params, top=5)
    assert ids(chosen) == ["near", "high"]


def test_close_or_best_lexical_high_priority_jumps_first() -> None:
    params = RankingParams(thresholds={"*": 0.5}, high_first_distance=0.12)
    dense = [hit("near", 0.99), hit("n2", 0.98), hit("high", 0.90, priority="high")]
    chosen = select(fuse(dense, [], params), params, top=5)
    assert ids(chosen)[0] == "high"  # distance 0.10 <= 0.12
    lexical = select(fuse(dense[:2], [hit("kw", 5.0, priority="high")], params), params, 5)
    assert ids(lexical)[0] == "kw"


def test_absolute_rule_restores_the_source_design() -> None:
    params = RankingParams(thresholds={"*": 0.5}, priority_rule="first")
    dense = [hit("near", 0.95), hit("high", 0.60, priority="high")]
    assert ids(select(fuse(dense, [], params), params, top=5))[0] == "high"


def test_threshold_drops_far_items_but_keeps_high_and_strong_lexical() -> None:
    params = RankingParams(thresholds={"*": 0.2})
    dense = [hit("near", 0.9), hit("far", 0.5), hit("far-high", 0.5, priority="high")]
    sparse = [hit("far-lexical", 8.0)]
    kept = set(ids(select(fuse(dense, sparse, params), params, top=10)))
    assert kept == {"near", "far-high", "far-lexical"}


def test_own_namespace_before_shared_within_a_priority() -> None:
    params = RankingParams(thresholds={"*": 0.5})
    dense = [hit("team", 0.95, namespace="team"), hit("mine", 0.90, namespace="me")]
    chosen = select(fuse(dense, [], params), params, top=5, namespaces=("me", "team"))
    assert ids(chosen) == ["mine", "team"]
