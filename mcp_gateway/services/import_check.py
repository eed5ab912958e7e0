"""What ``kioku import`` accepts: every item through the checks MCP applies.

An import is another way in, so it gets the same text policy (``validation.clean_text``:
no ESC, BEL, NUL...), the same limits, types and labels as ``add_note`` and
``record_add`` (``records.validate``), a namespace name (``validation.namespace``), finite
times and bounded record numbers. ``check_items`` checks a whole import before anything
is written and answers every problem with where it is (``path line N`` or a file of a
Markdown folder); the CLI runs it before sending, the owner again before writing.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from mcp_gateway.common.errors import InvalidInput
from mcp_gateway.common.inputs import NoteChanges, NoteFields, NoteRules, RecordChanges
from mcp_gateway.common.settings import KiokuSettings
from mcp_gateway.common.validation import (
    clean_text,
    namespace,
    terminal_safe,
)
from mcp_gateway.records import validate as rv
from mcp_gateway.records.model import RELATIONS
from mcp_gateway.records.queries import record_id_for

# 9999-12-31: a later time cannot be shown as a date
LATEST = 253_402_300_799.0
SHOWN_PROBLEMS = 20
# what a history entry may name: a field an update changes, or a lifecycle event
NOTE_HISTORY_FIELDS = (*NoteChanges.model_fields, "deleted")
RECORD_HISTORY_FIELDS = ("created", "link", *RecordChanges.model_fields)
_IMPORT_DEFAULTS = {"type": "knowledge"}
_ULID = re.compile(r"^[0-9A-HJKMNP-TV-Z]{26}$")
_RECORD_ID = re.compile(r"^([A-Z]+)-([A-Z0-9_]{1,16})-([0-9]{3,9})(?:\.([A-Z0-9]{1,24}))?$")


@dataclass(frozen=True)
class Limits:
    note_bytes: int
    note_types: tuple[str, ...]
    title_chars: int
    content_bytes: int
    namespace: str

    @property
    def notes(self) -> NoteRules:
        return NoteRules(max_text_bytes=self.note_bytes, types=self.note_types)

    @classmethod
    def of(cls, settings: KiokuSettings) -> Limits:
        return cls(
            note_bytes=settings.notes.max_text_bytes,
            note_types=tuple(settings.notes.types),
            title_chars=rv.MAX_TITLE_CHARS,
            content_bytes=rv.MAX_CONTENT_BYTES,
            namespace=settings.namespace,
        )


def check_items(items: Any, limits: Limits) -> list[dict[str, Any]]:
    """The items, checked and cleaned (only known fields, JSON-safe); or InvalidInput
    naming up to ``SHOWN_PROBLEMS`` problems, each with its place. Nothing is written."""
    if not isinstance(items, list):
        raise InvalidInput("items must be a list of notes and records")
    out: list[dict[str, Any]] = []
    problems: list[str] = []
    first_of: dict[tuple[str, str], dict[str, Any]] = {}  # (kind, id) -> its first item
    for n, item in enumerate(items, 1):
        where = place(item.get("where") if isinstance(item, dict) else None) or f"item {n}"
        try:
            if not isinstance(item, dict):
                raise InvalidInput("not a JSON object (a note or a record)")
            kind = item.get("kind")
            if kind == "note":
                out.append({**_note(item, limits), "where": where})
            elif kind == "record":
                out.append({**_record(item, limits), "where": where})
            else:
                raise InvalidInput(f"unknown kind {kind!r}: a kioku export has notes and records")
            _same_as_before(out[-1], first_of)
        except InvalidInput as exc:
            problems.append(f"{where}: {exc}")
    if problems:
        shown = problems[:SHOWN_PROBLEMS]
        more = len(problems) - len(shown)
        raise InvalidInput(
            "nothing imported: fix these and import again\n  "
            + "\n  ".join(shown)
            + (f"\n  ... and {more} more" if more else "")
        )
    return out


def _same_as_before(item: dict[str, Any], first_of: dict[tuple[str, str], dict[str, Any]]) -> None:
    """An id given twice in one import must carry the same item both times: one would
    silently win over the other (the first was kept, and nothing said so: issue 47)."""
    key = (str(item["kind"]), str(item["id"]))
    earlier = first_of.setdefault(key, item)
    if earlier is item:
        return
    fields = ("text", "title", "content", "type", "status", "domain", "priority")
    differs = [f for f in fields if earlier.get(f) != item.get(f)]
    if differs:
        raise InvalidInput(
            f"{key[0]} id {key[1]!r} is also at {earlier['where']} with another "
            f"{differs[0]}: keep one of them"
        )


def place(value: Any) -> str:
    """A place to print (a path may hold bytes that are not UTF-8, or controls)."""
    if not isinstance(value, str):
        return ""
    text = value.encode("utf-8", "backslashreplace").decode("utf-8")
    return terminal_safe(text)[:300]


def _note(item: dict[str, Any], lim: Limits) -> dict[str, Any]:
    note_id = _str(item, "id")
    if not _ULID.match(note_id):
        raise InvalidInput(f"note id {note_id!r} is not a kioku note id (a ULID)")
    return {
        "kind": "note",
        "id": note_id,
        **_note_fields(item, lim).model_dump(),
        "namespace": namespace(_str(item, "namespace", "") or lim.namespace),
        "created_at": _time(item, "created_at"),
        "updated_at": _time(item, "updated_at"),
        "deleted": _bool(item, "deleted"),
        "replace_text": _bool(item, "replace_text"),
        "history": [_note_change(h, lim) for h in _list(item, "history")],
    }


def _note_fields(item: dict[str, Any], lim: Limits) -> NoteFields:
    """The note's own fields, checked as ``add_note`` checks them; an exported note
    without a type is knowledge."""
    given = {
        name: _str(
            item, name, None if field.is_required() else _IMPORT_DEFAULTS.get(name, field.default)
        )
        for name, field in NoteFields.model_fields.items()
    }
    return NoteFields(**given).checked(lim.notes)


def _note_change(entry: Any, lim: Limits) -> dict[str, Any]:
    if not isinstance(entry, dict):
        raise InvalidInput("a history entry is not a JSON object")
    field = _str(entry, "field")
    if field not in NOTE_HISTORY_FIELDS:
        raise InvalidInput(f"history entry of unknown field {field!r}")
    return {
        "changed_at": _time(entry, "changed_at", required=True),
        "field": field,
        "old_value": _value(entry, "old_value", lim.note_bytes),
        "new_value": _value(entry, "new_value", lim.note_bytes),
    }


def _record(item: dict[str, Any], lim: Limits) -> dict[str, Any]:
    rid = _str(item, "id")
    rtype = rv.record_type(_str(item, "type"))
    project = rv.project(_str(item, "project"))
    seq = item.get("seq")
    if isinstance(seq, bool) or not isinstance(seq, int) or not 1 <= seq <= rv.MAX_SEQ:
        raise InvalidInput(f"record seq must be an integer from 1 to {rv.MAX_SEQ}, got {seq!r}")
    parts = _RECORD_ID.match(rid)
    if parts is None or rid != record_id_for(rtype, project, seq, parts.group(4) or ""):
        raise InvalidInput(
            f"record id {rid!r} does not match its type, project and seq "
            f"({record_id_for(rtype, project, seq, '')}, plus .TAG outside the default namespace)"
        )
    history_limit = lim.content_bytes * 2 + lim.title_chars * 4
    return {
        "kind": "record",
        "id": rid,
        "type": rtype,
        "project": project,
        "seq": seq,
        "title": rv.title(_str(item, "title"), lim.title_chars),
        "content": rv.content(_str(item, "content", ""), lim.content_bytes),
        "status": rv.status(_str(item, "status", "open")),
        "action_state": rv.action_state(_str(item, "action_state", "actionable")),
        "created_at": _time(item, "created_at", required=True),
        "updated_at": _time(item, "updated_at", required=True),
        "namespace": namespace(_str(item, "namespace", "") or lim.namespace),
        "history": [_record_change(rid, h, history_limit) for h in _list(item, "history")],
        "links": [_link(rid, e) for e in _list(item, "links")],
    }


def _record_change(rid: str, entry: Any, limit: int) -> dict[str, Any]:
    if not isinstance(entry, dict):
        raise InvalidInput("a history entry is not a JSON object")
    field = _str(entry, "field")
    if field not in RECORD_HISTORY_FIELDS:
        raise InvalidInput(f"history entry of unknown field {field!r}")
    if _str(entry, "record_id", rid) != rid:
        raise InvalidInput(f"a history entry of {rid} names another record")
    return {
        "record_id": rid,
        "field": field,
        "old_value": _value(entry, "old_value", limit),
        "new_value": _value(entry, "new_value", limit),
        "at": _time(entry, "at", required=True),
    }


def _link(rid: str, entry: Any) -> dict[str, Any]:
    if not isinstance(entry, dict):
        raise InvalidInput("a link is not a JSON object")
    target = _str(entry, "target")
    if _str(entry, "source", rid) != rid or not _RECORD_ID.match(target) or target == rid:
        raise InvalidInput(f"link {entry.get('relation')!r} of {rid}: bad source or target")
    relation = _str(entry, "relation")
    if relation not in RELATIONS:
        raise InvalidInput(f"unknown relation {relation!r}; valid: {', '.join(RELATIONS)}")
    return {
        "source": rid,
        "relation": relation,
        "target": target,
        "created_at": _time(entry, "created_at", required=True),
    }


# -- JSON values ------------------------------------------------------------------------
def _str(item: dict[str, Any], key: str, default: str | None = None) -> str:
    value = item.get(key, default)
    if value is None and default is not None:
        value = default
    if not isinstance(value, str):
        raise InvalidInput(f"{key} must be a string" if key in item else f"{key} is missing")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInput(f"{key} is not valid Unicode text (lone surrogate)") from None
    return value


def _value(item: dict[str, Any], key: str, limit: int) -> str | None:
    value = item.get(key)
    return None if value is None else clean_text(_str(item, key), key, limit, required=False)


def _time(item: dict[str, Any], key: str, *, required: bool = False) -> float | None:
    """Epoch seconds, finite, 1970..9999; absent (None) where the importer may use now."""
    value = item.get(key)
    if value is None and not required:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidInput(f"{key} must be a number of seconds since 1970, got {value!r}")
    if not math.isfinite(value) or not 0 <= value <= LATEST:
        raise InvalidInput(f"{key} must be a time from 1970 to 9999, got {value!r}")
    return float(value)


def _bool(item: dict[str, Any], key: str) -> bool:
    value = item.get(key, False)
    if not isinstance(value, bool):
        raise InvalidInput(f"{key} must be true or false, got {value!r}")
    return value


def _list(item: dict[str, Any], key: str) -> list[Any]:
    value = item.get(key) or []
    if not isinstance(value, list):
        raise InvalidInput(f"{key} must be a list")
    return value
