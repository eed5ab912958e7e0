"""What the MCP tools' input schemas say about closed sets and formats, so a client can
check a call before making it (and an assistant reads the valid values from the schema,
not only from the prose).

Each alias is ``str`` for Python and pydantic: only the JSON schema carries the enum or
the pattern (``json_schema_extra``). The server's own checks (``NoteFields.checked``,
``records.validate``) stay the single source of refusals, so a client that ignores the
schema still gets the clear tool error that names the valid values, never pydantic's
generic one. The server accepts a little more than the schema advertises (case and
surrounding spaces: "High", " AUDIT-mem-001"); the schema shows the canonical form.

Note types (``notes.types``) and the largest ``top`` (``search.max_top``) are
configurable: ``one_of`` and ``within`` build their schemas from the settings the tools
are registered with.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any

from pydantic import Field

from mcp_gateway.common.validation import PRIORITIES
from mcp_gateway.records.model import ACTION_STATES, RECORD_TYPES, RELATIONS, STATUSES
from mcp_gateway.records.reads import MAX_SEARCH_LIMIT

# AUDIT-MEM-001, and AUDIT-MEM-001.ALICE outside the default namespace (the shape
# ``records.queries.record_id_for`` makes and ``services.import_check`` accepts);
# the server takes any case
RECORD_ID = r"[A-Za-z]+-[A-Za-z0-9_]{1,16}-[0-9]{3,9}(\.[A-Za-z0-9]{1,24})?"
# a note id is a ULID (``stores.notes``), exact
NOTE_ID = r"[0-9A-HJKMNP-TV-Z]{26}"
LINK = rf"({'|'.join(RELATIONS)}):{RECORD_ID}"


def _schema(**extra: Any) -> Any:
    return Field(json_schema_extra=extra)


def one_of(values: Sequence[str]) -> Any:
    """``Annotated[str, one_of(...)]``: the string is one of ``values``."""
    return _schema(enum=list(values))


NoteId = Annotated[str, _schema(pattern=f"^{NOTE_ID}$")]
RecordId = Annotated[str, _schema(pattern=f"^{RECORD_ID}$")]
Priority = Annotated[str, one_of(PRIORITIES)]
RecordType = Annotated[str, one_of(RECORD_TYPES)]
RecordTypeFilter = Annotated[str, one_of(("", *RECORD_TYPES))]
Status = Annotated[str, one_of(STATUSES)]
ActionState = Annotated[str, one_of(ACTION_STATES)]
Relation = Annotated[str, one_of(RELATIONS)]
# ``link`` may be left empty; ``links`` items may not
OptionalLink = Annotated[str, _schema(pattern=f"^({LINK})?$")]
Link = Annotated[str, _schema(pattern=f"^{LINK}$")]
# 1-16 letters, digits or _ (upper-cased by the server), or empty: derived from the workspace
Project = Annotated[str, _schema(pattern="^[A-Za-z0-9_]{0,16}$")]
Limit = Annotated[int, _schema(minimum=1, maximum=MAX_SEARCH_LIMIT)]


def search_types(note_types: Sequence[str]) -> list[str]:
    """``search_memory``'s type filter: empty (any), a note type or a record type."""
    return list(dict.fromkeys(["", *note_types, *RECORD_TYPES]))


def within(low: int, high: int) -> Any:
    """``Annotated[int, within(...)]``: a range known only from the settings."""
    return _schema(minimum=low, maximum=high)
