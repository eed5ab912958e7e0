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

from mcp_gateway.common.errors import InvalidInput
from mcp_gateway.common.sections import NoteSettings
from mcp_gateway.common.validation import PRIORITIES, choice, clean_text, label, one_line

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
    """``search_memory``: what to look for (checked by ``NoteService.search``)."""

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


def checked_query(query: str, max_chars: int) -> str:
    """A search's query, checked once per search (the core search trusts it): not
    empty, at most ``max_chars``, under the text policy."""
    too_long = InvalidInput(
        f"query is over {max_chars} characters: summarise the situation in a few sentences"
    )
    if isinstance(query, str) and len(query) > max_chars:
        raise too_long
    if not isinstance(query, str) or not query.strip():
        raise InvalidInput("query is empty: describe what you are about to do or look for")
    text = clean_text(query, "query", max_chars * 4)
    if len(text) > max_chars:  # NFC lengthens a few characters (U+0958 -> 2)
        raise too_long
    return text


def checked_filter(
    types: Sequence[str], *, type: str = "", domain: str = "", priority: str = ""
) -> tuple[str, str, str]:
    """A search's or a listing's note filter as (type, domain, priority): each empty
    (any) or checked -- a type among ``types``, a domain on one line (lower-cased), a
    priority among ``PRIORITIES``."""
    return (
        choice(type, "type", tuple(types)) if type else "",
        one_line(domain, "domain", 64).lower() if domain else "",
        choice(priority, "priority", PRIORITIES) if priority else "",
    )


# Other phrasings a search takes beside its query: each costs one query embedding.
MAX_ALTERNATIVES = 4


def checked_alternatives(given: object, max_chars: int) -> tuple[str, ...]:
    if (
        isinstance(given, str)
        or not isinstance(given, Sequence)
        or len(given) > MAX_ALTERNATIVES
        or not all(isinstance(a, str) for a in given)
    ):
        raise InvalidInput(
            f"alternatives: give a list of at most {MAX_ALTERNATIVES} strings, other "
            "phrasings of the query (other words or other languages)"
        )
    return tuple(checked_query(a, max_chars) for a in given if a.strip())


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
