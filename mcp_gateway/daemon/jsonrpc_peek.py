"""The ``id`` of a JSON-RPC message that cannot (or must not) be parsed in full.

A client waits for the reply that carries its request's id; an error answered with
``"id": null`` leaves it hanging. Lines nested thousands deep make ``json.loads``
raise ``RecursionError``, and bodies over the size limit are refused unparsed, so the
proxy reads just the top-level ``"id"`` member with this iterative scanner: nested
values are skipped by counting brackets (strings respected), never by recursion.
Verified by ``tests/test_security_input.py::test_stdio_proxy_survives_hostile_lines``.
``message_id`` and ``response_id`` read the id of lines already screened (parsed whole).
"""

from __future__ import annotations

import json
from typing import Any

_WS = " \t\r\n"
_DECODER = json.JSONDecoder()
_NOT_FOUND = object()


def _skip_ws(text: str, i: int) -> int:
    while i < len(text) and text[i] in _WS:
        i += 1
    return i


def _skip_value(text: str, i: int) -> int:
    """Index just past the JSON value starting at ``i`` (iterative; ValueError if bad)."""
    if i >= len(text):
        raise ValueError("truncated")
    if text[i] == '"':
        return json.decoder.scanstring(text, i + 1)[1]  # type: ignore[attr-defined]
    if text[i] not in "[{":
        return int(_DECODER.raw_decode(text, i)[1])
    depth = 0
    while i < len(text):
        ch = text[i]
        if ch == '"':
            i = json.decoder.scanstring(text, i + 1)[1]  # type: ignore[attr-defined]
            continue
        if ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    raise ValueError("unbalanced")


def peek_id(raw: bytes | str, max_chars: int = 64 * 1024 * 1024) -> Any:
    """The top-level ``"id"`` of a JSON object (a string, number or null), or None."""
    try:
        text = raw.decode("utf-8", errors="replace") if isinstance(raw, bytes) else raw
        text = text[:max_chars]
        i = _skip_ws(text, 0)
        if i >= len(text) or text[i] != "{":
            return None
        i = _skip_ws(text, i + 1)
        while i < len(text) and text[i] != "}":
            key, i = json.decoder.scanstring(text, i + 1)  # type: ignore[attr-defined]
            i = _skip_ws(text, i)
            if text[i] != ":":
                return None
            i = _skip_ws(text, i + 1)
            if key == "id":
                start = i
                end = _skip_value(text, i)
                value = json.loads(text[start:end]) if text[start] not in "[{" else None
                ok = isinstance(value, str | int | float) and not isinstance(value, bool)
                return value if ok else None
            i = _skip_ws(text, _skip_value(text, i))
            if i < len(text) and text[i] == ",":
                i = _skip_ws(text, i + 1)
        return None
    except (ValueError, IndexError, RecursionError):
        return None


# Whole lines the proxy already screened: parsed, only the id taken.
def message_id(line: bytes) -> Any:
    try:
        message = json.loads(line)
    except ValueError:
        return None
    return message.get("id") if isinstance(message, dict) else None


def response_id(line: bytes) -> Any:
    """The id of a response (result or error); None for the gateway's own requests and
    notifications, whose ids are in the gateway's number space, not the client's."""
    try:
        message = json.loads(line)
    except (ValueError, RecursionError):
        return None
    if not isinstance(message, dict) or "method" in message:
        return None
    return message.get("id")
