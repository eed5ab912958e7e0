"""The typed inputs (``common.inputs``): one model per input, built by every door and
taken by the services; the admin API's flat wire call lands in the same model."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import get_type_hints

import pytest

from mcp_gateway.common.access import settings_scope
from mcp_gateway.common.errors import InvalidInput
from mcp_gateway.common.events import ADD_NOTE, SEARCH, NoteAdded, Searched
from mcp_gateway.common.inputs import (
    NoteChanges,
    NoteFields,
    NoteQuery,
    NoteRules,
    RecordChanges,
    RecordFields,
    fill,
    wire,
)
from mcp_gateway.common.types import Note, Priority
from mcp_gateway.jobs.solve_credit import is_solution, result_ids
from mcp_gateway.services import Services, api
from mcp_gateway.services.notes import NoteService
from mcp_gateway.services.records import RecordService
from mcp_gateway.stores.activity import ActivityLog
from tests.conftest import Harness

RULES = NoteRules(max_text_bytes=64, types=("note", "lesson"))


def test_checked_cleans_every_field_and_names_the_first_at_fault() -> None:
    raw = NoteFields(text=" a\x1bb\r\n ", type=" Lesson ", priority="HIGH", domain="Git")
    assert raw.checked(RULES) == NoteFields(text="ab", type="lesson", priority="high", domain="git")
    with pytest.raises(InvalidInput, match="text is empty"):
        NoteFields(text=" ", type="nope").checked(RULES)
    with pytest.raises(InvalidInput, match="unknown type 'nope'"):
        NoteFields(text="x", type="nope", priority="nope").checked(RULES)
    with pytest.raises(InvalidInput, match="over the 64-byte limit"):
        NoteFields(text="x", solved_query="q" * 65).checked(RULES)


def test_a_stored_note_is_its_fields_and_what_the_store_gives_it() -> None:
    """``Note`` takes its own fields from ``NoteFields`` (one list of them), in the order
    the tools' output schema has always shown: id, the note's fields, the store's."""
    assert issubclass(Note, NoteFields)
    assert list(Note.model_fields) == [
        "id", *NoteFields.model_fields, "namespace", "created_at", "updated_at", "deleted",
        "embedded_model",
    ]  # fmt: skip
    assert Note.model_fields["priority"].annotation == Priority  # as stored: one of three
    row = {"id": "n", "text": "t", "created_at": 1.0, "updated_at": 1.0, "content_hash": "h"}
    note = Note.model_validate(row)
    note.deleted = True  # a read model: a row's extra columns ignored, fields settable
    # an update merges the changes into the stored note's fields, then checks them
    assert note.changed_by(NoteChanges(text="u")).checked(RULES) == NoteFields(text="u")


def test_changes_keep_what_is_not_given() -> None:
    stored = NoteFields(text="old", type="lesson", domain="git")
    assert stored.changed_by(NoteChanges(text="new")) == NoteFields(
        text="new", type="lesson", domain="git"
    )
    assert NoteChanges(type="note").given() == {"type": "note"}


def test_fill_reads_a_doors_parsed_values_by_field_name() -> None:
    args = argparse.Namespace(text="t", type="note", priority="", domain="d", solved_query="")
    assert fill(NoteFields, args) == NoteFields(text="t", domain="d")
    edit = argparse.Namespace(text=None, type="lesson", priority=None, domain=None, other=1)
    assert fill(NoteChanges, edit).given() == {"type": "lesson"}
    assert fill(RecordChanges, {"title": "x", "extra": "ignored"}) == RecordChanges(title="x")
    assert wire(RecordFields(type="audit", title="t", links=("a",))) == {
        "type": "audit",
        "title": "t",
        "content": "",
        "status": "open",
        "action_state": "actionable",
        "links": ["a"],
        "project": "",
    }


def test_every_use_case_with_fields_takes_its_typed_input() -> None:
    # a door cannot hand a writing use case loose fields: the model is the one list
    assert get_type_hints(NoteService.add)["fields"] is NoteFields
    assert get_type_hints(NoteService.store)["fields"] is NoteFields
    assert get_type_hints(NoteService.update)["changes"] is NoteChanges
    assert get_type_hints(RecordService.add)["fields"] is RecordFields
    assert get_type_hints(RecordService.update)["changes"] is RecordChanges
    assert get_type_hints(NoteService.search)["asked"] is NoteQuery


async def test_the_flat_wire_call_lands_in_the_model(harness: Harness) -> None:
    services = Services.over(harness.app)
    scope = settings_scope(harness.app.settings)
    added = await api.call(
        services, scope, "notes.add", {"text": "wire note", "type": "lesson", "domain": "CI"}
    )
    await harness.settle()  # its point is written behind the answer
    edited = await api.call(
        services, scope, "notes.update", {"note_id": added["id"], "priority": "high"}
    )
    assert edited["changed"] == ["priority"]
    assert (edited["note"]["type"], edited["note"]["domain"]) == ("lesson", "ci")
    with pytest.raises(InvalidInput, match=r"bad arguments for notes\.update: colour"):
        await api.call(services, scope, "notes.update", {"note_id": added["id"], "colour": "x"})
    with pytest.raises(InvalidInput, match=r"bad arguments for notes\.add: text"):
        await api.call(services, scope, "notes.add", {"text": 5})


def test_a_logged_event_reads_back_through_its_model_and_an_old_entry_reads_as_defaults(
    tmp_path: Path,
) -> None:
    log = ActivityLog(tmp_path / "activity.jsonl")
    log.append_sync(ADD_NOTE, **NoteAdded(id="N1", type="lesson", solved_query="why").fields())
    log.append_sync(SEARCH, grant="g", **Searched(query="q", hits=2, result_ids=["a"]).fields())
    log.append_sync(SEARCH, query="an entry of an older version, without result_ids")
    added, searched, old = list(log.read_sync())
    assert NoteAdded.read(added).solved_query == "why" and added["id"] == "N1"
    assert Searched.read(searched).result_ids == ["a"] and searched["grant"] == "g"
    assert Searched.read(old).result_ids is None and Searched.read(old).hits is None
    assert is_solution(added) and result_ids(searched) == ["a"] and result_ids(old) == []


async def test_an_edit_right_after_an_add_waits_for_the_notes_point(harness: Harness) -> None:
    """``add_note`` answers before the note's point is written; an edit or a delete that
    follows at once must neither fail on the missing point nor commit half."""
    for i in range(8):
        added = await harness.ok("add_note", text=f"edited at once {i}")
        edited = await harness.ok("update_note", id=added["id"], priority="high")
        assert edited["priority"] == "high"
        await harness.ok("delete_note", id=added["id"])
