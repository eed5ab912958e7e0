"""Typed inputs: what a caller hands in for a note and for a record, one model each.

Every door builds these (MCP tools, the CLI over the admin API, the memory browser,
imports, benches) and the services take them, so a field is named, defaulted and
checked in one place. ``NoteFields.checked`` is the one place a note's fields meet
the text policy and the limits (``validation``); a record's fields are checked by the
record store (``records.validate``), which every door reaches through ``RecordService``.

``*Changes`` models are the same fields for an update: ``None`` keeps the stored
value. ``fill(model, source)`` builds one from the fields a door parsed (argparse's
namespace, a form) without restating the field list there.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict

from mcp_gateway.common.sections import NoteSettings
from mcp_gateway.common.validation import (
    PRIORITIES,
    bounded_int,
    checked_alternatives,
    checked_filter,
    checked_query,
    checked_used,
    choice,
    clean_text,
    label,
)

M = TypeVar("M", bound=BaseModel)

_FIXED = ConfigDict(frozen=True, extra="forbid")


@dataclass(frozen=True, slots=True)
class NoteRules:
    """The settings a note's fields are checked against."""

    max_text_bytes: int
    types: tuple[str, ...]

    @classmethod
    def of(cls, notes: NoteSettings) -> NoteRules:
        return cls(max_text_bytes=notes.max_text_bytes, types=tuple(notes.types))


class NoteFields(BaseModel):
    """A note's own fields (``add_note``; its id, namespace and times come from the store)."""

    model_config = _FIXED

    text: str
    type: str = "note"
    priority: str = ""
    domain: str = ""
    solved_query: str = ""

    def checked(self, rules: NoteRules) -> NoteFields:
        """The fields cleaned (NFC, controls dropped, limits, labels lower-cased), or
        ``InvalidInput`` naming the first field at fault and what to do."""
        limit = rules.max_text_bytes
        return NoteFields.model_construct(
            text=clean_text(self.text, "text", limit),
            type=choice(self.type, "type", rules.types),
            priority=choice(self.priority, "priority", PRIORITIES),
            domain=label(self.domain, "domain", 64).lower(),
            solved_query=clean_text(self.solved_query, "solved_query", limit, required=False),
        )

    def changed_by(self, changes: NoteChanges) -> NoteFields:
        """These fields with ``changes`` applied (unchecked: ``checked`` follows)."""
        return self.model_copy(update=changes.given())


class NoteChanges(BaseModel):
    """``update_note``: the fields to change; ``None`` keeps the stored value."""

    model_config = _FIXED

    text: str | None = None
    type: str | None = None
    priority: str | None = None
    domain: str | None = None
    solved_query: str | None = None

    def given(self) -> dict[str, str]:
        return self.model_dump(exclude_none=True)


class NoteQuery(BaseModel):
    """``search_memory``: what to look for (``checked`` by ``NoteService.search``)."""

    model_config = _FIXED

    query: str
    type: str = ""
    domain: str = ""
    top: int = 5
    priority: str = ""  # the browser's filter: notes of this priority only
    # other phrasings of the query (at most ``MAX_ALTERNATIVES``)
    alternatives: tuple[str, ...] = ()
    # ids of memories from earlier results that the caller used (services.learning)
    used: tuple[str, ...] = ()

    def checked(self, types: Sequence[str], max_chars: int, max_top: int) -> NoteQuery:
        """The request cleaned and within the limits, or ``InvalidInput`` naming the first
        field at fault: the one check of a search (the core search trusts it)."""
        alternatives = checked_alternatives(self.alternatives, max_chars)
        used = checked_used(self.used)
        top = bounded_int(self.top, "top", 1, max_top)
        type, domain, priority = checked_filter(
            types, type=self.type, domain=self.domain, priority=self.priority
        )
        return NoteQuery.model_construct(
            query=checked_query(self.query, max_chars),
            type=type,
            domain=domain,
            top=top,
            priority=priority,
            alternatives=alternatives,
            used=used,
        )


class RecordFields(BaseModel):
    """``record_add``: a new record and its outgoing links (``RELATION:TARGET_ID``)."""

    model_config = _FIXED

    type: str
    title: str
    content: str = ""
    status: str = "open"
    action_state: str = "actionable"
    links: tuple[str, ...] = ()
    project: str = ""


class RecordChanges(BaseModel):
    """``record_update``: the fields to change; ``None`` keeps the stored value."""

    model_config = _FIXED

    title: str | None = None
    content: str | None = None
    status: str | None = None
    action_state: str | None = None


def fill(model: type[M], source: Mapping[str, Any] | object) -> M:
    """``model`` from the values ``source`` holds under its field names (a mapping's
    keys or an object's attributes); a field ``source`` lacks takes its default."""
    if isinstance(source, Mapping):
        given = {k: source[k] for k in model.model_fields if k in source}
    else:
        given = {k: getattr(source, k) for k in model.model_fields if hasattr(source, k)}
    return model.model_validate(given)


def wire(fields: BaseModel) -> dict[str, Any]:
    """``fields`` as a door sends them to the owner (flat JSON; ``None``: not given)."""
    return fields.model_dump(mode="json", exclude_none=True)
