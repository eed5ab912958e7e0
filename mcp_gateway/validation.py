"""Input checks shared by tools and the CLI. Each failure says what to do instead."""

from __future__ import annotations

import unicodedata

from .errors import InvalidInput

PRIORITIES = ("", "high", "low")
_ALLOWED_CONTROL = {"\n", "\t"}


def clean_text(value: str, field: str, max_bytes: int, *, required: bool = True) -> str:
    """Normalise to NFC, drop control characters except newline/tab, enforce limits."""
    if not isinstance(value, str):
        raise InvalidInput(f"{field} must be a string")
    text = unicodedata.normalize("NFC", value.replace("\r\n", "\n").replace("\r", "\n"))
    text = "".join(
        ch
        for ch in text
        if ch in _ALLOWED_CONTROL or unicodedata.category(ch) not in ("Cc", "Cs", "Co", "Cn")
    ).strip()
    if required and not text:
        raise InvalidInput(f"{field} is empty: write the content to store")
    size = len(text.encode("utf-8"))
    if size > max_bytes:
        raise InvalidInput(
            f"{field} is {size} bytes, over the {max_bytes}-byte limit: "
            "split it into several focused notes or summarise it"
        )
    return text


def one_line(value: str, field: str, max_chars: int) -> str:
    text = clean_text(value, field, max_chars * 4, required=False).replace("\n", " ")
    if len(text) > max_chars:
        raise InvalidInput(f"{field} is over {max_chars} characters: shorten it")
    return text


def choice(value: str, field: str, allowed: list[str] | tuple[str, ...]) -> str:
    normalized = value.strip().lower() if isinstance(value, str) else value
    if normalized not in allowed:
        shown = ", ".join(repr(a) for a in allowed)
        raise InvalidInput(f"unknown {field} {value!r}: use one of {shown}")
    return normalized


def bounded_int(value: int, field: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise InvalidInput(f"{field} must be an integer from {low} to {high}, got {value!r}")
    return value
