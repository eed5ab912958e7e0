"""Input checks shared by tools and the CLI. Each failure says what to do instead.

One text policy for notes and records (``clean_text``): NFC, newlines normalised,
control characters dropped except newline and tab (no ESC, BEL, NUL: stored text is
later printed to terminals and read by models), and text made only of invisible
characters (zero-width, BOM, direction marks, whitespace) is refused as empty.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence

from mcp_gateway.common.errors import InvalidInput, quoted

PRIORITIES = ("", "high", "low")
_ALLOWED_CONTROL = {"\n", "\t"}


def visible(text: str) -> bool:
    """Whether ``text`` shows anything: not only whitespace and format characters."""
    return any(not ch.isspace() and unicodedata.category(ch) != "Cf" for ch in text)


MAX_ID_CHARS = 200


def storable_id(value: object) -> bool:
    """Whether ``value`` can be an id at all: a string of at most ``MAX_ID_CHARS`` with no
    control character and no lone surrogate. Checked before a store is asked, so a NUL
    gets "no such id" on every store (PostgreSQL refuses NUL in text with an error,
    SQLite just finds nothing: issue 47)."""
    if not isinstance(value, str) or len(value) > MAX_ID_CHARS:
        return False
    return all(
        ch >= " " and not "\x7f" <= ch <= "\x9f" and not "\ud800" <= ch <= "\udfff" for ch in value
    )


def clean_text(value: str, field: str, max_bytes: int, *, required: bool = True) -> str:
    """Normalise to NFC, drop control characters except newline/tab, enforce limits."""
    if not isinstance(value, str):
        raise InvalidInput(f"{field} must be a string")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidInput(f"{field} is not valid Unicode text (lone surrogate)") from exc
    text = unicodedata.normalize("NFC", value.replace("\r\n", "\n").replace("\r", "\n"))
    text = "".join(
        ch
        for ch in text
        # control characters only: unassigned code points may be newer Unicode (emoji)
        if ch in _ALLOWED_CONTROL or unicodedata.category(ch) != "Cc"
    ).strip()
    if text and not visible(text):
        if required:
            raise InvalidInput(f"{field} has only invisible characters: write visible text")
        text = ""
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


_LABEL_PUNCT = set(" -_./+")


def label(value: str, field: str, max_chars: int) -> str:
    """A short topic label (a note's ``domain``): letters, digits and `` -_./+`` only,
    so it can be shown inline without quoting (no markup, no fake headings)."""
    text = one_line(value, field, max_chars)
    bad = next(
        (ch for ch in text if ch not in _LABEL_PUNCT and unicodedata.category(ch)[0] not in "LNM"),
        None,
    )
    if bad is not None:
        raise InvalidInput(
            f"{field} contains {bad!r}: use a short label of letters, digits, spaces and -_./+"
        )
    return text


def namespace(value: str, field: str = "namespace") -> str:
    """A namespace name: a label (``label``) without spaces, at most 64 characters, so
    it can be shown inline and used as a key (no markup, no line breaks)."""
    try:
        text = label(value, field, 64)
    except InvalidInput:
        text = ""
    if not text or any(ch.isspace() for ch in text):
        raise InvalidInput(
            f"{field} {value!r} is not a namespace name: use letters, digits and -_./+ "
            "without spaces"
        )
    return text


# Printable in a terminal: C0/C1 controls and DEL are shown escaped, never emitted.
_UNSAFE = [c for c in (*range(0x20), 0x7F, *range(0x80, 0xA0)) if chr(c) not in "\n\t"]
_TERMINAL_UNSAFE = {c: f"\\x{c:02x}" for c in _UNSAFE}
_JSON_UNSAFE = {c: f"\\u{c:04x}" for c in _UNSAFE}


def terminal_safe(text: str, *, json_text: bool = False) -> str:
    """``text`` with control characters (ESC, BEL, NUL, CSI...) written as ``\\xNN``
    (``\\u00NN`` inside JSON text, which stays valid JSON), so stored text printed by
    the CLI cannot drive the terminal (OSC 52 clipboard writes, cursor moves)."""
    return text.translate(_JSON_UNSAFE if json_text else _TERMINAL_UNSAFE)


def choice(value: str, field: str, allowed: list[str] | tuple[str, ...]) -> str:
    normalized = value.strip().lower() if isinstance(value, str) else value
    if normalized not in allowed:
        shown = ", ".join(repr(a) for a in allowed)
        raise InvalidInput(f"unknown {field} {quoted(value)}: use one of {shown}")
    return normalized


def bounded_int(value: int, field: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise InvalidInput(f"{field} must be an integer from {low} to {high}, got {quoted(value)}")
    return value


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
# Memories a caller may name as used in one call (services.learning).
MAX_USED = 10


def _strings(given: object, field: str, most: int, items: str) -> Sequence[str]:
    """``given`` if it is a list of at most ``most`` strings, else ``InvalidInput``."""
    if (
        isinstance(given, str)
        or not isinstance(given, Sequence)
        or len(given) > most
        or not all(isinstance(a, str) for a in given)
    ):
        raise InvalidInput(f"{field}: give a list of at most {most} {items}")
    return given


def checked_alternatives(given: object, max_chars: int) -> tuple[str, ...]:
    items = "strings, other phrasings of the query (other words or other languages)"
    given = _strings(given, "alternatives", MAX_ALTERNATIVES, items)
    return tuple(checked_query(a, max_chars) for a in given if a.strip())


def checked_used(given: object) -> tuple[str, ...]:
    """``used`` as distinct ids, or ``InvalidInput`` saying what to pass."""
    items = "memory ids, copied from earlier search_memory results that you actually used"
    ids = () if given is None else _strings(given, "used", MAX_USED, items)
    return tuple(dict.fromkeys(i.strip() for i in ids if i.strip()))
