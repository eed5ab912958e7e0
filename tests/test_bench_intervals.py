"""The quality bench's bootstrap intervals and the conversational set's integrity.

No server here: ``run.py`` drives the real one; these check the arithmetic it prints and
that ``bench/quality/conv`` is what its sources say, loadable by ``run.py``'s loader.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench" / "quality"
sys.path.insert(0, str(BENCH))

import intervals  # noqa: E402


def rows(values: list[float], split: str = "test", kind: str = "single-fact") -> list[dict]:
    return [
        {"qid": f"q{i}", "split": split, "kind": kind, "lang": "en", "nDCG@10": v}
        for i, v in enumerate(values)
    ]


def test_interval_brackets_the_mean_and_repeats_with_the_seed() -> None:
    values = [0.0, 1.0] * 30
    mean, lo, hi = intervals.bootstrap(values, resamples=1000, label="g")
    assert mean == 0.5
    assert 0.3 < lo < 0.5 < hi < 0.7
    assert intervals.bootstrap(values, resamples=1000, label="g") == (mean, lo, hi)
    assert intervals.bootstrap([0.7] * 12, resamples=200) == pytest.approx((0.7, 0.7, 0.7))


def test_paired_difference_flags_a_consistent_loss_only_in_large_groups(
    capsys: pytest.CaptureFixture[str],
) -> None:
    base_vals = [1.0] * 12 + [0.0] * 12
    cand_vals = [0.5] * 12 + [0.0] * 12  # every answered query got worse, the rest equal
    base: dict[str, Any] = {
        "mode": "hybrid",
        "queries": rows(base_vals[:12], kind="a") + rows(base_vals[12:], kind="b"),
    }
    cand: dict[str, Any] = {
        "mode": "hybrid",
        "queries": rows(cand_vals[:12], kind="a") + rows(cand_vals[12:], kind="b"),
    }
    for part in (base, cand):  # unique qids across kinds
        for i, r in enumerate(part["queries"]):
            r["qid"] = f"q{i}"
    worse = intervals.print_paired(
        "set", base, cand, ["nDCG@10"], base_label="old", cand_label="new", resamples=500
    )
    assert worse == ["set/hybrid/test/ALL", "set/hybrid/test/a"]
    small = {"mode": "hybrid", "queries": cand["queries"][:3]}
    assert (
        intervals.print_paired(
            "set", base, small, ["nDCG@10"], base_label="old", cand_label="new", resamples=500
        )
        == []
    )
    assert "WORSE nDCG@10" in capsys.readouterr().out


def test_paired_refuses_runs_over_different_queries() -> None:
    with pytest.raises(ValueError, match="same query file"):
        intervals.paired(rows([1.0]), [{"qid": "other", "nDCG@10": 0.0}], "nDCG@10")


def test_conversational_set_matches_its_sources_and_loads() -> None:
    done = subprocess.run(
        [sys.executable, str(BENCH / "conv" / "build.py"), "--check"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    from run import load_jsonl

    memories = load_jsonl("memories.jsonl", BENCH / "conv")
    queries = load_jsonl("queries.jsonl", BENCH / "conv")
    keys = {m["key"]: m for m in memories}
    assert len(memories) >= 1000 and len(queries) >= 240
    for q in queries:
        assert q["relevant"] and all(k in keys for k in q["relevant"])
        # split by conversation: a question and its evidence never cross splits
        assert {keys[k]["split"] for k in q["relevant"]} == {q["split"]}
        assert {keys[k]["conversation"] for k in q["relevant"]} == {q["conversation"]}
