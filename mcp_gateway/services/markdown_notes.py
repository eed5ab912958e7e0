"""One Markdown file as a note: YAML front matter read, wiki links made readable.

Front matter (``---`` lines around YAML at the very top, as Obsidian and basic-memory
write it) is taken off the text and mapped:

- ``title``: becomes the first line (``# title``) unless the text already starts with
  that heading;
- ``tags`` (a list, or one string of comma- or space-separated tags; a leading ``#`` is
  dropped): a last line ``tags: a, b``, so they are searchable;
- ``type``: the note type when it is one kioku knows (else ``knowledge``);
- ``priority``: ``high`` or ``low``; ``domain``: the note's domain when it is a label.

Other keys (``permalink``, ``aliases``, dates...) are dropped. Front matter that is not
a YAML mapping leaves the file's text as written, with a warning.

Wiki links: ``[[Page|alias]]`` -> ``alias``, ``[[Page]]`` -> ``Page``, ``![[image.png]]``
-> ``image.png``; ``[[Page#Heading]]`` keeps ``Page#Heading``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from mcp_gateway.common.errors import InvalidInput
from mcp_gateway.common.validation import label

_FENCE = re.compile(r"\A(?:\ufeff)?---[ \t]*\r?\n(.*?)\r?\n(?:---|\.\.\.)[ \t]*(?:\r?\n|\Z)", re.S)
_WIKI = re.compile(r"!?\[\[([^\[\]|\n]+?)(?:\|([^\[\]\n]*))?\]\]")
_TAG_SPLIT = re.compile(r"[,\s]+")
MAX_TAGS = 64


def wiki_links(text: str) -> str:
    """``[[Page|alias]]`` -> ``alias``, ``[[Page]]`` -> ``Page``."""
    return _WIKI.sub(lambda m: (m.group(2) or "").strip() or m.group(1).strip(), text)


def markdown_note(text: str, types: Sequence[str]) -> tuple[dict[str, Any], str]:
    """(note fields: text, type, and priority/domain where given; a warning or "")."""
    meta: dict[str, Any] = {}
    warning = ""
    body = text.lstrip("\ufeff")
    fence = _FENCE.match(text)
    if fence is not None:
        import yaml  # here: only an import with front matter needs it, not every start

        try:
            loaded = yaml.safe_load(fence.group(1))
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f" at line {mark.line + 2}" if mark is not None else ""
            warning = f"front matter is not valid YAML{where}: imported as written"
        except (RecursionError, ValueError):  # 5,000 levels deep; a 5,000-digit number
            raise InvalidInput(
                "its front matter is nested too deeply or holds a number over 4,300 "
                "digits: fix or remove the front matter"
            ) from None
        else:
            if isinstance(loaded, dict):
                meta = loaded
                body = text[fence.end() :]
            elif loaded is not None:
                warning = "front matter is not a YAML mapping: imported as written"
            else:
                body = text[fence.end() :]
    body = wiki_links(body).strip() if not warning else body.strip()
    title = _one_line(meta.get("title"))
    first = body.split("\n", 1)[0].lstrip("#").strip() if body.startswith("#") else ""
    if title and first != title:
        body = f"# {title}\n\n{body}".strip()
    tags = _tags(meta.get("tags"))
    if tags:
        body = f"{body}\n\ntags: {', '.join(tags)}".strip()
    kind = _one_line(meta.get("type")).lower()
    note: dict[str, Any] = {"text": body, "type": kind if kind in types else "knowledge"}
    priority = _one_line(meta.get("priority")).lower()
    if priority in ("high", "low"):
        note["priority"] = priority
    domain = _one_line(meta.get("domain"))
    if domain:
        note["domain"] = domain_of(domain)
    return note, warning


def domain_of(name: str) -> str:
    """A folder, entity type or front matter value as a note's domain, when it is a
    valid label (``validation.label``); else none."""
    try:
        return label(name, "domain", 64).lower()
    except InvalidInput:
        return ""


def _one_line(value: Any) -> str:
    """A scalar front matter value as one line ("" for lists, mappings, nothing)."""
    if isinstance(value, (str, int, float)) and not isinstance(value, bool):
        return " ".join(str(value).split())
    return ""


def _tags(value: Any) -> list[str]:
    items = _TAG_SPLIT.split(value) if isinstance(value, str) else value
    if not isinstance(items, list):
        return []
    out: list[str] = []
    for item in items[:MAX_TAGS]:
        tag = _one_line(item).lstrip("#")
        if tag and tag not in out:
            out.append(tag)
    return out
