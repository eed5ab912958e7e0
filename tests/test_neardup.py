"""Near-duplicate folding (issue 33, item 3): the threshold is the one the labelled dev
pairs choose, and session_context shows near-duplicates as one entry, through the
MCP resource."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from mcp_gateway.search import neardup
from mcp_gateway.search.neardup import FOLD_SIMILARITY, marks
from mcp_gateway.search.one_change import differ
from tests.conftest import Harness
from tests.test_owner import ok

PAIRS = Path(__file__).resolve().parents[1] / "bench" / "quality" / "neardup" / "pairs.jsonl"
# issue 33's first force-push wording, and a rewording
# (cosine 0.975, bench/LOG.md "suite and folding")
FORCE_PUSH_OLD = "Never force-push to main: rebase locally and open a pull request."
FORCE_PUSH_NEW = "Do not force-push to main; rebase locally and open a pull request."
# the same sentence with one thing changed: another rule (cosine 0.981 and 0.989 to the
# first wording in its language, above the rewording's 0.975)
FORCE_PUSH_RELEASE = "Never force-push to release: rebase locally and open a pull request."
# issue 33 item 3's second wording of FORCE_PUSH_OLD (cosine 0.94496; pairs.jsonl)
FORCE_PUSH_ISSUE = "Never force push to the main branch; rebase locally and open a PR instead."
FORCE_PUSH_JA_MAIN = "mainブランチにforce-pushしない。ローカルでrebaseしてプルリクエストを出す。"
FORCE_PUSH_JA_RELEASE = (
    "releaseブランチにforce-pushしない。ローカルでrebaseしてプルリクエストを出す。"
)


async def recent_lessons(harness: Harness) -> str:
    """The session context's "Recent lessons" section, as the MCP resource reads."""
    res = await harness.client.read_resource("kioku://session_context")
    text = res.contents[0].text  # type: ignore[union-attr]
    return text.split("## Recent lessons", 1)[1].split("\n## ", 1)[0]


def lesson_entries(lessons: str) -> dict[str, str]:
    """Each listed entry's line by the id it opens with."""
    return {line.split("`")[1]: line for line in lessons.splitlines() if line.startswith("- `")}


async def test_threshold_is_the_one_the_dev_pairs_choose(harness: Harness) -> None:
    """The rule of bench/quality/neardup/measure.py on the dev pairs (en/ja/th), with
    the installed model: the threshold costs least, a wrong fold counting as two missed
    ones (a new model or threshold must be measured again). A pair folds as notes fold:
    the same identifiers and numbers, not one sentence with one thing changed
    (``one_change.differ``), and the cosine at least the threshold."""
    pairs = [json.loads(line) for line in PAIRS.read_text("utf-8").splitlines() if line]
    dev = [p for p in pairs if p["split"] == "dev"]
    assert {p["lang"] for p in dev} == {"en", "ja", "th"}
    texts = [t for p in dev for t in (p["a"], p["b"])]
    vecs = np.asarray(await harness.app.embedder.embed_documents(texts), dtype=np.float64)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    sims = [float(vecs[2 * i] @ vecs[2 * i + 1]) for i in range(len(dev))]
    apart = [differ(p["a"], p["b"]) for p in dev]

    def cost(t: float) -> float:
        folded = {
            i: marks(p["a"]) == marks(p["b"]) and sims[i] >= t and not apart[i]
            for i, p in enumerate(dev)
        }
        missed = sum(not folded[i] for i, p in enumerate(dev) if p["label"] == "dup")
        return missed + 2 * sum(folded[i] for i, p in enumerate(dev) if p["label"] == "related")

    # every foldable pair's own cosine is a candidate (a threshold between two of them
    # folds what the upper one does); of equal costs the higher; 3 decimals where those
    # fold the same pairs
    cuts = sorted({sims[i] for i, p in enumerate(dev) if marks(p["a"]) == marks(p["b"])
                   and not apart[i]})  # fmt: skip
    best = min(reversed(cuts), key=cost)
    below = max((c for c in cuts if c < best), default=0.0)
    short = math.floor(best * 1000) / 1000
    chosen = short if short > below else best
    # another CPU's kernels (AVX2 against AVX-512) move a cosine by ~1e-3: the shipped
    # threshold is the one these pairs choose, to that precision
    assert abs(chosen - FOLD_SIMILARITY) <= 0.002, (best, cost(best), cost(FOLD_SIMILARITY))


async def test_session_context_folds_near_duplicates_into_the_newest(harness: Harness) -> None:
    """Before: two wordings of one lesson were both listed in the session context."""
    older = await harness.ok(
        "add_note", text="Pin the Node version to 20 in .nvmrc; CI breaks on 22.", type="lesson"
    )
    newer = await harness.ok(
        "add_note",
        text="Keep Node pinned at 20 in .nvmrc because CI fails with Node 22.",
        type="lesson",
    )
    related = await harness.ok(
        "add_note", text="Use pnpm instead of npm; the lockfile is pnpm-lock.yaml.", type="lesson"
    )
    ja_old = await harness.ok(
        "add_note",
        text="このリポジトリのフォーマッタはblackではなくruff formatを使う。",
        type="lesson",
    )
    ja_new = await harness.ok(
        "add_note", text="このリポジトリではruff formatで整形する。blackは使わない。", type="lesson"
    )
    # the same words as another type are another kind of memory: not folded
    knowledge = await harness.ok(
        "add_note", text="Pin the Node version to 20 in .nvmrc; CI breaks on 22.", type="knowledge"
    )
    await harness.settle()
    lessons = await recent_lessons(harness)
    entry = next(line for line in lessons.splitlines() if line.startswith(f"- `{newer['id']}`"))
    assert f"also `{older['id']}`" in entry
    assert "Keep Node pinned" in lessons and "CI breaks on 22" not in lessons
    ja_entry = next(line for line in lessons.splitlines() if f"`{ja_new['id']}`" in line)
    assert ja_entry.startswith(f"- `{ja_new['id']}`") and f"also `{ja_old['id']}`" in ja_entry
    assert f"- `{related['id']}`" in lessons and "also" not in next(
        line for line in lessons.splitlines() if line.startswith(f"- `{related['id']}`")
    )
    assert knowledge["id"] not in lessons
    # nothing deleted: the folded note is still there to read
    shown = await harness.ok("get_note", id=older["id"])
    assert "CI breaks on 22" in shown["text"]
    # the file the next session reads folds them too
    written = harness.app.settings.session_context_path.read_text(encoding="utf-8")
    assert f"also `{older['id']}`" in written and f"also `{ja_old['id']}`" in written


def test_one_thing_changed_is_told_from_a_rewording() -> None:
    """What the model cannot tell (cosines 0.95-1.0 for both, bench/LOG.md "folding"):
    one sentence with a name, a content word or a negation changed is two facts; a
    negation reworded, a word added or the sentence rebuilt is one."""
    apart = [
        (FORCE_PUSH_OLD, FORCE_PUSH_RELEASE),  # a content word
        (FORCE_PUSH_JA_MAIN, FORCE_PUSH_JA_RELEASE),  # a name in a Japanese text
        (
            "Resize images to 1024 pixels before uploading; the CDN rejects anything larger.",
            "Resize images to 1024 pixels before uploading; Cloudinary rejects anything larger.",
        ),
        ("画像はアップロード前に縮小する。", "動画はアップロード前に縮小する。"),
        (
            "ห้ามรันterraform applyจากโน้ตบุ๊กทุกครั้งที่applyต้องผ่านCI pipeline",
            "ห้ามรันterraform destroyจากโน้ตบุ๊กทุกครั้งที่destroyต้องผ่านCI pipeline",
        ),
        (
            "Never commit straight to the release branch; cherry-pick from main.",
            "Commit straight to the release branch; never cherry-pick from main.",
        ),
    ]
    together = [
        (FORCE_PUSH_OLD, FORCE_PUSH_NEW),
        (FORCE_PUSH_OLD, FORCE_PUSH_NEW.replace("Do not", "Don't")),  # a contraction
        (
            "Never force-push to main; it rewrites shared history.",
            "Do not force push to the main branch — it rewrites history others share.",
        ),
        (
            "金曜日にJWTの署名鍵をローテーションしない。",
            "金曜日にJWTの署名鍵をローテーションしてはいけない。",
        ),
        (
            "ห้ามลบแถวในตารางauditให้ทำเครื่องหมายว่าarchivedแทน",
            "อย่าลบแถวในตารางauditให้ทำเครื่องหมายว่าarchivedแทน",
        ),
        (
            "Rebuild the index after changing the analyzer settings.",
            "Always rebuild the index after changing the analyzer settings.",
        ),
    ]
    assert [differ(a, b) for a, b in apart] == [True] * len(apart)
    assert [differ(a, b) for a, b in together] == [False] * len(together)


async def test_the_issues_two_force_push_wordings_are_one_entry(harness: Harness) -> None:
    """Before: the issue's two wordings (cosine 0.94496) stayed two entries under the
    bar a 0.005 grid chose on dev (0.945); the dev pairs' own cosines choose 0.937."""
    older = await harness.ok("add_note", text=FORCE_PUSH_OLD, type="lesson")
    newer = await harness.ok("add_note", text=FORCE_PUSH_ISSUE, type="lesson")
    await harness.settle()
    lessons = await recent_lessons(harness)
    entries = lesson_entries(lessons)
    assert list(entries) == [newer["id"]] and f"also `{older['id']}`" in entries[newer["id"]]


async def test_a_lesson_with_one_thing_changed_stays_its_own_entry(harness: Harness) -> None:
    """Before: "... force-push to main ..." and "... force-push to release ..." (cosine
    0.981, above the threshold) were one entry in the session context and in results,
    the older rule hidden behind an id; the rewording of the first still folds."""
    older = await harness.ok("add_note", text=FORCE_PUSH_OLD, type="lesson")
    release = await harness.ok("add_note", text=FORCE_PUSH_RELEASE, type="lesson")
    ja_main = await harness.ok("add_note", text=FORCE_PUSH_JA_MAIN, type="lesson")
    ja_release = await harness.ok("add_note", text=FORCE_PUSH_JA_RELEASE, type="lesson")
    newer = await harness.ok("add_note", text=FORCE_PUSH_NEW, type="lesson")
    await harness.settle()
    lessons = await recent_lessons(harness)
    entries = lesson_entries(lessons)
    assert f"also `{older['id']}`" in entries[newer["id"]], lessons
    for note in (release, ja_main, ja_release):
        assert note["id"] in entries and "also" not in entries[note["id"]], lessons
    found = await harness.call("search_memory", query="force-push rebase pull request", top=6)
    results = {r["id"]: r for r in found.structured_content["results"]}
    assert results[newer["id"]]["also"] == [older["id"]]
    assert release["id"] in results and results[release["id"]]["also"] == []


async def test_search_folds_near_duplicates_into_one_result(harness: Harness) -> None:
    """Before: the two wordings of one lesson sat side by side in the results."""
    older = await harness.ok(
        "add_note", text="Pin the Node version to 20 in .nvmrc; CI breaks on 22.", type="lesson"
    )
    newer = await harness.ok(
        "add_note",
        text="Keep Node pinned at 20 in .nvmrc because CI fails with Node 22.",
        type="lesson",
    )
    related = await harness.ok(
        "add_note", text="Use pnpm instead of npm; the lockfile is pnpm-lock.yaml.", type="lesson"
    )
    await harness.settle()
    found = await harness.call("search_memory", query="which Node does CI need?", top=5)
    results = found.structured_content["results"]
    ids = [r["id"] for r in results]
    assert newer["id"] in ids and older["id"] not in ids
    entry = results[ids.index(newer["id"])]
    assert entry["also"] == [older["id"]] and "Keep Node pinned" in entry["text"]
    assert all(r["also"] == [] for r in results if r["id"] != newer["id"])
    text = found.content[0].text
    assert f"(also {older['id']}: older notes saying the same" in text
    assert "CI breaks on 22" not in text
    if related["id"] in ids:
        assert results[ids.index(related["id"])]["also"] == []


async def test_only_notes_alike_enough_to_fold_have_their_marks_read(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A result's identifiers and numbers decide a fold only between notes whose vectors
    are within the threshold: the others' are never read (work saved on each search)."""
    texts = [
        "Pin the Node version to 20 in .nvmrc; CI breaks on 22.",
        "Keep Node pinned at 20 in .nvmrc because CI fails with Node 22.",
        "Use pnpm instead of npm; the lockfile is pnpm-lock.yaml.",
    ]
    for text in texts:
        await harness.ok("add_note", text=text, type="lesson")
    await harness.settle()
    read: list[str] = []

    def counted(text: str) -> frozenset[str]:
        read.append(text)
        return marks(text)

    monkeypatch.setattr(neardup, "marks", counted)
    found = await harness.ok("search_memory", query="which Node and which package manager?")
    assert texts[2] in [r["text"] for r in found["results"]]  # listed, never alike enough
    assert set(read) == set(texts[:2])


async def test_notes_that_differ_in_an_identifier_or_a_number_never_fold(
    harness: Harness,
) -> None:
    """Template notes are as alike as rewordings (cosine above the threshold) but name
    different things: each stays its own result, so an exact search finds its own."""
    texts = [
        "Incident 12: the auth service exhausted its pool, marker zq7c660f688e",
        "Incident 13: the auth service exhausted its pool, marker zq4b1e99a0c2",
        "The staging database listens on port 5432 after the move",
        "The staging database listens on port 6432 after the move",
    ]
    ids = [(await harness.ok("add_note", text=t))["id"] for t in texts]
    await harness.settle()
    vecs = np.asarray(await harness.app.embedder.embed_documents(texts[:2]), dtype=np.float64)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    assert float(vecs[0] @ vecs[1]) >= FOLD_SIMILARITY  # alike enough to fold by cosine
    for query, pair in (
        ("auth service pool exhausted", ids[:2]),
        ("staging database port", ids[2:]),
    ):
        found = await harness.call("search_memory", query=query, top=5)
        results = {r["id"]: r for r in found.structured_content["results"]}
        assert set(pair) <= set(results), query
        assert all(results[i]["also"] == [] for i in pair)
    got = await harness.ok("search_memory", query="zq4b1e99a0c2", top=3)
    assert got["results"][0]["id"] == ids[1] and got["results"][0]["also"] == []


async def test_a_word_of_the_query_keeps_its_note_out_of_a_fold(harness: Harness) -> None:
    """Short notes that differ in one word are as alike to the model as rewordings; the
    one a query names by that word stays a result of its own."""
    ids = {w: (await harness.ok("add_note", text=f"ro {w}"))["id"] for w in ("baa", "bab", "bac")}
    await harness.settle()
    for word, nid in ids.items():
        got = await harness.ok("search_memory", query=word, top=5)
        assert nid in [r["id"] for r in got["results"]], word


# slow: five one-shot CLI processes, each loading the model
@pytest.mark.slow
def test_the_cli_folds_a_reworded_lesson_in_search_and_context(tmp_path: Path) -> None:
    """Through the CLI, processes as a user runs them: the first wording of issue 33's
    force-push lesson and a rewording that folds under the measured threshold (the
    issue's own second wording too: the MCP-door test above) are one entry in a
    search and in session_context.md, the newest wording shown, the older id named and
    still readable with ``kioku show``."""
    data = tmp_path / "data"
    older = ok(data, "add", FORCE_PUSH_OLD, "--type", "lesson").strip()
    newer = ok(data, "add", FORCE_PUSH_NEW, "--type", "lesson").strip()
    other = ok(data, "add", "Use pnpm instead of npm; the lockfile is pnpm-lock.yaml.",
               "--type", "lesson").strip()  # fmt: skip
    found = ok(data, "search", "can I force push to main?")
    assert f"(also {older}: older notes saying the same" in found, found
    assert newer in found and "open a pull request." in found
    assert "Never force-push to main: rebase" not in found  # the older wording is folded
    ok(data, "context")
    context = (data / "session_context.md").read_text(encoding="utf-8")
    entry = next(line for line in context.splitlines() if line.startswith(f"- `{newer}`"))
    assert f"also `{older}`" in entry, context
    assert f"- `{other}`" in context and f"- `{older}`" not in context
    assert FORCE_PUSH_OLD in ok(data, "show", older)  # nothing deleted
