"""Argument checks for records: every refusal names the valid values or the limit."""

from __future__ import annotations

import re
from collections.abc import Sequence

from mcp_gateway.common.errors import InvalidInput, quoted
from mcp_gateway.common.validation import clean_text, visible
from mcp_gateway.records.model import ACTION_STATES, RECORD_TYPES, RELATIONS, STATUSES

LINK_FORMAT = "RELATION:TARGET_ID, e.g. resolves:AUDIT-MEM-001"
_PROJECT_RE = re.compile(r"^[A-Z0-9_]{1,16}$")
MAX_TITLE_CHARS = 500
MAX_CONTENT_BYTES = 32_768
# far above any real count, far below SQLite's 2**63 - 1: the next number always fits
MAX_SEQ = 999_999_999


def choice(kind: str, value: str, valid: Sequence[str]) -> str:
    norm = value.strip().lower()
    if norm not in valid:
        raise InvalidInput(f"unknown {kind} {quoted(value)}; valid values: {', '.join(valid)}")
    return norm


def record_type(value: str) -> str:
    return choice("record type", value, RECORD_TYPES)


def status(value: str) -> str:
    return choice("status", value, STATUSES)


def action_state(value: str) -> str:
    return choice("action_state", value, ACTION_STATES)


def relation(value: str) -> str:
    return choice("relation", value, RELATIONS)


def project(value: str) -> str:
    code = value.strip().upper()
    if not _PROJECT_RE.match(code):
        raise InvalidInput(
            f"invalid project code {quoted(value)}: use 1-16 ASCII letters, digits or underscores, "
            "e.g. MEM"
        )
    return code


def record_id(value: str) -> str:
    """Normalise an id (case-insensitive input); an impossible id can only be unknown."""
    return value.strip().upper()


def title(value: str, max_chars: int) -> str:
    """The notes' text policy (``validation.clean_text``): control characters dropped
    (no ESC/BEL/NUL), invisible-only text refused."""
    if isinstance(value, str) and not visible(value):
        raise InvalidInput("the title is empty or invisible; give a short one-line summary")
    text = clean_text(value, "the title", max_chars * 4)
    if len(text) > max_chars:
        raise InvalidInput(
            f"the title is {len(text)} characters; the limit is {max_chars}. "
            "Put the details in content"
        )
    return text


def content(value: str, max_bytes: int) -> str:
    if isinstance(value, str):
        size = len(value.encode("utf-8", errors="replace"))
        if size > max_bytes:
            raise InvalidInput(
                f"the content is {size} bytes; the limit is {max_bytes}. Split it into several "
                "records joined by references links"
            )
    return clean_text(value, "the content", max_bytes, required=False)


def parse_link(link: str) -> tuple[str, str]:
    """``"resolves:AUDIT-MEM-001"`` -> ``("resolves", "AUDIT-MEM-001")``."""
    rel, sep, target = link.partition(":")
    if not sep or not rel.strip() or not target.strip():
        raise InvalidInput(f"malformed link {quoted(link)}; expected {LINK_FORMAT}")
    if rel.strip().lower() not in RELATIONS:
        raise InvalidInput(
            f"malformed link {quoted(link)}: unknown relation {quoted(rel.strip())}; expected "
            f"{LINK_FORMAT} with RELATION one of {', '.join(RELATIONS)}"
        )
    return rel.strip().lower(), record_id(target)
