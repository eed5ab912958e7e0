"""Memory browser building blocks without a server: sessions and sign-in codes, the
safe Markdown renderer, the lifecycle picture, the activity-log figures."""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path
from typing import Any

from pydantic import SecretStr

from mcp_gateway.common.inputs import NoteFields
from mcp_gateway.common.sections import HttpSettings
from mcp_gateway.common.settings import KiokuSettings
from mcp_gateway.common.types import Note
from mcp_gateway.records.model import Edge, Record, RecordGraph
from mcp_gateway.ui import graph, insights, markdown
from mcp_gateway.ui.session import KEY_FILE, Keys, load_secret, mint_signin_code
from mcp_gateway.ui.spent import DB_FILE, Spent

# -- sessions ------------------------------------------------------------------------


def test_key_file_is_private_and_stable(tmp_path: Path) -> None:
    first = load_secret(tmp_path)
    assert load_secret(tmp_path) == first and len(first) == 32
    assert stat.S_IMODE(os.stat(tmp_path / KEY_FILE).st_mode) == 0o600


def test_session_cookie_round_trip_and_tampering() -> None:
    keys = Keys(b"k" * 32)
    cookie, sess = keys.new_session("alice")
    assert keys.read_session(cookie) == sess
    body, mac = cookie.split(".")
    # Flip the MAC's first character: a fixed replacement suffix would equal the real one
    # whenever the MAC happens to end with it (1 in 4096 runs).
    tampered = ("B" if mac[0] == "A" else "A") + mac[1:]
    forged = keys._sign(b"other key", {"g": "admin", "sid": "x", "exp": time.time() + 60})
    for bad in (f"{body}.{tampered}", forged, "", "garbage", f"{body}."):
        assert keys.read_session(bad) is None
    assert Keys(b"x" * 32).read_session(cookie) is None  # another data dir's key


def test_rotating_a_token_ends_every_session(tmp_path: Path) -> None:
    one = KiokuSettings(data_dir=tmp_path, http=HttpSettings(token=SecretStr("first-token")))
    two = KiokuSettings(data_dir=tmp_path, http=HttpSettings(token=SecretStr("second-token")))
    cookie, _ = Keys.for_settings(one).new_session("default")
    assert Keys.for_settings(one).read_session(cookie) is not None
    assert Keys.for_settings(two).read_session(cookie) is None


def test_expired_session_and_revocation() -> None:
    keys = Keys(b"k" * 32)
    old = keys._sign(keys._session, {"g": "default", "sid": "s", "exp": time.time() - 1})
    assert keys.read_session(old) is None
    cookie, sess = keys.new_session("default")
    keys.revoke(sess)
    assert keys.read_session(cookie) is None


def test_csrf_token_is_bound_to_the_session() -> None:
    keys = Keys(b"k" * 32)
    _, a = keys.new_session("default")
    _, b = keys.new_session("default")
    assert keys.csrf_ok(a, keys.csrf_token(a))
    assert not keys.csrf_ok(a, keys.csrf_token(b))
    assert not keys.csrf_ok(a, "")


def test_signin_code_works_once_and_expires(tmp_path: Path) -> None:
    settings = KiokuSettings(data_dir=tmp_path, http=HttpSettings(token=SecretStr("t" * 20)))
    server = Keys.for_settings(settings)  # the token does not matter for codes
    code = mint_signin_code(KiokuSettings(data_dir=tmp_path), "default")
    assert server.redeem(code) == "default"
    assert server.redeem(code) is None
    assert server.redeem(server.signin_code("default", ttl_s=-1)) is None
    assert server.redeem(Keys(b"z" * 32).signin_code("default")) is None


# -- safe Markdown -------------------------------------------------------------------


def test_markdown_escapes_everything_stored() -> None:
    md = (
        "# Session context (kioku)\n\n## Recent lessons\n\n- `01ABC` · 2026-12-01 · high\n"
        "> <script>alert(1)</script> & [x](javascript:alert(1))\n> 二行目 บรรทัดที่สอง\n"
        "\n_Nothing <b>here</b>_\n"
    )
    html = str(markdown.render(md))
    assert "<script>" not in html and "<b>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt; &amp;" in html
    assert "<code>01ABC</code>" in html and "<h3>Recent lessons</h3>" in html
    assert "二行目 บรรทัดที่สอง" in html
    assert "<a" not in html


# -- lifecycle picture ---------------------------------------------------------------


def _rec(rid: str, t: float, title: str = "t", rtype: str = "decision") -> Record:
    return Record(id=rid, type=rtype, project="MEM", seq=1, title=title, created_at=t, updated_at=t)  # type: ignore[arg-type]


def test_graph_layout_reads_left_to_right_and_escapes() -> None:
    recs = {
        "AUDIT-MEM-001": _rec("AUDIT-MEM-001", 1, "<script>x</script>", "audit"),
        "FIX-MEM-001": _rec("FIX-MEM-001", 2, "fix", "fix"),
        "VERIFICATION-MEM-001": _rec("VERIFICATION-MEM-001", 3, "ok", "verification"),
        "FIX-MEM-002": _rec("FIX-MEM-002", 4, "other fix", "fix"),
    }
    edges = [
        Edge(source="FIX-MEM-001", relation="resolves", target="AUDIT-MEM-001", created_at=2),
        Edge(
            source="VERIFICATION-MEM-001", relation="verifies", target="FIX-MEM-001", created_at=3
        ),
        Edge(source="FIX-MEM-002", relation="resolves", target="AUDIT-MEM-001", created_at=4),
    ]
    g = RecordGraph(root="AUDIT-MEM-001", records=recs, edges=edges)
    placed = graph.layout(g)
    xs = {k: p.x for k, p in placed.items()}
    assert xs["AUDIT-MEM-001"] < xs["FIX-MEM-001"] < xs["VERIFICATION-MEM-001"]
    assert xs["FIX-MEM-002"] == xs["FIX-MEM-001"]  # both one step after the audit
    assert placed["FIX-MEM-002"].y > placed["FIX-MEM-001"].y
    svg = str(graph.render(g, focus="AUDIT-MEM-001", head="AUDIT-MEM-001"))
    assert "<script>" not in svg and "&lt;script&gt;" in svg
    assert 'class="node t-audit current head focus"' in svg


def test_graph_marks_retired_records() -> None:
    recs = {i: _rec(i, n) for n, i in enumerate(["DECISION-MEM-001", "DECISION-MEM-002"])}
    edge = Edge(
        source="DECISION-MEM-002", relation="supersedes", target="DECISION-MEM-001", created_at=1
    )
    svg = str(
        graph.render(
            RecordGraph(root="DECISION-MEM-001", records=recs, edges=[edge]),
            focus="DECISION-MEM-001",
            head="DECISION-MEM-002",
        )
    )
    assert 'class="node t-decision retired focus"' in svg
    assert 'class="node t-decision current head"' in svg


def test_clip_counts_wide_characters_twice() -> None:
    assert graph._clip("本番環境へのデプロイ", 8) == "本番環…"
    assert graph._clip("short", 8) == "short"


# -- activity figures ----------------------------------------------------------------


def _note(nid: str, t: float = 0.0, ntype: str = "lesson") -> Note:
    return Note(id=nid, text=nid, type=ntype, created_at=t, updated_at=t)


def test_summarise_counts_hits_and_credits_solutions() -> None:
    day = 86_400.0
    now = 100 * day + day / 2  # noon: the last entries fall on the same day
    log = [
        {"ts": now - 2 * day, "event": "search_memory", "hits": 2, "result_ids": ["a", "b"]},
        {"ts": now - 100, "event": "search_memory", "hits": 0, "result_ids": [], "query": "q0"},
        {"ts": now - 90, "event": "search_memory", "hits": 1, "result_ids": ["c"]},
        {"ts": now - 80, "event": "ui_search", "hits": 1, "result_ids": ["z"]},
        {"ts": now - 50, "event": "add_note", "id": "s", "solved_query": "how?"},
        {"ts": now - 40, "event": "add_note", "id": "t", "solved_query": "again?"},
    ]
    facts = insights.summarise(log, days=30, now=now)
    assert (facts.searches, facts.hits, facts.ui_searches) == (3, 2, 1)
    assert facts.days[-1].searches == 2 and facts.days[-1].hits == 1
    assert facts.days[-3].searches == 1
    assert [s.note_id for s in facts.solutions] == ["t", "s"]
    # "a"/"b" were two days earlier (outside 30 min); "c" credited once, to "s" only
    assert facts.solutions[1].credited == ["c"] and facts.solutions[0].credited == []
    assert facts.empty_queries == [(now - 100, "q0")]
    assert "z" not in facts.retrieved  # the browser's own searches are not retrievals
    never = insights.never_retrieved(
        [_note("a"), _note("x", 2), _note("w", 1), _note("k", 0, "checkpoint")], facts.retrieved
    )
    assert [n.id for n in never] == ["w", "x"]


def test_spent_codes_and_sign_outs_are_shared_through_the_data_dir(tmp_path: Path) -> None:
    """Two mounts (or a restarted owner) on one data dir: one ``ui-sessions.db``."""
    secret = load_secret(tmp_path)
    first = Keys(secret, spent=Spent.for_data_dir(tmp_path))
    second = Keys(secret, spent=Spent.for_data_dir(tmp_path))
    code = first.signin_code("default")
    assert first.redeem(code) == "default" and second.redeem(code) is None
    cookie, sess = second.new_session("default")
    assert first.read_session(cookie) == sess
    second.revoke(sess)
    assert first.read_session(cookie) is None
    assert stat.S_IMODE(os.stat(tmp_path / DB_FILE).st_mode) == 0o600


async def test_pending_marks_follow_the_note_store(tmp_path: Path) -> None:
    """The UI reads "pending embedding" through the note store (no SQL of its own):
    live notes without a dense vector; a deleted or unknown id is not pending."""
    from types import SimpleNamespace

    from mcp_gateway.stores.db import Database
    from mcp_gateway.stores.notes import NoteStore
    from mcp_gateway.ui import adapter

    db = Database(tmp_path / "kioku.db")
    await db.open()
    try:
        notes = NoteStore(db)
        waiting = await notes.add(NoteFields(text="Pending check: not embedded yet", type="note"))
        done = await notes.add(NoteFields(text="Pending check: embedded already", type="note"))
        gone = await notes.add(NoteFields(text="Pending check: deleted", type="note"))
        await notes.mark_embedded({done.id: done.updated_at}, "test-model")
        await notes.set_deleted(gone.id, True)
        app: Any = SimpleNamespace(notes=notes)  # the one part of AppContext it reads
        ids = [waiting.id, done.id, gone.id, "01UNKNOWN0000000000000000000"]
        assert await adapter.pending_ids(app, ids) == {waiting.id}
    finally:
        await db.close()


async def test_shared_sign_in_state_is_one_for_every_process(
    database_location: Path | str,
) -> None:
    """Two processes on one truth store (two ``Database`` objects): one secret, a code
    spent once, a sign-out seen by both (``stores.signins``)."""
    from mcp_gateway.stores.db import Database
    from mcp_gateway.stores.signins import SharedSignins

    one, two = Database(database_location), Database(database_location)
    await one.open()
    await two.open()
    try:
        first, second = SharedSignins(one), SharedSignins(two)
        secret = first.secret()
        assert second.secret() == secret and len(secret) == 32
        a, b = Keys(secret, spent=first), Keys(second.secret(), spent=second)
        code = a.signin_code("default")
        assert b.redeem(code) == "default" and a.redeem(code) is None
        cookie, sess = a.new_session("default")
        assert b.read_session(cookie) == sess
        b.revoke(sess)
        assert a.read_session(cookie) is None
        # an expired code's row leaves with the next spend
        assert a.redeem(a.signin_code("default", ttl_s=-1)) is None
    finally:
        await one.close()
        await two.close()


def test_a_search_without_a_strong_match_is_a_miss() -> None:
    """Issue 45: "Is it helping?" showed "100 % found something" while a question no
    memory answers still got five unrelated notes. The log records the match level; a
    weak or empty answer is a miss, an older entry without it counts by its hits."""
    now = 10 * 86_400.0
    log = [
        {"ts": now - 30, "event": "search_memory", "hits": 3, "result_ids": ["a"], "match": "weak"},
        {"ts": now - 20, "event": "search_memory", "hits": 0, "result_ids": [], "match": "none"},
        {
            "ts": now - 10,
            "event": "search_memory",
            "hits": 2,
            "result_ids": ["b"],
            "match": "strong",
        },
        {"ts": now - 5, "event": "search_memory", "hits": 1, "result_ids": ["c"], "query": "old"},
    ]
    facts = insights.summarise(log, days=7, now=now)
    assert (facts.searches, facts.hits) == (4, 2)
    assert [ts for ts, _ in facts.empty_queries] == [now - 20, now - 30]
