"""Threshold tuning and re-ranking priors: the pure rules, then the jobs on real stores."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest

import mcp_gateway.services.app as app_module
from mcp_gateway.common.inputs import NoteChanges, NoteFields
from mcp_gateway.common.sections import IndexSettings
from mcp_gateway.common.settings import KiokuSettings
from mcp_gateway.common.types import IndexFilter, Note, SparseVector, point_id
from mcp_gateway.jobs import priors, tasks, tuning
from mcp_gateway.queue.run import JobRun
from mcp_gateway.search.thresholds import thresholds_key
from mcp_gateway.services.app import open_app
from tests.test_queue_contract import CountingEmbedder


def note(nid: str, type_: str = "lesson", priority: str = "", age: float = 0.0) -> Note:
    return Note(
        id=nid,
        text=nid,
        type=type_,
        priority=priority,  # type: ignore[arg-type]
        created_at=1000.0 - age,
        updated_at=1000.0 - age,
    )


def test_threshold_is_a_high_quantile_plus_margin_and_clamped() -> None:
    got = tuning.compute_thresholds({"lesson": [0.1, 0.2, 0.3, 0.4], "knowledge": [0.2]})
    assert got["lesson"] == pytest.approx(tuning.quantile([0.1, 0.2, 0.3, 0.4], 0.9) + 0.05)
    assert "knowledge" not in got  # too few pairs: falls back to "*"
    assert "*" in got
    assert tuning.compute_thresholds({"x": [0.0, 0.0, 0.0]})["x"] == tuning.LOWEST
    assert tuning.compute_thresholds({"x": [0.99] * 5})["x"] == tuning.HIGHEST


def test_log_pairs_come_from_solved_adds_only() -> None:
    entries: list[dict[str, Any]] = [
        {"event": "add_note", "id": "A", "solved_query": "why X"},
        {"event": "add_note", "id": "B", "solved_query": ""},
        {"event": "search_memory", "query": "why X", "result_ids": ["A"]},
    ]
    assert tuning.pairs_from_log(entries) == [("why X", "A")]


def test_usage_credits_notes_retrieved_before_a_solution() -> None:
    entries = [
        {"ts": 0, "event": "search_memory", "result_ids": ["old"]},
        {"ts": 10_000, "event": "search_memory", "result_ids": ["A", "B"]},
        {"ts": 10_100, "event": "add_note", "id": "S", "solved_query": "q"},
        {"ts": 10_200, "event": "search_memory", "result_ids": ["A"]},
    ]
    usage = priors.usage_from_log(entries)
    assert (usage["A"].retrieved, usage["A"].useful) == (2, 1)
    assert (usage["B"].retrieved, usage["B"].useful) == (1, 1)
    assert (usage["old"].retrieved, usage["old"].useful) == (1, 0)  # outside the window


def test_priors_reward_usefulness_and_age_out_stale_lessons() -> None:
    lessons = [note(f"L{i}", age=i) for i in range(250)]
    important = note("L240-high", priority="high", age=240.5)
    useful_old = lessons[230]
    usage = {
        useful_old.id: priors.Usage(retrieved=3, useful=3),
        "L5": priors.Usage(retrieved=10, useful=0),
    }
    got = priors.compute_priors([*lessons, important], usage)
    assert got["L0"] == 1.0  # new, no evidence
    assert got["L5"] < 1.0  # retrieved often, never helped
    assert got[useful_old.id] > 1.0  # old but useful: no shelf-life decay
    assert got[important.id] == 1.0  # high priority never ages
    assert got["L249"] < got["L150"] < 1.0  # stale tail decays with age
    assert min(got.values()) >= priors.SHELF_FLOOR * priors.usefulness(None) - 1e-9


@pytest.fixture
async def app(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    embedder = CountingEmbedder()
    monkeypatch.setattr(app_module, "build_embedder", lambda _s: embedder)
    settings = KiokuSettings(
        data_dir=tmp_path / "data",
        redis_url=None,
        index=IndexSettings(backend="qdrant", collection=f"t{uuid.uuid4().hex[:10]}"),
    )
    async with open_app(settings, run_jobs=False) as opened:
        yield opened


async def _add(app, text: str, type_: str = "lesson", solved: str = "") -> Note:
    n = await app.notes.add(
        NoteFields(text=text, type=type_, solved_query=solved), namespace=app.namespaces[0]
    )
    await app.indexer.put_lexical(n)
    await app.jobs.notes_changed([n])  # inline: embeds into the truth store, then applies
    return n


async def test_tune_job_stores_thresholds_the_search_reads(app) -> None:
    for i in range(5):
        await _add(
            app,
            f"staging deploy {i} broke because the token expired",
            solved=f"deploy {i} broke token",
        )
    thresholds = await tasks.tune_thresholds(JobRun(app.job_context))
    assert {"lesson", "*"} <= set(thresholds)
    stored = json.loads(await app.db.get_meta(thresholds_key(app.namespaces[0])))
    assert stored == thresholds
    assert (await app.thresholds.get(app.namespaces[0]))["lesson"] == thresholds["lesson"]


async def test_rerank_prior_reaches_payload_and_survives_reembed(app) -> None:
    useful = await _add(app, "retry with backoff when the API answers 429")
    solved = await _add(app, "solved the import error", "conclusion", solved="import error")
    app.activity.append_sync("search_memory", query="429", result_ids=[useful.id])
    app.activity.append_sync("add_note", id=solved.id, solved_query="import error")
    result = await tasks.rerank(JobRun(app.job_context))
    assert result["boosted"] >= 1
    await app.applier.apply_pending()  # the owner copies changed priors into the index
    pid = point_id("note", useful.id)

    async def prior() -> float:
        dense = await app.embedder.embed_query("retry with backoff when the API answers 429")
        hits, _ = await app.index.search(dense, SparseVector([], []), IndexFilter(), 10)
        return float(next(h for h in hits if h.id == pid).payload.get("prior", 1.0))

    boosted = await prior()
    assert boosted > 1.0
    # a text edit re-embeds the note (whole-point upsert): the prior must be kept
    edited, _ = await app.notes.update(
        useful.id, NoteChanges(text="retry with backoff when the API answers 429 !")
    )
    await app.jobs.notes_changed([edited])
    assert await prior() == boosted
