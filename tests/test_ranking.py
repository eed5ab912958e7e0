"""Ranking rules on hand-made channel results (the rules, not the retrieval)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from mcp_gateway.common.types import IndexHit
from mcp_gateway.index.base import best_of_views
from mcp_gateway.search.calibration import MODELS, for_model, query_script, shift_views
from mcp_gateway.search.ranking import (
    Candidate,
    RankingParams,
    fuse,
    recent_floor,
    select,
)
from mcp_gateway.search.related import mark
from mcp_gateway.search.reorder import Head, asks, carry_to_heads, newer_first, questions_after


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


def test_high_priority_jumps_only_as_the_querys_closest_match() -> None:
    params = RankingParams(thresholds={"*": 0.5}, high_first_margin=0.0)
    dense = [hit("high", 0.99, priority="high"), hit("near", 0.985), hit("n2", 0.98)]
    assert ids(select(fuse(dense, [], params), params, 5))[0] == "high"
    # a high-priority note that is the best *lexical* match for a common word no longer
    # jumps when it is semantically farther than the query's best dense hit
    far_kw = [hit(f"n{i}", 0.95 - i * 0.005) for i in range(8)]
    far_kw.append(hit("kw", 0.80, priority="high"))
    sparse = [hit("kw", 5.0, priority="high"), hit("n0", 4.9), hit("n1", 4.8)]
    chosen = select(fuse(far_kw, sparse, params), params, 5)
    assert ids(chosen)[0] == "n0"


def test_high_first_margin_is_relative_to_the_query() -> None:
    params = RankingParams(thresholds={"*": 0.5}, high_first_margin=0.02)
    # same gap (0.01) at two absolute levels: the rule gives the same answer (with the
    # spread of a real query's 50 dense hits, so that the fused scores of the three are
    # close too, as priority asks: ``close_to_best``)
    for best in (0.95, 0.80):
        dense = [
            hit("near", best),
            hit("n2", best - 0.005),
            hit("high", best - 0.01, priority="high"),
            *(hit(f"f{i}", best - 0.05 - 0.004 * i) for i in range(47)),
        ]
        assert ids(select(fuse(dense, [], params), params, 5))[0] == "high"


def test_absolute_rule_restores_the_source_design() -> None:
    params = RankingParams(thresholds={"*": 0.5}, priority_rule="first")
    dense = [hit("near", 0.95), hit("high", 0.60, priority="high")]
    assert ids(select(fuse(dense, [], params), params, top=5))[0] == "high"


def test_threshold_drops_far_items_high_priority_included_but_keeps_strong_lexical() -> None:
    params = RankingParams(thresholds={"*": 0.2})
    dense = [hit("near", 0.9), hit("far", 0.5), hit("far-high", 0.5, priority="high")]
    sparse = [hit("far-lexical", 8.0)]
    kept = set(ids(select(fuse(dense, sparse, params), params, top=10)))
    assert kept == {"near", "far-lexical"}


def test_keep_margin_is_relative_to_the_querys_best_hit() -> None:
    params = RankingParams(thresholds={"*": 0.5}, keep_margin=0.03)
    dense = [hit("best", 0.90), hit("close", 0.88), hit("tail", 0.85, priority="high")]
    assert ids(select(fuse(dense, [], params), params, top=10)) == ["best", "close"]


# what the keep margin leaves of one query's hits: best 0.90, close 0.88 (within the 0.03
# margin), tail and tail-high 0.85 (beyond it, within the type's threshold 0.5), gone
# 0.40 (beyond the threshold); "tail" has the strongest latent evidence of all
MARGIN_FILL = [
    (False, 10, ["best", "close"]),  # without the fill: the answer ends with the margin
    (True, 10, ["best", "close", "tail"]),  # after every kept hit; high priority never
    (True, 3, ["best", "close", "tail"]),
    (True, 2, ["best", "close"]),  # nothing to fill: the answer is full
]


@pytest.mark.parametrize(("fill", "top", "answer"), MARGIN_FILL)
def test_what_the_keep_margin_leaves(fill: bool, top: int, answer: list[str]) -> None:
    params = RankingParams(thresholds={"*": 0.5}, keep_margin=0.03, margin_fill=fill)
    dense = [
        hit("best", 0.90),
        hit("close", 0.88),
        hit("tail", 0.85),
        hit("tail-high", 0.85, priority="high"),
        hit("gone", 0.40),
    ]
    latent = [hit("tail", 9.0), hit("best", 1.0), hit("close", 1.0), hit("gone", 1.0)]
    assert ids(select(fuse(dense, [], params, latent), params, top)) == answer


def test_recent_lessons_keep_the_margin_whatever_the_rule() -> None:
    params = RankingParams(thresholds={"*": 0.5}, keep_margin=0.03, margin_fill=True)
    dense = [hit("a", 0.90, source_id="a"), hit("b", 0.80, source_id="b")]
    assert set(recent_floor(fuse(dense, [], params), params)) == {"a"}


def test_recent_needs_every_reading_channel_to_agree() -> None:
    """[RECENT] asks the further channels too (``ranking.related``): "b" scores close to
    the best, but a channel that reads it places it below ``related_floor``; "c" is
    missing from the first channel's hits (it may not have read it yet: it abstains),
    the second places it close; "d" is Thai, which the second channel does not read,
    so only the first judges it."""
    params = RankingParams(thresholds={"*": 0.5})
    dense = [
        hit("a", 0.90, source_id="a"),
        hit("b", 0.90, source_id="b"),
        hit("c", 0.90, source_id="c"),
        hit("d", 0.90, source_id="d", script="thai"),
    ]
    one = [hit("a", 0.6), hit("b", 0.2), hit("d", 0.5)]
    two = [hit("a", 0.5), hit("b", 0.6), hit("c", 0.6)]
    candidates = fuse(dense, [], params)
    mark(candidates, {"one": one, "two": two}, {"two": {"latin"}})
    assert set(recent_floor(candidates, params)) == {"a", "c", "d"}
    # 0: the score ratio alone, as before
    assert set(recent_floor(candidates, RankingParams(thresholds={"*": 0.5}, related_floor=0))) == {
        "a",
        "b",
        "c",
        "d",
    }


def test_recent_floor_keeps_only_notes_this_query_found() -> None:
    params = RankingParams(thresholds={"*": 0.5}, keep_margin=0.03)
    dense = [hit("a", 0.90, source_id="a"), hit("b", 0.80, source_id="b")]
    floor = recent_floor(fuse(dense, [], params), params)
    assert set(floor) == {"a"}  # "b" is beyond the margin; anything absent is unrelated
    # asked only about the search's recent notes: the same verdict for those
    candidates = fuse(dense, [], params)
    assert set(recent_floor(candidates, params, {"a", "z"})) == {"a"}
    assert recent_floor(candidates, params, {"b"}) == {}
    assert recent_floor(candidates, params, set()) == {}


def test_every_local_variant_has_its_own_measured_calibration() -> None:
    for model in ("local/multilingual-e5-small-q4", "local/multilingual-e5-small-q4-enpt"):
        calib = for_model(model)
        assert calib is MODELS[model] and calib.measured
        assert set(calib.directions) == {"latin", "cjk", "thai"}
    assert for_model("ollama/nomic-embed-text:latest") is MODELS["ollama/nomic-embed-text"]


def test_language_shift_moves_the_query_away_from_its_language() -> None:
    calib = for_model("local/multilingual-e5-small-q4")
    assert query_script("CIだけでテストが止まる、Docker のせい？") == "cjk"
    assert query_script("เทสต์ค้างบน CI") == "thai"
    assert query_script("deploy rollback") == "latin"
    vec = [1.0] + [0.0] * 383
    shifted = shift_views(vec, "deploy", calib, 0.5, 0.0)[0]
    assert abs(sum(v * v for v in shifted) - 1.0) < 1e-6 and shifted != vec
    assert shift_views(vec, "deploy", calib, 0.0, 0.0)[0] == vec


def test_two_query_views_each_memory_scored_by_its_better_one() -> None:
    """Verified on bench/quality dev: the wide view lifts cross-language answers the
    calibrated view ranks below same-language neighbours (bench/LOG.md)."""
    calib = for_model("local/multilingual-e5-small-q4")
    vec = [1.0] + [0.0] * 383
    query = "how do we roll back a bad deploy on friday"
    views = shift_views(vec, query, calib, calib.language_shift, calib.wide_shift)
    assert len(views) == 2 and views[0] == shift_views(vec, query, calib, 0.5, 0.0)[0]
    assert views[1] == shift_views(vec, query, calib, 1.0, 0.0)[0]
    assert len(shift_views(vec, query, calib, 0.5, 0.0)) == 1  # wide 0: one view
    assert len(shift_views(vec, query, calib, 0.5, 0.5)) == 1
    near = [hit("same-lang", 0.90), hit("other", 0.80)]
    wide = [hit("other", 0.93), hit("same-lang", 0.85), hit("third", 0.70)]
    merged = best_of_views([near, wide], limit=2)
    assert [(h.id, h.score) for h in merged] == [("other", 0.93), ("same-lang", 0.90)]
    assert best_of_views([near], limit=1) == near  # one view: untouched


def test_own_namespace_before_shared_within_a_priority() -> None:
    params = RankingParams(thresholds={"*": 0.5})
    dense = [hit("team", 0.95, namespace="team"), hit("mine", 0.90, namespace="me")]
    chosen = select(fuse(dense, [], params), params, top=5, namespaces=("me", "team"))
    assert ids(chosen) == ["mine", "team"]


# -- the latent-terms channel (round 5) ---------------------------------------------


def test_latent_terms_take_bm25s_place_in_the_score() -> None:
    dense = [hit("a", 0.90), hit("b", 0.89), hit("c", 0.80)]
    sparse = [hit("a", 9.0), hit("c", 1.0)]  # BM25 favours a
    latent = [hit("b", 5.0), hit("c", 1.0)]  # the latent terms favour b
    assert ids(fuse(dense, sparse, RankingParams()))[0] == "a"
    with_latent = fuse(dense, sparse, RankingParams(), latent)
    assert ids(with_latent)[0] == "b"
    a = next(c for c in with_latent if c.point_id == "a")
    # BM25 stays the raw evidence (the keep rule reads it) but is not in a's score
    assert a.sparse_score == 9.0 and a.latent_part == 0.0
    dense_only = next(c for c in fuse(dense, [], RankingParams()) if c.point_id == "a")
    assert abs(a.score - dense_only.score) < 1e-9  # a's dense part only


def test_with_latent_terms_bm25_still_scores_what_nothing_else_found() -> None:
    dense = [hit(f"d{i}", 0.9 - i * 0.01) for i in range(5)]
    latent = [hit("d0", 3.0), hit("d1", 1.0)]
    sparse = [hit("fresh", 9.0, dense=False), hit("exact", 8.0), hit("d4", 1.0)]
    params = RankingParams()
    fused = {c.point_id: c for c in fuse(dense, sparse, params, latent)}
    # a note not embedded yet: BM25 at the full weight of the semantic channels
    scale = (params.dense_weight + params.latent_weight) / params.sparse_weight
    assert abs(fused["fresh"].score - fused["fresh"].sparse_part * scale) < 1e-9
    assert ids(fuse(dense, sparse, params, latent)).index("fresh") <= 1
    assert fused["exact"].score > 0 and fused["exact"].dense_rank is None
    assert fused["exact"].score < fused["d0"].score  # an embedded note outside both lists
    # BM25 adds nothing to the score of a hit the dense or latent channel returned
    no_bm25 = {c.point_id: c for c in fuse(dense, [], params, latent)}
    assert fused["d4"].score == no_bm25["d4"].score


def test_latent_overlap_alone_does_not_keep_a_hit() -> None:
    """Nearly every note shares some latent terms with a query: only a dense match or an
    exact (BM25) match keeps a hit, as before (issue 11's unrelated lessons)."""
    params = RankingParams(thresholds={"*": 0.15})
    dense = [hit("near", 0.92), hit("far", 0.60, priority="high")]
    latent = [hit("far", 4.0), hit("near", 3.9)]
    kept = ids(select(fuse(dense, [], params, latent), params, 5))
    assert kept == ["near"]


def retired(pid: str, score: float) -> IndexHit:
    return hit(pid, score, kind="record", type="decision", current=False)


def head(pid: str) -> Head:
    return Head(pid, {"kind": "record", "type": "decision", "priority": "", "current": True})


def test_a_retired_record_hands_its_evidence_to_its_head() -> None:
    """Old wording of a changed decision finds the decision now in force: the head
    ranks where its retired version would have, with its distance and lexical score."""
    dense = [retired("old", 0.93), hit("note", 0.90), hit("new", 0.80)]
    sparse = [retired("old", 6.0), hit("note", 2.0)]
    fused = carry_to_heads(fuse(dense, sparse, RankingParams()), {"old": head("new")})
    assert ids(fused)[0] == "new" and "old" not in ids(fused)
    new = fused[0]
    assert new.distance is not None and abs(new.distance - 0.07) < 1e-9
    assert new.sparse_score == 6.0
    # a head no channel found comes in on its retired version's evidence alone
    dense = [retired("old", 0.93), hit("note", 0.90), hit("other", 0.75)]
    fused = carry_to_heads(fuse(dense, sparse, RankingParams()), {"old": head("far")})
    assert ids(fused)[0] == "far" and fused[0].payload["type"] == "decision"


def test_a_head_keeps_its_own_score_when_better_and_unreachable_heads_drop() -> None:
    dense = [hit("new", 0.95), hit("note", 0.90), retired("old", 0.85)]
    fused = fuse(dense, [], RankingParams())
    own = next(c.score for c in fused if c.point_id == "new")
    carried = carry_to_heads(fused, {"old": head("new")}, factor=1.0)
    assert ids(carried) == ["new", "note"] and carried[0].score == own
    # no head within the caller's reach: the retired version is dropped, as the index
    # filter used to drop it
    assert ids(carry_to_heads(fused, {})) == ["new", "note"]


def test_retired_hits_do_not_move_how_current_hits_score() -> None:
    """DBSF scales each channel by its hits' spread; retired records found beside the
    current ones must not change that scale."""
    current = [hit("a", 0.90), hit("b", 0.85), hit("c", 0.80)]
    alone = {c.point_id: c.score for c in fuse(current, [], RankingParams())}
    beside = fuse([retired("x", 0.99), *current, retired("y", 0.40)], [], RankingParams())
    assert {c.point_id: c.score for c in beside if c.point_id in alone} == alone


def _note(
    pid: str, score: float, created: float, type_: str = "knowledge", kind: str = "note"
) -> Candidate:
    return Candidate(pid, {"kind": kind, "type": type_, "created_at": created}, score=score)


def _unit(*xs: float) -> list[float]:
    v = np.asarray(xs, dtype=np.float64)
    return list(v / np.linalg.norm(v))


# "old" and "new" say nearly the same thing (cosine ~0.995); "other" is a neighbour (~0.87)
VECTORS = {"old": _unit(1, 0.1, 0), "new": _unit(1, 0.0, 0), "other": _unit(1, 0.0, 0.57)}


def test_a_newer_note_saying_nearly_the_same_goes_above_the_older() -> None:
    chosen = [_note("x", 1.0, 50), _note("old", 0.9, 10), _note("new", 0.8, 20)]
    assert ids(newer_first(chosen, VECTORS, 0.92, 0.8)) == ["x", "new", "old"]


def test_newer_first_leaves_what_it_should_alone() -> None:
    base = [_note("old", 0.9, 10), _note("new", 0.8, 20)]
    assert ids(newer_first(base, VECTORS, 0.92, 0.9)) == ["old", "new"]  # score too low
    assert ids(newer_first(base, VECTORS, 0.0, 0.8)) == ["old", "new"]  # off
    swapped = [_note("old", 0.9, 30), _note("new", 0.8, 20)]  # "new" is the older one
    assert ids(newer_first(swapped, VECTORS, 0.92, 0.8)) == ["old", "new"]
    lesson = [_note("old", 0.9, 10), _note("new", 0.8, 20, type_="lesson")]
    assert ids(newer_first(lesson, VECTORS, 0.92, 0.8)) == ["old", "new"]  # another type
    record = [_note("old", 0.9, 10, kind="record"), _note("new", 0.8, 20)]
    assert ids(newer_first(record, VECTORS, 0.92, 0.8)) == ["old", "new"]  # records have edges
    neighbour = [_note("old", 0.9, 10), _note("other", 0.8, 20)]
    assert ids(newer_first(neighbour, VECTORS, 0.92, 0.8)) == ["old", "other"]  # another fact
    shared = [_note("old", 0.9, 10), _note("new", 0.8, 20)]
    shared[1].payload["namespace"] = "team"  # own notes stay before shared ones
    assert ids(newer_first(shared, VECTORS, 0.92, 0.8)) == ["old", "new"]
    unknown = [_note("old", 0.9, 10), _note("gone", 0.8, 20)]  # no vector: not judged
    assert ids(newer_first(unknown, VECTORS, 0.92, 0.8)) == ["old", "gone"]


def test_a_note_ending_in_a_question_goes_below_the_hits_after_it() -> None:
    """Ratio 0: below every hit after it (the other questions keep their order after
    them); a ratio: only below those with that share of its score."""
    texts = {
        "q1": "Which hotel did you book?",
        "q2": "\u3069\u3061\u3089\u306b\u3057\u307e\u3059\u304b\uff1f",
    }
    texts |= {"a": "we booked Memmo Alfama", "b": "four nights?  no, five.", "c": "Cascais after"}
    chosen = [_note("q1", 1.0, 1), _note("a", 0.9, 2), _note("q2", 0.85, 3), _note("b", 0.5, 4)]
    assert ids(questions_after(chosen, texts, 0.0)) == ["a", "b", "q1", "q2"]
    assert ids(questions_after(chosen, texts, 0.8)) == ["a", "q1", "q2", "b"]
    assert ids(questions_after(chosen, texts, 0.95)) == ["q1", "a", "q2", "b"]  # "a" too weak


def test_questions_after_leaves_what_it_should_alone() -> None:
    texts = {"q": "Which hotel did you book?", "a": "we booked Memmo Alfama"}
    pinned = [_note("q", 1.0, 1), _note("a", 0.9, 2)]
    pinned[0].exact = 1  # the one holder of the query's identifier stays first
    assert ids(questions_after(pinned, texts, 0.0)) == ["q", "a"]
    shared = [_note("q", 1.0, 1), _note("a", 0.9, 2)]
    shared[1].payload["namespace"] = "team"  # own notes stay before shared ones
    assert ids(questions_after(shared, texts, 0.0)) == ["q", "a"]
    unread = [_note("q", 1.0, 1), _note("x", 0.9, 2)]  # no text for "x": not a question
    assert ids(questions_after(unread, texts, 0.0)) == ["x", "q"]
    assert not asks("Why? Because the cache was cold.") and asks("ok, and then?  \n")


def test_a_note_only_asks_when_it_tells_nothing_before_its_question() -> None:
    """Short filler before the question and a chat turn's frame do not count; a fact
    before the question does (that turn holds an answer)."""
    assert asks("[2026-02-23 session 1] assistant: Good. Who owns the release each cycle?")
    assert asks("Dana: Welcome back! How far did Tomasz get?")
    assert asks("[2026-01-10] Sam: did you reserve it by publishing a 0.0.1?")
    assert not asks("Sam: I signed up for a pottery class on Monday. Have you tried it?")
    assert not asks("[2026-03-02 session 1] user: we booked Memmo Alfama, four nights")


def test_e5_ships_the_measured_newer_similarity() -> None:
    assert for_model("local/multilingual-e5-small-q4").newer_similarity == 0.92
    assert for_model("ollama/nomic-embed-text").newer_similarity == 0  # not measured: off


def test_a_further_channel_adds_its_evidence_and_keeps_its_top_hits() -> None:
    """A further dense channel (embedder.channels) is fused at ``channel_weight``; a
    hit it ranks within ``channel_keep_rank`` passes the keep rule although the main
    model puts it beyond the threshold and no word matches; one ranked lower does not."""
    params = RankingParams(thresholds={"*": 0.1}, keep_margin=0.05, channel_keep_rank=1)
    dense = [hit("a", 0.95), hit("b", 0.80), hit("c", 0.79)]
    alone = fuse(dense, [], params)
    assert ids(select(alone, params, 10)) == ["a"]
    channel = [hit("c", 0.40), hit("b", 0.30), hit("a", 0.10)]
    fused = fuse(dense, [], params, channels=[channel])
    by_id = {c.point_id: c for c in fused}
    assert by_id["c"].channel_rank == 1 and by_id["c"].channel_part > by_id["b"].channel_part
    assert by_id["c"].score > by_id["b"].score  # the channel turned the main model's order
    assert ids(select(fused, params, 10)) == ["a", "c"]  # b: rank 2 in the channel


def test_a_channel_keeps_on_rank_only_hits_close_to_its_best() -> None:
    """In a 9-memory store every memory is in a channel's top 10: a hit passes the keep
    rule on its channel rank only with a cosine there of at least ``channel_keep_ratio``
    of the channel's best, so a channel keeps its close hits, not every memory."""
    params = RankingParams(thresholds={"*": 0.1}, keep_margin=0.05, channel_keep_rank=10)
    dense = [hit("a", 0.95), *(hit(x, 0.70) for x in "bcdefghi")]
    channel = [
        hit("c", 0.32),
        hit("b", 0.22),
        *(hit(x, 0.13 - i / 100) for i, x in enumerate("defghia")),
    ]
    kept = select(fuse(dense, [], params, channels=[channel]), params, 10)
    assert sorted(ids(kept)) == ["a", "b", "c"]
    by_rank = RankingParams(thresholds={"*": 0.1}, keep_margin=0.05, channel_keep_ratio=0.0)
    assert len(select(fuse(dense, [], by_rank, channels=[channel]), by_rank, 10)) == 9


def test_a_note_not_embedded_yet_is_judged_on_its_words_and_the_channel() -> None:
    """A pending note (no main-model vector yet) with the fast channel's vector outranks
    a pending note with the same lexical evidence and none."""
    params = RankingParams()
    dense = [hit("a", 0.9)]
    sparse = [hit("p", 3.0, dense=False), hit("q", 3.0, dense=False)]
    fused = fuse(dense, sparse, params, channels=[[hit("q", 0.5, dense=False), hit("a", 0.3)]])
    by_id = {c.point_id: c for c in fused}
    assert by_id["q"].score > by_id["p"].score


def test_a_channel_abstains_on_a_memory_it_cannot_read() -> None:
    """An English-only channel (``channel_reads``) gives a Japanese memory nothing; the
    memory's semantic score is scaled by the weight the channel would have added, so
    the channel neither lifts the English neighbour above it nor pushes it down."""
    params = RankingParams()
    dense = [hit("ja", 0.90, script="cjk"), hit("en", 0.86), hit("x", 0.70)]
    english_only = [[hit("en", 0.60), hit("x", 0.30), hit("ja", 0.05, script="cjk")]]
    blind = fuse(dense, [], params, channels=english_only)
    assert ids(blind)[0] == "en"  # the channel pushed the answer down
    fair = fuse(dense, [], params, channels=english_only, channel_reads=[frozenset({"latin"})])
    assert ids(fair)[0] == "ja"
    alone = {c.point_id: c.score for c in fuse(dense, [], params)}
    scaled = {c.point_id: c.score for c in fair}
    total = params.dense_weight + params.channel_weight
    assert abs(scaled["ja"] - alone["ja"] * total / params.dense_weight) < 1e-9
    # a channel that reads every script changes nothing
    same = fuse(dense, [], params, channels=english_only, channel_reads=[None])
    assert [c.score for c in same] == [c.score for c in blind]


def test_a_channel_weight_of_its_own() -> None:
    params = RankingParams()
    dense = [hit("a", 0.9), hit("b", 0.8)]
    channel = [[hit("b", 0.9), hit("a", 0.1)]]
    light = {c.point_id: c.channel_part for c in fuse(dense, [], params, channels=channel)}
    heavy = fuse(dense, [], params, channels=channel, channel_weights=[2 * params.channel_weight])
    assert {c.point_id: c.channel_part for c in heavy}["b"] == 2 * light["b"]
